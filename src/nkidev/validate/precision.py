"""Precision downgrade, read from the trace: math or storage in a float dtype coarser than the task's.

Every engine computes in fp32, so precision is lost where a value is *rounded*: a compute instruction
writing a narrower float dtype, a copy that narrows (fp32 -> bf16 DMA or tensor_copy), or a matmul whose
operands are narrower. Copies that keep the dtype and constants (memset, iota, rng) round nothing.
The task's precision is TOLERANCE["precision"] if given, else the expected output dtype.
"""

from __future__ import annotations

from dataclasses import dataclass

from nkidev.emulator.ops import OPS
from nkidev.emulator.trace import Instruction, Trace
from nkidev.validate.tolerance import is_float, mantissa_bits

PACKED_MANTISSA = {"float8_e5m2_x4": 2, "float8_e4m3fn_x4": 3, "float4_e2m1fn_x4": 1}


@dataclass(frozen=True)
class Downgrade:
    opcode: str
    location: str | None
    dtype: str
    what: str  # "multiplies" | "rounds results to" | "narrows data to"
    count: int  # instructions that round below the task's precision


def _bits(dtype: str) -> int | None:
    if dtype in PACKED_MANTISSA:
        return PACKED_MANTISSA[dtype]
    return mantissa_bits(dtype) if is_float(dtype) else None


def _coarse(dtype: str, need: int) -> bool:
    bits = _bits(dtype)
    return bits is not None and bits < need


def _offence(ins: Instruction, need: int) -> tuple[str, str] | None:
    """(what, dtype) when this instruction rounds below `need` mantissa bits."""
    kind = OPS[ins.opcode].kind  # what the op does to values (opdef.KINDS)
    if kind in ("constant", "sync"):
        return None
    if kind == "matmul" and not ins.attrs.get("is_transpose"):
        for key in ("dtype", "moving_dtype"):
            d = ins.attrs.get(key)
            if d and _coarse(d, need):
                return "multiplies", d
    move = kind == "move" or bool(ins.attrs.get("is_transpose"))
    widest_read = max((_bits(r.dtype) or 0 for r in ins.reads), default=0)
    for w in ins.writes:
        if not _coarse(w.dtype, need):
            continue
        if not move:
            return "rounds results to", w.dtype
        if widest_read > (_bits(w.dtype) or 0):
            return "narrows data to", w.dtype
    return None


def find(trace: Trace | None, precision: str | None) -> Downgrade | None:
    if trace is None or precision is None or _bits(precision) is None:
        return None
    need = _bits(precision)
    first, count = None, 0
    for ins in trace.instructions:
        hit = _offence(ins, need)
        if hit is not None:
            count += 1
            if first is None:
                first = (ins, hit)
    if first is None:
        return None
    ins, (what, dtype) = first
    return Downgrade(ins.opcode, ins.location, dtype, what, count)
