"""Interval unions, vectorized (busy time of an engine = the union of its instructions' intervals)."""

from __future__ import annotations

import numpy as np


def merge(starts, ends) -> tuple[np.ndarray, np.ndarray]:
    """Sorted, disjoint intervals covering the union of [starts[i], ends[i])."""
    s = np.asarray(starts, dtype=np.float64)
    e = np.asarray(ends, dtype=np.float64)
    if s.size == 0:
        return s, e
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    reach = np.maximum.accumulate(e)
    # a new interval starts where the start is beyond everything seen so far
    new = np.empty(s.size, dtype=bool)
    new[0] = True
    new[1:] = s[1:] > reach[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, s.size - 1)
    return s[first], reach[last]


BLOCK = 1 << 20  # intervals per step of merged_length (bounds its temporary memory on million-row tables)


def merged_length(starts, ends) -> float:
    """Total length of the union of [starts[i], ends[i])."""
    ms, me = merge_blocked(starts, ends)
    return float((me - ms).sum())


def merge_blocked(starts, ends) -> tuple[np.ndarray, np.ndarray]:
    """`merge()`, a block of sorted intervals at a time: the same intervals, with temporary memory bounded by the
    block size on top of one sort order (millions of DMA packets)."""
    s = np.asarray(starts, dtype=np.float64)
    e = np.asarray(ends, dtype=np.float64)
    if s.size <= BLOCK:
        return merge(s, e)
    order = np.argsort(s, kind="stable")
    firsts, closes = [], []  # merged starts; the end of each merged interval but the last
    reach_before = None  # the furthest end of all earlier blocks
    for lo in range(0, s.size, BLOCK):
        idx = order[lo : lo + BLOCK]
        bs, be = s[idx], e[idx]
        reach = np.maximum.accumulate(be if reach_before is None else np.maximum(be, reach_before))
        new = np.empty(bs.size, dtype=bool)
        new[0] = reach_before is None or bs[0] > reach_before
        new[1:] = bs[1:] > reach[:-1]
        pos = np.flatnonzero(new)
        firsts.append(bs[pos])
        # a new interval closes the one before it, which ends at the reach just before the new one starts
        close = np.where(pos > 0, reach[pos - 1], reach_before if reach_before is not None else 0.0)
        closes.append(close[1:] if reach_before is None else close)
        reach_before = reach[-1]
    ms = np.concatenate(firsts)
    me = np.concatenate(closes + [np.array([reach_before])])
    return ms, me
