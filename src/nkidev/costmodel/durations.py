"""Per-instruction engine time: the op table's cost expressions converted to ns.

`OPS[opcode].cycles(ins, target)` gives engine cycles; the engine clock from the target turns them into
ns. Every Tensor Engine instruction (matmul, transpose) becomes two profile rows, LDWEIGHTS (LoadStationary,
`OpDef.load_cost`) and MATMUL, as neuron-explorer shows them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from nkidev.emulator.ops import OPS
from nkidev.emulator.trace import Instruction
from nkidev.hardware import Target

LOAD_STATIONARY, MATMUL, DMA_TRIGGER = "LDWEIGHTS", "MATMUL", "DMA_TRIGGER"  # profile row opcodes


@dataclass(slots=True)
class EngineWork:
    """Time of one compute instruction: `busy_ns` on its engine; matmuls also `load_ns` (LDWEIGHTS)."""

    engine: str
    busy_ns: float
    load_ns: float = 0.0
    perf_mode: float = 1.0


def opcode_name(nki_name: str) -> str:
    """The profile opcode of an instruction's engine row (neuron-explorer's name, from the op table)."""
    return OPS[nki_name].opcode


def is_tensor_matmul(ins: Instruction) -> bool:
    """Every Tensor Engine instruction loads a stationary operand, then streams the moving one."""
    return ins.engine == "tensor"


def clock_ghz(engine: str, hw: Target) -> float:
    if engine == "tensor":
        return hw.tensor_engine.clock_ghz
    if engine == "sync":  # the sequencer: no documented clock, count in NeuronCore (TensorE) cycles
        return hw.tensor_engine.clock_ghz
    return hw.engine(engine).clock_ghz


def engine_work(ins: Instruction, hw: Target) -> EngineWork:
    """Engine time of a non-DMA instruction, from its op's cost expression."""
    op = OPS[ins.opcode]
    clock = clock_ghz(ins.engine, hw)
    busy = float(op.cycles(ins, hw)) / clock
    if is_tensor_matmul(ins):
        return EngineWork("tensor", busy, op.load_cycles(ins, hw) / clock)
    return EngineWork(ins.engine, busy, 0.0, op.perf_rate(ins, hw))


def dependent_latency_ns(engine: str, hw: Target) -> float:
    """Extra wait of an instruction that reads what the previous one on the same engine wrote: the
    SBUF/PSUM access overhead ([sources: arch-v2 "Tensor access overhead"]). TensorE accumulation chains pipeline in PSUM: none."""
    if engine in ("tensor", "dma"):
        return 0.0
    return hw.engines.static_overhead_cycles / clock_ghz(engine, hw)


def tensor_refill_ns(idle_gap_ns: float, busy_ns: float, hw: Target) -> float:
    """Extra time of a MATMUL of `busy_ns` (at full rate) that starts after the Tensor Engine sat idle for
    `idle_gap_ns` (math.inf for its first): the PE pipeline refill after any gap ([sources: arch-v2 "Cost
    Model"] MM_INIT_LATENCY) plus the dI/dt throttle of [sources: explorer-summary "Understanding throttling"]:
    an idle gap that leaves the engine below `throttle_start_utilization` over a `throttle_window_ns` window
    re-engages the limit, so the burst restarts at that share of full rate and ramps (linearly) to full over
    `throttle_ramp_ns`. Only this MATMUL's slowdown is charged: the scheduler keeps no burst state, so the
    later MATMULs of a ramp run at full rate (an underestimate for bursts of many short MATMULs), and a
    starved engine whose gaps are each shorter than the window's idle share is not throttled here."""
    if idle_gap_ns <= 0.0:
        return 0.0  # back to back: the pipeline stays full and the limit keeps ramping
    te = hw.tensor_engine
    refill = te.mm_init_latency_cycles / te.clock_ghz
    start = te.throttle_start_utilization
    if start >= 1.0 or idle_gap_ns < te.throttle_window_ns * (1.0 - start):
        return refill
    return refill + _ramp_delay_ns(busy_ns, start, te.throttle_ramp_ns)


def _ramp_delay_ns(work_ns: float, start: float, ramp_ns: float) -> float:
    """How much longer `work_ns` of full-rate work takes when the rate starts at `start` and rises linearly
    to 1 over `ramp_ns`: solve start*t + (1 - start)*t^2 / (2*ramp) = work for t, minus work."""
    ramp_work = ramp_ns * (1.0 + start) / 2.0  # work done by the end of the ramp
    if work_ns >= ramp_work or ramp_ns <= 0.0:
        return ramp_ns - ramp_work if ramp_ns > 0.0 else work_ns * (1.0 / start - 1.0)
    a = (1.0 - start) / (2.0 * ramp_ns)
    t = (-start + math.sqrt(start * start + 4.0 * a * work_ns)) / (2.0 * a)
    return t - work_ns
