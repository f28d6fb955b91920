"""The cost model's output: start and end (ns since the kernel start) of every engine instruction,
DMA transfer and DMA packet, as columns (lists and NumPy arrays, never one object per row)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from nkidev.costmodel.deps import Deps
from nkidev.costmodel.dma import Transfer
from nkidev.costmodel.durations import EngineWork
from nkidev.emulator.trace import Trace
from nkidev.hardware import Target


@dataclass
class Rows:
    """One row per engine instruction: an nc_matmul gives LDWEIGHTS and MATMUL rows, a DMA its trigger."""

    ins: np.ndarray  # int64: position of the trace instruction the row came from
    opcode: list[str]  # profiler opcode: MATMUL, LDWEIGHTS, ACTIVATE, DMA_TRIGGER, ...
    engine: list[str]  # tensor | vector | scalar | gpsimd | sync
    pc: np.ndarray  # int64: index in its engine's instruction stream
    start: np.ndarray  # ns
    end: np.ndarray  # ns
    wait: np.ndarray  # ns the row was next in program order but waited on a dependency

    def __len__(self) -> int:
        return len(self.ins)


@dataclass
class Transfers:
    """One row per DMA instruction (neuron-explorer's DmaPacketAggregated), then one per spill DMA (costmodel/spills.py:
    from `spill_start` on, a spill's save then its reload)."""

    ins: np.ndarray  # int64 trace position (a spill DMA: of the tile's last access before its gap)
    row: np.ndarray  # int64: the DMA_TRIGGER row that issued it (a spill DMA: that last access's last row)
    plan: list[Transfer]  # shared objects: transfers of one form and tensors have one plan
    start: np.ndarray  # first packet start, ns
    end: np.ndarray  # last packet end, ns
    plan_code: np.ndarray | None = None  # index of each transfer's plan in `plans`
    plans: list[Transfer] | None = None  # the distinct plans
    spill_start: int | None = None  # transfers from here on are spill DMAs (None: all are instructions')

    def __len__(self) -> int:
        return len(self.ins)

    @property
    def issued(self) -> int:
        """How many transfers trace DMA instructions issued (the first ones; the spill DMAs follow)."""
        return len(self.ins) if self.spill_start is None else self.spill_start


class Packets:
    """One row per (transfer, DMA engine) share, ordered by transfer, each transfer's packets in engine order.

    Stored as the transfer and start time of each packet (12 bytes; a million-instruction kernel has ~10M
    packets); the engine, bytes and end follow from the transfer's plan and are computed when read: the
    `engine`, `nbytes`, `end` arrays, or `at(rows)` for a chunk of rows."""

    def __init__(self, transfer: np.ndarray, start: np.ndarray, plan_code: np.ndarray, plans: list):
        self.transfer = transfer  # int32 index into Transfers
        self.start = start  # float64 ns
        per_plan = np.array([len(t.engines) for t in plans] or [0], dtype=np.int64)
        self._offset = np.r_[0, np.cumsum(per_plan)][plan_code] if len(plan_code) else np.zeros(0, np.int64)  # per transfer
        first = np.r_[0, np.cumsum(per_plan[plan_code])] if len(plan_code) else np.zeros(1, np.int64)
        self._first = first[:-1]  # a transfer's first packet row
        self._engine = np.array([e for t in plans for e in t.engines], dtype=np.int8)
        self._bytes = np.array([b for t in plans for b in t.packet_bytes], dtype=np.int64)
        self._ns = np.array([d for t in plans for d in t.packet_ns], dtype=np.float64)

    def __len__(self) -> int:
        return len(self.transfer)

    def _flat(self, rows) -> np.ndarray:
        t = self.transfer[rows]
        return self._offset[t] + (rows - self._first[t])

    def at(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(engine, nbytes, end) of the given packet rows."""
        flat = self._flat(np.asarray(rows, dtype=np.int64))
        return self._engine[flat], self._bytes[flat], self.start[rows] + self._ns[flat]

    @property
    def engine(self) -> np.ndarray:  # DMA engine 0-15
        return self.at(np.arange(len(self)))[0]

    @property
    def nbytes(self) -> np.ndarray:
        return self.at(np.arange(len(self)))[1]

    @property
    def end(self) -> np.ndarray:
        return self.at(np.arange(len(self)))[2]


@dataclass
class Throttled:
    """The intervals a Tensor Engine ran under its dI/dt utilization limit (costmodel/throttle.py), by core then
    time: the limit starts over at `start_rate` of full rate at `start` and rises linearly, reaching full rate
    `ramp_ns` later, unless it re-engages first; `end` is whichever comes first."""

    core: np.ndarray  # int64: NeuronCore (SPMD program)
    start: np.ndarray  # ns: the re-engaging MATMUL's work begins (after its pipeline refill)
    end: np.ndarray  # ns
    trigger: np.ndarray  # int64: trace position of the MATMUL that re-engaged the limit
    start_rate: float = 1.0
    ramp_ns: float = 0.0

    def __len__(self) -> int:
        return len(self.start)

    def limit_at(self, row: np.ndarray | int, t: np.ndarray | float) -> np.ndarray | float:
        """The utilization limit (share of full rate) of interval(s) `row` at time(s) `t` inside it."""
        if self.ramp_ns <= 0:
            return np.ones_like(np.asarray(t, dtype=np.float64))
        return np.minimum(1.0, self.start_rate + (1.0 - self.start_rate) * (np.asarray(t) - self.start[row]) / self.ramp_ns)

    def affected_matmuls(self, rows: Rows, programs: np.ndarray) -> list[np.ndarray]:
        """Per interval, the MATMUL rows (indices into `rows`) of its core that run during it; `programs` is each
        trace instruction's core. For inspection: one pass over the MATMULs per interval."""
        is_mm = np.asarray([op == "MATMUL" for op in rows.opcode], dtype=bool)
        mm = np.flatnonzero(is_mm)
        core = np.asarray(programs)[np.asarray(rows.ins, dtype=np.int64)[mm]]
        out = []
        for c, s, e in zip(self.core.tolist(), self.start.tolist(), self.end.tolist()):
            mine = mm[core == c]
            out.append(mine[(rows.start[mine] < e) & (rows.end[mine] > s)])
        return out


def no_throttle() -> Throttled:
    empty = np.zeros(0, np.int64)
    return Throttled(empty, np.zeros(0), np.zeros(0), empty)


class FormValues(Sequence):
    """A per-instruction sequence of a per-form value (`values[form[i]]`), without one entry per instruction."""

    __slots__ = ("values", "form")

    def __init__(self, values: list, form: np.ndarray):
        self.values, self.form = values, form

    def __len__(self) -> int:
        return len(self.form)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self.values[f] for f in self.form[i].tolist()]
        return self.values[self.form[i]]


@dataclass
class Timeline:
    trace: Trace
    target: Target
    rows: Rows
    transfers: Transfers
    packets: Packets
    work: Sequence[EngineWork | None]  # per trace instruction; None for DMAs (FormValues: one object per form)
    deps: Deps | list = field(repr=False, default_factory=list)  # per instruction, the positions it waits for
    throttled: Throttled = field(default_factory=no_throttle)  # the TensorE dI/dt limit in force (empty: none)

    @property
    def total_ns(self) -> float:
        """Kernel time: the last end of any row or packet (the kernel starts at 0)."""
        ends = [float(self.rows.end.max())] if len(self.rows.end) else []
        for lo in range(0, len(self.packets), 1 << 20):  # packet ends are computed, a block at a time
            ends.append(float(self.packets.at(np.arange(lo, min(len(self.packets), lo + (1 << 20))))[2].max()))
        return max(ends, default=0.0)

    def instruction_times(self) -> tuple[np.ndarray, np.ndarray]:
        """(start, end) per trace instruction (by position): first row start to last row end; a DMA ends with
        its last packet."""
        n = len(self.trace.instructions)
        start, end = np.full(n, np.inf), np.zeros(n)
        ins = np.asarray(self.rows.ins, dtype=np.int64)
        np.minimum.at(start, ins, self.rows.start)
        np.maximum.at(end, ins, self.rows.end)
        k = self.transfers.issued  # a spill DMA is no part of the instruction it follows
        if k:
            np.maximum.at(end, np.asarray(self.transfers.ins[:k], dtype=np.int64), self.transfers.end[:k])
        return start, end

    def spans(self, position: int) -> list[tuple[str, float, float]]:
        """(opcode, start, end) of the rows of one trace instruction, plus ('DMA', start, end) for a DMA."""
        out = [
            (self.rows.opcode[r], float(self.rows.start[r]), float(self.rows.end[r]))
            for r in np.flatnonzero(np.asarray(self.rows.ins) == position)
        ]
        out += [
            ("DMA", float(self.transfers.start[t]), float(self.transfers.end[t]))
            for t in np.flatnonzero(np.asarray(self.transfers.ins[: self.transfers.issued]) == position)
        ]
        return out

    def busy_ns(self) -> dict[str, float]:
        """Merged busy time per engine (tensor, vector, scalar, gpsimd, sync) and for the DMA packets."""
        from nkidev.costmodel.intervals import merged_length

        engines = np.asarray(self.rows.engine)
        out = {
            e: merged_length(self.rows.start[engines == e], self.rows.end[engines == e])
            for e in ("tensor", "vector", "scalar", "gpsimd", "sync")
            if (engines == e).any()
        }
        if len(self.packets):
            out["dma"] = merged_length(self.packets.start, self.packets.end)
        return out
