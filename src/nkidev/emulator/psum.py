"""Deferred PSUM accumulation: one big matmul per accumulation group instead of one per K tile.

A K-tiled matmul issues many small nc_matmuls into the same PSUM tile. NumPy runs one large
GEMM several times faster than many small ones, so matmuls that continue an open accumulation
group only stash their (converted) operands; the group is computed as a single
`S.T @ M` over the concatenated K tiles the moment anything else touches that PSUM storage.
Operands are captured when the instruction executes, so later writes to their SBUF tiles
cannot change the result. Summation order differs from tile-by-tile accumulation only by fp32
rounding.

The operand buffers are pooled per thread and sized from the last group of the same (M, N): a K-tiled loop
opens one group per output tile, each as deep as the last, so after the first group none grows (a regrowth
copies the buffer) and none is a fresh allocation (fresh pages fault on first touch). Splitting a group's GEMM
over threads is not an option: OpenBLAS's per-element sums change with the shape of the call (a 128x2048x256
half differs in ~1% of its elements from the same columns of the 128x2048x512 whole), so a group is always one
call.
"""

from __future__ import annotations

import threading

import numpy as np

from nkidev.emulator.dtypes import widen_into
from nkidev.emulator.tensor import NkiTensor, region

_F32 = np.dtype(np.float32)


class _Pool:
    """One thread's free operand buffers and the depth of the last group, by (M, N). A group computed on the
    run's worker thread (deferred.py) gives its buffers back to the pool of the thread that opened it: the lock
    makes that safe."""

    def __init__(self):
        self.free: dict[tuple[int, int], list[tuple[np.ndarray, np.ndarray]]] = {}
        self.depth: dict[tuple[int, int], int] = {}
        self.lock = threading.Lock()

    def take(self, m: int, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
        with self.lock:
            depth = self.depth.get((m, n), 0)
            cap = max(k, depth, 512)
            free = self.free.get((m, n))
            while free:
                s, mv = free.pop()
                if s.shape[0] >= cap:
                    return s, mv
        return np.empty((cap, m), _F32), np.empty((cap, n), _F32)

    def give(self, m: int, n: int, k: int, s: np.ndarray, mv: np.ndarray) -> None:
        with self.lock:
            if len(self.free) >= _MAX_SHAPES and (m, n) not in self.free:
                self.free.clear()
                self.depth.clear()
            self.depth[(m, n)] = k
            free = self.free.setdefault((m, n), [])
            if len(free) < _KEEP:
                free.append((s, mv))


class _Pools(threading.local):
    def __init__(self):
        self.pool = _Pool()


_pools = _Pools()
# free buffer pairs kept per (M, N): enough for the groups a loop has open at once plus those queued on the
# worker thread (deferred.py bounds how far the kernel runs ahead of it)
_KEEP = 4
_MAX_SHAPES = 16  # (M, N) shapes remembered; more (unusual kernels) start over


class Group:
    """Operands of the matmuls of one open accumulation group on one PSUM view."""

    __slots__ = ("view", "key", "span", "overwrite", "s", "mv", "k", "pool")

    def __init__(self, view: np.ndarray, key: tuple, span: tuple, overwrite: bool, m: int, n: int, k: int):
        self.view, self.key, self.span, self.overwrite = view, key, span, overwrite
        self.pool = _pools.pool
        self.s, self.mv = self.pool.take(m, n, k)
        self.k = 0

    def add(self, s_raw: np.ndarray, mv_raw: np.ndarray, k: int) -> None:
        end = self.k + k
        if end > self.s.shape[0]:
            cap = max(2 * self.s.shape[0], end)
            self.s = np.concatenate([self.s[: self.k], np.empty((cap - self.k, self.s.shape[1]), _F32)])
            self.mv = np.concatenate([self.mv[: self.k], np.empty((cap - self.k, self.mv.shape[1]), _F32)])
        # bf16/fp8 are widened to fp32 straight into the group's buffer
        widen_into(self.s[self.k : end], s_raw.reshape(k, -1))
        widen_into(self.mv[self.k : end], mv_raw.reshape(k, -1))
        self.k = end

    def compute(self) -> None:
        s, mv = self.s[: self.k], self.mv[: self.k]
        if self.overwrite:
            np.matmul(s.T, mv, out=self.view)
        else:
            self.view += s.T @ mv
        self.pool.give(self.s.shape[1], self.mv.shape[1], self.k, self.s, self.mv)
        self.s = self.mv = None


def _key(t: NkiTensor) -> tuple:
    """The view's place in its storage: byte offset, shape, strides (one storage's groups are keyed by it)."""
    d = t._data
    off = t._off
    if off is None:  # __array_interface__ builds a dict: done once per view
        off = t._off = d.__array_interface__["data"][0] - t.storage.ptr
    return off, d.shape, d.strides


def _span(t: NkiTensor) -> tuple[int, int, int, int]:
    p0, parts, lo, hi, _, _ = region(t)
    return p0, p0 + parts, lo, hi


def _overlap(a: tuple, b: tuple) -> bool:
    return a[0] < b[1] and b[0] < a[1] and a[2] < b[3] and b[2] < a[3]


def continues(dst: NkiTensor) -> bool:
    """Whether a group is open on exactly this view (its elements' accumulation marks are all set)."""
    groups = dst.storage.pending
    return bool(groups) and _key(dst) in groups


def matmul(dst: NkiTensor, view: np.ndarray, s_raw: np.ndarray, mv_raw: np.ndarray, k: int, m: int, n: int, accumulate: bool) -> None:
    """Add stationary.T @ moving to the group on `dst` (or open a group that overwrites / accumulates)."""
    st = dst.storage
    groups = st.pending
    key = _key(dst)
    group = groups.get(key) if groups else None
    if group is None or not accumulate:
        span = _span(dst)
        if groups and (group is not None or any(_overlap(span, g.span) for g in groups.values())):
            st.flush()
        if st.pending is None:
            st.pending = {}
        group = st.pending[key] = Group(view, key, span, not accumulate, m, n, k)
    group.add(s_raw, mv_raw, k)
