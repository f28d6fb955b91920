"""Findings: one inefficiency, how much time it costs, and the kernel lines that cause it."""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, field

SEVERITIES = ("high", "medium", "low")

# Share of the kernel time a finding must cost to be reported at each severity.
HIGH_SHARE = 0.15
MEDIUM_SHARE = 0.05
REPORT_SHARE = 0.01  # below this a finding is noise: the investigation lists it in its details only

_LOCATION = re.compile(r"^(?P<path>.*?):(?P<line>\d+)(?::\d+)?$")


@dataclass
class Finding:
    kind: str
    severity: str
    time_gap_ns: float
    summary: str
    source_lines: list[str]
    evidence: dict
    source: list[dict] = field(default_factory=list)  # resolved lines: location, path, line, text

    def to_dict(self) -> dict:
        return asdict(self)


def severity(time_gap_ns: float, total_time_ns: float) -> str:
    share = time_gap_ns / total_time_ns if total_time_ns else 0.0
    return "high" if share >= HIGH_SHARE else "medium" if share >= MEDIUM_SHARE else "low"


def off_critical_path(finding: Finding, engine: str | None, bottleneck: str | None) -> None:
    """Lower the severity of a finding whose engine (the one whose time it costs) is not the bottleneck: that time
    is off the critical path."""
    if engine and bottleneck and engine != bottleneck and finding.severity != "low":
        finding.severity = SEVERITIES[SEVERITIES.index(finding.severity) + 1]
        finding.evidence["severity_lowered"] = f"{engine} is not the bottleneck engine ({bottleneck})"


def reportable(time_gap_ns: float | None, total_time_ns: float) -> bool:
    return bool(time_gap_ns) and total_time_ns > 0 and time_gap_ns >= REPORT_SHARE * total_time_ns


def split_location(location: str | None) -> tuple[str, int] | None:
    """'/a/b/kernel.py:42' -> ('/a/b/kernel.py', 42); None when it is not a file:line."""
    m = _LOCATION.match(location or "")
    return (m.group("path"), int(m.group("line"))) if m else None


def short_location(location: str | None) -> str:
    """'/a/b/kernel.py:42' -> 'kernel.py:42' (the form findings use in source_lines)."""
    parts = split_location(location)
    return f"{os.path.basename(parts[0])}:{parts[1]}" if parts else (location or "unknown")


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "?"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def fmt_ns(ns: float | None) -> str:
    if ns is None:
        return "?"
    if abs(ns) >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if abs(ns) >= 1e3:
        return f"{ns / 1e3:.1f} us"
    return f"{ns:.0f} ns"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def pct(part: float | None, whole: float | None) -> str:
    return "?" if part is None or not whole else f"{100.0 * part / whole:.0f}%"
