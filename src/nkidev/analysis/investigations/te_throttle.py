"""TensorE throttle: matmuls that ran under the Tensor Engine's utilization limit (dI/dt power throttling).

The Throttle table holds the limit in force over time as k/n of full rate ([sources: explorer-schema]
"Throttle"; nkidev writes its cost model's dI/dt ramp). On Trn2/Trn3 a burst from idle starts at about half
rate and ramps to full over ~3 us, and the limit engages again whenever the TensorE was less than half busy
over a ~3 us window ([sources: explorer-summary "Understanding throttling"]). The ramp of a core's first
burst cannot be avoided and is never flagged; throttling after it means idle gaps keep re-engaging the limit.
Flagged when the limit was in force for at least `MIN_SHARE` of the TensorE busy time after the start-up; the
time gap is the work the limit cost: the sum of (1 - k/n) x throttled busy time (te_throttle.sql).
"""

from __future__ import annotations

from nkidev.analysis.findings import Finding, fmt_ns, pct, plural, reportable, severity, short_location
from nkidev.analysis.investigations import Context, Outcome, queries
from nkidev.costmodel.throttle import refill_ns

NAME = "te_throttle"
# What to do about a finding (`nkidev explain te_throttle`).
ADVICE = (
    "Keep the Tensor Engine fed so it never idles long enough to re-engage the limit: prefetch and double-buffer "
    "the loads its matmuls wait for, and batch matmuls into longer bursts."
)
RANK = 8  # position in reports (analysis order)
ENGINE = "Tensor"  # the engine whose time its findings cost
NEEDS = (("Throttle", ("timestamp", "duration", "k", "n")), ("Instruction", ("id", "engine", "opcode", "start_ts", "end_ts")))
MIN_SHARE = 0.10  # share of the TensorE busy time (after the start-up) under the limit that is worth a finding
MAX_LINES = 3  # source lines named in a finding (the first affected ones)


def startup_ns(ctx: Context) -> float:
    """How long after a core's first MATMUL its throttling is the unavoidable start-up ramp (unless the limit
    engages again sooner): the target's ramp, after the pipeline refill (~3 us)."""
    return ctx.target.tensor_engine.throttle_ramp_ns + refill_ns(ctx.target)


def run(ctx: Context) -> Outcome:
    q = queries(NAME)
    con = ctx.profile.con
    con.execute(q["build"])
    if not ctx.profile.rows("SELECT count(*) AS n FROM thr_pieces")[0]["n"]:
        # nothing below full rate (trn1, or a TensorE never starved): skip the per-core busy merge over every
        # instruction, the bulk of this investigation's cost on a large profile
        return Outcome(
            details={"startup_ns": startup_ns(ctx), "engagements": 0, "lines": []},
            status="not_applicable",
            reason="the Throttle table has no limit below full rate",
        )
    con.execute(q["startup"], {"startup_ns": startup_ns(ctx)})
    con.execute(q["after"])
    t = ctx.profile.rows(q["totals"])[0]
    details = {
        "startup_ns": startup_ns(ctx),
        "tensor_busy_ns": float(t["busy_ns"]),
        "throttled_ns": float(t["throttled_ns"]),
        "throttled_busy_ns": float(t["throttled_busy_ns"]),
        "throttled_busy_share": t["throttled_busy_ns"] / t["busy_ns"] if t["busy_ns"] else None,
        "lost_ns": float(t["lost_ns"]),
        "engagements": int(t["engagements"]),
        "startup_throttled_ns": float(t["startup_throttled_ns"]),
        "other_cores_throttled_ns": float(t["other_cores_throttled_ns"]),  # cores that ran no MATMUL: no work lost
        "all_engagements": int(t["all_engagements"]),
        "throttled_cores": int(t["cores"]),
        "lines": [],
    }
    lines = ctx.profile.rows(q["lines"])
    details["lines"] = [_line(r) for r in lines]
    out = Outcome(details=details)
    share = details["throttled_busy_share"] or 0.0
    if share >= MIN_SHARE and reportable(details["lost_ns"], ctx.total_ns):
        out.findings.append(_finding(ctx, details))
    return out


def _line(r: dict) -> dict:
    return {
        "source_line": short_location(r["src"]) if r["src"] else None,
        "matmuls": int(r["matmuls"]),
        "throttled_ns": float(r["throttled_ns"]),
        "first_ts": int(r["first_ts"]),
    }


def _finding(ctx: Context, d: dict) -> Finding:
    named = [x["source_line"] for x in d["lines"] if x["source_line"]][:MAX_LINES]
    mean_limit = 1.0 - d["lost_ns"] / d["throttled_busy_ns"]
    where = f" The first throttled matmuls are at {', '.join(named)}." if named else ""
    summary = (
        f"the Tensor Engine ran under its utilization limit for {fmt_ns(d['throttled_busy_ns'])} "
        f"({pct(d['throttled_busy_ns'], d['tensor_busy_ns'])} of its busy time) after the start-up ramp: the limit "
        f"engaged again {plural(d['engagements'], 'time')}, at {mean_limit:.0%} of full rate on average, costing "
        f"~{fmt_ns(d['lost_ns'])} of TensorE work.{where} The limit engages again whenever the TensorE is less than "
        "half busy over ~3 us: keep it fed (prefetch / double-buffer the loads the matmuls wait on, so they do not "
        "start after idle gaps)."
    )
    evidence = {
        **{k: v for k, v in d.items() if k != "lines"},
        "mean_limit": mean_limit,
        "lines": d["lines"][:MAX_LINES],
        "computed_as": (
            f"time = sum over TensorE busy time after each core's start-up ({fmt_ns(d['startup_ns'])} from its first "
            f"MATMUL) of (1 - k/n) of the Throttle row in force = {d['lost_ns']:.0f} ns; share = "
            f"{d['throttled_busy_ns']:.0f} / {d['tensor_busy_ns']:.0f} ns of TensorE busy time"
        ),
    }
    return Finding(NAME, severity(d["lost_ns"], ctx.total_ns), d["lost_ns"], summary, named, evidence)
