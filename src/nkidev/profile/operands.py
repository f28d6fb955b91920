"""`Instruction.operands` in the profiler's compact syntax, and its parser for MATMUL rows.

An operand is `<dtype>@<hex byte address>[<strides>][<num_elem>]`, free dims innermost first (the
reverse of `.ap()` order). A MATMUL row reads

    src=bf16@0x0[1][512] dst=fp32@0x0[1][512] 128*128 acc_flags=2 psum_zero=1

`src` is the moving tensor (the product of its num_elem is N), `dst` the PSUM tile, then `<M>*<K>`; `acc_flags=2`
resets the accumulator (first matmul of an accumulation group), `0` accumulates. Addresses are byte
offsets within a partition (on-chip) or within the tensor (HBM); strides are those of a dense layout
of the accessed view, in elements.
"""

from __future__ import annotations

import functools
import math
import re

from nkidev.emulator.trace import Access, Instruction

DTYPE_SHORT = {
    "float32": "fp32",
    "bfloat16": "bf16",
    "float16": "fp16",
    "tfloat32": "tf32",
    "float8_e4m3": "fp8e4",
    "float8_e5m2": "fp8e5",
    "float8_e4m3fn": "fp8e4fn",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
}
ACC_RESET, ACC_ACCUMULATE = 2, 0
_MATMUL = re.compile(r"src=\S*?\[[^\]]*\]\[([\d,]+)\].*?\s(\d+)\*(\d+)\s")


@functools.lru_cache(maxsize=65536)
def _operand(dtype: str, address: int, shape: tuple[int, ...], onchip: bool) -> str:
    dims = list(shape[1:]) if onchip else list(shape)
    dims = dims[::-1] or [1]
    strides = [math.prod(dims[:i]) for i in range(len(dims))]
    return f"{DTYPE_SHORT.get(dtype, dtype)}@{address:#x}[{','.join(map(str, strides))}][{','.join(map(str, dims))}]"


def operand(acc: Access) -> str:
    return _operand(acc.dtype, acc.byte_start, tuple(acc.shape), acc.buffer != "hbm")


def matmul_operands(ins: Instruction, accumulate: bool) -> str:
    a = ins.attrs
    moving = next((r for r in ins.reads if r.role == "moving"), ins.reads[-1] if ins.reads else None)
    src = operand(moving) if moving is not None else "-"
    dst = operand(ins.writes[0]) if ins.writes else "-"
    m, k = a.get("M", ins.attrs.get("F", 0)), a.get("K", ins.partitions)
    flags = ACC_ACCUMULATE if accumulate else ACC_RESET
    return f"src={src} dst={dst} {m}*{k} acc_flags={flags} psum_zero={int(not accumulate)}"


def load_stationary_operands(ins: Instruction) -> str:
    a = ins.attrs
    stationary = next((r for r in ins.reads if r.role in ("stationary", "data")), ins.reads[0] if ins.reads else None)
    src = operand(stationary) if stationary is not None else "-"
    return f"src={src} {a.get('M', a.get('F', 0))}*{a.get('K', ins.partitions)}"


def generic_operands(ins: Instruction) -> str:
    parts = [f"{r.role}={operand(r)}" for r in ins.reads]
    parts += [f"{w.role}={operand(w)}" for w in ins.writes]
    return " ".join(parts)


def parse_matmul(operands: str) -> tuple[int, int, int] | None:
    """(K, M, N) of a MATMUL row's operands, or None when the text does not follow the syntax."""
    m = _MATMUL.search(operands + " ")
    if not m:
        return None
    n = math.prod(int(x) for x in m.group(1).split(","))
    return int(m.group(3)), int(m.group(2)), n
