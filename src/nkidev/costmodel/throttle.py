"""The Tensor Engine's dI/dt throttle as burst state: how much longer each MATMUL takes under the utilization limit.

What the documents say ([sources: explorer-summary "Understanding throttling"] and the Neuron Explorer glossary
"dI/dt (delta current) throttling", Trn2 and Trn3): after work begins the engine starts at roughly
`throttle_start_utilization` (50%) of its peak utilization and ramps to full over `throttle_ramp_ns` (~3 us); if its
utilization drops below 50% over any `throttle_window_ns` (~3 us) window, for example in an idle gap, the limit
re-engages and the next burst again starts at ~50%; so a bursty engine that keeps leaving the Tensor Engine below
50% stays throttled.

How that becomes a model (the readings are estimates; the documents give no formula):
- Utilization over a window is the full-rate work done in it (each MATMUL's documented engine time) over the window:
  a throttled engine busy all the time at a 50% limit is at 50%, not below.
- The limit is checked when a MATMUL starts after an idle gap (a back-to-back MATMUL cannot have lowered it):
  at or below `throttle_start_utilization` over the window ending there, the limit re-engages at that start. So an
  engine starved by DMA whose gaps are each short is throttled as long as it stays at most half busy.
- The limit ramps linearly in time from the re-engagement, and a MATMUL's work runs at the limit of the moment
  (`ramped_ns`); work of a busy run = its length minus the time the throttle and the pipeline refill added.
- Every MATMUL after a gap first pays the PE pipeline refill, `mm_init_latency_cycles` ([sources: arch-v2 "Cost
  Model"] MM_INIT_LATENCY), as before; a re-engaged limit starts ramping when its work begins, after the refill.

Each re-engagement is recorded (`engaged`: when the limit starts over); the intervals of the profile's Throttle table,
and the MATMUL that re-engaged each, are made from these after the schedule (`throttled_intervals`), so the event
loop pays one append per re-engagement and nothing per MATMUL.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from nkidev.costmodel.timeline import Throttled
from nkidev.hardware import Target


def throttled(hw: Target) -> bool:
    """Whether the target's Tensor Engine has a dI/dt limit (a start utilization below 1)."""
    return hw.tensor_engine.throttle_start_utilization < 1.0


def refill_ns(hw: Target) -> float:
    """The PE pipeline refill of a MATMUL after an idle gap (or the first)."""
    te = hw.tensor_engine
    return te.mm_init_latency_cycles / te.clock_ghz


def ramped_ns(work_ns: float, rate: float, slope: float) -> float:
    """Time to do `work_ns` of full-rate work starting at `rate` (< 1) of full rate and rising by `slope` per ns up to
    1: solve rate*t + slope*t^2/2 = work while the ramp lasts, full rate after it."""
    if slope <= 0.0:
        return work_ns / rate
    to_full = (1.0 - rate) / slope
    ramp_work = to_full * (1.0 + rate) / 2.0  # work done by the time the limit reaches full rate
    if work_ns >= ramp_work:
        return to_full + (work_ns - ramp_work)
    return (-rate + math.sqrt(rate * rate + 2.0 * slope * work_ns)) / slope


class TensorThrottle:
    """The dI/dt state of one Tensor Engine (one NeuronCore's tensor stream).

    The scheduler asks `matmul(start, prev_end, work)` for the end of every MATMUL except those it can tell run at
    full rate: back to back (`start <= prev_end`) once the limit has ramped to full (`start >= full_at`)."""

    __slots__ = (
        "start_util", "window", "slope", "ramp", "refill", "runs", "runs_work", "run_start", "run_extra", "full_at", "engaged",
    )  # fmt: skip

    def __init__(self, hw: Target):
        te = hw.tensor_engine
        self.start_util = te.throttle_start_utilization
        self.window = te.throttle_window_ns
        self.ramp = te.throttle_ramp_ns
        self.slope = (1.0 - self.start_util) / self.ramp if self.ramp > 0.0 else 0.0
        self.refill = refill_ns(hw)
        self.runs: deque[tuple[float, float, float]] = deque()  # finished busy runs in the window: (start, end, work)
        self.runs_work = 0.0
        self.run_start = -math.inf  # the current busy run (none yet: the first MATMUL starts one)
        self.run_extra = 0.0  # time the throttle and refills added to the current run (not work)
        self.full_at = math.inf  # the limit is at full rate from this time on (until it re-engages)
        self.engaged: list[float] = []  # when the limit started over at start_util (the re-engaging MATMUL's work began)

    def utilization(self, at: float) -> float:
        """Full-rate work in the window ending at `at` (a MATMUL start after a gap) over the window."""
        lo = at - self.window
        runs = self.runs
        while runs and runs[0][1] <= lo:
            self.runs_work -= runs.popleft()[2]
        work = self.runs_work
        if runs and runs[0][0] < lo:  # the oldest run straddles the window's start: its share inside
            s, e, w = runs[0]
            work -= w * (lo - s) / (e - s)
        return work / self.window if self.window > 0.0 else 1.0

    def matmul(self, start: float, prev_end: float, work: float) -> float:
        """End of a MATMUL of `work` ns at full rate that starts at `start`; the previous MATMUL ended at `prev_end`
        (-inf for the first)."""
        begin = start  # when its work begins: after the pipeline refill if it follows a gap
        if start > prev_end:  # after an idle gap: close the busy run, check the limit, refill the pipeline
            if prev_end > self.run_start:
                run_work = prev_end - self.run_start - self.run_extra
                self.runs.append((self.run_start, prev_end, run_work))
                self.runs_work += run_work
            self.run_start, self.run_extra = start, 0.0
            begin = start + self.refill
            if self.utilization(start) <= self.start_util:
                self.full_at = begin + self.ramp  # re-engaged: the limit starts over from start_util as work begins
                self.engaged.append(begin)
        end = begin + work
        if begin < self.full_at:
            end = begin + ramped_ns(work, 1.0 - self.slope * (self.full_at - begin), self.slope)
        self.run_extra += end - start - work
        return end


def throttled_intervals(
    throttles: list[TensorThrottle | None] | None, cores: list[int], matmuls: list[tuple[np.ndarray, np.ndarray] | None], hw: Target
) -> Throttled:
    """The intervals each Tensor Engine's limit was below full rate, from the burst states of a finished schedule
    (`throttles[q]` of stream q, whose NeuronCore is `cores[q]` and whose MATMULs are `matmuls[q]`: trace positions
    and start times; None: not a tensor stream, or no throttle): each starts at a re-engagement and ends when the
    ramp reaches full rate or the limit re-engages again. The MATMUL that re-engaged it is the stream's last to
    start by then (its work begins after its refill; the next one starts after it ends)."""
    core, start, end, trigger = [], [], [], []
    for q, th in enumerate(throttles or ()):
        if th is None or not th.engaged:
            continue
        begins = np.array(th.engaged, dtype=np.float64)
        ends = begins + th.ramp
        ends[:-1] = np.minimum(ends[:-1], begins[1:])  # cut short where the limit starts over
        positions, starts = matmuls[q]
        order = np.argsort(starts, kind="stable")
        core.append(np.full(len(begins), cores[q], dtype=np.int64))
        start.append(begins)
        end.append(ends)
        trigger.append(positions[order][np.searchsorted(starts[order], begins, side="right") - 1])
    te = hw.tensor_engine
    joined = [np.concatenate(c) if c else np.zeros(0, t) for c, t in ((core, np.int64), (start, float), (end, float), (trigger, np.int64))]
    order = np.lexsort((joined[1], joined[0]))  # by core, then time
    return Throttled(*(c[order] for c in joined), start_rate=te.throttle_start_utilization, ramp_ns=te.throttle_ramp_ns)
