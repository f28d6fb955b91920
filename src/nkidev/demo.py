"""`nkidev demo`: the seed walkthrough on bundled kernels, end to end on the CPU."""

from __future__ import annotations

import numpy as np

from nkidev.examples import example
from nkidev.taskfile import load_task


def softmax_check() -> dict:
    """Run examples/softmax.py on its four seed shapes against the NumPy reference."""
    from nkidev.emulator.jit import simulate

    task = load_task(example("softmax.py"))
    kernel = task.kernel("softmax_kernel")
    results = []
    for case in task.attr("cases")():
        out = simulate(kernel)(*case)
        ref = task.attr("reference")(*case)
        diff = float(np.max(np.abs(np.asarray(out, dtype=np.float64) - ref)))
        tol = task.attr("TOLERANCE")
        ok = bool(np.allclose(np.asarray(out, dtype=np.float64), ref, atol=tol["atol"], rtol=tol["rtol"]))
        results.append({"shape": list(case[0].shape), "max_diff": diff, "passed": ok})
    return {"kernel": "examples/softmax.py::softmax_kernel", "cases": results,
            "passed": all(r["passed"] for r in results)}


def case_line(case: dict) -> str:
    return f"{'PASS' if case['passed'] else 'FAIL'}: shape={tuple(case['shape'])}, max_diff={case['max_diff']:.6f}"


def swiglu_diagnosis() -> dict:
    """Profile the naive SwiGLU example with the cost model and analyze it (the seed walkthrough's payoff)."""
    from nkidev.analysis.demo import diagnose_swiglu

    return diagnose_swiglu()


def run_demo(diagnose: bool = True) -> dict:
    result = {"softmax": softmax_check()}
    if diagnose:
        result["swiglu"] = swiglu_diagnosis()
    return result
