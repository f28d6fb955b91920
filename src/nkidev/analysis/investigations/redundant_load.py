"""Redundant loads: input tensors read from HBM more than once.

Detect: per input tensor, repeat = bytes its loads read from HBM / its size (a tensor loaded 8 times has
repeat 8). The bytes are the HBM side of each transfer (a cast on the DMA writes more than it reads), and a
transfer counts each byte of the tensor once (a stride-0 broadcast to 128 partitions is one load, not 128;
redundant_load.sql). Localize: the dma_copy lines that load each tensor (Instruction -> Flow ->
DmaPacketAggregated with source [[INPUT]]), [sources: agentic-investigations].
"""

from __future__ import annotations

from nkidev.analysis.findings import Finding, fmt_bytes, fmt_ns, reportable, severity, short_location
from nkidev.analysis.investigations import Context, Outcome, queries

NAME = "redundant_load"
# What to do about a finding (`nkidev explain redundant_load`).
ADVICE = (
    "Load the tensor once and keep it resident in SBUF: hoist the load out of the loop, or reorder/block "
    "the loops so each tile is reused by every iteration that needs it."
)
RANK = 2  # position in reports (analysis order)
ENGINE = "DMA"  # the engine whose time its findings cost (None: the bottleneck itself)
NEEDS = (
    ("Instruction", ("id", "hbm_read_bytes")),
    ("DmaPacketAggregated", ("id", "transfer_bytes", "source", "variable")),  # read_bytes is used when present
    ("Flow", ("in_table", "out_table", "in_id", "out_id")),
    ("TensorInfo", ("type", "size", "variable_name")),
)

REPEAT_FLAG = 1.5  # loaded at least 1.5x its size


def run(ctx: Context) -> Outcome:
    q = queries(NAME)
    tensors = ctx.profile.rows(q["tensors"])
    lines = ctx.profile.rows(q["lines"])
    reload_excess = sum(avoidable_bytes(r) for r in tensors)
    details = {
        "excess_ratio": ctx.inputs["excess_ratio"],
        "necessary_bytes": ctx.inputs["necessary_bytes"],
        "dma_transfer_bytes": ctx.inputs["dma_transfer_bytes"],
        "reload_excess_bytes": int(reload_excess),
        "tensors": [_tensor(r) for r in tensors],
        "lines": [
            {"tensor": r["tensor"], "source_line": short_location(r["src"]), "transfers": r["transfers"], "bytes": int(r["bytes"])}
            for r in lines
        ],
    }
    out = Outcome(details=details)
    rate = ctx.dma_bytes_per_ns()
    for r in tensors:
        if r["repeat"] < REPEAT_FLAG or not rate:
            continue
        excess = avoidable_bytes(r)
        time_gap = excess / rate
        if reportable(time_gap, ctx.total_ns):
            mine = [x for x in lines if x["tensor"] == r["tensor"]]
            out.findings.append(_finding(ctx, r, mine, excess, time_gap))
    return out


def avoidable_bytes(r: dict) -> float:
    """HBM bytes the reloads cost: all but one load's share of what the tensor's loads read. A tensor loaded
    `repeat` times that read `hbm_read` bytes could have read hbm_read / repeat (a broadcast reloaded in a loop
    costs its full 128-partition traffic each time, a one-time broadcast costs nothing)."""
    if r["repeat"] <= 1.0 or not r["bytes"]:
        return 0.0
    raw = r["raw_bytes"] or r["bytes"]
    return raw - raw / r["repeat"]


def _tensor(r: dict) -> dict:
    return {
        "tensor": r["tensor"],
        "size_bytes": int(r["size"]),
        "loaded_bytes": int(r["bytes"]),
        "loaded_bytes_source": r["bytes_source"],
        "hbm_read_bytes": int(r["raw_bytes"]),
        "transfers": r["transfers"],
        "repeat": r["repeat"],
    }


def _finding(ctx: Context, r: dict, lines: list[dict], excess: float, time_gap: float) -> Finding:
    where = [short_location(x["src"]) for x in lines if x["src"]]
    at = f" at {', '.join(where)}" if where else ""
    summary = (
        f"input {r['tensor']} ({fmt_bytes(r['size'])}) is loaded {r['repeat']:.1f}x: "
        f"{fmt_bytes(r['bytes'])} over {r['transfers']} DMAs{at}; the {fmt_bytes(excess)} of reloads cost "
        f"~{fmt_ns(time_gap)} of DMA time. Keep it resident in SBUF and reuse it across loop iterations "
        f"(hoist the load out of the loop, or block the loops so each tile is loaded once)."
    )
    rate = ctx.dma_bytes_per_ns() or 0.0
    evidence = {
        **_tensor(r),
        "computed_as": (
            f"repeat = bytes loaded / size = {int(r['bytes'])} / {int(r['size'])} = {r['repeat']:.2f} "
            f"(from {r['bytes_source']}: each transfer's HBM reads, each byte of {r['tensor']} at most once per "
            f"transfer, so broadcasts and casts on the DMA are not reloads); avoidable bytes = HBM bytes read x "
            f"(1 - 1/repeat) = {int(r['raw_bytes'])} x (1 - 1/{r['repeat']:.2f}) = {int(excess)}; "
            f"time = {int(excess)} B / achieved DMA rate {rate:.1f} B/ns"
        ),
        "excess_bytes": int(excess),
        "excess_ratio": ctx.inputs["excess_ratio"],
        "time_gap_at_peak_ns": excess * 1e9 / ctx.peak_bytes_per_s() if ctx.peak_bytes_per_s() else None,
        "lines": [{"source_line": short_location(x["src"]), "transfers": x["transfers"], "bytes": int(x["bytes"])} for x in lines],
    }
    return Finding(NAME, severity(time_gap, ctx.total_ns), time_gap, summary, where, evidence)
