import numpy as np
import pytest

from nkidev.analysis import issuers
from nkidev.analysis.tables import open_profile, prepare
from tests.analysis.synthetic import ProfileBuilder


def _inst(ids, src=None, hbm=None) -> dict:
    ids = np.asarray(ids, dtype=np.int64)
    return {
        "id": ids,
        "src": np.asarray(src if src is not None else np.arange(len(ids)), dtype=np.int64),
        "hbm": np.asarray(hbm if hbm is not None else np.zeros(len(ids), dtype=bool)),
    }


def _edges(pairs):
    a, b = zip(*pairs) if pairs else ((), ())
    return issuers.distinct_edges(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64))


def test_distinct_edges_are_sorted_and_unique():
    a, b = _edges([(5, 1), (2, 9), (5, 1), (2, 3)])
    assert a.tolist() == [2, 2, 5] and b.tolist() == [3, 9, 1]


def test_each_transfer_gets_its_issuers_line_and_hbm_flag():
    inst = _inst([7, 3, 5, -1], src=[10, 11, -1, 13], hbm=[True, False, True, True])
    got = issuers.single_issuers(*_edges([(3, 100), (5, 101), (7, 102), (8, 103)]), inst)  # 8: no such instruction
    assert got["out_id"].tolist() == [100, 101, 102]
    assert got["code"].tolist() == [11, -1, 10]
    assert got["hbm_instruction"].tolist() == [False, True, True]


@pytest.mark.parametrize(
    ("ids", "pairs", "why"),
    [
        ([1, 2, 2], [(2, 10)], "an id names two instructions"),
        ([1, 2], [(1, 10), (2, 10)], "a transfer with two issuers"),
        ([1, 2], [(-3, 10)], "a negative id"),
        ([1, 10**9], [(1, 10)], "ids too sparse for a lookup table"),
    ],
)
def test_cases_a_lookup_cannot_answer_are_left_to_the_join(ids, pairs, why):
    assert issuers.single_issuers(*_edges(pairs), _inst(ids)) is None, why


def _profile() -> ProfileBuilder:
    p = ProfileBuilder()
    p.dma(0, 900, 4096, src="kern.py:12", variable="a")
    p.dma(100, 800, 2048, src=None, variable="b", direction="store")  # an issuer without a line
    p.dma(200, 700, 1024, src="kern.py:13", variable="a", direction="spill_reload")
    p.dma(300, 600, 512, src="kern.py:14", variable=None, dpa=False)  # packets only
    p.dpa.append({**p.dpa[0], "id": len(p.dpa) + 1})  # a transfer no Flow edge names
    p.matmul(900, 1000, src="kern.py:20")
    return p


def _issued(path) -> list[tuple]:
    profile = open_profile(path)
    try:
        prepare(profile)
        return profile.con.execute("SELECT * FROM issued ORDER BY ALL").fetchall()
    finally:
        profile.con.close()


def test_the_issued_view_holds_the_rows_of_the_join(tmp_path, monkeypatch):
    path = _profile().write(tmp_path)
    viewed = _issued(path)
    monkeypatch.setattr(issuers, "single_issuers", lambda *a: None)  # force prepare.sql's issued_join
    joined = _issued(path)
    assert viewed == joined
    assert [(r[0], r[1], r[2]) for r in viewed] == [(1, True, "kern.py:12"), (2, True, None), (3, True, "kern.py:13"), (4, False, None)]


@pytest.mark.parametrize(("out_table", "linked"), [("DMA_Block", True), ("dmaXblock", False), ("dmapacketaggregated", True)])
def test_flow_table_names_match_case_insensitively_and_literally(tmp_path, out_table, linked):
    p = ProfileBuilder()
    p.dma(0, 900, 4096, src="kern.py:12", variable="a")
    p.flow[0]["out_table"] = out_table
    p.flow[0]["in_table"] = "INSTRUCTION"
    assert [r[1] for r in _issued(p.write(tmp_path))] == [linked]


def _flow_both_ways(path):
    """(in_id, out_id) pairs from issuers.flow_edges and from prepare.sql's `flow` query, both sorted."""
    from nkidev.analysis.tables import named_queries

    profile = open_profile(path)
    try:
        prepare(profile)
        got = issuers.flow_edges(profile)
        rows = profile.rows(named_queries("prepare.sql")["flow"])
    finally:
        profile.con.close()
    fast = None if got is None else sorted(zip(got[0].tolist(), got[1].tolist()))
    return fast, sorted((r["in_id"], r["out_id"]) for r in rows)


def test_flow_edges_read_with_pyarrow_are_the_query_rows(tmp_path):
    from tests.analysis.synthetic import write_tables

    in_table = ["Instruction", "INSTRUCTION", "instructionX", None, "Instruction", "instruction", "Instruction", "Instruction"]
    out_table = ["DmaPacketAggregated", "dma_block", "dma_block", "dma_block", "dmaXblock", "DMA_BLOCK", None, "dmapacketaggregated"]
    flow = {"in_table": in_table, "out_table": out_table, "in_id": list(range(1, 9)), "out_id": list(range(11, 19))}
    write_tables(tmp_path, {"Flow": flow, "Instruction": {"id": [1], "start_ts": [0], "end_ts": [1]}}, split={"Flow": 3})
    fast, sql = _flow_both_ways(tmp_path)
    assert sql == [(1, 11), (2, 12), (6, 16), (8, 18)]
    assert fast == sql


def test_flow_edges_with_other_id_types_are_left_to_the_query(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.analysis.synthetic import write_tables

    write_tables(tmp_path, {"Instruction": {"id": [1], "start_ts": [0], "end_ts": [1]}})
    flow = {"in_table": ["Instruction"], "out_table": ["DmaPacketAggregated"], "in_id": [1.0], "out_id": [11.0]}
    pq.write_table(pa.table(flow), tmp_path / "Flow.parquet")  # DOUBLE ids: the query casts them
    fast, sql = _flow_both_ways(tmp_path)
    assert fast is None
    assert sql == [(1, 11)]
