"""Hand-built traces for the scheduler tests: exact inputs, so expected timelines can be computed by hand."""

from __future__ import annotations

import dataclasses
import math

from nkidev.costmodel.throttle import TensorThrottle, refill_ns, throttled
from nkidev.emulator.trace import Access, Instruction, TensorRecord, Trace
from nkidev.hardware import get_target

ITEM = {"bfloat16": 2, "float32": 4, "float16": 2, "float8_e4m3": 1}


class TraceBuilder:
    def __init__(self, target: str = "trn1", programs: int = 1):
        self.trace = Trace(kernel="synthetic", target=target, programs=programs)
        self._next_tensor = 1

    def tensor(self, name: str, buffer: str, shape: tuple[int, ...], dtype: str = "bfloat16", kind: str = "internal") -> int:
        tid = self._next_tensor
        self._next_tensor += 1
        nbytes = math.prod(shape) * ITEM[dtype]
        self.trace.tensors[tid] = TensorRecord(tid, name, buffer, shape, dtype, nbytes, kind, "k.py:1")
        return tid

    def access(self, tid: int, role: str, rows: tuple[int, int] | None = None, cols: tuple[int, int] | None = None) -> Access:
        """rows: partitions (on-chip) or tensor rows (HBM); cols: elements of the free (last) dim."""
        rec = self.trace.tensors[tid]
        item = ITEM[rec.dtype]
        r0, r1 = rows or (0, rec.shape[0])
        c0, c1 = cols or (0, math.prod(rec.shape[1:]))
        width = math.prod(rec.shape[1:])
        shape = (r1 - r0, c1 - c0)
        nbytes = shape[0] * shape[1] * item
        run = (c1 - c0) * item
        if rec.buffer == "hbm":
            lo, hi = (r0 * width + c0) * item, ((r1 - 1) * width + c1) * item
            if c1 - c0 == width:
                run = nbytes
            return Access(tid, "hbm", role, shape, rec.dtype, nbytes, 0, r1 - r0, lo, hi, run)
        return Access(tid, rec.buffer, role, shape, rec.dtype, nbytes, r0, r1 - r0, c0 * item, c1 * item, run)

    def add(self, opcode: str, engine: str, reads: list[Access], writes: list[Access], program: int = 0, **attrs) -> int:
        main = writes[0] if writes else reads[0]
        free = max(math.prod(a.shape[1:]) for a in reads + writes)
        if main.buffer == "hbm":
            free = main.nbytes // main.partitions
        flops = 2 * attrs["K"] * attrs["M"] * attrs["N"] if opcode == "nc_matmul" else main.partitions * free
        pos = len(self.trace.instructions)
        self.trace.instructions.append(
            Instruction(pos, opcode, engine, f"/k.py:{10 + pos}", reads, writes, main.partitions, free, flops, program, attrs)
        )
        return pos

    def matmul(self, dst: Access, stationary: Access, moving: Access, dtype: str = "bfloat16", accumulate=None, program: int = 0) -> int:
        k, m, n = stationary.partitions, stationary.shape[1], moving.shape[1]
        stationary.role, moving.role, dst.role = "stationary", "moving", "dst"
        return self.add(
            "nc_matmul",
            "tensor",
            [stationary, moving],
            [dst],
            program,
            K=k,
            M=m,
            N=n,
            dtype=dtype,
            moving_dtype=dtype,
            dst_dtype="float32",
            fp32=dtype == "float32",
            onezero=False,
            is_transpose=False,
            perf_mode="none",
            accumulate=accumulate,
        )

    def dma(self, dst: Access, src: Access, program: int = 0, **attrs) -> int:
        src.role, dst.role = "src", "dst"
        attrs.setdefault("dge_mode", "unknown")
        return self.add("dma_copy", "dma", [src], [dst], program, src_dtype=src.dtype, dst_dtype=dst.dtype, **attrs)


def target(name: str = "trn1", **dma) -> object:
    """A target with some DMA numbers replaced (round numbers make hand computation easy)."""
    hw = get_target(name)
    return dataclasses.replace(hw, dma=dataclasses.replace(hw.dma, **dma)) if dma else hw


def matmul_extra_ns(idle_gap_ns: float, work_ns: float, hw) -> float:
    """Extra time (refill + dI/dt throttle) of one MATMUL of `work_ns` at full rate that starts `idle_gap_ns` after
    a long full-rate burst (math.inf: the engine's first MATMUL), from the scheduler's burst state."""
    if not throttled(hw):
        return refill_ns(hw)
    th = TensorThrottle(hw)
    if idle_gap_ns == math.inf:
        return round(th.matmul(0.0, -math.inf, work_ns) - work_ns, 9)
    end = th.matmul(0.0, -math.inf, 1000.0)
    while end < 4 * hw.tensor_engine.throttle_window_ns:  # back to back until the ramp is over and the window is full
        end = th.matmul(end, end, 1000.0)
    start = end + idle_gap_ns
    return round(th.matmul(start, end, work_ns) - (start + work_ns), 9)  # to the ps: the times are absolute
