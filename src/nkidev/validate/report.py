"""The human form of a validation: one line per case (the seed walkthrough's format), then the cheats and a
summary. Works on the `--json` dict (what the sandbox returns), or on a ValidationResult."""

from __future__ import annotations

import math
import os


def short(location: str | None) -> str:
    """'file.py:LINE' of a '/abs/path/file.py:LINE' location (this module stays free of NumPy: the CLI's parent
    process prints reports without importing the emulator)."""
    if not location:
        return "?"
    path, _, line = location.rpartition(":")
    return f"{os.path.basename(path)}:{line}"


def _diff(x: float | None) -> str:
    return "nan" if x is None or math.isnan(x) else f"{x:.6f}"


def _plain(result) -> dict:
    return result.to_dict() if hasattr(result, "to_dict") else result


def case_line(case) -> str:
    """`PASS: shape=(...), max_diff=...` (FAIL with its verdicts and reason) for one case (dict or CaseResult);
    a case with keyword inputs shows them after its shape: `shape=(128, 512), eps=1e-06, w=float32[512], ...`."""
    case = _plain(case)
    kwargs = "".join(f", {k}={_shown(v)}" for k, v in (case.get("kwargs") or {}).items())
    line = f"{'PASS' if case['passed'] else 'FAIL'}: shape={tuple(case['shape'])}{kwargs}, max_diff={_diff(case['max_abs_diff'])}"
    if not case["passed"]:
        line += f" [{', '.join(case['verdicts'])}] {case['reason']}"
    return line


def _shown(value) -> str:
    """A keyword input as `nkidev.case.describe` gave it: an array as dtype[shape], a constant as its repr."""
    if isinstance(value, dict) and set(value) == {"dtype", "shape"}:
        return f"{value['dtype']}{value['shape']}"
    return repr(value)


def tail_lines(result) -> list[str]:
    """Everything after the case lines: cheats, warnings, notes and the verdict."""
    result = _plain(result)
    out = []
    for f in result["cheats"]:
        tag = "CHEAT" if f["severity"] == "fail" else "WARN"
        at = f" ({short(f['location'])})" if f["location"] else ""
        out.append(f"{tag} {f['verdict']}{at}: {f['message']}")
    out += [f"warning: {w}" for w in result["warnings"]]
    out += [f"note: {n}" for n in result["notes"]]
    if result["passed"]:
        out.append("All tests passed.")
        return out
    cases = result["cases"]
    failed = sum(not c["passed"] for c in cases)
    verdicts = sorted({v for c in cases for v in c["verdicts"]} | {f["verdict"] for f in result["cheats"] if f["severity"] == "fail"})
    out.append(
        f"FAILED: {result['kernel']}: {failed} of {len(cases)} cases failed ({', '.join(verdicts)}). "
        "Verdicts are explained by `nkidev validate --verdicts`."
    )
    return out


def lines(result) -> list[str]:
    result = _plain(result)
    return [case_line(c) for c in result["cases"]] + tail_lines(result)
