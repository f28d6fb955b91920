"""Deferred PSUM accumulation: one big matmul per accumulation group instead of one per K tile.

A K-tiled matmul issues many small nc_matmuls into the same PSUM tile. NumPy runs one large
GEMM several times faster than many small ones, so matmuls that continue an open accumulation
group only stash their (converted) operands; the group is computed as a single
`S.T @ M` over the concatenated K tiles the moment anything else touches that PSUM storage.
Operands are captured when the instruction executes, so later writes to their SBUF tiles
cannot change the result. Summation order differs from tile-by-tile accumulation only by fp32
rounding.

The operand buffers are pooled per thread and sized from the last group of the same width: a K-tiled loop
opens one group per output tile, each as deep as the last, so after the first group none grows (a regrowth
copies the buffer) and none is a fresh allocation (fresh pages fault on first touch). Splitting a group's GEMM
over threads is not an option: OpenBLAS's per-element sums change with the shape of the call (a 128x2048x256
half differs in ~1% of its elements from the same columns of the 128x2048x512 whole), so a group is always one
call (different groups may run at once: deferred.py).

Converted operands are cached: a tiled matmul reloads the same operand tiles for every output tile of a row or
column block (the 2048^3 example converts each moving tile 16 times and each stationary tile 4 times). Each tile
has a content identity (`identity`: its storage's id and version, counted by every instruction that writes it,
or the view a whole-tile DMA copied it from, so a fresh tile reloaded from the same HBM block is the same tile),
and once a group is closed its converted rows are kept with the identities of their tiles. A later group whose
tiles are, one by one, those of a cached stack converts nothing and multiplies the cached rows: the same values
in the same layout, so the same bits (and a tile a DMA loaded by a lazy copy, tensor.py, is not copied at all).
A stack is never written once cached; the least recently used go back to the pool past 32 MiB, unless a group
still reads them.
"""

from __future__ import annotations

import sys
import threading

import numpy as np

from nkidev.emulator.dtypes import widen_into
from nkidev.emulator.tensor import NkiTensor, loaded, region

_F32 = np.dtype(np.float32)


class _Stack:
    """A cached operand stack: the fp32 rows of one side of a computed group, and the content identity of each
    tile they came from (`identity`). Never written once cached."""

    __slots__ = ("ids", "buf", "nbytes")

    def __init__(self, ids: tuple, buf: np.ndarray):
        self.ids, self.buf, self.nbytes = ids, buf, buf.nbytes


class _Pool:
    """One thread's free operand buffers (by width) and its cache of converted operand stacks. A group computed
    on the run's worker thread (deferred.py) gives its buffers back to the pool of the thread that opened it:
    the lock makes that safe."""

    def __init__(self):
        self.free: dict[int, list[np.ndarray]] = {}
        self.depth: dict[int, int] = {}  # rows of the last group of each width
        self.lock = threading.Lock()
        self.stacks: dict[tuple, _Stack] = {}  # ids -> stack, least recently used first
        self.first: dict[tuple, list[_Stack]] = {}  # (width, first tile's identity) -> the stacks starting with it
        self.cached = 0  # bytes of the cached stacks

    def take(self, width: int, k: int) -> np.ndarray:
        with self.lock:
            cap = max(k, self.depth.get(width, 0), 512)
            free = self.free.get(width)
            while free:
                buf = free.pop()
                if buf.shape[0] >= cap:
                    return buf
        return np.empty((cap, width), _F32)

    def give(self, buf: np.ndarray, k: int) -> None:
        width = buf.shape[1]
        with self.lock:
            self._give(buf, width, k)

    def _give(self, buf: np.ndarray, width: int, k: int) -> None:
        if len(self.free) >= _MAX_SHAPES and width not in self.free:
            self.free.clear()
            self.depth.clear()
        self.depth[width] = k
        free = self.free.setdefault(width, [])
        if len(free) < _KEEP:
            free.append(buf)

    def candidates(self, width: int, ident: tuple) -> list[_Stack]:
        with self.lock:
            return list(self.first.get((width, ident), ()))

    def used(self, stack: _Stack) -> None:
        """A group computed from a cached stack: keep it longest."""
        with self.lock:
            if self.stacks.get(stack.ids) is stack:
                self.stacks[stack.ids] = self.stacks.pop(stack.ids)

    def cache(self, ids: tuple, buf: np.ndarray, k: int) -> bool:
        """Cache the rows of a closed group's side (they are not written again), evicting the least recently
        used stacks past the budget (back to the free buffers when no group still reads them). False: the
        same stack is cached already (two groups converted it)."""
        width = buf.shape[1]
        with self.lock:
            if ids in self.stacks:
                return False
            self.depth[width] = k
            stack = self.stacks[ids] = _Stack(ids, buf)
            self.first.setdefault((width, ids[0]), []).append(stack)
            self.cached += stack.nbytes
            while self.cached > _CACHE_BYTES and len(self.stacks) > 1:
                old = self.stacks.pop(next(iter(self.stacks)))
                self.cached -= old.nbytes
                same = self.first[(old.buf.shape[1], old.ids[0])]
                same.remove(old)
                if not same:
                    del self.first[(old.buf.shape[1], old.ids[0])]
                # each referenced only here (and by getrefcount's argument): no group follows it, reads its rows
                # or is still to be computed from its buffer
                if sys.getrefcount(old) <= 2 and sys.getrefcount(old.buf) <= 2:
                    self._give(old.buf, old.buf.shape[1], old.buf.shape[0])
            return True


class _Pools(threading.local):
    def __init__(self):
        self.pool = _Pool()


_pools = _Pools()
# free buffers kept per width: enough for the groups a loop has open at once plus those queued on the worker
# thread (deferred.py bounds how far the kernel runs ahead of it)
_KEEP = 8
_MAX_SHAPES = 16  # widths remembered; more (unusual kernels) start over
# converted operand stacks kept per thread: a K-tiled matmul reloads the same operand tiles for every output
# tile of a row (stationary) or column (moving) block; 32 MiB holds the moving stacks of a 2048-deep loop over
# 4 column blocks of 512 and more
_CACHE_BYTES = 32 << 20


def identity(t: NkiTensor) -> tuple | None:
    """What determines the values of an operand view: its storage's content (see Storage.content), the view's
    place in it, and its dtype; None for run-time addressed views."""
    if t.dyn is not None:
        return None
    st = t.storage
    content = st.origin
    if content is None:
        content = (st.id, st.version)
    return content, _key(t), t.dtype.name


class _Side:
    """One operand of a group, K tiles deep: rows converted into a buffer of its own, or, while each tile is
    the one a cached stack holds at that depth, the stacks that still match (nothing converted)."""

    __slots__ = ("width", "pool", "buf", "k", "ids", "follow", "cached")

    def __init__(self, width: int, pool: _Pool):
        self.width, self.pool = width, pool
        self.cached = False
        self.buf = None
        self.k = 0
        self.ids: list | None = []  # None: some tile has no identity (the rows are not cached)
        self.follow: list[_Stack] | None = None

    def add(self, raw: np.ndarray | None, t: NkiTensor, k: int, ident: tuple | None) -> None:
        """The next K tile: view `t`, its stored values `raw` (None: a lazy copy, taken only if converted)."""
        end = self.k + k
        ids = self.ids
        if ident is None:
            self.ids = ids = None
        elif ids is not None and self.buf is None:
            i = len(ids)
            follow = self.pool.candidates(self.width, ident) if i == 0 else [s for s in self.follow if len(s.ids) > i and s.ids[i] == ident]
            if follow:
                self.follow = follow
                ids.append(ident)
                self.k = end
                return
        if self.buf is None:
            self.buf = self.pool.take(self.width, end)
            if self.k:  # the rows so far are those of the stacks followed until now
                self.buf[: self.k] = self.follow[0].buf[: self.k]
            self.follow = None
        if end > self.buf.shape[0]:
            cap = max(2 * self.buf.shape[0], end)
            self.buf = np.concatenate([self.buf[: self.k], np.empty((cap - self.k, self.width), _F32)])
        if raw is None:
            raw = np.asarray(loaded(t))
        # bf16/fp8 are widened to fp32 straight into the group's buffer
        widen_into(self.buf[self.k : end], raw.reshape(k, -1))
        if ids is not None:
            ids.append(ident)
        self.k = end

    def rows(self) -> np.ndarray:
        if self.buf is None:
            return self.follow[0].buf[: self.k]  # a stack with these tiles first holds these rows
        return self.buf[: self.k]

    def close(self) -> None:
        """No more tiles: cache the rows converted (the group's GEMM reads them; later groups may too)."""
        if self.buf is not None and self.ids is not None and not self.cached:
            self.cached = self.pool.cache(tuple(self.ids), self.buf, self.k)
            self.ids = None

    def done(self) -> None:
        """The group was computed: give an uncached buffer back, forget the stacks followed."""
        if self.buf is None:
            self.pool.used(self.follow[0])
        elif not self.cached:
            self.pool.give(self.buf, self.k)
        self.buf = self.follow = None


class Group:
    """Operands of the matmuls of one open accumulation group on one PSUM view."""

    __slots__ = ("view", "key", "span", "overwrite", "s", "mv")

    def __init__(self, view: np.ndarray, key: tuple, span: tuple, overwrite: bool, m: int, n: int):
        self.view, self.key, self.span, self.overwrite = view, key, span, overwrite
        pool = _pools.pool
        self.s, self.mv = _Side(m, pool), _Side(n, pool)

    def add(self, s: NkiTensor, mv: NkiTensor, s_raw, mv_raw, k: int, s_id: tuple | None, mv_id: tuple | None) -> None:
        self.s.add(s_raw, s, k, s_id)
        self.mv.add(mv_raw, mv, k, mv_id)

    def macs(self) -> int:
        """Multiply-accumulates of its GEMM so far."""
        return self.s.k * self.s.width * self.mv.width

    def close(self) -> None:
        """The group takes no more tiles (it is about to be computed, here or on the worker thread)."""
        self.s.close()
        self.mv.close()

    def compute(self) -> None:
        self.close()
        s, mv = self.s.rows(), self.mv.rows()
        if self.overwrite:
            np.matmul(s.T, mv, out=self.view)
        else:
            self.view += s.T @ mv
        del s, mv
        self.s.done()
        self.mv.done()


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


def matmul(
    dst: NkiTensor,
    view: np.ndarray,
    stationary: NkiTensor,
    moving: NkiTensor,
    s_raw: np.ndarray | None,
    mv_raw: np.ndarray | None,
    k: int,
    m: int,
    n: int,
    accumulate: bool,
) -> None:
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
        group = st.pending[key] = Group(view, key, span, not accumulate, m, n)
    group.add(stationary, moving, s_raw, mv_raw, k, identity(stationary), identity(moving))
