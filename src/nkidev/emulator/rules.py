"""Reusable hardware rules (reference/nki-api.md §1.9-1.11). Each constructor returns a `Rule`
naming the error it raises; op declarations list the rules that apply to them.
"""

from __future__ import annotations

from nkidev.emulator.alu import ACTIVATIONS, ALU, REDUCIBLE, op_name
from nkidev.emulator.opdef import Rule
from nkidev.emulator.tensor import NkiTensor, free_size, partitions


def _t(a, name):
    v = getattr(a, name, None)
    return v if isinstance(v, NkiTensor) else None


def _tensors(a, names):
    return [(n, t) for n in names if (t := _t(a, n)) is not None]


def in_memory(name: str, allowed: tuple[str, ...]) -> Rule:
    def check(a, ctx):
        t = _t(a, name)
        if t is not None and t.storage.kind not in allowed:
            return (
                f"{name} {t.name!r} is in {t.storage.kind.upper()}, must be in {'/'.join(x.upper() for x in allowed)}",
                "move the data with nisa.dma_copy (HBM<->SBUF) or nisa.tensor_copy (PSUM->SBUF) first",
            )

    return Rule("err_unsupported_memory", f"{name} must be in {'/'.join(x.upper() for x in allowed)}", check)


def tensor_required(name: str) -> Rule:
    def check(a, ctx):
        if not isinstance(getattr(a, name, None), NkiTensor):
            return (f"{name} must be a tensor, got {type(getattr(a, name, None)).__name__}", "pass an NkiTensor (allocate with nl.ndarray)")

    return Rule("err_invalid_argument", f"{name} is a tensor", check)


def same_partitions(*names: str) -> Rule:
    def check(a, ctx):
        ts = _tensors(a, names)
        ps = {partitions(t) for _, t in ts}
        if len(ps) > 1:
            desc = ", ".join(f"{n} {t.shape}" for n, t in ts)
            return (f"operands use different partition counts: {desc}", "slice the operands so they cover the same partition range")

    return Rule("err_num_partition_mismatch", f"{', '.join(names)} have the same partition count", check)


def same_free_size(*names: str) -> Rule:
    def check(a, ctx):
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
    def check(a, ctx):
        tx, ty = _t(a, x), _t(a, y)
        if tx is not None and ty is not None and tx.storage.kind == "psum" and ty.storage.kind == "psum":
            return (f"{x} and {y} are both in PSUM", "copy one of them to SBUF first (nisa.tensor_copy)")

    return Rule("err_both_inputs_in_psum", f"{x} and {y} are not both in PSUM", check)


def max_free(name: str, limit: int, what: str = "elements per partition") -> Rule:
    def check(a, ctx):
        t = _t(a, name)
        if t is not None and free_size(t) > limit:
            return (
                f"{name} has {free_size(t)} {what}, the limit is {limit}",
                f"tile {name} into chunks of at most {limit} elements per partition",
            )

    return Rule("err_size_of_dimension_exceed_arch_limit", f"{name} has at most {limit} {what}", check)


def vector_operand(name: str, error: str = "err_shape_mismatch") -> Rule:
    """A scalar, or a [P, 1] tile matching the data's partitions."""

    def check(a, ctx):
        v = getattr(a, name, None)
        if isinstance(v, NkiTensor):
            data = next((t for n in ("data", "src", "on_true_tile", "on_true", "data0") if (t := _t(a, n)) is not None), None)
            p = partitions(data) if data is not None else partitions(v)
            if free_size(v) != 1 or partitions(v) != p:
                return (f"{name} {v.shape} must be a scalar or a [{p}, 1] vector", f"pass a Python float or a ({p}, 1) tile")
        elif v is not None and not isinstance(v, int | float):
            return (f"{name} must be a number or a [P, 1] tile, got {type(v).__name__}", "pass a Python float or a (P, 1) tile")

    return Rule(error, f"{name} is a scalar or a [P, 1] vector", check)


def dtype_in(name: str, allowed: tuple[str, ...], error: str = "err_unsupported_dtype") -> Rule:
    def check(a, ctx):
        t = _t(a, name)
        if t is not None and t.dtype.name not in allowed:
            return f"{name} has dtype {t.dtype}, allowed: {', '.join(allowed)}", f"cast {name} to one of {allowed}"

    return Rule(error, f"{name} dtype is one of {', '.join(allowed)}", check)


def same_dtype(x: str, y: str) -> Rule:
    def check(a, ctx):
        tx, ty = _t(a, x), _t(a, y)
        if tx is not None and ty is not None and tx.dtype != ty.dtype:
            return f"{x} is {tx.dtype} but {y} is {ty.dtype}", f"make {x} and {y} the same dtype"

    return Rule("err_dtype_mismatch", f"{x} and {y} have the same dtype", check)


def alu_op(
    name: str, kinds: tuple[str, ...] = ("arith", "bitvec", "unary", "bitvec_unary"), optional: bool = False, reducible: bool = False
) -> Rule:
    def check(a, ctx):
        op = getattr(a, name, None)
        if op is None and optional:
            return None
        key = op_name(op)
        alu = ALU.get(key)
        if alu is None or alu.kind not in kinds or (reducible and key not in REDUCIBLE):
            allowed = sorted(k for k, v in ALU.items() if v.kind in kinds and (not reducible or k in REDUCIBLE))
            return f"{name}={getattr(op, '__name__', op)!r} is not a valid operator here", f"use one of nl.{', nl.'.join(allowed)}"
        if alu.min_nc > ctx.target.nc_version:
            return (
                f"{name}=nl.{key} needs NeuronCore-v{alu.min_nc}; {ctx.target.name} is v{ctx.target.nc_version}",
                "use a different operator or target",
            )

    what = "a reduction operator" if reducible else f"an ALU operator ({'/'.join(kinds)})"
    return Rule("err_invalid_op", f"{name} is {what}", check)


def activation_op(name: str = "op") -> Rule:
    def check(a, ctx):
        key = op_name(getattr(a, name, None))
        if key not in ACTIVATIONS:
            return (
                f"op={getattr(getattr(a, name, None), '__name__', getattr(a, name, None))!r} is not an activation function",
                f"use one of nl.{', nl.'.join(sorted(ACTIVATIONS))}",
            )

    return Rule("err_invalid_op", f"{name} is an activation function", check)


def bitvec_needs_int(op_names: tuple[str, ...], tensors: tuple[str, ...]) -> Rule:
    def check(a, ctx):
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


def custom(error: str, doc: str, check) -> Rule:
    return Rule(error, doc, check)
