"""The cost model: a trace plus a hardware target in, a timeline out (never re-executes a kernel).

    from nkidev.costmodel import schedule
    timeline = schedule(run_result.trace, "trn2")
    timeline.total_ns, timeline.rows, timeline.transfers, timeline.packets

Per-instruction cycles come from the op table's documented formulas (nkidev/emulator/costs.py),
hardware numbers from nkidev/hardware/<target>.toml; scheduler.py describes the engine and DMA model.
"""

from nkidev.costmodel.scheduler import schedule
from nkidev.costmodel.timeline import Timeline

__all__ = ["Timeline", "schedule"]
