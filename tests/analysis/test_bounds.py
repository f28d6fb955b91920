import numpy as np
import pytest

from nkidev.analysis.api import analyze
from tests.analysis import synthetic
from tests.analysis.synthetic import ProfileBuilder, merge_intervals

from .helpers import bounds_profile


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    return analyze(bounds_profile().write(tmp_path_factory.mktemp("bounds")))


def test_window_and_total_time(result):
    inputs = result.bounds["inputs"]
    assert (inputs["t0_ns"], inputs["t1_ns"]) == (0, 4000)
    assert result.total_time_ns == 4000
    assert inputs["dma_transfer_bytes"] == 120_000  # the 4-byte semaphore write is not kernel traffic
    assert inputs["necessary_bytes"] == 70_000


def test_memory_family(result):
    b = result.bounds
    assert b["memory_bound_ns"] == 2500
    assert b["memory_bound_ideal_ns"] == pytest.approx(1200)
    assert b["memory_bound_ideal_no_reloads_ns"] == pytest.approx(700)


def test_compute_family(result):
    b = result.bounds
    assert b["compute_bound_ns"] == 1000
    assert b["compute_bound_ideal_flops_ns"] == pytest.approx((16_777_216 + 4_194_304) / 81.92e12 * 1e9)
    assert b["compute_bound_ideal_useful_flops_ns"] == pytest.approx(204.8)


def test_pipeline_and_bottleneck(result):
    assert result.bottleneck_engine == "DMA"
    assert result.bounds["perfect_pipeline_ns"] == 2500
    active = {name: e["active_ns"] for name, e in result.engines.items()}
    assert active == {"Tensor": 1000, "Vector": 500, "Scalar": 300, "GpSimd": 0, "DMA": 2500}


def test_gaps(result):
    g = result.bounds["gaps"]
    assert g["dma_idle_ns"] == 1500
    assert g["dma_inefficiency_ns"] == pytest.approx(1300)
    assert g["excess_traffic_ns"] == pytest.approx(500)
    assert g["te_idle_ns"] == 3000
    assert g["te_underutilization_ns"] == pytest.approx(1000 - 256)
    assert g["transpose_ns"] == pytest.approx(51.2)
    assert g["pipeline_ns"] == 1500


def test_bn_speedup(result):
    s = result.bounds["bn_speedup"]
    # memory bounds keep the slowest other engine (Tensor, 1000 ns); compute bounds keep DMA (2500 ns)
    assert s["memory_bound_ideal_ns"] == pytest.approx(4000 / 1200)
    assert s["memory_bound_ideal_no_reloads_ns"] == pytest.approx(4000 / 1000)
    assert s["compute_bound_ideal_flops_ns"] == pytest.approx(4000 / 2500)
    assert s["perfect_pipeline_ns"] == pytest.approx(1.6)


def test_interval_merge_matches_a_sweep(tmp_path):
    rng = np.random.default_rng(7)
    starts = rng.integers(0, 100_000, 3000)
    ends = starts + rng.integers(1, 400, 3000)
    p = ProfileBuilder()
    p.dma(0, 1, 8, variable="x")  # window start
    p.dma(200_000, 200_001, 8, variable="x")  # window end
    for s, e in zip(starts.tolist(), ends.tolist()):
        p.op("vector", "TENSOR_TENSOR", s, e)
    expected = sum(e - s for s, e in merge_intervals(list(zip(starts.tolist(), ends.tolist()))))
    result = analyze(p.write(tmp_path))
    assert result.engines["Vector"]["active_ns"] == expected
    assert result.bottleneck_engine == "Vector"


def test_timeline_spreads_the_merged_busy_time_over_its_bins(tmp_path):
    rng = np.random.default_rng(11)
    starts = rng.integers(0, 100_000, 500)
    ends = starts + rng.integers(1, 900, 500)  # many cross a bin edge (bins of 84 ns)
    p = ProfileBuilder()
    p.dma(0, 1, 8, variable="x")  # window start
    p.dma(200_000, 200_001, 8, variable="x")  # window end
    for s, e in zip(starts.tolist(), ends.tolist()):
        p.op("vector", "TENSOR_TENSOR", s, e)
    result = analyze(p.write(tmp_path))
    bins = result.timeline["bins"]
    width = -(-200_001 // bins)
    merged = merge_intervals(list(zip(starts.tolist(), ends.tolist())))
    expected = [0.0] * bins
    for s, e in merged:
        for b in range(s // width, (e - 1) // width + 1):
            expected[b] += min(e, (b + 1) * width) - max(s, b * width)
    expected = [min(1.0, ns / width) for ns in expected]
    assert list(result.timeline["lanes"]) == ["dma", "vector"]  # engines in name order, only busy ones
    assert result.timeline["lanes"]["vector"] == expected
    assert result.timeline["lanes"]["dma"][0] == pytest.approx(1 / width)


def test_split_tables_are_read_as_one(tmp_path):
    tables = bounds_profile().tables()
    synthetic.write_tables(tmp_path, tables, split={"Instruction": 3, "DmaPacket": 2})
    assert (tmp_path / "Instruction_2.parquet").exists() and not (tmp_path / "Instruction.parquet").exists()
    result = analyze(tmp_path)
    assert result.bounds["memory_bound_ns"] == 2500 and result.bounds["compute_bound_ns"] == 1000


def test_neuron_explorer_layout_is_found(tmp_path):
    inner = tmp_path / "profiles" / "global" / "mykernel@latest"
    bounds_profile().write(inner)
    assert analyze(tmp_path).profile_dir == str(inner)


def test_profiles_are_looked_for_a_few_levels_down_only(tmp_path):
    from nkidev.errors import NkiError

    bounds_profile().write(tmp_path / "a" / "b" / "c" / "d" / "p")  # 5 levels down: found
    assert analyze(tmp_path).profile_dir == str(tmp_path / "a" / "b" / "c" / "d" / "p")
    bounds_profile().write(tmp_path / "x" / "p")
    with pytest.raises(NkiError) as several:
        analyze(tmp_path)
    assert several.value.name == "err_bad_profile" and "several profiles (a/b/c/d/p, x/p)" in str(several.value)
    deep = tmp_path / "deep"
    bounds_profile().write(deep / "1" / "2" / "3" / "4" / "5" / "p")  # 6 levels: not walked to the bottom
    with pytest.raises(NkiError) as none:
        analyze(deep)
    assert none.value.name == "err_bad_profile" and "up to 5 levels below" in str(none.value)


def test_dma_packets_count_one_by_one_although_the_analysis_aggregates_them(tmp_path):
    """The analysis aggregates DmaPacket rows once per (start, end, kernel); counts, times and bytes stay per packet.

    A transfer of 4 packets on [0, 1000] (1000 B each), then captured-style packets sharing the start 2000 with
    different ends: 100 B to 2100, two identical 100 B to 2300, 50 B on a spill queue to 2200, and a 4-byte
    semaphore write to 2500 (busy time, not kernel traffic). Window [0, 2300] (the last kernel packet).
    Kernel packets: 4 + 4 = 8; their time 4x1000 + 100 + 2x300 + 200 = 4900 ns; bytes 4000 + 350.
    DMA busy: [0, 1000] + [2000, 2300] (the semaphore clipped to the window) = 1300 ns.
    """
    p = ProfileBuilder(dma_bw=100e9)
    p.tensor("x", "IN", 4000)
    p.dma(0, 1000, 4000, src="/k.py:10", variable="x", packets=4)
    for end, nbytes, queue in (
        (2100, 100, "qSyncIO0"),
        (2300, 100, "qSyncIO0"),
        (2300, 100, "qSyncIO0"),
        (2200, 50, "qSpill0"),
        (2500, 4, "qSyncIO0"),
    ):
        p.packets.append(
            {
                "start_ts": 2000,
                "end_ts": end,
                "duration_ns": end - 2000,
                "transfer_bytes": nbytes,
                "queue_type": "data",
                "queue_name": queue,
            }
        )
    r = analyze(p.write(tmp_path / "packets"))
    inputs = r.bounds["inputs"]
    assert (inputs["t0_ns"], inputs["t1_ns"]) == (0, 2300)
    assert inputs["kernel_dma_packets"] == 8
    assert inputs["dma_transfer_bytes"] == 4350
    dma = r.engines["DMA"]
    assert (dma["instruction_count"], dma["instruction_time_ns"], dma["transfer_bytes"]) == (8, 4900, 4350)
    assert dma["active_ns"] == r.bounds["memory_bound_ns"] == 1300
    assert r.investigations["spill"]["details"]["spill_queue_bytes"] == 50
