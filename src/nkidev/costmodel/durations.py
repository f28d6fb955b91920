"""Per-instruction engine time: the op table's cost expressions converted to ns.

`OPS[opcode].cycles(ins, target)` gives engine cycles; the engine clock from the target turns them into
ns. Every Tensor Engine instruction (matmul, transpose) becomes two profile rows, LDWEIGHTS (LoadStationary,
`OpDef.load_cost`) and MATMUL, as neuron-explorer shows them.
"""

from __future__ import annotations

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
