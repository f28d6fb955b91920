"""On-chip occupancy the way the compiler's allocator sees it: a tile is live from its first access to its last.

Python object lifetime says nothing about the hardware (a tile rebound in the next loop iteration, or kept in a
list after its last use, occupies no SBUF once it is dead), so every instruction stamps the on-chip storages it
touches with a per-program clock, and the occupancy is computed over the whole run when the program ends.

What the compiler rejects stays an error at the kernel line: one tile larger than a partition's SBUF/PSUM (at
its allocation) and the operands of one instruction that cannot be resident together (at the instruction).
Demand above capacity from many live tiles is what the compiler spills: the run is accepted, and each spill
(which tensor leaves the buffer between which two instructions, how many bytes) is a `Spill` in `Trace.spills`
plus a `warn_sbuf_spill` / `warn_psum_spill` warning naming the tensor and the kernel line. Victims are chosen
as an optimal allocator would (the live tile whose next use is farthest away), so the spill traffic is a lower
bound of what the compiler inserts.
"""

from __future__ import annotations

import bisect
import heapq
from array import array
from dataclasses import dataclass, field

from nkidev.emulator.location import rule_error
from nkidev.emulator.trace import Spill
from nkidev.hardware import Target

KINDS = ("sbuf", "psum")


class Lifetime:
    """The accesses of one on-chip storage: clock ticks of the instructions that touched it, in order."""

    __slots__ = ("id", "kind", "name", "location", "pp_bytes", "partitions", "times")

    def __init__(self, storage):
        self.id = storage.id
        self.kind = storage.kind
        self.name = storage.name
        self.location = storage.location
        self.pp_bytes = storage.pp_bytes
        self.partitions = storage.array.shape[0] if storage.array.ndim else 1
        self.times: list[int] = []


def capacity(target: Target, kind: str) -> int:
    return target.sbuf.usable_bytes_per_partition if kind == "sbuf" else target.psum.bytes_per_partition


@dataclass
class Occupancy:
    """Per-program on-chip bookkeeping: lifetimes, the clock, and (after `settle`) peaks and spills."""

    check: bool
    clock: int = 0
    lives: list = field(default_factory=list)
    instructions: dict = field(default_factory=dict)  # clock tick -> (trace instruction id, kernel line), when recording
    peak: dict = field(default_factory=lambda: dict.fromkeys(KINDS, 0))

    def check_tile(self, kind: str, shape: tuple, dtype, n: int, target: Target) -> None:
        """Before allocating: a tile of `n` bytes per partition larger than the whole buffer is what the compiler
        refuses (checked from the shape, so a huge tile never allocates its array first)."""
        if not self.check:
            return
        limit = capacity(target, kind)
        if n > limit:
            if kind == "psum":
                raise rule_error(
                    "err_psum_tile_too_large",
                    f"PSUM tile {shape} {dtype} needs {n} bytes per partition, PSUM has {limit}",
                    "use at most 8 banks x 2 KiB (2048 fp32) per partition",
                )
            raise rule_error(
                "err_sbuf_capacity_exceeded",
                f"SBUF tile {shape} {dtype} needs {n} bytes per partition but {target.name} has {limit} usable",
                "split the tile along its free dims; no allocation can hold it",
            )

    def claim(self, storage, target: Target) -> None:
        """At allocation (after check_tile): the storage's lifetime starts being tracked."""
        if not self.check:
            return
        storage.life = Lifetime(storage)
        self.lives.append(storage.life)

    def tick(self) -> int:
        self.clock += 1
        return self.clock

    def recorded(self, instruction_id: int, location: str | None) -> None:
        """The trace row of the current tick, so spills can name instructions and kernel lines."""
        self.instructions[self.clock] = (instruction_id, location)

    def operands(self, storages, target: Target) -> None:
        """Every operand of one instruction is resident at once: more than the buffer holds is rejected."""
        if sum(st.pp_bytes for st in storages) <= target.psum.bytes_per_partition:
            return  # the common case: cannot exceed either buffer
        for kind in KINDS:
            total = sum(st.pp_bytes for st in storages if st.kind == kind)
            limit = capacity(target, kind)
            if total > limit:
                names = ", ".join(f"{st.name!r} ({st.pp_bytes})" for st in storages if st.kind == kind)
                raise rule_error(
                    "err_sbuf_capacity_exceeded" if kind == "sbuf" else "err_psum_capacity_exceeded",
                    f"the {kind.upper()} operands of this instruction need {total} bytes per partition together "
                    f"({names}) but {target.name} has {limit}",
                    "split the instruction into smaller tiles",
                )

    def settle(self, target: Target) -> list[Spill]:
        """Peaks per buffer over the run, and the spills that keep every instant within capacity."""
        spills: list[Spill] = []
        ids = self.instructions
        for kind in KINDS:
            lives = [life for life in self.lives if life.kind == kind and life.times]
            self.peak[kind] = _peak(lives)
            if self.peak[kind] > capacity(target, kind):
                spills += _spill(lives, capacity(target, kind), ids)
        return spills


def _peak(lives: list[Lifetime]) -> int:
    events = sorted([(life.times[0], life.pp_bytes) for life in lives] + [(life.times[-1] + 1, -life.pp_bytes) for life in lives])
    live = peak = 0
    for _, delta in events:
        live += delta
        peak = max(peak, live)
    return peak


def _spill(lives: list[Lifetime], limit: int, ids: dict) -> list[Spill]:
    """Replay the accesses with `limit` bytes; when a tile must come in, evict the resident tile used farthest ahead.
    Each spill's reload may start after the last instruction, from its eviction on, whose live tiles leave no room
    for it (`_reload_after`)."""
    accesses: dict[int, list[Lifetime]] = {}
    for life in lives:
        for t in life.times:
            accesses.setdefault(t, []).append(life)
    cursor = {life.id: 0 for life in lives}  # index of the next access in life.times
    resident: dict[int, Lifetime] = {}
    ends: list[tuple[int, int]] = []  # heap of (last access, id) of resident tiles
    used = 0
    spills: list[Spill] = []
    ticks = sorted(accesses)
    used_at = array("q")  # per tick: the bytes resident while its instruction runs
    returns: list[tuple[int, int, int]] = []  # per spill: (tick index of the eviction, tick of the reload, bytes)
    for k, t in enumerate(ticks):
        while ends and ends[0][0] < t:  # tiles past their last access free their bytes
            _, lid = heapq.heappop(ends)
            if lid in resident:
                used -= resident.pop(lid).pp_bytes
        now = accesses[t]
        for life in now:
            cursor[life.id] += 1
        needed = sum(life.pp_bytes for life in now if life.id not in resident)
        while used + needed > limit:
            victim = max(
                (r for r in resident.values() if r not in now),
                key=lambda r: r.times[cursor[r.id]],
                default=None,
            )
            if victim is None:  # operands alone exceed the buffer: rejected when the instruction ran
                break
            del resident[victim.id]
            used -= victim.pp_bytes
            before, after = victim.times[cursor[victim.id] - 1], victim.times[cursor[victim.id]]
            at = ids.get(t, (None, None))
            returns.append((k, after, victim.pp_bytes))
            spills.append(
                Spill(
                    tensor=victim.id,
                    name=victim.name,
                    buffer=victim.kind,
                    to="hbm" if victim.kind == "sbuf" else "sbuf",
                    bytes_per_partition=victim.pp_bytes,
                    partitions=victim.partitions,
                    nbytes=victim.pp_bytes * victim.partitions,
                    store_after=ids.get(before, (None,))[0],
                    reload_before=ids.get(after, (None,))[0],
                    instruction=at[0],
                    location=at[1] or victim.location,
                    tensor_location=victim.location,
                )
            )
        for life in now:
            if life.id not in resident:
                resident[life.id] = life
                used += life.pp_bytes
                heapq.heappush(ends, (life.times[-1], life.id))
        used_at.append(used)
    for sp, ret in zip(spills, returns):
        sp.reload_after = ids.get(_reload_after(ticks, used_at, limit, *ret), (None,))[0]
    return spills


def _reload_after(ticks: list[int], used_at, limit: int, evicted: int, reload_tick: int, nbytes: int) -> int:
    """The tick after which `nbytes` stay free until `reload_tick`: the last one, from the eviction (index `evicted`
    into `ticks`) on, whose resident bytes leave no room for them. The evicting instruction itself always qualifies
    (it needed the space), so the reload never overlaps it."""
    k = bisect.bisect_left(ticks, reload_tick, lo=evicted) - 1
    while k > evicted and used_at[k] + nbytes <= limit:
        k -= 1
    return ticks[k]
