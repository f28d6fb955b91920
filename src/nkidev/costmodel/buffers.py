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
from collections import deque

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
        slot it takes (None for fresh space or no space)."""
        self._retire(first)
        previous = None
        if self.top + size <= self.capacity:
            addr, self.top = self.top, self.top + size
        elif size in self.dead:
            addr, previous = self._take(size)
        else:
            k = bisect.bisect_left(self.sizes, size)
            if k == len(self.sizes):
                return None
            bigger = self.sizes[k]
            addr, previous = self._take(bigger)
            self._free(bigger - size, addr + size, previous)
        heapq.heappush(self.live, (last, addr, size))
        return previous


def _align(x: int, a: int) -> int:
    return -(-x // a) * a


def reuse_edges(trace: Trace, hw: Target) -> list[tuple[int, int]]:
    """(producer, consumer) positions: the first access of a tile after the last access of the tile whose
    space it takes over."""
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    program: dict[int, int] = {}
    for pos, ins in enumerate(trace.instructions):
        for a in ins.reads + ins.writes:
            if a.buffer != "hbm":
                if a.tensor not in first:
                    first[a.tensor] = pos
                    program[a.tensor] = ins.program
                last[a.tensor] = pos
    spaces: dict[tuple[str, int], _Space] = {}
    edges = []
    for tid in sorted(first, key=first.__getitem__):
        rec = trace.tensors.get(tid)
        if rec is None or rec.buffer not in ("sbuf", "psum"):
            continue
        key = (rec.buffer, program[tid])
        if key not in spaces:
            cap = hw.sbuf.usable_bytes_per_partition if rec.buffer == "sbuf" else hw.psum.bytes_per_partition
            spaces[key] = _Space(cap)
        per_partition = rec.nbytes // max(1, rec.shape[0] if rec.shape else 1)
        size = _align(per_partition, hw.psum.bank_bytes) if rec.buffer == "psum" else max(1, per_partition)
        previous = spaces[key].place(size, first[tid], last[tid])
        if previous is not None and previous != first[tid]:
            edges.append((previous, first[tid]))
    return edges
