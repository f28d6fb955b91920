"""Compare two profiles: kernel time, engines, bounds, findings fixed and introduced, cost per source line.

    from nkidev.analysis.compare import compare
    c = compare("before/", "examples/swiglu.py::swiglu")   # profile dirs or FILE::KERNEL specs
    c.to_dict()                                             # `nkidev compare A B --json`

A FILE::KERNEL spec is profiled with the cost model (case `case` of its task file) into a temporary
directory that is removed afterwards; the task file and the kernel run in the sandbox's isolated child
(`limits`: time and memory), as `nkidev profile` runs them. Source lines are matched by their text, so a rewritten kernel in
another file still lines up wherever a line survived; a line only one side has is compared with zero.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from nkidev.analysis.api import analyze
from nkidev.analysis.bounds import COMPUTE_BOUNDS, MEMORY_BOUNDS
from nkidev.analysis.result import AnalysisResult
from nkidev.sandbox.limits import Limits

SCHEMA_VERSION = "nkidev.compare/1"
BOUND_KEYS = ("total_time_ns", *MEMORY_BOUNDS, *COMPUTE_BOUNDS, "perfect_pipeline_ns")
LINE_COSTS = ("engine_ns", "tensor_ns", "vector_ns", "scalar_ns", "gpsimd_ns", "dma_ns", "dma_bytes", "instructions", "transfers")
MAX_LINES = 40


@dataclass
class Side:
    label: str  # what the user passed
    kind: str  # "profile" | "spec"
    result: AnalysisResult = field(repr=False)

    def to_dict(self) -> dict:
        r = self.result
        return {
            "label": self.label,
            "kind": self.kind,
            "profile_dir": None if self.kind == "spec" else r.profile_dir,
            "target": r.target,
            "total_time_ns": r.total_time_ns,
            "bottleneck_engine": r.bottleneck_engine,
            "findings": len(r.findings),
        }


@dataclass
class Comparison:
    a: Side
    b: Side
    time: dict
    engines: dict
    bounds: dict
    findings: dict
    lines: list[dict]

    def to_dict(self) -> dict:
        return {
            "schema": SCHEMA_VERSION,
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
            "time": self.time,
            "engines": self.engines,
            "bounds": self.bounds,
            "findings": self.findings,
            "lines": self.lines,
        }


def _delta(a, b) -> dict:
    d = None if a is None or b is None else b - a
    return {"a": a, "b": b, "delta": d, "ratio": None if d is None or not a else b / a}


def _side(
    what: str, case: int, target: str | None, source_root, scratch: Path, limits: Limits | None, calibration: str | None = None
) -> Side:
    if "::" in what and not Path(what).is_dir():
        from nkidev import sandbox

        out = scratch / f"profile-{len(list(scratch.iterdir()))}"
        options = {"spec": what, "case": case, "target": target, "out": str(out), "compute": False}
        if calibration is not None:
            options["calibration"] = calibration
        made = sandbox.run("nkidev.profile.api:profile_task_data", options, limits, label=what)
        return Side(what, "spec", analyze(made["profile_dir"], source_root=source_root, calibration=calibration))
    return Side(what, "profile", analyze(what, source_root=source_root, calibration=calibration))


def finding_key(f) -> str:
    """What makes two findings of two profiles the same problem: the kind and the tensor, else the code line."""
    ev = f.evidence
    what = ev.get("tensor") or ev.get("opcode") or ev.get("what")
    text = next((s["text"] for s in f.source if s.get("text")), None) or ",".join(f.source_lines)
    direction = ev.get("direction") or ev.get("waited_on") or ""
    return f"{f.kind}:{what or ''}:{direction}:{text if not ev.get('tensor') else ''}"


def _findings(a: AnalysisResult, b: AnalysisResult) -> dict:
    ka = {finding_key(f): f for f in a.findings}
    kb = {finding_key(f): f for f in b.findings}

    def brief(f) -> dict:
        return {"kind": f.kind, "severity": f.severity, "time_gap_ns": f.time_gap_ns, "source_lines": f.source_lines, "summary": f.summary}

    return {
        "fixed": [brief(ka[k]) for k in ka if k not in kb],
        "introduced": [brief(kb[k]) for k in kb if k not in ka],
        "remaining": [
            {"kind": ka[k].kind, "a": brief(ka[k]), "b": brief(kb[k]), "time_gap_delta_ns": kb[k].time_gap_ns - ka[k].time_gap_ns}
            for k in ka
            if k in kb
        ],
    }


def _line_key(line: dict) -> str:
    return line["text"] if line.get("text") else line["source_line"]


def _lines(a: AnalysisResult, b: AnalysisResult) -> list[dict]:
    def by_key(result: AnalysisResult) -> dict[str, dict]:
        out: dict[str, dict] = {}
        for line in result.lines:
            entry = out.setdefault(_line_key(line), {"locations": [], **dict.fromkeys(LINE_COSTS, 0)})
            entry["locations"].append(line["source_line"])
            for k in LINE_COSTS:
                entry[k] += line[k] or 0
        return out

    la, lb = by_key(a), by_key(b)
    rows = []
    for key in sorted(set(la) | set(lb)):
        x, y = la.get(key), lb.get(key)
        cost_a = (x["engine_ns"] + x["dma_ns"]) if x else 0
        cost_b = (y["engine_ns"] + y["dma_ns"]) if y else 0
        rows.append(
            {
                "code": key,
                "a": x,
                "b": y,
                "cost_a_ns": cost_a,
                "cost_b_ns": cost_b,
                "delta_ns": cost_b - cost_a,
                "status": "both" if x and y else "only_a" if x else "only_b",
            }
        )
    rows.sort(key=lambda r: (-abs(r["delta_ns"]), r["code"]))
    return rows[:MAX_LINES]


def compare(
    a: str | Path,
    b: str | Path,
    case: int = 0,
    target: str | None = None,
    source_root=None,
    limits: Limits | None = None,
    calibration: str | None = None,
) -> Comparison:
    """Compare profile A (before) with profile B (after); each is a profile directory or a FILE::KERNEL spec
    (profiled in an isolated child under `limits`, default the CLI's; `calibration` applied to the target)."""
    with tempfile.TemporaryDirectory(prefix="nkidev-compare-") as scratch:
        sa = _side(str(a), case, target, source_root, Path(scratch), limits, calibration)
        sb = _side(str(b), case, target, source_root, Path(scratch), limits, calibration)
    ra, rb = sa.result, sb.result
    time = {
        "a_ns": ra.total_time_ns,
        "b_ns": rb.total_time_ns,
        "delta_ns": rb.total_time_ns - ra.total_time_ns,
        "speedup": ra.total_time_ns / rb.total_time_ns if rb.total_time_ns else None,
    }
    engines = {
        name: {
            **_delta(ra.engines[name]["active_ns"], rb.engines[name]["active_ns"]),
            "bottleneck": [ra.bottleneck_engine == name, rb.bottleneck_engine == name],
        }
        for name in ra.engines
    }
    bounds = {k: _delta(ra.bounds.get(k), rb.bounds.get(k)) for k in BOUND_KEYS}
    bounds["binding_memory_ceiling"] = {
        "a": ra.bounds["inputs"]["memory_ceiling"]["binding"],
        "b": rb.bounds["inputs"]["memory_ceiling"]["binding"],
    }
    bounds["dma_transfer_bytes"] = _delta(ra.bounds["inputs"]["dma_transfer_bytes"], rb.bounds["inputs"]["dma_transfer_bytes"])
    return Comparison(sa, sb, time, engines, bounds, _findings(ra, rb), _lines(ra, rb))
