"""Pieces of the cost model: interval unions, DMA plans, on-chip buffer reuse, cost formulas."""

from __future__ import annotations

import numpy as np
import pytest

from nkidev.costmodel.buffers import reuse_edges
from nkidev.costmodel.dma import descriptor_ns, plan, plan_key, plan_transfer
from nkidev.costmodel.intervals import merge, merged_length
from nkidev.emulator.ops import OPS
from nkidev.hardware import get_target
from tests.costmodel.synth import TraceBuilder


def test_merge_intervals():
    s, e = merge([5, 0, 1, 10, 12], [6, 2, 3, 11, 13])
    assert s.tolist() == [0, 5, 10, 12] and e.tolist() == [3, 6, 11, 13]
    assert merged_length([0, 1, 2], [10, 3, 4]) == 10
    assert merged_length([], []) == 0.0


def test_dma_plan_descriptor_size_and_engines():
    b = TraceBuilder()
    x = b.tensor("x", "hbm", (128, 4096), kind="input")
    t = b.tensor("t", "sbuf", (128, 512))
    i = b.dma(b.access(t, "dst"), b.access(x, "src", cols=(1024, 1536)))
    plan = plan_transfer(b.trace.instructions[i], b.trace, get_target("trn1"))
    assert plan.descriptor_bytes == 1024  # one row of 512 bf16
    assert plan.engines == tuple(range(16)) and set(plan.packet_bytes) == {8 * 1024}
    assert (plan.queue, plan.source, plan.dest, plan.op, plan.variable) == ("qSyncIO0", "[[INPUT]]", "[[SB]]", "read", "x")
    assert plan.hbm_read == 128 * 1024 and plan.hbm_write == 0


def test_dma_plans_are_shared_by_tiles_at_other_offsets_only():
    b = TraceBuilder()
    x = b.tensor("x", "hbm", (128, 4096), kind="input")
    t = b.tensor("t", "sbuf", (128, 512))
    first = b.dma(b.access(t, "dst"), b.access(x, "src", cols=(0, 512)))
    later = b.dma(b.access(t, "dst"), b.access(x, "src", cols=(2048, 2560)))  # same sizes, another offset
    half = b.dma(b.access(t, "dst", rows=(0, 64)), b.access(x, "src", rows=(0, 64), cols=(0, 512)))  # 64 partitions
    ins = b.trace.instructions
    names = ("[[INPUT]]", "[[SB]]", "x")
    assert plan_key(ins[first], *names) == plan_key(ins[later], *names) != plan_key(ins[half], *names)
    assert plan_key(ins[first], *names) != plan_key(ins[first], "[[INPUT]]", "[[SB]]", "y")  # the profile's label
    hw = get_target("trn2")
    assert plan(ins[first], *names, hw) == plan(ins[later], *names, hw) != plan(ins[half], *names, hw)


def test_small_descriptors_are_slower_per_byte():
    hw = get_target("trn2")
    times = []
    for cols in (64, 512, 2048):  # 128 B, 1 KiB, 4 KiB rows: same bytes moved overall
        b = TraceBuilder("trn2")
        x = b.tensor("x", "hbm", (128 * 2048 // cols, cols), kind="input")
        plans = []
        for r in range(0, 128 * 2048 // cols, 128):
            t = b.tensor("t", "sbuf", (128, cols))
            i = b.dma(b.access(t, "dst"), b.access(x, "src", rows=(r, r + 128)))
            plans.append(plan_transfer(b.trace.instructions[i], b.trace, hw))
        times.append(sum(sum(p.packet_ns) for p in plans))
    assert times[0] > times[1] > times[2]
    # the trn2 example of [sources: agentic-investigations "Mixed DGE kernel"]:
    # 1 KiB rows reach ~259 GB/s, 4 KiB rows ~354 GB/s (16 engines)
    per_engine = 1024 * 8 / (8 * 1024 / 23 + 8 * descriptor_ns(1024, hw))
    assert 16 * per_engine == pytest.approx(275, rel=0.1)


def test_stores_and_swdge_use_their_queues():
    b = TraceBuilder("trn2")
    y = b.tensor("y", "hbm", (128, 512), kind="output")
    t = b.tensor("t", "sbuf", (128, 512))
    store = b.dma(b.access(y, "dst"), b.access(t, "src"))
    dyn = b.dma(b.access(t, "dst"), b.access(y, "src"), dge_mode="swdge")
    hw = get_target("trn2")
    p_store = plan_transfer(b.trace.instructions[store], b.trace, hw)
    p_dyn = plan_transfer(b.trace.instructions[dyn], b.trace, hw)
    assert (p_store.queue, p_store.dest, p_store.op) == ("qSyncIO1", "[OUTPUT]", "write")
    assert (p_dyn.queue, p_dyn.issue_engine, p_dyn.issue_ns) == ("qGpSimdDynamic", "gpsimd", hw.dma.swdge_cost_ns)


def test_buffer_reuse_when_sbuf_is_full():
    """Three 80 KB tiles on trn1 (180224 B usable): the third takes the first one's slot and must wait
    for the first tile's last use."""
    b = TraceBuilder()
    x = b.tensor("x", "hbm", (128, 40000), kind="input")
    tiles = [b.tensor(f"t{i}", "sbuf", (128, 40000)) for i in range(3)]
    outs = [b.tensor(f"o{i}", "sbuf", (128, 1), "float32") for i in range(3)]
    pos = []
    for t, o in zip(tiles, outs):
        load = b.dma(b.access(t, "dst"), b.access(x, "src"))
        use = b.add("tensor_reduce", "vector", [b.access(t, "data")], [b.access(o, "dst")], op="add")
        pos.append((load, use))
    edges = reuse_edges(b.trace, get_target("trn1"))
    # the ring goes on past t0's space: o2 takes o0's dead 4 B, not the unused top
    assert edges == [(pos[0][1], pos[2][0]), (pos[0][1], pos[2][1])]


def test_adjacent_dead_tiles_coalesce_for_a_bigger_tile():
    """Two dead 60,000 B tiles side by side hold one 120,000 B tile (trn1: 180,224 B usable), which waits for both."""
    b = TraceBuilder()
    x = b.tensor("x", "hbm", (128, 60000), kind="input")
    t0, t1 = (b.tensor(f"t{i}", "sbuf", (128, 30000)) for i in range(2))
    keep = b.tensor("keep", "sbuf", (128, 30112))  # the rest of SBUF, live to the end
    big = b.tensor("big", "sbuf", (128, 60000))
    o = b.tensor("o", "hbm", (128, 1), "float32", kind="output")

    def load(t):
        return b.dma(b.access(t, "dst"), b.access(x, "src"))

    def use(t):
        return b.add("tensor_reduce", "vector", [b.access(t, "data")], [b.access(o, "dst")], op="add")

    load(keep)
    uses = []
    for t in (t0, t1):
        load(t)
        uses.append(use(t))
    big_load = load(big)
    use(big)
    use(keep)
    assert reuse_edges(b.trace, get_target("trn1")) == [(uses[0], big_load), (uses[1], big_load)]


def test_allocation_stays_fast_when_fragmented():
    """40,000 tiles of mixed sizes and lifetimes leave thousands of dead fragments; each placement is a tree descent
    (a scan over the fragments took seconds here)."""
    import random
    import time

    from nkidev.costmodel.buffers import _Space

    rng = random.Random(7)
    space = _Space(196_608, 64)
    start = time.perf_counter()
    placed = 0
    for pos in range(40_000):
        size = 64 * rng.choice((1, 2, 3, 5, 7))
        placed += space.place(size, pos, pos + rng.choice((1, 5, 40, 400))) is not None
    elapsed = time.perf_counter() - start
    assert placed == 40_000
    assert len(space.segments) > 500  # dead fragments, in ~80 blocks
    assert elapsed < 2.0


def test_psum_tiles_rotate_over_eight_banks():
    b = TraceBuilder()
    a = b.tensor("a", "sbuf", (128, 128))
    m = b.tensor("m", "sbuf", (128, 512))
    mms = []
    for i in range(10):
        acc = b.tensor(f"acc{i}", "psum", (128, 512), "float32")
        mms.append(b.matmul(b.access(acc, "dst"), b.access(a, "stationary"), b.access(m, "moving")))
    edges = reuse_edges(b.trace, get_target("trn1"))
    assert edges == [(mms[0], mms[8]), (mms[1], mms[9])]


def test_vector_performance_modes():
    b = TraceBuilder("trn2")
    t, u = (b.tensor(n, "sbuf", (128, 1024)) for n in "tu")
    f = b.tensor("f", "sbuf", (128, 1024), "float32")
    copy16 = b.add("tensor_copy", "vector", [b.access(t, "src")], [b.access(u, "dst")])
    copy32 = b.add("tensor_copy", "vector", [b.access(f, "src")], [b.access(f, "dst")])
    tt16 = b.add("tensor_tensor", "vector", [b.access(t, "data1"), b.access(u, "data2")], [b.access(u, "dst")], op="add")
    hw2, hw1 = get_target("trn2"), get_target("trn1")
    ins = b.trace.instructions

    def rate(i, hw):
        return OPS[ins[i].opcode].perf_rate(ins[i], hw)

    assert [rate(i, hw2) for i in (copy16, copy32, tt16)] == [4.0, 1.0, 2.0]
    assert rate(copy16, hw1) == 1.0
    assert OPS["tensor_copy"].cycles(ins[copy16], hw2) == 1024 / 4
    assert OPS["tensor_tensor"].cycles(ins[tt16], hw2) == 1024 / 2  # all-bf16 add in SBUF: max(MIN_II, N), 2x mode


def test_every_traced_op_has_a_cost():
    missing = [n for n, op in OPS.items() if op.cost is None]
    assert missing == []
    assert np.isfinite(OPS["nc_matmul"].cycles(_fake_matmul(), get_target()))


def _fake_matmul():
    b = TraceBuilder()
    a = b.tensor("a", "sbuf", (128, 128))
    m = b.tensor("m", "sbuf", (128, 512))
    acc = b.tensor("acc", "psum", (128, 512), "float32")
    b.matmul(b.access(acc, "dst"), b.access(a, "stationary"), b.access(m, "moving"))
    return b.trace.instructions[0]
