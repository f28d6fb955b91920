"""Interval merge and as-of lookups on sorted NumPy arrays.

The busy-interval merge (busy.sql's rule) and the TensorE gaps' "last producer before, first matmul after"
lookups are, in SQL, a window over a million sorted rows and two ASOF joins (each sorting both sides after a
grouping); on arrays they are one sort, a running max and binary searches. The timeline's busy fraction per
time bin (`bin_busy`) is two bincounts. DuckDB still does the scans, filters and groupings around them.
"""

from __future__ import annotations

import numpy as np


def merge_busy(group: np.ndarray, s: np.ndarray, e: np.ndarray) -> dict[str, np.ndarray]:
    """Merge intervals [s, e) per group into disjoint pieces, exactly as busy.sql's rule: in (s, e DESC) order
    each interval keeps its part after `prev_end`, the latest end of the earlier intervals of its group, and is
    dropped when it ends by then. Returns group, s, e, prev_end and `first` (no earlier interval: prev_end is
    NULL); a piece with s > prev_end follows an idle gap."""
    o = np.lexsort((s, group))
    g, s, e = group[o], s[o], e[o]
    # Intervals sharing a start: only the longest can outlast the others (the rest end by its end).
    run = np.ones(len(s), dtype=bool)
    run[1:] = (g[1:] != g[:-1]) | (s[1:] != s[:-1])
    starts = np.flatnonzero(run)
    if len(starts) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return {"group": group[:0], "s": empty, "e": empty, "prev_end": empty, "first": np.zeros(0, dtype=bool)}
    g, s, e = g[starts], s[starts], np.maximum.reduceat(e, starts)
    first = np.ones(len(s), dtype=bool)
    first[1:] = g[1:] != g[:-1]
    # prev_end: the running max of the ends before each row, restarted at each group's first row
    prev_end = np.empty_like(e)
    bounds = np.append(np.flatnonzero(first), len(e))
    for a, b in zip(bounds[:-1], bounds[1:]):
        prev_end[a + 1 : b] = np.maximum.accumulate(e[a : b - 1])
        prev_end[a] = e[a]  # unused (first): any value at or below e keeps the row
    keep = first | (e > prev_end)
    return {
        "group": g[keep],
        "s": np.where(first, s, np.maximum(s, prev_end))[keep],
        "e": e[keep],
        "prev_end": prev_end[keep],
        "first": first[keep],
    }


def last_at_or_before(times: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Per `at`, the index of the last entry of the sorted `times` that is <= it (-1: none), i.e. an ASOF
    `at >= time` match. Among equal times the first entry is taken: the caller sorts ties by preference."""
    i = np.searchsorted(times, at, side="right") - 1
    found = i >= 0
    i[found] = np.searchsorted(times, times[i[found]], side="left")
    return i


def first_at_or_after(times: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Per `at`, the index of the first entry of the sorted `times` that is >= it (len(times): none), i.e. an
    ASOF `at <= time` match; among equal times the first entry."""
    return np.searchsorted(times, at, side="left")


def bin_busy(group: np.ndarray, s: np.ndarray, e: np.ndarray, t0: int, width: int, n_groups: int) -> np.ndarray:
    """The busy ns per (group, bin) of the disjoint pieces [s, e) (t0 <= s < e), bins of `width` ns from t0: a
    piece inside one bin adds its length to it, the few that cross a bin edge are split at the edges. Returns an
    (n_groups, bins) float64 array of integer sums (exact below 2**53 ns); a bin no piece touches holds 0."""
    b0, b1 = (s - t0) // width, (e - 1 - t0) // width
    n_bins = int(b1.max()) + 1 if len(b1) else 0
    inside = b0 == b1
    out = np.bincount(group * n_bins + b0, weights=np.where(inside, e - s, 0).astype(np.float64), minlength=n_groups * n_bins)
    cross = np.flatnonzero(~inside)
    if len(cross):
        # one row per (crossing piece, bin it overlaps) with the piece's part inside that bin
        n = (b1 - b0)[cross] + 1
        first = np.cumsum(n) - n
        piece = np.repeat(cross, n)
        b = b0[piece] + np.arange(len(piece)) - np.repeat(first, n)
        part = np.minimum(e[piece], t0 + (b + 1) * width) - np.maximum(s[piece], t0 + b * width)
        out += np.bincount(group[piece] * n_bins + b, weights=part.astype(np.float64), minlength=n_groups * n_bins)
    return out.reshape(n_groups, n_bins)
