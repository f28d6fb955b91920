"""`trace.json`: the profile as a Chrome trace that Perfetto (ui.perfetto.dev) and chrome://tracing open.

One process per NeuronCore; tracks: Tensor (MATMUL), Tensor LDWEIGHTS (LoadStationary runs in the
background of the previous MATMUL, so it gets its own track), Vector, Scalar, GpSimd, Sync, one track
per DMA queue (more lanes when transfers overlap) and one per DMA engine (its packets). Slices carry
the opcode as name and the kernel source line, nki.isa call and operands in args. The Throttle table becomes a
counter of the NeuronCore, "TensorE throttle limit_percent": the Tensor Engine's utilization limit as a step line
(100 = not throttled), like neuron-explorer's Throttling track; a counter, not slices on the Tensor track, because
throttled intervals overlap MATMUL slices without nesting in them, which a thread track cannot show.

The events are built from the table columns a chunk of rows at a time, with Arrow string kernels: no Python
object per event. The text is what `json.dumps(event, separators=(",", ":"))` gives each event dict (floats as
`repr`, strings as `json.dumps`), so trace.json stays the same bytes whichever way it is built
(tests/profile/test_perfetto.py compares it with a per-event builder).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from nkidev.errors import NkiUsageError

MAX_PACKET_EVENTS = 200_000  # above this the per-engine packet tracks are left out (the Parquet keeps them)
# what trace.json holds (`nkidev profile --trace`): every track, the packet tracks at any count, or no file
TRACE_MODES = {
    "auto": f"every track; the per-engine DMA packet tracks only up to {MAX_PACKET_EVENTS:,} packets",
    "full": "every track, the DMA packet tracks at any count (a million packets add ~130 MB)",
    "none": "no trace.json (the Parquet tables have every event)",
}
MAX_LANES = 16
_ENGINE_TRACKS = ("Tensor", "Tensor LDWEIGHTS", "Vector", "Scalar", "GpSimd", "Sync")
THROTTLE_COUNTER = "TensorE throttle"  # the counter's name; its one series is "limit_percent"
CHUNK = 65_536  # events built and written at a time

# json.dumps writes these characters of a string as they are (ensure_ascii escapes everything else)
_PLAIN = r"^[ !#-\[\]-~]*$"
# the text after the decimal point of repr(ns / 1000.0), by ns % 1000: ".5" for 500, ".0" for 0
_FRACTION = pa.array(["." + (f"{r:03d}".rstrip("0") or "0") for r in range(1000)], pa.string())
# below this |ns|, repr(ns / 1000.0) is the exact decimal (the doubles there are closer than 1e-3 apart)
_EXACT_NS = 10**15


class _Tracks:
    """(core, track name) -> tid; a new track's metadata events (naming and ordering it) wait in `new` until
    the caller writes them, just before the track's first slice."""

    def __init__(self):
        self.tids: dict[tuple[int, str], int] = {}
        self.cores: set[int] = set()
        self.new: list[str] = []

    def tid(self, core: int, name: str) -> int:
        key = (core, name)
        if key not in self.tids:
            if core not in self.cores:
                self.cores.add(core)
                self._meta({"name": "process_name", "ph": "M", "pid": core, "args": {"name": f"NeuronCore {core}"}})
                self._meta({"name": "process_sort_index", "ph": "M", "pid": core, "args": {"sort_index": core}})
            tid = len(self.tids) + 1
            self.tids[key] = tid
            self._meta({"name": "thread_name", "ph": "M", "pid": core, "tid": tid, "args": {"name": name}})
            self._meta({"name": "thread_sort_index", "ph": "M", "pid": core, "tid": tid, "args": {"sort_index": tid}})
        return self.tids[key]

    def _meta(self, event: dict) -> None:
        self.new.append(json.dumps(event, separators=(",", ":")))

    def take_new(self) -> list[str]:
        new, self.new = self.new, []
        return new

    def of_rows(self, core: np.ndarray, code: np.ndarray, names: list[str]) -> tuple[np.ndarray, list[tuple[int, list[str]]]]:
        """The tid of each row's track (core, names[code]), tracks numbered in order of first use, and the
        metadata events of the tracks these rows use first, each with the row they go before."""
        if not len(code):
            return np.zeros(0, np.int64), []
        key = core.astype(np.int64) * len(names) + code
        uniq, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        tid = np.empty(len(uniq), dtype=np.int64)
        inserts = []
        for j in np.argsort(first, kind="stable").tolist():
            c, n = divmod(int(uniq[j]), len(names))
            tid[j] = self.tid(c, names[n])
            if self.new:
                inserts.append((int(first[j]), self.take_new()))
        return tid[inverse.reshape(-1)], inserts


class _Output:
    """trace.json written as it is built: `{"traceEvents":[...],...}`; events arrive as Arrow string arrays,
    each value one event with a leading comma."""

    def __init__(self, f):
        self.f = f
        self.first = True
        f.write(b'{"traceEvents":[')

    def _write(self, data) -> None:
        if self.first and len(data):
            data = data[1:]  # the first event has no comma before it
            self.first = False
        self.f.write(data)

    def meta(self, events: list[str]) -> None:
        for text in events:
            self._write(("," + text).encode())

    def events(self, texts: pa.Array, inserts: list[tuple[int, list[str]]] = ()) -> None:
        """Write the events `texts`, with each (row, metadata events) of `inserts` before that row."""
        if not len(texts):
            for _, meta in inserts:
                self.meta(meta)
            return
        offsets = np.frombuffer(texts.buffers()[1], dtype=np.int32)[texts.offset : texts.offset + len(texts) + 1]
        data = memoryview(texts.buffers()[2])
        lo = 0
        for row, meta in [*inserts, (len(texts), [])]:
            if row > lo:
                self._write(data[offsets[lo] : offsets[row]])
            self.meta(meta)
            lo = max(lo, row)

    def close(self, title: str) -> None:
        self.f.write(('],"displayTimeUnit":"ns","otherData":' + json.dumps({"title": title}, separators=(",", ":")) + "}").encode())


def _chunks(table, names: list[str], rows=None):
    """Dicts of Arrow columns for consecutive pieces of `table` (a pa.Table or LazyTable), optionally in the
    order of `rows`. A LazyTable's strings may come as dictionary arrays."""
    n = table.num_rows if rows is None else len(rows)
    for lo in range(0, n, CHUNK):
        idx = np.arange(lo, min(n, lo + CHUNK), dtype=np.int64) if rows is None else rows[lo : lo + CHUNK]
        if isinstance(table, pa.Table):
            part = table.select(names).take(pa.array(idx))
            yield {name: part.column(name).combine_chunks() for name in names}
        else:
            yield {name: v.combine_chunks() if isinstance(v, pa.ChunkedArray) else v for name, v in table.arrays(idx, names).items()}


def _ints(values: pa.Array) -> np.ndarray:
    """An integer column as int64 (nulls as 0, as the per-event builder's `value or 0`)."""
    return values.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)


def _int_text(values) -> pa.Array:
    """str() of each integer; null -> null (JSON)."""
    arr = values if isinstance(values, pa.Array) else pa.array(values, pa.int64())
    return pc.cast(arr, pa.string()).fill_null("null")


def _us(ns: np.ndarray) -> pa.Array:
    """repr(n / 1000.0) of each integer n (ns -> µs as JSON), without a Python float per value."""
    n = np.asarray(ns, dtype=np.int64)
    if not len(n):
        return pa.array([], pa.string())
    magnitude = np.abs(n)
    if int(magnitude.max()) >= _EXACT_NS:
        return pa.array([repr(v / 1000.0) for v in n.tolist()], pa.string())
    whole, rest = np.divmod(magnitude, 1000)
    text = pc.binary_join_element_wise(pc.cast(pa.array(whole), pa.string()), _FRACTION.take(pa.array(rest)), "")
    negative = n < 0
    if negative.any():
        text = pc.if_else(pa.array(negative), pc.binary_join_element_wise("-", text, ""), text)
    return text


def _quoted(values: pa.Array) -> pa.Array:
    """json.dumps of each string (null -> null), computed once per distinct value (per dictionary entry)."""
    enc = values if pa.types.is_dictionary(values.type) else values.cast(pa.string()).dictionary_encode()
    distinct = enc.dictionary
    if pc.all(pc.match_substring_regex(distinct, _PLAIN)).as_py() is not False:
        text = pc.binary_join_element_wise('"', distinct, '"', "")
    else:  # json.dumps once per distinct value (a dictionary's entries may repeat)
        entries = distinct.cast(pa.string()).dictionary_encode()
        text = pa.array([json.dumps(v) for v in entries.dictionary.to_pylist()], pa.string()).take(entries.indices)
    return text.take(enc.indices).fill_null("null")


def _value_codes(values: pa.Array) -> tuple[np.ndarray, list]:
    """Codes of each row's string into the distinct values (None last, for nulls). A dictionary array's entries
    may repeat (one per row class): they are mapped to distinct values first."""
    enc = values if pa.types.is_dictionary(values.type) else values.cast(pa.string()).dictionary_encode()
    entries = enc.dictionary.cast(pa.string()).dictionary_encode()
    distinct = entries.dictionary.to_pylist() + [None]
    of_entry = np.append(entries.indices.fill_null(len(distinct) - 1).to_numpy(zero_copy_only=False), len(distinct) - 1).astype(np.int64)
    return of_entry[enc.indices.fill_null(len(of_entry) - 1).to_numpy(zero_copy_only=False)], distinct


def _combination_text(columns: list[pa.Array], fmt) -> pa.Array:
    """fmt(*values) of each row's values of `columns` (None for nulls), computed once per distinct combination."""
    coded = [_value_codes(col) for col in columns]
    key = np.zeros(len(columns[0]), dtype=np.int64)
    combinations = 1  # an upper bound of the distinct keys so far
    for codes, values in coded:
        if combinations * len(values) >= 1 << 62:  # renumbered (a sort) only when the next key could overflow
            key = np.unique(key, return_inverse=True)[1].reshape(-1)
            combinations = int(key.max()) + 1 if len(key) else 1
        key = key * len(values) + codes
        combinations *= len(values)
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    texts = [fmt(*(values[codes[r]] for codes, values in coded)) for r in first.tolist()]
    return pa.array(texts, pa.string()).take(pa.array(inverse.reshape(-1)))


def _string_parts(values: pa.Array) -> list:
    """`_join` parts writing json.dumps of each string: quotes around the text itself when no value needs
    escaping (no hashing of a column of distinct values), else the per-value texts."""
    if not pa.types.is_dictionary(values.type) and values.null_count == 0 and len(values):
        if pc.all(pc.match_substring_regex(values, _PLAIN)).as_py():
            return ['"', values.cast(pa.string()), '"']
    return [_quoted(values)]


def _join(*parts) -> pa.Array:
    """Each row's parts (Arrow string arrays and str constants) joined; constants are passed as arrays, which
    Arrow's kernel joins about twice as fast as broadcast scalars."""
    n = next(len(p) for p in parts if not isinstance(p, str))
    return pc.binary_join_element_wise(*(_repeat(p, n) if isinstance(p, str) else p for p in parts), "")


def _repeat(text: str, n: int) -> pa.Array:
    """A string array of `n` copies of `text`, made from its buffers."""
    data = text.encode()
    offsets = np.arange(0, (n + 1) * len(data), len(data) or 1, dtype=np.int32)[: n + 1] if data else np.zeros(n + 1, np.int32)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data * n))


def _instruction_events(ins, tracks: _Tracks, out: _Output) -> None:
    names = ["id", "engine", "opcode", "start_ts", "duration_ns", "pcore_idx", "compiler_opcode", "nki_source_location", "operands"]
    names += ["evt_wait_time_ns", "bir_id"]
    for c in _chunks(ins, names):
        c["engine"], c["opcode"] = c["engine"].cast(pa.string()), c["opcode"].cast(pa.string())
        engine, opcode = c["engine"], c["opcode"]
        # static/hardware DGE triggers are drawn as their DMA queue's transfers
        trigger = pc.fill_null(pc.and_(pc.equal(opcode, "DMA_TRIGGER"), pc.not_equal(engine, "GpSimd")), False)
        keep = pc.invert(trigger)
        c = {k: v.filter(keep) for k, v in c.items()}
        engine, opcode = c["engine"], c["opcode"]
        core = _ints(c["pcore_idx"])
        track = pc.if_else(pc.fill_null(pc.equal(opcode, "LDWEIGHTS"), False), "Tensor LDWEIGHTS", engine)
        enc = track.dictionary_encode()
        codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        tid, inserts = tracks.of_rows(core, codes, [str(x) for x in enc.dictionary.to_pylist()])
        # the parts that follow from the row's class come as one text per distinct combination
        head = _combination_text([opcode, engine], lambda o, e: f'{{"name":{json.dumps(o)},"cat":{json.dumps(e)},"ph":"X","ts":')
        args = _combination_text(
            [c["compiler_opcode"], c["nki_source_location"], c["operands"]],
            lambda nki, src, ops: f',"nki":{json.dumps(nki)},"source":{json.dumps(src)},"operands":{json.dumps(ops)},"wait_ns":',
        )
        text = _join(
            ",",
            head,
            _us(_ints(c["start_ts"])),
            ',"dur":',
            _us(_ints(c["duration_ns"])),
            ',"pid":',
            _int_text(core),
            ',"tid":',
            _int_text(tid),
            ',"args":{"id":',
            _int_text(c["id"]),
            args,
            _int_text(c["evt_wait_time_ns"]),
            ',"bir_id":',
            *_string_parts(c["bir_id"]),
            "}}",
        )
        out.events(text, inserts)
        del c, text  # else they stay alive while the next chunk is built


def _lanes(start: np.ndarray, end: np.ndarray, group: np.ndarray) -> np.ndarray:
    """The lane of each transfer (rows in start order) on its queue's track: the first lane free at its start,
    a new one (up to MAX_LANES) when none is, else the one that frees first. A queue whose transfers never
    overlap keeps lane 0 (checked with NumPy; the exact walk runs only for queues that overlap)."""
    lane = np.zeros(len(start), dtype=np.int64)
    by_group = np.argsort(group, kind="stable")
    bounds = np.flatnonzero(np.diff(group[by_group])) + 1
    for rows in np.split(by_group, bounds):
        s, e = start[rows], end[rows]
        if len(rows) < 2 or (s[1:] >= np.maximum.accumulate(e[:-1])).all():
            continue
        ends: list[int] = []
        out = []
        for begin, finish in zip(s.tolist(), e.tolist()):
            if ends and ends[0] <= begin:
                k = 0
            else:
                k = next((j for j, x in enumerate(ends) if x <= begin), None)
                if k is None:
                    k = len(ends) if len(ends) < MAX_LANES else min(range(len(ends)), key=ends.__getitem__)
                    if k == len(ends):
                        ends.append(0)
            ends[k] = finish
            out.append(k)
        lane[rows] = out
    return lane


def _transfer_events(dpa, tracks: _Tracks, out: _Output, sources: np.ndarray, locations: list) -> None:
    names = ["id", "start_ts", "end_ts", "pcore_idx", "queue_name", "variable", "op", "transfer_bytes", "source", "dest"]
    names += ["trigger"]
    starts = _column(dpa, "start_ts")
    order = np.argsort(starts, kind="stable")
    # the lane of each transfer on its queue's track depends on all earlier ones: placed first, for the whole table
    cols = list(_chunks(dpa, ["end_ts", "pcore_idx", "queue_name"], order))
    if not cols:
        return
    end = np.concatenate([_ints(c["end_ts"]) for c in cols])
    core = np.concatenate([_ints(c["pcore_idx"]) for c in cols])
    queue = pa.chunked_array([c["queue_name"].cast(pa.string()) for c in cols], pa.string()).combine_chunks().dictionary_encode()
    del cols
    queues = [str(q) for q in queue.dictionary.to_pylist()]
    q_code = queue.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    start = starts[order].astype(np.int64)
    lane = _lanes(start, end, core * max(len(queues), 1) + q_code)
    track_names = [q if k == 0 else f"{q} #{k}" for q in queues for k in range(MAX_LANES)]
    where_text = pa.array([json.dumps(x) for x in locations] + ["null"], pa.string())  # sources code -1 -> null
    done = 0
    for c in _chunks(dpa, names, order):
        n = len(c["id"])
        sl = slice(done, done + n)
        tid, inserts = tracks.of_rows(core[sl], q_code[sl] * MAX_LANES + lane[sl], track_names)
        label = _combination_text([c["op"], c["variable"]], lambda op, var: json.dumps(f"{op} {var}"))
        path = _combination_text([c["source"], c["dest"]], lambda src, dst: json.dumps(f"{src} -> {dst}"))
        where = sources[order[sl]]
        text = _join(
            ',{"name":',
            label,
            ',"cat":"DMA","ph":"X","ts":',
            _us(start[sl]),
            ',"dur":',
            _us(end[sl] - start[sl]),
            ',"pid":',
            _int_text(core[sl]),
            ',"tid":',
            _int_text(tid),
            ',"args":{"dma_id":',
            _int_text(c["id"]),
            ',"bytes":',
            _int_text(c["transfer_bytes"]),
            ',"path":',
            path,
            ',"source":',
            where_text.take(pa.array(np.where(where < 0, len(where_text) - 1, where))),
            ',"triggered_at_us":',
            _us(_ints(c["trigger"])),
            "}}",
        )
        out.events(text, inserts)
        done += n
        del c, text  # else they stay alive while the next chunk is built


def _packet_events(pk, tracks: _Tracks, out: _Output) -> None:
    names = ["start_ts", "duration_ns", "pcore_idx", "engine_idx", "variable", "transfer_bytes", "packet_aggregation_id"]
    for c in _chunks(pk, names):
        engine = _ints(c["engine_idx"])
        engines, code = np.unique(engine, return_inverse=True)
        tid, inserts = tracks.of_rows(_ints(c["pcore_idx"]), code.reshape(-1), [f"DMA engine {e:02d}" for e in engines.tolist()])
        variable = c["variable"].cast(pa.string())
        named = pc.if_else(pc.fill_null(pc.not_equal(variable, ""), False), variable, "packet")
        text = _join(
            ',{"name":',
            _quoted(named),
            ',"cat":"DMA packet","ph":"X","ts":',
            _us(_ints(c["start_ts"])),
            ',"dur":',
            _us(_ints(c["duration_ns"])),
            ',"pid":',
            _int_text(_ints(c["pcore_idx"])),
            ',"tid":',
            _int_text(tid),
            ',"args":{"bytes":',
            _int_text(c["transfer_bytes"]),
            ',"dma_id":',
            _int_text(c["packet_aggregation_id"]),
            "}}",
        )
        out.events(text, inserts)
        del c, text  # else they stay alive while the next chunk is built


def throttle_steps(throttle) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(core, ts ns, limit percent) of the counter's steps from Throttle rows: each row sets its limit at its
    start and 100 at its end, unless the core's next row starts right there."""
    if throttle is None or not throttle.num_rows:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    core = np.nan_to_num(_column(throttle, "pcore_idx").astype(np.float64)).astype(np.int64)
    start = _column(throttle, "timestamp").astype(np.int64)
    end = start + _column(throttle, "duration").astype(np.int64)
    limit = 100.0 * _column(throttle, "k").astype(np.float64) / _column(throttle, "n").astype(np.float64)
    order = np.lexsort((start, core))
    core, start, end, limit = core[order], start[order], end[order], limit[order]
    released = np.ones(len(start), dtype=bool)
    released[:-1] = (core[1:] != core[:-1]) | (start[1:] != end[:-1])
    step_core = np.concatenate([core, core[released]])
    ts = np.concatenate([start, end[released]])
    value = np.concatenate([limit, np.full(int(released.sum()), 100.0)])
    order = np.lexsort((ts, step_core))  # stable: a row's end before a later row's start at the same ts
    return step_core[order], ts[order], value[order]


def _throttle_events(throttle, tracks: _Tracks, out: _Output) -> None:
    core, ts, value = throttle_steps(throttle)
    if not len(ts):
        return
    for c in np.unique(core).tolist():
        tracks.tid(c, "Tensor")  # the core's process exists (it does whenever the core ran a MATMUL)
    out.meta(tracks.take_new())
    distinct, code = np.unique(value, return_inverse=True)
    text = _join(
        ',{"name":' + json.dumps(THROTTLE_COUNTER) + ',"ph":"C","ts":',
        _us(ts),
        ',"pid":',
        _int_text(core),
        ',"args":{"limit_percent":',
        pa.array([repr(float(v)) for v in distinct.tolist()], pa.string()).take(pa.array(code.reshape(-1))),
        "}}",
    )
    out.events(text)


def _column(table, name: str) -> np.ndarray:
    col = table.column(name)
    return col.to_numpy(zero_copy_only=False) if len(col) else np.zeros(0, np.int64)


def check_trace_mode(mode: str) -> str:
    """`mode` if it is one of TRACE_MODES, else err_invalid_argument."""
    if mode not in TRACE_MODES:
        raise NkiUsageError("err_invalid_argument", f"--trace {mode!r}", f"pass --trace {' | '.join(TRACE_MODES)}")
    return mode


def with_packet_tracks(mode: str, packets: int) -> bool:
    """Whether trace.json in `mode` draws the per-engine DMA packet tracks of `packets` packets."""
    return mode == "full" or (mode == "auto" and packets <= MAX_PACKET_EVENTS)


def write_trace(path: Path, tables: dict, title: str, mode: str = "auto") -> bool:
    """Write trace.json (`mode`: "auto" or "full", see TRACE_MODES); returns False when the packet tracks
    were left out."""
    ins = tables["Instruction"]
    with open(path, "wb") as f:
        out = _Output(f)
        tracks = _Tracks()
        cores = np.unique(np.nan_to_num(_column(ins, "pcore_idx").astype(np.float64))).astype(np.int64).tolist() if ins.num_rows else []
        for core in sorted(cores) or [0]:
            for name in _ENGINE_TRACKS:
                tracks.tid(core or 0, name)
        out.meta(tracks.take_new())
        _instruction_events(ins, tracks, out)
        dpa, flow = tables["DmaPacketAggregated"], tables["Flow"]
        # the source line of each transfer: the location of the instruction row that triggered it
        trigger = np.full(dpa.num_rows, -1, dtype=np.int64)
        if flow.num_rows:
            trigger[_column(flow, "out_id")] = _column(flow, "in_id")
        loc = _locations(ins, trigger)
        _transfer_events(dpa, tracks, out, *loc)
        with_packets = with_packet_tracks(mode, tables["DmaPacket"].num_rows)
        if with_packets:
            _packet_events(tables["DmaPacket"], tracks, out)
        _throttle_events(tables.get("Throttle"), tracks, out)
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
