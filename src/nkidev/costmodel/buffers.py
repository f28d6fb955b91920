"""Physical SBUF/PSUM reuse: tiles share space, so a new tile waits for the old tile's last use.

The emulator gives every `nl.ndarray` its own storage, as if SBUF and PSUM were unbounded; hardware
has usable_bytes_per_partition of SBUF and 8 PSUM banks per partition. We place each on-chip storage,
in order of first use, the way a compiler multi-buffers tiles allocated in a loop:

- fresh space while there is some (as many tiles in flight as fit);
- then the slot of the same size whose tile died first (least recently used), else the smallest
  larger dead slot (the rest stays a dead slot).

Where a tile takes over a slot, its first access waits for the old tile's last access (a
write-after-read/write edge). PSUM tiles occupy whole banks. A tile that finds no space gets no
edges (the emulator's capacity check already passed, so this is fragmentation only).
"""

from __future__ import annotations

import bisect
import heapq
from array import array
from collections import deque

import numpy as np

from nkidev.costmodel.deps import CHUNK, Accesses
from nkidev.emulator.trace import Trace
from nkidev.hardware import Target


class _Space:
    """One on-chip memory of one core: a bump pointer, live tiles by death time, dead slots by size."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.top = 0
        self.live: list[tuple[int, int, int]] = []  # heap of (last use, address, size)
        self.dead: dict[int, deque[tuple[int, int]]] = {}  # size -> (address, last use), oldest death first
        self.sizes: list[int] = []  # sorted sizes present in `dead`

    def _retire(self, now: int) -> None:
        while self.live and self.live[0][0] < now:
            last, addr, size = heapq.heappop(self.live)
            self._free(size, addr, last)

    def _free(self, size: int, addr: int, last: int) -> None:
        if size not in self.dead:
            self.dead[size] = deque()
            bisect.insort(self.sizes, size)
        self.dead[size].append((addr, last))

    def _take(self, size: int) -> tuple[int, int]:
        slots = self.dead[size]
        addr, last = slots.popleft()
        if not slots:
            del self.dead[size]
            self.sizes.remove(size)
        return addr, last

    def place(self, size: int, first: int, last: int) -> int | None:
        """Reserve `size` bytes used from position `first` to `last`; returns the last use of the tile whose
        slot it takes (None for fresh space or no space). Called once per on-chip tile: `_retire` and `_take`
        are written out here for the common cases (a call costs as much as the step)."""
        live, dead = self.live, self.dead
        while live and live[0][0] < first:  # _retire(first)
            old_last, old_addr, old_size = heapq.heappop(live)
            slots = dead.get(old_size)
            if slots is None:
                slots = dead[old_size] = deque()
                bisect.insort(self.sizes, old_size)
            slots.append((old_addr, old_last))
        previous = None
        if self.top + size <= self.capacity:
            addr, self.top = self.top, self.top + size
        else:
            slots = dead.get(size)
            if slots is not None:  # _take(size)
                addr, previous = slots.popleft()
                if not slots:
                    del dead[size]
                    self.sizes.remove(size)
            else:
                k = bisect.bisect_left(self.sizes, size)
                if k == len(self.sizes):
                    return None
                bigger = self.sizes[k]
                addr, previous = self._take(bigger)
                self._free(bigger - size, addr + size, previous)
        heapq.heappush(live, (last, addr, size))
        return previous


def _align(x: int, a: int) -> int:
    return -(-x // a) * a


def reuse_edges(trace: Trace, hw: Target) -> list[tuple[int, int]]:
    """(producer, consumer) positions: the first access of a tile after the last access of the tile whose
    space it takes over."""
    producers, consumers = reuse_edge_arrays(trace, hw)
    return list(zip(producers.tolist(), consumers.tolist()))


def reuse_edge_arrays(trace: Trace, hw: Target, accesses: Accesses | None = None) -> tuple[np.ndarray, np.ndarray]:
    """reuse_edges as two int64 arrays (producers, consumers) (`accesses`: the trace's Accesses, if built already)."""
    acc = accesses if accesses is not None else Accesses(trace)
    tensors, first_acc, firsts = [], [], []
    for lo in range(0, acc.n, CHUNK):
        hi = min(acc.n, lo + CHUNK)
        a0, a1 = acc.span(lo, hi)
        c = acc.chunk(lo, hi, ("hbm",))
        onchip = np.flatnonzero(~c["hbm"].astype(bool))
        pos = np.repeat(np.arange(lo, hi, dtype=np.int64), acc.n_acc[lo:hi])[onchip]
        tensors.append(c["tensor"][onchip])
        first_acc.append(onchip + a0)
        firsts.append(pos)
    none = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    tid = np.concatenate(tensors) if tensors else np.zeros(0, np.int64)
    if not len(tid):
        return none
    idx, pos = np.concatenate(first_acc), np.concatenate(firsts)
    order = np.lexsort((idx, tid))  # by storage, then access order
    tid, idx, pos = tid[order], idx[order], pos[order]
    head = np.flatnonzero(np.r_[True, tid[1:] != tid[:-1]])
    tail = np.r_[head[1:] - 1, len(tid) - 1]
    ids, first_idx, first, last = tid[head], idx[head], pos[head], pos[tail]
    by_first = np.argsort(first_idx, kind="stable")  # tiles in order of first use (ties: operand order)
    ids, first, last = ids[by_first], first[by_first], last[by_first]
    tab = trace.tensors
    rows = tab.rows_of(ids)
    known = rows >= 0
    ids, first, last, rows = ids[known], first[known], last[known], rows[known]
    buf_codes, strings = tab.codes("buffer")
    shape_codes, shapes = tab.codes("shape")
    code = {s: k for k, s in enumerate(strings)}
    buffer = buf_codes[rows]
    on_chip = np.isin(buffer, [code.get("sbuf", -1), code.get("psum", -1)])
    first, last, rows, buffer = first[on_chip], last[on_chip], rows[on_chip], buffer[on_chip]
    parts = np.array([max(1, s[0] if s else 1) for s in shapes] or [1], dtype=np.int64)[shape_codes[rows]]
    per_partition = tab.column("nbytes")[rows] // parts
    is_psum = buffer == code.get("psum", -1)
    bank = hw.psum.bank_bytes
    size = np.where(is_psum, -(-per_partition // bank) * bank, np.maximum(1, per_partition))
    program = trace.columns().program.astype(np.int64)[first]
    # typed arrays: the loop reads Python ints one at a time instead of holding a list of every tile's
    first_a, last_a, size_a, key_a = (array("q", x.astype(np.int64).tobytes()) for x in (first, last, size, program * 2 + is_psum))
    spaces: dict[int, _Space] = {}
    producers, consumers = array("q"), array("q")
    for k in range(len(first_a)):
        key = key_a[k]
        space = spaces.get(key)
        if space is None:
            cap = hw.psum.bytes_per_partition if key & 1 else hw.sbuf.usable_bytes_per_partition
            space = spaces[key] = _Space(cap)
        f = first_a[k]
        previous = space.place(size_a[k], f, last_a[k])
        if previous is not None and previous != f:
            producers.append(previous)
            consumers.append(f)
    return np.frombuffer(producers, dtype=np.int64).copy(), np.frombuffer(consumers, dtype=np.int64).copy()
