"""The Throttle and ThrottleSummary tables: the cost model's TensorE dI/dt limit (costmodel/throttle.py) as
neuron-explorer's rows ([sources: explorer-schema] "Throttle", "ThrottleSummary"), read back through DuckDB."""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pyarrow.parquet as pq
import pytest

from nkidev.analysis.api import query
from nkidev.profile import schema
from nkidev.profile.api import profile
from tests.profile import kernels as K

BF16 = ml_dtypes.bfloat16
INPUTS = (np.zeros((128, 128), BF16), np.zeros((128, 4096), BF16))  # 8 matmuls of [128 x 128] x [128 x 512]
RAMP = [36, 44, 52, 60]  # a whole ramp from 50%: 4 steps of 750 ns at the limit of their midpoints, in 64ths


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    root = tmp_path_factory.mktemp("throttle")
    runs = {
        "starved": (K.matmul_starved, "trn2"),
        "resident": (K.matmul_resident, "trn2"),
        "two_cores": (K.matmul_starved[2], "trn2"),
        "trn1": (K.matmul_starved, "trn1"),
        "no_matmul": (K.scale_rows, "trn2"),
    }
    out = {}
    for name, (kernel, target) in runs.items():
        args = K.cases()[0] if name == "no_matmul" else INPUTS
        out[name] = profile(kernel, *args, target=target, out=root / name, compute=False)
    return out


def rows(r, table: str) -> list[dict]:
    return pq.read_table(Path(r.profile_dir) / f"{table}.parquet").to_pylist()


def test_a_tensor_engine_waiting_on_dma_gets_a_ramp_per_matmul(made):
    r = made["starved"]
    th = r.timeline.throttled
    # the cost model re-engaged the limit at every MATMUL: its work began 2383 ns after the previous one's
    assert len(th) == 8 and np.diff(th.start).round().tolist() == [2383.0] * 7
    got = rows(r, "Throttle")
    assert {(x["n"], x["type"], x["pcore_idx"]) for x in got} == {(64, "didt", 0)}
    # each ramp is cut where the next starts (3 whole steps and 133 ns at the limit of its midpoint, 0.886); the last
    # ramps to full before the kernel ends
    assert [x["k"] for x in got] == [36, 44, 52, 57] * 7 + RAMP
    assert [x["duration"] for x in got][-4:] == [750] * 4
    starts = np.rint(th.start).astype(int).tolist()
    assert [x["timestamp"] for x in got][::4] == starts  # every ramp starts where the model's does
    for ramp, (s, e) in enumerate(zip(starts, starts[1:])):
        assert [x["duration"] for x in got[4 * ramp : 4 * ramp + 3]] == [750] * 3
        assert sum(x["duration"] for x in got[4 * ramp : 4 * ramp + 4]) == e - s  # the last step ends at the next ramp
    assert all(a["timestamp"] + a["duration"] == b["timestamp"] for a, b in zip(got, got[1:]))  # one step line


def test_back_to_back_matmuls_ramp_once(made):
    r = made["resident"]
    (start,) = r.timeline.throttled.start
    got = rows(r, "Throttle")
    assert [x["k"] for x in got] == RAMP and [x["duration"] for x in got] == [750] * 4
    assert got[0]["timestamp"] == round(start) and len(got) < len(rows(made["starved"], "Throttle"))


def test_the_summary_totals_are_the_sums_over_throttle(made):
    for name in ("starved", "resident", "two_cores"):
        d = made[name].profile_dir
        per_core = query(
            d,
            "SELECT pcore_idx AS core, sum(duration) AS ns, sum(k / n * duration) / sum(duration) AS mean, "
            "(SELECT total_time FROM Summary) * 1e9 AS total FROM Throttle GROUP BY pcore_idx ORDER BY 1",
        )
        summary = query(d, "SELECT * FROM ThrottleSummary ORDER BY nc_idx, throttle_type")
        assert [(s["nc_idx"], s["throttle_type"]) for s in summary] == [(c["core"], t) for c in per_core for t in ("all", "didt")]
        for s in summary:
            (c,) = [c for c in per_core if c["core"] == s["nc_idx"]]
            assert s["throttle_active_time_ns"] == c["ns"]
            assert s["throttle_active_time_percent"] == pytest.approx(100 * c["ns"] / c["total"])
            assert s["max_achievable_util_with_throttling_percent"] == pytest.approx(c["mean"])
    cores = query(made["two_cores"].profile_dir, "SELECT DISTINCT pcore_idx FROM Throttle ORDER BY 1")
    assert [c["pcore_idx"] for c in cores] == [0, 1]
    (resident,) = [s for s in query(made["resident"].profile_dir, "SELECT * FROM ThrottleSummary") if s["throttle_type"] == "all"]
    assert resident["throttle_active_time_ns"] == 3000 and resident["max_achievable_util_with_throttling_percent"] == 0.75


def test_the_summary_row_count_counts_the_throttle_rows(made):
    """Summary.total_row_count is 'rows written over all timeline tables': Throttle is one (ThrottleSummary, like
    OpcodeSummary, summarizes a timeline table and is not)."""
    timeline = ("Instruction", "DmaPacket", "DmaPacketAggregated", "Flow", "ActiveTime", "Throttle")
    for name in ("starved", "trn1"):
        d = Path(made[name].profile_dir)
        written = {t: pq.read_table(d / f"{t}.parquet").num_rows for t in timeline}
        (summary,) = query(d, "SELECT total_row_count FROM Summary")
        assert summary["total_row_count"] == sum(written.values())
    assert written["Throttle"] == 0  # trn1: never throttled
    starved = Path(made["starved"].profile_dir)
    assert pq.read_table(starved / "Throttle.parquet").num_rows == 32  # 8 ramps of 4 steps, counted above


@pytest.mark.parametrize("name", ["trn1", "no_matmul"])
def test_no_throttle_means_empty_tables_with_the_schema(made, name):
    d = Path(made[name].profile_dir)
    for table in ("Throttle", "ThrottleSummary"):
        read = pq.read_table(d / f"{table}.parquet")
        assert read.num_rows == 0 and read.schema.equals(schema.arrow_schema(table))
        described = query(d, f'DESCRIBE SELECT * FROM "{table}"')
        assert [c["column_name"] for c in described] == schema.column_names(table)
        assert query(d, f'SELECT count(*) AS n FROM "{table}"') == [{"n": 0}]
    assert not any(e["ph"] == "C" for e in json.loads((d / schema.TRACE_FILE).read_text())["traceEvents"])


def test_the_tables_round_trip_with_their_schema(made):
    d = Path(made["starved"].profile_dir)
    for table in ("Throttle", "ThrottleSummary"):
        assert pq.read_table(d / f"{table}.parquet").schema.equals(schema.arrow_schema(table))
        fields = query(d, f"SELECT field_name, field_format FROM SchemaFields WHERE table_name = '{table}'")
        assert [(f["field_name"], f["field_format"]) for f in fields] == [(c.name, str(c.type)) for c in schema.TABLES[table]]
    typed = query(d, "SELECT typeof(k) AS k, typeof(timestamp) AS ts, typeof(type) AS t FROM Throttle LIMIT 1")
    assert typed == [{"k": "INTEGER", "ts": "BIGINT", "t": "VARCHAR"}]


def test_the_trace_draws_the_limit_as_a_counter(made):
    r = made["starved"]
    events = json.loads((Path(r.profile_dir) / schema.TRACE_FILE).read_text())["traceEvents"]
    counter = [e for e in events if e["ph"] == "C"]
    got = rows(r, "Throttle")
    assert {e["name"] for e in counter} == {"TensorE throttle"} and {e["pid"] for e in counter} == {0}
    # one step per row, then back to 100% after the last (the ramps follow each other without a gap)
    assert [e["args"]["limit_percent"] for e in counter] == [100 * x["k"] / 64 for x in got] + [100.0]
    assert [e["ts"] for e in counter] == [x["timestamp"] / 1000 for x in got] + [(got[-1]["timestamp"] + got[-1]["duration"]) / 1000]
