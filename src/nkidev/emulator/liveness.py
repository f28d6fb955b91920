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
import struct
from array import array
from dataclasses import dataclass, field
from itertools import count

import numpy as np

from nkidev.emulator.location import rule_error
from nkidev.emulator.trace import Spill
from nkidev.hardware import Target

KINDS = ("sbuf", "psum")


class Lifetime:
    """The accesses of one on-chip storage: clock ticks of the instructions that touched it, in order. Built at
    `settle` from Occupancy's columns, and only for a buffer whose demand needs spills."""

    __slots__ = ("id", "kind", "name", "location", "pp_bytes", "partitions", "times")

    def __init__(self, id: int, site: tuple, times: list[int]):
        self.id = id
        self.kind, self.name, self.location, self.pp_bytes, self.partitions = site
        self.times = times


def capacity(target: Target, kind: str) -> int:
    return target.sbuf.usable_bytes_per_partition if kind == "sbuf" else target.psum.bytes_per_partition


# Pending Python ints moved into typed columns a block at a time (as Trace.record does): a million-instruction
# kernel kept as one object per storage, stamp and instruction held ~270 MB of small objects until the run ended,
# and left the interpreter's arenas fragmented for every later stage of a profile.
BLOCK = 3 * 8192


_LIFE_IDS = count()  # what `storage.life` holds: unique across programs and runs


def _int64s(values: list[int]) -> bytes:
    return struct.pack(f"{len(values)}q", *values)


def _column(values: array) -> np.ndarray:
    return np.frombuffer(values, dtype=np.int64) if len(values) else np.zeros(0, np.int64)


@dataclass
class Occupancy:
    """Per-program on-chip bookkeeping: lifetimes, the clock, and (after `settle`) peaks and spills.

    Stored as columns: per claimed storage (`claim` gives it its index in `storage.life`) its id and site (kind,
    name, location, bytes per partition, partitions); per stamp (an instruction touching a claimed storage, at
    most once per tick: `storage.stamped` is its last tick) the storage index and tick; per recorded instruction
    (`records`, filled by opdef's dispatch: tick, trace instruction id, kernel line) what spills name."""

    check: bool
    clock: int = 0
    stamps: list = field(default_factory=list)  # pending (storage index, tick) pairs, flattened
    records: list = field(default_factory=list)  # pending (tick, instruction id, location) triples, flattened
    peak: dict = field(default_factory=lambda: dict.fromkeys(KINDS, 0))

    def __post_init__(self):
        self.claims: list = []  # pending (storage id, site code) pairs, flattened
        self.lives = 0  # storages claimed
        self._sites: dict[tuple, int] = {}
        self._site_list: list[tuple] = []
        self._locations: dict = {}
        self._location_list: list = []
        self._life_key, self._life_id, self._life_site = array("q"), array("q"), array("q")
        self._stamp_life, self._stamp_tick = array("q"), array("q")
        self._rec_tick, self._rec_id, self._rec_loc = array("q"), array("q"), array("q")

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
        partitions = storage.array.shape[0] if storage.array.ndim else 1
        key = (storage.kind, storage.name, storage.location, storage.pp_bytes, partitions)
        site = self._sites.get(key)
        if site is None:
            site = self._sites[key] = len(self._site_list)
            self._site_list.append(key)
        storage.life = life = next(_LIFE_IDS)
        self.lives += 1
        claims = self.claims
        claims += (life, storage.id, site)
        if len(claims) >= BLOCK:
            self.pack()

    def tick(self) -> int:
        self.clock += 1
        return self.clock

    def recorded(self, instruction_id: int, location: str | None) -> None:
        """The trace row of the current tick, so spills can name instructions and kernel lines."""
        self.records += (self.clock, instruction_id, location)
        if len(self.records) >= BLOCK:
            self.pack()

    def pack(self) -> None:
        """Move the pending claims, stamps and records into the typed columns (callers check the lengths)."""
        if self.claims:
            block = np.frombuffer(_int64s(self.claims), dtype=np.int64).reshape(-1, 3)
            self._life_key.frombytes(block[:, 0].tobytes())
            self._life_id.frombytes(block[:, 1].tobytes())
            self._life_site.frombytes(block[:, 2].tobytes())
            self.claims.clear()
        if self.stamps:
            block = np.frombuffer(_int64s(self.stamps), dtype=np.int64).reshape(-1, 2)
            self._stamp_life.frombytes(block[:, 0].tobytes())
            self._stamp_tick.frombytes(block[:, 1].tobytes())
            self.stamps.clear()
        if self.records:
            recs = self.records
            self._rec_tick.frombytes(_int64s(recs[0::3]))
            self._rec_id.frombytes(_int64s(recs[1::3]))
            codes = self._locations
            for loc in recs[2::3]:
                c = codes.get(loc)
                if c is None:
                    c = codes[loc] = len(self._location_list)
                    self._location_list.append(loc)
                self._rec_loc.append(c)
            recs.clear()

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
        self.pack()
        spills: list[Spill] = []
        life, tick = _column(self._stamp_life), _column(self._stamp_tick)
        n = self.lives
        keys = _column(self._life_key)  # increasing: one process-wide counter
        life = np.searchsorted(keys, life)  # a stamp's storage by its index in this program's claims
        own = life < n
        own[own] = keys[life[own]] == _column(self._stamp_life)[own]
        life, tick = life[own], tick[own]  # a storage claimed by another program (or run) is no part of this one
        first = np.full(n, np.iinfo(np.int64).max, np.int64)
        last = np.full(n, -1, np.int64)
        np.minimum.at(first, life, tick)
        np.maximum.at(last, life, tick)
        sites = self._site_list
        site_of = _column(self._life_site)
        kind_code = np.array([KINDS.index(s[0]) if s[0] in KINDS else -1 for s in sites] or [-1], dtype=np.int64)[site_of]
        pp = np.array([s[3] for s in sites] or [0], dtype=np.int64)[site_of]
        for k, kind in enumerate(KINDS):
            mine = np.flatnonzero((kind_code == k) & (last >= 0))  # claim order, touched at least once
            self.peak[kind] = _peak(first[mine], last[mine], pp[mine])
            if self.peak[kind] > capacity(target, kind):
                spills += _spill(self._lifetimes(mine, life, tick), capacity(target, kind), _Records(self))
        return spills

    def _lifetimes(self, mine: np.ndarray, life: np.ndarray, tick: np.ndarray) -> list[Lifetime]:
        """Lifetime objects of the storages `mine` (claim order), each with its ticks in order."""
        order = np.argsort(life, kind="stable")  # stamps are in tick order: each storage's stay sorted
        bounds = np.searchsorted(life[order], np.stack([mine, mine + 1]))
        ticks = tick[order]
        ids, sites = self._life_id, self._site_list
        site_of = self._life_site
        return [
            Lifetime(ids[i], sites[site_of[i]], ticks[lo:hi].tolist())
            for i, lo, hi in zip(mine.tolist(), bounds[0].tolist(), bounds[1].tolist())
        ]


class _Records:
    """tick -> (trace instruction id, kernel line) of the recorded instructions, read from Occupancy's columns
    (`get` as a dict's: the last record of a tick)."""

    def __init__(self, usage: Occupancy):
        self.tick = _column(usage._rec_tick)
        self.usage = usage

    def get(self, t, default=None):
        if t is None:
            return default
        k = int(np.searchsorted(self.tick, t, side="right")) - 1
        if k < 0 or self.tick[k] != t:
            return default
        u = self.usage
        return (u._rec_id[k], u._location_list[u._rec_loc[k]])


def _peak(first: np.ndarray, last: np.ndarray, pp_bytes: np.ndarray) -> int:
    """The most bytes per partition live at once: each storage from its first access to its last (inclusive)."""
    if not len(first):
        return 0
    time = np.concatenate([first, last + 1])
    delta = np.concatenate([pp_bytes, -pp_bytes])
    order = np.lexsort((delta, time))  # as sorting (time, delta) pairs: frees before claims at one instant
    return max(0, int(np.cumsum(delta[order]).max()))


def _spill(lives: list[Lifetime], limit: int, ids) -> list[Spill]:
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
