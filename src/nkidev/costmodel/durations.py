"""Per-instruction engine time: the op table's documented cycle formulas converted to ns.

`OpDef.cost(ins, target)` (nkidev/emulator/costs.py) gives engine cycles; the engine clock from the
target turns them into ns. A Tensor Engine matmul or transpose becomes two profile rows, LDWEIGHTS
(LoadStationary) and MATMUL, as neuron-explorer shows them.
"""

from __future__ import annotations

from dataclasses import dataclass

from nkidev.emulator import costs
from nkidev.emulator import ops as _ops  # noqa: F401 - fills OPS, so a trace can be scheduled on its own
from nkidev.emulator.opdef import OPS
from nkidev.emulator.trace import Instruction
from nkidev.hardware import Target

# nki.isa name -> profiler opcode where neuron-explorer's glossary names it differently ("Common instruction
# opcodes"); everything else is the upper-cased nki.isa name
OPCODE_NAMES = {
    "activation": "ACTIVATE",
    "activation_reduce": "ACTIVATE",
    "activate2": "ACTIVATE",
    "tensor_scalar": "SCALAR",
    "tensor_reduce": "REDUCE",
    "nc_transpose": "TRANSPOSE",
    "core_barrier": "BARRIER",
}
LOAD_STATIONARY, MATMUL, DMA_TRIGGER = "LDWEIGHTS", "MATMUL", "DMA_TRIGGER"  # profile row opcodes
TENSOR_MATMUL_OPS = ("nc_matmul", "nc_transpose", "nc_matmul_mx")


@dataclass(slots=True)
class EngineWork:
    """Time of one compute instruction: `busy_ns` on its engine; matmuls also `load_ns` (LDWEIGHTS)."""

    engine: str
    busy_ns: float
    load_ns: float = 0.0
    perf_mode: float = 1.0


def opcode_name(nki_name: str) -> str:
    return OPCODE_NAMES.get(nki_name, nki_name.upper())


def is_tensor_matmul(ins: Instruction) -> bool:
    return ins.engine == "tensor" and ins.opcode in TENSOR_MATMUL_OPS


def clock_ghz(engine: str, hw: Target) -> float:
    if engine == "tensor":
        return hw.tensor_engine.clock_ghz
    if engine == "sync":  # the sequencer: no documented clock, count in NeuronCore (TensorE) cycles
        return hw.tensor_engine.clock_ghz
    return hw.engine(engine).clock_ghz


def engine_work(ins: Instruction, hw: Target) -> EngineWork:
    """Engine time of a non-DMA instruction, from its op's documented cost formula."""
    clock = clock_ghz(ins.engine, hw)
    if is_tensor_matmul(ins):
        mm = costs.pe_transpose(ins, hw) if ins.opcode == "nc_transpose" else costs.matmul(ins, hw)
        return EngineWork("tensor", mm / clock, costs.load_stationary(ins, hw) / clock)
    op = OPS.get(ins.opcode)
    cycles = op.cost(ins, hw) if op is not None and op.cost is not None else costs.streaming(ins, hw)
    return EngineWork(ins.engine, float(cycles) / clock, 0.0, costs.perf_mode(ins, hw))


def dependent_latency_ns(engine: str, hw: Target) -> float:
    """Extra wait of an instruction that reads what the previous one on the same engine wrote: the
    SBUF/PSUM access overhead (hardware.md §2.2). TensorE accumulation chains pipeline in PSUM: none."""
    if engine in ("tensor", "dma"):
        return 0.0
    return hw.engines.static_overhead_cycles / clock_ghz(engine, hw)
