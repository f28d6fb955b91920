"""Engine rates per generation and dtype, DMA efficiency by descriptor size, and the TensorE dI/dt throttle,
each checked against the documented numbers (docs/guides/sources.md keys in the comments)."""

from __future__ import annotations

import dataclasses
import math

import pytest

from nkidev.costmodel import schedule
from nkidev.costmodel.dma import descriptor_efficiency, descriptor_ns, plan_transfer
from nkidev.costmodel.durations import engine_work
from nkidev.costmodel.throttle import TensorThrottle, ramped_ns
from nkidev.emulator.ops import OPS
from nkidev.hardware import get_target
from tests.costmodel.synth import TraceBuilder, matmul_extra_ns

N = 1024  # elements per partition: far above MIN_II, so the cycles are the formula's N term


def _cycles(target: str, opcode: str, engine: str, dtype: str, src="sbuf", dst="sbuf", strided=False, dst_dtype=None, **attrs) -> float:
    """Engine cycles of one [128, N] instruction reading `src` and writing `dst` (tensor_tensor: two inputs)."""
    b = TraceBuilder(target)
    a = b.access(b.tensor("a", src, (128, N), dtype), "data")
    o = b.access(b.tensor("o", dst, (128, N), dst_dtype or dtype), "dst")
    if strided:  # every element on its own: the innermost free dim is not contiguous
        a = dataclasses.replace(a, contiguous_bytes=a.nbytes // 128 // N)
    reads = [a]
    if opcode == "tensor_tensor":
        reads.append(b.access(b.tensor("c", "sbuf", (128, N), dtype), "data2"))
    i = b.add(opcode, engine, reads, [o], **attrs)
    return OPS[opcode].cycles(b.trace.instructions[i], get_target(target))


@pytest.mark.parametrize(
    ("target", "dtype", "src", "dst", "strided", "cycles"),
    [
        ("trn1", "bfloat16", "sbuf", "sbuf", False, N),  # NC-v2: no performance mode [arch-v2 engine table]
        ("trn2", "bfloat16", "sbuf", "sbuf", False, N / 4),  # 4x: SBUF, BF16, contiguous [arch-v3 "Vector Engine Performance Mode" 1a-c]
        ("trn2", "float16", "sbuf", "sbuf", True, N / 2),  # 2x: SBUF, FP16, strided [2.1a]
        ("trn2", "bfloat16", "psum", "sbuf", False, N / 2),  # 2x: contiguous, one side in PSUM [2.1b]
        ("trn2", "bfloat16", "psum", "sbuf", True, N),  # strided and PSUM: no documented mode
        ("trn2", "float32", "sbuf", "sbuf", False, N),  # fp32: no lift over NC-v2 (the reading in trn2.toml)
        ("trn2", "float8_e4m3", "sbuf", "sbuf", False, N),  # FP8 is not a NC-v3 VectorE mode dtype
        ("trn3", "float8_e4m3", "sbuf", "sbuf", False, N / 4),  # NC-v4 table: 512 BF16/FP16/FP8 [arch-v4]
        ("trn3", "float32", "sbuf", "sbuf", False, N),
    ],
)
def test_vector_tensor_copy_cycles_per_generation(target, dtype, src, dst, strided, cycles):
    assert _cycles(target, "tensor_copy", "vector", dtype, src, dst, strided) == cycles


@pytest.mark.parametrize(
    ("target", "dtype", "op", "cycles"),
    [
        ("trn1", "float32", "add", 2 * N),  # two SBUF inputs: max(MIN_II, 2N) [isa-legacy tensor_tensor]
        ("trn2", "float32", "add", 2 * N),  # fp32 keeps the NC-v2 formula on NC-v3
        ("trn3", "float32", "add", 2 * N),
        ("trn1", "bfloat16", "add", N),  # bf16 add in SBUF: max(MIN_II, N) [isa-legacy]
        ("trn2", "bfloat16", "add", N / 2),  # ... and 2x on NC-v3 [arch-v3 2.2a]
        ("trn2", "bfloat16", "maximum", N),  # 2N at 2x
    ],
)
def test_vector_tensor_tensor_cycles_per_generation(target, dtype, op, cycles):
    assert _cycles(target, "tensor_tensor", "vector", dtype, op=op) == cycles


def test_bf16_tensor_tensor_runs_at_n_only_with_a_bf16_output_and_contiguous_inputs():
    """[isa-legacy] tensor_tensor: max(MIN_II, N) when both SBUF inputs and the output are bf16, the op is
    add/multiply/subtract and the inputs are contiguous; otherwise 2N."""
    assert _cycles("trn1", "tensor_tensor", "vector", "bfloat16", op="multiply") == N
    assert _cycles("trn1", "tensor_tensor", "vector", "bfloat16", dst_dtype="float32", op="multiply") == 2 * N
    assert _cycles("trn1", "tensor_tensor", "vector", "bfloat16", strided=True, op="multiply") == 2 * N


def test_tensor_tensor_mode_needs_sbuf_inputs_not_an_sbuf_output():
    """[arch-v3 2.2a]: both *inputs* in SBUF; the output may be in PSUM."""
    assert _cycles("trn2", "tensor_tensor", "vector", "bfloat16", dst="psum", op="add") == N / 2
    assert _cycles("trn2", "tensor_tensor", "vector", "bfloat16", src="psum", op="add") == N  # a PSUM input: N, no mode


def test_scalar_engine_copy_mode_is_trn3_only():
    assert _cycles("trn2", "tensor_copy", "scalar", "bfloat16") == N  # ScalarE 128 input/output [arch-v3 table]
    assert _cycles("trn3", "tensor_copy", "scalar", "bfloat16") == N / 2  # up to 2x [arch-v4 "Performance mode"]
    assert _cycles("trn3", "tensor_copy", "scalar", "float32") == N


def test_cycles_become_ns_at_each_generations_clock():
    b = TraceBuilder("trn2")
    i = b.add(
        "tensor_copy", "vector", [b.access(b.tensor("a", "sbuf", (128, N)), "src")], [b.access(b.tensor("o", "sbuf", (128, N)), "dst")]
    )
    ins = b.trace.instructions[i]
    assert engine_work(ins, get_target("trn2")).busy_ns == pytest.approx(N / 4 / 0.96)
    assert engine_work(ins, get_target("trn1")).busy_ns == pytest.approx(N / 1.12)
    assert engine_work(ins, get_target("trn3")).busy_ns == pytest.approx(N / 4 / 1.2)


# ---------------------------------------------------------------- DMA efficiency by descriptor size

SIZES = (4, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 32768)


@pytest.mark.parametrize("target", ["trn1", "trn2", "trn3"])
def test_descriptor_efficiency_is_monotone_and_has_the_documented_regimes(target):
    """[dma-bandwidth "Bandwidth vs. Payload Size"]: < 256 B overhead-bound, >= 2 KiB near peak, >= 4 KiB saturates."""
    hw = get_target(target)
    eff = [descriptor_efficiency(s, hw) for s in SIZES]
    assert eff == sorted(eff) and len(set(eff[:-2])) == len(eff) - 2
    d = hw.dma
    assert descriptor_efficiency(d.min_efficient_bytes_per_partition, hw) >= 0.8
    assert descriptor_efficiency(d.saturating_bytes_per_partition, hw) == 1.0
    assert descriptor_ns(32768, hw) == 0.0
    if target == "trn1":
        return  # trn1's fitted hbm_efficiency (0.415) slows every byte; its descriptor cost is a small share (an estimate)

    def per_descriptor(s):
        return descriptor_ns(s, hw) + s / (d.bytes_per_ns_per_engine * d.hbm_efficiency)

    assert descriptor_efficiency(d.overhead_bound_bytes_per_partition - 1, hw) < 0.5
    assert descriptor_efficiency(4, hw) < 0.05  # 4-byte descriptors: pathological
    # overhead-bound: from 4 B to 255 B the bytes grow 64x, the time per descriptor less than 2x
    assert per_descriptor(d.overhead_bound_bytes_per_partition - 1) < 2 * per_descriptor(4)


def _load_gbps(cols: int, dtype_bytes: int = 2) -> float:
    """Steady-state GB/s of 16 DMA engines moving [128, cols] bf16 tiles from HBM (rows of cols*2 bytes)."""
    hw = get_target("trn2")
    b = TraceBuilder("trn2")
    x = b.tensor("x", "hbm", (128, cols), kind="input")
    t = b.tensor("t", "sbuf", (128, cols))
    p = plan_transfer(b.trace.instructions[b.dma(b.access(t, "dst"), b.access(x, "src"))], b.trace, hw)
    assert p.descriptor_bytes == cols * dtype_bytes
    return sum(p.packet_bytes) / max(p.packet_ns)


def test_trn2_mixed_dge_example_rows():
    """[agentic-investigations "Mixed DGE kernel"]: 1 KiB rows reach 259 GB/s, 4 KiB rows 354 GB/s (the former is
    what descriptor_overhead_ns is fitted to; the latter is the saturated per-engine table rate, 368 GB/s)."""
    assert _load_gbps(512) == pytest.approx(259, rel=0.01)
    assert _load_gbps(2048) == pytest.approx(354, rel=0.05)
    assert _load_gbps(2048) == pytest.approx(16 * 23)  # saturated: the per-engine table rate [dma-overview]


# ---------------------------------------------------------------- TensorE dI/dt throttle

MM_NS = 512 / 2.4  # one bf16 MATMUL of N = 512 on trn2


def test_throttle_after_an_idle_gap_on_trn2_and_trn3():
    """[explorer-summary "Understanding throttling"]: a burst starts at ~50% and ramps to full over ~3 us; below 50%
    utilization over a ~3 us window (an idle gap of 1.5 us or more) re-engages the limit."""
    hw = get_target("trn2")
    refill = 64 / 2.4
    assert matmul_extra_ns(0.0, MM_NS, hw) == 0.0  # back to back: nothing
    assert matmul_extra_ns(1000.0, MM_NS, hw) == pytest.approx(refill)  # short gap: the pipeline refill only
    first = matmul_extra_ns(math.inf, MM_NS, hw)
    assert matmul_extra_ns(1500.0, MM_NS, hw) == first
    # the first 213 ns of work at a rate ramping from 50%: between 1x and 2x the time
    assert refill < first - refill < MM_NS
    # long work: the whole ramp's loss, 3 us x (1 - 0.5) / 2 = 750 ns
    assert matmul_extra_ns(math.inf, 10_000.0, hw) == pytest.approx(refill + 750.0)
    assert matmul_extra_ns(math.inf, MM_NS, get_target("trn3")) == pytest.approx(first)


def _matmul_spans(tl, matmuls: list[int]) -> list[tuple[float, float]]:
    return [next((s, e) for op, s, e in tl.spans(i) if op == "MATMUL") for i in matmuls]


def _starved_tensor_engine(target: str, n: int = 12):
    """n MATMULs (bf16, N = 512), each waiting on its moving tile from a GpSimd op over [128, 2048]: 2048 cycles at
    1.2 GHz = 1707 ns per tile, so the Tensor Engine is ~1/8 busy and every idle gap is shorter than 1.5 us."""
    b = TraceBuilder(target)
    a = b.tensor("a", "sbuf", (128, 128))
    acc = b.tensor("acc", "psum", (128, 512), "float32")
    matmuls = []
    for k in range(n):
        m = b.tensor(f"m{k}", "sbuf", (128, 2048))
        b.add("iota", "gpsimd", [], [b.access(m, "dst")])
        matmuls.append(b.matmul(b.access(acc, "dst"), b.access(a, "stationary"), b.access(m, "moving", cols=(0, 512))))
    return schedule(b.trace, target), matmuls


def test_a_starved_tensor_engine_with_short_gaps_stays_throttled():
    """The burst state: a Tensor Engine kept below 50% busy over every ~3 us window is re-engaged at every MATMUL
    [explorer-summary, glossary "dI/dt (delta current) throttling": "bursty workloads that repeatedly leave the Tensor Engine
    below 50% utilization"], although each of its gaps is shorter than the 1.5 us a single gap needs."""
    tl, matmuls = _starved_tensor_engine("trn2")
    spans = _matmul_spans(tl, matmuls)
    gaps = [s1 - e0 for (_, e0), (s1, _) in zip(spans, spans[1:])]
    assert all(0 < g < 1500 for g in gaps)
    throttled_ns = 64 / 2.4 + ramped_ns(MM_NS, 0.5, 0.5 / 3000)  # refill, then the work from a 50% limit
    assert throttled_ns > 1.8 * MM_NS
    assert [e - s for s, e in spans] == [pytest.approx(throttled_ns)] * len(spans)
    assert tl.busy_ns()["tensor"] > len(spans) * 1.8 * MM_NS


def test_a_busy_tensor_engine_ramps_once_and_then_runs_at_full_rate():
    b = TraceBuilder("trn2")
    a = b.tensor("a", "sbuf", (128, 128))
    m = b.tensor("m", "sbuf", (128, 512))
    acc = b.tensor("acc", "psum", (128, 512), "float32")
    matmuls = [b.matmul(b.access(acc, "dst"), b.access(a, "stationary"), b.access(m, "moving")) for _ in range(40)]
    tl = schedule(b.trace, "trn2")
    spans = _matmul_spans(tl, matmuls)
    assert all(s1 == e0 for (_, e0), (s1, _) in zip(spans, spans[1:]))  # back to back
    first = spans[0][0]
    ramped = [e - s for s, e in spans if s >= first + 64 / 2.4 + 3000]  # once the limit has ramped to full
    assert len(ramped) >= 25 and ramped == [pytest.approx(MM_NS)] * len(ramped)
    # the whole ramp's loss once: 3 us x (1 - 0.5) / 2 = 750 ns, after the pipeline refill
    assert spans[-1][1] - first == pytest.approx(40 * MM_NS + 64 / 2.4 + 750.0)


def test_the_schedule_records_each_interval_the_limit_was_in_force():
    """Timeline.throttled: one interval per re-engagement, from when the MATMUL's work begins (after its refill)
    until the limit engages again or, ramped to full, after throttle_ramp_ns; the burst state's own numbers."""
    tl, matmuls = _starved_tensor_engine("trn2")
    th = tl.throttled
    spans = _matmul_spans(tl, matmuls)
    assert th.trigger.tolist() == matmuls and th.core.tolist() == [0] * len(matmuls)
    assert th.start.tolist() == pytest.approx([s + 64 / 2.4 for s, _ in spans])
    assert th.end.tolist() == pytest.approx(th.start[1:].tolist() + [th.start[-1] + 3000.0])  # cut by the next one
    replay = TensorThrottle(get_target("trn2"))  # the burst state, fed the scheduled MATMULs again
    prev = -math.inf
    for (s, e), i in zip(spans, matmuls):
        assert replay.matmul(s, prev, tl.work[i].busy_ns) == pytest.approx(e)
        prev = e
    assert replay.engaged == pytest.approx(th.start.tolist())
    assert th.limit_at(0, th.start[0] + 1500.0) == pytest.approx(0.75)  # half way up the ramp from 50%
    affected = th.affected_matmuls(tl.rows, tl.trace.columns().program)
    assert [len(a) for a in affected] == [2] * (len(matmuls) - 1) + [1]  # and the next one's refill runs under it


def test_a_busy_tensor_engine_records_only_its_first_ramp():
    b = TraceBuilder("trn2")
    a = b.tensor("a", "sbuf", (128, 128))
    m = b.tensor("m", "sbuf", (128, 512))
    acc = b.tensor("acc", "psum", (128, 512), "float32")
    first = b.matmul(b.access(acc, "dst"), b.access(a, "stationary"), b.access(m, "moving"))
    for _ in range(39):
        b.matmul(b.access(acc, "dst"), b.access(a, "stationary"), b.access(m, "moving"))
    tl = schedule(b.trace, "trn2")
    (start,) = tl.throttled.start
    assert tl.throttled.trigger.tolist() == [first] and tl.throttled.end.tolist() == [pytest.approx(start + 3000.0)]
    assert start == pytest.approx(_matmul_spans(tl, [first])[0][0] + 64 / 2.4)


def test_the_starved_tensor_engine_is_not_throttled_on_trn1():
    tl, matmuls = _starved_tensor_engine("trn1")
    assert len(tl.throttled) == 0
    assert [e - s for s, e in _matmul_spans(tl, matmuls)] == [pytest.approx((512 + 64) / 2.8)] * len(matmuls)


def test_no_throttle_on_trn1():
    hw = get_target("trn1")
    assert matmul_extra_ns(math.inf, 10_000.0, hw) == pytest.approx(64 / 2.8)


def test_throttle_is_monotone_in_the_work_of_the_first_matmul():
    hw = get_target("trn2")
    delays = [matmul_extra_ns(math.inf, w, hw) for w in (10.0, 100.0, 1000.0, 2000.0, 2250.0, 5000.0)]
    assert delays == sorted(delays)
