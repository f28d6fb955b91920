"""trace.json from columns (nkidev/profile/perfetto.py) is the same bytes as the per-event builder it replaced
(tests/profile/perfetto_reference.py): on profiled kernels and on hand-made tables full of edge cases."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from nkidev.errors import NkiUsageError
from nkidev.profile import perfetto, schema
from nkidev.profile.api import profile
from nkidev.profile.tables import to_table
from tests.profile import kernels as K
from tests.profile import perfetto_reference as reference

CASES = K.cases()
TRACE_TABLES = ("Instruction", "DmaPacketAggregated", "Flow", "DmaPacket", "Throttle")


def _both(tmp_path: Path, tables: dict, title: str = "title \u00e9") -> tuple[bytes, bytes, bool]:
    new, old = tmp_path / "new.json", tmp_path / "old.json"
    with_packets = perfetto.write_trace(new, tables, title)
    assert reference.write_trace(old, tables, title) == with_packets
    return new.read_bytes(), old.read_bytes(), with_packets


def _read_back(profile_dir: Path) -> dict:
    return {name: pq.read_table(Path(profile_dir) / f"{name}.parquet") for name in TRACE_TABLES}


@pytest.mark.parametrize(
    "kernel, args, target",
    [
        (K.matmul, CASES[1], "trn2"),
        (K.two_cores[2], CASES[0], "trn2"),
        (K.matmul_reload, CASES[1], "trn1"),
        (K.scale_rows, CASES[0], "trn1"),
    ],
    ids=["matmul", "two_cores", "matmul_reload", "scale_rows"],
)
def test_profile_trace_is_the_reference_bytes(tmp_path, kernel, args, target):
    r = profile(kernel, *args, target=target, out=tmp_path / "p", compute=False)
    written = (Path(r.profile_dir) / schema.TRACE_FILE).read_bytes()  # from the LazyTables, as profiles write it
    title = json.loads((Path(r.profile_dir) / schema.MARKER_FILE).read_text())["title"]
    new, old, with_packets = _both(tmp_path, _read_back(r.profile_dir), title)  # from pa.Tables
    assert written == new == old
    events = json.loads(written)["traceEvents"]
    assert with_packets and any(e["cat"] == "DMA packet" for e in events if e["ph"] == "X")
    transfers = pq.read_metadata(Path(r.profile_dir) / "DmaPacketAggregated.parquet").num_rows
    assert sum(e["ph"] == "X" and e["cat"] == "DMA" for e in events) == transfers


def _edge_case_tables(seed: int = 7) -> dict:
    rng = np.random.default_rng(seed)
    n_ins, n_dma, n_pk = 300, 240, 500
    words = ["a", 'quote " inside', "back\\slash", "caf\u00e9", "tab\there", "new\nline", "\x7f", "", None, "k.py:12"]
    pick = lambda n: [words[k] for k in rng.integers(0, len(words), n)]  # noqa: E731
    engines = rng.choice(["Tensor", "Vector", "Scalar", "GpSimd", "Sync"], n_ins).tolist()
    opcodes = [
        "DMA_TRIGGER" if e in ("Sync", "GpSimd") and rng.random() < 0.7 else ("LDWEIGHTS" if e == "Tensor" and rng.random() < 0.5 else "OP")
        for e in engines
    ]
    start = rng.integers(0, 5_000_000, n_ins)
    start[:3] = [0, 10**15 + 1234, 2**60]  # past 1e15 ns the floats are printed by repr, not from the integer
    instruction = to_table(
        "Instruction",
        {
            "id": np.arange(n_ins),
            "engine": engines,
            "opcode": opcodes,
            "start_ts": start,
            "duration_ns": np.r_[-1500, -1, rng.integers(0, 100_000, n_ins - 2)],
            "pcore_idx": [None if k % 37 == 0 else int(k % 3 == 0) for k in range(n_ins)],
            "compiler_opcode": pick(n_ins),
            "nki_source_location": pick(n_ins),
            "operands": pick(n_ins),
            "evt_wait_time_ns": [None if k % 5 == 0 else int(x) for k, x in enumerate(rng.integers(0, 999, n_ins))],
            "bir_id": [str(k) if k % 11 else None for k in range(n_ins)],
        },
    )
    # one queue whose transfers all overlap (more than MAX_LANES lanes wanted), some that overlap now and then,
    # one that never overlaps; equal starts keep their table order
    queue = rng.choice(["qBusy", "qSome", "qCalm"], n_dma).tolist()
    t_start = rng.integers(0, 200_000, n_dma)
    t_start[:40:2] = t_start[1:40:2]
    length = np.where(np.array(queue) == "qBusy", 1_000_000, rng.integers(1, 3_000, n_dma))
    calm = np.flatnonzero(np.array(queue) == "qCalm")
    t_start[calm] = np.arange(len(calm)) * 10_000_000
    length[calm] = 1_000
    transfers = to_table(
        "DmaPacketAggregated",
        {
            "id": np.arange(n_dma),
            "start_ts": t_start,
            "end_ts": t_start + length,
            "pcore_idx": [None if k % 29 == 0 else int(k % 4 == 0) for k in range(n_dma)],
            "queue_name": queue,
            "variable": pick(n_dma),
            "op": rng.choice(["read", "write"], n_dma).tolist(),
            "transfer_bytes": rng.integers(1, 1 << 20, n_dma),
            "source": pick(n_dma),
            "dest": pick(n_dma),
            "trigger": [None if k % 7 == 0 else int(x) for k, x in enumerate(rng.integers(0, 10**6, n_dma))],
        },
    )
    flow_out = rng.choice(n_dma, n_dma // 2, replace=False)
    flow = to_table("Flow", {"in_id": rng.integers(0, n_ins, len(flow_out)), "out_id": flow_out})
    packets = to_table(
        "DmaPacket",
        {
            "start_ts": rng.integers(0, 10**7, n_pk),
            "duration_ns": rng.integers(0, 5_000, n_pk),
            "pcore_idx": [None if k % 31 == 0 else int(k % 2) for k in range(n_pk)],
            "engine_idx": rng.integers(0, 16, n_pk),
            "variable": pick(n_pk),
            "transfer_bytes": rng.integers(0, 1 << 16, n_pk),
            "packet_aggregation_id": rng.integers(0, n_dma, n_pk),
        },
    )
    return {"Instruction": instruction, "DmaPacketAggregated": transfers, "Flow": flow, "DmaPacket": packets}


@pytest.mark.parametrize("chunk", [perfetto.CHUNK, 7])
def test_edge_cases_are_the_reference_bytes(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(perfetto, "CHUNK", chunk)  # small chunks: new tracks start inside and across chunks
    tables = _edge_case_tables()
    new, old, with_packets = _both(tmp_path, tables)
    assert new == old and with_packets
    doc = json.loads(new)
    lanes = {e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "thread_name"}
    assert "qBusy #15" in lanes and "qBusy #16" not in lanes and "qCalm #1" not in lanes
    assert doc["otherData"] == {"title": "title \u00e9"}


def test_without_packets_and_empty_tables(tmp_path, monkeypatch):
    tables = _edge_case_tables(seed=3)
    monkeypatch.setattr(perfetto, "MAX_PACKET_EVENTS", 100)
    monkeypatch.setattr(reference, "MAX_PACKET_EVENTS", 100)
    new, old, with_packets = _both(tmp_path, tables)
    assert new == old and not with_packets
    assert not any(e.get("cat") == "DMA packet" for e in json.loads(new)["traceEvents"])
    empty = {name: to_table(name, {}) for name in TRACE_TABLES}
    new, old, _ = _both(tmp_path, empty)
    assert new == old
    assert [e["args"]["name"] for e in json.loads(new)["traceEvents"] if e["name"] == "thread_name"] == list(perfetto._ENGINE_TRACKS)


def test_microseconds_are_python_float_repr():
    ns = np.array([0, 1, 7, 10, 999, 1000, 1001, 123456789, 10**15 - 1, 2**53 - 1, -1, -999, -1500, -(10**15) + 1], dtype=np.int64)
    rng = np.random.default_rng(0)
    ns = np.r_[ns, rng.integers(-(10**15) + 1, 10**15, 20_000)]
    assert perfetto._us(ns).to_pylist() == [repr(v / 1000.0) for v in ns.tolist()]
    big = np.array([10**15, 2**62, -(2**61)], dtype=np.int64)  # past the exact range: repr itself
    assert perfetto._us(big).to_pylist() == [repr(v / 1000.0) for v in big.tolist()]


def test_trace_modes(tmp_path, monkeypatch):
    monkeypatch.setattr(perfetto, "MAX_PACKET_EVENTS", 10)  # the kernel has more packets than this
    runs = {
        mode: profile(K.matmul, *CASES[1], target="trn2", out=tmp_path / mode, compute=False, trace=mode) for mode in perfetto.TRACE_MODES
    }
    warnings = {}
    for mode, r in runs.items():
        rows = pq.read_table(Path(r.profile_dir) / "Warning.parquet").to_pydict()
        warnings[mode] = [m for c, m in zip(rows["category"], rows["message"]) if c == "Trace"]

    def packet_events(mode):
        events = json.loads((Path(runs[mode].profile_dir) / schema.TRACE_FILE).read_text())["traceEvents"]
        return sum(e.get("cat") == "DMA packet" for e in events)

    packets = pq.read_metadata(Path(runs["auto"].profile_dir) / "DmaPacket.parquet").num_rows
    assert packets > 10
    assert packet_events("auto") == 0 and "leaves out the per-engine DMA packet tracks" in warnings["auto"][0]
    assert packet_events("full") == packets and warnings["full"] == []
    assert not (Path(runs["none"].profile_dir) / schema.TRACE_FILE).exists() and "--trace none" in warnings["none"][0]
    assert len({r.total_time_ns for r in runs.values()}) == 1
    with pytest.raises(NkiUsageError) as e:
        profile(K.matmul, *CASES[1], target="trn2", out=tmp_path / "bad", compute=False, trace="some")
    assert e.value.name == "err_invalid_argument" and "--trace" in str(e.value)
    assert not (tmp_path / "bad").exists()
