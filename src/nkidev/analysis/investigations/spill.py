"""Spills: intermediate data the compiler evicted from SBUF to HBM and loaded back.

Found from the spill DMA rows (VIRTUAL source or dest, spill queues) of real neuron-explorer profiles of compiled
kernels, and of nkidev's own: the cost model times the SBUF spills the emulator records (Trace.spills) as save and
reload DMAs on the spill queues (costmodel/spills.py), linked to the tile's last access before its gap. The line of a
spill is the NKI operation whose output was spilled; the tensors are the spill rows' variables (in nkidev's profiles
the spilled tile's name, in compiled ones the compiler's spill buffer).
"""

from __future__ import annotations

from nkidev.analysis.findings import Finding, fmt_bytes, fmt_ns, plural, reportable, severity, short_location
from nkidev.analysis.investigations import Context, Outcome, queries

NAME = "spill"
# What to do about a finding (`nkidev explain spill`).
ADVICE = "Reduce the live SBUF data around the spilled operation: smaller tiles, fewer buffers in flight, or consume the result sooner."
RANK = 3  # position in reports (analysis order)
ENGINE = "DMA"  # the engine whose time its findings cost (None: the bottleneck itself)
NEEDS = (("DmaPacketAggregated", ("id", "transfer_bytes", "source", "dest")), ("Flow", ("in_table", "out_table", "in_id", "out_id")))


def run(ctx: Context) -> Outcome:
    q = queries(NAME)
    totals = ctx.profile.rows(q["totals"])[0]
    lines = ctx.profile.rows(q["lines"])
    details = {
        "save_bytes": int(totals["save_bytes"]),
        "reload_bytes": int(totals["reload_bytes"]),
        "spill_queue_bytes": int(totals["spill_queue_bytes"]),
        "lines": [
            {
                "source_line": short_location(r["src"]),
                "tensors": list(r["tensors"] or []),
                "reloads": r["reloads"],
                "spill_cost_bytes": int(2 * r["reload_bytes"]),
            }
            for r in lines
        ],
    }
    out = Outcome(details=details)
    rate = ctx.dma_bytes_per_ns()
    if not rate:
        return out
    for r in lines:
        cost = 2 * r["reload_bytes"]
        time_gap = cost / rate
        if reportable(time_gap, ctx.total_ns):
            where = short_location(r["src"])
            names = ", ".join(repr(t) for t in r["tensors"] or [])
            summary = (
                f"the output of {where}{f' ({names})' if names else ''} is spilled to HBM and reloaded "
                f"{plural(r['reloads'], 'time')} "
                f"({fmt_bytes(cost)} round trip, ~{fmt_ns(time_gap)} of DMA time). Reduce live SBUF data "
                f"around it: smaller tiles, fewer buffers, or consume the result sooner."
            )
            evidence = {
                "reloads": r["reloads"],
                "reload_bytes": int(r["reload_bytes"]),
                "spill_cost_bytes": int(cost),
                "tensors": list(r["tensors"] or []),
                "computed_as": f"time = save + reload = 2 x {int(r['reload_bytes'])} B / achieved DMA rate {rate:.1f} B/ns",
            }
            out.findings.append(Finding(NAME, severity(time_gap, ctx.total_ns), time_gap, summary, [where] if r["src"] else [], evidence))
    unlinked = max(totals["save_bytes"] + totals["reload_bytes"], totals["spill_queue_bytes"])
    if not lines and reportable(unlinked / rate, ctx.total_ns):
        time_gap = unlinked / rate
        summary = (
            f"{fmt_bytes(unlinked)} of spill traffic (~{fmt_ns(time_gap)} of DMA time) with no link to a "
            f"source line in this profile. Reduce live SBUF data: smaller tiles or fewer buffers."
        )
        out.findings.append(Finding(NAME, severity(time_gap, ctx.total_ns), time_gap, summary, [], {"spill_bytes": int(unlinked)}))
    return out
