"""The programs of one launch (LNC cores, SPMD grid): cooperative scheduling and the race detector.

Each program runs in its own thread, but only the one holding the baton runs (deterministic traces). Programs
progress together: the baton passes round-robin at every instruction that touches HBM, the only memory the
programs share, so a kernel whose cores each clear a shared output and then fill their part sees what
lock-step cores produce. Rendezvous instructions (core_barrier, sendrecv, collectives) block until their
partners arrive. When a program raises, the others are released and the launch re-raises the kernel's own
exception instead of waiting forever.

Accesses of different programs to the same HBM bytes, at least one a write, with no barrier between them are a
race: the result depends on the cores' timing. Each such pair of kernel lines gets one `warn_spmd_race`.
"""

from __future__ import annotations

import threading

import numpy as np

from nkidev.emulator.context import warn
from nkidev.emulator.location import kernel_location
from nkidev.emulator.tensor import NkiTensor, region, resolve_indirect, shared_storage
from nkidev.errors import KernelRuleError


class PeerFailed(BaseException):
    """Unwinds a program whose peer raised; never reaches the caller (the peer's exception does)."""


class Baton:
    """Cooperative scheduling of the programs of one launch (only one runs at a time)."""

    def __init__(self, n: int):
        self.n = n
        self.cond = threading.Condition()
        self.turn = 0
        self.done = [False] * n
        self.blocked: dict[int, object] = {}
        self.arrived = 0
        self.generation = 0
        self.mail: dict[tuple, list] = {}
        self.me = threading.local()
        self.failed: BaseException | None = None
        self.races = Races(n)
        self.calls: dict[tuple, int] = {}  # (rank, rank-list) -> collectives issued so far
        self.pool: dict[tuple, dict] = {}  # (rank-list, call number) -> rank -> payload
        self.readers: dict[tuple, int] = {}

    def _next(self, i: int) -> int | None:
        for k in range(1, self.n + 1):
            j = (i + k) % self.n
            if not self.done[j] and (j not in self.blocked or self.blocked[j]()):
                return j
        return None

    def _wait_until(self, ready) -> None:
        i = self.me.index
        with self.cond:
            if self.failed is not None:
                raise PeerFailed
            if ready():
                return
            self.blocked[i] = ready
            nxt = self._next(i)
            if nxt is None or nxt == i and not ready():
                del self.blocked[i]
                raise KernelRuleError(
                    "err_invalid_argument",
                    f"program {i} waits forever (core_barrier/sendrecv/collective without a partner)",
                    "make every core reach the same barriers, sendrecvs and collectives",
                    kernel_location(),
                )
            self.turn = nxt
            self.cond.notify_all()
            self.cond.wait_for(lambda: self.failed is not None or (self.turn == i and ready()))
            del self.blocked[i]
            if self.failed is not None:
                raise PeerFailed

    def step(self) -> None:
        """Let the next program run up to its next HBM access (programs progress together)."""
        i = self.me.index
        with self.cond:
            nxt = self._next(i)
            if nxt is None or nxt == i:
                return
            self.turn = nxt
            self.cond.notify_all()
            self.cond.wait_for(lambda: self.failed is not None or self.turn == i)
            if self.failed is not None:
                raise PeerFailed

    def barrier(self) -> None:
        with self.cond:
            gen = self.generation
            self.arrived += 1
            if self.arrived == self.n:
                self.arrived = 0
                self.generation += 1
                self.races.synchronize()
                return
        self._wait_until(lambda: self.generation != gen)

    def sendrecv(self, to: int, frm: int, pipe, data):
        me = self.me.index
        with self.cond:
            self.mail.setdefault((pipe, me, to), []).append(data)
        key = (pipe, frm, me)
        self._wait_until(lambda: bool(self.mail.get(key)))
        with self.cond:
            self.races.synchronize()
            return self.mail[key].pop(0)

    def exchange(self, group: tuple[int, ...], payload) -> dict:
        """A collective: deposit this program's payload, wait for every member of the rank-list, return all."""
        me = self.me.index
        with self.cond:
            count = self.calls[(me, group)] = self.calls.get((me, group), 0) + 1
            key = (group, count)
            self.pool.setdefault(key, {})[me] = payload
        self._wait_until(lambda: len(self.pool[key]) == len(group))
        with self.cond:
            got = dict(self.pool[key])
            self.readers[key] = self.readers.get(key, 0) + 1
            if self.readers[key] == len(group):
                del self.pool[key], self.readers[key]
            if len(group) == self.n:
                self.races.synchronize()  # every program met: what came before is ordered
            return got

    def run(self, bodies: list) -> list:
        results: list = [None] * self.n
        errors: list = [None] * self.n

        def worker(i):
            self.me.index = i
            try:
                with self.cond:
                    self.cond.wait_for(lambda: self.turn == i or self.failed is not None)
                    if self.failed is not None:
                        raise PeerFailed
                results[i] = bodies[i]()
            except PeerFailed:
                pass
            except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
                errors[i] = e
                with self.cond:
                    self.failed = self.failed or e
            with self.cond:
                self.done[i] = True
                nxt = self._next(i)
                self.turn = nxt if nxt is not None else -1
                self.cond.notify_all()

        threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(self.n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if self.failed is not None:
            raise self.failed
        return results


def shared(t: NkiTensor) -> bool:
    """HBM every program of the launch sees: kernel arguments and shared_hbm tensors."""
    return shared_storage(t.storage)


class Races:
    """Per shared storage and program: which elements it wrote / read since the last barrier, and where."""

    def __init__(self, n: int):
        self.n = n
        self.marks: dict[int, dict[int, list]] = {}  # storage id -> program -> [written, read, accesses]
        self.reported: set = set()

    def synchronize(self) -> None:
        """A barrier orders everything before it: start a new epoch."""
        self.marks.clear()

    def access(self, t: NkiTensor, write: bool, program: int) -> None:
        st = t.storage
        if not write and not st.written:
            return  # nothing has written it yet: a read cannot race
        per = self.marks.setdefault(st.id, {})
        mine = per.get(program)
        if mine is None:
            mine = per[program] = [np.zeros(st.array.size, bool), np.zeros(st.array.size, bool), []]
        lo, hi = _bytes(t)
        here = kernel_location()
        for q, (w, r, accesses) in per.items():
            if q != program and (_touched(w, t) or (write and _touched(r, t))):
                other = next((loc for loc, was_write, a, b in reversed(accesses) if (write or was_write) and a < hi and lo < b), None)
                self._report(st.name, program, q, write, here, other)
        _mark(mine[0] if write else mine[1], t)
        mine[2].append((here, write, lo, hi))

    def _report(self, name: str, p: int, q: int, write: bool, here: str | None, other: str | None) -> None:
        key = (name, min(p, q), max(p, q), here, other)
        if key in self.reported:
            return
        self.reported.add(key)
        short = (here or "?").rpartition("/")[2]
        theirs = (other or "?").rpartition("/")[2]
        warn(
            "warn_spmd_race",
            f"programs {q} and {p} access the same bytes of {name!r} with no barrier between, at least one writing: "
            f"{theirs} (program {q}) and {short} (program {p}, {'write' if write else 'read'}); the result depends on "
            "which core gets there first (add nisa.core_barrier, or give each program its own part)",
        )


def _view(mask: np.ndarray, t: NkiTensor):
    """The elements of a flat per-element mask of t's storage that view t covers (an index array for indirect
    or reinterpreting views, else a strided view)."""
    st = t.storage
    if t.dyn is not None:
        _, idx = resolve_indirect(t, oob_skip=True)
        return idx[idx >= 0].reshape(-1)
    item, base = t._data.itemsize, st.array.dtype.itemsize
    if item != base:  # a view in another dtype: the element span it covers
        _, _, a, b, _, _ = region(t)
        return slice(a // base, -(-b // base))
    off = (t._data.__array_interface__["data"][0] - st.ptr) // item
    strides = tuple(s // item for s in t._data.strides)  # bool masks: one byte per element
    return np.lib.stride_tricks.as_strided(mask[off:], shape=t._data.shape, strides=strides)


def _touched(mask: np.ndarray, t: NkiTensor) -> bool:
    v = _view(mask, t)
    return bool(v.any() if isinstance(v, np.ndarray) and v.dtype == bool else mask[v].any())


def _mark(mask: np.ndarray, t: NkiTensor) -> None:
    v = _view(mask, t)
    if isinstance(v, np.ndarray) and v.dtype == bool:
        v[...] = True
    else:
        mask[v] = True


def _bytes(t: NkiTensor) -> tuple[int, int]:
    if t.dyn is not None:
        return 0, t.storage.array.nbytes
    _, _, lo, hi, _, _ = region(t)
    return lo, hi
