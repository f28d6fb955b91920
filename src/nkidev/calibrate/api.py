"""`calibrate(paths, target)`: fit the cost model's free constants to measured profiles.

from nkidev.calibrate.api import calibrate
result = calibrate(["prof/a", "prof/b", "times.json"], target="trn2", out="trn2-calibration.toml")
result["leave_one_out"]["mape_percent"], result["overrides"], result["rows"]

`nkidev profile|validate|analyze --calibration FILE` (or $NKIDEV_CALIBRATION, or `calibration = FILE` in the
user config) then applies the written file; see nkidev.hardware.calibration.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from nkidev.calibrate import fit as fitting
from nkidev.calibrate import measurements as measured
from nkidev.calibrate import stats
from nkidev.errors import NkiError, NkiUsageError
from nkidev.hardware import get_target
from nkidev.hardware.calibration import write_calibration

WORST_ROWS = 3


def _groups(rows: list[measured.Measurement]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, m in enumerate(rows):
        out.setdefault(m.progression or "(all)", []).append(i)
    return out


def summary(predicted: list[float], measured_ns: list[float], groups: dict[str, list[int]]) -> dict:
    """MAPE, median error, Kendall tau and top-1 agreement per progression of one set of predictions."""
    per = {}
    for name, idx in groups.items():
        p, m = [predicted[i] for i in idx], [measured_ns[i] for i in idx]
        per[name] = {"rows": len(idx), "mape_percent": _r(stats.mape(p, m)), "kendall_tau": _r(stats.kendall_tau(p, m))}
        per[name]["top1_agrees"] = stats.top1_agrees(p, m) if len(idx) > 1 else None
    return {
        "mape_percent": _r(stats.mape(predicted, measured_ns)),
        "median_ape_percent": _r(stats.median_ape(predicted, measured_ns)),
        "progressions": per,
    }


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def calibrate(
    paths: list[str | Path],
    target: str | None = None,
    out: str | Path | None = None,
    fit: list[str] | None = None,
    progress: Callable[[dict], None] | None = None,
    split: str | None = None,
    other_targets: bool = False,
    progression: str | None = None,
) -> dict:
    """Fit `target`'s free constants (all, or the `fit` keys) to the measurements in `paths` (profile
    directories, JSON summaries, published sets: only their `split` rows when given), report leave-one-out
    errors and, given `out`, write the calibration file. `progression`: only rows whose progression name contains
    it. `other_targets`: skip rows of other targets
    (a published set mixes targets) instead of refusing them."""
    emit = progress or (lambda event: None)
    base = get_target(target)
    rows = [m for m in measured.read(paths, split) if progression is None or progression.lower() in m.progression.lower()]
    others = [m for m in rows if m.target != base.name]
    if other_targets:
        rows, others = [m for m in rows if m.target == base.name], []
        if not rows:
            raise NkiUsageError("err_calibration_failed", f"no measurement of {base.name} in {', '.join(map(str, paths))}", "pass --target")
    if others:
        raise NkiUsageError(
            "err_calibration_failed",
            f"{others[0].label} was measured on {others[0].target}, not {base.name}",
            f"calibrate one target at a time: pass --target {others[0].target} with its own profiles",
        )
    frees = fitting.free_constants(base, fit)
    t0 = time.perf_counter()
    rows, predict, skipped = _simulate_each(rows, base, emit)
    measured_ns = [m.measured_ns for m in rows]
    obj = fitting.Objective(base, frees, predict, measured_ns)
    idx = list(range(len(rows)))
    defaults = {f.key: f.default for f in frees}
    emit({"event": "stage", "stage": f"fitting {len(frees)} constants to {len(rows)} measurements"})
    values, movable = fitting.fit(obj, idx)
    emit({"event": "stage", "stage": "leave-one-out"})
    loo = fitting.leave_one_out(obj, idx, values)
    before, after = obj.predictions(defaults, idx), obj.predictions(values, idx)
    groups = _groups(rows)
    table = [
        {
            **m.to_dict(),
            "predicted_before_ns": round(b, 1),
            "predicted_fit_ns": round(a, 1),
            "predicted_loo_ns": round(lo, 1),
            "loo_ape_percent": round(stats.ape(lo, m.measured_ns), 3),
        }
        for m, b, a, lo in zip(rows, before, after, loo)
    ]
    result = {
        "target": base.name,
        "measurements": len(rows),
        "constants": [
            {"key": f.key, "default": f.default, "fitted": values[f.key], "low": f.low, "high": f.high, "identifiable": f in movable}
            for f in frees
        ],
        "overrides": fitting.overrides(values, frees),
        "before": summary(before, measured_ns, groups),
        "fit": summary(after, measured_ns, groups),
        "leave_one_out": summary(loo, measured_ns, groups),
        "worst_rows": sorted(table, key=lambda r: -r["loo_ape_percent"])[:WORST_ROWS],
        "rows": table,
        "skipped": skipped,
        "schedules": obj.evaluations,
        "seconds": round(time.perf_counter() - t0, 2),
        "out": None,
    }
    if out is not None:
        result["out"] = str(write_calibration(out, base.name, result["overrides"], provenance(result), header=HEADER))
    return result


def _simulate_each(rows: list, base, emit) -> tuple[list, Callable, list[dict]]:
    """Emulate every row's kernel; a row the emulator rejects is left out (and listed), not fatal."""
    kept, predictors, skipped = [], [], []
    for m in rows:
        try:
            predictors.append(fitting.simulate([m], base, emit))
            kept.append(m)
        except NkiError as e:
            skipped.append({"label": m.label, "kernel": m.spec, "error": e.name, "message": e.message})
    if not kept:
        raise NkiUsageError(
            "err_calibration_failed", f"no measured kernel could be re-simulated: {skipped[0]['message']}", "fix the kernels"
        )

    def predict(target, idx: list[int]) -> list[float]:
        return [predictors[i](target, [0])[0] for i in idx]

    return kept, predict, skipped


HEADER = "# nkidev calibration: fitted values of the cost model's free constants (written by `nkidev calibrate`)."


def _relative(spec: str) -> str:
    """FILE::KERNEL with FILE relative to the working directory when it lies under it (a portable provenance)."""
    path, _, name = spec.partition("::")
    try:
        return f"{Path(path).resolve().relative_to(Path.cwd().resolve())}::{name}"
    except ValueError:
        return spec


def provenance(result: dict) -> dict:
    from nkidev import __version__

    return {
        "written_by": f"nkidev {__version__} calibrate",
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "method": "coordinate search in log space minimizing mean squared log(predicted/measured), re-simulating each kernel",
        "fitted": [c["key"] for c in result["constants"] if c["identifiable"]],
        "not_identifiable": [c["key"] for c in result["constants"] if not c["identifiable"]],
        "before_mape_percent": result["before"]["mape_percent"],
        "fit_mape_percent": result["fit"]["mape_percent"],
        "loo_mape_percent": result["leave_one_out"]["mape_percent"],
        "skipped": [f"{r['label']}: {r['error']}" for r in result["skipped"]],
        "fitted_to": [
            {"label": r["label"], "kernel": _relative(r["spec"]), "case": r["case"], "measured_ns": r["measured_ns"]}
            for r in result["rows"]
        ],
    }
