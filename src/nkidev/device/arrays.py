"""Kernel inputs and outputs as one .npz file the SDK tools exchange with nkidev (bfloat16 and fp8 included).

NumPy's format cannot name ml_dtypes types, so such an array is stored as its raw bits with a `KEY__dtype`
entry naming the type; Python scalars are 0-d arrays with a `KEY__scalar` marker. Keys are arg0, arg1, ...
(inputs) and out0, out1, ... (outputs).
"""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np

_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def save(path: Path, values: list, prefix: str) -> None:
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
    np.savez(path, **entries)


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
