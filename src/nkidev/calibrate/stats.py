"""Error and ranking statistics of predicted vs measured kernel times."""

from __future__ import annotations

from collections.abc import Sequence


def ape(predicted: float, measured: float) -> float:
    """Absolute percentage error of one prediction (percent)."""
    return 100.0 * abs(predicted - measured) / measured


def mape(predicted: Sequence[float], measured: Sequence[float]) -> float | None:
    """Mean absolute percentage error (percent); None for no rows."""
    errors = [ape(p, m) for p, m in zip(predicted, measured, strict=True)]
    return sum(errors) / len(errors) if errors else None


def median_ape(predicted: Sequence[float], measured: Sequence[float]) -> float | None:
    errors = sorted(ape(p, m) for p, m in zip(predicted, measured, strict=True))
    if not errors:
        return None
    mid = len(errors) // 2
    return errors[mid] if len(errors) % 2 else (errors[mid - 1] + errors[mid]) / 2


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b between two orderings (1: same order, -1: reversed); None with fewer than 2 rows or
    when either side is constant."""
    n = len(x)
    concordant = discordant = ties_x = ties_y = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                ties_x += 1
            elif dy == 0:
                ties_y += 1
            elif (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
    denominator = ((concordant + discordant + ties_x) * (concordant + discordant + ties_y)) ** 0.5
    return (concordant - discordant) / denominator if denominator else None


def top1_agrees(predicted: Sequence[float], measured: Sequence[float]) -> bool | None:
    """Whether the fastest predicted row is the fastest measured one (None for no rows)."""
    if not predicted:
        return None
    return min(range(len(predicted)), key=predicted.__getitem__) == min(range(len(measured)), key=measured.__getitem__)
