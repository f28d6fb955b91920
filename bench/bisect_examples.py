"""How many device runs the validate --hardware bisect needs on the example kernels, and whether it is right.

    python bench/bisect_examples.py [--json]

The "device" is nkidev's emulator with one instruction computed wrong (+10 on its destination, the device of
tests/device/wrong_device.py) at a third of the way, two thirds of the way and the next-to-last instruction
of each example's first case; the bisect gets that device's outputs (as validate --hardware passes them) and
must name exactly that instruction ("no mismatch" when the wrong value never reaches an output: then
validate --hardware has nothing to bisect). Prints instructions, probe points, candidates after the output narrowing,
device runs / budget and the CPU seconds of each bisect (emulator runs included).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.device.wrong_device import device  # noqa: E402

from nkidev.device.bisect import bisect_case, compare  # noqa: E402
from nkidev.emulator.jit import run  # noqa: E402
from nkidev.taskfile import load_task  # noqa: E402

EXAMPLES = {
    "matmul": "matmul_kernel",
    "softmax": "softmax_kernel",
    "layernorm": "layernorm_kernel",
    "rmsnorm": "rmsnorm_kernel",
    "attention": "attention_kernel",
    "swiglu": "swiglu",
}


def one(name: str, kernel: str, k: int, case, tol: dict, out: Path) -> dict:
    path = ROOT / "examples" / f"{name}.py"
    wrong = device(k, kernel, case, delta=10.0)
    outputs = wrong(path)
    wrong.runs = 0
    emulated = run(load_task(path).kernel(kernel), case.args, case.kwargs).outputs
    emulated = list(emulated) if isinstance(emulated, tuple | list) else [emulated]
    if not any(compare(d, e, str(np.asarray(e).dtype), tol)["differs"] for d, e in zip(outputs, emulated)):
        # the wrong value never reaches an output (e.g. a dead destination): validate --hardware would not bisect
        return {"example": name, "wrong_instruction": k, "status": "no mismatch", "found": None, "correct": None}
    t0 = time.process_time()
    result = bisect_case(path, kernel, case, "trn2", tol, wrong, out, lambda e: None, device_outputs=outputs)
    seconds = time.process_time() - t0
    first = result.get("first_difference") or {}
    return {
        "example": name,
        "wrong_instruction": k,
        "status": result["status"],
        "found": first.get("instruction", {}).get("id"),
        "correct": first.get("instruction", {}).get("id") == k and result["status"] == "found",
        "probe_points": result.get("probe_points"),
        "candidates": result.get("candidates"),
        "device_runs": result.get("device_runs"),
        "max_runs": result.get("max_runs"),
        "cpu_s": round(seconds, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, kernel in EXAMPLES.items():
            task = load_task(ROOT / "examples" / f"{name}.py")
            case = task.calls()[0]
            tol = {k: v for k, v in (task.attr("TOLERANCE") or {}).items() if k in ("atol", "rtol")} or {"atol": 1e-2, "rtol": 1e-2}
            n = len(run(task.kernel(kernel), case.args, case.kwargs).trace)
            for k in sorted({n // 3, 2 * n // 3, n - 2}):
                rows.append({"instructions": n, **one(name, kernel, k, case, tol, Path(tmp) / f"{name}-{k}")})
                if not args.json:
                    r = rows[-1]
                    detail = (
                        f"found #{r['found']}  points {r['probe_points']:>4}  candidates {r['candidates']:>4}"
                        f"  device runs {r['device_runs']}/{r['max_runs']}  {r['cpu_s']:.2f} s CPU"
                        if "device_runs" in r
                        else "(the wrong value reaches no output)"
                    )
                    print(f"{name:>10} {n:>5} instr  wrong #{k:<4} {r['status']:>12} {detail}")
    if args.json:
        print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
