"""A device that computes one instruction wrong: nkidev's emulator with the K-th instruction perturbed.

The K-th (from 0, in program order) instruction issued from the kernel file's own lines (not from the probe
helpers after nkidev's marker line, so K names the same instruction in every probe variant) gets `delta`
added to its destination after it runs. The fake neuron-explorer uses it ($FAKE_DEVICE_WRONG), and the
in-process bisect tests call `device(k)` directly (no subprocess, so they stay fast).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from nkidev.device.probes import marker_line
from nkidev.emulator import memory
from nkidev.emulator.context import EmulatorOptions
from nkidev.emulator.jit import run
from nkidev.emulator.ops import OPS
from nkidev.taskfile import load_task


def _kernel_line(path: str) -> int | None:
    frame = sys._getframe(3)
    while frame is not None and frame.f_code.co_filename != path:
        frame = frame.f_back
    return frame.f_lineno if frame is not None else None


@contextmanager
def wrong_instruction(kernel_path: Path, k: int, delta: float = 1.0) -> Iterator[None]:
    """Inside the block, the k-th instruction of kernel_path's own lines writes its result + delta."""
    path = str(Path(kernel_path).resolve())
    marker = marker_line(Path(path).read_text()) or 10**9
    seen = [0]

    def wrap(op, impl):
        def perturbed(a, ctx, engine):
            result = impl(a, ctx, engine)
            line = _kernel_line(path)
            if line is not None and line < marker:
                if seen[0] == k:
                    dst = getattr(a, op.writes[0])
                    memory.store(dst, memory.f32(dst) + delta)
                seen[0] += 1
            return result

        return perturbed

    saved = {name: op.impl for name, op in OPS.items() if op.impl is not None}
    for name, impl in saved.items():
        OPS[name].impl = wrap(OPS[name], impl)
    try:
        yield
    finally:
        for name, impl in saved.items():
            OPS[name].impl = impl


def device(k: int, kernel_name: str, case, target: str = "trn2", delta: float = 1.0):
    """A `device(variant_path) -> outputs` callable for nkidev.device.bisect.bisect_case; it counts its runs."""

    def run_variant(variant: Path) -> list:
        run_variant.runs += 1
        kernel = load_task(variant).kernel(kernel_name)
        with wrong_instruction(variant, k, delta):
            # in line: the perturbation finds the instruction's kernel line on the stack of the thread running it
            outputs = run(kernel, case.args, case.kwargs, options=EmulatorOptions(target=target, compute=True, overlap=False)).outputs
        return list(outputs) if isinstance(outputs, tuple | list) else [outputs]

    run_variant.runs = 0
    return run_variant
