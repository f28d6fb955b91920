"""The end of `nkidev demo`: profile the naive SwiGLU kernel, analyze it, say what is wrong and where.

examples/swiglu_naive.py reloads both weight matrices for every 128-token tile and loads x in
256-byte slices; examples/swiglu.py fixes both. The diagnosis profiles the naive kernel with the
cost model, runs the analysis and (optionally) profiles the fixed kernel for comparison.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from nkidev.analysis.api import analyze
from nkidev.analysis.findings import fmt_ns
from nkidev.examples import example

NAIVE = ("swiglu_naive.py", "swiglu_naive")
FIXED = ("swiglu.py", "swiglu")
# Causes before symptoms: reloads and small DMAs explain the Tensor Engine's idle time.
TEXT_ORDER = ("redundant_load", "dma_efficiency", "spill", "te_underutilization", "redundant_transpose", "engine_bound", "te_idle")
MAX_LINES_PER_KIND = 4


def profile_example(file: str, kernel: str, out: Path) -> Path:
    """Profile examples/<file>::<kernel> (case 0) into `out`; returns the profile directory."""
    from nkidev.profile.api import profile_task

    made = profile_task(f"{example(file)}::{kernel}", case=0, out=out, force=True)
    for attr in ("profile_dir", "path", "out"):  # tolerate a result object as well as a path
        if hasattr(made, attr):
            return Path(getattr(made, attr))
    return Path(made) if made is not None else out


def _summary(result, file: str, kernel: str) -> dict:
    return {
        "kernel": f"examples/{file}::{kernel}",
        "profile_dir": result.profile_dir,
        "total_time_ns": result.total_time_ns,
        "bottleneck_engine": result.bottleneck_engine,
        "kinds": sorted({f.kind for f in result.findings}),
    }


def diagnose_swiglu(out_dir: str | Path | None = None, compare: bool = True) -> dict:
    """Profile and analyze the naive SwiGLU kernel; with `compare`, also the fixed one.

    Returns {"naive": {...}, "findings": [finding dicts], "fixed": {...} | None, "speedup": float | None}.
    """
    root = Path(out_dir) if out_dir else Path(tempfile.mkdtemp(prefix="nkidev-swiglu-"))
    naive = analyze(profile_example(*NAIVE, root / "swiglu_naive"))
    out = {"naive": _summary(naive, *NAIVE), "findings": [f.to_dict() for f in naive.findings], "fixed": None, "speedup": None}
    if compare:
        fixed = analyze(profile_example(*FIXED, root / "swiglu"))
        out["fixed"] = _summary(fixed, *FIXED)
        out["speedup"] = naive.total_time_ns / fixed.total_time_ns if fixed.total_time_ns else None
    return out


def diagnosis_text(d: dict) -> str:
    """A few lines for humans: the naive kernel's time, its top findings with code, the fixed kernel."""
    n = d["naive"]
    lines = [
        f"Diagnosis of {n['kernel']} (cost model): {fmt_ns(n['total_time_ns'])}, "
        f"bottleneck {n['bottleneck_engine']}, {len(d['findings'])} findings"
    ]
    for kind in TEXT_ORDER:
        group = [f for f in d["findings"] if f["kind"] == kind]
        if not group:
            continue
        top = group[0]
        lines.append(
            f"  [{top['severity']}] {kind}: {top['summary'].split('; ')[0].split('. ')[0]}"
            + (f" (+{len(group) - 1} more)" if len(group) > 1 else "")
        )
        for f in group[:MAX_LINES_PER_KIND]:
            for src in f["source"][:1]:
                lines.append(f"      {src['location']}: {src['text'] or ''}")
    fixed = d.get("fixed")
    if fixed:
        gone = [k for k in ("dma_efficiency", "redundant_load") if k not in fixed["kinds"]]
        lines.append(
            f"Fixed in {fixed['kernel']}: {fmt_ns(fixed['total_time_ns'])} "
            f"({d['speedup']:.1f}x faster); {' and '.join(gone) or 'no'} findings gone."
        )
    return "\n".join(lines)
