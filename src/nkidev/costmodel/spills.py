"""The DMA traffic of the SBUF spills the emulator records (Trace.spills, emulator/liveness.py), as transfers the
scheduler times like any other, when the target asks for it: `dma.spill_traffic_fraction` is the share of each
spilled tile's bytes moved each way, 0 (no spill DMA at all) in the shipped target files, because whole-tile
traffic over-predicts both published kernels nkidev finds spilling (costmodel/MODEL.md, Scheduling); a calibration
file's `overrides.dma.spill_traffic_fraction` turns it on.

Where live SBUF tiles need more than the buffer holds, the compiler moves intermediate data out to device memory
and back (neuron-explorer's spill_save_bytes / spill_reload_bytes, [sources: perf-guide]; the spill/reload DMA
queues of the Fused Mamba tutorial's mamba_v2 profile at seq_len 8192, which VectorE waits on, [sources:
mamba-tutorial "Increasing input seq_len size"]). Each SBUF -> HBM spill becomes two DMAs:

- a save (SBUF -> HBM, that share of the tile's bytes) issued after the tile's last access before its gap (`store_after`); the
  instruction whose tiles need the space (`instruction`, where the eviction happened) waits for it to finish;
- a reload (HBM -> SBUF) after its save, once the space it returns to is free (`reload_after`, and the saves of the
  tiles evicted to make room for it), as early as that and its queue allow (a prefetch); the tile's next access
  (`reload_before`) waits for it.

The transfers go on the spill queues the tutorial's profile shows, qSyncSpillReload0 and qVectorSpillReload0. Which
engine triggers which spill is not documented: a save after a VectorE instruction goes on qVectorSpillReload0 (the
engine that last touched the tile hands it over), every other save and every reload on qSyncSpillReload0 (the
queue the tutorial's VectorE waits on); an estimate. Both sides are one contiguous run per partition (the tile's row
in SBUF, and a spill buffer laid out like it in HBM), so a descriptor is the tile's bytes per partition and the
packets go through the same DMA cost model as every transfer (dma.py). The HBM side is labelled [VIRTUAL], as the
spill rows of real profiles are, and `variable` names the spilled tensor.

PSUM tiles evicted to SBUF (`to == "sbuf"`) are not timed: no document says how the compiler moves them (NKI's
DMAs move data between HBM and SBUF, not out of PSUM; an engine copy would need an engine the documents do not
name), and they are no device-memory traffic (the profile's spill columns leave them out too).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from nkidev.costmodel.dma import Transfer, plan
from nkidev.emulator.trace import Form, Layout, Spill, Trace
from nkidev.hardware import Target

SAVE_QUEUE_AFTER_VECTOR = "qVectorSpillReload0"
SPILL_QUEUE = "qSyncSpillReload0"
ONCHIP, VIRTUAL_SOURCE, VIRTUAL_DEST = "[[SB]]", "[[VIRTUAL]]", "[VIRTUAL]"
SPILL_OPCODE = "compiler_spill"


@dataclass
class SpillDMAs:
    """The save and reload DMAs of a trace's SBUF spills: DMA 2k is spill k's save, 2k + 1 its reload. Positions
    below `n` are trace instructions; DMA j has position n + j (the scheduler's extra instructions)."""

    n: int  # trace instructions
    spills: list[Spill]
    plans: list[Transfer]  # per DMA
    program: np.ndarray  # int64, per DMA: its NeuronCore
    anchor: np.ndarray  # int64, per DMA: the trace position it follows in its queue's order (a save: its store_after)
    edges: np.ndarray  # (producer, consumer) positions, int64 (m, 2)

    def __len__(self) -> int:
        return len(self.plans)


def timed_spills(trace: Trace) -> list[Spill]:
    """The spills that move data between SBUF and HBM and name the instructions around their gap."""
    return [
        sp
        for sp in trace.spills
        if sp.buffer == "sbuf" and sp.to == "hbm" and None not in (sp.store_after, sp.reload_before, sp.instruction)
    ]


def spill_dmas(trace: Trace, hw: Target) -> SpillDMAs | None:
    """The spill DMAs of `trace` on `hw`, or None when it has no SBUF spill to time (or the target times none:
    `dma.spill_traffic_fraction` is 0, the default; see the module docstring)."""
    if hw.dma.spill_traffic_fraction <= 0:
        return None
    spills = timed_spills(trace)
    if not spills:
        return None
    cols = trace.columns()
    position = _positions(cols.id.astype(np.int64), spills)  # (k, 4): store_after, instruction, reload_after, reload_before
    known = (position[:, [0, 1, 3]] >= 0).all(axis=1)  # a spill whose instructions the trace lacks is not timed
    spills, position = [sp for sp, ok in zip(spills, known.tolist()) if ok], position[known]
    if not spills:
        return None
    n = len(trace)
    engine = [f.engine for f in trace.forms]
    saves_at: dict[int, list[int]] = {}  # evicting position -> the spills whose saves it waits for
    for k, evict in enumerate(position[:, 1].tolist()):
        saves_at.setdefault(evict, []).append(k)
    plans, programs, anchors, edges = [], [], [], []
    cache: dict[tuple, Transfer] = {}
    for k, sp in enumerate(spills):
        store, evict, free, reload = position[k].tolist()
        save_dma, reload_dma = n + 2 * k, n + 2 * k + 1
        room = [j for j in saves_at.get(reload, ()) if j != k]  # the tiles evicted to make room for this one
        queue = SAVE_QUEUE_AFTER_VECTOR if engine[cols.form[store]] == "vector" else SPILL_QUEUE
        plans += [_plan(sp, True, queue, hw, cache), _plan(sp, False, SPILL_QUEUE, hw, cache)]
        programs += [int(cols.program[store])] * 2
        # a queue issues its spill DMAs in the order of the trace positions they follow, each after everything it
        # waits for (so no queue's window can hold back what an earlier instruction needs)
        anchors += [store, max([store, free] + [int(position[j, 0]) for j in room])]
        edges += [(store, save_dma), (save_dma, evict), (save_dma, reload_dma), (free, reload_dma), (reload_dma, reload)]
        edges += [(n + 2 * j, reload_dma) for j in room]
    pairs = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    return SpillDMAs(n, spills, plans, np.asarray(programs, np.int64), np.asarray(anchors, np.int64), pairs[pairs[:, 0] >= 0])


def _positions(ids: np.ndarray, spills: list[Spill]) -> np.ndarray:
    """Trace positions of each spill's store_after, instruction, reload_after (-1 when unknown) and reload_before."""
    order = np.argsort(ids, kind="stable")
    wanted = np.array(
        [[sp.store_after, sp.instruction, -1 if sp.reload_after is None else sp.reload_after, sp.reload_before] for sp in spills],
        dtype=np.int64,
    )
    if not len(ids) or not len(wanted):
        return np.full((len(spills), 4), -1, dtype=np.int64)
    found = order[np.minimum(np.searchsorted(ids, wanted, sorter=order), len(ids) - 1)]
    return np.where((wanted >= 0) & (ids[found] == wanted), found, -1)


def moved_bytes_per_partition(sp: Spill, hw: Target) -> int:
    """The bytes per partition one spill DMA moves: the target's share of the tile's row (at least one byte)."""
    return max(1, math.ceil(sp.bytes_per_partition * hw.dma.spill_traffic_fraction))


def _plan(sp: Spill, save: bool, queue: str, hw: Target, cache: dict) -> Transfer:
    pp = moved_bytes_per_partition(sp, hw)
    key = (sp.name, pp, sp.partitions, save, queue)
    if key not in cache:
        onchip = _layout("sbuf", sp.partitions, pp)
        hbm = _layout("hbm", sp.partitions, pp)
        src, dst = (onchip, hbm) if save else (hbm, onchip)
        # no NKI instruction issues it: its opcode names no op (plan() looks one up only to choose a queue)
        form = Form(SPILL_OPCODE, "dma", sp.partitions, pp, 0, {}, (src,), (dst,))
        labels = (ONCHIP, VIRTUAL_DEST) if save else (VIRTUAL_SOURCE, ONCHIP)
        t = plan(form, *labels, sp.name, hw, queue=queue)
        t.form = form
        cache[key] = t
    return cache[key]


def _layout(buffer: str, partitions: int, pp: int) -> Layout:
    """One side of a spill transfer: the tile's partitions, one contiguous run of `pp` bytes per partition."""
    role, nbytes = "spill", partitions * pp
    if buffer == "hbm":  # the spill buffer in device memory, one row per partition
        return Layout("hbm", role, (partitions, pp), "uint8", nbytes, 0, partitions, 0, nbytes, pp)
    return Layout("sbuf", role, (partitions, pp), "uint8", nbytes, 0, partitions, 0, pp, pp)
