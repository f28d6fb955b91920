"""Per-thread capture of what user code prints and warns, safe with several validations running at once.

`contextlib.redirect_stdout` and `warnings.catch_warnings` swap process-wide state: two threads validating
at the same time would mix each other's prints and leave `sys.stdout` redirected. Here one routing proxy
is installed while any thread captures; it sends a capturing thread's writes to that thread's buffer and
everyone else's to the stream that was there before, and is removed when the last capture ends.
Warnings are routed the same way through `warnings.showwarning`.
"""

from __future__ import annotations

import io
import sys
import threading
import warnings
from contextlib import contextmanager

_lock = threading.Lock()
_local = threading.local()
_users = 0
_saved: dict = {}


class _Router(io.TextIOBase):
    """Writes go to the calling thread's buffer while it captures, else to the original stream."""

    def __init__(self, original):
        self.original = original

    def _target(self):
        return getattr(_local, "stdout", None) or self.original

    def write(self, text: str) -> int:
        return self._target().write(text)

    def flush(self) -> None:
        self._target().flush()

    def isatty(self) -> bool:
        return False if getattr(_local, "stdout", None) else self.original.isatty()

    def __getattr__(self, name):  # encoding, fileno, buffer, ... of the original stream
        return getattr(self.original, name)


def _show(message, category, filename, lineno, file=None, line=None):
    caught = getattr(_local, "warnings", None)
    if caught is None:
        return _saved["showwarning"](message, category, filename, lineno, file, line)
    caught.append(warnings.WarningMessage(message, category, filename, lineno, file, line))


def _install() -> None:
    global _users
    with _lock:
        if _users == 0:
            _saved["stdout"] = sys.stdout
            _saved["showwarning"] = warnings.showwarning
            sys.stdout = _Router(sys.stdout)
            warnings.showwarning = _show
        _users += 1


def _uninstall() -> None:
    global _users
    with _lock:
        _users -= 1
        if _users == 0:
            if isinstance(sys.stdout, _Router):  # someone else replaced it since: leave theirs alone
                sys.stdout = _saved["stdout"]
            if warnings.showwarning is _show:
                warnings.showwarning = _saved["showwarning"]


@contextmanager
def captured():
    """Within the block, this thread's prints go to `out` (a StringIO) and its warnings to `caught`."""
    out, caught = io.StringIO(), []
    previous = getattr(_local, "stdout", None), getattr(_local, "warnings", None)
    _install()
    _local.stdout, _local.warnings = out, caught
    try:
        yield out, caught
    finally:
        _local.stdout, _local.warnings = previous
        _uninstall()
