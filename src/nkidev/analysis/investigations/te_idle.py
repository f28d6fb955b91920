"""TensorE idle: what the Tensor Engine waited on during its idle gaps, and which lines issued it.

Each gap between TensorE busy intervals is attributed to the last DMA load or compute-engine
instruction that finished inside it before the TensorE resumed (te_idle.sql); gaps are summed per
(what, line). The prologue (before the first matmul) is reported in the details but not flagged: some
data must arrive before any matmul can start.
"""

from __future__ import annotations

from nkidev.analysis.findings import Finding, fmt_ns, pct, plural, reportable, severity, short_location
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
    groups = ctx.profile.rows(q["gaps"])
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
