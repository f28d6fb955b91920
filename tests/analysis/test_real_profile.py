"""The hand-built neuron-explorer profile (fixtures/real_profile) and partial copies of it."""

import shutil

import pyarrow.parquet as pq
import pytest

from nkidev.analysis.api import analyze
from nkidev.errors import NkiUsageError

from .fixtures import make_real_profile as fixture

REAL = fixture.OUT
KERNELS = fixture.HERE / "kernels"


@pytest.fixture(scope="module")
def result():
    return analyze(REAL, source_root=KERNELS)


def lines_of(result, kind):
    return [f.source_lines for f in result.by_kind(kind)]


def copy(tmp_path, drop=(), keep_only=None):
    out = tmp_path / "profile"
    shutil.copytree(REAL, out)
    for f in out.glob("*.parquet"):
        table = f.stem.split("_")[0]
        if table in drop or (keep_only and table not in keep_only):
            f.unlink()
    return out


def test_fixture_files_match_their_generator(tmp_path):
    fresh = fixture.write(tmp_path / "fresh")
    for f in sorted(REAL.glob("*.parquet")):
        old, new = pq.read_table(f), pq.read_table(fresh / f.name)
        assert old.schema.equals(new.schema) and repr(old.to_pylist()) == repr(new.to_pylist()), f.name


def test_window_ignores_instruction_fetch_and_semaphore_packets(result):
    inputs = result.bounds["inputs"]
    assert inputs["t0_ns"] == fixture.BASE
    assert result.total_time_ns == 12_700  # first kernel DMA start to the last store's end
    # rhs 256 KiB + 4 x lhsT 64 KiB + transpose 16 KiB + 2 stores (64 + 192 KiB) + spill 2 x 64 KiB
    assert inputs["dma_transfer_bytes"] == (256 + 4 * 64 + 16 + 64 + 192 + 128) * 1024
    assert inputs["necessary_bytes"] == (64 + 256 + 256) * 1024


def test_bounds_on_the_real_layout(result):
    b = result.bounds
    assert result.bottleneck_engine == "Tensor"
    assert b["compute_bound_ns"] == 4 * (20 + 6 * 250)  # semaphore + 6 x (LDWEIGHTS + MATMUL) per block
    hw_flops = 4 * (4 * 2 * 128 * 128 * 512 + 2 * 2 * 128 * 64 * 512)
    assert b["inputs"]["hw_flops"] == hw_flops  # LDWEIGHTS rows carry no FLOPs
    assert b["compute_bound_ideal_flops_ns"] == pytest.approx(hw_flops / (128 * 128 * 2 * 2.4e9) * 1e9)
    # the ideal memory time is the larger of DMA bytes at the DMA rate (Metadata, 435 GB/s) and HBM bytes at
    # trn2's HBM rate per NeuronCore (~363 GB/s); every transfer but the SBUF->SBUF transpose touches HBM
    dma_bytes = b["inputs"]["dma_transfer_bytes"]
    hbm_bytes = dma_bytes - 16 * 1024
    assert b["inputs"]["hbm_bytes"] == hbm_bytes
    assert b["memory_bound_ideal_ns"] == pytest.approx(max(dma_bytes / 435, hbm_bytes / 363))
    assert b["inputs"]["memory_ceiling"]["binding"] == "HBM"


def test_reloaded_input_is_found_at_its_line(result):
    assert lines_of(result, "redundant_load") == [["mm_real.py:21"]]
    f = result.by_kind("redundant_load")[0]
    assert f.evidence["tensor"] == "lhsT" and f.evidence["repeat"] == 4.0
    assert "dma_copy(dst=lhs_sb, src=lhsT)" in f.source[0]["text"]


def test_spill_is_traced_to_the_spilled_operation(result):
    assert lines_of(result, "spill") == [["mm_real.py:33"]]
    assert result.by_kind("spill")[0].evidence["spill_cost_bytes"] == 2 * 64 * 1024
    assert "activation" in result.by_kind("spill")[0].source[0]["text"]


def test_undersized_matmuls_but_not_full_ones(result):
    assert lines_of(result, "te_underutilization") == [["mm_real.py:28"]]
    f = result.by_kind("te_underutilization")[0]
    assert (f.evidence["K"], f.evidence["M"], f.evidence["N"]) == (128, 64, 512)


def test_dma_efficiency_lines_and_coverage(result):
    details = result.investigations["dma_efficiency"]["details"]
    by_line = {x["source_line"]: x for x in details["lines"]}
    assert by_line["mm_real.py:21"]["bytes_per_partition"] == 512
    assert "mm_real.py:30" not in by_line  # the DMA transpose is excluded
    assert details["dpa_coverage"] == 1.0  # DPA rows exist even for the unlinked store
    assert ["mm_real.py:21"] in lines_of(result, "dma_efficiency")


def test_te_idle_blames_the_reload(result):
    assert lines_of(result, "te_idle")[0] == ["mm_real.py:21"]
    assert result.by_kind("te_idle")[0].evidence["what"] == "lhsT"


def test_without_dge_notifications(tmp_path):
    r = analyze(copy(tmp_path, drop=("DmaPacketAggregated", "Flow")))
    for name in ("dma_efficiency", "redundant_load", "spill"):
        inv = r.investigations[name]
        assert inv["status"] == "skipped"
        assert "DmaPacketAggregated" in inv["reason"] and "NEURON_RT_ENABLE_DGE_NOTIFICATIONS=1" in inv["reason"]
    assert r.bounds["memory_bound_ns"] > 0 and r.investigations["te_idle"]["status"] == "ran"


def test_without_metadata(tmp_path):
    r = analyze(copy(tmp_path, drop=("Metadata",)))
    assert r.bounds["memory_bound_ideal_ns"] is None and r.bounds["compute_bound_ideal_flops_ns"] is None
    assert any(w.startswith("ideal memory bounds unavailable: profile lacks Metadata") for w in r.warnings)
    assert "Metadata" in r.investigations["dma_efficiency"]["reason"]


def test_without_active_time_uses_instructions(tmp_path):
    r = analyze(copy(tmp_path, drop=("ActiveTime",)))
    assert r.bounds["inputs"]["busy_source"] == "Instruction"
    assert r.bounds["compute_bound_ns"] == 4 * (20 + 6 * 250)
    assert any("ActiveTime" in w for w in r.warnings)


def test_missing_columns_are_named(tmp_path):
    out = copy(tmp_path)
    for f in out.glob("Instruction_*.parquet"):
        t = pq.read_table(f)
        pq.write_table(t.drop(["operands", "bir_debug_info_source_location"]), f)
    r = analyze(out)
    assert r.investigations["te_underutilization"]["status"] == "skipped"
    assert "Instruction.operands" in r.investigations["te_underutilization"]["reason"]
    assert any("no source locations" in w for w in r.warnings)
    assert all(f.source_lines == [] for f in r.findings)


def test_only_instructions(tmp_path):
    r = analyze(copy(tmp_path, keep_only=("Instruction",)))
    assert r.bounds["inputs"]["window_source"] == "instructions"
    assert r.bounds["memory_bound_ideal_ns"] is None
    assert r.investigations["redundant_load"]["status"] == "skipped"


def test_flow_with_schema_reference_spelling(tmp_path):
    out = copy(tmp_path)
    flow = pq.read_table(out / "Flow.parquet").to_pydict()
    flow["in_table"] = ["instruction"] * len(flow["in_table"])
    flow["out_table"] = ["dma_block"] * len(flow["out_table"])
    import pyarrow as pa

    pq.write_table(pa.table(flow), out / "Flow.parquet")
    r = analyze(out)
    assert lines_of(r, "redundant_load") == [["mm_real.py:21"]]


def test_not_a_profile(tmp_path):
    with pytest.raises(NkiUsageError) as e:
        analyze(tmp_path)
    assert e.value.name == "err_bad_profile"
    (tmp_path / "Summary.parquet").write_bytes(b"not parquet")
    with pytest.raises(NkiUsageError) as e:
        analyze(tmp_path)
    assert e.value.name == "err_bad_profile"


def test_without_dma_packets_the_memory_bounds_are_unknown_not_negative(tmp_path):
    r = analyze(copy(tmp_path, drop=("DmaPacket",)), source_root=KERNELS)
    b = r.bounds
    assert b["memory_bound_ns"] is None and b["memory_bound_ideal_ns"] is None
    assert b["gaps"]["dma_inefficiency_ns"] is None and b["gaps"]["dma_idle_ns"] is None
    assert b["bn_speedup"]["memory_bound_ns"] is None
    assert b["compute_bound_ns"] == 4 * (20 + 6 * 250)  # the compute side does not need DMA packets
    assert "memory bounds unavailable: profile lacks DmaPacket" in r.warnings
    inv = r.investigations["dma_efficiency"]
    assert inv["status"] == "skipped" and "DmaPacket" in inv["reason"]
    assert r.bottleneck_engine == "Tensor"


def test_cli_analyze_without_dma_packets_exits_cleanly(tmp_path):
    from typer.testing import CliRunner

    from nkidev.cli import app

    res = CliRunner().invoke(app, ["analyze", str(copy(tmp_path, drop=("DmaPacket",))), "--json"])
    assert res.exit_code == 0, res.output
    assert '"memory_bound_ns": null' in res.output and "err_internal" not in res.output
