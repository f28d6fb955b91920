"""Virtual registers: scalar values held by engine sequencers (dynamic loop bounds, offsets).

The value type only; the register instructions (register_load, ...) live in register_ops.py, above the
tensor layer that this module sits below.
"""

from __future__ import annotations

import sys

from nkidev.emulator import context
from nkidev.emulator.location import is_internal, rule_error


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
        return self._host_read("comparison") < value_of(o)

    def __le__(self, o):
        return self._host_read("comparison") <= value_of(o)

    def __gt__(self, o):
        return self._host_read("comparison") > value_of(o)

    def __ge__(self, o):
        return self._host_read("comparison") >= value_of(o)


def value_of(x) -> int:
    return x.value if isinstance(x, VirtualRegister) else int(x)
