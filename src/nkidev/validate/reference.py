"""Calling the task's reference on the CPU in float64 (NumPy, or PyTorch when the reference uses torch).

Float inputs (float32, bfloat16, fp8, ...) are widened to float64 exactly, so the reference is more precise
than any kernel; integer inputs and scalars pass unchanged. Keyword inputs (`Case(x, eps=1e-6, w=w)`) reach
the reference by keyword, widened the same way. A reference may *declare* a low-precision output
by returning that dtype, e.g. `.astype(ml_dtypes.bfloat16)` (see tolerance.expected_dtype); integer results
declare an exact integer output.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

import numpy as np

from nkidev.case import Case
from nkidev.emulator.dtypes import lookup
from nkidev.errors import NkiError
from nkidev.validate.capture import captured
from nkidev.validate.inputs import as_numpy
from nkidev.validate.tolerance import is_float


@dataclass(frozen=True)
class Expected:
    value: np.ndarray  # float64 for float outputs, the reference's own dtype otherwise
    declared: np.dtype | None  # the dtype the reference returned, when it is not float64


def widen(x):
    if isinstance(x, np.ndarray):
        return x.astype(np.float64) if is_float(x.dtype) else x.copy()
    return x


def uses_torch(fn) -> bool:
    """True when the reference's code refers to torch (torch, torch.nn.functional as F, torch.softmax, ...)."""
    if "torch" not in sys.modules:
        return False
    code, scope = getattr(fn, "__code__", None), getattr(fn, "__globals__", {})
    if code is None:
        return False
    for name in code.co_names:
        obj = scope.get(name)
        module = getattr(obj, "__name__", "") if type(obj).__name__ == "module" else getattr(obj, "__module__", "")
        if str(module).split(".")[0] == "torch":
            return True
    return False


def _torch_in(x):
    import torch

    return torch.from_numpy(x) if isinstance(x, np.ndarray) else x


def _torch_case(case: Case) -> Case:
    return case.with_values([_torch_in(x) for x in case.values()])


def _torch_retry(reference, args: Case):
    try:
        return _invoke(reference, _torch_case(args))
    except (Exception, SystemExit):  # noqa: BLE001 - the NumPy attempt's error is the one reported
        return None


def outputs_of(value) -> list:
    """A kernel's or reference's return value as a list of outputs."""
    return list(value) if isinstance(value, tuple | list) else [value]


def _invoke(reference, args: Case):
    # NaN/Inf results are reported by count, not as warnings; prints would break --json
    with np.errstate(all="ignore"), captured():
        return args.call(reference)


def call(reference, case: Case, where: str) -> list[Expected]:
    """Run the reference on one case (its keyword inputs too); raise err_reference_failed if it raises or
    returns NaN/Inf.

    A reference that names torch gets torch float64 tensors. One that does not but fails on NumPy arrays
    while torch is loaded (`x.float().sigmoid()` names no torch object) is retried with torch tensors."""
    args = case.with_values([widen(x) for x in case.values()])
    torch_first = uses_torch(reference)
    try:
        value = _invoke(reference, _torch_case(args) if torch_first else args)
    except (Exception, SystemExit) as e:  # noqa: BLE001 - any failure in user code (exit() too) is reported, never a traceback
        value = _torch_retry(reference, args) if not torch_first and "torch" in sys.modules else None
        if value is None:
            raise NkiError(
                "err_reference_failed", f"{where}: {_name(reference)}() raised {type(e).__name__}: {e}", None, _location_in(e, reference)
            ) from None
    expected = []
    for i, out in enumerate(outputs_of(value)):
        arr = np.asarray(as_numpy(out))
        if lookup(arr.dtype) is None and arr.dtype.kind not in "biuf":
            raise NkiError(
                "err_reference_failed",
                f"{where}: {_name(reference)}() output {i} is a {type(out).__name__} of dtype {arr.dtype}, not a numeric array",
                "return an array, or a tuple of arrays in the order the kernel returns its outputs",
            )
        declared = None if arr.dtype == np.float64 else arr.dtype
        if is_float(arr.dtype):
            arr = arr.astype(np.float64)
            # a NaN/Inf anywhere makes the sum NaN/Inf (one pass, no mask); only then, or when finite values
            # overflow it, are they counted
            with np.errstate(all="ignore"):
                total = float(np.add.reduce(arr, axis=None))
            bad = 0 if math.isfinite(total) else int(arr.size - np.count_nonzero(np.isfinite(arr)))
            if bad:
                raise NkiError(
                    "err_reference_failed",
                    f"{where}: {_name(reference)}() output {i} has {bad} NaN/Inf "
                    f"values of {arr.size}; results can only be checked against finite values",
                    None,
                )
        expected.append(Expected(arr, declared))
    return expected


def _name(fn) -> str:
    return getattr(fn, "__name__", "reference")


def _location_in(e: BaseException, fn) -> str | None:
    """The deepest line of the reference's own file in the traceback ("file.py:LINE")."""
    path = getattr(getattr(fn, "__code__", None), "co_filename", None)
    tb, last = e.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == path:
            last = f"{path}:{tb.tb_lineno}"
        tb = tb.tb_next
    return last
