"""Running a kernel with a different fill for fresh allocations, to find outputs that depend on
memory the kernel never wrote: such elements change with the fill, computed ones do not.

The emulator fills new HBM/SBUF/PSUM allocations with NaN (4 for integers), like the official simulator.
The alternative run passes `EmulatorOptions(fill=...)`.
"""

from __future__ import annotations

from contextlib import nullcontext

FLOAT_FILL = -3.0  # exactly representable in every float dtype down to fp8_e5m2
INT_FILL = int(FLOAT_FILL)  # what integer tensors get (unsigned ones wrap), never the default 4
_PROBED: list[bool] = []  # tests force "unsupported" here to exercise the NaN fallback


def supported() -> bool:
    """Whether an alternative fill is available (EmulatorOptions.fill)."""
    return _PROBED[0] if _PROBED else True


def option_kwargs() -> dict:
    """EmulatorOptions keyword for the alternative fill."""
    return {"fill": FLOAT_FILL}


def alternative():
    """Context for one run with the alternative fill (the option does the work, so nothing to set up)."""
    return nullcontext()
