"""Tolerances: what "close enough to the float64 reference" means for each expected output dtype.

The defaults come from the dtype the task expects (not from whatever dtype the kernel chose to return,
or a kernel could buy itself fp8 tolerances by returning fp8). rtol is a few units of the dtype's
rounding error. The default atol is scaled by max(1, RMS of the reference): rounding errors grow with
the magnitude of the values a result is computed from (a K=4096 matmul output near zero carries the
error of its large partial sums), not with the magnitude of that one output. `rel_l2` (max relative L2
error) defaults to rtol, so an output that is elementwise inside a loose atol but wrong everywhere
(all zeros, a constant) still fails. Override per task with
`TOLERANCE = dict(atol=..., rtol=..., rel_l2=..., cosine=..., precision="bfloat16")` or per run
with --atol/--rtol.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from nkidev.emulator.dtypes import lookup
from nkidev.errors import NkiUsageError

# expected dtype -> (atol, rtol); unit roundoff u = 2**-(mantissa_bits + 1), rtol ~ 2-5 u
DEFAULTS: dict[str, tuple[float, float]] = {
    "float32": (1e-5, 1e-4),
    "tfloat32": (1e-3, 2e-3),
    "float16": (1e-3, 2e-3),
    "bfloat16": (1e-2, 2e-2),
    "float8_e4m3": (6.25e-2, 1.25e-1),
    "float8_e4m3fn": (6.25e-2, 1.25e-1),
    "float8_e5m2": (1.25e-1, 2.5e-1),
}
EXACT = (0.0, 0.0)  # integer and bool outputs
KEYS = ("atol", "rtol", "rel_l2", "cosine", "precision")


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float
    rel_l2: float  # largest allowed ||out - ref|| / ||ref||; inf = not checked
    cosine: float | None  # smallest allowed cosine similarity; None = not checked
    precision: str | None  # least precise float dtype the kernel may compute or store in (None: no floats)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["rel_l2"] = None if math.isinf(self.rel_l2) else self.rel_l2
        return d


def dtype_name(dtype) -> str:
    """NKI name of a NumPy/ml_dtypes dtype ("float32", "bfloat16", ...); NumPy's name when NKI has none."""
    found = lookup(dtype)
    return found.name if found is not None else np.dtype(dtype).name


def is_float(dtype) -> bool:
    found = lookup(dtype)
    return found.kind == "float" if found is not None else np.dtype(dtype).kind == "f"


def mantissa_bits(name: str) -> int:
    if name == "float64":
        return 52
    found = lookup(name)
    return found.mantissa_bits if found is not None else 0


def expected_dtype(declared, inputs: tuple) -> str | None:
    """The output dtype the task asks for; None for integer outputs.

    It is the dtype of the largest float array input (the tensor the kernel works on, not a small scale or weight
    vector; the more precise on ties; float32 when there are none), unless the
    reference returns a float dtype narrower than float32 (`.astype(ml_dtypes.bfloat16)`): it receives float64
    inputs, so that is a deliberate declaration. A float32 result is not: `x.float()` is a common torch idiom."""
    if declared is not None and not is_float(declared):
        return None
    if declared is not None and mantissa_bits(dtype_name(declared)) < mantissa_bits("float32"):
        return dtype_name(declared)
    floats = [
        (x.size, mantissa_bits(dtype_name(x.dtype)), dtype_name(x.dtype)) for x in inputs if isinstance(x, np.ndarray) and is_float(x.dtype)
    ]
    return max(floats)[2] if floats else "float32"


def check_spec(spec, where: str) -> dict:
    """Validate a TOLERANCE dict (or None) and return it as a plain dict."""
    if spec is None:
        return {}
    if not isinstance(spec, dict):
        raise NkiUsageError(
            "err_bad_task_file",
            f"{where}: TOLERANCE is a {type(spec).__name__}, not a dict",
            "write TOLERANCE = dict(atol=1e-3, rtol=1e-3)",
        )
    unknown = sorted(set(spec) - set(KEYS))
    if unknown:
        raise NkiUsageError("err_bad_task_file", f"{where}: unknown TOLERANCE keys {unknown}", f"use only {', '.join(KEYS)}")
    for key in ("atol", "rtol", "rel_l2", "cosine"):
        if spec.get(key) is not None:
            check_value(key, spec[key], f"{where}: TOLERANCE", "err_bad_task_file")
    if spec.get("precision") is not None and lookup(spec["precision"]) is None:
        raise NkiUsageError(
            "err_bad_task_file",
            f"{where}: TOLERANCE precision {spec['precision']!r} is not an NKI dtype",
            "use a name such as 'float32', 'bfloat16', 'float16', 'float8_e4m3'",
        )
    return dict(spec)


def check_value(key: str, value, where: str, error: str = "err_invalid_argument") -> float:
    """A tolerance must be a finite number >= 0 (cosine: within [-1, 1]); NaN would make every comparison pass."""
    ok = isinstance(value, int | float | np.floating | np.integer) and not isinstance(value, bool) and math.isfinite(float(value))
    if ok:
        ok = -1.0 <= float(value) <= 1.0 if key == "cosine" else float(value) >= 0
    if not ok:
        allowed = "a number in [-1, 1]" if key == "cosine" else "a finite number >= 0"
        raise NkiUsageError(
            error,
            f"{where}: {key}={value!r} is not {allowed}",
            f"set {key} to {allowed}, e.g. {key}=1e-3" if key != "cosine" else "set cosine to e.g. 0.999",
        )
    return float(value)


def resolve(expected: str | None, spec: dict, atol: float | None = None, rtol: float | None = None, scale: float = 1.0) -> Tolerance:
    """Flags beat TOLERANCE, TOLERANCE beats the expected dtype's defaults; `scale` (the reference's RMS)
    multiplies the default atol only, when it is above 1."""
    d_atol, d_rtol = DEFAULTS.get(expected, DEFAULTS["float32"]) if expected else EXACT
    d_atol *= max(1.0, scale) if math.isfinite(scale) else 1.0
    atol = float(atol if atol is not None else spec.get("atol", d_atol))
    rtol = float(rtol if rtol is not None else spec.get("rtol", d_rtol))
    rel_l2 = spec.get("rel_l2")
    rel_l2 = float(rel_l2) if rel_l2 is not None else (rtol if rtol > 0 else math.inf)
    cosine = spec.get("cosine")
    precision = spec.get("precision") or expected
    return Tolerance(atol, rtol, rel_l2, None if cosine is None else float(cosine), dtype_name(precision) if precision else None)
