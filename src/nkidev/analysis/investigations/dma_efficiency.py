"""DMA efficiency: DMAs that move too few bytes per partition to approach peak bandwidth.

Detect: memory_bound - memory_bound_ideal (DMA busy time beyond bytes at peak) and the achieved
bandwidth. Localize: each dma_copy line's bytes per partition per transfer against the target's
2 KiB (minimum recommended) and 4 KiB (saturating) sizes ([sources: dma-bandwidth "Bandwidth vs. Payload Size"],
[sources: agentic-investigations]).
"""

from __future__ import annotations

from nkidev.analysis.findings import Finding, fmt_bytes, fmt_ns, plural, reportable, severity, short_location
from nkidev.analysis.investigations import Context, Outcome, queries

NAME = "dma_efficiency"
# What to do about a finding (`nkidev explain dma_efficiency`).
ADVICE = (
    "Move more contiguous bytes per partition per dma_copy (>= 2 KiB, ideally >= 4 KiB): wider tiles, "
    "whole rows instead of column slices, or merge adjacent small loads into one."
)
RANK = 1  # position in reports (analysis order)
ENGINE = "DMA"  # the engine whose time its findings cost (None: the bottleneck itself)
NEEDS = (
    ("Instruction", ("id", "hbm_read_bytes", "hbm_write_bytes")),
    ("DmaPacket", ("start_ts", "end_ts", "transfer_bytes")),  # the memory bound its gap is measured against
    ("DmaPacketAggregated", ("id", "transfer_bytes", "source", "write_num_sbuf_partitions", "read_num_sbuf_partitions")),
    ("Flow", ("in_table", "out_table", "in_id", "out_id")),
    ("Metadata", ("dma_ddr_bandwidth",)),
)

FINE_GAP_SHARE = 0.05  # an efficiency gap under 5% of memory_bound means the DMAs are already efficient


def run(ctx: Context) -> Outcome:
    q = queries(NAME)
    b, inputs = ctx.bounds, ctx.inputs
    gap = b["gaps"]["dma_inefficiency_ns"] or 0.0
    total_bytes = inputs["dma_transfer_bytes"]
    dpa_bytes = ctx.profile.scalar(q["coverage"]) or 0
    lines = ctx.profile.rows(q["lines"])
    details = {
        "efficiency_gap_ns": gap,
        "achieved_bytes_per_s": inputs["achieved_dma_bytes_per_s"],
        "peak_bytes_per_s": ctx.peak_bytes_per_s(),
        "binding_ceiling": inputs["memory_ceiling"]["binding"],
        "dpa_coverage": dpa_bytes / total_bytes if total_bytes else None,
        "min_efficient_bytes_per_partition": ctx.target.dma.min_efficient_bytes_per_partition,
        "saturating_bytes_per_partition": ctx.target.dma.saturating_bytes_per_partition,
        "lines": [_line(r) for r in lines],
    }
    out = Outcome(details=details)
    significant = b["memory_bound_ns"] and gap >= FINE_GAP_SHARE * b["memory_bound_ns"]
    shares = _gap_shares(lines, ctx.peak_bytes_per_s(), total_bytes)
    for r, share in zip(lines, shares):
        desc = r["desc_bytes"]
        small = desc < ctx.target.dma.min_efficient_bytes_per_partition
        below_saturation = desc < ctx.target.dma.saturating_bytes_per_partition and significant
        time_gap = gap * share
        if (small or below_saturation) and reportable(time_gap, ctx.total_ns):
            out.findings.append(_finding(ctx, r, time_gap, small))
    return out


def _gap_shares(lines: list[dict], peak_bytes_per_s: float, total_bytes: int) -> list[float]:
    """Each line's share of the kernel's efficiency gap: its transfers' time beyond their bytes at the binding
    ceiling, relative to all lines' (falls back to byte shares when transfer times are missing)."""
    excess = [max(0.0, (r["transfer_ns"] or 0) - r["bytes"] * 1e9 / peak_bytes_per_s) for r in lines] if peak_bytes_per_s else []
    if sum(excess) > 0:
        return [x / sum(excess) for x in excess]
    return [r["bytes"] / total_bytes if total_bytes else 0.0 for r in lines]


def _line(r: dict) -> dict:
    return {
        "source_line": short_location(r["src"]),
        "tensor": r["tensor"],
        "direction": "load" if r["is_load"] else "store",
        "transfers": r["transfers"],
        "bytes": int(r["bytes"]),
        "partitions": r["partitions"],
        "bytes_per_partition": r["desc_bytes"],
    }


def _finding(ctx: Context, r: dict, time_gap: float, small: bool) -> Finding:
    d = ctx.target.dma
    target = d.min_efficient_bytes_per_partition if small else d.saturating_bytes_per_partition
    direction = "load" if r["is_load"] else "store"
    where = short_location(r["src"])
    verb = "moves" if r["transfers"] == 1 else "move"
    summary = (
        f"{plural(r['transfers'], 'DMA ' + direction)} of {r['tensor'] or 'data'} at {where} {verb} "
        f"{fmt_bytes(r['desc_bytes'])} per partition (target >= {fmt_bytes(target)}); "
        f"~{fmt_ns(time_gap)} of DMA overhead. Move more free-dim elements per dma_copy "
        f"(wider or merged tiles)."
    )
    evidence = {
        **_line(r),
        "target_bytes_per_partition": target,
        "achieved_bytes_per_s": ctx.inputs["achieved_dma_bytes_per_s"],
        "peak_bytes_per_s": ctx.peak_bytes_per_s(),
        "binding_ceiling": ctx.inputs["memory_ceiling"]["binding"],
        "computed_as": (
            f"bytes per partition = median transfer bytes / median SBUF partitions = {r['median_bytes']:.0f} / "
            f"{r['partitions'] or 1:.0f}; time = the kernel's DMA busy time beyond its bytes at the "
            f"{ctx.inputs['memory_ceiling']['binding']} ceiling, shared by each line's transfer time beyond its bytes at that ceiling"
        ),
        "share_of_dma_bytes": r["bytes"] / ctx.inputs["dma_transfer_bytes"] if ctx.inputs["dma_transfer_bytes"] else None,
    }
    return Finding(NAME, severity(time_gap, ctx.total_ns), time_gap, summary, [where] if r["src"] else [], evidence)
