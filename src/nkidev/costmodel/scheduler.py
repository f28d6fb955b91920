"""The scheduler: each engine list-schedules its instructions over a bounded window, DMAs share 16 DMA engines.

Model (every number from the target's TOML):
- Each NeuronCore (SPMD program) has instruction streams: tensor, vector, scalar, gpsimd, sync, and one per DMA
  queue. An instruction starts when its stream is free and every instruction it depends on (deps.py, plus the
  kernel's depends_on edges) has finished, plus a semaphore hand-off (`semaphore_sync_ns`) across engines or the
  SBUF/PSUM access overhead within one engine. Like the compiler's list scheduler, a stream may issue any of its
  next `schedule_window` unissued instructions (first ready first, source order breaking ties), but never across
  a fence (sequential_range / device-loop iterations, no_reorder blocks, rendezvous: Trace.epochs).
- Tensor Engine: LDWEIGHTS (LoadStationary) may run in the background of the previous MATMUL (it
  starts once that MATMUL has started and its stationary operand is ready); MATMUL follows its
  LDWEIGHTS, the previous MATMUL and every other dependency (moving operand, PSUM accumulation); a
  MATMUL after an idle gap pays the pipeline refill (`mm_init_latency_cycles`); where the target has a dI/dt
  limit, each Tensor Engine keeps its burst state (throttle.py) and a MATMUL runs at the limit of its time.
- DMA: the trigger takes `issue_ns` on its queue; after `fixed_cost_ns` each DMA engine serving the
  transfer moves its share as one packet, first come first served per DMA engine.
- core_barrier / sendrecv: the k-th one of every core starts together, once all cores reached it.
- NC-v2: engines listed in `exclusive_sbuf_engines` / `exclusive_psum_engines` never access that memory
  at the same time (the compiler serializes them).
- SBUF/PSUM space is finite: tiles reuse the space of dead tiles (buffers.py), which bounds how far
  loads run ahead of compute.
- SBUF spills (Trace.spills) are DMAs too where the target times them (spills.py; off by default): instructions
  after the trace's on the spill queues, with edges from and to the trace instructions around each spill's gap;
  they have transfers but no profile row.

Instructions are released in order of the time they can start (a heap), so the DMA engines serve
packets in the order they become ready, whatever queue they come from. O(n log n) in instructions.
"""

from __future__ import annotations

import gc
import heapq
import math
from array import array

import numpy as np

from nkidev import heap
from nkidev.costmodel.buffers import reuse_edge_arrays
from nkidev.costmodel.deps import Accesses, Deps, dependencies
from nkidev.costmodel.dma import Transfer, label, plan, plan_key
from nkidev.costmodel.durations import (
    DMA_TRIGGER,
    LOAD_STATIONARY,
    MATMUL,
    dependent_latency_ns,
    engine_work,
    opcode_name,
)
from nkidev.costmodel.spills import SpillDMAs, spill_dmas
from nkidev.costmodel.throttle import TensorThrottle, refill_ns, throttled, throttled_intervals
from nkidev.costmodel.timeline import FormValues, Packets, Rows, Throttled, Timeline, Transfers, no_throttle
from nkidev.emulator.ops import OPS
from nkidev.emulator.trace import Trace
from nkidev.hardware import Target, get_target

COMPUTE, TENSOR, DMA = 0, 1, 2
_ENGINES = ("tensor", "vector", "scalar", "gpsimd", "sync", "dma")  # engine codes of the per-instruction arrays


def _as_array(values, typecode: str) -> memoryview:
    """A NumPy array seen as a typed memoryview: indexing returns Python numbers as fast as a list does, at 1-8
    bytes an entry instead of a pointer plus an object, without copying (the event loop's per-instruction state)."""
    np_type = {"q": np.int64, "d": np.float64, "b": np.int8, "i": np.int32}[typecode]
    return memoryview(np.ascontiguousarray(values, dtype=np_type))


def _as_positions(values) -> memoryview:
    """Instruction, row or edge positions as an int32 memoryview when they fit (always, short of 2**31 of them),
    else int64: half the bytes of the event loop's per-instruction state."""
    values = np.asarray(values)
    small = not len(values) or (int(values.min()) >= -(2**31) and int(values.max()) < 2**31)
    return _as_array(values, "i" if small else "q")


def _zeros(n: int) -> tuple[np.ndarray, memoryview]:
    """A float64 array and a memoryview of it for the event loop to write."""
    values = np.zeros(n)
    return values, memoryview(values)


class _Plan:
    """Static facts per instruction, computed per form (and per distinct DMA) and gathered into columns: kind,
    stream, engine work or transfer, and its profile rows."""

    def __init__(self, trace: Trace, hw: Target, spills: SpillDMAs | None = None):
        cols = trace.columns()
        forms = trace.forms
        n = len(trace)
        form = cols.form.astype(np.int64)
        self.n = n
        # the spill DMAs (spills.py) are instructions n .. n_all - 1: they have a stream, a transfer and a row slot
        # (dropped from the result's rows), but no trace row
        self.spills = spills
        self.m = m = len(spills) if spills is not None else 0
        self.n_all = n + m
        kinds = [DMA if f.engine == "dma" else TENSOR if f.engine == "tensor" else COMPUTE for f in forms]
        kind = np.asarray(kinds, dtype=np.int64)[form] if forms else np.zeros(0, np.int64)
        self.works = [None if f.engine == "dma" else engine_work(f, hw) for f in forms]
        busy = np.array([w.busy_ns if w is not None else 0.0 for w in self.works] or [0.0])[form]
        load = np.array([w.load_ns if w is not None else 0.0 for w in self.works] or [0.0])[form]
        self.kind = _as_array(_extended(kind, m, DMA), "b")
        self.busy = _as_array(_extended(busy, m, 0.0), "d")
        self.load = _as_array(_extended(load, m, 0.0), "d")
        self.program = cols.program.astype(np.int64)
        if m:
            self.program = np.concatenate([self.program, spills.program])
        self._transfers(trace, hw, form, kind)
        self._streams_and_rows(trace, form, kind)

    def _reorder_segments(self, trace: Trace, stream: np.ndarray, by_stream: np.ndarray, bounds: np.ndarray) -> None:
        """Per instruction, its position in its stream and the end of its epoch there (the first later position of
        another epoch): the scheduler may issue an instruction ahead of earlier ones of its stream only within one
        epoch, and only inside the window of the next `schedule_window` instructions."""
        n = self.n_all
        position = np.empty(n, dtype=np.int64)
        sorted_stream = stream[by_stream]
        position[by_stream] = np.arange(n, dtype=np.int64) - bounds[sorted_stream] if n else position
        epochs = _epochs(trace) if self.n else np.zeros(0, np.int64)
        if self.m:  # a spill DMA is in the epoch of the instruction it follows
            epochs = np.concatenate([epochs, epochs[self.spills.anchor]])
        epochs = epochs[by_stream]
        change = np.ones(n, dtype=bool)
        change[1:] = (sorted_stream[1:] != sorted_stream[:-1]) | (epochs[1:] != epochs[:-1])
        starts = np.append(np.flatnonzero(change), n)
        segment_end = np.empty(n, dtype=np.int64)
        segment_end[by_stream] = starts[np.cumsum(change)] - bounds[sorted_stream] if n else segment_end
        self.position = _as_positions(position)
        self.segment_end = _as_positions(segment_end)

    def _transfers(self, trace: Trace, hw: Target, form: np.ndarray, kind: np.ndarray) -> None:
        """One Transfer per distinct (form, source tensor, HBM tensor name): a loop reloading tiles has a few."""
        cols = trace.columns()
        forms = trace.forms
        dma = np.flatnonzero(kind == DMA)
        self.dma_positions = dma
        n_reads = np.array([len(f.reads) for f in forms] or [0], dtype=np.int64)[form[dma]]
        start = cols.acc_start[dma]
        src_t = cols.acc_tensor[start] if len(dma) else np.zeros(0, np.int64)
        dst_t = cols.acc_tensor[start + n_reads] if len(dma) else np.zeros(0, np.int64)
        tab = trace.tensors
        ids = tab.column("id")
        kinds, strings = tab.codes("kind")
        names, _ = tab.codes("name")

        def facts(t):
            rows = tab.rows_of(t, ids)
            ok = rows >= 0
            r = np.maximum(rows, 0)
            return np.where(ok, kinds[r] if len(kinds) else -1, -1), np.where(ok, names[r] if len(names) else -1, -1)

        src_kind, src_name = facts(src_t)
        dst_kind, dst_name = facts(dst_t)
        src_hbm = np.array([f.engine == "dma" and (f.reads or f.writes)[0].buffer == "hbm" for f in forms] or [False])
        hbm_first = src_hbm[form[dma]] if len(dma) else np.zeros(0, bool)
        var = np.where(hbm_first, src_name, dst_name)
        keys = np.stack([form[dma], src_kind, dst_kind, var], axis=1) if len(dma) else np.zeros((0, 4), np.int64)
        uniq, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")  # plans numbered in order of first use
        renumber = np.empty(len(order), dtype=np.int64)
        renumber[order] = np.arange(len(order))
        self.plan_code = renumber[inverse.reshape(-1)] if len(dma) else np.zeros(0, np.int64)
        self.plans: list[Transfer] = []
        same: dict[tuple, Transfer] = {}
        for u in uniq[order]:
            f = forms[int(u[0])]
            src = f.reads[0] if f.reads else f.writes[0]
            dst = f.writes[0]
            s_kind = strings[u[1]] if u[1] >= 0 else "internal"
            d_kind = strings[u[2]] if u[2] >= 0 else "internal"
            names = (label(src.buffer, s_kind), label(dst.buffer, d_kind), strings[u[3]] if u[3] >= 0 else "")
            key = plan_key(f, *names)
            if key not in same:
                same[key] = plan(f, *names, hw)
            self.plans.append(same[key])
        transfer_index = np.full(self.n_all, -1, dtype=np.int64)
        transfer_index[dma] = np.arange(len(dma))
        if self.m:
            self._spill_transfers(transfer_index, len(dma))
        self.transfer_of = _as_positions(transfer_index)
        self.transfer_plan = [self.plans[c] for c in self.plan_code.tolist()]
        self.n_transfers = len(dma) + self.m

    def _spill_transfers(self, transfer_index: np.ndarray, first: int) -> None:
        """The spill DMAs' transfers after the trace's: plans numbered after the trace's, in order of first use."""
        code: dict[int, int] = {}
        for t in self.spills.plans:
            if id(t) not in code:
                code[id(t)] = len(self.plans)
                self.plans.append(t)
        spill_codes = np.array([code[id(t)] for t in self.spills.plans], dtype=np.int64)
        self.plan_code = np.concatenate([self.plan_code, spill_codes])
        transfer_index[self.n :] = first + np.arange(self.m)

    def _streams_and_rows(self, trace: Trace, form: np.ndarray, kind: np.ndarray) -> None:
        forms = trace.forms
        n = self.n
        names: dict[str, int] = {}

        def code(name: str) -> int:
            return names.setdefault(name, len(names))

        # the instruction stream: the engine, or for a DMA its queue (software DGE DMAs are issued by GpSimd)
        stream_name = np.array([code(f.engine) for f in forms] or [0], dtype=np.int64)[form]
        issue = np.array([code(t.issue_engine) for t in self.plans] or [0], dtype=np.int64)
        queue = np.array([code(t.issue_engine if t.issue_engine == "gpsimd" else t.queue) for t in self.plans] or [0], dtype=np.int64)
        dma = self.dma_positions
        stream_name[dma] = queue[self.plan_code[: len(dma)]]
        n_all = self.n_all
        if self.m:  # spill DMAs: on their queues
            stream_name = np.concatenate([stream_name[:n], queue[self.plan_code[len(dma) :]]])
        skey = stream_name * (int(self.program.max()) + 1 if n_all else 1) + self.program
        uniq, first, inverse = np.unique(skey, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")  # streams numbered in order of first appearance
        renumber = np.empty(len(order), dtype=np.int64)
        renumber[order] = np.arange(len(order))
        stream = renumber[inverse.reshape(-1)] if n_all else np.zeros(0, np.int64)
        self.stream = _as_array(stream, "i")
        by_stream = np.argsort(stream, kind="stable")
        if self.m:  # a spill queue issues its DMAs in the order of the trace positions they follow, saves first
            anchor = self.spills.anchor * 2 + (np.arange(self.m) & 1)
            by_stream = np.lexsort((np.concatenate([np.arange(n) * 2, anchor]), stream))
        bounds = np.searchsorted(stream[by_stream], np.arange(len(order) + 1))
        self.members = [_as_positions(by_stream[bounds[q] : bounds[q + 1]]) for q in range(len(order))]
        self._reorder_segments(trace, stream, by_stream, bounds)
        # profile rows: two for Tensor Engine instructions (LDWEIGHTS, MATMUL), one for the others
        n_rows = np.where(kind == TENSOR, 2, 1)
        first_row = np.zeros(n, dtype=np.int64)
        if n:
            first_row[1:] = np.cumsum(n_rows)[:-1]
        n_trace_rows = int(n_rows.sum())
        # a spill DMA's trigger times go to a row slot after the trace's rows (the result keeps the trace's)
        self.first_row = _as_positions(np.concatenate([first_row, n_trace_rows + np.arange(self.m, dtype=np.int64)]))
        self.row_slots = n_trace_rows + self.m
        row_ins = np.repeat(np.arange(n, dtype=np.int64), n_rows)
        second = np.zeros(len(row_ins), dtype=bool)
        second[first_row[kind == TENSOR] + 1] = True
        opcodes = [LOAD_STATIONARY if f.engine == "tensor" else DMA_TRIGGER if f.engine == "dma" else opcode_name(f.opcode) for f in forms]
        op_code = np.array([code(o) for o in opcodes] or [0], dtype=np.int64)[form]
        eng_code = np.array([code("tensor" if f.engine == "tensor" else f.engine) for f in forms] or [0], dtype=np.int64)[form]
        eng_code[dma] = issue[self.plan_code[: len(dma)]]
        row_op = op_code[row_ins]
        row_op[second] = code(MATMUL)
        row_engine = eng_code[row_ins]
        # pc: index of the row in its (program, engine) stream
        pkey = row_engine * (int(self.program.max()) + 1 if n else 1) + self.program[row_ins]
        by_key = np.argsort(pkey, kind="stable")
        sorted_key = pkey[by_key]
        group_start = np.r_[0, np.flatnonzero(sorted_key[1:] != sorted_key[:-1]) + 1] if len(pkey) else np.zeros(0, np.int64)
        rank = np.arange(len(pkey)) - np.repeat(group_start, np.diff(np.r_[group_start, len(pkey)]))
        pc = np.empty(len(pkey), dtype=np.int64)
        pc[by_key] = rank
        text = list(names)
        self.rows = (row_ins, [text[c] for c in row_op.tolist()], [text[c] for c in row_engine.tolist()], pc)
        self.n_rows = len(row_ins)


def _extended(values: np.ndarray, m: int, fill) -> np.ndarray:
    """`values` (one per trace instruction) followed by `m` copies of `fill` (for the spill DMAs)."""
    return np.concatenate([values, np.full(m, fill, dtype=values.dtype)]) if m else values


def _stationary_tensors(trace: Trace, plan: _Plan) -> array:
    """Storage LDWEIGHTS loads per instruction (the stationary operand, the data of a TensorE transpose), -1
    for the others."""
    forms = trace.forms
    cols = trace.columns()
    k = []
    for f in forms:
        pick = next((j for j, a in enumerate(f.reads) if a.role in ("stationary", "data")), 0 if f.reads else -1)
        k.append(pick if f.engine == "tensor" else -1)
    kk = np.array(k or [-1], dtype=np.int64)[cols.form]
    out = np.full(len(trace), -1, dtype=np.int64)
    has = np.flatnonzero(kk >= 0)
    out[has] = cols.acc_tensor[cols.acc_start[has] + kk[has]]
    return _as_array(_extended(out, plan.m, -1), "q")


def _epochs(trace: Trace) -> np.ndarray:
    """Per instruction, its reorder epoch: the trace's fences (sequential loop iterations, no_reorder blocks), plus
    a fence on each side of every rendezvous (core_barrier, sendrecv), which nothing may pass."""
    epochs = trace.epochs()
    if trace.programs > 1 and len(trace):
        rendezvous = trace.forms_column([OPS[f.opcode].rendezvous for f in trace.forms], bool)
        if rendezvous.any():
            edge = rendezvous.copy()
            edge[1:] |= rendezvous[:-1]  # the instruction after a rendezvous starts a new epoch too
            epochs = epochs * 2 + np.cumsum(edge)  # monotone: every old boundary stays one, each edge adds one
    return epochs


def _explicit_edges(trace: Trace) -> np.ndarray:
    """The kernel's own depends_on edges as (producer, consumer) positions; an edge against program order (which
    no hardware ordering could honour) is dropped."""
    if not trace.edges:
        return np.zeros((0, 2), dtype=np.int64)
    ids = trace.columns().id
    by_id = dict(zip(ids.tolist(), range(len(ids))))
    pairs = [(by_id[a], by_id[b]) for a, b in trace.edges if a in by_id and b in by_id]
    edges = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    return edges[edges[:, 0] < edges[:, 1]]


def _shared_ports(trace: Trace, hw: Target) -> list[tuple[str, ...]]:
    """Per form, the memory ports its instructions hold exclusively against other engines (NC-v2: Vector/GpSimd
    on SBUF, Vector/Scalar on PSUM; from the target's `exclusive_*_engines`)."""
    out = []
    for f in trace.forms:
        buffers = {a.buffer for a in f.reads + f.writes}
        ports = []
        if f.engine in hw.engines.exclusive_sbuf_engines and "sbuf" in buffers:
            ports.append("sbuf")
        if f.engine in hw.engines.exclusive_psum_engines and "psum" in buffers:
            ports.append("psum")
        out.append(tuple(ports))
    return out


def _barrier_groups(trace: Trace) -> dict[int, list[int]]:
    """k-th rendezvous instruction (core_barrier, sendrecv: OpDef.rendezvous) of every program -> the positions
    of that group (multi-core runs only): the group starts together, once every core has reached it."""
    if trace.programs <= 1:
        return {}
    rendezvous = trace.forms_column([OPS[f.opcode].rendezvous for f in trace.forms], bool)
    cols = trace.columns()
    seen: dict[tuple[str, int], int] = {}
    groups: dict[tuple[str, int], list[int]] = {}
    for i in np.flatnonzero(rendezvous).tolist():
        opcode, program = trace.forms[cols.form[i]].opcode, int(cols.program[i])
        k = seen.get((opcode, program), 0)
        seen[(opcode, program)] = k + 1
        groups.setdefault((opcode, k), []).append(i)
    return {i: members for members in groups.values() if len(members) > 1 for i in members}


def schedule(trace: Trace, target: Target | str | None = None) -> Timeline:
    """Time every instruction of `trace` on `target` (default: the trace's own target). Pure: never runs
    the kernel again."""
    hw = get_target(target if target is not None else trace.target)
    # The emulator's objects are all alive now; without this, the cyclic GC's first full collection scans them
    # all in the middle of the event loop (a third of its time). The loop itself makes no cyclic garbage.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        accesses = Accesses(trace)  # one for both passes over the accesses
        reuse = np.stack(reuse_edge_arrays(trace, hw, accesses), axis=1)
        deps = dependencies(trace, accesses).with_edges(np.concatenate([reuse, _explicit_edges(trace)]))
        del accesses, reuse
        spills = spill_dmas(trace, hw)
        # the spill DMAs wait for and hold back trace instructions; the timeline keeps the trace's own dependencies
        scheduled = deps.extended(len(spills)).with_edges(spills.edges) if spills is not None else deps
        run = _Run(trace, hw, scheduled, _Plan(trace, hw, spills), deps)
        timeline = run.timeline()
        del run  # the event loop's state: per-instruction arrays, freed before the next stage
        heap.release()
        return timeline
    finally:
        if gc_was_enabled:
            gc.enable()


class _Run:
    """The event loop's state; `timeline()` runs it once."""

    def __init__(self, trace: Trace, hw: Target, deps: Deps, plan: _Plan, trace_deps: Deps | None = None):
        n, m = plan.n_all, plan.m  # the trace's instructions, then the spill DMAs
        self.trace, self.hw, self.plan = trace, hw, plan
        self.deps = trace_deps if trace_deps is not None else deps  # what the timeline reports
        self.pending = _as_array(np.diff(deps.start), "i")
        consumers = deps.consumers()
        self.cons_start = _as_positions(consumers.start)
        self.cons = _as_positions(consumers.src)
        del consumers
        self.dep_ready = array("d", bytes(8 * n))
        self.ls_ready = array("d", bytes(8 * n))  # Tensor Engine: when the stationary operand is ready (LDWEIGHTS needs only it)
        self.stationary = _stationary_tensors(trace, plan)
        cols = trace.columns()
        forms = trace.forms
        n_reads = np.array([len(f.reads) for f in forms] or [0], dtype=np.int64)[cols.form]
        n_writes = np.array([len(f.writes) for f in forms] or [0], dtype=np.int64)[cols.form]
        # what an instruction writes, for LDWEIGHTS readiness: its one written storage, or -2 to look them up
        first = np.minimum(cols.acc_start + n_reads, max(0, len(cols.acc_tensor) - 1))
        one = cols.acc_tensor[first] if len(cols.acc_tensor) else np.zeros(len(trace), np.int64)
        written = np.where(n_writes == 1, one, np.where(n_writes == 0, -1, -2)).astype(np.int64)
        written = _extended(written, m, -1)
        if m:  # a reload writes its tile back (an LDWEIGHTS of it waits for it); a save writes none
            written[len(trace) + 1 :: 2] = [sp.tensor for sp in plan.spills.spills]
        self.written = _as_array(written, "q")
        writes_from = (cols.acc_start + n_reads).astype(np.int64)
        self.writes_from, self.writes_to = _extended(writes_from, m, 0), _extended(writes_from + n_writes, m, 0)
        self.acc_tensor = cols.acc_tensor
        self.end = array("d", bytes(8 * n))
        nq = len(plan.members)
        self.head = [0] * nq  # per stream: the position of its first instruction not issued yet
        self.limit = [0] * nq  # per stream: positions below it are in the reorder window (offered once ready)
        self.window = hw.engines.schedule_window
        rank_type = np.int32 if n < 2**31 else np.int64
        self.issue_rank_np = np.full(n, -1, dtype=rank_type)  # the order instructions were issued in (-1: not yet)
        self.issue_rank = memoryview(self.issue_rank_np)
        self.n_issued = 0
        self.free = [0.0] * nq  # stream free (compute: engine idle; DMA queue: last trigger issued)
        self.ls_free = [0.0] * nq  # Tensor Engine: LoadStationary unit idle
        self.mm_start = [0.0] * nq  # Tensor Engine: start of the previous MATMUL
        self.mm_started = [False] * nq
        nrows = plan.row_slots
        (self.row_start_np, self.row_start), (self.row_end_np, self.row_end) = _zeros(nrows), _zeros(nrows)
        self.row_wait_np, self.row_wait = _zeros(nrows)
        (self.t_start_np, self.t_start), (self.t_end_np, self.t_end) = _zeros(plan.n_transfers), _zeros(plan.n_transfers)
        # packet rows: transfer by transfer (each transfer's first row is known before it runs)
        per_plan = np.array([len(t.engines) for t in plan.plans] or [0], dtype=np.int64)
        counts = per_plan[plan.plan_code] if len(plan.plan_code) else np.zeros(0, np.int64)
        first_packet = np.r_[0, np.cumsum(counts)]
        self.pk_first = _as_array(first_packet, "q")
        self.pk_start_np, self.pk_start = _zeros(int(first_packet[-1]))
        self.dma_free: dict[int, list[float]] = {}
        self.sync_ns = hw.engines.semaphore_sync_ns
        self.fixed_ns = hw.dma.fixed_cost_ns
        engine_code = {e: k for k, e in enumerate(_ENGINES)}
        eng = trace.forms_column([engine_code[f.engine] for f in forms], np.int64) if forms else np.zeros(0, np.int64)
        eng = _extended(eng, m, engine_code["dma"])
        # instructions of one (engine, program) in-order stream hand over with the engine's own latency
        self.lane = _as_array((eng << 32) | plan.program, "q")
        self.is_dma = _as_array(eng == engine_code["dma"], "b")
        same = [dependent_latency_ns(e, hw) for e in _ENGINES]
        self.same_ns = _as_array(np.asarray(same)[eng] if n else np.zeros(0), "d")
        self.programs = _as_array(plan.program, "q")
        self.barrier = _barrier_groups(trace)
        ports = _shared_ports(trace, hw)
        self.ports = [ports[f] for f in cols.form.tolist()] + [()] * m if any(ports) else None
        self.port_free: dict[tuple[int, str], float] = {}
        self.arrived: dict[int, float] = {}
        self.heap: list[tuple[float, int, int]] = []
        self.waiting: list[list[tuple[float, int]]] = [[] for _ in range(nq)]
        self.available: list[list[int]] = [[] for _ in range(nq)]
        self.token = [0] * nq
        self.tensor_stream = [len(m) > 0 and plan.kind[m[0]] == TENSOR for m in plan.members]

    # --- readiness -------------------------------------------------------------------------------

    # Each stream keeps its offered instructions (ready, in the window) in two heaps: `waiting` by the time their
    # operands are ready, `available` (ready by the time the stream is free) by program position. The stream's
    # next instruction is the first available one, else the one ready first: the compiler's list scheduling with
    # source order as the priority. Only that choice sits in the global heap, as (start, position, token).

    def _offer(self, c: int) -> None:
        q = self.plan.stream[c]
        ready = self.ls_ready[c] if self.plan.kind[c] == TENSOR else self.dep_ready[c]
        heapq.heappush(self.waiting[q], (ready, c))

    def _choose(self, q: int) -> None:
        """Put stream q's next instruction in the global heap (superseding its earlier entry). The event loop
        inlines this and `_advance` (the same steps); these methods make the first offers."""
        waiting, available = self.waiting[q], self.available[q]
        if not waiting and not available:
            return
        if self.tensor_stream[q]:
            a, b = self.ls_free[q], self.mm_start[q]
            free = a if a > b else b
        else:
            free = self.free[q]
        push = heapq.heappush
        while waiting and waiting[0][0] <= free:
            push(available, heapq.heappop(waiting)[1])
        token = self.token[q] = self.token[q] + 1
        if available:
            push(self.heap, (free, available[0], token))
        else:
            ready, i = waiting[0]
            push(self.heap, (ready, i, token))

    def _advance(self, q: int) -> None:
        """Move stream q's window past its issued instructions and offer those that entered it and are ready."""
        plan, rank = self.plan, self.issue_rank
        members = plan.members[q]
        h, m = self.head[q], len(members)
        while h < m and rank[members[h]] >= 0:
            h += 1
        self.head[q] = h
        if h == m:
            return
        end = plan.segment_end[members[h]]
        limit = h + self.window if h + self.window < end else end
        pending = self.pending
        for p in range(self.limit[q], limit):
            c = members[p]
            if pending[c] == 0:
                self._offer(c)
        if limit > self.limit[q]:
            self.limit[q] = limit

    def _arrive(self, i: int, ready: float) -> list[int]:
        """A core reached barrier i: returns the barriers to run now (all of the group once complete)."""
        group = self.barrier[i]
        self.arrived[i] = ready
        if any(m not in self.arrived for m in group):
            return []
        release = max(self.arrived[m] for m in group)
        for m in group:
            self.dep_ready[m] = max(self.dep_ready[m], release)
        return group

    # --- the loop ------------------------------------------------------------------------------------

    # What only the event loop reads: dropped before the result is assembled, whose temporaries would otherwise
    # come on top of it at the stage's peak (tens of MB per million instructions each).
    _LOOP_STATE = (
        "pending", "cons_start", "cons", "dep_ready", "ls_ready", "stationary", "written", "writes_from", "writes_to",
        "acc_tensor", "end", "head", "limit", "issue_rank", "free", "ls_free", "mm_start", "mm_started", "row_start",
        "row_end", "row_wait", "pk_start", "dma_free", "lane", "is_dma", "same_ns", "programs", "barrier", "ports",
        "port_free", "arrived", "heap", "waiting", "available", "token", "tensor_stream",
    )  # fmt: skip
    _PLAN_LOOP_STATE = ("kind", "busy", "load", "position", "segment_end", "members", "transfer_of")

    def timeline(self) -> Timeline:
        self._loop()
        for name in self._LOOP_STATE:
            delattr(self, name)
        for name in self._PLAN_LOOP_STATE:
            delattr(self.plan, name)
        return self._result()

    def _loop(self) -> None:
        """Issue every instruction: pop the earliest stream choice, run it (a DMA, a Tensor Engine instruction or
        another engine's), finish it (hand its end to its consumers, move its stream's window, choose again).

        One function with its state in local variables, the per-instruction steps written out rather than
        called: Python's call and attribute costs were a third of the loop's time (99k instructions)."""
        for q in range(len(self.plan.members)):
            self._advance(q)
            self._choose(q)
        plan, hw = self.plan, self.hw
        n = plan.n_all
        barrier = self.barrier
        heap, waiting, available, token = self.heap, self.waiting, self.available, self.token
        stream, kind, members, position, segment_end = plan.stream, plan.kind, plan.members, plan.position, plan.segment_end
        busy, load, first_row, transfer_of, transfer_plan = plan.busy, plan.load, plan.first_row, plan.transfer_of, plan.transfer_plan
        free, ls_free, mm_start, mm_started, tensor_stream = self.free, self.ls_free, self.mm_start, self.mm_started, self.tensor_stream
        dep_ready, ls_ready, pending, cons_start, cons = self.dep_ready, self.ls_ready, self.pending, self.cons_start, self.cons
        stationary, written, acc_tensor = self.stationary, self.written, self.acc_tensor
        writes_from, writes_to = self.writes_from, self.writes_to
        end_, head, limit, issue_rank = self.end, self.head, self.limit, self.issue_rank
        lane, is_dma, same_ns = self.lane, self.is_dma, self.same_ns
        sync_ns, window, fixed_ns, n_engines = self.sync_ns, self.window, self.fixed_ns, hw.dma.engines
        row_start, row_end, row_wait = self.row_start, self.row_end, self.row_wait
        t_start, t_end, pk_start, pk_first = self.t_start, self.t_end, self.pk_start, self.pk_first
        dma_free, programs = self.dma_free, self.programs
        ports, port_free = self.ports, self.port_free
        pop, push = heapq.heappop, heapq.heappush
        inf = math.inf
        refill = refill_ns(hw)
        # the dI/dt burst state of each tensor stream (None: the target has no throttle)
        throttles = [TensorThrottle(hw) if t else None for t in tensor_stream] if throttled(hw) else None
        n_issued = 0
        while heap:
            ready, i, tok = pop(heap)
            q = stream[i]
            if tok != token[q]:  # superseded: the stream chose again since
                continue
            av = available[q]
            if av and av[0] == i:
                pop(av)
            else:
                pop(waiting[q])
            batch = self._arrive(i, ready) if barrier and i in barrier else (i,)  # a rendezvous runs as a group
            for i in batch:  # run
                k = kind[i]
                q, row = stream[i], first_row[i]
                if k == DMA:
                    kt = transfer_of[i]
                    t = transfer_plan[kt]
                    ready, fr = dep_ready[i], free[q]
                    start = ready if ready > fr else fr
                    issued = start + t.issue_ns
                    row_start[row] = start
                    row_end[row] = issued
                    row_wait[row] = ready - fr if ready > fr else 0.0
                    free[q] = issued
                    earliest = issued + fixed_ns
                    program = programs[i]
                    engines = dma_free.get(program)
                    if engines is None:
                        engines = dma_free[program] = [0.0] * n_engines
                    f = pk_first[kt]
                    same = t.lockstep
                    if same is not None:  # equal packets on a range of engines: when those are all free by then, or
                        e0, e1, d = same  # all free at the same time, every packet starts together
                        bz = engines[e0:e1]
                        latest = max(bz)
                        if latest <= earliest or min(bz) == latest:
                            s = earliest if latest <= earliest else latest
                            pk_start[f : f + e1 - e0] = array("d", (s,)) * (e1 - e0)
                            e = s + d
                            engines[e0:e1] = [e] * (e1 - e0)
                            t_start[kt] = s
                            t_end[kt] = end_[i] = e
                            continue
                    # each DMA engine serving the transfer moves its packet when it is free (first come, first served);
                    # a transfer's engines are distinct, so one pass in engine order suffices
                    first, last, j = inf, earliest, f
                    for e, d in zip(t.engines, t.packet_ns):
                        s = engines[e]
                        if s < earliest:
                            s = earliest
                        if s < first:
                            first = s
                        pk_start[j] = s
                        j += 1
                        s += d
                        engines[e] = s
                        if s > last:
                            last = s
                    t_start[kt] = first if j > f else earliest
                    t_end[kt] = last
                    end_[i] = last
                elif k == TENSOR:
                    lf, mp, fr = ls_free[q], mm_start[q], free[q]
                    lr, dr = ls_ready[i], dep_ready[i]
                    in_order = lf if lf > mp else mp
                    ls_s = lr if lr > in_order else in_order
                    ls_e = ls_s + load[i]
                    mm_in_order = ls_e if ls_e > fr else fr
                    mm_s = mm_in_order if mm_in_order > dr else dr
                    if not mm_started[q]:
                        mm_started[q] = True
                        fr = -inf  # the first MATMUL: after an idle engine
                    if throttles is None:  # no dI/dt limit: only the pipeline refill after a gap
                        mm_e = mm_s + busy[i] + (refill if mm_s > fr else 0.0)
                    else:
                        th = throttles[q]
                        if mm_s <= fr and mm_s >= th.full_at:  # back to back at full rate: nothing to ask
                            mm_e = mm_s + busy[i]
                        else:
                            mm_e = th.matmul(mm_s, fr, busy[i])
                    row_start[row], row_end[row] = ls_s, ls_e
                    row_start[row + 1], row_end[row + 1] = mm_s, mm_e
                    row_wait[row] = lr - in_order if lr > in_order else 0.0
                    row_wait[row + 1] = dr - mm_in_order if dr > mm_in_order else 0.0
                    ls_free[q], mm_start[q], free[q] = ls_e, mm_s, mm_e
                    end_[i] = mm_e
                else:
                    ready, fr = dep_ready[i], free[q]
                    start = ready if ready > fr else fr
                    if ports is not None:  # NC-v2: wait for the shared SBUF/PSUM port too
                        held = [(programs[i], p) for p in ports[i]]
                        for p in held:
                            start = max(start, port_free.get(p, 0.0))
                        e = start + busy[i]
                        for p in held:
                            port_free[p] = e
                    else:
                        e = start + busy[i]
                    row_start[row] = start
                    row_end[row] = e
                    row_wait[row] = ready - fr if ready > fr else 0.0
                    free[q] = e
                    end_[i] = e
            for i in batch:  # finish: the hand-off is the engine's own latency within one in-order stream, else a semaphore
                done = end_[i]
                writes = None
                same = lane[i] if not is_dma[i] else None
                sns = same_ns[i]
                q = stream[i]
                touched = [q]  # streams whose choice may change: this one, and those offered an instruction
                for c in cons[cons_start[i] : cons_start[i + 1]]:
                    ready = done + (sns if lane[c] == same else sync_ns)
                    if ready > dep_ready[c]:
                        dep_ready[c] = ready
                    st = stationary[c]
                    if st >= 0 and ready > ls_ready[c]:
                        w = written[i]
                        if w == -2 and writes is None:
                            writes = set(acc_tensor[writes_from[i] : writes_to[i]].tolist())
                        if st == w or (w == -2 and st in writes):
                            ls_ready[c] = ready
                    pending[c] -= 1
                    if pending[c] == 0:
                        qc = stream[c]
                        if position[c] < limit[qc]:
                            push(waiting[qc], (ls_ready[c] if kind[c] == TENSOR else dep_ready[c], c))
                            if qc != q:
                                touched.append(qc)
                issue_rank[i] = n_issued
                n_issued += 1
                mq = members[q]
                if mq[head[q]] == i:  # advance: move the window past issued instructions, offer those entering it
                    h, m = head[q], len(mq)
                    while h < m and issue_rank[mq[h]] >= 0:
                        h += 1
                    head[q] = h
                    if h < m:
                        se = segment_end[mq[h]]
                        lim = h + window if h + window < se else se
                        wq = waiting[q]
                        for p in range(limit[q], lim):
                            c = mq[p]
                            if pending[c] == 0:
                                push(wq, (ls_ready[c] if kind[c] == TENSOR else dep_ready[c], c))
                        if lim > limit[q]:
                            limit[q] = lim
                for qq in touched:  # choose: each stream's next instruction into the global heap
                    wq, aq = waiting[qq], available[qq]
                    if not wq and not aq:
                        continue
                    if tensor_stream[qq]:
                        a, b = ls_free[qq], mm_start[qq]
                        fr = a if a > b else b
                    else:
                        fr = free[qq]
                    while wq and wq[0][0] <= fr:
                        push(aq, pop(wq)[1])
                    tk = token[qq] = token[qq] + 1
                    if aq:
                        push(heap, (fr, aq[0], tk))
                    else:
                        r, c = wq[0]
                        push(heap, (r, c, tk))
        self.n_issued = n_issued
        self.throttled = self._throttled(throttles)
        if n_issued != n:
            raise RuntimeError(f"scheduler stalled after {n_issued} of {n} instructions (a dependency cycle)")

    def _throttled(self, throttles: list[TensorThrottle | None] | None) -> Throttled:
        """The intervals each Tensor Engine ran under its dI/dt limit (throttle.py), from the finished loop."""
        if throttles is None:
            return no_throttle()
        p = self.plan
        first_row = np.asarray(p.first_row, dtype=np.int64)
        cores, matmuls = [], []
        for m, th in zip(p.members, throttles):
            positions = np.asarray(m, dtype=np.int64)
            cores.append(int(p.program[positions[0]]) if len(positions) else 0)
            matmuls.append((positions, self.row_start_np[first_row[positions] + 1]) if th is not None else None)
        return throttled_intervals(throttles, cores, matmuls, self.hw)

    def _issued_pc(self, program_pc: np.ndarray) -> np.ndarray:
        """Each row's pc in its engine's instruction stream as the compiler emitted it: every stream keeps the pc
        slots its instructions have in program order, filled in the order they were issued."""
        p = self.plan
        stream = np.asarray(p.stream, dtype=np.int64)[: p.n]  # the trace's instructions (spill DMAs have no row)
        by_program = np.lexsort((np.arange(p.n), stream))
        by_issue = np.lexsort((self.issue_rank_np[: p.n], stream))
        if np.array_equal(by_program, by_issue):
            return program_pc
        slot = np.empty(p.n, dtype=np.int64)
        slot[by_issue] = by_program  # instruction by_issue[k] takes the program-order slot of by_program[k]
        row_ins = p.rows[0]
        first_row = np.asarray(p.first_row, dtype=np.int64)
        offset = np.arange(len(row_ins), dtype=np.int64) - first_row[row_ins]
        return np.asarray(program_pc)[first_row[slot[row_ins]] + offset]

    def _packets(self) -> Packets:
        """Packet rows ordered by transfer (program order), each transfer's packets in engine order."""
        p = self.plan
        counts = np.diff(np.asarray(self.pk_first, dtype=np.int64))
        transfer = np.repeat(np.arange(len(counts), dtype=np.int32), counts)
        return Packets(transfer, self.pk_start_np, p.plan_code, p.plans)

    def _result(self) -> Timeline:
        p = self.plan
        row_ins, row_op, row_engine, row_pc = p.rows
        k = p.n_rows  # the trace's rows; the spill DMAs' trigger slots after them are dropped
        start, end, wait = self.row_start_np[:k], self.row_end_np[:k], self.row_wait_np[:k]
        rows = Rows(row_ins, row_op, row_engine, self._issued_pc(row_pc), start, end, wait)
        dma = p.dma_positions
        first_row = np.asarray(p.first_row, dtype=np.int64)
        issuer, issuer_row = dma, first_row[dma]
        if p.m:  # a spill DMA links to the last row of the instruction its spill follows (the tile's last access)
            after = p.spills.anchor[0::2].repeat(2)
            last_row = np.r_[first_row[1 : p.n], p.n_rows][after] - 1
            issuer, issuer_row = np.concatenate([dma, after]), np.concatenate([issuer_row, last_row])
        transfers = Transfers(issuer, issuer_row, p.transfer_plan, self.t_start_np, self.t_end_np)
        transfers.plan_code, transfers.plans = p.plan_code, p.plans
        transfers.spill_start = len(dma)
        packets = self._packets()
        work = FormValues(p.works, self.trace.columns().form)
        return Timeline(self.trace, self.hw, rows, transfers, packets, work, self.deps, self.throttled)
