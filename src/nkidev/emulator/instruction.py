"""`nki.isa.NkiInstruction`: the handle an nki.isa call returns, and its explicit dependency edges."""

from __future__ import annotations

from nkidev.emulator import context as _ctx
from nkidev.emulator import gate
from nkidev.emulator.enums import dependency
from nkidev.emulator.location import rule_error


class NkiInstruction:
    """Opaque handle to a traced instruction (its trace id, or None when nothing is traced). `depends_on` adds
    edges the cost model's scheduler honours: the instruction starts after each producer has finished."""

    __slots__ = ("handle",)

    def __init__(self, handle=None):
        self.handle = handle

    def depends_on(self, *producers, kind: dependency | None = None) -> NkiInstruction:
        """Order this instruction after `producers`; `kind` (NKI 0.7) is dependency.runtime or dependency.schedule.
        Both are modelled as waiting for the producer to finish (a schedule-only edge across engines, which may
        overlap on hardware, is thereby modelled conservatively)."""
        if kind is not None:
            gate.require("nki.isa.NkiInstruction.depends_on(kind=)")
            if not isinstance(kind, dependency):
                raise rule_error("err_invalid_argument", f"kind={kind!r}", "pass nisa.dependency.runtime or nisa.dependency.schedule")
        for p in producers:
            if not isinstance(p, NkiInstruction):
                raise rule_error(
                    "err_invalid_argument",
                    f"depends_on({type(p).__name__}): producers are the NkiInstruction handles nki.isa calls return",
                    "pass the value an nki.isa call returned",
                )
        trace = _ctx.current().trace
        if trace is not None and self.handle is not None:
            for p in producers:
                if p.handle is not None:
                    trace.add_edge(p.handle, self.handle)
        return self
