"""`fidelity()`: predicted vs published measured time for every row of a published-measurement set.

from nkidev.fidelity.api import fidelity
report = fidelity()                                  # the bundled set, examples/fidelity/measurements.toml
report = fidelity(calibration="none")                # the documented constants only
report["summary"]["mape_percent"], report["progressions"][name]["kendall_tau"], report["rows"]

Each kernel is emulated once per target without numerics and scheduled by the cost model on the (calibrated)
target; published numbers are never fitted here (`nkidev calibrate` does that, on the calibration split).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from nkidev.calibrate import fit as fitting
from nkidev.calibrate import measurements as measured
from nkidev.calibrate import stats
from nkidev.errors import NkiError, NkiUsageError
from nkidev.examples import examples_dir
from nkidev.hardware.calibration import calibrated_target, calibration_choice, load_calibration


def _file_target(calibration: str | None) -> str | None:
    """The target a chosen calibration file was fitted for (None for "default", "none" or no calibration)."""
    chosen, _ = calibration_choice(calibration)
    if chosen is None or chosen.lower() in ("none", "default"):
        return None
    return load_calibration(chosen).target


def default_set() -> Path:
    return examples_dir() / "fidelity" / "measurements.toml"


def _stats(rows: list[dict]) -> dict:
    p, m = [r["predicted_ns"] for r in rows], [r["measured_ns"] for r in rows]
    return {
        "rows": len(rows),
        "mape_percent": _r(stats.mape(p, m)),
        "median_ape_percent": _r(stats.median_ape(p, m)),
    }


def _progression(rows: list[dict]) -> dict:
    rows = sorted(rows, key=lambda r: r["order"])
    p, m = [r["predicted_ns"] for r in rows], [r["measured_ns"] for r in rows]
    by_prediction = [r["order"] for r in sorted(rows, key=lambda r: -r["predicted_ns"])]
    by_measurement = [r["order"] for r in sorted(rows, key=lambda r: -r["measured_ns"])]
    return {
        **_stats(rows),
        "target": rows[0]["target"],
        "split": rows[0]["split"],
        "kendall_tau": _r(stats.kendall_tau(p, m)),
        "top1_agrees": stats.top1_agrees(p, m),
        "predicted_order": by_prediction,  # published order numbers, slowest predicted first
        "measured_order": by_measurement,
    }


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def fidelity(
    measurement_set: str | Path | None = None,
    calibration: str | None = None,
    progression: str | None = None,
    split: str | None = None,
    progress: Callable[[dict], None] | None = None,
) -> dict:
    """Predict every row of `measurement_set` (default: the bundled set) with the cost model on its target
    (`calibration` as for `nkidev profile`: a file, "default", "none", or None for $NKIDEV_CALIBRATION / the
    user config); only rows of `progression` (a substring) or `split` when given. A calibration file is fitted
    for one target: it applies to that target's rows, and the other targets' rows use the documented constants."""
    emit = progress or (lambda event: None)
    path = Path(measurement_set) if measurement_set is not None else default_set()
    rows = [m for m in measured.read([path], split) if progression is None or progression.lower() in m.progression.lower()]
    if not rows:
        raise NkiUsageError("err_invalid_argument", f"no measurement of {path} matches", "check --progression / --split")
    t0 = time.perf_counter()
    predicted: dict[int, float] = {}
    errors: dict[int, dict] = {}
    targets: dict[str, str] = {}
    file_target = _file_target(calibration)
    if file_target is not None and all(m.target != file_target for m in rows):
        raise NkiUsageError(
            "err_bad_calibration_file",
            f"{calibration} is fitted for {file_target} and no selected measurement is on {file_target}",
            f"pass a calibration file for {', '.join(sorted({m.target for m in rows}))}, or select {file_target} rows",
        )
    for i, m in enumerate(rows):
        if file_target is not None and m.target != file_target:
            hw = calibrated_target(m.target, "none")
            targets[m.target] = f"none (documented constants: the calibration file is for {file_target})"
        else:
            hw = calibrated_target(m.target, calibration)
            targets[m.target] = hw.calibration or "none (documented constants)"
        try:
            predicted[i] = fitting.simulate([m], hw, emit)(hw, [0])[0]
        except NkiError as e:  # a row the emulator rejects is reported, not fatal: the others still count
            errors[i] = {"name": e.name, "message": e.message, "location": e.location}
    table = [
        {
            "label": m.label,
            "progression": m.progression,
            "order": m.order,
            "split": m.split,
            "target": m.target,
            "kernel": m.spec,
            "case": m.case,
            "measured_ns": m.measured_ns,
            "predicted_ns": round(predicted[i], 1) if i in predicted else None,
            "ratio": round(predicted[i] / m.measured_ns, 4) if i in predicted else None,
            "ape_percent": round(stats.ape(predicted[i], m.measured_ns), 3) if i in predicted else None,
            "error": errors.get(i),
            "source": m.source,
        }
        for i, m in enumerate(rows)
    ]
    failed = [r for r in table if r["error"]]
    table_all, table = table, [r for r in table if not r["error"]]
    progressions = {
        name: _progression([r for r in table if r["progression"] == name]) for name in dict.fromkeys(r["progression"] for r in table)
    }
    if not table:
        raise NkiUsageError(
            "err_invalid_argument", f"no row of {path} could be predicted: {failed[0]['error']['message']}", "see the rows' errors"
        )
    taus = [p["kendall_tau"] for p in progressions.values() if p["kendall_tau"] is not None]
    top1 = [p["top1_agrees"] for p in progressions.values()]
    summary = {
        **_stats(table),
        "mean_kendall_tau": _r(sum(taus) / len(taus)) if taus else None,
        "top1_agreement": f"{sum(top1)}/{len(top1)}",
        "progressions_in_published_order": sum(p["predicted_order"] == sorted(p["predicted_order"]) for p in progressions.values()),
    }
    splits = {s: _stats([r for r in table if r["split"] == s]) for s in dict.fromkeys(r["split"] for r in table)}
    summary["rows_not_predicted"] = len(failed)
    return {
        "measurement_set": str(path),
        "calibration": targets,
        "summary": summary,
        "splits": splits,
        "progressions": progressions,
        "rows": table_all,
        "seconds": round(time.perf_counter() - t0, 1),
    }
