"""Redundant transposes: Tensor Engine time spent on nc_transpose instead of useful matmuls.

The bound gap is transpose FLOPs at peak (compute_bound_ideal_flops - ..._useful_flops); a finding's
time gap is the TensorE busy time of the transposes at that line, what removing them would free.
"""

from __future__ import annotations

from nkidev.analysis.findings import Finding, fmt_ns, pct, reportable, severity, short_location
from nkidev.analysis.investigations import Context, Outcome, queries

NAME = "redundant_transpose"
# What to do about a finding (`nkidev explain redundant_transpose`).
ADVICE = "Pass the operand already transposed, load it transposed with nisa.dma_transpose, or transpose once and reuse it."
RANK = 5  # position in reports (analysis order)
ENGINE = "Tensor"  # the engine whose time its findings cost (None: the bottleneck itself)
NEEDS = (("Instruction", ("id", "engine", "opcode", "tensor_instruction_type", "adjusted_flops")),)


def run(ctx: Context) -> Outcome:
    rows = ctx.profile.rows(queries(NAME)["main"])
    hw, tp, peak = ctx.inputs["hw_flops"], ctx.inputs["transpose_flops"], ctx.inputs["te_peak_flops_per_s"]
    details = {
        "transpose_flops": tp,
        "transpose_share_of_flops": tp / hw if hw else None,
        "gap_at_peak_ns": tp * 1e9 / peak if peak else None,
        "lines": [
            {"source_line": short_location(r["src"]), "transposes": r["transposes"], "flops": r["flops"], "busy_ns": r["busy_ns"]}
            for r in rows
        ],
    }
    out = Outcome(details=details)
    for r in rows:
        time_gap = float(r["busy_ns"])
        if not reportable(time_gap, ctx.total_ns):
            continue
        where = short_location(r["src"])
        summary = (
            f"{r['transposes']} Tensor Engine transposes at {where} take {fmt_ns(time_gap)} of TensorE time "
            f"({pct(r['flops'], hw)} of its FLOPs) without contributing to the result. Pass the "
            f"operand pre-transposed, load it transposed (nisa.dma_transpose), or transpose once and reuse."
        )
        evidence = {
            "transposes": r["transposes"],
            "flops": r["flops"],
            "busy_ns": r["busy_ns"],
            "gap_at_peak_ns": r["flops"] * 1e9 / peak if peak else None,
            "computed_as": "time = TensorE busy time of the line's TRANSPOSE matmuls (they add nothing to the result)",
        }
        out.findings.append(Finding(NAME, severity(time_gap, ctx.total_ns), time_gap, summary, [where] if r["src"] else [], evidence))
    return out
