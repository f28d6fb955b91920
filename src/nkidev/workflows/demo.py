"""`nkidev demo`: the seed walkthrough on bundled kernels, end to end on the CPU.

First the seed's numerics: examples/softmax.py validated on its four shapes. Then the payoff:
examples/swiglu_naive.py reloads both weight matrices for every 128-token tile and loads x in
256-byte slices; examples/swiglu.py fixes both. The diagnosis profiles the naive kernel with the
cost model, runs the analysis and (optionally) profiles the fixed kernel for comparison.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from nkidev.analysis.api import analyze
from nkidev.analysis.findings import fmt_ns
from nkidev.analysis.investigations import KINDS
from nkidev.examples import example
from nkidev.profile.api import profile_task
from nkidev.validate.api import validate_task
from nkidev.validate.report import lines

NAIVE = ("swiglu_naive.py", "swiglu_naive")
FIXED = ("swiglu.py", "swiglu")
FIRST = ("redundant_load",)  # causes before symptoms: reloads explain the Tensor Engine's idle time
MAX_LINES_PER_KIND = 4


def softmax_check() -> dict:
    """Validate examples/softmax.py on its four seed shapes against the NumPy reference (anti-cheat checks on)."""
    result = validate_task(f"{example('softmax.py')}::softmax_kernel", seeds=0)
    return {**result.to_dict(), "lines": lines(result)}


def profile_example(file: str, kernel: str, out: Path) -> Path:
    """Profile examples/<file>::<kernel> (case 0) into `out`; returns the profile directory."""
    return Path(profile_task(f"{example(file)}::{kernel}", case=0, out=out, force=True).profile_dir)


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

    The profiles go to `out_dir`, or to a temporary directory removed afterwards (their `profile_dir` is then
    None). Returns {"naive": {...}, "findings": [finding dicts], "fixed": {...} | None, "speedup": float | None}.
    """
    if out_dir is not None:
        return _diagnose(Path(out_dir), compare)
    with tempfile.TemporaryDirectory(prefix="nkidev-swiglu-") as tmp:
        out = _diagnose(Path(tmp), compare)
    for part in (out["naive"], out["fixed"]):
        if part:
            part["profile_dir"] = None
    return out


def _diagnose(root: Path, compare: bool) -> dict:
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
    for kind in sorted(KINDS, key=lambda k: k not in FIRST):
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
