"""What parent and child say to each other: one JSON object per line.

parent -> child (stdin, one line): {"function": "package.module:name", "kwargs": {...}, "memory_bytes": N | null}
child -> parent (the message pipe): {"kind": "ready"} once warm, {"kind": "event", "event": {...}} per progress
event, then exactly one {"kind": "result", "value": ...} or {"kind": "error", "error": {...}}.

JSON keeps the exchange to plain data (NaN and infinities pass as JSON's extensions); named errors travel
as their `to_dict()` plus the class, so the parent re-raises the same class with the same exit code.
"""

from __future__ import annotations

import json

from nkidev.errors import KernelRuleError, NkiError, NkiNotSupportedError, NkiUsageError

_CLASSES = {cls.__name__: cls for cls in (NkiError, NkiUsageError, KernelRuleError, NkiNotSupportedError)}


def _default(o):
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if hasattr(o, "to_dict"):
        return o.to_dict()
    if isinstance(o, tuple | set | frozenset):
        return list(o)
    return str(o)


def encode(message: dict) -> bytes:
    return (json.dumps(message, default=_default) + "\n").encode("utf-8")


def decode(line: bytes) -> dict | None:
    """One message, or None for a line that is not one (the parent ignores it rather than trusting it)."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message if isinstance(message, dict) and isinstance(message.get("kind"), str) else None


def error_to_wire(error: NkiError) -> dict:
    return {
        **error.to_dict(),
        "class": type(error).__name__ if type(error).__name__ in _CLASSES else "NkiError",
        "user_traceback": getattr(error, "user_traceback", None),
    }


def error_from_wire(data: dict) -> NkiError:
    cls = _CLASSES.get(str(data.get("class")), NkiError)
    error = cls(str(data.get("name", "err_internal")), str(data.get("message", "")), data.get("fix"), data.get("location"))
    if isinstance(data.get("user_traceback"), str):
        error.user_traceback = data["user_traceback"]  # NKIDEV_DEBUG=1 prints the kernel's traceback in the parent too
    return error
