"""Old against new: run the original and the migrated kernels of a task file on its cases and compare outputs.

Each output is `identical` (same bits), `within tolerance` (the dtype's default tolerance, or the file's
TOLERANCE) or a `mismatch`; the file's status is the worst of them. The original runs under the version it was
written for (legacy kernels through the legacy front end, 0.6 kernels with --nki-version 0.6).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from nkidev.case import Case
from nkidev.emulator import versions
from nkidev.emulator.jit import run
from nkidev.errors import NkiError
from nkidev.taskfile import load_task
from nkidev.validate.inputs import copy_case
from nkidev.validate.reference import outputs_of
from nkidev.validate.tolerance import check_spec, dtype_name, resolve

_RANK = {"identical": 0, "within tolerance": 1, "mismatch": 2, "error": 3}


def compare(path: Path, new_source: str, kind: str) -> dict:
    old_version = versions.VERSIONS[0] if kind.startswith("0.6") else None
    try:
        with versions.scope(old_version):
            old = load_task(path)
    except NkiError as e:
        return {"status": "error", "reason": f"the original file does not load: {e}", "kernels": []}
    if not callable(old.attr("cases")):
        return {"status": "not validated", "reason": f"{path.name} has no cases(): nothing to run old and new on", "kernels": []}
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.migrated.", suffix=".py", dir=path.parent)
    tmp_path = Path(tmp)
    try:
        with open(fd, "w", encoding="utf-8") as f:
            f.write(new_source)
        try:
            with versions.scope(versions.NEWEST):
                new = load_task(tmp_path)
        except NkiError as e:
            return {"status": "error", "reason": f"the migrated file does not load: {e.message}", "kernels": []}
        return _compare_tasks(old, new, old_version)
    finally:
        tmp_path.unlink(missing_ok=True)


def _compare_tasks(old, new, old_version) -> dict:
    spec = check_spec(old.attr("TOLERANCE"), str(old.path))
    cases = old.calls()
    rows = []
    for name, kernel in old.kernels.items():
        if name not in new.kernels:
            rows.append({"kernel": name, "case": None, "status": "error", "reason": "not in the migrated file"})
            continue
        for i, case in enumerate(cases):
            rows.append(_compare_case(name, i, kernel, new.kernels[name], case, spec, old_version))
    status = max((r["status"] for r in rows), key=_RANK.__getitem__, default="not validated")
    return {"status": status, "kernels": rows}


def _outputs(kernel, case: Case, version) -> list:
    args = copy_case(case)  # each kernel gets its own copies: one that writes an input must not change the other's
    with versions.scope(version):
        return outputs_of(run(kernel, args.args, args.kwargs).outputs)


def _compare_case(name, i, old_k, new_k, case, spec, old_version) -> dict:
    row = {"kernel": name, "case": i}
    try:
        before = _outputs(old_k, case, old_version)
    except Exception as e:  # noqa: BLE001 - report, do not crash the migration
        return row | {"status": "error", "reason": f"the original kernel raised {type(e).__name__}: {e}"}
    try:
        after = _outputs(new_k, case, versions.NEWEST)
    except Exception as e:  # noqa: BLE001
        return row | {"status": "error", "reason": f"the migrated kernel raised {type(e).__name__}: {e}"}
    if len(before) != len(after):
        return row | {"status": "mismatch", "reason": f"{len(before)} outputs before, {len(after)} after"}
    worst, max_diff, nan_only = "identical", 0.0, []
    for b, a in zip(before, after):
        b, a = np.asarray(b), np.asarray(a)
        if b.shape != a.shape and b.size == a.size:
            a = a.reshape(b.shape)
        if b.shape != a.shape:
            return row | {"status": "mismatch", "reason": f"output shape {b.shape} became {a.shape}"}
        if b.dtype == a.dtype and b.tobytes() == a.tobytes():
            continue
        b64, a64 = b.astype(np.float64), a.astype(np.float64)
        diff = np.abs(a64 - b64)
        compared = diff[~np.isnan(diff)]  # where both sides are numbers (NaN on one side is the reason below)
        max_diff = max(max_diff, float(compared.max()) if compared.size else 0.0)
        tol = resolve(dtype_name(b.dtype), spec, scale=max(1.0, float(np.sqrt(np.mean(b64 * b64))) if b64.size else 1.0))
        same_nan = np.isnan(a64) == np.isnan(b64)
        close = np.all(same_nan & ((diff <= tol.atol + tol.rtol * np.abs(b64)) | np.isnan(b64)))
        worst = max(worst, "within tolerance" if close else "mismatch", key=_RANK.__getitem__)
        if not np.all(same_nan):  # the max difference skips NaN: say where one side alone has them
            nan_only.append(f"{int(np.isnan(b64).sum())} NaN before, {int(np.isnan(a64).sum())} after (of {b64.size})")
    row = row | {"status": worst, "max_abs_diff": max_diff}
    return row | {"reason": "; ".join(nan_only)} if nan_only else row
