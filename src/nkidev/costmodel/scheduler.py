"""The scheduler: engines run their instructions in program order, DMAs share 16 DMA engines.

Model (every number from the target's TOML):
- Each NeuronCore (SPMD program) has in-order instruction streams: tensor, vector, scalar, gpsimd, sync,
  and one FIFO stream per DMA queue. An instruction starts when it is next in its stream, the stream
  is free, and every instruction it depends on (deps.py) has finished, plus a semaphore hand-off
  (`semaphore_sync_ns`) across engines or the SBUF/PSUM access overhead within one engine.
- Tensor Engine: LDWEIGHTS (LoadStationary) may run in the background of the previous MATMUL (it
  starts once that MATMUL has started and its stationary operand is ready); MATMUL follows its
  LDWEIGHTS, the previous MATMUL and every other dependency (moving operand, PSUM accumulation); a
  MATMUL after an idle gap pays the pipeline refill (`mm_init_latency_cycles`).
- DMA: the trigger takes `issue_ns` on its queue; after `fixed_cost_ns` each DMA engine serving the
  transfer moves its share as one packet, first come first served per DMA engine.
- core_barrier / sendrecv: the k-th one of every core starts together, once all cores reached it.
- NC-v2: engines listed in `exclusive_sbuf_engines` / `exclusive_psum_engines` never access that memory
  at the same time (the compiler serializes them).
- SBUF/PSUM space is finite: tiles reuse the space of dead tiles (buffers.py), which bounds how far
  loads run ahead of compute.

Instructions are released in order of the time they can start (a heap), so the DMA engines serve
packets in the order they become ready, whatever queue they come from. O(n log n) in instructions.
"""

from __future__ import annotations

import heapq

import numpy as np

from nkidev.costmodel.buffers import reuse_edges
from nkidev.costmodel.deps import dependencies
from nkidev.costmodel.dma import Transfer, plan_transfer
from nkidev.costmodel.durations import (
    DMA_TRIGGER,
    LOAD_STATIONARY,
    MATMUL,
    EngineWork,
    dependent_latency_ns,
    engine_work,
    is_tensor_matmul,
    opcode_name,
)
from nkidev.costmodel.timeline import Packets, Rows, Timeline, Transfers
from nkidev.emulator.ops import OPS
from nkidev.emulator.trace import Trace
from nkidev.hardware import Target, get_target

COMPUTE, TENSOR, DMA = 0, 1, 2


class _Plan:
    """Static facts per instruction: kind, stream, engine work or transfer, and its profile rows."""

    def __init__(self, trace: Trace, hw: Target):
        n = len(trace.instructions)
        self.kind = [COMPUTE] * n
        self.stream = [0] * n
        self.work: list[EngineWork | None] = [None] * n
        self.transfer: list[Transfer | None] = [None] * n
        self.first_row = [0] * n
        self.transfer_index = [-1] * n
        self.streams: dict[tuple[int, str], int] = {}
        self.members: list[list[int]] = []
        row_ins, row_op, row_engine, row_pc = [], [], [], []
        pcs: dict[tuple[int, str], int] = {}
        n_transfers = 0

        def add_row(i: int, opcode: str, engine: str, program: int) -> None:
            key = (program, engine)
            row_ins.append(i)
            row_op.append(opcode)
            row_engine.append(engine)
            row_pc.append(pcs.get(key, 0))
            pcs[key] = pcs.get(key, 0) + 1

        for i, ins in enumerate(trace.instructions):
            self.first_row[i] = len(row_ins)
            if ins.engine == "dma":
                t = plan_transfer(ins, trace, hw)
                self.kind[i], self.transfer[i] = DMA, t
                self.transfer_index[i] = n_transfers
                n_transfers += 1
                name = t.issue_engine if t.issue_engine == "gpsimd" else t.queue
                add_row(i, DMA_TRIGGER, t.issue_engine, ins.program)
            else:
                w = engine_work(ins, hw)
                self.work[i] = w
                name = ins.engine
                if is_tensor_matmul(ins):
                    self.kind[i] = TENSOR
                    add_row(i, LOAD_STATIONARY, "tensor", ins.program)
                    add_row(i, MATMUL, "tensor", ins.program)
                else:
                    add_row(i, opcode_name(ins.opcode), ins.engine, ins.program)
            key = (ins.program, name)
            if key not in self.streams:
                self.streams[key] = len(self.members)
                self.members.append([])
            q = self.streams[key]
            self.stream[i] = q
            self.members[q].append(i)
        self.rows = (row_ins, row_op, row_engine, row_pc)
        self.n_transfers = n_transfers
        self.transfer_by_index = [t for t in self.transfer if t is not None]


def _stationary_tensor(ins) -> int | None:
    """Storage LDWEIGHTS loads: the stationary operand (the data of a TensorE transpose)."""
    for a in ins.reads:
        if a.role in ("stationary", "data"):
            return a.tensor
    return ins.reads[0].tensor if ins.reads else None


def _shared_ports(ins, hw: Target) -> tuple[tuple[int, str], ...]:
    """Memory ports this instruction holds exclusively against other engines (NC-v2: Vector/GpSimd on SBUF,
    Vector/Scalar on PSUM; from the target's `exclusive_*_engines`)."""
    ports = []
    buffers = {a.buffer for a in ins.reads + ins.writes}
    if ins.engine in hw.engines.exclusive_sbuf_engines and "sbuf" in buffers:
        ports.append((ins.program, "sbuf"))
    if ins.engine in hw.engines.exclusive_psum_engines and "psum" in buffers:
        ports.append((ins.program, "psum"))
    return tuple(ports)


def _barrier_groups(trace: Trace) -> dict[int, list[int]]:
    """k-th rendezvous instruction (core_barrier, sendrecv: OpDef.rendezvous) of every program -> the positions
    of that group (multi-core runs only): the group starts together, once every core has reached it."""
    if trace.programs <= 1:
        return {}
    seen: dict[tuple[str, int], int] = {}
    groups: dict[tuple[str, int], list[int]] = {}
    for i, ins in enumerate(trace.instructions):
        if OPS[ins.opcode].rendezvous:
            k = seen.get((ins.opcode, ins.program), 0)
            seen[(ins.opcode, ins.program)] = k + 1
            groups.setdefault((ins.opcode, k), []).append(i)
    return {i: members for members in groups.values() if len(members) > 1 for i in members}


def schedule(trace: Trace, target: Target | str | None = None) -> Timeline:
    """Time every instruction of `trace` on `target` (default: the trace's own target). Pure: never runs
    the kernel again."""
    hw = get_target(target if target is not None else trace.target)
    deps = dependencies(trace)
    for producer, consumer in reuse_edges(trace, hw):
        if producer != consumer and producer not in deps[consumer]:
            deps[consumer].append(producer)
    plan = _Plan(trace, hw)
    return _Run(trace, hw, deps, plan).timeline()


class _Run:
    """The event loop's state; `timeline()` runs it once."""

    def __init__(self, trace: Trace, hw: Target, deps: list[list[int]], plan: _Plan):
        n = len(trace.instructions)
        self.trace, self.hw, self.deps, self.plan = trace, hw, deps, plan
        self.pending = [len(d) for d in deps]
        self.consumers: list[list[int]] = [[] for _ in range(n)]
        for i, d in enumerate(deps):
            for j in d:
                self.consumers[j].append(i)
        self.dep_ready = [0.0] * n
        self.ls_ready = [0.0] * n  # Tensor Engine: when the stationary operand is ready (LDWEIGHTS needs only it)
        self.stationary = {i: _stationary_tensor(trace.instructions[i]) for i in range(n) if plan.kind[i] == TENSOR}
        self.end = [0.0] * n
        nq = len(plan.members)
        self.head = [0] * nq
        self.free = [0.0] * nq  # stream free (compute: engine idle; DMA queue: last trigger issued)
        self.ls_free = [0.0] * nq  # Tensor Engine: LoadStationary unit idle
        self.mm_start = [0.0] * nq  # Tensor Engine: start of the previous MATMUL
        self.mm_started = [False] * nq
        self.mm_init_ns = hw.tensor_engine.mm_init_latency_cycles / hw.tensor_engine.clock_ghz
        nrows = len(plan.rows[0])
        self.row_start = np.zeros(nrows)
        self.row_end = np.zeros(nrows)
        self.row_wait = np.zeros(nrows)
        self.t_start = np.zeros(plan.n_transfers)
        self.t_end = np.zeros(plan.n_transfers)
        self.pk_transfer: list[int] = []  # one entry per transfer; expanded to one row per packet at the end
        self.pk_start: list[list[float]] = []
        self.dma_free: dict[int, list[float]] = {}
        self.sync_ns = hw.engines.semaphore_sync_ns
        self.same_engine_ns = {e: dependent_latency_ns(e, hw) for e in ("tensor", "vector", "scalar", "gpsimd", "sync", "dma")}
        self.barrier = _barrier_groups(trace)
        self.ports = [_shared_ports(ins, hw) for ins in trace.instructions]
        self.port_free: dict[tuple[int, str], float] = {}
        self.arrived: dict[int, float] = {}
        self.heap: list[tuple[float, int]] = []

    # --- readiness -------------------------------------------------------------------------------

    def _ready_time(self, i: int) -> float:
        q = self.plan.stream[i]
        if self.plan.kind[i] == TENSOR:
            return max(self.ls_ready[i], self.ls_free[q], self.mm_start[q])
        return max(self.dep_ready[i], self.free[q])

    def _push_head(self, q: int) -> None:
        members = self.plan.members[q]
        h = self.head[q]
        if h < len(members):
            i = members[h]
            if self.pending[i] == 0:
                heapq.heappush(self.heap, (self._ready_time(i), i))

    def _latency(self, producer: int, consumer: int) -> float:
        a, b = self.trace.instructions[producer], self.trace.instructions[consumer]
        if a.engine == b.engine and a.program == b.program and a.engine != "dma":
            return self.same_engine_ns[a.engine]
        return self.sync_ns

    # --- one instruction ---------------------------------------------------------------------------

    def _run_compute(self, i: int) -> None:
        q, row = self.plan.stream[i], self.plan.first_row[i]
        ports = self.ports[i]
        start = max(self.dep_ready[i], self.free[q], *(self.port_free.get(p, 0.0) for p in ports))
        end = start + self.plan.work[i].busy_ns
        self.row_start[row], self.row_end[row] = start, end
        self.row_wait[row] = max(0.0, self.dep_ready[i] - self.free[q])
        self.free[q] = end
        for p in ports:
            self.port_free[p] = end
        self.end[i] = end

    def _run_tensor(self, i: int) -> None:
        q, row = self.plan.stream[i], self.plan.first_row[i]
        w = self.plan.work[i]
        in_order = max(self.ls_free[q], self.mm_start[q])
        ls_start = max(self.ls_ready[i], in_order)
        ls_end = ls_start + w.load_ns
        mm_in_order = max(ls_end, self.free[q])
        mm_start = max(mm_in_order, self.dep_ready[i])
        # the PE array pipeline refills after an idle gap (MM_INIT_LATENCY); back-to-back MATMULs hide it
        refill = self.mm_init_ns if mm_start > self.free[q] or not self.mm_started[q] else 0.0
        self.mm_started[q] = True
        mm_end = mm_start + w.busy_ns + refill
        self.row_start[row], self.row_end[row] = ls_start, ls_end
        self.row_start[row + 1], self.row_end[row + 1] = mm_start, mm_end
        self.row_wait[row] = max(0.0, self.ls_ready[i] - in_order)
        self.row_wait[row + 1] = max(0.0, self.dep_ready[i] - mm_in_order)
        self.ls_free[q], self.mm_start[q], self.free[q] = ls_end, mm_start, mm_end
        self.end[i] = mm_end

    def _run_dma(self, i: int) -> None:
        q, row = self.plan.stream[i], self.plan.first_row[i]
        t: Transfer = self.plan.transfer[i]
        k = self.plan.transfer_index[i]
        start = max(self.dep_ready[i], self.free[q])
        issued = start + t.issue_ns
        self.row_start[row], self.row_end[row] = start, issued
        self.row_wait[row] = max(0.0, self.dep_ready[i] - self.free[q])
        self.free[q] = issued
        earliest = issued + self.hw.dma.fixed_cost_ns
        engines = self.dma_free.setdefault(self.trace.instructions[i].program, [0.0] * self.hw.dma.engines)
        starts = []
        last = earliest
        for e, dur in zip(t.engines, t.packet_ns):
            s = engines[e] if engines[e] > earliest else earliest
            engines[e] = s + dur
            starts.append(s)
            if s + dur > last:
                last = s + dur
        self.pk_transfer.append(k)
        self.pk_start.append(starts)
        self.t_start[k] = min(starts, default=earliest)
        self.t_end[k] = last
        self.end[i] = last

    def _run(self, i: int) -> None:
        kind = self.plan.kind[i]
        if kind == TENSOR:
            self._run_tensor(i)
        elif kind == DMA:
            self._run_dma(i)
        else:
            self._run_compute(i)

    def _finish(self, i: int) -> None:
        done = self.end[i]
        writes = {a.tensor for a in self.trace.instructions[i].writes}
        for c in self.consumers[i]:
            ready = done + self._latency(i, c)
            if ready > self.dep_ready[c]:
                self.dep_ready[c] = ready
            if c in self.stationary and self.stationary[c] in writes and ready > self.ls_ready[c]:
                self.ls_ready[c] = ready
            self.pending[c] -= 1
            if self.pending[c] == 0:
                q = self.plan.stream[c]
                if self.plan.members[q][self.head[q]] == c:
                    heapq.heappush(self.heap, (self._ready_time(c), c))
        q = self.plan.stream[i]
        self.head[q] += 1
        self._push_head(q)

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

    def timeline(self) -> Timeline:
        for q in range(len(self.plan.members)):
            self._push_head(q)
        done = 0
        n = len(self.trace.instructions)
        while self.heap:
            ready, i = heapq.heappop(self.heap)
            batch = self._arrive(i, ready) if i in self.barrier else [i]
            for m in batch:
                self._run(m)
            for m in batch:
                self._finish(m)
                done += 1
        if done != n:
            raise RuntimeError(f"scheduler stalled after {done} of {n} instructions (a dependency cycle)")
        return self._result()

    def _packets(self) -> Packets:
        """Packet rows ordered by transfer (program order), each transfer's packets in engine order."""
        plans = self.plan.transfer_by_index
        counts = [len(plans[k].engines) for k in self.pk_transfer]
        transfer = np.repeat(np.asarray(self.pk_transfer, dtype=np.int64), counts)
        engine = np.fromiter((e for k in self.pk_transfer for e in plans[k].engines), np.int64, len(transfer))
        nbytes = np.fromiter((b for k in self.pk_transfer for b in plans[k].packet_bytes), np.int64, len(transfer))
        dur = np.fromiter((d for k in self.pk_transfer for d in plans[k].packet_ns), np.float64, len(transfer))
        start = np.fromiter((x for starts in self.pk_start for x in starts), np.float64, len(transfer))
        order = np.argsort(transfer, kind="stable")
        return Packets(transfer[order], engine[order], nbytes[order], start[order], (start + dur)[order])

    def _result(self) -> Timeline:
        p = self.plan
        row_ins, row_op, row_engine, row_pc = p.rows
        rows = Rows(row_ins, row_op, row_engine, row_pc, self.row_start, self.row_end, self.row_wait)
        dma_positions = [i for i in range(len(p.kind)) if p.kind[i] == DMA]
        transfers = Transfers(
            dma_positions, [p.first_row[i] for i in dma_positions], [p.transfer[i] for i in dma_positions], self.t_start, self.t_end
        )
        packets = self._packets()
        return Timeline(self.trace, self.hw, rows, transfers, packets, p.work, self.deps)
