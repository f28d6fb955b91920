"""packets.py groups the DMA packets on arrays: the same `pkt` rows and types as prepare.sql's query, and the
query itself for a profile whose packet columns are not plain 64-bit integers."""

import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from nkidev.analysis import tables
from nkidev.analysis.api import analyze
from nkidev.analysis.packets import packet_groups

from .fixtures import make_real_profile as fixture
from .synthetic import write_tables

PKT = "SELECT start_ts, end_ts, kernel, packets, transfer_bytes FROM pkt ORDER BY ALL"
TYPES = "SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = 'pkt' ORDER BY column_index"


def pkt_both_ways(path):
    """pkt as prepare() builds it (arrays when it can), and as prepare.sql's `pkt` query builds it."""
    p = tables.open_profile(path)
    tables.prepare(p)
    fast = p.rows(PKT), p.rows(TYPES)
    p.con.execute(tables.named_queries("prepare.sql")["pkt"])
    return fast, (p.rows(PKT), p.rows(TYPES)), packet_groups(p) is not None


def test_arrays_give_the_query_rows_on_the_real_layout():
    fast, sql, used_arrays = pkt_both_ways(fixture.OUT)
    assert used_arrays
    assert fast == sql
    assert [r["data_type"] for r in fast[1]] == ["BIGINT", "BIGINT", "BOOLEAN", "BIGINT", "HUGEINT"]
    # the fixture's instruction-fetch and 4-byte semaphore packets are kept, as non-kernel rows
    assert {r["kernel"] for r in fast[0]} == {True, False}


def _packets(n_transfers: int, seed: int) -> dict:
    """Packets split over row groups and files, runs broken and repeated: equal keys far apart must still merge."""
    rng = np.random.default_rng(seed)
    k = rng.integers(1, 5, n_transfers)
    start = np.repeat(rng.integers(0, 50, n_transfers) * 10, k)
    end = start + np.repeat(rng.integers(1, 4, n_transfers) * 100, k)
    qt = rng.choice(np.array(["data", "instruction", "data", "spill"], dtype=object), start.size)
    qt[rng.random(start.size) < 0.1] = None
    return {
        "start_ts": start,
        "end_ts": end,
        "transfer_bytes": rng.choice([4, 64, 4096], start.size),
        "queue_type": qt,
        "queue_name": np.full(start.size, "q0"),
    }


def test_arrays_merge_equal_keys_across_runs_files_and_nulls(tmp_path):
    write_tables(tmp_path, {"DmaPacket": _packets(2000, 1)}, split={"DmaPacket": 3})
    for f in tmp_path.glob("DmaPacket_*.parquet"):  # several row groups per file
        pq.write_table(pq.read_table(f), f, row_group_size=500)
    fast, sql, used_arrays = pkt_both_ways(tmp_path)
    assert used_arrays and fast == sql
    assert sum(r["packets"] for r in fast[0]) == sum(pq.read_metadata(f).num_rows for f in tmp_path.glob("*.parquet"))


@pytest.mark.parametrize(
    "change",
    [
        lambda t: t.set_column(t.schema.get_field_index("transfer_bytes"), "transfer_bytes", t.column("transfer_bytes").cast(pa.int32())),
        lambda t: t.set_column(
            t.schema.get_field_index("start_ts"), "start_ts", pa.array([None] + t.column("start_ts").to_pylist()[1:], pa.int64())
        ),
        lambda t: t.set_column(t.schema.get_field_index("queue_type"), "queue_type", pa.array(range(t.num_rows), pa.int64())),
        lambda t: t.drop(["queue_type"]),
    ],
    ids=["int32_bytes", "null_start", "numeric_queue_type", "no_queue_type"],
)
def test_other_column_types_fall_back_to_the_query_or_match_it(tmp_path, change, request):
    write_tables(tmp_path, {"DmaPacket": _packets(300, 2)})
    f = tmp_path / "DmaPacket.parquet"
    pq.write_table(change(pq.read_table(f)), f)
    fast, sql, used_arrays = pkt_both_ways(tmp_path)
    assert fast == sql
    assert used_arrays == request.node.callspec.id.endswith("no_queue_type")  # no queue type: every packet > 4 bytes is kernel


def test_analysis_is_the_same_with_and_without_the_arrays(tmp_path):
    out = tmp_path / "profile"
    shutil.copytree(fixture.OUT, out)
    fast = analyze(out, source_root=fixture.HERE / "kernels").to_dict()
    f = out / "DmaPacket.parquet"
    t = pq.read_table(f)
    i = t.schema.get_field_index("transfer_bytes")
    pq.write_table(t.set_column(i, "transfer_bytes", t.column(i).cast(pa.int32())), f)  # the query path
    p = tables.open_profile(out)
    assert packet_groups(p) is None
    p.con.close()
    slow = analyze(out, source_root=fixture.HERE / "kernels").to_dict()
    assert fast == slow
