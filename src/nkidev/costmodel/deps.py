"""Dependencies between trace instructions through the memory regions they read and write.

Every access becomes a rectangle in its storage: on-chip, partitions x bytes within a partition; in
HBM, rows x bytes within a row of the tensor's last dim (exact for slices of 2-D tensors, a superset
otherwise, so never a missed dependency). Walking the trace in program order gives read-after-write,
write-after-read and write-after-write edges; a matmul accumulating into PSUM depends on the previous
matmul of its accumulation group through the same rule (write after write on the same region).

Entries that a later write fully covers are dropped (the later write already orders everything after
them), so per-storage lists stay short. A list that still grows past MAX_ENTRIES (thousands of disjoint
pieces of one big tensor) forgets its oldest entries: those finished long before, so the edges lost
would not change the schedule.

The rectangles are computed for every access at once from the trace's columns (NumPy); only the walk
itself is a Python loop, fed in chunks so that no per-access Python objects pile up. Storages that are
never written, or written by one instruction before any read (most tiles of a loop body), skip the walk:
their edges are one vectorized overlap test of each read against that write.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator

import numpy as np

from nkidev.emulator.dtypes import DTYPES
from nkidev.emulator.trace import Access, Trace

MAX_ENTRIES = 256
CHUNK = 65536  # instructions per batch of the walk

Rect = tuple[int, int, int, int]  # row0, row1, col0, col1 (half-open)


class Deps:
    """For each instruction (by position), the positions of the earlier instructions it waits for, in CSR form:
    `deps[i]` is a list, `len(deps)`, iteration and `deps == [[...], ...]` work like a list of lists."""

    __slots__ = ("start", "src")

    def __init__(self, start: np.ndarray, src: np.ndarray):
        self.start = start  # int64, n + 1 offsets
        self.src = src  # int64 producer positions

    def __len__(self) -> int:
        return len(self.start) - 1

    def __getitem__(self, i: int) -> list[int]:
        if i < 0:
            i += len(self)
        return self.src[self.start[i] : self.start[i + 1]].tolist()

    def __iter__(self) -> Iterator[list[int]]:
        return (self[i] for i in range(len(self)))

    def __eq__(self, other) -> bool:
        return [list(d) for d in self] == [list(d) for d in other]

    __hash__ = None

    def __bool__(self) -> bool:
        return len(self) > 0

    def __repr__(self) -> str:
        return f"Deps({list(self)!r})" if len(self) < 20 else f"Deps({len(self)} instructions, {len(self.src)} edges)"

    def consumers(self) -> Deps:
        """The reverse graph: for each instruction, the later ones that wait for it (in position order)."""
        n = len(self)
        counts = np.diff(self.start)
        consumer = np.repeat(np.arange(n, dtype=np.int64), counts)
        order = np.argsort(self.src, kind="stable")
        start = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.src, minlength=n), out=start[1:])
        return Deps(start, consumer[order])

    def extended(self, m: int) -> Deps:
        """These deps followed by `m` instructions that wait for nothing (yet: add their edges with `with_edges`)."""
        if not m:
            return self
        return Deps(np.concatenate([self.start, np.full(m, self.start[-1], dtype=self.start.dtype)]), self.src)

    def with_edges(self, edges: Iterable[tuple[int, int]] | np.ndarray) -> Deps:
        """These deps plus (producer, consumer) edges (pairs, or an (m, 2) array), appended after a consumer's own
        deps in the order given (skipping self-edges, repeats and edges already present)."""
        e = edges if isinstance(edges, np.ndarray) else np.asarray(list(edges), dtype=np.int64)
        e = e.reshape(-1, 2)
        e = e[e[:, 0] != e[:, 1]]
        if not len(e):
            return self
        n = len(self)
        pair = e[:, 1] * n + e[:, 0]
        _, first = np.unique(pair, return_index=True)
        e, pair = e[np.sort(first)], pair[np.sort(first)]  # first occurrence of each edge, in the given order
        counts = np.diff(self.start)
        have = np.repeat(np.arange(n, dtype=np.int64), counts) * n + self.src
        keep = ~np.isin(pair, have)
        e = e[keep]
        if not len(e):
            return self
        by_consumer = np.argsort(e[:, 1], kind="stable")
        e = e[by_consumer]
        add = np.bincount(e[:, 1], minlength=n)
        start = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts + add, out=start[1:])
        src = np.empty(start[-1], dtype=np.int64)
        # each consumer's old deps go first, then its extra ones
        old_pos = np.repeat(start[:-1] - self.start[:-1], counts) + np.arange(len(self.src))
        src[old_pos] = self.src
        extra_first = start[:-1] + counts  # where a consumer's extra deps begin
        rank = np.arange(len(e)) - np.repeat(np.cumsum(add) - add, add)
        src[extra_first[e[:, 1]] + rank] = e[:, 0]
        return Deps(start, src)


def region(acc: Access, row_bytes: int) -> Rect:
    """The rectangle an access touches in its storage."""
    if acc.buffer != "hbm":
        return (acc.partition_start, acc.partition_start + acc.partitions, acc.byte_start, acc.byte_stop)
    lo, hi = acc.byte_start, acc.byte_stop
    r0, r1 = lo // row_bytes, (hi - 1) // row_bytes + 1
    c0, c1 = lo % row_bytes, (hi - 1) % row_bytes + 1
    if r1 - r0 > 1 and (c0 >= c1 or acc.contiguous_bytes >= row_bytes):
        c0, c1 = 0, row_bytes
    return (r0, r1, c0, c1)


def _overlaps(a: Rect, b: Rect) -> bool:
    return a[0] < b[1] and b[0] < a[1] and a[2] < b[3] and b[2] < a[3]


def _covers(a: Rect, b: Rect) -> bool:
    return a[0] <= b[0] and a[1] >= b[1] and a[2] <= b[2] and a[3] >= b[3]


class Accesses:
    """Every access of a trace as columns, computed for a range of instructions at a time: storage id,
    rectangle, memory. Per-form layout facts are tabulated once and gathered per access."""

    FIELDS = ("hbm", "sbuf", "p0", "p1", "lo", "hi", "run")

    def __init__(self, trace: Trace):
        cols = trace.columns()
        forms = trace.forms
        self.trace = trace
        self.n = len(trace)
        self.form = cols.form.astype(np.int64)
        n_reads_f = np.array([len(f.reads) for f in forms], dtype=np.int64)
        n_acc_f = np.array([len(f.reads) + len(f.writes) for f in forms], dtype=np.int64)
        self.n_reads = n_reads_f[self.form] if forms else np.zeros(0, np.int64)
        self.n_acc = n_acc_f[self.form] if forms else np.zeros(0, np.int64)
        self.start = cols.acc_start
        self.tensor = cols.acc_tensor
        self.width = max(1, int(n_acc_f.max()) if len(n_acc_f) else 1)
        table = {f: np.zeros((len(forms), self.width), dtype=np.int64) for f in self.FIELDS}
        for code, f in enumerate(forms):
            for k, lay in enumerate(f.reads + f.writes):
                table["hbm"][code, k] = lay.buffer == "hbm"
                table["sbuf"][code, k] = lay.buffer == "sbuf"
                table["p0"][code, k] = lay.partition_start
                table["p1"][code, k] = lay.partition_start + lay.partitions
                table["lo"][code, k] = lay.byte_start
                table["hi"][code, k] = lay.byte_stop
                table["run"][code, k] = lay.contiguous_bytes
        self.table = {f: t.reshape(-1) for f, t in table.items()}
        self._row_bytes = _RowBytes(trace)

    def last_use(self) -> np.ndarray:
        """Per access: whether it is the last access of its storage (the walk then forgets the storage)."""
        order = np.argsort(self.tensor, kind="stable")
        t = self.tensor[order]
        last = np.zeros(len(t), dtype=bool)
        if len(t):
            last[order[np.r_[t[1:] != t[:-1], True]]] = True
        return last

    def span(self, lo: int, hi: int) -> tuple[int, int]:
        """The access range [a0, a1) of instructions [lo, hi)."""
        if hi <= lo:
            return 0, 0
        return int(self.start[lo]), int(self.start[hi - 1] + self.n_acc[hi - 1])

    def chunk(self, lo: int, hi: int, fields=FIELDS) -> dict[str, np.ndarray]:
        """Per-access columns of instructions [lo, hi): `tensor`, the requested layout fields, and for
        rectangles (r0, r1, c0, c1) when "p0" is requested."""
        a0, a1 = self.span(lo, hi)
        n_acc = self.n_acc[lo:hi]
        form_of = np.repeat(self.form[lo:hi], n_acc)
        k = np.arange(a0, a1, dtype=np.int64) - np.repeat(self.start[lo:hi], n_acc)
        flat = form_of * self.width + k
        out = {f: self.table[f][flat] for f in fields}
        out["tensor"] = self.tensor[a0:a1]
        if "p0" in out:
            r0, r1, c0, c1 = out["p0"], out["p1"], out["lo"].copy(), out["hi"].copy()
            h = np.flatnonzero(out["hbm"])
            if len(h):
                rb = self._row_bytes(out["tensor"][h])
                blo, bhi, run = out["lo"][h], out["hi"][h], out["run"][h]
                hr0, hr1 = blo // rb, (bhi - 1) // rb + 1
                hc0, hc1 = blo % rb, (bhi - 1) % rb + 1
                full = (hr1 - hr0 > 1) & ((hc0 >= hc1) | (run >= rb))
                r0, r1 = r0.copy(), r1.copy()
                r0[h], r1[h] = hr0, hr1
                c0[h], c1[h] = np.where(full, 0, hc0), np.where(full, rb, hc1)
            out.update(r0=r0, r1=r1, c0=c0, c1=c1)
        return out


class _RowBytes:
    """Bytes of one row (last dim) of each storage; 1 for storages the trace does not know."""

    def __init__(self, trace: Trace):
        tab = trace.tensors
        self.tab = tab
        shape_codes, shapes = tab.codes("shape")
        dtype_codes, dtypes = tab.codes("dtype")
        last = np.array([s[-1] if s else 1 for s in shapes] or [1], dtype=np.int64)
        item = np.array([DTYPES[d].itemsize if d in DTYPES else 4 for d in dtypes] or [4], dtype=np.int64)
        self.per_row = np.maximum(1, last[shape_codes] * item[dtype_codes]) if len(shape_codes) else np.ones(0, np.int64)
        self.ids = tab.column("id")

    def __call__(self, tensors: np.ndarray) -> np.ndarray:
        rows = self.tab.rows_of(tensors, self.ids)
        if not len(self.per_row):
            return np.ones(len(tensors), np.int64)
        return np.where(rows >= 0, self.per_row[np.maximum(rows, 0)], 1)


def dependencies(trace: Trace, accesses: Accesses | None = None) -> Deps:
    """For each instruction (by position in the trace), the positions of the earlier instructions it must
    wait for (`accesses`: the trace's Accesses, when the caller has them already)."""
    acc = accesses if accesses is not None else Accesses(trace)
    n = acc.n
    forms = trace.forms
    cols = trace.columns()
    # an in-order engine: a later read by the same engine and program replaces an equal earlier one
    engine_codes = {e: k for k, e in enumerate(sorted({f.engine for f in forms}))}
    stream_np = (trace.forms_column([engine_codes[f.engine] for f in forms], np.int64) << 32) | cols.program.astype(np.int64)
    stream = array("q", stream_np.tobytes())
    in_order = trace.forms_column([f.engine != "dma" for f in forms], bool) if forms else np.zeros(0, bool)
    once = _WrittenOnce(acc)
    writers: dict[int, list[tuple[Rect, int]]] = {}
    readers: dict[int, list[tuple[Rect, int]]] = {}
    last_use = acc.last_use()  # a storage's entries are dropped after its last access: only live tiles are kept
    out_cons, out_src = array("q"), array("q")
    extra: list[np.ndarray] = []
    for lo in range(0, n, CHUNK):
        hi = min(n, lo + CHUNK)
        a0, a1 = acc.span(lo, hi)
        c = acc.chunk(lo, hi, ("hbm", "p0", "p1", "lo", "hi", "run"))
        extra.append(once.edges(a0, c))
        keep = ~once.simple[a0:a1]  # the walk needs only the other storages' accesses
        kept = np.flatnonzero(keep)
        ins = once.ins[a0:a1][kept]
        walked = ins[np.r_[True, ins[1:] != ins[:-1]]] if len(ins) else ins  # the instructions with an access to walk
        slot = np.searchsorted(walked, ins)
        n_reads = np.bincount(slot[~once.is_write[a0:a1][kept]], minlength=len(walked))
        n_acc = np.bincount(slot, minlength=len(walked))
        starts = np.r_[0, np.cumsum(n_acc)[:-1]].astype(np.int64)
        tensor = c["tensor"][kept].tolist()
        r0, r1, c0, c1 = (c[k][kept].tolist() for k in ("r0", "r1", "c0", "c1"))
        done = np.flatnonzero(last_use[a0:a1] & keep)  # accesses that end their storage's life
        ends: dict[int, list[int]] = {}
        for t, i in zip(c["tensor"][done].tolist(), once.ins[a0:a1][done].tolist()):
            ends.setdefault(i, []).append(t)
        accesses = (tensor, r0, r1, c0, c1)
        spans = (walked.tolist(), starts.tolist(), (starts + n_reads).tolist(), (starts + n_acc).tolist())
        engines = (stream_np[walked].tolist(), in_order[walked].tolist(), stream)
        _walk(accesses, spans, engines, writers, readers, ends, out_cons, out_src)
    pairs = np.stack([np.frombuffer(out_src, dtype=np.int64), np.frombuffer(out_cons, dtype=np.int64)], axis=1)
    return _csr(n, np.concatenate([pairs, *extra]))


class _WrittenOnce:
    """Storages whose accesses need no walk: never written (reads of them wait for nothing, and nothing
    writes after them), or written by one instruction before any read (each read waits for that write
    where the rectangles overlap). Most tiles are these: allocated in a loop body, filled once, read."""

    def __init__(self, acc: Accesses):
        tensor = acc.tensor
        n_acc = acc.n_acc
        self.ins = np.repeat(np.arange(acc.n, dtype=np.int64), n_acc)
        k = np.arange(len(tensor), dtype=np.int64) - np.repeat(acc.start, n_acc)
        self.is_write = k >= np.repeat(acc.n_reads, n_acc)
        _, dense = np.unique(tensor, return_inverse=True) if len(tensor) else (None, np.zeros(0, np.int64))
        m = int(dense.max()) + 1 if len(dense) else 0
        writes = np.bincount(dense[self.is_write], minlength=m)
        write_ins = np.full(m, -1, dtype=np.int64)
        write_ins[dense[self.is_write]] = self.ins[self.is_write]  # meaningful where there is one write
        first_read = np.full(m, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(first_read, dense[~self.is_write], self.ins[~self.is_write])
        one = (writes == 1) & (write_ins < first_read)
        self.dense = dense
        self.one = one
        self.write_ins = write_ins
        self.simple = (writes == 0)[dense] | one[dense]
        self.rect = np.zeros((m, 4), dtype=np.int64)  # the one write's rectangle, filled as the walk reaches it

    def edges(self, a0: int, c: dict[str, np.ndarray]) -> np.ndarray:
        """(producer, consumer) pairs of the chunk's reads of written-once storages; records the chunk's
        writes first (a write and its reads may share a chunk)."""
        a1 = a0 + len(c["tensor"])
        dense = self.dense[a0:a1]
        one = self.one[dense]
        rect = np.stack([c["r0"], c["r1"], c["c0"], c["c1"]], axis=1)
        w = np.flatnonzero(one & self.is_write[a0:a1])
        self.rect[dense[w]] = rect[w]
        r = np.flatnonzero(one & ~self.is_write[a0:a1])
        mine, theirs = rect[r], self.rect[dense[r]]
        hit = (mine[:, 0] < theirs[:, 1]) & (theirs[:, 0] < mine[:, 1]) & (mine[:, 2] < theirs[:, 3]) & (theirs[:, 2] < mine[:, 3])
        r = r[hit]
        return np.stack([self.write_ins[dense[r]], self.ins[a0:a1][r]], axis=1)


def _csr(n: int, pairs: np.ndarray) -> Deps:
    """Deps of n instructions from (producer, consumer) pairs: each instruction's producers sorted and distinct."""
    key = np.sort(pairs[:, 1] * n + pairs[:, 0])
    if len(key):
        key = key[np.r_[True, key[1:] != key[:-1]]]
    start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(key // n, minlength=n), out=start[1:])
    return Deps(start, key % n)


def _walk(accesses, spans, engines, writers, readers, ends, out_cons, out_src) -> None:
    """Walk instructions in program order over their accesses (reads, then writes) of the storages tracked
    in `writers` and `readers`, appending each instruction's producers to (out_cons, out_src)."""
    tensor, r0, r1, c0, c1 = accesses
    positions, starts, mids, stops = spans
    streams, orders, stream = engines
    for off, i in enumerate(positions):
        s, mid, end = starts[off], mids[off], stops[off]
        found: set[int] = set()
        for j in range(s, mid):
            entries = writers.get(tensor[j])
            if entries:
                rect = (r0[j], r1[j], c0[j], c1[j])
                for other, p in entries:
                    if rect[0] < other[1] and other[0] < rect[1] and rect[2] < other[3] and other[2] < rect[3]:
                        found.add(p)
        for j in range(mid, end):
            tid = tensor[j]
            rect = (r0[j], r1[j], c0[j], c1[j])
            for table in (writers, readers):
                entries = table.get(tid)
                if not entries:
                    continue
                kept = []
                for other, p in entries:
                    if rect[0] < other[1] and other[0] < rect[1] and rect[2] < other[3] and other[2] < rect[3]:
                        found.add(p)
                        if rect[0] <= other[0] and rect[1] >= other[1] and rect[2] <= other[2] and rect[3] >= other[3]:
                            continue
                    kept.append((other, p))
                table[tid] = kept
        for j in range(mid, end):
            _remember(writers, tensor[j], (r0[j], r1[j], c0[j], c1[j]), i)
        if s < mid:
            in_order, me = orders[off], streams[off]
            for j in range(s, mid):
                tid = tensor[j]
                same = False
                if in_order:
                    entries = readers.get(tid)
                    same = bool(entries) and stream[entries[-1][1]] == me
                _remember(readers, tid, (r0[j], r1[j], c0[j], c1[j]), i, replace_last=same)
        found.discard(i)
        if found:
            out_src.extend(found)
            out_cons.extend([i] * len(found))
        for tid in ends.get(i, ()):
            writers.pop(tid, None)
            readers.pop(tid, None)


def _remember(table: dict, tid: int, rect: Rect, i: int, replace_last: bool = True) -> None:
    entries = table.setdefault(tid, [])
    if replace_last and entries and entries[-1][0] == rect:
        entries[-1] = (rect, i)  # same region again on the same in-order engine: the latest one suffices
        return
    entries.append((rect, i))
    if len(entries) > MAX_ENTRIES:
        del entries[: len(entries) - MAX_ENTRIES]
