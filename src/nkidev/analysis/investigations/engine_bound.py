"""Engine-bound: Vector, Scalar or GpSimd is the slowest engine; which opcodes and lines fill it.

AWS's profile-analysis skill stops at "not yet supported" for this case. A finding's time gap is the
most removing that line's work could save before another engine becomes the bottleneck:
min(line busy time, bottleneck time - next slowest engine time).
"""

from __future__ import annotations

from nkidev.analysis.bounds import ENGINES
from nkidev.analysis.findings import Finding, fmt_ns, pct, reportable, severity, short_location
from nkidev.analysis.investigations import Context, Outcome, queries

NAME = "engine_bound"
# What to do about a finding (`nkidev explain engine_bound`).
ADVICE = (
    "Remove or fuse work on the bottleneck engine, move it to an idler engine (Scalar <-> Vector), or "
    "give each instruction more elements (larger free dim, all 128 partitions)."
)
RANK = 6  # position in reports (analysis order)
ENGINE = None  # the engine whose time its findings cost (None: the bottleneck itself)
NEEDS = (("Instruction", ("id", "engine", "opcode")),)

ELIGIBLE = ("Vector", "Scalar", "GpSimd")
LINE_SHARE = 0.05  # a line must fill at least 5% of the engine's busy time
MAX_FINDINGS = 5
# ~ fixed per-instruction overhead: 64-cycle min II [sources: isa-legacy] + ~100 cycles static [sources: arch-v2 "Vector Engine"]
SHORT_INSTRUCTION_NS = 200


def run(ctx: Context) -> Outcome:
    if ctx.bottleneck not in ELIGIBLE:
        return Outcome(status="not_applicable", reason=f"the bottleneck engine is {ctx.bottleneck or 'none'}")
    q = queries(NAME)
    key = ENGINES[ctx.bottleneck]
    params = {"engine": key}
    lines = ctx.profile.rows(q["lines"], params)
    opcodes = ctx.profile.rows(q["opcodes"], params)
    times = {e: v["active_ns"] for e, v in ctx.engines.items()}
    busy = times[ctx.bottleneck]
    runner_up = max(t for e, t in times.items() if e != ctx.bottleneck)
    headroom = busy - runner_up
    details = {
        "engine": ctx.bottleneck,
        "engine_busy_ns": busy,
        "next_engine_busy_ns": runner_up,
        "opcodes": opcodes,
        "lines": [{"source_line": short_location(r["src"]), **{k: r[k] for k in r if k != "src"}} for r in lines],
    }
    out = Outcome(details=details)
    for r in lines:
        if len(out.findings) >= MAX_FINDINGS or r["busy_ns"] < LINE_SHARE * busy:
            continue
        time_gap = min(float(r["busy_ns"]), headroom)
        if reportable(time_gap, ctx.total_ns):
            out.findings.append(_finding(ctx, r, busy, time_gap, headroom))
    return out


def _finding(ctx: Context, r: dict, busy: float, time_gap: float, headroom: float) -> Finding:
    where = short_location(r["src"])
    hint = (
        f" Most are short ({fmt_ns(r['mean_ns'])} each), so fixed per-instruction overhead dominates: process "
        f"more elements per instruction (larger free dim, all 128 partitions)."
        if r["mean_ns"] < SHORT_INSTRUCTION_NS
        else " Move work to an idler engine (e.g. Scalar <-> Vector), fuse it into a neighbouring instruction, or remove it."
    )
    summary = (
        f"the {ctx.bottleneck} Engine is the bottleneck; {r['instructions']} {r['opcode']} instructions at "
        f"{where} keep it busy {fmt_ns(r['busy_ns'])} ({pct(r['busy_ns'], busy)} of its time).{hint}"
    )
    evidence = {
        "engine": ctx.bottleneck,
        "opcode": r["opcode"],
        "instructions": r["instructions"],
        "busy_ns": r["busy_ns"],
        "mean_ns": r["mean_ns"],
        "engine_busy_ns": busy,
        "next_engine_busy_ns": busy - headroom,
        "computed_as": (
            f"time = min(line busy {r['busy_ns']:.0f} ns, bottleneck busy {busy:.0f} ns - next slowest engine "
            f"{busy - headroom:.0f} ns): removing the line cannot save more before another engine binds"
        ),
    }
    return Finding(NAME, severity(time_gap, ctx.total_ns), time_gap, summary, [where] if r["src"] else [], evidence)
