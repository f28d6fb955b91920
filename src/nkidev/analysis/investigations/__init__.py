"""Investigations: each detects one kind of inefficiency and traces it to source lines.

An investigation is a module of this package with `NAME`, `ADVICE` (what to do about its findings), `RANK`
(its place in reports), `ENGINE` (the
engine whose time its findings cost), `NEEDS` (the tables and columns it reads) and `run(ctx) -> Outcome`,
and a SQL file of the same name next to it. Modules are discovered: adding an investigation is adding its
two files. `run_all` checks NEEDS first, so a profile that lacks a table gets a clear "skipped: missing X"
instead of an error.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from functools import cache

from nkidev.analysis.findings import Finding
from nkidev.analysis.tables import HOW_TO_GET, Profile, named_queries
from nkidev.hardware import Target


@cache
def modules() -> tuple:
    """Every investigation module, in RANK order."""
    found = [importlib.import_module(f"{__name__}.{m.name}") for m in pkgutil.iter_modules(__path__)]
    return tuple(sorted(found, key=lambda m: m.RANK))


@dataclass
class Context:
    profile: Profile
    bounds: dict
    engines: dict
    bottleneck: str | None
    target: Target

    @property
    def total_ns(self) -> float:
        return self.bounds["total_time_ns"]

    @property
    def inputs(self) -> dict:
        return self.bounds["inputs"]

    def peak_bytes_per_s(self) -> float | None:
        """The rate the kernel's DMA bytes could move at: their bytes over the ideal memory time, i.e. the
        binding ceiling (HBM or DMA, bounds.memory_ceilings) applied to this kernel's mix of traffic."""
        return self.inputs["memory_ceiling"]["effective_bytes_per_s"]

    def dma_bytes_per_ns(self) -> float | None:
        """The kernel's achieved DMA rate (bytes/ns), or the binding ceiling when nothing moved."""
        rate = self.inputs["achieved_dma_bytes_per_s"] or self.peak_bytes_per_s()
        return rate / 1e9 if rate else None


@dataclass
class Outcome:
    findings: list[Finding] = field(default_factory=list)
    details: dict = field(default_factory=dict)  # kernel-level numbers and the per-line tables
    status: str = "ran"  # ran | skipped | not_applicable
    reason: str = ""


def queries(name: str) -> dict[str, str]:
    """The named queries (`-- name: X` headers) of investigations/<name>.sql."""
    return named_queries(f"investigations/{name}.sql")


def missing_message(missing: list[str]) -> str:
    tables = {m.split(".")[0] for m in missing}
    hints = [HOW_TO_GET[t] for t in sorted(tables) if t in HOW_TO_GET and t in missing]
    text = "profile lacks " + ", ".join(missing)
    return text + (f" ({'; '.join(hints)})" if hints else "")


def run_all(ctx: Context) -> dict[str, Outcome]:
    out: dict[str, Outcome] = {}
    for module in modules():
        name = module.NAME
        missing = [m for table, cols in module.NEEDS for m in ctx.profile.lacking(table, *cols)]
        if missing:
            out[name] = Outcome(status="skipped", reason=missing_message(missing))
            continue
        out[name] = module.run(ctx)
    return out


def engine_of(kind: str) -> str | None:
    return next((m.ENGINE for m in modules() if m.NAME == kind), None)


def __getattr__(name: str):
    if name == "KINDS":  # the finding kinds, in report order (derived from the discovered modules)
        return tuple(m.NAME for m in modules())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
