"""`nkidev profile`: the tables and columns, their consistency, trace.json, errors and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import numpy as np
import pyarrow.parquet as pq
import pytest

import nkidev.profile
from nkidev.case import Case
from nkidev.errors import KernelRuleError, NkiError, NkiUsageError
from nkidev.hardware import get_target, with_overrides
from nkidev.profile import schema
from nkidev.profile.api import profile, profile_case, profile_task
from nkidev.profile.operands import parse_matmul
from nkidev.taskfile import load_task
from tests.profile import kernels as K

KERNELS_FILE = Path(K.__file__)
CASES = K.cases()
MATMUL_ARGS = CASES[1]  # lhsT [256, 128], rhs [256, 1024]: K = 256 (2 tiles), M = 128, N = 1024 (2 tiles)


def sql(path, query: str):
    con = duckdb.connect()
    for f in Path(path).glob("*.parquet"):
        con.sql(f"CREATE VIEW {f.stem} AS SELECT * FROM read_parquet('{f}')")
    return con.sql(query).fetchall()


@pytest.fixture(scope="module")
def mm(tmp_path_factory):
    return profile(K.matmul, *MATMUL_ARGS, target="trn2", out=tmp_path_factory.mktemp("mm") / "p")


REQUIRED = {
    "Instruction": [
        "id",
        "engine",
        "opcode",
        "start_ts",
        "end_ts",
        "duration_ns",
        "operands",
        "nki_source_location",
        "bir_debug_info_source_location",
        "hbm_read_bytes",
        "hbm_write_bytes",
        "sbuf_read_bytes",
        "sbuf_write_bytes",
        "psum_read_bytes",
        "psum_write_bytes",
        "raw_flops",
        "adjusted_flops",
        "tensor_instruction_type",
        "evt_wait_time_ns",
    ],
    "DmaPacketAggregated": [
        "id",
        "start_ts",
        "end_ts",
        "transfer_bytes",
        "source",
        "dest",
        "variable",
        "write_num_sbuf_partitions",
        "read_num_sbuf_partitions",
        "is_transpose_mode",
    ],
    "DmaPacket": ["start_ts", "end_ts", "duration_ns", "transfer_bytes", "queue_type"],
    "Flow": ["in_table", "out_table", "in_id", "out_id"],
    "ActiveTime": ["engine", "start_ts", "end_ts", "duration_ns"],
    "TensorInfo": ["type", "size", "variable_name"],
    "Summary": [
        "total_time",
        "tensor_engine_active_time",
        "vector_engine_active_time",
        "dma_active_time",
        "dma_transfer_total_bytes",
        "hardware_flops",
        "transpose_flops",
        "hbm_read_bytes",
        "hbm_write_bytes",
        "mfu_estimated_percent",
        "inputs_outputs_weights_size_bytes",
    ],
    "OpcodeSummary": ["engine", "opcode", "instruction_count", "instruction_time_ns"],
    "Metadata": ["dma_ddr_bandwidth", "tensor_engine_num_rows", "tensor_engine_num_cols", "tensor_engine_clock_freq", "is_simulation"],
    "SchemaFields": ["table_name", "field_name", "field_description", "field_unit"],
    "Warning": ["message", "category"],
}


def test_every_table_is_written_with_the_schema(mm):
    d = Path(mm.profile_dir)
    assert sorted(p.name for p in d.iterdir()) == sorted(
        [f"{t}.parquet" for t in schema.TABLES] + ["trace.json", "hardware.json", schema.MARKER_FILE]
    )
    assert json.loads((d / "hardware.json").read_text())["dma"]["engines"] == 16
    for table in schema.TABLES:
        written = pq.read_schema(d / f"{table}.parquet")
        assert written.names == schema.column_names(table)
        assert [f.type for f in written] == [f.type for f in schema.arrow_schema(table)]
    for table, cols in REQUIRED.items():
        assert set(cols) <= set(schema.column_names(table)), table


def test_required_columns_are_filled(mm):
    d = mm.profile_dir
    for table, cols in REQUIRED.items():
        if table in ("SchemaFields", "Warning"):
            continue
        counts = sql(d, f"SELECT {', '.join(f'count({c})' for c in cols)}, count(*) FROM {table}")[0]
        rows = counts[-1]
        assert rows > 0, table
        for col, n in zip(cols, counts):
            if col in ("tensor_instruction_type", "raw_flops", "adjusted_flops"):
                continue  # only Tensor Engine rows carry these
            assert n == rows, (table, col, n, rows)


def test_matmul_rows(mm):
    rows = sql(
        mm.profile_dir,
        "SELECT opcode, operands, raw_flops, adjusted_flops, tensor_instruction_type, bir_id, "
        "nki_source_location FROM Instruction WHERE engine = 'Tensor' ORDER BY id",
    )
    assert [r[0] for r in rows] == ["LDWEIGHTS", "MATMUL"] * 4  # 2 N tiles x 2 K tiles
    matmuls = [r for r in rows if r[0] == "MATMUL"]
    assert all(parse_matmul(r[1]) == (128, 128, 512) for r in matmuls)
    assert ["acc_flags=2" in r[1] for r in matmuls] == [True, False, True, False]  # reset, accumulate, ...
    assert all(r[2] == r[3] == 2 * 128 * 128 * 512 and r[4] == "REGULAR" for r in matmuls)
    assert rows[0][5] == rows[1][5]  # LDWEIGHTS and MATMUL of one nc_matmul share bir_id
    line = next(i for i, t in enumerate(KERNELS_FILE.read_text().splitlines(), 1) if "nisa.nc_matmul" in t)
    assert all(r[6] == f"{KERNELS_FILE}:{line}" for r in rows)


def test_dma_tables_are_consistent(mm):
    d = mm.profile_dir
    dpa = sql(
        d,
        "SELECT id, source, dest, variable, transfer_bytes, write_num_sbuf_partitions, "
        "read_num_sbuf_partitions, is_transpose_mode FROM DmaPacketAggregated ORDER BY id",
    )
    assert len(dpa) == 2 + 4 + 2  # lhsT tiles, rhs tiles, stores
    assert {(r[1], r[2], r[3]) for r in dpa} == {
        ("[[INPUT]]", "[[SB]]", "lhsT"),
        ("[[INPUT]]", "[[SB]]", "rhs"),
        ("[[SB]]", "[OUTPUT]", "out"),
    }
    loads = [r for r in dpa if r[1] == "[[INPUT]]"]
    assert all(r[5] == 128 and r[6] == 0 and r[7] is False for r in loads)
    per_dma = sql(d, "SELECT packet_aggregation_id, sum(transfer_bytes) FROM DmaPacket GROUP BY 1 ORDER BY 1")
    assert [b for _, b in per_dma] == [r[4] for r in dpa]
    flows = sql(
        d,
        "SELECT i.opcode, i.hbm_read_bytes + i.hbm_write_bytes, a.transfer_bytes, f.gap_time, "
        "a.start_ts - i.end_ts FROM Flow f JOIN Instruction i ON f.in_id = i.id "
        "JOIN DmaPacketAggregated a ON f.out_id = a.id",
    )
    assert len(flows) == len(dpa)
    assert all(op == "DMA_TRIGGER" and hbm == nbytes and gap == start_gap for op, hbm, nbytes, gap, start_gap in flows)
    info = sql(d, "SELECT variable_name, type, size, load_to_sbuf_repeat_factor FROM TensorInfo ORDER BY 1")
    assert info == [("lhsT", "IN", 256 * 128 * 2, 1.0), ("out", "OUT", 128 * 1024 * 4, None), ("rhs", "IN", 256 * 1024 * 2, 1.0)]


def test_summary_matches_the_tables(mm):
    d = mm.profile_dir
    ((total, te, ve, dma, mfu, hw_flops, nbytes, io_bytes),) = sql(
        d,
        "SELECT total_time, tensor_engine_active_time, vector_engine_active_time, dma_active_time, "
        "mfu_estimated_percent, hardware_flops, dma_transfer_total_bytes, inputs_outputs_weights_size_bytes "
        "FROM Summary",
    )
    ((end,),) = sql(d, "SELECT max(e) FROM (SELECT max(end_ts) e FROM Instruction UNION ALL SELECT max(end_ts) FROM DmaPacket)")
    assert total == pytest.approx(end / 1e9) and total * 1e9 == pytest.approx(mm.total_time_ns, abs=1)
    active = dict(sql(d, "SELECT engine, sum(duration_ns) FROM ActiveTime GROUP BY 1"))
    assert te == pytest.approx(active["tensor"] / 1e9) and ve == pytest.approx(active["vector"] / 1e9)
    assert hw_flops == 4 * 2 * 128 * 128 * 512
    ((rate, rows, cols, clock, sim),) = sql(
        d, "SELECT dma_ddr_bandwidth, tensor_engine_num_rows, tensor_engine_num_cols, tensor_engine_clock_freq, is_simulation FROM Metadata"
    )
    assert (rows, cols, clock, sim) == (128, 128, 2.4, True) and rate == pytest.approx(16 * 27.2e9)
    assert mfu == pytest.approx(100 * hw_flops / (128 * 128 * 2 * 2.4e9 * total))
    assert nbytes == io_bytes == (256 * 128 + 256 * 1024) * 2 + 128 * 1024 * 4
    assert 0 < dma <= total
    units = dict(sql(d, "SELECT field_name, field_unit FROM SchemaFields WHERE table_name = 'Summary'"))
    assert units["total_time"] == "seconds"
    assert sql(d, "SELECT count(DISTINCT table_name) FROM SchemaFields")[0][0] == len(schema.TABLES)
    assert sql(d, "SELECT category FROM Warning")[0][0] == "Simulation"


def test_trace_json_opens_as_a_chrome_trace(mm):
    doc = json.loads((Path(mm.profile_dir) / "trace.json").read_text())
    events = doc["traceEvents"]
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {"Tensor", "Tensor LDWEIGHTS", "Vector", "qSyncIO0", "qSyncIO1"} <= names
    assert any(e["name"] == "DMA engine 00" or e["args"].get("name") == "DMA engine 00" for e in events)
    assert [e["args"]["name"] for e in events if e["name"] == "process_name"] == ["NeuronCore 0"]
    slices = [e for e in events if e["ph"] == "X"]
    matmul = next(e for e in slices if e["name"] == "MATMUL")
    assert matmul["args"]["source"].startswith(str(KERNELS_FILE)) and matmul["dur"] > 0
    by_track: dict = {}
    for e in slices:  # a track's slices never overlap (Perfetto needs proper nesting)
        by_track.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in by_track.values():
        spans.sort()
        assert all(a[1] <= b[0] + 1e-6 for a, b in zip(spans, spans[1:]))


def test_transpose_rows_and_flops(tmp_path):
    x = np.arange(128 * 128, dtype=np.float32).reshape(128, 128)
    r = profile(K.pe_transpose, x, target="trn2", out=tmp_path / "p")
    rows = sql(
        r.profile_dir,
        "SELECT opcode, tensor_instruction_type, adjusted_flops, flops_transpose FROM Instruction WHERE engine = 'Tensor' ORDER BY id",
    )
    assert [(o, t) for o, t, *_ in rows] == [("LDWEIGHTS", "TRANSPOSE"), ("MATMUL", "TRANSPOSE")]
    flops = 2 * 128 * 128 * 128
    assert rows[1][2] == 4 * flops and rows[1][3] == flops  # fp32 data: adjusted x4
    ((hw, tr, model),) = sql(r.profile_dir, "SELECT hardware_flops, transpose_flops, model_flops FROM Summary")
    assert hw == tr == flops and model == 0


def test_fp32_matmul_flops_are_adjusted_x4(tmp_path):
    lhsT, rhs = (np.asarray(a, np.float32) for a in MATMUL_ARGS)
    # the x4 fp32 cycles alone: without the dI/dt throttle, whose ramp (the same ~3 us for both) dilutes the ratio
    trn2 = with_overrides(get_target("trn2"), {"tensor_engine": {"throttle_start_utilization": 1.0}}, "no dI/dt throttle")
    fp32 = profile(K.matmul, lhsT, rhs, target=trn2, out=tmp_path / "f32")
    bf16 = profile(K.matmul, *MATMUL_ARGS, target=trn2, out=tmp_path / "b16")
    ((raw, adj),) = sql(fp32.profile_dir, "SELECT sum(raw_flops), sum(adjusted_flops) FROM Instruction WHERE opcode = 'MATMUL'")
    assert adj == 4 * raw
    busy = {r.kernel: r.engines["tensor"]["busy_ns"] for r in (fp32, bf16)}
    assert fp32.engines["tensor"]["busy_ns"] > 3 * bf16.engines["tensor"]["busy_ns"] and busy


def test_no_compute_gives_the_same_timeline(tmp_path):
    a = profile(K.scale_rows, *CASES[0], target="trn1", out=tmp_path / "a")
    b = profile(K.scale_rows, *CASES[0], target="trn1", out=tmp_path / "b", compute=False)
    assert a.total_time_ns == b.total_time_ns
    assert sql(b.profile_dir, "SELECT count(*) FROM Warning WHERE message LIKE '%no-compute%'")[0][0] == 1


def test_less_data_and_wider_matmuls_are_faster(tmp_path):
    lhsT = np.zeros((512, 128), K.BF16)
    rhs = np.zeros((512, 2048), K.BF16)
    t = {
        k.__name__: profile(k, lhsT, rhs, target="trn2", out=tmp_path / k.__name__, compute=False).total_time_ns
        for k in (K.matmul, K.matmul_reload, K.matmul_narrow)
    }
    assert t["matmul"] < t["matmul_reload"]
    assert t["matmul"] < t["matmul_narrow"]


def test_targets_differ(tmp_path):
    t = {name: profile(K.matmul, *MATMUL_ARGS, target=name, out=tmp_path / name, compute=False) for name in ("trn1", "trn2", "trn3")}
    assert len({r.total_time_ns for r in t.values()}) == 3
    assert {r.target for r in t.values()} == {"trn1", "trn2", "trn3"}


def test_two_cores_are_two_processes(tmp_path):
    r = profile(K.two_cores[2], *CASES[0], target="trn2", out=tmp_path / "p")
    assert sql(r.profile_dir, "SELECT DISTINCT pcore_idx FROM Instruction ORDER BY 1") == [(0,), (1,)]
    events = json.loads((Path(r.profile_dir) / "trace.json").read_text())["traceEvents"]
    assert sorted(e["args"]["name"] for e in events if e["name"] == "process_name") == ["NeuronCore 0", "NeuronCore 1"]
    starts = sql(r.profile_dir, "SELECT pcore_idx, min(start_ts) FROM Instruction GROUP BY 1 ORDER BY 1")
    assert starts[0][1] == starts[1][1] == 0  # the cores run side by side


def test_lnc2_sendrecv_and_barrier_start_together(tmp_path):
    x = np.ones((256, 512), np.float32)
    r = profile(K.exchange[2], x, target="trn2", out=tmp_path / "p")
    starts = sql(
        r.profile_dir,
        "SELECT compiler_opcode, list(DISTINCT start_ts) FROM Instruction WHERE compiler_opcode IN ('sendrecv', 'core_barrier') GROUP BY 1",
    )
    assert len(starts) == 2 and all(len(s) == 1 for _, s in starts)
    ((last_scale,),) = sql(r.profile_dir, "SELECT max(end_ts) FROM Instruction WHERE opcode = 'SCALAR'")
    assert dict(starts)["sendrecv"][0] > last_scale  # core 0 waited for core 1's longer work


def test_profile_task_and_callable_package(tmp_path):
    r = profile_task(f"{KERNELS_FILE}::scale_rows", case=0, target="trn1", out=tmp_path / "p")
    assert r.to_dict()["profile_dir"] == str(tmp_path / "p") and r.to_dict()["engines"]["vector"]["instructions"] == 2
    r2 = nkidev.profile(K.scale_rows, *CASES[0], target="trn1", out=tmp_path / "q")
    assert r2.total_time_ns == r.total_time_ns
    assert set(r.to_dict()) >= {"profile_dir", "total_time_ns", "engines"}


KEYWORDS = Path(__file__).parents[1] / "validate" / "tasks" / "keywords.py"  # x, then eps=, scale=, weight= (an array)


def test_profile_task_runs_the_case_with_its_keywords(tmp_path):
    """Case 1 is Case(x[200, 96], eps=0.5, scale=2.0, weight=w): the weight adds its DMA and one multiply per tile
    (two tiles of 128 rows) to the bare call's instructions, and the profile is exactly that call's."""
    task = load_task(KEYWORDS)
    kernel, case = task.kernel("scaled_rmsnorm"), task.calls()[1]
    r = profile_task(f"{KEYWORDS}::scaled_rmsnorm", case=1, out=tmp_path / "task")
    direct = profile(kernel, *case.args, **case.kwargs, out=tmp_path / "direct")
    bare = profile(kernel, *case.args, out=tmp_path / "bare")
    assert (r.instructions, r.total_time_ns) == (direct.instructions, direct.total_time_ns)
    assert r.instructions == bare.instructions + 3 and r.engines["vector"]["instructions"] == bare.engines["vector"]["instructions"] + 2
    assert r.dma_transfers == bare.dma_transfers + 1


def test_profile_case_keeps_kernel_keywords_apart_from_its_options(tmp_path):
    """scale_by(x, trace=2.0, out=None): `trace` and `out` are the kernel's here, not profile()'s trace mode and
    directory (the profile still goes to profile_case's own `out`, with the default trace.json)."""
    x = np.ones((128, 64), np.float32)
    plain = profile_case(K.scale_by, Case(x), out=tmp_path / "plain")
    scaled = profile_case(K.scale_by, Case(x, trace=2.0, out=None), out=tmp_path / "scaled")
    assert scaled.instructions == plain.instructions + 1 and (tmp_path / "scaled" / "trace.json").is_file()


def test_cli_profile_case_uses_its_keywords(tmp_path):
    from typer.testing import CliRunner

    from nkidev.cli import app

    args = ["profile", f"{KEYWORDS}::scaled_rmsnorm", "--json", "--no-compute"]
    plain = json.loads(CliRunner().invoke(app, [*args, "--case", "0", "--out", str(tmp_path / "p0")]).output)
    keyed = CliRunner().invoke(app, [*args, "--case", "1", "--out", str(tmp_path / "p1")])
    assert keyed.exit_code == 0, keyed.output
    case = load_task(KEYWORDS).calls()[1]
    want = profile(load_task(KEYWORDS).kernel("scaled_rmsnorm"), *case.args, **case.kwargs, out=tmp_path / "want", compute=False)
    assert json.loads(keyed.output)["instructions"] == want.instructions == 15 and plain["instructions"] == 6


# --- bad input: named errors, nothing half-written ---------------------------------------------------------


def _leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir())


def test_unknown_target(tmp_path):
    with pytest.raises(NkiUsageError) as e:
        profile(K.scale_rows, *CASES[0], target="trn9", out=tmp_path / "p")
    assert e.value.name == "err_unknown_target" and _leftovers(tmp_path) == []


def test_existing_output_needs_force(tmp_path):
    out = tmp_path / "p"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(NkiUsageError) as e:
        profile(K.scale_rows, *CASES[0], out=out)
    assert e.value.name == "err_output_exists" and (out / "keep.txt").read_text() == "mine"
    with pytest.raises(NkiUsageError) as e:  # --force replaces only a profile nkidev wrote, never the user's directory
        profile(K.scale_rows, *CASES[0], out=out, force=True)
    assert e.value.name == "err_output_exists" and "not an nkidev profile" in e.value.message
    assert (out / "keep.txt").read_text() == "mine"
    (out / "keep.txt").unlink()
    profile(K.scale_rows, *CASES[0], out=out)
    first = (out / "Instruction.parquet").stat().st_ino
    profile(K.scale_rows, *CASES[0], out=out, force=True)
    assert (out / "Instruction.parquet").exists() and (out / "Instruction.parquet").stat().st_ino != first
    assert _leftovers(tmp_path) == ["p"]


def test_failing_kernels_leave_nothing_behind(tmp_path):
    with pytest.raises(KernelRuleError) as e:
        profile(K.too_many_partitions, np.zeros((256, 64), np.float32), out=tmp_path / "a")
    assert e.value.name == "err_num_partition_exceed_arch_limit"
    with pytest.raises(NkiError) as e:
        profile(K.python_bug, np.zeros((4, 4), np.float32), out=tmp_path / "b")
    assert e.value.name == "err_kernel_raised" and "KeyError" in e.value.message
    assert e.value.location.startswith(f"{KERNELS_FILE}:")
    assert _leftovers(tmp_path) == []


def test_bad_case_index(tmp_path):
    with pytest.raises(NkiUsageError) as e:
        profile_task(f"{KERNELS_FILE}::scale_rows", case=7, out=tmp_path / "p")
    assert e.value.name == "err_invalid_argument" and "2 case" in e.value.message


def test_cli(tmp_path):
    from typer.testing import CliRunner

    from nkidev.cli import app

    runner = CliRunner()
    spec = f"{KERNELS_FILE}::scale_rows"
    ok = runner.invoke(app, ["profile", spec, "--out", str(tmp_path / "p"), "--target", "trn1", "--no-compute", "--json"])
    assert ok.exit_code == 0, ok.output
    data = json.loads(ok.output)
    assert data["profile_dir"] == str(tmp_path / "p") and data["total_time_ns"] > 0
    assert {"vector", "dma"} <= set(data["engines"]) and data["compute"] is False
    again = runner.invoke(app, ["profile", spec, "--out", str(tmp_path / "p"), "--json"])
    assert again.exit_code == 2 and json.loads(again.output)["error"]["name"] == "err_output_exists"
    bad = runner.invoke(app, ["profile", f"{KERNELS_FILE}::too_many_partitions", "--out", str(tmp_path / "q")])
    assert bad.exit_code == 3 and "err_num_partition_exceed_arch_limit" in bad.output
    text = runner.invoke(app, ["profile", spec, "--out", str(tmp_path / "p"), "--force"])
    assert text.exit_code == 0 and "trace.json" in text.output
    assert _leftovers(tmp_path) == ["p"]


def test_packet_index_counts_within_each_transfer(mm):
    rows = sql(
        mm.profile_dir,
        "SELECT packet_aggregation_id, list(packet_idx ORDER BY id), list(engine_idx ORDER BY id) FROM DmaPacket GROUP BY 1 ORDER BY 1",
    )
    for _, idx, engines in rows:
        assert idx == list(range(len(idx))) and engines == sorted(engines)
