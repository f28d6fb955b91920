"""The human form of a ValidationResult: one line per case (the seed walkthrough's format), then the
cheats and a summary."""

from __future__ import annotations

import math

from nkidev.validate.checks import short
from nkidev.validate.result import CaseResult, ValidationResult


def _diff(x: float | None) -> str:
    return "nan" if x is None or math.isnan(x) else f"{x:.6f}"


def case_line(case: CaseResult) -> str:
    diff = case.primary.max_abs_diff if case.primary else None
    line = f"{'PASS' if case.passed else 'FAIL'}: shape={tuple(case.shape)}, max_diff={_diff(diff)}"
    if not case.passed:
        line += f" [{', '.join(case.verdicts)}] {case.reason}"
    return line


def lines(result: ValidationResult) -> list[str]:
    out = [case_line(c) for c in result.cases]
    for f in result.cheats:
        tag = "CHEAT" if f.severity == "fail" else "WARN"
        at = f" ({short(f.location)})" if f.location else ""
        out.append(f"{tag} {f.verdict}{at}: {f.message}")
    out += [f"warning: {w}" for w in result.warnings]
    out += [f"note: {n}" for n in result.notes]
    if result.passed:
        out.append("All tests passed.")
        return out
    failed = sum(not c.passed for c in result.cases)
    verdicts = sorted({v for c in result.cases for v in c.verdicts} | {f.verdict for f in result.cheats if f.severity == "fail"})
    out.append(
        f"FAILED: {result.kernel}: {failed} of {len(result.cases)} cases failed ({', '.join(verdicts)}). "
        "Verdicts are explained by `nkidev validate --verdicts`."
    )
    return out
