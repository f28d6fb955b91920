"""Scheduler timelines on hand-built traces, checked against numbers computed by hand.

trn1 numbers used (nkidev/hardware/trn1.toml): TensorE 2.8 GHz, VectorE 1.12 GHz, ScalarE 1.4 GHz,
MIN_II 64 cycles, SBUF/PSUM access overhead 60 cycles, semaphore hand-off 50 ns, LoadStationary M/4
cycles, 64-cycle PE pipeline refill for a MATMUL after an idle Tensor Engine; DMA: trigger 50 ns, fixed
1300 ns, 17 B/ns x hbm_efficiency (fitted) per engine, 15 ns x (1 - run / 4 KiB) per descriptor, 8 partitions per
DMA engine.
"""

from __future__ import annotations

import math

import pytest

from nkidev.costmodel import schedule
from nkidev.costmodel.dma import descriptor_ns
from nkidev.hardware import get_target
from tests.costmodel.synth import TraceBuilder, matmul_extra_ns, target

TE = 2.8
LS_128 = 128 * 0.25 / TE  # LoadStationary of M = 128: 11.43 ns
MM_512 = 512 / TE  # MATMUL of N = 512 bf16: 182.86 ns
REFILL = 64 / TE  # the first MATMUL (or one after a gap) refills the PE pipeline: 22.86 ns
SYNC = 50.0
DMA_RATE = 17 * get_target("trn1").dma.hbm_efficiency  # B/ns per DMA engine (the fitted factor, read back)
DMA_START = 50 + 1300  # trigger + fixed trigger-to-start latency
DESC_1K, DESC_2K = (descriptor_ns(n, get_target("trn1")) for n in (1024, 2048))  # per-descriptor cost (read back: it shrinks with the run)


def approx(x):
    return pytest.approx(x, rel=1e-9, abs=1e-6)


def _tiles(b: TraceBuilder, psum_tiles: int = 1):
    a = b.tensor("a", "sbuf", (128, 128))
    m = b.tensor("m", "sbuf", (128, 512))
    outs = [b.tensor(f"acc{i}", "psum", (128, 512), "float32") for i in range(psum_tiles)]
    return a, m, outs


def test_one_matmul_is_ldweights_then_matmul():
    b = TraceBuilder()
    a, m, (acc,) = _tiles(b)
    b.matmul(b.access(acc, "dst"), b.access(a, "stationary"), b.access(m, "moving"))
    tl = schedule(b.trace, "trn1")
    assert tl.rows.opcode == ["LDWEIGHTS", "MATMUL"]
    assert tl.spans(0) == [("LDWEIGHTS", 0.0, approx(LS_128)), ("MATMUL", approx(LS_128), approx(LS_128 + REFILL + MM_512))]
    assert tl.total_ns == approx(217.14285714285714)


@pytest.mark.parametrize(
    ("m", "n", "dtype", "mm_cycles", "ls_cycles"),
    [
        (128, 512, "float32", 512 * 4, 32 * 4),  # fp32: x4
        (128, 32, "bfloat16", 64, 32),  # N < 64: max(min(64, M), N) = 64
        (32, 16, "bfloat16", 32, 8),  # max(min(64, 32), 16) = 32
    ],
)
def test_matmul_cost_formula(m, n, dtype, mm_cycles, ls_cycles):
    b = TraceBuilder()
    a = b.tensor("a", "sbuf", (128, m), dtype)
    mv = b.tensor("m", "sbuf", (128, n), dtype)
    acc = b.tensor("acc", "psum", (m, n), "float32")
    b.matmul(b.access(acc, "dst"), b.access(a, "stationary"), b.access(mv, "moving"), dtype=dtype)
    tl = schedule(b.trace, "trn1")
    (_, s0, e0), (_, s1, e1) = tl.spans(0)
    assert e0 - s0 == approx(ls_cycles / TE)
    assert e1 - s1 == approx(mm_cycles / TE + REFILL)


def test_back_to_back_matmuls_hide_ldweights():
    """The second LDWEIGHTS runs in the background of the first MATMUL; the MATMULs are back to back."""
    b = TraceBuilder()
    a, m, (acc0, acc1) = _tiles(b, 2)
    b.matmul(b.access(acc0, "dst"), b.access(a, "stationary"), b.access(m, "moving"))
    b.matmul(b.access(acc1, "dst"), b.access(a, "stationary"), b.access(m, "moving"))
    tl = schedule(b.trace, "trn1")
    first_end = LS_128 + REFILL + MM_512
    assert tl.spans(1) == [
        ("LDWEIGHTS", approx(LS_128), approx(2 * LS_128)),
        ("MATMUL", approx(first_end), approx(first_end + MM_512)),
    ]  # no refill: no gap


def test_psum_accumulation_group_pipelines():
    """Accumulating into one PSUM tile: each MATMUL waits for the previous one (same engine, no semaphore),
    while its LDWEIGHTS still overlaps."""
    b = TraceBuilder()
    a, m, (acc,) = _tiles(b)
    for _ in range(3):
        b.matmul(b.access(acc, "dst"), b.access(a, "stationary"), b.access(m, "moving"))
    tl = schedule(b.trace, "trn1")
    assert tl.deps[1] == [0] and tl.deps[2] == [1]
    assert tl.spans(2)[1] == ("MATMUL", approx(LS_128 + REFILL + 2 * MM_512), approx(LS_128 + REFILL + 3 * MM_512))
    assert tl.spans(2)[0][1] == approx(LS_128 + REFILL + MM_512)  # LDWEIGHTS starts with the previous MATMUL


def test_one_dma_over_sixteen_engines():
    b = TraceBuilder()
    src = b.tensor("x", "hbm", (128, 512), kind="input")
    dst = b.tensor("t", "sbuf", (128, 512))
    b.dma(b.access(dst, "dst"), b.access(src, "src"))
    tl = schedule(b.trace, "trn1")
    packet = 8 * 1024 / DMA_RATE + 8 * DESC_1K  # 8 partitions x 1 KiB per engine, 8 descriptors of 1 KiB
    assert tl.rows.opcode == ["DMA_TRIGGER"]
    assert tl.spans(0) == [("DMA_TRIGGER", 0.0, 50.0), ("DMA", approx(DMA_START), approx(DMA_START + packet))]
    assert len(tl.packets) == 16
    assert sorted(tl.packets.engine.tolist()) == list(range(16))
    assert tl.packets.nbytes.sum() == 128 * 1024


def test_dma_round_numbers():
    """A what-if target with round numbers: 8 B/ns per engine, no descriptor cost, 1 us fixed latency."""
    hw = target(bytes_per_ns_per_engine=8.0, hbm_efficiency=1.0, descriptor_overhead_ns=0.0, fixed_cost_ns=1000.0, trigger_ns=0.0)
    b = TraceBuilder()
    src = b.tensor("x", "hbm", (128, 512), kind="input")
    dst = b.tensor("t", "sbuf", (128, 512))
    b.dma(b.access(dst, "dst"), b.access(src, "src"))
    b.dma(b.access(dst, "dst"), b.access(src, "src"))  # overwrites t: waits (write after write) + semaphore
    tl = schedule(b.trace, hw)
    assert tl.spans(0)[1] == ("DMA", 1000.0, 2024.0)  # 8 KiB per engine at 8 B/ns
    assert tl.spans(1) == [("DMA_TRIGGER", 2074.0, 2074.0), ("DMA", 3074.0, 4098.0)]


def test_dma_engines_follow_partitions():
    """8 partitions per DMA engine: two 8-partition loads on different partitions run in parallel,
    two on the same partitions share one engine."""
    hw = target(bytes_per_ns_per_engine=8.0, hbm_efficiency=1.0, descriptor_overhead_ns=0.0, fixed_cost_ns=0.0, trigger_ns=0.0)
    b = TraceBuilder()
    src = b.tensor("x", "hbm", (8, 512), kind="input")
    t0, t1, t2 = (b.tensor(f"t{i}", "sbuf", (128, 512)) for i in range(3))
    b.dma(b.access(t0, "dst", rows=(0, 8)), b.access(src, "src"))
    b.dma(b.access(t1, "dst", rows=(8, 16)), b.access(src, "src"))
    b.dma(b.access(t2, "dst", rows=(0, 8)), b.access(src, "src"))
    tl = schedule(b.trace, hw)
    assert tl.packets.engine.tolist() == [0, 1, 0]
    assert [tl.spans(i)[1][1:] for i in range(3)] == [(0.0, 1024.0), (0.0, 1024.0), (1024.0, 2048.0)]


def test_dependent_chain_load_compute_store():
    b = TraceBuilder()
    x = b.tensor("x", "hbm", (128, 512), kind="input")
    y = b.tensor("y", "hbm", (128, 512), "float32", kind="output")
    t = b.tensor("t", "sbuf", (128, 512))
    u = b.tensor("u", "sbuf", (128, 512), "float32")
    b.dma(b.access(t, "dst"), b.access(x, "src"))
    b.add("tensor_scalar", "vector", [b.access(t, "data")], [b.access(u, "dst")], op0="multiply")
    b.dma(b.access(y, "dst"), b.access(u, "src"))
    tl = schedule(b.trace, "trn1")
    load_end = DMA_START + 8 * 1024 / DMA_RATE + 8 * DESC_1K
    vec_start = load_end + SYNC
    vec_end = vec_start + 512 / 1.12  # max(MIN_II, N) cycles at 1.12 GHz (bf16 -> fp32: no fast mode)
    store_trigger = vec_end + SYNC
    store_end = store_trigger + DMA_START + 8 * 2048 / DMA_RATE + 8 * DESC_2K
    assert tl.deps == [[], [0], [1]]
    assert tl.spans(1) == [("SCALAR", approx(vec_start), approx(vec_end))]
    assert tl.spans(2) == [
        ("DMA_TRIGGER", approx(store_trigger), approx(store_trigger + 50)),
        ("DMA", approx(store_trigger + DMA_START), approx(store_end)),
    ]
    assert tl.total_ns == approx(store_end)
    starts, ends = tl.instruction_times()
    assert starts.tolist() == approx([0.0, vec_start, store_trigger]) and ends[2] == approx(store_end)
    assert tl.rows.wait[1] == approx(vec_start)  # the Vector Engine was idle, waiting on the load


def test_two_independent_engines_overlap():
    b = TraceBuilder()
    t = b.tensor("t", "sbuf", (128, 512), "float32")
    u = b.tensor("u", "sbuf", (128, 512), "float32")
    v = b.tensor("v", "sbuf", (128, 512), "float32")
    b.add("tensor_scalar", "vector", [b.access(t, "data")], [b.access(u, "dst")], op0="multiply")
    b.add("activation", "scalar", [b.access(t, "data")], [b.access(v, "dst")], func="exp")
    tl = schedule(b.trace, "trn1")
    assert tl.spans(0) == [("SCALAR", 0.0, approx(512 / 1.12))]
    assert tl.spans(1) == [("ACTIVATE", 0.0, approx(512 / 1.4))]
    assert tl.total_ns == approx(512 / 1.12)


def test_same_engine_dependency_pays_access_overhead():
    b = TraceBuilder()
    t, u, v = (b.tensor(n, "sbuf", (128, 512), "float32") for n in "tuv")
    b.add("tensor_scalar", "vector", [b.access(t, "data")], [b.access(u, "dst")], op0="multiply")
    b.add("tensor_scalar", "vector", [b.access(u, "data")], [b.access(v, "dst")], op0="add")
    tl = schedule(b.trace, "trn1")
    first_end = 512 / 1.12
    assert tl.spans(1)[0][1] == approx(first_end + 60 / 1.12)


def test_write_after_read_waits_for_the_reader():
    b = TraceBuilder()
    x = b.tensor("x", "hbm", (128, 512), "float32", kind="input")
    t, u = (b.tensor(n, "sbuf", (128, 512), "float32") for n in "tu")
    b.add("tensor_scalar", "vector", [b.access(t, "data")], [b.access(u, "dst")], op0="multiply")
    b.dma(b.access(t, "dst"), b.access(x, "src"))  # reloads t while the Vector Engine reads it
    tl = schedule(b.trace, "trn1")
    assert tl.deps[1] == [0]
    assert tl.spans(1)[0][1] == approx(512 / 1.12 + SYNC)


def test_disjoint_hbm_column_blocks_do_not_depend():
    b = TraceBuilder()
    out = b.tensor("out", "hbm", (128, 1024), kind="output")
    t = b.tensor("t", "sbuf", (128, 512))
    b.dma(b.access(out, "dst", cols=(0, 512)), b.access(t, "src"))
    b.dma(b.access(out, "dst", cols=(512, 1024)), b.access(t, "src"))
    b.dma(b.access(out, "dst", cols=(256, 768)), b.access(t, "src"))
    tl = schedule(b.trace, "trn1")
    assert tl.deps == [[], [], [0, 1]]


def test_core_barrier_releases_all_cores_together():
    b = TraceBuilder(target="trn2", programs=2)
    t = b.tensor("t", "sbuf", (128, 512), "float32")
    u = b.tensor("u", "sbuf", (128, 512), "float32")
    b.add("tensor_scalar", "vector", [b.access(t, "data")], [b.access(u, "dst")], program=0, op0="multiply")
    bar = [b.tensor(f"s{i}", "sbuf", (1, 1), "float32") for i in range(2)]
    b.add("core_barrier", "gpsimd", [b.access(bar[0], "data")], [], program=0)
    b.add("core_barrier", "gpsimd", [b.access(bar[1], "data")], [], program=1)
    tl = schedule(b.trace)
    assert tl.spans(1)[0][1] == tl.spans(2)[0][1] == 0.0  # no dependency holds either core back
    # when one core arrives late (its GpSimd stream is busy), the other waits for it
    b2 = TraceBuilder(programs=2)
    t = b2.tensor("t", "sbuf", (128, 512), "float32")
    b2.add("tensor_scalar", "gpsimd", [b2.access(t, "data")], [b2.access(t, "dst")], program=0, op0="multiply")
    b2.add("core_barrier", "gpsimd", [b2.access(t, "data")], [], program=0)
    b2.add("core_barrier", "gpsimd", [b2.access(t, "data")], [], program=1)
    tl2 = schedule(b2.trace, "trn1")
    s1, s2 = tl2.spans(1)[0][1], tl2.spans(2)[0][1]
    assert s1 == s2 and s1 > tl2.spans(0)[0][2]


def test_schedule_defaults_to_the_trace_target_and_never_mutates_the_trace():
    b = TraceBuilder(target="trn3")
    a, m, (acc,) = _tiles(b)
    b.matmul(b.access(acc, "dst"), b.access(a, "stationary"), b.access(m, "moving"))
    before = [(i.id, i.opcode) for i in b.trace.instructions]
    tl = schedule(b.trace)
    assert tl.target.name == "trn3"
    # LoadStationary + MATMUL, and the first MATMUL pays the refill and the trn3 dI/dt ramp (it starts at ~50%)
    assert tl.total_ns == approx((32 + 512) / 2.4 + matmul_extra_ns(math.inf, 512 / 2.4, tl.target))
    assert [(i.id, i.opcode) for i in b.trace.instructions] == before


@pytest.mark.parametrize(("name", "overlap"), [("trn1", False), ("trn2", True)])
def test_nc_v2_vector_and_gpsimd_share_sbuf(name, overlap):
    b = TraceBuilder(target=name)
    t, u, v = (b.tensor(n, "sbuf", (128, 512), "float32") for n in "tuv")
    b.add("tensor_scalar", "vector", [b.access(t, "data")], [b.access(u, "dst")], op0="multiply")
    b.add("iota", "gpsimd", [], [b.access(v, "dst")])
    tl = schedule(b.trace)
    vec_end = tl.spans(0)[0][2]
    assert (tl.spans(1)[0][1] == 0.0) is overlap
    if not overlap:
        assert tl.spans(1)[0][1] == approx(vec_end)


def test_written_once_tiles_and_reused_tiles_give_the_same_kinds_of_edges():
    # x: written once, then read (its reads skip the walk); y: written twice (walked); z: read, then written
    b = TraceBuilder()
    src = b.tensor("src", "hbm", (128, 512), kind="input")
    x, y, z, w = (b.tensor(n, "sbuf", (128, 512)) for n in "xyzw")
    b.dma(b.access(x, "dst", rows=(0, 64)), b.access(src, "src", rows=(0, 64)))  # 0
    b.add("tensor_copy", "vector", [b.access(z, "src")], [b.access(y, "dst")])  # 1: reads z before anyone writes it
    b.add("tensor_copy", "vector", [b.access(x, "src", rows=(32, 64))], [b.access(w, "dst")])  # 2: overlaps 0
    b.add("tensor_copy", "scalar", [b.access(x, "src", rows=(64, 128))], [b.access(y, "dst")])  # 3: misses 0; WAW on y
    b.add("tensor_tensor", "vector", [b.access(x, "a", rows=(0, 8)), b.access(y, "b")], [b.access(z, "dst")], op="add")  # 4
    tl = schedule(b.trace, "trn1")
    assert tl.deps == [[], [], [0], [1], [0, 1, 3]]
