"""Documented per-instruction cost formulas (reference/hardware.md §2.2), in engine cycles.

`N` is elements per partition of the largest operand, `MIN_II` the minimum initiation interval.
Each op declaration in `isa.py` names one of these; the cost model converts cycles to ns with the
engine's clock. Throughput above one element per lane per cycle (NC-v3/v4 performance modes) comes
from the target's `elems_per_cycle_*` numbers.
"""

from __future__ import annotations

from nkidev.hardware import Target

SIXTEEN_BIT = {"bfloat16", "float16"}
EIGHT_BIT = {"float8_e4m3", "float8_e5m2", "float8_e4m3fn"}


PERF_MODE_OPS = {"tensor_copy", "tensor_scalar"}  # hardware.md §2.1: the ops the 4x/2x modes name


def perf_mode(ins, hw: Target) -> float:
    """Elements per lane per cycle (1, 2 or 4) from the documented performance modes.

    tensor_copy / tensor_scalar with every operand 16/8-bit: the full narrow rate (4x Vector on NC-v3/v4,
    2x Scalar on NC-v4) when all in SBUF and contiguous, else the 'other' rate (2x Vector on NC-v3/v4);
    tensor_tensor on Vector with all-narrow SBUF inputs: the 'other' rate. Everything else, and NC-v2: 1.
    """
    if ins.engine not in ("vector", "scalar", "gpsimd"):
        return 1.0
    eng = hw.engine(ins.engine)
    ops = ins.reads + ins.writes
    narrow = bool(ops) and all(a.dtype in SIXTEEN_BIT | EIGHT_BIT for a in ops)
    if not narrow:
        return 1.0
    sbuf = all(a.buffer == "sbuf" for a in ops)
    if ins.opcode in PERF_MODE_OPS:
        full = sbuf and all(_contiguous(a) for a in ops)
        per_cycle = eng.elems_per_cycle_16bit if full else eng.elems_per_cycle_other
    elif ins.opcode == "tensor_tensor" and sbuf:
        per_cycle = eng.elems_per_cycle_other
    else:
        return 1.0
    return max(1.0, per_cycle / eng.lanes)


def _contiguous(a) -> bool:
    per_partition = a.nbytes // max(1, a.partitions)
    return a.contiguous_bytes >= per_partition


def streaming(ins, hw: Target, passes: float = 1.0) -> float:
    """max(MIN_II, passes*N) at the engine's lane rate: tensor_scalar, activation, tensor_copy, ..."""
    return max(hw.engines.min_ii_cycles, passes * ins.free_elems / perf_mode(ins, hw))


def tensor_tensor(ins, hw: Target) -> float:
    """max(MIN_II, N) with one PSUM input or all-bf16 add/mul/sub in SBUF, else max(MIN_II, 2N)."""
    psum_in = any(a.buffer == "psum" for a in ins.reads)
    fast = psum_in or (
        ins.attrs.get("op") in ("add", "multiply", "subtract") and all(a.dtype == "bfloat16" and a.buffer == "sbuf" for a in ins.reads)
    )
    return streaming(ins, hw, 1.0 if fast else 2.0)


def tensor_reduce(ins, hw: Target) -> float:
    """N/2 for bf16 add/max, else N."""
    fast = ins.attrs.get("op") in ("add", "maximum") and all(a.dtype == "bfloat16" for a in ins.reads + ins.writes)
    n = max((a.nbytes // max(1, a.partitions) // _itemsize(a.dtype)) for a in ins.reads) if ins.reads else 0
    return max(hw.engines.min_ii_cycles, n / (2.0 if fast else 1.0))


def plus_min_ii(ins, hw: Target) -> float:
    """max(MIN_II, N) + MIN_II: activation_reduce, tensor_scalar_reduce (extra accumulator read)."""
    return streaming(ins, hw) + hw.engines.min_ii_cycles


def activation(ins, hw: Target) -> float:
    """max(MIN_II, N); reading reduce_res adds a ~64-cycle ActReadAccumulator."""
    extra = hw.engines.min_ii_cycles if ins.attrs.get("reads_accumulator") else 0
    return streaming(ins, hw) + extra


def memset(ins, hw: Target) -> float:
    """max(MIN_II, N/2) for zero into bf16/fp16, else max(MIN_II, N)."""
    fast = ins.attrs.get("value") == 0 and all(a.dtype in SIXTEEN_BIT for a in ins.writes)
    return streaming(ins, hw, 0.5 if fast else 1.0)


def reciprocal(ins, hw: Target) -> float:
    """VectorE max(MIN_II, 8N)."""
    return max(hw.engines.min_ii_cycles, 8.0 * ins.free_elems)


def scan(ins, hw: Target) -> float:
    """max(MIN_II, 2N): tensor_tensor_scan."""
    return max(hw.engines.min_ii_cycles, 2.0 * ins.free_elems)


def scalar_tensor_tensor(ins, hw: Target) -> float:
    """N for bf16 subtract-then-multiply with even N, else 2N."""
    fast = (
        ins.attrs.get("op0") == "subtract"
        and ins.attrs.get("op1") == "multiply"
        and ins.free_elems % 2 == 0
        and all(a.dtype == "bfloat16" for a in ins.reads)
    )
    return max(hw.engines.min_ii_cycles, (1.0 if fast else 2.0) * ins.free_elems)


def copy_predicated(ins, hw: Target) -> float:
    """max(MIN_II, N) when src/predicate split SBUF/PSUM, else max(MIN_II, 2N)."""
    split = len({a.buffer for a in ins.reads}) > 1
    return max(hw.engines.min_ii_cycles, (1.0 if split else 2.0) * ins.free_elems)


def bn_aggr(ins, hw: Target) -> float:
    """max(MIN_II, 13*(N/3))."""
    return max(hw.engines.min_ii_cycles, 13.0 * ins.free_elems / 3.0)


def linear(ins, hw: Target) -> float:
    """N cycles (max8, nc_find_index8)."""
    return float(ins.free_elems)


def gpsimd(ins, hw: Target) -> float:
    """GPSIMD_START + N (iota, affine_select)."""
    return hw.gpsimd_engine.start_cycles + ins.free_elems


def gpsimd_streaming(ins, hw: Target) -> float:
    """GPSIMD_START + max(MIN_II, N) for other GpSimd work."""
    return hw.gpsimd_engine.start_cycles + streaming(ins, hw)


def matmul(ins, hw: Target) -> float:
    """max(min(64, N_stationary), N_moving) TensorE cycles; x4 for fp32 inputs; x0.5 for fp8 double-row."""
    a = ins.attrs
    cycles = max(min(64, a.get("M", 128)), a.get("N", 0))
    if a.get("fp32") and not a.get("onezero"):
        cycles *= hw.tensor_engine.fp32_cycle_factor
    if a.get("perf_mode") == "double_row":
        cycles *= hw.tensor_engine.fp8_cycle_factor
    return float(cycles)


def load_stationary(ins, hw: Target) -> float:
    """LoadStationary (LDWEIGHTS): up to 4x faster than a MultiplyMoving of equal free size, ~M/4 cycles.

    M is the stationary free size (nc_matmul attrs M; nc_transpose loads its data, F columns). Runs in the
    background of the previous MATMUL; the scheduler models that overlap.
    """
    a = ins.attrs
    cycles = a.get("M", a.get("F", hw.tensor_engine.stationary_fmax)) * hw.tensor_engine.load_stationary_factor
    if a.get("fp32"):
        cycles *= hw.tensor_engine.fp32_cycle_factor
    return float(cycles)


def pe_transpose(ins, hw: Target) -> float:
    """TensorE transpose: max(P, min(64, F)); on VectorE (32x32 blocks) max(MIN_II, N)."""
    if ins.engine == "vector":
        return streaming(ins, hw)
    return float(max(ins.partitions, min(64, ins.attrs.get("F", ins.free_elems))))


def _itemsize(dtype: str) -> int:
    from nkidev.emulator.dtypes import DTYPES

    return DTYPES[dtype].itemsize if dtype in DTYPES else 4
