"""One emulated run of the kernel on copies of a case's inputs, with the tripwire armed.

The kernel gets copies, so whatever it does to its inputs can be seen by comparing them with the
originals afterwards (the emulator copies written inputs back, like the official simulator); the trace
says which instruction wrote them.
"""

from __future__ import annotations

import inspect
import os
from contextlib import nullcontext
from dataclasses import dataclass, field

import numpy as np

from nkidev.case import Case
from nkidev.emulator.context import EmulatorOptions
from nkidev.emulator.jit import run as emulate
from nkidev.emulator.location import raised_at
from nkidev.emulator.trace import Trace
from nkidev.errors import NkiError, NkiWarning
from nkidev.hardware import Target
from nkidev.validate import fill, guard
from nkidev.validate.capture import captured
from nkidev.validate.inputs import array_slots, copy_case, same_bits
from nkidev.validate.reference import outputs_of


@dataclass
class Run:
    outputs: list  # NumPy arrays (or whatever non-tensor values the kernel returned)
    trace: Trace | None
    written_inputs: list[tuple[str, str | None]] = field(default_factory=list)  # (input name, "file:LINE")
    warnings: list[str] = field(default_factory=list)
    printed: str = ""  # what the kernel printed (kept off stdout: --json must stay one object)


class KernelFailed(Exception):
    """The kernel raised (or called a guarded function); `error` is what it raised."""

    def __init__(self, error: BaseException, location: str | None, reference_calls: list):
        super().__init__(str(error))
        self.error = error
        self.location = location
        self.reference_calls = reference_calls

    @property
    def name(self) -> str | None:
        return self.error.name if isinstance(self.error, NkiError) else None


def run(kernel, case: Case, target: Target, guarded=(), alternative_fill: bool = False) -> Run:
    args = copy_case(case)
    options = EmulatorOptions(target=target, **(fill.option_kwargs() if alternative_fill else {}))
    guard.calls().clear()
    swap = fill.alternative() if alternative_fill else nullcontext()
    with captured() as (printed, caught), guard.tripwire(guarded), swap:
        try:
            result = emulate(kernel, args.args, args.kwargs, options)
        except (Exception, SystemExit) as e:  # noqa: BLE001 - whatever the kernel raises is reported by name
            raise KernelFailed(e, _location(e, _source_file(kernel)), list(guard.calls())) from None
    calls = guard.calls()
    if calls:  # the kernel caught the tripwire's exception and carried on
        raise KernelFailed(guard.ReferenceCalled(calls[0][0]), calls[0][1], list(calls))
    notes = [f"{w['name']}: {w['message']}" + (f" ({_short(w['location'])})" if w.get("location") else "") for w in result.warnings]
    notes += [f"{w.category.__name__}: {w.message}" for w in caught if not issubclass(w.category, NkiWarning)]  # those are in the trace
    return Run(outputs_of(result.outputs), result.trace, _written_inputs(kernel, case, args, result.trace), notes, printed.getvalue())


def _written_inputs(kernel, case: Case, args: Case, trace: Trace | None) -> list[tuple[str, str | None]]:
    names = case.slot_names(param_names(kernel))
    found: dict[str, str | None] = {}
    if trace is not None:
        inputs = {t.id: t.name for t in trace.tensors.values() if t.kind == "input"}
        for ins in trace.instructions:
            for w in ins.writes:
                if w.tensor in inputs:
                    found.setdefault(inputs[w.tensor], ins.location)
    before, after = case.values(), args.values()
    for i in array_slots(case):
        if not same_bits(np.asarray(before[i]), np.asarray(after[i])):
            found.setdefault(names[i], None)
    return list(found.items())


def param_names(kernel) -> list[str]:
    fn = getattr(kernel, "fn", kernel)
    try:
        return list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return []


def _source_file(kernel) -> str | None:
    return getattr(getattr(getattr(kernel, "fn", kernel), "__code__", None), "co_filename", None)


def _location(e: BaseException, kernel_file: str | None) -> str | None:
    """Where the kernel raised: its deepest line in the kernel's file, else in any user file."""
    if isinstance(e, NkiError) and e.location:
        return e.location
    return raised_at(e, kernel_file)


def _short(location: str) -> str:
    path, _, line = location.rpartition(":")
    return f"{os.path.basename(path)}:{line}"
