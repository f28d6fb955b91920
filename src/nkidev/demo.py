"""`nkidev demo`: the seed walkthrough on bundled kernels, end to end on the CPU."""

from __future__ import annotations

from nkidev.examples import example


def softmax_check() -> dict:
    """Validate examples/softmax.py on its four seed shapes against the NumPy reference (anti-cheat checks on)."""
    from nkidev.validate.api import validate_task
    from nkidev.validate.report import lines

    result = validate_task(f"{example('softmax.py')}::softmax_kernel", seeds=0)
    return {**result.to_dict(), "lines": lines(result)}


def swiglu_diagnosis() -> dict:
    """Profile the naive SwiGLU example with the cost model and analyze it (the seed walkthrough's payoff)."""
    from nkidev.analysis.demo import diagnose_swiglu

    return diagnose_swiglu()
