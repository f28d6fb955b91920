"""Device scalars: VirtualRegister (NKI 0.6) and NkiScalar (NKI 0.7), values held by engine sequencers
(dynamic loop bounds, offsets).

The value types only; the instructions that load and store them (register_load, scalar_load, ...) live in
register_ops.py, above the tensor layer that this module sits below.
"""

from __future__ import annotations

import sys

from nkidev.emulator import context, gate
from nkidev.emulator.location import is_internal, kernel_location, rule_error
from nkidev.errors import KernelRuleError, KernelTypeError


class VirtualRegister:
    """A 32-bit register value; in the emulator it is known when the kernel runs."""

    __slots__ = ("value",)

    def __init__(self, state=None, frozen=False):
        self.value = 0 if state is None else int(state)

    def _host_read(self, what: str) -> int:
        # On hardware a register's value exists only while the kernel runs on device; kernel Python code
        # (if/while/int()/range()) cannot see it. nkidev's own loop helpers read `.value` directly.
        if not is_internal(sys._getframe(2).f_code.co_filename) and context.current().in_kernel:
            loops = "nl.fori_loop / nl.while_loop" + (" / nl.dynamic_range" if gate.has("nki.language.dynamic_range") else "")
            message = f"kernel code reads a register's run-time value ({what})"
            fix = f"use {loops} with the register, or pass it as an .ap(scalar_offset=...) offset"
            if gate.has("tracer front end"):  # the tracer runs the kernel as Python: there it is a TypeError
                raise KernelTypeError(
                    "err_dynamic_control_flow_not_supported",
                    message + "; a register has no Python value while NKI 0.7 traces the kernel",
                    fix,
                    kernel_location(),
                )
            raise rule_error("err_dynamic_control_flow_not_supported", message, fix)
        return self.value

    def __int__(self) -> int:
        return self._host_read("int()")

    def __index__(self) -> int:
        return self._host_read("range()/indexing")

    def __bool__(self) -> bool:
        # NKI 0.6: `while reg:` is a device loop (the parser front end compiles it to a branch). NKI 0.7's tracer has
        # no Python value for a register, so truth-testing one is an error there (use nl.while_loop).
        if not is_internal(sys._getframe(1).f_code.co_filename) and context.current().in_kernel:
            gate.require("while <register>:")
        return self.value != 0

    def __repr__(self) -> str:
        return f"VirtualRegister({self.value})"

    def _arith(self, other, fn):
        return VirtualRegister(fn(self.value, other.value if isinstance(other, VirtualRegister) else int(other)))

    def __add__(self, o):
        return self._arith(o, lambda a, b: a + b)

    __radd__ = __add__

    def __sub__(self, o):
        return self._arith(o, lambda a, b: a - b)

    def __rsub__(self, o):
        return self._arith(o, lambda a, b: b - a)

    def __mul__(self, o):
        return self._arith(o, lambda a, b: a * b)

    __rmul__ = __mul__

    def __lt__(self, o):
        return self._host_read("comparison") < value_of(o)

    def __le__(self, o):
        return self._host_read("comparison") <= value_of(o)

    def __gt__(self, o):
        return self._host_read("comparison") > value_of(o)

    def __ge__(self, o):
        return self._host_read("comparison") >= value_of(o)


def value_of(x) -> int:
    return x.value if isinstance(x, VirtualRegister | NkiScalar) else int(x)


# ---------------------------------------------------------------- NkiScalar (NKI 0.7)

_WIDTH = {"int32": 32, "int64": 64}


def _wrap(value: int, bits: int) -> int:
    """Two's-complement wrap-around to the scalar's width (NKI scalars never widen)."""
    half = 1 << (bits - 1)
    return ((value + half) % (1 << bits)) - half


def _scalar_error(message: str, fix: str) -> KernelRuleError:
    return KernelRuleError("err_nki_scalar_operation", message, fix, kernel_location())


class NkiScalar:
    """A device scalar of NKI 0.7 (`nisa.scalar_load`): an int32 or int64 value that exists only on the device.

    Arithmetic (+, -, *, unary -) is traced and wraps to the scalar's width; int32 comparisons are traced but their
    result cannot be used; int64 comparisons are rejected. Kernel Python code cannot read the value (if, int(),
    range(), indexing raise a TypeError); pass scalars to nl.fori_loop bounds or .ap(scalar_offset=...).
    """

    __slots__ = ("value", "dtype", "is_comparison")
    __hash__ = object.__hash__

    def __init__(self, state, dtype=None, is_comparison: bool = False):
        name = str(dtype) if dtype is not None else "int32"
        if name not in _WIDTH:
            raise KernelRuleError(
                "err_nki_scalar_invalid",
                f"an NkiScalar is int32 or int64, not {name}",
                "load it from an int32/int64 tile",
                kernel_location(),
            )
        self.dtype = dtype if dtype is not None else "int32"
        self.value = _wrap(int(state), _WIDTH[name])
        self.is_comparison = bool(is_comparison)

    @property
    def bits(self) -> int:
        return _WIDTH[str(self.dtype)]

    def __repr__(self) -> str:
        return f"NkiScalar({self.value}, {self.dtype})"

    def usable(self, what: str) -> int:
        """The value, for nkidev's own use as `what` (a loop bound, an offset); a comparison result is not usable."""
        if self.is_comparison:
            raise _scalar_error(
                f"the result of an NkiScalar comparison is used as {what}; NKI 0.7 traces comparisons but their results cannot be used",
                "compute the value with + - * instead",
            )
        return self.value

    def _operand(self, other, op: str) -> int:
        if isinstance(other, NkiScalar):
            if str(other.dtype) != str(self.dtype):
                raise _scalar_error(
                    f"{self.dtype} {op} {other.dtype}: NkiScalar operands must have one dtype", "load both from tiles of one dtype"
                )
            return other.usable(f"an operand of {op}")
        if isinstance(other, bool) or not isinstance(other, int):
            if hasattr(other, "__index__") and not isinstance(other, float):
                return int(other.__index__())
            raise _scalar_error(f"NkiScalar {op} {type(other).__name__}: operands are NkiScalars or Python ints", "use an int")
        return other

    def _arith(self, other, fn, op: str, reverse: bool = False) -> NkiScalar:
        a, b = self.usable(f"an operand of {op}"), self._operand(other, op)
        return NkiScalar(fn(b, a) if reverse else fn(a, b), self.dtype)

    def __add__(self, o):
        return self._arith(o, lambda a, b: a + b, "+")

    def __radd__(self, o):
        return self._arith(o, lambda a, b: a + b, "+", True)

    def __sub__(self, o):
        return self._arith(o, lambda a, b: a - b, "-")

    def __rsub__(self, o):
        return self._arith(o, lambda a, b: a - b, "-", True)

    def __mul__(self, o):
        return self._arith(o, lambda a, b: a * b, "*")

    def __rmul__(self, o):
        return self._arith(o, lambda a, b: a * b, "*", True)

    def __neg__(self):
        return NkiScalar(-self.usable("an operand of unary -"), self.dtype)

    def __pos__(self):
        return self

    def _compare(self, other, fn, op: str) -> NkiScalar:
        if self.bits == 64:
            raise _scalar_error(f"int64 NkiScalar comparison ({op}) is rejected by NKI 0.7", "compare int32 scalars")
        return NkiScalar(int(fn(self.usable(op), self._operand(other, op))), self.dtype, is_comparison=True)

    def __lt__(self, o):
        return self._compare(o, lambda a, b: a < b, "<")

    def __le__(self, o):
        return self._compare(o, lambda a, b: a <= b, "<=")

    def __gt__(self, o):
        return self._compare(o, lambda a, b: a > b, ">")

    def __ge__(self, o):
        return self._compare(o, lambda a, b: a >= b, ">=")

    def __eq__(self, o):
        return self._compare(o, lambda a, b: a == b, "==")

    def __ne__(self, o):
        return self._compare(o, lambda a, b: a != b, "!=")

    def _unsupported(self, op: str):
        raise _scalar_error(f"NkiScalar does not support {op} (NKI 0.7 documents + - * and comparisons)", "use + - * only")

    def __floordiv__(self, o):
        self._unsupported("//")

    __rfloordiv__ = __floordiv__

    def __truediv__(self, o):
        self._unsupported("/")

    __rtruediv__ = __truediv__

    def __mod__(self, o):
        self._unsupported("%")

    __rmod__ = __mod__

    def __lshift__(self, o):
        self._unsupported("<<")

    def __rshift__(self, o):
        self._unsupported(">>")

    def __and__(self, o):
        self._unsupported("&")

    def __or__(self, o):
        self._unsupported("|")

    def __xor__(self, o):
        self._unsupported("^")

    def _host_read(self, what: str):
        raise KernelTypeError(
            "err_nki_scalar_host_value",
            f"kernel code reads an NkiScalar's value ({what}); NKI 0.7 scalars have no Python value while the kernel is built",
            "pass it to nl.fori_loop bounds or .ap(scalar_offset=...), or keep the value in a Python int",
            kernel_location(),
        )

    def __bool__(self):
        self._host_read("if/while/and/or")

    def __int__(self):
        self._host_read("int()")

    def __index__(self):
        self._host_read("range()/indexing")

    def __float__(self):
        self._host_read("float()")
