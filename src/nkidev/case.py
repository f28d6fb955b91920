"""`Case(*args, **kwargs)`: one call of a task's kernel and of its reference, keyword arguments included.

A task file's `cases()` returns a list whose items are either a tuple of positional inputs, `(x, w, 0.5)`, or
a `Case(x, w, eps=1e-6, act="gelu")` when the kernel takes keyword arguments (compile-time constants, flags,
arrays by name). Every command calls `kernel(*case.args, **case.kwargs)` and `reference(...)` the same way.

Inputs are addressed by *slot*: the positional inputs in order, then the keyword inputs in the order the case
gives them (`values()`). Validation changes array slots (extra seeds, "each input changed on its own") and
passes every other slot -- numbers, strings, enums, bools, None -- unchanged.

A plain dict is not a case: `{"x": x, "eps": 1e-6}` reads as keyword arguments by name and
`{"args": [x], "kwargs": {...}}` as this class spelled out, and nkidev does not guess which one was meant
(`taskfile.case_list` names the error and says to write `Case(...)`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np


@dataclass(frozen=True, eq=False, init=False, repr=False)
class Case:
    """`Case(x, eps=1e-6)` calls `kernel(x, eps=1e-6)` and `reference(x, eps=1e-6)`."""

    args: tuple
    kwargs: dict

    # positional-only `self`: any keyword, even `args=` or `self=`, is one of the kernel's
    def __init__(self, /, *args, **kwargs):
        object.__setattr__(self, "args", args)
        object.__setattr__(self, "kwargs", kwargs)

    def call(self, fn: Callable):
        """`fn(*args, **kwargs)`."""
        return fn(*self.args, **self.kwargs)

    def values(self) -> list:
        """Every input, by slot: the positional ones, then the keyword ones."""
        return [*self.args, *self.kwargs.values()] if self.kwargs else list(self.args)

    def with_values(self, values: Sequence) -> Case:
        """The same call with these values in its slots (as many as `values()` has)."""
        n = len(self.args)
        return Case(*values[:n], **dict(zip(self.kwargs, values[n:])))

    def slot_names(self, params: Sequence[str]) -> list[str]:
        """A name per slot: the kernel's parameter names (`params`) for positional slots, then the keywords."""
        positional = [params[i] if i < len(params) else f"argument {i}" for i in range(len(self.args))]
        return positional + list(self.kwargs)

    def __repr__(self) -> str:
        parts = [brief(x) for x in self.args] + [f"{k}={brief(v)}" for k, v in self.kwargs.items()]
        return f"Case({', '.join(parts)})"


def brief(x) -> str:
    """An input for a message: an array as dtype[shape], anything else as its repr."""
    return f"{x.dtype}{list(x.shape)}" if isinstance(x, np.ndarray) else repr(x)


def describe(value):
    """A keyword input as plain JSON data: an array as {"dtype", "shape"}, a JSON number, string, bool or None as
    itself, an enum as `Type.NAME`, anything else (a tuple, a non-finite float) as its repr."""
    if isinstance(value, np.ndarray):
        return {"dtype": str(value.dtype), "shape": list(value.shape)}
    if isinstance(value, Enum):
        return f"{type(value).__name__}.{value.name}"
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float) and np.isfinite(value):
        return value
    return repr(value)
