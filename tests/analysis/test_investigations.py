"""Each investigation on a profile built so that its findings are known by hand."""

import numpy as np
import pytest

from nkidev.analysis.api import analyze
from nkidev.hardware import get_target
from tests.analysis.synthetic import ProfileBuilder

from .helpers import line


def kinds(result, kind):
    return result.by_kind(kind)


def test_small_dmas_are_found_at_their_line(tmp_path):
    # line 10: 8 loads of 128 x 512 B (64 KiB) taking 1000 ns each (65.5 B/ns on a 400 B/ns DMA);
    # line 11: 2 loads of 128 x 8 KiB (1 MiB) at 3000 ns each (350 B/ns). Everything serial.
    p = ProfileBuilder(dma_bw=400e9)
    p.tensor("x", "IN", 8 * 65536)
    p.tensor("w", "IN", 2 * 1 << 20)
    t = 0
    for _ in range(8):
        p.dma(t, t + 1000, 65536, src=line(10), variable="x")
        t += 1000
    for _ in range(2):
        p.dma(t, t + 3000, 1 << 20, src=line(11), variable="w")
        t += 3000
    r = analyze(p.write(tmp_path))
    found = kinds(r, "dma_efficiency")
    assert [f.source_lines for f in found] == [["kern.py:10"]]
    f = found[0]
    assert f.evidence["bytes_per_partition"] == 512 and f.evidence["transfers"] == 8
    # the gap (busy time beyond bytes at the binding ceiling) is shared by each line's own excess transfer
    # time; the transfers never overlap, so line 10 gets exactly its excess: 8 x 1000 ns - 512 KiB at the
    # ceiling. These loads read HBM, and trn2's HBM (~363 GB/s per NeuronCore) binds before this 400 GB/s DMA.
    peak = min(400.0, get_target("trn2").hbm.bytes_per_s_per_nc / 1e9)
    excess_10, excess_11 = 8000 - 8 * 65536 / peak, 6000 - 2 * (1 << 20) / peak
    gap = 14_000 - (8 * 65536 + 2 * (1 << 20)) / peak
    assert gap == pytest.approx(excess_10 + excess_11)
    assert f.time_gap_ns == pytest.approx(excess_10)
    lines = r.investigations["dma_efficiency"]["details"]["lines"]
    assert {x["source_line"]: x["bytes_per_partition"] for x in lines} == {"kern.py:10": 512, "kern.py:11": 8192}


def test_efficient_dmas_are_not_flagged(tmp_path):
    p = ProfileBuilder(dma_bw=400e9)
    p.tensor("x", "IN", 4 << 20)
    for i in range(4):  # 128 x 8 KiB per DMA at 95% of peak
        p.dma(i * 2760, (i + 1) * 2760, 1 << 20, src=line(10), variable="x")
    r = analyze(p.write(tmp_path))
    assert r.findings == []
    assert r.investigations["dma_efficiency"]["status"] == "ran"


def test_weights_reloaded_per_token_tile(tmp_path):
    # w (64 KiB) is loaded once per token tile (8 tiles) at line 12; x (64 KiB) once at line 11.
    p = ProfileBuilder(dma_bw=100e9)
    p.tensor("x", "IN", 65536)
    p.tensor("w", "IN", 65536)
    p.tensor("out", "OUT", 65536)
    p.dma(0, 700, 65536, src=line(11), variable="x")
    t = 700
    for _ in range(8):
        p.dma(t, t + 700, 65536, src=line(12), variable="w")
        p.matmul(t + 700, t + 800, src=line(13))
        t += 800
    p.dma(t + 100, t + 800, 65536, src=line(14), variable="out", direction="store")
    r = analyze(p.write(tmp_path))
    found = kinds(r, "redundant_load")
    assert len(found) == 1
    f = found[0]
    assert f.source_lines == ["kern.py:12"]
    assert f.evidence["tensor"] == "w" and f.evidence["repeat"] == pytest.approx(8.0)
    assert f.evidence["excess_bytes"] == 7 * 65536
    details = r.investigations["redundant_load"]["details"]
    assert details["excess_ratio"] == pytest.approx(10 * 65536 / (3 * 65536))
    assert {x["tensor"]: x["repeat"] for x in details["tensors"]} == {"w": 8.0, "x": 1.0}


def test_spills_are_traced_to_the_spilled_operation(tmp_path):
    p = ProfileBuilder(dma_bw=100e9)
    p.tensor("x", "IN", 100_000)
    p.dma(0, 1000, 100_000, src=line(10), variable="x")
    p.dma(1000, 2000, 100_000, src=line(20), variable="spill0", direction="spill_save")
    p.dma(2000, 3000, 100_000, src=line(20), variable="spill0", direction="spill_reload")
    r = analyze(p.write(tmp_path))
    found = kinds(r, "spill")
    assert [f.source_lines for f in found] == [["kern.py:20"]]
    assert found[0].evidence["spill_cost_bytes"] == 200_000
    assert r.investigations["spill"]["details"]["save_bytes"] == 100_000


def test_transfers_without_a_flow_edge_count_but_name_no_line(tmp_path):
    # The second load of w, the spill save and its reload have no Flow edge (no issuing instruction): the spill is
    # unlinked, the reload lines list the linked load only, and the TensorE gap before 3000 waited on the unlinked load.
    p = ProfileBuilder(dma_bw=100e9)
    p.tensor("w", "IN", 50_000)
    p.dma(0, 1000, 50_000, src=line(10), variable="w")
    p.matmul(1000, 1100, src=line(20))
    p.dma(1100, 2900, 50_000, src=line(11), variable="w")
    p.matmul(3000, 3100, src=line(20))
    p.dma(3100, 4000, 100_000, src=line(30), variable="spill0", direction="spill_save")
    p.dma(4000, 5000, 100_000, src=line(30), variable="spill0", direction="spill_reload")
    p.flow = p.flow[:1]
    r = analyze(p.write(tmp_path))
    assert r.investigations["redundant_load"]["details"]["lines"] == [
        {"tensor": "w", "source_line": "kern.py:10", "transfers": 1, "bytes": 50_000}
    ]
    spill = r.investigations["spill"]["details"]
    assert spill["lines"] == [] and spill["save_bytes"] == spill["reload_bytes"] == 100_000
    assert [f.source_lines for f in kinds(r, "spill")] == [[]]  # the unlinked spill traffic
    (wait,) = r.investigations["te_idle"]["details"]["waits"]
    assert (wait["waited_on"], wait["what"], wait["source_line"], wait["idle_ns"]) == ("DMA", "w", None, 1900.0)


def test_undersized_matmul_tiles(tmp_path):
    # 3 lines x 10 matmuls of 100 ns: M=32 (25% of the array), N=64 (fine), full tiles.
    p = ProfileBuilder()
    p.dma(0, 100, 4096, variable="x")
    t = 100
    for src, (K, M, N) in ((line(30), (128, 32, 512)), (line(35), (128, 128, 64)), (line(40), (128, 128, 512))):
        for _ in range(10):
            p.matmul(t, t + 100, K=K, M=M, N=N, src=src)
            t += 100
    p.dma(t, t + 100, 4096, variable="out", direction="store")
    r = analyze(p.write(tmp_path))
    found = kinds(r, "te_underutilization")
    assert [f.source_lines for f in found] == [["kern.py:30"]]
    assert (found[0].evidence["K"], found[0].evidence["M"], found[0].evidence["N"]) == (128, 32, 512)
    assert found[0].time_gap_ns == pytest.approx(1000 * 0.75)
    lines = {x["source_line"]: (x["K"], x["M"], x["N"]) for x in r.investigations["te_underutilization"]["details"]["lines"]}
    assert lines == {"kern.py:30": (128, 32, 512), "kern.py:35": (128, 128, 64), "kern.py:40": (128, 128, 512)}


def test_transposes_on_the_tensor_engine(tmp_path):
    p = ProfileBuilder()
    p.dma(0, 100, 4096, variable="x")
    for i in range(10):
        p.matmul(100 + 200 * i, 200 + 200 * i, N=128, src=line(48), transpose=True)
        p.matmul(200 + 200 * i, 300 + 200 * i, src=line(50))
    p.dma(2100, 2200, 4096, variable="out", direction="store")
    r = analyze(p.write(tmp_path))
    found = kinds(r, "redundant_transpose")
    assert [f.source_lines for f in found] == [["kern.py:48"]]
    assert found[0].time_gap_ns == 1000
    assert found[0].evidence["transposes"] == 10
    assert r.bounds["inputs"]["transpose_flops"] == 10 * 2 * 128 * 128 * 128


def test_vector_bound_kernel_names_opcodes_and_lines(tmp_path):
    # Vector: 40 x 50 ns TENSOR_SCALAR at line 60 (2000 ns) + 2 x 25 ns at line 61 (under 5%);
    # Scalar: 500 ns; DMA 200 ns. Headroom over the next engine: 2050 - 500 = 1550 ns.
    p = ProfileBuilder()
    p.dma(0, 100, 4096, variable="x")
    t = 100
    for _ in range(40):
        p.op("vector", "TENSOR_SCALAR", t, t + 50, line(60))
        t += 50
    for _ in range(2):
        p.op("vector", "TENSOR_COPY", t, t + 25, line(61))
        t += 25
    p.op("scalar", "ACTIVATE", 100, 600, line(62))
    p.dma(t, t + 100, 4096, variable="out", direction="store")
    r = analyze(p.write(tmp_path))
    assert r.bottleneck_engine == "Vector"
    found = kinds(r, "engine_bound")
    assert [f.source_lines for f in found] == [["kern.py:60"]]
    f = found[0]
    assert f.evidence["opcode"] == "TENSOR_SCALAR" and f.evidence["instructions"] == 40
    assert f.time_gap_ns == pytest.approx(2050 - 500)
    assert "short" in f.summary  # 50 ns each: fixed overhead dominates
    opcodes = [o["opcode"] for o in r.investigations["engine_bound"]["details"]["opcodes"]]
    assert opcodes == ["TENSOR_SCALAR", "TENSOR_COPY"]


def test_engine_bound_not_applicable_when_dma_bound(tmp_path):
    p = ProfileBuilder()
    p.dma(0, 1000, 4096, variable="x")
    p.op("vector", "TENSOR_SCALAR", 100, 200, line(60))
    r = analyze(p.write(tmp_path))
    assert r.investigations["engine_bound"]["status"] == "not_applicable"


def test_te_idle_names_what_the_tensor_engine_waited_on(tmp_path):
    # TE busy [1000,1100], [2000,2100], [3000,3100], [4500,4600]. Before 2000 and 3000 a load of w
    # (line 12) finishes last; a store (line 40) finishing later is ignored. Before 4500 a Vector
    # copy (line 33) finishes last. The first 1000 ns are the prologue (load of x, line 11).
    p = ProfileBuilder()
    p.dma(0, 1000, 4096, src=line(11), variable="x")
    p.matmul(1000, 1100, src=line(20))
    p.dma(1100, 1990, 4096, src=line(12), variable="w")
    p.dma(1500, 1995, 4096, src=line(40), variable="out", direction="store")
    p.matmul(2000, 2100, src=line(20))
    p.dma(2100, 2990, 4096, src=line(12), variable="w")
    p.matmul(3000, 3100, src=line(20))
    p.op("vector", "TENSOR_COPY", 3100, 4490, line(33))
    p.matmul(4500, 4600, src=line(21))
    p.dma(4600, 4700, 4096, src=line(40), variable="out", direction="store")
    r = analyze(p.write(tmp_path))
    found = kinds(r, "te_idle")
    assert [(f.source_lines, f.time_gap_ns) for f in found] == [(["kern.py:12"], 1800), (["kern.py:33"], 1400)]
    by_line = {f.source_lines[0]: f for f in found}
    assert by_line["kern.py:12"].evidence["waited_on"] == "DMA" and by_line["kern.py:12"].evidence["what"] == "w"
    assert by_line["kern.py:12"].evidence["gaps"] == 2
    assert by_line["kern.py:33"].evidence["waited_on"] == "vector"
    assert by_line["kern.py:33"].evidence["resumed_at"] == "kern.py:21"
    details = r.investigations["te_idle"]["details"]
    assert details["prologue_ns"] == 1000
    assert details["prologue_waited_on"][0]["source_line"] == "kern.py:11"


def _tied_producers() -> ProfileBuilder:
    # TE busy [0,100], [1000,1100], [2000,2100], [3000,3100], [4000,4100]; in each gap several producers end together.
    p = ProfileBuilder()
    p.dma(0, 5000, 4096, src=line(40), variable="out", direction="store")  # spans the window; stores feed no matmul
    p.matmul(0, 100, src=line(20))
    # gap 1: DMAs of w, a and of no tensor and a Vector copy end at 900: by name, the DMA of `a` (NULL names last)
    p.dma(100, 900, 4096, src=line(12), variable="w", queue="qB")
    p.dma(150, 900, 4096, src=line(13), variable="a", queue="qB")
    p.dma(200, 900, 4096, src=line(14), variable=None, queue="qA")
    p.op("vector", "TENSOR_COPY", 300, 900, line(30))
    p.matmul(1000, 1100, src=line(20))
    # gap 2: one DMA of b issued by two instructions (lines 16 and 15): the first line by location
    p.dma(1100, 1900, 4096, src=line(16), variable="b")
    second = p.op("Sync", "PSEUDO_DMA_TRIGGER", 1150, 1151, line(15))
    p.flow.append({"in_table": "Instruction", "out_table": "DmaPacketAggregated", "in_id": second, "out_id": len(p.dpa)})
    p.matmul(2000, 2100, src=line(20))
    # gap 3: Vector, Scalar and GpSimd instructions end at 2900: gpsimd < scalar < vector
    p.op("vector", "TENSOR_COPY", 2100, 2900, line(31))
    p.op("scalar", "ACTIVATE", 2100, 2900, line(32))
    p.op("gpsimd", "IOTA", 2100, 2900, line(33))
    p.matmul(3000, 3100, src=line(21))
    # gap 4: two Vector opcodes of one line end at 3900, and the same opcode at another line: by opcode, then line
    p.op("vector", "TENSOR_TENSOR", 3100, 3900, line(35))
    p.op("vector", "TENSOR_COPY", 3200, 3900, line(36))
    p.op("vector", "TENSOR_COPY", 3300, 3900, line(34))
    p.matmul(4000, 4100, src=line(22))
    return p


def test_te_idle_breaks_ties_between_producers_ending_together_by_name(tmp_path):
    waits = analyze(_tied_producers().write(tmp_path)).investigations["te_idle"]["details"]["waits"]
    got = sorted((w["waited_on"], w["what"], w["source_line"], w["gaps"], w["idle_ns"]) for w in waits)
    assert got == [
        ("DMA", "a", "kern.py:13", 1, 900.0),
        ("DMA", "b", "kern.py:15", 1, 900.0),
        ("gpsimd", "IOTA", "kern.py:33", 1, 900.0),
        ("vector", "TENSOR_COPY", "kern.py:34", 1, 900.0),
    ]


def test_te_idle_without_dma_transfers_names_the_packet_queues_by_name(tmp_path):
    # no DmaPacketAggregated/Flow: DMA producers are packets, named by queue (gap 1: qA before qB)
    r = analyze(_tied_producers().write(tmp_path, drop_tables=("DmaPacketAggregated", "Flow")))
    waits = r.investigations["te_idle"]["details"]["waits"]
    got = sorted((w["waited_on"], w["what"], w["source_line"], w["gaps"]) for w in waits)
    assert got == [
        ("DMA", "qA", None, 1),
        ("DMA", "qSyncIO0", None, 1),
        ("gpsimd", "IOTA", "kern.py:33", 1),
        ("vector", "TENSOR_COPY", "kern.py:34", 1),
    ]


def test_findings_are_ordered_by_severity_then_time_gap_and_have_the_schema(tmp_path):
    p = ProfileBuilder(dma_bw=100e9)
    p.tensor("w", "IN", 65536)
    t = 0
    for _ in range(8):
        p.dma(t, t + 700, 65536, src=line(12), variable="w")
        p.matmul(t + 700, t + 800, K=64, src=line(13))
        t += 800
    r = analyze(p.write(tmp_path))
    order = [("high medium low".split().index(f.severity), -f.time_gap_ns) for f in r.findings]
    assert order == sorted(order) and len(order) >= 2
    for f in r.to_dict()["findings"]:
        assert set(f) >= {"kind", "severity", "time_gap_ns", "summary", "source_lines", "evidence"}
        assert f["severity"] in ("high", "medium", "low")


def test_legacy_operand_syntax_is_m_then_k(tmp_path):
    # legacy profiler text: `<M>*<K> acc_flags=...` (nkidev's writer uses it too)
    p = ProfileBuilder()
    p.dma(0, 100, 4096, variable="x")
    for i in range(10):
        p.matmul(100 + 100 * i, 200 + 100 * i, src=line(30))
        p.instructions[-1]["operands"] = "src=bf16@0x0[1][512] dst=fp32@0x0[1][512] 32*128 acc_flags=2 psum_zero=1"
    p.dma(1100, 1200, 4096, variable="out", direction="store")
    r = analyze(p.write(tmp_path))
    f = r.by_kind("te_underutilization")[0]
    assert (f.evidence["K"], f.evidence["M"], f.evidence["N"]) == (128, 32, 512)


def test_severity_is_lowered_off_the_critical_path(tmp_path):
    # TensorE-bound kernel (1000 ns of matmuls) whose input is loaded 4x (400 ns of DMA):
    # the reload costs 300 ns of DMA time (>= 15% of 1200 ns: high) but DMA is not the bottleneck.
    p = ProfileBuilder(dma_bw=100e9)
    p.tensor("x", "IN", 10_000)
    for i in range(4):
        p.dma(i * 100, i * 100 + 100, 10_000, src=line(10), variable="x")
    p.matmul(100, 1100, src=line(20))
    p.dma(1100, 1200, 100, variable="out", direction="store")
    r = analyze(p.write(tmp_path))
    assert r.bottleneck_engine == "Tensor"
    f = r.by_kind("redundant_load")[0]
    assert f.severity == "medium" and "not the bottleneck" in f.evidence["severity_lowered"]


def test_source_root_resolves_moved_files(tmp_path):
    kernel = tmp_path / "src" / "kern.py"
    kernel.parent.mkdir()
    kernel.write_text("\n".join(f"line {i}" for i in range(1, 30)) + "\n")
    p = ProfileBuilder(dma_bw=100e9)
    p.tensor("w", "IN", 65536)
    for i in range(8):
        p.dma(i * 700, i * 700 + 700, 65536, src=line(12), variable="w")  # /src/kernels/kern.py does not exist
    r = analyze(p.write(tmp_path / "prof"), source_root=kernel.parent)
    src = r.by_kind("redundant_load")[0].source[0]
    assert src["text"] == "line 12" and src["path"] == str(kernel.resolve())
    assert [c["line"] for c in src["context"]] == [10, 11, 12, 13, 14]
    assert analyze(tmp_path / "prof").by_kind("redundant_load")[0].source[0]["text"] is None


def _throttled_profile(throttle_after_gaps: bool = True) -> ProfileBuilder:
    """A trn2 profile in the hardware's layout: matmuls [1000, 2000), [11000, 12000), [21000, 22000) with idle gaps;
    the Throttle rows a capture would hold (type activity_0, limits k/n). The first burst's ramp is the start-up."""
    p = ProfileBuilder()
    p.dma(0, 1000, 4096, src=line(10), variable="x")
    p.matmul(1000, 2000, src=line(20))
    p.matmul(11000, 12000, src=line(21))
    p.matmul(21000, 22000, src=line(22))
    p.dma(22000, 23000, 4096, src=line(40), variable="out", direction="store")
    p.throttle(1000, 4000, 8, 16)  # the start-up ramp: never flagged
    p.throttle(5000, 6000, 16, 16)  # a limit of 1: no throttling
    if throttle_after_gaps:
        p.throttle(11000, 14000, 8, 16)  # half rate over all of the second matmul
        p.throttle(11000, 14000, 8, 16, kind="activity_1")  # the same limit reported twice: counted once
        p.throttle(21500, 22500, 12, 16)  # 3/4 rate over the second half of the third
        p.throttle(11000, 12000, 4, 16, core=1)  # another core, which runs no matmul here: costs nothing
    return p


def test_te_throttle_on_a_captured_throttle_table(tmp_path):
    r = analyze(_throttled_profile().write(tmp_path))
    (f,) = kinds(r, "te_throttle")
    d = r.investigations["te_throttle"]["details"]
    assert d["tensor_busy_ns"] == 3000 and d["throttled_busy_ns"] == 1500
    assert f.time_gap_ns == pytest.approx(1000 * 0.5 + 500 * 0.25)  # (1 - k/n) x throttled busy time
    assert d["startup_throttled_ns"] == 3000 and d["other_cores_throttled_ns"] == 1000  # core 1 ran no matmul
    assert d["engagements"] == 2 and d["throttled_ns"] == 3000 + 1000  # core 0's limits after its start-up
    assert f.evidence["throttled_busy_share"] == pytest.approx(0.5)
    assert f.evidence["mean_limit"] == pytest.approx(1 - 625 / 1500)
    assert f.source_lines == ["kern.py:21", "kern.py:22"]  # in the order the throttling reached them
    assert [(x["matmuls"], x["throttled_ns"]) for x in d["lines"]] == [(1, 1000), (1, 500)]
    assert "engaged again 2 times" in f.summary and "less than half busy" in f.summary and "prefetch" in f.summary


def test_te_throttle_finds_nothing_when_only_the_start_up_ramp_is_throttled(tmp_path):
    r = analyze(_throttled_profile(throttle_after_gaps=False).write(tmp_path))
    assert kinds(r, "te_throttle") == []
    d = r.investigations["te_throttle"]["details"]
    assert r.investigations["te_throttle"]["status"] == "ran" and d["startup_throttled_ns"] == 3000
    assert d["throttled_busy_ns"] == 0 and d["engagements"] == 0


def test_te_throttle_is_skipped_without_a_throttle_table(tmp_path):
    r = analyze(_throttled_profile().write(tmp_path, drop_tables=("Throttle",)))
    outcome = r.investigations["te_throttle"]
    assert outcome["status"] == "skipped" and "Throttle" in outcome["reason"] and kinds(r, "te_throttle") == []


@pytest.mark.parametrize("spread", [1_000, 2**62])  # packed into one int64 key, or too wide for it: a lexsort
def test_te_idle_sorts_pairs_by_key_then_minor(spread):
    from nkidev.analysis.investigations.te_idle import _sorted_pairs

    rng = np.random.default_rng(3)
    key = rng.integers(-spread, spread, 5000)
    minor = rng.integers(0, 50, 5000)
    o = np.lexsort((minor, key))
    got_key, got_minor = _sorted_pairs(key, minor)
    assert got_key.tolist() == key[o].tolist() and got_minor.tolist() == minor[o].tolist()
