"""What `validate` returns: plain dataclasses whose `to_dict()` is the `--json` output."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from nkidev.validate.tolerance import Tolerance


def _num(x: float | None) -> float | None:
    """JSON has no NaN/Inf: non-finite metrics become null (the reason says why)."""
    return None if x is None or not math.isfinite(x) else float(x)


@dataclass
class Finding:
    """A named verdict about the kernel (cheat_*), or a failed metric (fail_*)."""

    verdict: str
    message: str
    location: str | None = None  # "/abs/path/kernel.py:LINE"
    case: int | None = None  # index of the case it was found on (None: the kernel as a whole)
    severity: str = "fail"  # "fail" | "warn" (a verdict the caller allowed)

    def to_dict(self) -> dict:
        return {"verdict": self.verdict, "message": self.message, "location": self.location, "case": self.case, "severity": self.severity}


def unique_findings(findings: list[Finding]) -> list[Finding]:
    """One finding per verdict and kernel line (per verdict and case when there is no line), the first of each."""
    seen, out = set(), []
    for f in findings:
        key = (f.verdict, f.location, None if f.location else f.case)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


@dataclass
class OutputResult:
    index: int
    shape: tuple[int, ...]
    dtype: str
    max_abs_diff: float
    rel_l2: float
    cosine: float
    failures: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "index": self.index,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "max_abs_diff": _num(self.max_abs_diff),
            "rel_l2": _num(self.rel_l2),
            "cosine": _num(self.cosine),
            "failures": self.failures,
        }


@dataclass
class RunMetrics:
    """Worst metrics of one run (the case's own inputs, or one extra seed) over all outputs."""

    label: str  # "case" | "seed 1" | ...
    max_abs_diff: float
    rel_l2: float
    cosine: float
    outputs: list[OutputResult]

    @property
    def passed(self) -> bool:
        return not any(o.failures for o in self.outputs)

    def to_dict(self) -> dict:
        return {
            "label": self.label,
            "passed": self.passed,
            "max_abs_diff": _num(self.max_abs_diff),
            "rel_l2": _num(self.rel_l2),
            "cosine": _num(self.cosine),
        }


@dataclass
class CaseResult:
    index: int
    shape: tuple[int, ...]  # the first array input's shape (what the PASS line prints)
    tolerance: Tolerance | None
    primary: RunMetrics | None  # None when the kernel could not produce comparable outputs
    seeds: list[RunMetrics] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # fail_* and cheat_* found on this case
    kwargs: dict = field(default_factory=dict)  # the case's keyword inputs as plain data (nkidev.case.describe)

    @property
    def passed(self) -> bool:
        return self.primary is not None and all(f.severity != "fail" for f in self.findings)

    def failing(self) -> list[Finding]:
        """Failing findings, cheats first (they explain the numbers)."""
        failing = [f for f in self.findings if f.severity == "fail"]
        return sorted(failing, key=lambda f: not f.verdict.startswith("cheat_"))

    @property
    def verdicts(self) -> list[str]:
        return list(dict.fromkeys(f.verdict for f in self.failing()))

    @property
    def reason(self) -> str | None:
        """One phrase per verdict: its first message, and how many more findings share the verdict."""
        failing = self.failing()
        if not failing:
            return None
        parts = []
        for verdict in self.verdicts:
            same = [f for f in failing if f.verdict == verdict]
            more = f" (+{len(same) - 1} more)" if len(same) > 1 else ""
            parts.append(f"{verdict}: {same[0].message}{more}")
        return "; ".join(parts)

    def to_dict(self) -> dict:
        p = self.primary
        return {
            "index": self.index,
            "shape": list(self.shape),
            "passed": self.passed,
            "max_abs_diff": _num(p.max_abs_diff) if p else None,
            "rel_l2": _num(p.rel_l2) if p else None,
            "cosine": _num(p.cosine) if p else None,
            "reason": self.reason,
            "verdicts": self.verdicts,
            "tolerance": self.tolerance.to_dict() if self.tolerance else None,
            "outputs": [o.to_dict() for o in p.outputs] if p else [],
            "seeds": [s.to_dict() for s in self.seeds],
            "kwargs": self.kwargs,
        }


@dataclass
class ValidationResult:
    kernel: str  # "file.py::name" or the kernel's name
    target: str
    cases: list[CaseResult]
    cheats: list[Finding]  # every cheat_* finding (each also listed on its case when it has one)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the harness could not check, and why
    by_case: dict[int, tuple[list[str], list[str]]] | None = None  # a shard's run: (warnings, notes) each case added

    @property
    def passed(self) -> bool:
        return bool(self.cases) and all(c.passed for c in self.cases) and all(f.severity != "fail" for f in self.cheats)

    def to_dict(self) -> dict:
        return {
            "kernel": self.kernel,
            "target": self.target,
            "passed": self.passed,
            "cases": [c.to_dict() for c in self.cases],
            "cheats": [f.to_dict() for f in self.cheats],
            "warnings": self.warnings,
            "notes": self.notes,
        }
