"""Fit a target's free constants to measured kernel times by re-simulating the kernels.

Every kernel is emulated once (no numerics); each candidate set of constants only reschedules the traces
(`costmodel.schedule`), which is what the constants change. The loss is the mean squared log ratio of
predicted to measured time (so a 2x miss on a 10 us kernel counts as much as on a 10 ms one), plus a weak
pull towards the documented value that settles flat directions. The search is coordinate-wise in log space
over each constant's [low, high] from the target's `[calibration]` section: a coarse grid, then a
golden-section refinement, for a few sweeps. A constant none of the kernels is sensitive to keeps its
documented value and is reported as not identifiable from this data.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from nkidev.calibrate.measurements import Measurement
from nkidev.hardware import Target, constant_value, with_overrides

PRIOR_WEIGHT = 1e-3  # pull towards the documented value, per constant, in units of its log range squared
GRID = 7  # coarse points per constant per sweep
REFINE = 5  # golden-section steps around the best grid point
SENSITIVE = 1e-4  # a constant whose full range moves no prediction by this much (log ratio) is not identifiable
GOLDEN = (math.sqrt(5) - 1) / 2


@dataclass(frozen=True)
class Free:
    key: str  # "section.key"
    low: float
    high: float
    default: float
    integer: bool

    def value(self, u: float) -> float:
        """Position u in [0, 1] of the log range -> the constant's value."""
        v = self.low * (self.high / self.low) ** min(1.0, max(0.0, u))
        return float(round(v)) if self.integer else v

    def position(self, value: float) -> float:
        return 0.0 if self.high == self.low else math.log(value / self.low) / math.log(self.high / self.low)


def free_constants(target: Target, only: list[str] | None = None) -> list[Free]:
    """The target's free constants (all, or the `only` keys, which must be among them)."""
    out = []
    for key, low, high in target.free_constants:
        value = constant_value(target, key)
        out.append(Free(key, low, high, float(value), isinstance(value, int)))
    if only:
        known = {f.key for f in out}
        unknown = [k for k in only if k not in known]
        if unknown:
            from nkidev.errors import NkiUsageError

            raise NkiUsageError(
                "err_invalid_argument",
                f"--fit {unknown[0]} is not a free constant of {target.name}",
                f"choose from {', '.join(sorted(known))} (the [calibration] section of {target.source})",
            )
        out = [f for f in out if f.key in only]
    return out


def overrides(values: dict[str, float], frees: list[Free]) -> dict[str, dict[str, float]]:
    """{section: {key: value}} of the constants that differ from the documented value."""
    out: dict[str, dict[str, float]] = {}
    for f in frees:
        v = values[f.key]
        if v != f.default:
            section, _, key = f.key.partition(".")
            out.setdefault(section, {})[key] = int(v) if f.integer else round(v, 6)
    return out


class Objective:
    """Loss of a set of constant values over a subset of the measurements (memoized)."""

    def __init__(self, base: Target, frees: list[Free], predict: Callable[[Target, list[int]], list[float]], measured: list[float]):
        self.base, self.frees, self.predict, self.measured = base, frees, predict, measured
        self.evaluations = 0
        self._memo: dict[tuple, dict[int, float]] = {}

    def target(self, values: dict[str, float]) -> Target:
        return with_overrides(self.base, overrides(values, self.frees), "<calibration fit>")

    def predictions(self, values: dict[str, float], rows: list[int]) -> list[float]:
        """Predicted ns of `rows` (memoized per row: leave-one-out subsets reuse each other's schedules)."""
        key = tuple(round(values[f.key], 9) for f in self.frees)
        known = self._memo.setdefault(key, {})
        todo = [r for r in rows if r not in known]
        if todo:
            self.evaluations += len(todo)
            known.update(zip(todo, self.predict(self.target(values), todo)))
        return [known[r] for r in rows]

    def loss(self, values: dict[str, float], rows: list[int]) -> float:
        predicted = self.predictions(values, rows)
        fit = sum(math.log(max(p, 1e-3) / self.measured[r]) ** 2 for p, r in zip(predicted, rows)) / max(1, len(rows))
        prior = sum((math.log(values[f.key] / f.default) / math.log(f.high / f.low)) ** 2 for f in self.frees if f.high > f.low)
        return fit + PRIOR_WEIGHT * prior


def sensitive(obj: Objective, values: dict[str, float], rows: list[int]) -> list[Free]:
    """The constants whose whole range moves some prediction of `rows`."""
    out = []
    for f in obj.frees:
        low = obj.predictions({**values, f.key: f.low}, rows)
        high = obj.predictions({**values, f.key: f.high}, rows)
        if any(abs(math.log(max(a, 1e-3) / max(b, 1e-3))) > SENSITIVE for a, b in zip(low, high)):
            out.append(f)
    return out


def _line_search(obj: Objective, values: dict[str, float], f: Free, rows: list[int], local: bool = False) -> dict[str, float]:
    """Best value of one constant: a coarse grid over its whole range (or, `local`, only the grid cells next
    to the current value), then golden-section steps in the best cell pair."""

    def at(u: float) -> tuple[float, dict[str, float]]:
        candidate = {**values, f.key: f.value(u)}
        return obj.loss(candidate, rows), candidate

    best_loss, best = obj.loss(values, rows), values
    step = 1 / (GRID - 1)
    u_best = f.position(values[f.key])
    if not local:
        (grid_loss, grid_best), u_grid = min(((at(i * step), i * step) for i in range(GRID)), key=lambda s: s[0][0])
        if grid_loss < best_loss:
            best_loss, best, u_best = grid_loss, grid_best, u_grid
    a, b = max(0.0, u_best - step), min(1.0, u_best + step)
    c, d = b - GOLDEN * (b - a), a + GOLDEN * (b - a)
    (lc, vc), (ld, vd) = at(c), at(d)
    for _ in range(REFINE):
        if lc < ld:
            b, d, ld, vd = d, c, lc, vc
            c = b - GOLDEN * (b - a)
            lc, vc = at(c)
        else:
            a, c, lc, vc = c, d, ld, vd
            d = a + GOLDEN * (b - a)
            ld, vd = at(d)
    for loss, candidate in ((lc, vc), (ld, vd)):
        if loss < best_loss:
            best_loss, best = loss, candidate
    return best


def fit(
    obj: Objective, rows: list[int], start: dict[str, float] | None = None, sweeps: int = 3, local: bool = False
) -> tuple[dict[str, float], list[Free]]:
    """Best constant values for `rows` (and the constants the rows are sensitive to); insensitive constants
    keep their documented value. `local`: search only near `start`."""
    values = {f.key: f.default for f in obj.frees}
    movable = sensitive(obj, values, rows)
    if start:
        values.update({f.key: start[f.key] for f in movable})
    for _ in range(sweeps):
        before = obj.loss(values, rows)
        for f in movable:
            values = _line_search(obj, values, f, rows, local=local and start is not None)
        if before - obj.loss(values, rows) < 1e-9:
            break
    return values, movable


def leave_one_out(obj: Objective, rows: list[int], full: dict[str, float]) -> list[float]:
    """For each row: its prediction from constants fitted to the other rows, searched near `full` (every
    constant the other rows cannot see is reset to its documented value, so the left-out row's information
    enters only through the starting point)."""
    out = []
    for r in rows:
        others = [o for o in rows if o != r]
        if not others:
            out.append(obj.predictions({f.key: f.default for f in obj.frees}, [r])[0])
            continue
        values, _ = fit(obj, others, start=full, sweeps=2, local=True)
        out.append(obj.predictions(values, [r])[0])
    return out


def simulate(measurements: list[Measurement], base: Target, progress: Callable[[dict], None]) -> Callable[[Target, list[int]], list[float]]:
    """Emulate each measurement's kernel once (no numerics) and return predict(target, rows) -> kernel ns."""
    from nkidev.costmodel import schedule
    from nkidev.emulator.context import EmulatorOptions
    from nkidev.emulator.jit import run
    from nkidev.taskfile import kernel_spec, load_task

    traces = {}
    for i, m in enumerate(measurements):
        key = (m.spec, m.case)
        if key not in traces:
            progress({"event": "stage", "stage": f"emulating {m.spec} case {m.case} ({i + 1}/{len(measurements)})"})
            parsed = kernel_spec(m.spec)
            task = load_task(parsed.path)
            kernel = task.launch(parsed)
            cases = task.calls()
            if m.case >= len(cases):
                from nkidev.errors import NkiUsageError

                raise NkiUsageError(
                    "err_calibration_failed", f"{m.label}: {parsed.path} has {len(cases)} case(s), not case {m.case}", "fix the case index"
                )
            traces[key] = run(kernel, cases[m.case].args, cases[m.case].kwargs, options=EmulatorOptions(target=base, compute=False)).trace
    order = [traces[(m.spec, m.case)] for m in measurements]

    def predict(target: Target, rows: list[int]) -> list[float]:
        return [schedule(order[r], target).total_ns for r in rows]

    return predict
