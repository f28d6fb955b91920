"""The per-event trace.json builder nkidev used before the columnar one (nkidev/profile/perfetto.py): kept
only as the reference that tests/profile/test_perfetto.py compares the columnar writer's bytes with. One
Python f-string per event, in the layout json.dumps(event, separators=(",", ":")) gives the event dict.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa

MAX_PACKET_EVENTS = 200_000  # above this the per-engine packet tracks are left out (the Parquet keeps them)
MAX_LANES = 16
_ENGINE_TRACKS = ("Tensor", "Tensor LDWEIGHTS", "Vector", "Scalar", "GpSimd", "Sync")


class _Tracks:
    """(core, track name) -> tid, with metadata events naming and ordering them (in the output's event list,
    where the first slice of the track is)."""

    def __init__(self, out):
        self.out = out
        self.tids: dict[tuple[int, str], int] = {}
        self.cores: set[int] = set()

    def tid(self, core: int, name: str) -> int:
        key = (core, name)
        if key not in self.tids:
            if core not in self.cores:
                self.cores.add(core)
                self.out.add({"name": "process_name", "ph": "M", "pid": core, "args": {"name": f"NeuronCore {core}"}})
                self.out.add({"name": "process_sort_index", "ph": "M", "pid": core, "args": {"sort_index": core}})
            tid = len(self.tids) + 1
            self.tids[key] = tid
            self.out.add({"name": "thread_name", "ph": "M", "pid": core, "tid": tid, "args": {"name": name}})
            self.out.add({"name": "thread_sort_index", "ph": "M", "pid": core, "tid": tid, "args": {"sort_index": tid}})
        return self.tids[key]


CHUNK = 65_536  # events built and encoded at a time


def _chunks(table, names: list[str], rows=None):
    """Dicts of column lists for consecutive pieces of `table` (a pa.Table or LazyTable), optionally in the
    order of `rows`."""
    n = table.num_rows if rows is None else len(rows)
    for lo in range(0, n, CHUNK):
        if rows is None:
            idx = np.arange(lo, min(n, lo + CHUNK), dtype=np.int64)
        else:
            idx = rows[lo : lo + CHUNK]
        part = table.take(pa.array(idx)).select(names) if isinstance(table, pa.Table) else table.take(idx, names)
        yield {name: part.column(name).to_pylist() for name in names}


class _Json:
    """JSON text of values, cached: a profile repeats a few thousand distinct strings millions of times."""

    def __init__(self):
        self.cache: dict = {}

    def __call__(self, value) -> str:
        text = self.cache.get(value)
        if text is None:
            text = self.cache[value] = json.dumps(value)
        return text


# Each event is one f-string with the layout json.dumps(..., separators=(",", ":")) gives the equivalent dict
# (floats and ints as repr, strings through json.dumps), so trace.json is the same text it always was, written
# several times faster than building dicts to encode.


def _instruction_events(ins, tracks: _Tracks, out: _Output) -> None:
    names = ["id", "engine", "opcode", "start_ts", "duration_ns", "pcore_idx", "compiler_opcode", "nki_source_location", "operands"]
    names += ["evt_wait_time_ns", "bir_id"]
    js = _Json()
    for c in _chunks(ins, names):
        events = out.events
        ids, engines, opcodes, starts, durs = c["id"], c["engine"], c["opcode"], c["start_ts"], c["duration_ns"]
        cores, nki, src, ops = c["pcore_idx"], c["compiler_opcode"], c["nki_source_location"], c["operands"]
        wait, bir = c["evt_wait_time_ns"], c["bir_id"]
        for k in range(len(ids)):
            engine, opcode = engines[k], opcodes[k]
            if opcode == "DMA_TRIGGER" and engine != "GpSimd":
                continue  # static/hardware DGE triggers are drawn as their DMA queue's transfers
            track = "Tensor LDWEIGHTS" if opcode == "LDWEIGHTS" else engine
            core = cores[k] or 0
            tid = tracks.tid(core, track)
            w = wait[k]
            events.append(
                f'{{"name":{js(opcode)},"cat":{js(engine)},"ph":"X","ts":{starts[k] / 1000.0!r},"dur":{durs[k] / 1000.0!r},'
                f'"pid":{core},"tid":{tid},"args":{{"id":{ids[k]},"nki":{js(nki[k])},"source":{js(src[k])},'
                f'"operands":{js(ops[k])},"wait_ns":{"null" if w is None else w},"bir_id":{js(bir[k])}}}}}'
            )
        out.flush()


def _transfer_events(dpa, tracks: _Tracks, out: _Output, sources: np.ndarray, locations: list) -> None:
    names = ["id", "start_ts", "end_ts", "pcore_idx", "queue_name", "variable", "op", "transfer_bytes", "source", "dest"]
    names += ["trigger"]
    starts = _column(dpa, "start_ts")
    order = np.argsort(starts, kind="stable")  # sorted(range(n), key=start): stable too
    lanes: dict[tuple[int, str], list[int]] = {}
    where_text = [json.dumps(x) for x in locations] + ["null"]  # sources code -1 -> null
    texts: dict[tuple, str] = {}  # (op, variable) and (source, dest) -> their JSON
    done = 0
    for c in _chunks(dpa, names, order):
        events = out.events
        ids, st, en, cores, queues = c["id"], c["start_ts"], c["end_ts"], c["pcore_idx"], c["queue_name"]
        ops, variables, src_mem, dst_mem = c["op"], c["variable"], c["source"], c["dest"]
        nbytes, trigger = c["transfer_bytes"], c["trigger"]
        where = sources[order[done : done + len(ids)]].tolist()
        for k in range(len(ids)):
            core = cores[k] or 0
            start, end = st[k], en[k]
            ends = lanes.setdefault((core, queues[k]), [])
            if ends and ends[0] <= start:
                lane = 0
            else:
                lane = next((j for j, e in enumerate(ends) if e <= start), None)
                if lane is None:
                    lane = len(ends) if len(ends) < MAX_LANES else min(range(len(ends)), key=ends.__getitem__)
                    if lane == len(ends):
                        ends.append(0)
            ends[lane] = end
            tid = tracks.tid(core, queues[k] if lane == 0 else f"{queues[k]} #{lane}")
            key = (ops[k], variables[k])
            label = texts.get(key) or texts.setdefault(key, json.dumps(f"{key[0]} {key[1]}"))
            key = (src_mem[k], dst_mem[k], None)
            path = texts.get(key) or texts.setdefault(key, json.dumps(f"{key[0]} -> {key[1]}"))
            t = trigger[k] or 0
            events.append(
                f'{{"name":{label},"cat":"DMA","ph":"X","ts":{start / 1000.0!r},"dur":{(end - start) / 1000.0!r},"pid":{core},'
                f'"tid":{tid},"args":{{"dma_id":{ids[k]},"bytes":{nbytes[k]},"path":{path},'
                f'"source":{where_text[where[k]]},"triggered_at_us":{t / 1000.0!r}}}}}'
            )
        done += len(ids)
        out.flush()


def _packet_events(pk, tracks: _Tracks, out: _Output) -> None:
    names = ["start_ts", "duration_ns", "pcore_idx", "engine_idx", "variable", "transfer_bytes", "packet_aggregation_id"]
    js = _Json()
    for c in _chunks(pk, names):
        events = out.events
        for k in range(len(c["start_ts"])):
            core = c["pcore_idx"][k] or 0
            tid = tracks.tid(core, f"DMA engine {c['engine_idx'][k]:02d}")
            events.append(
                f'{{"name":{js(c["variable"][k] or "packet")},"cat":"DMA packet","ph":"X","ts":{c["start_ts"][k] / 1000.0!r},'
                f'"dur":{c["duration_ns"][k] / 1000.0!r},"pid":{core},"tid":{tid},'
                f'"args":{{"bytes":{c["transfer_bytes"][k]},"dma_id":{c["packet_aggregation_id"][k]}}}}}'
            )
        out.flush()


def _throttle_events(throttle, tracks: _Tracks, out: _Output) -> None:
    """The TensorE utilization limit as a counter: a row's limit at its start, 100 at its end unless the core's
    next row starts there (the rows nkidev writes never overlap)."""
    rows = sorted(throttle.to_pylist(), key=lambda r: (r["pcore_idx"] or 0, r["timestamp"]))
    for r in rows:
        tracks.tid(r["pcore_idx"] or 0, "Tensor")
    for k, r in enumerate(rows):
        core, end = r["pcore_idx"] or 0, r["timestamp"] + r["duration"]
        out.events.append(
            f'{{"name":"TensorE throttle","ph":"C","ts":{r["timestamp"] / 1000.0!r},"pid":{core},'
            f'"args":{{"limit_percent":{100.0 * r["k"] / r["n"]!r}}}}}'
        )
        after = rows[k + 1] if k + 1 < len(rows) else None
        if after is None or (after["pcore_idx"] or 0) != core or after["timestamp"] != end:
            out.events.append(f'{{"name":"TensorE throttle","ph":"C","ts":{end / 1000.0!r},"pid":{core},"args":{{"limit_percent":100.0}}}}')
    out.flush()


def _column(table, name: str) -> np.ndarray:
    col = table.column(name)
    return col.to_numpy(zero_copy_only=False) if len(col) else np.zeros(0, np.int64)


class _Output:
    """trace.json written as it is built: `{"traceEvents":[...],...}`, a chunk of events (JSON texts) at a time."""

    def __init__(self, f):
        self.f = f
        self.events: list[str] = []
        self.first = True
        f.write('{"traceEvents":[')

    def add(self, event: dict) -> None:
        self.events.append(json.dumps(event, separators=(",", ":")))

    def flush(self) -> None:
        if self.events:
            text = ",".join(self.events)
            self.f.write(text if self.first else "," + text)
            self.first = False
            self.events = []

    def close(self, title: str) -> None:
        self.flush()
        self.f.write('],"displayTimeUnit":"ns","otherData":' + json.dumps({"title": title}, separators=(",", ":")) + "}")


def write_trace(path: Path, tables: dict, title: str) -> bool:
    """Write trace.json; returns False when the packet tracks were left out (too many packets)."""
    ins = tables["Instruction"]
    with open(path, "w") as f:
        out = _Output(f)
        tracks = _Tracks(out)
        cores = np.unique(np.nan_to_num(_column(ins, "pcore_idx").astype(np.float64))).astype(np.int64).tolist() if ins.num_rows else []
        for core in sorted(cores) or [0]:
            for name in _ENGINE_TRACKS:
                tracks.tid(core or 0, name)
        _instruction_events(ins, tracks, out)
        dpa, flow = tables["DmaPacketAggregated"], tables["Flow"]
        # the source line of each transfer: the location of the instruction row that triggered it
        trigger = np.full(dpa.num_rows, -1, dtype=np.int64)
        if flow.num_rows:
            trigger[_column(flow, "out_id")] = _column(flow, "in_id")
        loc = _locations(ins, trigger)
        _transfer_events(dpa, tracks, out, *loc)
        with_packets = tables["DmaPacket"].num_rows <= MAX_PACKET_EVENTS
        if with_packets:
            _packet_events(tables["DmaPacket"], tracks, out)
        if tables.get("Throttle") is not None:
            _throttle_events(tables["Throttle"], tracks, out)
        out.close(title)
    return with_packets


def _locations(ins, rows: np.ndarray) -> tuple[np.ndarray, list]:
    """(code per row, distinct locations) of Instruction.nki_source_location at `rows` (-1: none)."""
    ok = rows >= 0
    if not ok.any():
        return np.full(len(rows), -1, dtype=np.int64), []
    picked = ins.take(pa.array(rows[ok])).column("nki_source_location") if isinstance(ins, pa.Table) else None
    if picked is None:
        picked = ins.take(rows[ok], ["nki_source_location"]).column(0)
    enc = picked.combine_chunks().dictionary_encode() if isinstance(picked, pa.ChunkedArray) else picked.dictionary_encode()
    values = enc.dictionary.to_pylist() + [None]
    codes = np.full(len(rows), -1, dtype=np.int64)
    codes[ok] = enc.indices.fill_null(len(values) - 1).to_numpy(zero_copy_only=False)
    return codes, values
