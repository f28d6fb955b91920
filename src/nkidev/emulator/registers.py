"""Virtual registers: scalar values held by engine sequencers (dynamic loop bounds, offsets)."""

from __future__ import annotations

import sys

import numpy as np

from nkidev.emulator import context
from nkidev.emulator.dtypes import to_f32
from nkidev.emulator.location import is_internal
from nkidev.emulator.tensor import NkiTensor, rule_error


class VirtualRegister:
    """A 32-bit register value; in the emulator it is known when the kernel runs."""

    __slots__ = ("value",)

    def __init__(self, state=None, frozen=False):
        self.value = 0 if state is None else int(state)

    def _host_read(self, what: str) -> int:
        # On hardware a register's value exists only while the kernel runs on device; kernel Python code
        # (if/while/int()/range()) cannot see it. nkidev's own loop helpers read `.value` directly.
        if not is_internal(sys._getframe(2).f_code.co_filename) and context.current().in_kernel:
            raise rule_error(
                "err_dynamic_control_flow_not_supported",
                f"kernel code reads a register's run-time value ({what})",
                "use nl.fori_loop / nl.while_loop / nl.dynamic_range with the register, or pass it as an .ap(scalar_offset=...) offset",
            )
        return self.value

    def __int__(self) -> int:
        return self._host_read("int()")

    def __index__(self) -> int:
        return self._host_read("range()/indexing")

    def __bool__(self) -> bool:
        # `while reg:` is a device loop (the parser frontend compiles it to a branch), so it stays allowed
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
        return self._host_read("comparison") < _value(o)

    def __le__(self, o):
        return self._host_read("comparison") <= _value(o)

    def __gt__(self, o):
        return self._host_read("comparison") > _value(o)

    def __ge__(self, o):
        return self._host_read("comparison") >= _value(o)


def _value(x) -> int:
    return x.value if isinstance(x, VirtualRegister) else int(x)


def _scalar_of(t: NkiTensor) -> int:
    if t.size != 1:
        raise rule_error("err_shape_mismatch", f"register_load needs a 1-element tensor, got {t.shape}", "pass a [1, 1] tile")
    from nkidev.emulator.memory import raw

    values = np.asarray(raw(t)).reshape(-1)
    return int(values[0]) if t.dtype.is_int else int(to_f32(values, t.dtype)[0])


def register_alloc(x=None) -> VirtualRegister:
    return VirtualRegister(x)


def register_move(dst: VirtualRegister, src) -> None:
    dst.value = _value(src)


def register_load(dst: VirtualRegister, src: NkiTensor) -> None:
    dst.value = _scalar_of(src)


def register_store(dst: NkiTensor, src) -> None:
    from nkidev.emulator.memory import store_raw

    value = _value(src)
    store_raw(
        dst,
        np.full(dst.shape, value, dtype=np.int64).astype(dst.dtype.storage)
        if dst.dtype.is_int
        else np.full(dst.shape, value, dtype=np.float32).astype(dst.dtype.storage),
    )
    dst.storage.written = True
