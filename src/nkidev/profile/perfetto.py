"""`trace.json`: the profile as a Chrome trace that Perfetto (ui.perfetto.dev) and chrome://tracing open.

One process per NeuronCore; tracks: Tensor (MATMUL), Tensor LDWEIGHTS (LoadStationary runs in the
background of the previous MATMUL, so it gets its own track), Vector, Scalar, GpSimd, Sync, one track
per DMA queue (more lanes when transfers overlap) and one per DMA engine (its packets). Slices carry
the opcode as name and the kernel source line, nki.isa call and operands in args.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

MAX_PACKET_EVENTS = 200_000  # above this the per-engine packet tracks are left out (the Parquet keeps them)
MAX_LANES = 16
_ENGINE_TRACKS = ("Tensor", "Tensor LDWEIGHTS", "Vector", "Scalar", "GpSimd", "Sync")


class _Tracks:
    """(core, track name) -> tid, with metadata events naming and ordering them."""

    def __init__(self, events: list):
        self.events = events
        self.tids: dict[tuple[int, str], int] = {}
        self.cores: set[int] = set()

    def tid(self, core: int, name: str) -> int:
        key = (core, name)
        if key not in self.tids:
            if core not in self.cores:
                self.cores.add(core)
                self.events.append({"name": "process_name", "ph": "M", "pid": core, "args": {"name": f"NeuronCore {core}"}})
                self.events.append({"name": "process_sort_index", "ph": "M", "pid": core, "args": {"sort_index": core}})
            tid = len(self.tids) + 1
            self.tids[key] = tid
            self.events.append({"name": "thread_name", "ph": "M", "pid": core, "tid": tid, "args": {"name": name}})
            self.events.append({"name": "thread_sort_index", "ph": "M", "pid": core, "tid": tid, "args": {"sort_index": tid}})
        return self.tids[key]


def _us(ns: int) -> float:
    return ns / 1000.0


def _instruction_events(ins: pa.Table, tracks: _Tracks, events: list) -> None:
    c = {
        name: ins.column(name).to_pylist()
        for name in (
            "id",
            "engine",
            "opcode",
            "start_ts",
            "duration_ns",
            "pcore_idx",
            "compiler_opcode",
            "nki_source_location",
            "operands",
            "evt_wait_time_ns",
            "bir_id",
        )
    }
    for k in range(ins.num_rows):
        engine, opcode = c["engine"][k], c["opcode"][k]
        if opcode == "DMA_TRIGGER" and engine != "GpSimd":
            continue  # static/hardware DGE triggers are drawn as their DMA queue's transfers
        track = "Tensor LDWEIGHTS" if opcode == "LDWEIGHTS" else engine
        events.append(
            {
                "name": opcode,
                "cat": engine,
                "ph": "X",
                "ts": _us(c["start_ts"][k]),
                "dur": _us(c["duration_ns"][k]),
                "pid": c["pcore_idx"][k] or 0,
                "tid": tracks.tid(c["pcore_idx"][k] or 0, track),
                "args": {
                    "id": c["id"][k],
                    "nki": c["compiler_opcode"][k],
                    "source": c["nki_source_location"][k],
                    "operands": c["operands"][k],
                    "wait_ns": c["evt_wait_time_ns"][k],
                    "bir_id": c["bir_id"][k],
                },
            }
        )


def _transfer_events(dpa: pa.Table, tracks: _Tracks, events: list, sources: list) -> None:
    c = {
        name: dpa.column(name).to_pylist()
        for name in (
            "id",
            "start_ts",
            "end_ts",
            "pcore_idx",
            "queue_name",
            "variable",
            "op",
            "transfer_bytes",
            "source",
            "dest",
            "write_steps",
            "trigger",
        )
    }
    lanes: dict[tuple[int, str], list[int]] = {}
    for k in sorted(range(dpa.num_rows), key=lambda k: c["start_ts"][k]):
        core = c["pcore_idx"][k] or 0
        ends = lanes.setdefault((core, c["queue_name"][k]), [])
        lane = next((j for j, e in enumerate(ends) if e <= c["start_ts"][k]), None)
        if lane is None:
            lane = len(ends) if len(ends) < MAX_LANES else min(range(len(ends)), key=ends.__getitem__)
            if lane == len(ends):
                ends.append(0)
        ends[lane] = c["end_ts"][k]
        name = c["queue_name"][k] + ("" if lane == 0 else f" #{lane}")
        events.append(
            {
                "name": f"{c['op'][k]} {c['variable'][k]}",
                "cat": "DMA",
                "ph": "X",
                "ts": _us(c["start_ts"][k]),
                "dur": _us(c["end_ts"][k] - c["start_ts"][k]),
                "pid": core,
                "tid": tracks.tid(core, name),
                "args": {
                    "dma_id": c["id"][k],
                    "bytes": c["transfer_bytes"][k],
                    "path": f"{c['source'][k]} -> {c['dest'][k]}",
                    "source": sources[k],
                    "triggered_at_us": _us(c["trigger"][k] or 0),
                },
            }
        )


def _packet_events(pk: pa.Table, tracks: _Tracks, events: list) -> None:
    c = {
        name: pk.column(name).to_pylist()
        for name in ("start_ts", "duration_ns", "pcore_idx", "engine_idx", "variable", "transfer_bytes", "packet_aggregation_id")
    }
    for k in range(pk.num_rows):
        core = c["pcore_idx"][k] or 0
        events.append(
            {
                "name": c["variable"][k] or "packet",
                "cat": "DMA packet",
                "ph": "X",
                "ts": _us(c["start_ts"][k]),
                "dur": _us(c["duration_ns"][k]),
                "pid": core,
                "tid": tracks.tid(core, f"DMA engine {c['engine_idx'][k]:02d}"),
                "args": {"bytes": c["transfer_bytes"][k], "dma_id": c["packet_aggregation_id"][k]},
            }
        )


def write_trace(path: Path, tables: dict[str, pa.Table], title: str) -> bool:
    """Write trace.json; returns False when the packet tracks were left out (too many packets)."""
    events: list = []
    tracks = _Tracks(events)
    for core in sorted(set(tables["Instruction"].column("pcore_idx").to_pylist()) or {0}):
        for name in _ENGINE_TRACKS:
            tracks.tid(core or 0, name)
    _instruction_events(tables["Instruction"], tracks, events)
    flow, ins = tables["Flow"], tables["Instruction"]
    locations = ins.column("nki_source_location").to_pylist()
    trigger_rows = dict(zip(flow.column("out_id").to_pylist(), flow.column("in_id").to_pylist()))
    sources = [locations[trigger_rows[k]] if k in trigger_rows else None for k in tables["DmaPacketAggregated"].column("id").to_pylist()]
    _transfer_events(tables["DmaPacketAggregated"], tracks, events, sources)
    with_packets = tables["DmaPacket"].num_rows <= MAX_PACKET_EVENTS
    if with_packets:
        _packet_events(tables["DmaPacket"], tracks, events)
    text = json.dumps(
        {"traceEvents": events, "displayTimeUnit": "ns", "otherData": {"title": title}}, separators=(",", ":")
    )  # dumps, not dump: only dumps uses the C encoder
    Path(path).write_text(text)
    return with_packets
