"""Hardware rules as data (the NKI ISA docs' constraints): each `Rule` names the error it raises, says in its
`doc` what it requires, and checks one call. `OPERAND_RULES` apply to every tile operand of every instruction;
the constructors below build the per-op rules that op declarations list. Dispatch and the docs both read
these objects, so what is checked and what is documented are the same thing.

A check returns None when the rule holds, else a message or (message, fix). Per-op checks are called as
`check(args, ctx, engine)` once the engine is chosen; operand checks as `check(tile, name, op, ctx, engine)`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from nkidev.emulator.alu import ACTIVATIONS, ALU, REDUCIBLE, op_name
from nkidev.emulator.tensor import NkiTensor, free_size, partition_start, partitions

COMPUTE_ENGINES = ("vector", "scalar", "gpsimd")


@dataclass(frozen=True)
class Rule:
    """A hardware rule: `check` returns None when satisfied, else a message (or (message, fix))."""

    error: str  # the error name raised on violation
    doc: str  # what the rule requires, for the docs
    check: Callable


# ---------------------------------------------------------------- rules for every tile operand


def _is_tile(t, name, op, ctx, engine):
    if not isinstance(t, NkiTensor):
        return f"{name} is a {type(t).__name__}, not a tile", "pass an SBUF/PSUM tensor allocated with nl.ndarray"


def _on_chip(t, name, op, ctx, engine):
    if t.storage.kind == "hbm":
        return f"{name} {t.name!r} is in HBM", "load it into SBUF with nisa.dma_copy first"


def _partition_limit(t, name, op, ctx, engine):
    p, limit = partitions(t), ctx.target.sbuf.partitions
    if p > limit:
        return f"{name} has {p} partitions, the limit is {limit}", f"split the partition dim into tiles of {limit}"


def _gpsimd_psum(t, name, op, ctx, engine):
    if engine == "gpsimd" and t.storage.kind == "psum":
        return f"{name} {t.name!r} is in PSUM but runs on GpSimd", "run it on the Vector or Scalar engine"


def aligned(start: int, p: int) -> bool:
    """The partition-start rule: 64 < P <= 128 starts at 0, 32 < P <= 64 at 0 or 64, P <= 32 at a multiple of 32."""
    if p > 64:
        return start == 0
    if p > 32:
        return start in (0, 64)
    return start % 32 == 0 and start + p <= 128


def _alignment(t, name, op, ctx, engine):
    if engine not in COMPUTE_ENGINES:
        return None
    start, p = partition_start(t), partitions(t)
    if start and not aligned(start, p):
        allowed = "0" if p > 64 else "0 or 64" if p > 32 else "0, 32, 64 or 96"
        return f"{name} {t.name!r} uses {p} partitions starting at partition {start}; a {p}-partition access must start at {allowed}"


OPERAND_RULES = (
    Rule("err_failed_to_infer_tile_from_local_tensor", "every tile operand is an NKI tensor", _is_tile),
    Rule("err_unsupported_memory", "tile operands are in SBUF or PSUM, never HBM", _on_chip),
    Rule("err_num_partition_exceed_arch_limit", "tile operands use at most 128 partitions", _partition_limit),
    Rule("err_gpsimd_cannot_access_psum", "GpSimd instructions never touch PSUM", _gpsimd_psum),
    Rule(
        "err_partition_start_alignment",
        "on Vector/Scalar/GpSimd a tile of P > 64 partitions starts at 0, 32 < P <= 64 at 0 or 64, P <= 32 at a multiple of 32",
        _alignment,
    ),
)


# ---------------------------------------------------------------- per-op rule constructors


def _t(a, name):
    v = getattr(a, name, None)
    return v if isinstance(v, NkiTensor) else None


def _tensors(a, names):
    return [(n, t) for n in names if (t := _t(a, n)) is not None]


def in_memory(name: str, allowed: tuple[str, ...]) -> Rule:
    def check(a, ctx, engine):
        t = _t(a, name)
        if t is not None and t.storage.kind not in allowed:
            return (
                f"{name} {t.name!r} is in {t.storage.kind.upper()}, must be in {'/'.join(x.upper() for x in allowed)}",
                "move the data with nisa.dma_copy (HBM<->SBUF) or nisa.tensor_copy (PSUM->SBUF) first",
            )

    return Rule("err_unsupported_memory", f"{name} must be in {'/'.join(x.upper() for x in allowed)}", check)


def tensor_required(name: str) -> Rule:
    def check(a, ctx, engine):
        if not isinstance(getattr(a, name, None), NkiTensor):
            return (f"{name} must be a tensor, got {type(getattr(a, name, None)).__name__}", "pass an NkiTensor (allocate with nl.ndarray)")

    return Rule("err_invalid_argument", f"{name} is a tensor", check)


def same_partitions(*names: str) -> Rule:
    def check(a, ctx, engine):
        ts = _tensors(a, names)
        ps = {partitions(t) for _, t in ts}
        if len(ps) > 1:
            desc = ", ".join(f"{n} {t.shape}" for n, t in ts)
            return (f"operands use different partition counts: {desc}", "slice the operands so they cover the same partition range")

    return Rule("err_num_partition_mismatch", f"{', '.join(names)} have the same partition count", check)


def same_free_size(*names: str) -> Rule:
    def check(a, ctx, engine):
        ts = _tensors(a, names)
        fs = {free_size(t) for _, t in ts}
        if len(fs) > 1:
            desc = ", ".join(f"{n} {t.shape} ({free_size(t)}/partition)" for n, t in ts)
            return (
                f"elements per partition differ: {desc}; NKI does not broadcast implicitly",
                "slice to equal free sizes, or use nisa.tensor_scalar with a [P, 1] operand to broadcast",
            )

    return Rule("err_free_size_mismatch", f"{', '.join(names)} have the same number of elements per partition", check)


def not_both_psum(x: str, y: str) -> Rule:
    def check(a, ctx, engine):
        tx, ty = _t(a, x), _t(a, y)
        if tx is not None and ty is not None and tx.storage.kind == "psum" and ty.storage.kind == "psum":
            return (f"{x} and {y} are both in PSUM", "copy one of them to SBUF first (nisa.tensor_copy)")

    return Rule("err_both_inputs_in_psum", f"{x} and {y} are not both in PSUM", check)


def max_free(name: str, limit: int, what: str = "elements per partition") -> Rule:
    def check(a, ctx, engine):
        t = _t(a, name)
        if t is not None and free_size(t) > limit:
            return (
                f"{name} has {free_size(t)} {what}, the limit is {limit}",
                f"tile {name} into chunks of at most {limit} elements per partition",
            )

    return Rule("err_size_of_dimension_exceed_arch_limit", f"{name} has at most {limit} {what}", check)


# A scalar operand: a Python number or a NumPy scalar (legacy kernels pass `np.dtype(np.float32).type(1)`, and
# np.float32 / np.int32 are not Python floats / ints)
NUMBER = (int, float, np.integer, np.floating)


def vector_operand(name: str, error: str = "err_shape_mismatch") -> Rule:
    """A scalar, or a [P, 1] tile matching the data's partitions."""

    def check(a, ctx, engine):
        v = getattr(a, name, None)
        if isinstance(v, NkiTensor):
            data = next((t for n in ("data", "src", "on_true_tile", "on_true", "data0") if (t := _t(a, n)) is not None), None)
            p = partitions(data) if data is not None else partitions(v)
            if free_size(v) != 1 or partitions(v) != p:
                return (f"{name} {v.shape} must be a scalar or a [{p}, 1] vector", f"pass a Python float or a ({p}, 1) tile")
        elif v is not None and not isinstance(v, NUMBER):
            return (f"{name} must be a number or a [P, 1] tile, got {type(v).__name__}", "pass a Python float or a (P, 1) tile")

    return Rule(error, f"{name} is a scalar or a [P, 1] vector", check)


def dtype_in(name: str, allowed: tuple[str, ...], error: str = "err_unsupported_dtype") -> Rule:
    def check(a, ctx, engine):
        t = _t(a, name)
        if t is not None and t.dtype.name not in allowed:
            return f"{name} has dtype {t.dtype}, allowed: {', '.join(allowed)}", f"cast {name} to one of {allowed}"

    return Rule(error, f"{name} dtype is one of {', '.join(allowed)}", check)


def same_dtype(x: str, y: str) -> Rule:
    def check(a, ctx, engine):
        tx, ty = _t(a, x), _t(a, y)
        if tx is not None and ty is not None and tx.dtype != ty.dtype:
            return f"{x} is {tx.dtype} but {y} is {ty.dtype}", f"make {x} and {y} the same dtype"

    return Rule("err_dtype_mismatch", f"{x} and {y} have the same dtype", check)


def alu_op(
    name: str, kinds: tuple[str, ...] = ("arith", "bitvec", "unary", "bitvec_unary"), optional: bool = False, reducible: bool = False
) -> Rule:
    def check(a, ctx, engine):
        op = getattr(a, name, None)
        if op is None and optional:
            return None
        key = op_name(op)
        alu = ALU.get(key)
        if alu is None or alu.kind not in kinds or (reducible and key not in REDUCIBLE):
            allowed = sorted(k for k, v in ALU.items() if v.kind in kinds and (not reducible or k in REDUCIBLE))
            return f"{name}={getattr(op, '__name__', op)!r} is not a valid operator here", f"use one of nl.{', nl.'.join(allowed)}"
        if not ctx.target.has_alu_op(key):
            return (
                f"{name}=nl.{key} is not available on {ctx.target.name}",
                "use a different operator or target",
            )

    what = "a reduction operator" if reducible else f"an ALU operator ({'/'.join(kinds)})"
    return Rule("err_invalid_op", f"{name} is {what}", check)


COMPARISONS = ("equal", "not_equal", "greater", "greater_equal", "less", "less_equal")


def compare_op(name: str) -> Rule:
    """A comparison operator (the "Is ..." rows of the ALU operator table): predicates are cmp(value, bound)."""

    def check(a, ctx, engine):
        key = op_name(getattr(a, name, None))
        if key not in COMPARISONS:
            op = getattr(a, name, None)
            return f"{name}={getattr(op, '__name__', op)!r} is not a comparison operator", f"use one of nl.{', nl.'.join(COMPARISONS)}"

    return Rule("err_invalid_op", f"{name} is a comparison ({', '.join(COMPARISONS)})", check)


def activation_op(name: str = "op") -> Rule:
    def check(a, ctx, engine):
        key = op_name(getattr(a, name, None))
        if key not in ACTIVATIONS:
            return (
                f"op={getattr(getattr(a, name, None), '__name__', getattr(a, name, None))!r} is not an activation function",
                f"use one of nl.{', nl.'.join(sorted(ACTIVATIONS))}",
            )

    return Rule("err_invalid_op", f"{name} is an activation function", check)


def bitvec_needs_int(op_names: tuple[str, ...], tensors: tuple[str, ...]) -> Rule:
    def check(a, ctx, engine):
        for on in op_names:
            key = op_name(getattr(a, on, None))
            if key and ALU.get(key) and ALU[key].kind.startswith("bitvec"):
                for n, t in _tensors(a, tensors):
                    if not t.dtype.is_int:
                        return (
                            f"bitvec operator nl.{key} needs integer tensors but {n} is {t.dtype}",
                            "use integer dtypes, or an arithmetic operator",
                        )

    return Rule("err_unsupported_dtype", "bitvec operators run on integer tensors", check)


def int_arg(name: str, low: int = 1, high: Callable | None = None, high_doc: str = "") -> Rule:
    """An int argument in [low, high(args)] (high: None = unbounded), checked before any math reads it."""

    def check(a, ctx, engine):
        v = getattr(a, name, None)
        if not isinstance(v, int | np.integer) or isinstance(v, bool):
            return f"{name}={v!r} must be an int", f"pass {name} as an int"
        top = high(a) if high is not None else None
        if v < low or (top is not None and v > top):
            return f"{name}={v} is outside [{low}, {top if top is not None else 'inf'}]", f"pass {name} between {low} and {high_doc or top}"

    return Rule("err_invalid_argument", f"{name} is an int from {low} to {high_doc or 'any'}", check)


def number_arg(name: str) -> Rule:
    """A compile-time number (int, float or bool)."""

    def check(a, ctx, engine):
        v = getattr(a, name, None)
        if not isinstance(v, int | float | bool | np.number):
            return f"{name}={v!r} must be a number", f"pass {name} as a Python int or float"

    return Rule("err_invalid_argument", f"{name} is a number", check)


def custom(error: str, doc: str, check) -> Rule:
    return Rule(error, doc, check)
