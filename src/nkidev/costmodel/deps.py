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
"""

from __future__ import annotations

from nkidev.emulator.trace import Access, Trace

MAX_ENTRIES = 256

Rect = tuple[int, int, int, int]  # row0, row1, col0, col1 (half-open)


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


def _row_bytes(trace: Trace) -> dict[int, int]:
    from nkidev.emulator.dtypes import DTYPES

    out = {}
    for tid, rec in trace.tensors.items():
        item = DTYPES[rec.dtype].itemsize if rec.dtype in DTYPES else 4
        out[tid] = max(1, (rec.shape[-1] if rec.shape else 1) * item)
    return out


def dependencies(trace: Trace) -> list[list[int]]:
    """For each instruction (by position in trace.instructions), the positions of the earlier
    instructions it must wait for."""
    row_bytes = _row_bytes(trace)
    writers: dict[int, list[tuple[Rect, int]]] = {}
    readers: dict[int, list[tuple[Rect, int]]] = {}
    deps: list[list[int]] = []
    for i, ins in enumerate(trace.instructions):
        found: set[int] = set()
        reads = [(a.tensor, region(a, row_bytes.get(a.tensor, 1))) for a in ins.reads]
        writes = [(a.tensor, region(a, row_bytes.get(a.tensor, 1))) for a in ins.writes]
        for tid, rect in reads:
            for other, j in writers.get(tid, ()):
                if _overlaps(rect, other):
                    found.add(j)
        for tid, rect in writes:
            for table in (writers, readers):
                entries = table.get(tid)
                if not entries:
                    continue
                kept = []
                for other, j in entries:
                    if _overlaps(rect, other):
                        found.add(j)
                        if _covers(rect, other):
                            continue
                    kept.append((other, j))
                table[tid] = kept
        for tid, rect in writes:
            _remember(writers, tid, rect, i)
        in_order = ins.engine != "dma"  # a later reader on an in-order engine finishes after the earlier one
        for tid, rect in reads:
            _remember(readers, tid, rect, i, replace_last=in_order and _same_engine(readers, tid, trace, ins))
        found.discard(i)
        deps.append(sorted(found))
    return deps


def _same_engine(readers: dict, tid: int, trace: Trace, ins) -> bool:
    entries = readers.get(tid)
    if not entries:
        return False
    last = trace.instructions[entries[-1][1]]
    return last.engine == ins.engine and last.program == ins.program


def _remember(table: dict, tid: int, rect: Rect, i: int, replace_last: bool = True) -> None:
    entries = table.setdefault(tid, [])
    if replace_last and entries and entries[-1][0] == rect:
        entries[-1] = (rect, i)  # same region again on the same in-order engine: the latest one suffices
        return
    entries.append((rect, i))
    if len(entries) > MAX_ENTRIES:
        del entries[: len(entries) - MAX_ENTRIES]
