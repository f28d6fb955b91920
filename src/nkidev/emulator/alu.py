"""Operator tables: the ALU ops (`op=` of tensor_tensor, tensor_scalar, tensor_reduce, ...) and the
ScalarE activation functions (`op=` of activation), each a small NumPy callable on fp32 arrays.

Keys are the names of the `nl` functions that act as op specifiers (nl.add, nl.exp, ...).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

F32 = np.float32


def _bool(fn):
    return lambda a, b: fn(a, b).astype(F32, copy=False)


def _logical(fn):
    return lambda a, b: fn(a != 0, b != 0).astype(F32, copy=False)


def _abs_max(a, b):
    # ties return y, as the docs' examples show
    return np.where(np.abs(a) > np.abs(b), a, b).astype(F32, copy=False)


def _abs_min(a, b):
    return np.where(np.abs(a) < np.abs(b), a, b).astype(F32, copy=False)


def _rsqrt(a, _b=None):
    with np.errstate(divide="ignore", invalid="ignore"):
        return (F32(1) / np.sqrt(a)).astype(F32, copy=False)


def _recip(a, _b=None):
    with np.errstate(divide="ignore"):
        return (F32(1) / a).astype(F32, copy=False)


def _div(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.divide(a, b, dtype=F32)


class OpSpec:
    """An op specifier that is not a callable math function (nl.prelu, nl.bypass, nl.average)."""

    def __init__(self, name: str):
        self.__nki_op__ = name
        self.__name__ = name

    def __repr__(self) -> str:
        return f"nl.{self.__name__}"


# Op specifiers nki.isa signatures use as defaults (cmp_op=nl.equal, reduce_op=nl.maximum), so nki.isa needs
# no import of nki.language.
DEFAULT_SPECS = {name: OpSpec(name) for name in ("equal", "maximum")}


@dataclass(frozen=True)
class AluOp:
    name: str
    kind: str  # "arith" | "bitvec" | "unary" | "bitvec_unary"
    fn: Callable  # (a, b) -> array; fp32 for arith, integers for bitvec
    reduce: Callable | None = None  # (array, axis) -> array, when legal as a reduction op
    identity: float | None = None  # accumulator reset value for reductions


def _ufunc_reduce(ufunc):
    return lambda x, axis: ufunc.reduce(x, axis=axis)


ALU: dict[str, AluOp] = {
    op.name: op
    for op in (
        AluOp("add", "arith", np.add, _ufunc_reduce(np.add), 0.0),
        AluOp("subtract", "arith", np.subtract, _ufunc_reduce(np.subtract), 0.0),
        AluOp("multiply", "arith", np.multiply, _ufunc_reduce(np.multiply), 1.0),
        AluOp("maximum", "arith", np.maximum, _ufunc_reduce(np.maximum), -np.inf),
        AluOp("minimum", "arith", np.minimum, _ufunc_reduce(np.minimum), np.inf),
        AluOp("equal", "arith", _bool(np.equal)),
        AluOp("not_equal", "arith", _bool(np.not_equal)),
        AluOp("greater", "arith", _bool(np.greater)),
        AluOp("greater_equal", "arith", _bool(np.greater_equal)),
        AluOp("less", "arith", _bool(np.less)),
        AluOp("less_equal", "arith", _bool(np.less_equal)),
        AluOp("logical_and", "arith", _logical(np.logical_and), lambda x, axis: np.all(x != 0, axis=axis).astype(F32), 1.0),
        AluOp("logical_or", "arith", _logical(np.logical_or), lambda x, axis: np.any(x != 0, axis=axis).astype(F32), 0.0),
        AluOp("logical_xor", "arith", _logical(np.logical_xor), lambda x, axis: (np.sum(x != 0, axis=axis) % 2).astype(F32), 0.0),
        AluOp("power", "arith", lambda a, b: np.power(a, b, dtype=F32)),
        AluOp("abs_max", "arith", _abs_max),
        AluOp("abs_min", "arith", _abs_min),
        # not in the hardware ALU table; nl.divide/mod/fmod are emulated for convenience
        AluOp("divide", "arith", _div),
        AluOp("mod", "arith", lambda a, b: np.mod(a, b, dtype=F32)),
        AluOp("fmod", "arith", lambda a, b: np.fmod(a, b, dtype=F32)),
        AluOp("bypass", "arith", lambda a, b: a),
        AluOp("average", "arith", None, lambda x, axis: np.mean(x, axis=axis, dtype=F32), 0.0),
        AluOp("abs", "unary", lambda a, b=None: np.abs(a)),
        AluOp("square", "unary", lambda a, b=None: np.square(a)),
        AluOp("relu", "unary", lambda a, b=None: np.maximum(a, F32(0))),
        AluOp("rsqrt", "unary", _rsqrt),
        AluOp("reciprocal", "unary", _recip),
        AluOp("negative", "unary", lambda a, b=None: np.negative(a)),
        AluOp("invert", "bitvec_unary", lambda a, b=None: np.invert(a)),
        AluOp("bitwise_and", "bitvec", np.bitwise_and, _ufunc_reduce(np.bitwise_and), -1),
        AluOp("bitwise_or", "bitvec", np.bitwise_or, _ufunc_reduce(np.bitwise_or), 0),
        AluOp("bitwise_xor", "bitvec", np.bitwise_xor, _ufunc_reduce(np.bitwise_xor), 0),
        AluOp("left_shift", "bitvec", lambda a, b: np.left_shift(a, b.astype(a.dtype))),
        # logical (unsigned) shift right; arithmetic shift right is not supported by the hardware
        AluOp(
            "right_shift",
            "bitvec",
            lambda a, b: (a.view(np.dtype(f"u{a.dtype.itemsize}")) >> b.astype(f"u{a.dtype.itemsize}")).view(a.dtype),
        ),
    )
}

REDUCIBLE = {name for name, op in ALU.items() if op.reduce is not None}


# --- activation functions (ScalarE piece-wise polynomials; we evaluate the exact function) ---


def _erf(x):
    # Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7, below fp32 resolution of the result)
    s = np.sign(x)
    a = np.abs(x).astype(np.float64)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * np.exp(-a * a)
    return (s * y).astype(F32, copy=False)


def _sigmoid(x):
    with np.errstate(over="ignore"):
        return (F32(1) / (F32(1) + np.exp(-x))).astype(F32, copy=False)


def _gelu(x, _a=0.0):
    return (F32(0.5) * x * (F32(1) + _erf(x / np.sqrt(F32(2))))).astype(F32, copy=False)


def _gelu_dx(x, _a=0.0):
    pdf = np.exp(-F32(0.5) * x * x) / np.sqrt(F32(2 * np.pi))
    return (F32(0.5) * (F32(1) + _erf(x / np.sqrt(F32(2)))) + x * pdf).astype(F32, copy=False)


def _gelu_tanh(x, _a=0.0):
    c = F32(np.sqrt(2 / np.pi))
    return (F32(0.5) * x * (F32(1) + np.tanh(c * (x + F32(0.044715) * x**3)))).astype(F32, copy=False)


def _gelu_sig(x, _a=0.0):
    return (x * _sigmoid(F32(1.702) * x)).astype(F32, copy=False)


def _gelu_sig_dx(x, _a=0.0):
    s = _sigmoid(F32(1.702) * x)
    return (s + F32(1.702) * x * s * (F32(1) - s)).astype(F32, copy=False)


def _silu_dx(x, _a=0.0):
    s = _sigmoid(x)
    return (s * (F32(1) + x * (F32(1) - s))).astype(F32, copy=False)


def _softplus(x, _a=0.0):
    return np.logaddexp(F32(0), x).astype(F32, copy=False)


def _sin(x, _a=0.0):
    # ScalarE evaluates its fitted polynomial without range reduction (valid only on [-pi, pi]); outside that
    # range we extrapolate the cubic Taylor polynomial at +-pi, which reproduces the documented sin(9.0) ~ 27.65.
    d = np.where(x > np.pi, x - F32(np.pi), np.where(x < -np.pi, x + F32(np.pi), F32(0))).astype(F32, copy=False)
    outside = -d + d * d * d / F32(6)
    return np.where(np.abs(x) <= np.pi, np.sin(x), outside).astype(F32, copy=False)


def _safe(fn):
    def run(x, _a=0.0, out=None):
        with np.errstate(all="ignore"):
            if out is not None:  # an element-wise ufunc: the same bits written over its fp32 input
                return fn(x, out=out)
            return fn(x).astype(F32, copy=False)

    _IN_PLACE.add(run)
    return run


_IN_PLACE: set = set()


ACTIVATIONS: dict[str, Callable] = {
    "copy": lambda x, a=0.0: x,
    "square": lambda x, a=0.0: np.square(x),
    "sigmoid": lambda x, a=0.0: _sigmoid(x),
    "relu": lambda x, a=0.0: np.maximum(x, F32(0)),
    "prelu": lambda x, a=0.0: np.where(x >= 0, x, F32(a) * x).astype(F32, copy=False),
    "gelu": _gelu,
    "gelu_dx": _gelu_dx,
    "gelu_apprx_tanh": _gelu_tanh,
    "gelu_apprx_sigmoid": _gelu_sig,
    "gelu_apprx_sigmoid_dx": _gelu_sig_dx,
    "silu": lambda x, a=0.0: (x * _sigmoid(x)).astype(F32, copy=False),
    "silu_dx": _silu_dx,
    "tanh": _safe(np.tanh),
    "softplus": _softplus,
    "mish": lambda x, a=0.0: (x * np.tanh(_softplus(x))).astype(F32, copy=False),
    "erf": lambda x, a=0.0: _erf(x),
    "erf_dx": lambda x, a=0.0: (F32(2 / np.sqrt(np.pi)) * np.exp(-x * x)).astype(F32, copy=False),
    "exp": _safe(np.exp),
    "log": _safe(np.log),
    "sin": _sin,
    "arctan": _safe(np.arctan),
    "sqrt": _safe(np.sqrt),
    "rsqrt": lambda x, a=0.0: _rsqrt(x),
    "reciprocal": lambda x, a=0.0: _recip(x),
    "sign": lambda x, a=0.0: np.sign(x),
    "abs": lambda x, a=0.0: np.abs(x),
}

# activations that may write their result over their (fp32) input: `ACTIVATIONS[name](x, alpha, x)`
IN_PLACE = frozenset(name for name, fn in ACTIVATIONS.items() if fn in _IN_PLACE)

# What nkidev computes for each activation, and how that relates to the NKI docs (docs/sources.md
# "activations"). ScalarE evaluates piecewise polynomial fits whose coefficients are unpublished; nkidev
# evaluates these formulas in fp32, so results are close to, not bit-exact with, the hardware. Valid input
# ranges are those the NKI docs state (outside them the hardware's results are not valid).
ACTIVATION_DOCS: dict[str, str] = {
    "copy": "x",
    "square": "x^2",
    "sigmoid": "1 / (1 + exp(-x))",
    "relu": "max(x, 0)",
    "prelu": "x for x >= 0, alpha * x otherwise (alpha: the instruction's scalar parameter)",
    "gelu": (
        "0.5 * x * (1 + erf(x / sqrt(2))): the exact (erf) GELU, as torch.nn.functional.gelu with its default "
        "approximate='none'. The NKI docs give no formula (older nki.language docs compare nl.gelu with "
        "torch's gelu); the tanh approximation is the separate gelu_apprx_tanh"
    ),
    "gelu_dx": "d/dx of the erf GELU: 0.5 * (1 + erf(x / sqrt(2))) + x * exp(-x^2 / 2) / sqrt(2 pi)",
    "gelu_apprx_tanh": (
        "0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))), the usual tanh approximation (torch's "
        "approximate='tanh'); the NKI docs name it but give no constants"
    ),
    "gelu_apprx_sigmoid": "x * sigmoid(1.702 x), the usual sigmoid approximation; the NKI docs give no constant",
    "gelu_apprx_sigmoid_dx": "d/dx of x * sigmoid(1.702 x): s + 1.702 x s (1 - s), s = sigmoid(1.702 x)",
    "silu": "x * sigmoid(x) (torch.nn.functional.silu)",
    "silu_dx": "d/dx of silu: s * (1 + x (1 - s)), s = sigmoid(x)",
    "tanh": "tanh(x)",
    "softplus": "log(1 + exp(x))",
    "mish": "x * tanh(softplus(x))",
    "erf": "2 / sqrt(pi) * integral_0^x exp(-t^2) dt (nkidev: Abramowitz-Stegun 7.1.26, |error| < 1.5e-7)",
    "erf_dx": "2 / sqrt(pi) * exp(-x^2)",
    "exp": "exp(x)",
    "log": "log(x); valid for x in [2^-64, 2^64]",
    "sin": (
        "sin(x); valid for x in [-pi, pi]: activation(op=nl.sin) does no range reduction, and outside that range "
        "nkidev extrapolates like the hardware (sin(9.0) = 27.65); nl.sin reduces the range first"
    ),
    "arctan": "arctan(x); valid for x in [-pi/2, pi/2]",
    "sqrt": "sqrt(x); valid for x in [2^-116, 2^118]",
    "rsqrt": "1 / sqrt(x); valid for x in [2^-87, 2^97]",
    "reciprocal": "1 / x; valid for |x| in [2^-42, 2^42]",
    "sign": "-1, 0 or +1",
    "abs": "|x|",
}

_NAME_CACHE: dict = {}


def op_name(op) -> str | None:
    """The table key of an op specifier (an nl function, np ufunc, or OpSpec)."""
    try:
        return _NAME_CACHE[op]
    except (KeyError, TypeError):
        pass
    name = _op_name(op)
    try:
        _NAME_CACHE[op] = name
    except TypeError:
        pass
    return name


def _op_name(op) -> str | None:
    name = getattr(op, "__nki_op__", None)
    if name is not None:
        return name
    if isinstance(op, np.ufunc):
        return {
            "add": "add",
            "subtract": "subtract",
            "multiply": "multiply",
            "maximum": "maximum",
            "minimum": "minimum",
            "exp": "exp",
            "square": "square",
            "tanh": "tanh",
            "log": "log",
            "sqrt": "sqrt",
            "absolute": "abs",
            "sign": "sign",
            "sin": "sin",
            "arctan": "arctan",
            "reciprocal": "reciprocal",
            "negative": "negative",
            "power": "power",
            "equal": "equal",
            "greater": "greater",
            "less": "less",
            "greater_equal": "greater_equal",
            "less_equal": "less_equal",
            "not_equal": "not_equal",
            "bitwise_and": "bitwise_and",
            "bitwise_or": "bitwise_or",
            "bitwise_xor": "bitwise_xor",
            "invert": "invert",
            "left_shift": "left_shift",
            "right_shift": "right_shift",
            "logical_and": "logical_and",
            "logical_or": "logical_or",
            "logical_xor": "logical_xor",
        }.get(op.__name__)
    if isinstance(op, str):
        return op
    return None
