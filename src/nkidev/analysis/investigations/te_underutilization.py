"""TensorE underutilization: matmuls whose tiles leave Tensor Engine rows or columns unused.

Detect: achieved FLOP rate over TensorE busy time against peak. Localize: each nc_matmul line's
K (contraction, <= 128 rows), M (stationary free, <= 128 columns) and N (moving free, <= 512).
K and M below the maximum cut throughput linearly; a short N costs little ([sources: agentic-investigations]), so
only K and M are flagged and the time gap of a line is its TensorE time x (1 - K*M / (rows*cols)).
"""

from __future__ import annotations

from nkidev.analysis.findings import Finding, fmt_ns, reportable, severity, short_location
from nkidev.analysis.investigations import Context, Outcome, queries

NAME = "te_underutilization"
# What to do about a finding (`nkidev explain te_underutilization`).
ADVICE = "Tile the contraction dim (K) to 128 partitions and the stationary free dim (M) to 128 columns; pack small matmuls together."
RANK = 4  # position in reports (analysis order)
ENGINE = "Tensor"  # the engine whose time its findings cost (None: the bottleneck itself)
NEEDS = (("Instruction", ("id", "engine", "opcode", "operands", "adjusted_flops")),)


def run(ctx: Context) -> Outcome:
    rows = ctx.profile.rows(queries(NAME)["main"])
    te = ctx.target.tensor_engine
    kmax, mmax, nmax = te.rows, te.cols, te.moving_fmax_fp32_dst
    details = {
        "utilization": ctx.inputs["te_utilization"],
        "max_k": kmax,
        "max_m": mmax,
        "max_n": nmax,
        "unparsed_tiles": sum(r["tiles"] for r in rows if r["K"] is None or r["M"] is None),
        "lines": [_line(r) for r in rows],
    }
    out = Outcome(details=details)
    if not rows:
        out.status, out.reason = "not_applicable", "no MATMUL instructions"
    for r in rows:
        if r["K"] is None or r["M"] is None or (r["K"] >= kmax and r["M"] >= mmax):
            continue
        used = min(r["K"], kmax) * min(r["M"], mmax) / (kmax * mmax)
        time_gap = r["busy_ns"] * (1.0 - used)
        if reportable(time_gap, ctx.total_ns):
            out.findings.append(_finding(ctx, r, used, time_gap, (kmax, mmax, nmax)))
    return out


def _line(r: dict) -> dict:
    return {
        "source_line": short_location(r["src"]),
        "K": r["K"],
        "M": r["M"],
        "N": r["N"],
        "tiles": r["tiles"],
        "flops": r["flops"],
        "busy_ns": r["busy_ns"],
    }


def _finding(ctx: Context, r: dict, used: float, time_gap: float, limits: tuple[int, int, int]) -> Finding:
    kmax, mmax, nmax = limits
    small = [f"{name}={v} of {lim}" for name, v, lim in (("K", r["K"], kmax), ("M", r["M"], mmax)) if v < lim]
    where = short_location(r["src"])
    summary = (
        f"{r['tiles']} matmuls at {where} use {', '.join(small)} (N={r['N']} of {nmax}): "
        f"{100 * used:.0f}% of the Tensor Engine's {kmax}x{mmax} array, ~{fmt_ns(time_gap)} lost. "
        f"Tile the contraction dim to {kmax} partitions and the stationary free dim to {mmax}."
    )
    evidence = {
        **_line(r),
        "array_fraction_used": used,
        "utilization": ctx.inputs["te_utilization"],
        "computed_as": (
            f"time = line TensorE busy x (1 - K*M / (rows*cols)) = {r['busy_ns']:.0f} ns x (1 - {r['K']}*{r['M']} / ({kmax}*{mmax}))"
        ),
    }
    return Finding(NAME, severity(time_gap, ctx.total_ns), time_gap, summary, [where] if r["src"] else [], evidence)
