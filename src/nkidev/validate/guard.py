"""A tripwire on the task's reference() and cases() while the kernel runs.

The function objects keep their identity but their code is swapped for code that records the call
and raises, so every path to them trips it: the name, an alias bound at import time, getattr on the
module, globals()[...]. The call is recorded before raising, so a kernel that swallows the exception
is still caught.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from contextlib import contextmanager


class ReferenceCalled(Exception):
    """Raised inside the kernel when it calls a guarded function."""


calls: list[tuple[str, str | None]] = []  # (function name, "file.py:LINE" of the kernel's call)


def _trip(*args, **kwargs):
    import nkidev.validate.guard as guard  # resolved through builtins: this code runs with the task's globals

    guard.tripped()


def tripped() -> None:
    code = sys._getframe(1).f_code
    caller = sys._getframe(2)
    calls.append((code.co_name, f"{caller.f_code.co_filename}:{caller.f_lineno}"))
    raise ReferenceCalled(f"the kernel called {code.co_name}()")


def guardable(fn) -> bool:
    return getattr(fn, "__code__", None) is not None and getattr(fn, "__closure__", None) is None


@contextmanager
def tripwire(functions: Iterable):
    """Within the block, calling any of `functions` records the call and raises ReferenceCalled."""
    saved = []
    try:
        for fn in functions:
            if guardable(fn) and all(fn is not f for f, _ in saved):
                saved.append((fn, fn.__code__))
                fn.__code__ = _trip.__code__.replace(co_name=fn.__name__, co_qualname=fn.__qualname__)
        yield
    finally:
        for fn, code in saved:
            fn.__code__ = code
