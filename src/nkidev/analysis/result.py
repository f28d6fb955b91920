"""The analysis result: a typed object whose `to_dict()` is the documented JSON (SCHEMA.md)."""

from __future__ import annotations

from dataclasses import dataclass, field

from nkidev.analysis.findings import Finding

SCHEMA_VERSION = "nkidev.analysis/1"


@dataclass
class AnalysisResult:
    profile_dir: str
    target: str
    bottleneck_engine: str | None
    total_time_ns: float
    bounds: dict
    engines: dict
    findings: list[Finding]
    investigations: dict[str, dict]
    warnings: list[str] = field(default_factory=list)
    timeline: dict = field(default_factory=dict, repr=False)  # binned engine busy fractions, for the HTML report
    lines: list[dict] = field(default_factory=list, repr=False)  # cost per source line (lines.sql), for nkidev compare

    def by_kind(self, kind: str) -> list[Finding]:
        return [f for f in self.findings if f.kind == kind]

    def to_dict(self) -> dict:
        return {
            "schema": SCHEMA_VERSION,
            "profile_dir": self.profile_dir,
            "target": self.target,
            "bottleneck_engine": self.bottleneck_engine,
            "total_time_ns": self.total_time_ns,
            "bounds": self.bounds,
            "engines": self.engines,
            "findings": [f.to_dict() for f in self.findings],
            "investigations": self.investigations,
            "warnings": self.warnings,
        }
