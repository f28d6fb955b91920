"""Physical SBUF/PSUM reuse: tiles share space, so a new tile waits for the old tiles' last uses.

The emulator gives every `nl.ndarray` its own storage, as if SBUF and PSUM were unbounded; hardware
has usable_bytes_per_partition of SBUF and 8 PSUM banks per partition. We place each on-chip storage,
in order of first use, holding its address from its first access to its last (the linear-scan flow:
an address from a tile's first write to its last read,
https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.compiler.Allocation.html),
as a ring over the free space (the RING mode: fresh addresses until the allocation wraps around, then freed
memory, so a load into a new tile seldom waits for compute on an earlier one; PSUM rotates over its 8 banks,
https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.compiler.AllocationMode.html):

- a tile takes the first free space at or after the end of the previous tile that holds it, else the first
  from the bottom: fresh space while it lasts, then the space that was allocated longest ago;
- dead space coalesces: adjacent dead tiles form one free block, so a tile may take several of them (or
  part of one); the rest stays free, each piece tagged with its old tile's last use.

Where a tile takes over dead space, its first access waits for the last access of every tile whose space
it covers (write-after-read/write edges). PSUM tiles occupy whole banks. A tile that finds no free block
big enough gets no edges (the emulator's capacity check already passed, so this is fragmentation only).
The FAST / MAX_REUSE modes (best fit in freed memory) are not modelled: best fit makes a load wait for the
tile freed just before it, which puts the DMA-bound calibration rows x2-x3 off (MODEL.md).
"""

from __future__ import annotations

import heapq
from array import array

import numpy as np

from nkidev.costmodel.deps import CHUNK, Accesses
from nkidev.emulator.trace import Trace
from nkidev.hardware import Target


class _Space:
    """One on-chip memory of one core, allocated as a ring over its free space.

    Free space is a set of segments (each tagged with the last use of the tile that held it; -1: never used)
    grouped into blocks, maximal runs of adjacent free segments. A tile may take any part of a block, so two dead
    neighbours hold a tile of their combined size, which waits for both. Segments never merge (their boundaries
    are tile ends, so the ring pointer is always one); blocks merge when a tile between them dies. `most` is a
    max-tree over block starts (in units of `grain` bytes): the first block at or after an address that holds a
    size, or the block around an address, is one descent, O(log capacity) however fragmented the space is."""

    def __init__(self, capacity: int, grain: int = 1):
        self.grain = grain
        self.units = capacity // grain
        self.leaves = 1 << max(0, (self.units - 1).bit_length())
        self.most = [0] * (2 * self.leaves)  # node -> largest free block (units) starting under it
        self.live: list[tuple[int, int, int]] = []  # heap of (last use, start, size), in units
        self.segments: dict[int, tuple[int, int]] = {0: (self.units, -1)}  # free: start -> (size, last use)
        self.blocks: dict[int, int] = {}  # block start -> end
        self.ends: dict[int, int] = {}  # block end -> start
        self.next = 0  # the ring pointer: where the last placed tile ended
        self.dirty: set[int] = set()  # leaves changed since the max-tree above them was last recomputed
        self.blocks[0], self.ends[self.units] = self.units, 0
        self.most[self.leaves] = self.units
        self._walk(0, 0)

    def _walk(self, a: int, b: int) -> None:
        """The leaves of units `a` and `b` just changed: their ancestors are recomputed before the next search
        (`_settle`). Half the placements find their block at the ring pointer through `blocks` alone, so the
        max-tree is brought up to date only when a search reads it, for all the leaves changed since at once."""
        self.dirty.add(a)
        self.dirty.add(b)

    def _settle(self) -> None:
        """Recompute the max-tree above the changed leaves, a level at a time (every leaf is at the same depth, so
        each level's nodes read children already recomputed), stopping above nodes whose value is unchanged."""
        most, n = self.most, self.leaves
        nodes = {(leaf + n) >> 1 for leaf in self.dirty}
        self.dirty.clear()
        while nodes:
            above = set()
            for i in nodes:
                left, right = most[2 * i], most[2 * i + 1]
                m = left if left > right else right
                if most[i] != m:
                    most[i] = m
                    if i > 1:
                        above.add(i >> 1)
            nodes = above

    def _first_fit(self, lo: int, size: int) -> int | None:
        """The start of the first block at or after unit `lo` with at least `size` units, if any."""
        if self.dirty:
            self._settle()
        most, i = self.most, lo + self.leaves
        if most[i] >= size:
            return lo
        while True:  # climb until a right sibling subtree (wholly after lo) holds a big enough block
            if i & 1 == 0 and most[i + 1] >= size:
                i += 1
                break
            i >>= 1
            if i <= 1:
                return None
        while i < self.leaves:  # then descend to its leftmost big enough leaf
            i = 2 * i if most[2 * i] >= size else 2 * i + 1
        return i - self.leaves

    def _free(self, addr: int, size: int, last: int) -> None:
        """Return a dead tile's space as a segment, its block merged with the blocks either side."""
        self.segments[addr] = (size, last)
        blocks, ends, most, n = self.blocks, self.ends, self.most, self.leaves
        start, end, gone = addr, addr + size, addr
        left = ends.pop(addr, None)
        if left is not None:  # the block that ends here grows
            start = gone = left
        right = blocks.pop(end, None)
        if right is not None:  # the block that starts where this ends is absorbed
            del ends[right]
            most[end + n] = 0
            gone, end = end, right
        blocks[start], ends[end] = end, start
        most[start + n] = end - start
        self._walk(start, gone)

    def _last_start(self, hi: int) -> int | None:
        """The start of the last block at or before unit `hi`, if any."""
        if self.dirty:
            self._settle()
        most, i = self.most, hi + self.leaves
        if most[i]:
            return hi
        while True:  # climb until a left sibling subtree (wholly before hi) holds a block
            if i & 1 and most[i - 1]:
                i -= 1
                break
            i >>= 1
            if i <= 1:
                return None
        while i < self.leaves:  # then descend to its rightmost block
            i = 2 * i + 1 if most[2 * i + 1] else 2 * i
        return i - self.leaves

    def _take(self, start: int, at: int, size: int) -> list[int]:
        """Reserve units [at, at + size) of the block at `start` (`at` is a segment start); returns the last uses of
        the segments they cover. The block's space before and after stays free."""
        blocks, ends, most, n = self.blocks, self.ends, self.most, self.leaves
        end = blocks.pop(start)
        del ends[end]
        most[start + n] = 0
        if at > start:
            blocks[start], ends[at] = at, start
            most[start + n] = at - start
        want, lasts, segments = at + size, [], self.segments
        a = at
        while a < want:
            k, last = segments.pop(a)
            if last >= 0:
                lasts.append(last)
            a += k
        if a > want:  # the last covered segment's tail stays free, still tagged with its tile's last use
            segments[want] = (a - want, last)
        if want < end:
            blocks[want], ends[end] = end, want
            most[want + n] = end - want
            self._walk(start, want)
        else:
            self._walk(start, start)
        return lasts

    def place(self, size: int, first: int, last: int) -> list[int] | None:
        """Reserve `size` bytes used from position `first` to `last`: from the ring pointer on, the first free space
        that holds it, else the first from the bottom. Returns the last uses of the dead tiles whose space it takes
        (empty for never-used space), None where no free block holds it."""
        live = self.live
        while live and live[0][0] < first:  # the tiles that died before this one starts
            old_last, old_addr, old_size = heapq.heappop(live)
            self._free(old_addr, old_size, old_last)
        units = -(-size // self.grain)
        if units > self.units:
            return None
        ptr = self.next if self.next < self.units else 0
        end = self.blocks.get(ptr)
        if end is not None and end >= ptr + units:  # most often: a block starts at the pointer and holds it
            start = at = ptr
        elif (start := self._last_start(ptr)) is not None and self.blocks[start] >= ptr + units:  # or around it
            at = ptr
        else:
            start = self._first_fit(ptr, units) if ptr else None
            if start is None:
                start = self._first_fit(0, units)
                if start is None:
                    return None
            at = start
        previous = self._take(start, at, units)
        self.next = at + units
        heapq.heappush(live, (last, at, units))
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
    keys = program * 2 + is_psum
    first_a, last_a, size_a, key_a = (array("q", x.astype(np.int64).tobytes()) for x in (first, last, size, keys))
    # each space counts in the largest unit every tile size is a multiple of (its max-tree has fewer leaves)
    grains = {int(k): int(np.gcd.reduce(size[keys == k])) for k in np.unique(keys)}
    spaces: dict[int, _Space] = {}
    producers, consumers = array("q"), array("q")
    for k in range(len(first_a)):
        key = key_a[k]
        space = spaces.get(key)
        if space is None:
            cap = hw.psum.bytes_per_partition if key & 1 else hw.sbuf.usable_bytes_per_partition
            space = spaces[key] = _Space(cap, grains[key])
        f = first_a[k]
        previous = space.place(size_a[k], f, last_a[k])
        if previous is not None:
            for p in previous:
                if 0 <= p != f:
                    producers.append(p)
                    consumers.append(f)
    return np.frombuffer(producers, dtype=np.int64).copy(), np.frombuffer(consumers, dtype=np.int64).copy()
