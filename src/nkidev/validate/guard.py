"""A tripwire on the task's reference() and cases() while the kernel runs.

The function objects keep their identity but their code is swapped for code that records the call
and raises, so every path to them trips it: the name, an alias bound at import time, getattr on the
module, globals()[...]. The call is recorded before raising, so a kernel that swallows the exception
is still caught.

The swap is process-wide (a function has one `__code__`), the arming is per thread: a thread that is not
running a kernel under the tripwire (another validation calling the same reference) runs the original
code. The code is swapped while at least one thread has the function armed.
"""

from __future__ import annotations

import sys
import threading
import types
from collections.abc import Iterable
from contextlib import contextmanager


class ReferenceCalled(Exception):
    """Raised inside the kernel when it calls a guarded function."""


_lock = threading.Lock()
_local = threading.local()
# id(trip code) -> (trip code, function, original code); by id: trip codes of same-named functions compare equal
_swapped: dict[int, tuple[types.CodeType, types.FunctionType, types.CodeType]] = {}
_armers: dict[int, int] = {}  # id(function) -> number of threads that armed it


def calls() -> list[tuple[str, str | None]]:
    """This thread's recorded calls: (function name, "file.py:LINE" of the kernel's call)."""
    if not hasattr(_local, "calls"):
        _local.calls = []
    return _local.calls


def _trip(*args, **kwargs):
    import nkidev.validate.guard as guard  # resolved through builtins: this code runs with the task's globals

    return guard.tripped(args, kwargs)


def tripped(args: tuple, kwargs: dict):
    code = sys._getframe(1).f_code
    _, fn, original = _swapped[id(code)]
    if id(fn) not in getattr(_local, "armed", ()):
        # another thread's tripwire: run the real function on a copy that carries the original code
        real = types.FunctionType(original, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
        real.__kwdefaults__ = fn.__kwdefaults__
        return real(*args, **kwargs)
    caller = sys._getframe(2)
    calls().append((code.co_name, f"{caller.f_code.co_filename}:{caller.f_lineno}"))
    raise ReferenceCalled(f"the kernel called {code.co_name}()")


def guardable(fn) -> bool:
    return getattr(fn, "__code__", None) is not None and getattr(fn, "__closure__", None) is None


def _arm(fn) -> None:
    with _lock:
        count = _armers.get(id(fn), 0)
        if count == 0:
            trip = _trip.__code__.replace(co_name=fn.__name__, co_qualname=fn.__qualname__)
            _swapped[id(trip)] = (trip, fn, fn.__code__)
            fn.__code__ = trip
        _armers[id(fn)] = count + 1


def _disarm(fn) -> None:
    with _lock:
        count = _armers[id(fn)] - 1
        if count:
            _armers[id(fn)] = count
            return
        del _armers[id(fn)]
        trip = fn.__code__
        fn.__code__ = _swapped.pop(id(trip))[2]


@contextmanager
def tripwire(functions: Iterable):
    """Within the block, calling any of `functions` from this thread records the call and raises ReferenceCalled."""
    chosen = []
    for fn in functions:
        if guardable(fn) and all(fn is not f for f in chosen):
            chosen.append(fn)
    armed = set(getattr(_local, "armed", ()))
    try:
        for fn in chosen:
            _arm(fn)
        _local.armed = armed | {id(fn) for fn in chosen}
        yield
    finally:
        _local.armed = armed
        for fn in chosen:
            if id(fn) in _armers:
                _disarm(fn)
