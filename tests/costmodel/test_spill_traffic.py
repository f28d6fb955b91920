"""The SBUF spills the emulator records are timed as DMAs (costmodel/spills.py): a save after the tile's last access
before its gap that the evicting instruction waits for, a reload the next access waits for, on the spill queues,
through the same DMA cost model as other transfers; the profile and the `spill` investigation see them."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import nkidev
from nkidev.analysis.api import analyze
from nkidev.costmodel import schedule
from nkidev.errors import NkiWarning
from nkidev.hardware import get_target, with_overrides
from nkidev.profile.api import profile
from tests.emulator.test_liveness import F, evicted_then_space_held
from tests.profile import kernels as K
from tests.profile.test_spills import SMALL, _line, evicted_around_a_matmul, sql, two_live_psum_tiles

# spills are timed only where the target says so (dma.spill_traffic_fraction, 0 by default): whole tiles here
HW = with_overrides(get_target("trn2"), {"dma": {"spill_traffic_fraction": 1.0}}, "tests: whole-tile spill traffic")


def _profile(kernel, args, out):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NkiWarning)
        return profile(kernel, *args, target=HW, out=out)


@pytest.fixture(scope="module")
def spilled(tmp_path_factory):
    rng = np.random.default_rng(3)
    args = (rng.random((128, 128), dtype=np.float32), rng.random((128, 128), dtype=np.float32))
    return _profile(evicted_around_a_matmul, args, tmp_path_factory.mktemp("spill_traffic") / "p")


class Spilled:
    """The timeline's spill DMAs by spill, and the times of the trace instructions around them."""

    def __init__(self, res):
        tl = res.timeline
        self.tl = tl
        self.trace = tl.trace
        tr = tl.transfers
        self.first = tr.spill_start
        ids = self.trace.columns().id.tolist()
        self.at = {i: k for k, i in enumerate(ids)}  # instruction id -> trace position
        self.start, self.end = tl.instruction_times()
        self.spills = [sp for sp in self.trace.spills if sp.to == "hbm"]

    def dma(self, k: int, reload: bool) -> tuple:
        t = self.first + 2 * k + int(reload)
        tr = self.tl.transfers
        return tr.plan[t], float(tr.start[t]), float(tr.end[t])

    def first_row_start(self, instruction_id: int) -> float:
        rows = self.tl.rows
        pos = self.at[instruction_id]
        return float(rows.start[np.flatnonzero(np.asarray(rows.ins) == pos)[0]])


def packet_ns(nbytes_per_engine: int, descriptor: int) -> float:
    """The DMA model's packet time (dma.py), written out: bytes at the engine's HBM rate plus a descriptor cost."""
    d = HW.dma
    per_descriptor = d.descriptor_overhead_ns * max(0.0, 1.0 - descriptor / d.saturating_bytes_per_partition)
    return nbytes_per_engine / (d.bytes_per_ns_per_engine * d.hbm_efficiency) + math.ceil(nbytes_per_engine / descriptor) * per_descriptor


def test_each_sbuf_spill_gets_one_save_and_one_reload(spilled):
    s = Spilled(spilled)
    tr = s.tl.transfers
    assert len(tr) - s.first == 2 * len(s.spills) == 4
    got = []
    for k, sp in enumerate(s.spills):
        for reload in (False, True):
            p, _, _ = s.dma(k, reload)
            got.append((sp.name, p.source, p.dest, p.variable, p.transfer_bytes, p.queue))
    assert got == [
        ("w", "[[SB]]", "[VIRTUAL]", "w", SMALL, "qSyncSpillReload0"),  # w's last access is its load (a DMA)
        ("w", "[[VIRTUAL]]", "[[SB]]", "w", SMALL, "qSyncSpillReload0"),
        ("m", "[[SB]]", "[VIRTUAL]", "m", SMALL, "qSyncSpillReload0"),  # m's is the matmul (TensorE)
        ("m", "[[VIRTUAL]]", "[[SB]]", "m", SMALL, "qSyncSpillReload0"),
    ]


def test_the_packets_cost_what_the_dma_model_charges(spilled):
    s = Spilled(spilled)
    d = HW.dma
    for k in range(len(s.spills)):
        for reload in (False, True):
            p, start, end = s.dma(k, reload)
            # 128 partitions, 8 per DMA engine: 16 packets of 4 KiB, one 512-byte run per partition each
            assert p.engines == tuple(range(16)) and p.packet_bytes == (SMALL // 16,) * 16
            assert p.descriptor_bytes == 512
            assert end - start == pytest.approx(packet_ns(SMALL // 16, 512))
            assert p.issue_ns == d.trigger_ns


def test_a_save_follows_the_last_access_and_holds_back_the_evicting_instruction(spilled):
    s = Spilled(spilled)
    sync = HW.engines.semaphore_sync_ns
    lead = HW.dma.trigger_ns + HW.dma.fixed_cost_ns  # trigger on the queue, then trigger-to-start
    for k, sp in enumerate(s.spills):
        _, save_start, save_end = s.dma(k, False)
        last_access_end = s.end[s.at[sp.store_after]]
        assert save_start >= last_access_end + sync + lead - 1e-6
        assert s.start[s.at[sp.instruction]] == pytest.approx(save_end + sync)  # the evicting instruction waits


def test_a_reload_is_back_before_the_next_access(spilled):
    s = Spilled(spilled)
    sync = HW.engines.semaphore_sync_ns
    for k, sp in enumerate(s.spills):
        _, _, save_end = s.dma(k, False)
        _, reload_start, reload_end = s.dma(k, True)
        assert reload_start >= save_end
        assert reload_start >= s.end[s.at[sp.reload_after]]  # once the space it returns to is free
        # the next access (w: the matmul's LDWEIGHTS row, m: its store's trigger) starts after the reload
        assert s.first_row_start(sp.reload_before) == pytest.approx(reload_end + sync)


def test_the_reload_is_prefetched_while_the_next_access_waits_on_other_work(spilled):
    # w's space is free after the memset that evicted it: the reload starts then, not at the matmul
    s = Spilled(spilled)
    w = s.spills[0]
    assert (w.name, w.reload_after, w.instruction) == ("w", w.instruction, w.instruction)
    _, reload_start, _ = s.dma(0, True)
    lead = HW.dma.trigger_ns + HW.dma.fixed_cost_ns
    assert reload_start == pytest.approx(s.end[s.at[w.reload_after]] + HW.engines.semaphore_sync_ns + lead)


def test_the_spill_traffic_lengthens_the_kernel(spilled):
    s = Spilled(spilled)
    trace = s.trace
    kept = trace.spills
    try:
        trace.spills = []
        without = schedule(trace, HW)
    finally:
        trace.spills = kept
    assert len(without.transfers) == s.first and without.transfers.spill_start == s.first
    # w's save and reload and m's save and reload are each on the critical path (the memsets wait for the saves,
    # the matmul and the last store for the reloads): the kernel is longer by at least their DMA time
    transfers = 4 * packet_ns(SMALL // 16, 512)
    assert s.tl.total_ns - without.total_ns >= transfers
    assert s.tl.total_ns > without.total_ns + transfers + 4 * HW.dma.fixed_cost_ns


def test_the_profile_has_the_spill_rows(spilled):
    rows = sql(
        spilled.profile_dir,
        "SELECT d.queue_name, d.source, d.dest, d.variable, d.transfer_bytes, i.nki_source_location "
        "FROM DmaPacketAggregated d JOIN Flow f ON f.out_id = d.id JOIN Instruction i ON i.id = f.in_id "
        "WHERE d.queue_name LIKE '%Spill%' ORDER BY d.id",
    )
    saved_at = _line(evicted_around_a_matmul, "<- w saved")
    m_saved_at = _line(evicted_around_a_matmul, "<- w reloaded, m saved")
    got = [(q, src, dst, var, b, int(loc.rpartition(":")[2])) for q, src, dst, var, b, loc in rows]
    assert got == [
        ("qSyncSpillReload0", "[[SB]]", "[VIRTUAL]", "w", SMALL, saved_at),
        ("qSyncSpillReload0", "[[VIRTUAL]]", "[[SB]]", "w", SMALL, saved_at),
        ("qSyncSpillReload0", "[[SB]]", "[VIRTUAL]", "m", SMALL, m_saved_at),
        ("qSyncSpillReload0", "[[VIRTUAL]]", "[[SB]]", "m", SMALL, m_saved_at),
    ]
    assert sql(spilled.profile_dir, "SELECT sum(transfer_bytes) FROM DmaPacket WHERE queue_name = 'qSyncSpillReload0'") == [(4 * SMALL,)]
    assert ("qSyncSpillReload0",) in sql(spilled.profile_dir, "SELECT name FROM DmaQueuesInfo")
    # the bytes the Instruction rows count are the bytes the spill DMAs move
    assert sql(spilled.profile_dir, "SELECT spill_save_bytes, spill_reload_bytes FROM Summary") == [(2 * SMALL, 2 * SMALL)]


def test_the_spill_investigation_names_the_tensor_and_line(spilled):
    r = analyze(spilled.profile_dir)
    details = r.investigations["spill"]["details"]
    assert details["save_bytes"] == details["reload_bytes"] == 2 * SMALL
    assert details["spill_queue_bytes"] == 4 * SMALL
    lines = {x["source_line"]: (x["tensors"], x["reloads"], x["spill_cost_bytes"]) for x in details["lines"]}
    w_line = f"test_spills.py:{_line(evicted_around_a_matmul, '<- w saved')}"
    m_line = f"test_spills.py:{_line(evicted_around_a_matmul, '<- w reloaded, m saved')}"
    assert lines == {w_line: (["w"], 1, 2 * SMALL), m_line: (["m"], 1, 2 * SMALL)}
    for f in r.by_kind("spill"):
        assert f.source_lines[0] in (w_line, m_line)
        assert f"({f.evidence['tensors'][0]!r})" in f.summary


def test_psum_spills_move_no_dma(tmp_path):
    res = _profile(two_live_psum_tiles, (np.zeros((1, 1), np.float32),), tmp_path / "p")
    tr = res.timeline.transfers
    assert [sp.buffer for sp in res.timeline.trace.spills] == ["psum"]
    assert tr.spill_start == len(tr)  # no spill DMA
    assert all("Spill" not in p.queue for p in tr.plan)


def test_a_kernel_without_spills_has_no_spill_dma(tmp_path):
    res = profile(K.matmul, *K.cases()[1], target=HW, out=tmp_path / "p")
    tr = res.timeline.transfers
    assert res.timeline.trace.spills == [] and tr.spill_start == len(tr) == len(tr.plan)
    assert sql(res.profile_dir, "SELECT count(*) FROM DmaPacketAggregated WHERE queue_name LIKE '%Spill%'") == [(0,)]
    assert analyze(res.profile_dir).investigations["spill"]["details"]["spill_queue_bytes"] == 0


def test_a_reload_waits_until_the_space_is_free():
    a = np.zeros((128, F), dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NkiWarning)
        res = nkidev.run(evicted_then_space_held, (a,))
    tl = schedule(res.trace, HW)
    (sp,) = res.trace.spills
    at = {i: k for k, i in enumerate(res.trace.columns().id.tolist())}
    start, end = tl.instruction_times()
    reload = tl.transfers.spill_start + 1
    lead = HW.dma.trigger_ns + HW.dma.fixed_cost_ns
    free_at = end[at[sp.reload_after]]  # the tensor_copy reading big, after the memset that evicted x
    assert free_at > end[at[sp.instruction]]
    # the store of s, triggered by the same tensor_copy, has the 16 DMA engines first (first come, first served)
    tr = tl.transfers
    store = int(np.flatnonzero(np.asarray(tr.ins[: tr.spill_start]) == at[sp.reload_after] + 1)[0])
    assert tr.start[store] == pytest.approx(free_at + HW.engines.semaphore_sync_ns + lead)
    assert tr.start[reload] == pytest.approx(tr.end[store])
    assert start[at[sp.reload_before]] == pytest.approx(tl.transfers.end[reload] + HW.engines.semaphore_sync_ns)


def test_the_targets_time_no_spill_by_default_and_the_fraction_scales_the_bytes(spilled):
    trace = spilled.timeline.trace
    for name in ("trn1", "trn2", "trn3"):
        assert get_target(name).dma.spill_traffic_fraction == 0.0
    plain = schedule(trace, "trn2")  # the shipped target: the spills are in the trace and cost no time
    assert plain.transfers.spill_start == len(plain.transfers) and len(trace.spills) > 0
    assert plain.total_ns < spilled.timeline.total_ns
    half = with_overrides(get_target("trn2"), {"dma": {"spill_traffic_fraction": 0.5}}, "tests: half")
    tl = schedule(trace, half)
    tr = tl.transfers
    moved = [int(tr.plan[t].form.free_elems) for t in range(tr.spill_start, len(tr))]
    whole = [sp.bytes_per_partition for sp in Spilled(spilled).spills for _ in (0, 1)]
    assert moved == [-(-b // 2) for b in whole]
    assert plain.total_ns < tl.total_ns < spilled.timeline.total_ns
