"""Kernel inputs and outputs as one .npz file the SDK tools exchange with nkidev (bfloat16 and fp8 included).

NumPy's format cannot name ml_dtypes types, so such an array is stored as its raw bits with a `KEY__dtype`
entry naming the type; Python scalars are 0-d arrays with a `KEY__scalar` marker. Keys are arg0, arg1, ...
(positional inputs), kw0, kw1, ... (keyword inputs, their names in order in `kw__names`) and out0, out1, ...
(outputs). The names are a list of their own rather than part of the keys: a parameter name may hold `__`.
"""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np

from nkidev.case import Case

_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def save_case(path: Path, case: Case) -> None:
    """A case's inputs: arg0.. positional, kw0.. keyword (named by kw__names)."""
    entries = _entries(list(case.args), "arg")
    if case.kwargs:
        entries.update(_entries(list(case.kwargs.values()), "kw"))
        entries["kw__names"] = np.asarray(list(case.kwargs), dtype=str)
    np.savez(path, **entries)


def load_case(path: Path) -> Case:
    """The case `save_case` wrote."""
    with np.load(path, allow_pickle=False) as data:
        names = [str(n) for n in data["kw__names"]] if "kw__names" in data.files else []
    return Case(*load(path, "arg"), **dict(zip(names, load(path, "kw"))))


def save(path: Path, values: list, prefix: str) -> None:
    np.savez(path, **_entries(values, prefix))


def _entries(values: list, prefix: str) -> dict[str, np.ndarray]:
    entries: dict[str, np.ndarray] = {}
    for i, value in enumerate(values):
        key = f"{prefix}{i}"
        if not isinstance(value, np.ndarray):
            entries[key], entries[f"{key}__scalar"] = np.asarray(value), np.asarray(True)
        elif value.dtype.kind == "V" or value.dtype.type.__module__.startswith("ml_dtypes"):
            entries[key], entries[f"{key}__dtype"] = (
                np.ascontiguousarray(value).view(_BITS[value.dtype.itemsize]),
                np.asarray(value.dtype.name),
            )
        else:
            entries[key] = value
    return entries


def load(path: Path, prefix: str) -> list:
    with np.load(path, allow_pickle=False) as data:
        keys = sorted((k for k in data.files if k.startswith(prefix) and "__" not in k), key=lambda k: int(k[len(prefix) :]))
        out = []
        for key in keys:
            value = data[key]
            if f"{key}__dtype" in data.files:
                value = value.view(getattr(ml_dtypes, str(data[f"{key}__dtype"])))
            elif f"{key}__scalar" in data.files:
                value = value.item()
            out.append(value)
        return out
