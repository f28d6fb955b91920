"""TensorE idle: what the Tensor Engine waited on during its idle gaps, and which lines issued it.

Each gap between TensorE busy intervals is attributed to the last DMA load or compute-engine
instruction that finished inside it before the TensorE resumed (te_idle.sql; the matching runs on arrays,
`_waits`); gaps are summed per (what, line). The prologue (before the first matmul) is reported in the details but not flagged: some
data must arrive before any matmul can start.
"""

from __future__ import annotations

import numpy as np

from nkidev.analysis.findings import Finding, fmt_ns, pct, plural, reportable, severity, short_location
from nkidev.analysis.intervals import first_at_or_after, last_at_or_before
from nkidev.analysis.investigations import Context, Outcome, queries

NAME = "te_idle"
# What to do about a finding (`nkidev explain te_idle`).
ADVICE = (
    "Overlap the producer with the matmuls: issue loads earlier (double-buffer the tiles), reuse loaded "
    "data, or move the blocking instruction to a less busy engine."
)
RANK = 7  # position in reports (analysis order)
ENGINE = "Tensor"  # the engine whose time its findings cost (None: the bottleneck itself)
NEEDS = (("Instruction", ("id", "engine", "start_ts", "end_ts")),)
MAX_FINDINGS = 5


def run(ctx: Context) -> Outcome:
    if not ctx.inputs["matmuls"]:
        return Outcome(status="not_applicable", reason="no Tensor Engine matmuls in the window")
    q = queries(NAME)
    ctx.profile.con.execute(q["build"])
    ctx.profile.put(*_waits(ctx, q))
    groups = ctx.profile.rows(q["groups"])
    ctx.profile.con.unregister("te_waits")
    inner = [g for g in groups if g["phase"] == "inner"]
    prologue = [g for g in groups if g["phase"] == "prologue"]
    details = {
        "te_idle_ns": ctx.bounds["gaps"]["te_idle_ns"],
        "inner_idle_ns": sum(g["idle_ns"] for g in inner),
        "prologue_ns": sum(g["idle_ns"] for g in prologue),
        "prologue_waited_on": [_group(g) for g in prologue],
        "waits": [_group(g) for g in inner],
    }
    out = Outcome(details=details)
    for g in inner:
        if len(out.findings) >= MAX_FINDINGS or g["waited_on"] == "unattributed":
            continue
        if reportable(g["idle_ns"], ctx.total_ns):
            out.findings.append(_finding(ctx, g))
    return out


def _waits(ctx: Context, q: dict) -> tuple:
    """The view te_waits: each gap with what it waited on and the line that resumed (te_idle.sql, groups). The two
    as-of matches run on sorted arrays (intervals.py); in SQL they were two ASOF joins after two groupings."""
    gaps = ctx.profile.arrays(q["gaps"])
    producers = ctx.profile.arrays(q["producers"])
    starts = ctx.profile.arrays(q["te_starts"])
    n_src = ctx.profile.rows("SELECT n_src FROM te_codes")[0]["n_src"]
    # the last producer to end by the gap's end; of those ending then, the first label (by name)
    p_end, p_label = _sorted_pairs(producers["end_ts"], producers["label"])
    i = last_at_or_before(p_end, gaps["ge"])
    found = i >= 0
    pe = np.where(found, p_end[np.maximum(i, 0)], 0) if len(p_end) else np.zeros(len(i), dtype=np.int64)
    waited = found & (pe > gaps["gs"])  # ended inside the gap; else unattributed
    label = p_label[np.maximum(i, 0)] if len(p_end) else np.zeros(len(i), dtype=np.int64)
    # the first TensorE start from the gap's end; of those starting then, the first by location (no line: last)
    t_start, t_src = _sorted_pairs(starts["start_ts"], starts["src"])
    j = first_at_or_after(t_start, gaps["ge"])
    resumed = j < len(t_start)
    te_src = t_src[np.minimum(j, len(t_start) - 1)] if len(t_start) else np.zeros(len(j), dtype=np.int64)
    columns = {"prologue": gaps["prologue"], "gs": gaps["gs"], "ge": gaps["ge"], "label": label, "te_src": te_src}
    nulls = {"label": ~waited, "te_src": ~resumed | (te_src == n_src - 1)}
    return "te_waits", columns, nulls


def _sorted_pairs(key: np.ndarray, minor: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pairs (key, minor) sorted by key, then minor. Packed into one int64 when the ranges allow: a stable
    (run-aware) sort of one key costs a third of the two-key lexsort on these nearly sorted times; equal pairs are
    equal, so no order among them is lost."""
    key, minor = key.astype(np.int64, copy=False), minor.astype(np.int64, copy=False)
    if len(key) == 0:
        return key, minor
    k0, span, width = int(key.min()), int(key.max()) - int(key.min()) + 1, int(minor.max()) + 1
    if int(minor.min()) < 0 or span * width >= 2**63:
        o = np.lexsort((minor, key))
        return key[o], minor[o]
    o = np.argsort((key - k0) * width + minor, kind="stable")
    return key[o], minor[o]  # gathers: unpacking by // and % costs more than the sort


def _group(g: dict) -> dict:
    return {
        "waited_on": g["waited_on"],
        "what": g["what"],
        "source_line": short_location(g["src"]) if g["src"] else None,
        "gaps": g["gaps"],
        "idle_ns": float(g["idle_ns"]),
        "longest_ns": float(g["longest_ns"]),
        "resumed_at": short_location(g["resumed_src"]) if g["resumed_src"] else None,
    }


def _finding(ctx: Context, g: dict) -> Finding:
    where = short_location(g["src"]) if g["src"] else None
    if g["waited_on"] == "DMA":
        what = f"DMA loads of {g['what']}" if g["what"] else "DMA transfers"
        hint = (
            "Prefetch: issue the load earlier (hoist it, or double-buffer so the next tile loads while this "
            "one computes), load once and reuse, or use larger, more efficient DMAs."
        )
    else:
        what = f"{g['what']} on the {g['waited_on'].capitalize()} Engine"
        hint = "Overlap it with matmuls (double-buffer its output) or move it to a less busy engine."
    issued = f" issued at {where}" if where else ""
    summary = (
        f"the Tensor Engine sat idle {fmt_ns(g['idle_ns'])} ({pct(g['idle_ns'], ctx.total_ns)} of the "
        f"kernel) in {plural(g['gaps'], 'gap')} waiting on {what}{issued}. {hint}"
    )
    evidence = {
        **_group(g),
        "computed_as": (
            "time = sum of the TensorE idle gaps whose last finishing producer (DMA load or other-engine "
            "instruction) before the TensorE resumed was this line (a heuristic: profiles hold no dependencies)"
        ),
    }
    return Finding(NAME, severity(g["idle_ns"], ctx.total_ns), float(g["idle_ns"]), summary, [where] if where else [], evidence)
