"""The roofline-ideal time of a task case on a target: what `percent_of_peak` divides by.

ideal = max(compute, memory), where
- compute: the task's FLOPS(*case) work at the engines' peak rates, from the hardware file. "tensor" FLOPs run
  at the Tensor Engine's peak (rows x cols MACs x 2 x clock; fp32 operands at 1/fp32_cycle_factor of it);
  "elementwise" operations (one per element per op) at the summed peak rates of the Vector, Scalar and GpSimd
  engines (their widest mode), since any of them may take any share; the two kinds overlap, so the larger binds.
- memory: MIN_BYTES(*case) (the inputs read and the outputs written once) at the fastest rate the target's
  file allows between HBM and the NeuronCore: the larger of the NeuronCore's HBM share ([hbm]
  bytes_per_s_per_nc) and its DMA engines' practical rate, so no kernel the cost model predicts can beat it.
Both are lower bounds, so the predicted time of a correct kernel is never below the ideal: % of peak <= 100.
"""

from __future__ import annotations

import numpy as np

from nkidev.hardware import Target

FP32_ITEMSIZE = 4


def tensor_flops_per_s(target: Target, fp32: bool) -> float:
    te = target.tensor_engine
    return te.peak_flops / (te.fp32_cycle_factor if fp32 else 1.0)


def elementwise_ops_per_s(target: Target) -> float:
    engines = (target.vector_engine, target.scalar_engine, target.gpsimd_engine)
    return sum(max(e.elems_per_cycle_16bit, e.elems_per_cycle_other) * e.clock_ghz * 1e9 for e in engines)


def memory_bytes_per_s(target: Target) -> float:
    dma = target.dma
    dma_rate = dma.engines * dma.bytes_per_ns_per_engine * 1e9
    return max(target.hbm.bytes_per_s_per_nc, dma_rate)


def _fp32_operands(case: list) -> bool:
    """Matmul operands of fp32 (the widest float input is 4 bytes) run the Tensor Engine at its fp32 rate."""
    floats = [x.dtype.itemsize for x in case if isinstance(x, np.ndarray) and x.dtype.kind == "f"]
    return bool(floats) and max(floats) >= FP32_ITEMSIZE


def ideal_ns(work: dict | float, min_bytes: float, target: Target, case: list) -> dict:
    """{"ideal_ns", "compute_ns", "memory_ns", "bound"} for one case (its inputs, `Case.values()`): FLOPS(*case)
    `work` (a dict of "tensor" / "elementwise" counts, or a number of Tensor Engine FLOPs) and MIN_BYTES(*case)
    `min_bytes` (both called like the kernel, keyword inputs included)."""
    work = {"tensor": work} if isinstance(work, int | float) else dict(work)
    unknown = set(work) - {"tensor", "elementwise"}
    if unknown:
        raise ValueError(f"FLOPS keys {sorted(unknown)}: use 'tensor' and 'elementwise'")
    tensor_ns = work.get("tensor", 0) / tensor_flops_per_s(target, _fp32_operands(case)) * 1e9
    elementwise_ns = work.get("elementwise", 0) / elementwise_ops_per_s(target) * 1e9
    compute = max(tensor_ns, elementwise_ns)
    memory = float(min_bytes) / memory_bytes_per_s(target) * 1e9
    bound = "memory" if memory >= compute else ("tensor" if tensor_ns >= elementwise_ns else "elementwise")
    return {"ideal_ns": max(compute, memory), "compute_ns": compute, "memory_ns": memory, "bound": bound}
