"""Whole-kernel tables computed from the timeline tables: Summary, OpcodeSummary, Metadata, Warning."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pyarrow as pa

from nkidev.costmodel.intervals import merge, merge_blocked, merged_length
from nkidev.hardware import Target
from nkidev.profile import schema
from nkidev.profile.tables import ENGINE_NAMES, to_table

STATIC_QUEUES = ("input", "output", "data")
# the tables of timed rows (intervals and events) that Summary.total_row_count counts; the summaries of them
# (OpcodeSummary, ThrottleSummary) and the descriptive tables (TensorInfo, DmaQueuesInfo, Metadata, ...) are not
TIMELINE_TABLES = ("Instruction", "DmaPacket", "DmaPacketAggregated", "Flow", "ActiveTime", "Throttle")


def _pieces(table, name: str):
    """A column chunk by chunk: NumPy arrays or Arrow arrays (a LazyTable is built a chunk at a time)."""
    if isinstance(table, pa.Table):
        yield from table.column(name).chunks
    else:
        yield from table.pieces(name)


def _numbers(chunk) -> np.ndarray:
    if isinstance(chunk, np.ndarray):
        return chunk.astype(np.float64)
    if isinstance(chunk, pa.ChunkedArray):
        chunk = chunk.combine_chunks()
    return np.nan_to_num(chunk.fill_null(0).to_numpy(zero_copy_only=False).astype(np.float64))


def _integers(chunk) -> bool:
    """A NumPy integer chunk: no NaN to clear."""
    return isinstance(chunk, np.ndarray) and chunk.dtype.kind in "iu"


def _arrow(chunk) -> pa.Array:
    return pa.array(chunk) if isinstance(chunk, np.ndarray) else chunk.combine_chunks() if isinstance(chunk, pa.ChunkedArray) else chunk


class _Strings:
    """A string column as int32 codes into its values (a packet table has millions of rows and a handful of
    queue names): comparisons and groupings on integers, not on millions of Python strings."""

    def __init__(self, table, name: str):
        self.codes, self.values = _codes(table, name)
        self._code = {v: c for c, v in enumerate(self.values)}

    def eq(self, value: str) -> np.ndarray:
        return self.codes == self._code.get(value, -1)

    def present(self) -> list:
        """The values that occur (a LazyTable's dictionary may hold others)."""
        return [self.values[c] for c in np.unique(self.codes).tolist()]


def _num(table, name: str) -> np.ndarray:
    """A numeric column as float64 (nulls and NaN as 0), filled a chunk at a time."""
    out = np.empty(table.num_rows, dtype=np.float64)
    k = 0
    for chunk in _pieces(table, name):
        v = _numbers(chunk)
        out[k : k + len(v)] = v
        k += len(v)
    return np.nan_to_num(out, copy=False)


def _byte_sums(table, names: tuple[str, ...]) -> dict[str, int]:
    """`int(_num(table, name).sum())` of byte-count columns, and (key "positive:NAME") how many rows of each are
    > 0, in one pass that builds a LazyTable's chunk once for all of them, not once per column. Byte counts are
    integers: every partial sum is exact in float64, so the chunked sums are the whole column's sum."""
    out = dict.fromkeys([*names, *(f"positive:{n}" for n in names)], 0)
    if isinstance(table, pa.Table):
        parts = ({n: chunk} for n in names for chunk in _pieces(table, n))
    else:
        parts = table.parts(names)
    for part in parts:
        for n, chunk in part.items():
            v = np.nan_to_num(_numbers(chunk), copy=False)
            out[n] += int(v.sum())
            out[f"positive:{n}"] += int((v > 0).sum())
    return out


def _pct(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole > 0 else 0.0


def total_ns(tables: dict[str, pa.Table]) -> float:
    """The kernel time nkidev writes as Summary.total_time: from the kernel start (0, the first instruction) to
    the last end of any instruction or DMA packet, in the integer ns of the tables. `nkidev profile` prints it
    (kernel_time_ns) and `nkidev analyze` reads it back (analysis/prepare.sql), so both agree."""
    ends = [
        int(max(float(np.nan_to_num(_numbers(c)).max()) for c in _pieces(tables[t], "end_ts") if len(c)))
        for t in ("Instruction", "DmaPacket")
        if tables[t].num_rows
    ]
    return float(max(ends, default=0))


def kernel_time_ns(tables: dict[str, pa.Table]) -> float:
    """Summary.total_time of built tables, in ns: the one kernel time every nkidev report shows."""
    return round(float(tables["Summary"].column("total_time")[0].as_py()) * 1e9, 3)


def summary_table(tables: dict[str, pa.Table], hw: Target, total: float) -> pa.Table:
    ins, pk, dpa, info = tables["Instruction"], tables["DmaPacket"], tables["DmaPacketAggregated"], tables["TensorInfo"]
    seconds = total / 1e9
    engine, opcode = _Strings(ins, "engine"), _Strings(ins, "opcode")
    start, end = _num(ins, "start_ts"), _num(ins, "end_ts")
    dur = end - start
    matmul = engine.eq("Tensor") & opcode.eq("MATMUL")
    transpose = matmul & _Strings(ins, "tensor_instruction_type").eq("TRANSPOSE")
    raw, adjusted = _num(ins, "raw_flops"), _num(ins, "adjusted_flops")
    hw_flops, hw_adj = raw[matmul].sum(), adjusted[matmul].sum()
    tr_flops, tr_adj = raw[transpose].sum(), adjusted[transpose].sum()
    sums = _byte_sums(ins, _SUMMED)
    hbm_read, hbm_write = float(sums["hbm_read_bytes"]), float(sums["hbm_write_bytes"])
    peak = hw.tensor_engine.peak_flops
    bw = hw.dma.ddr_bandwidth_bytes_per_s
    types, sizes = _Strings(info, "type"), _num(info, "size")
    inputs, outputs = sizes[types.eq(schema.TENSOR_IN)].sum(), sizes[types.eq(schema.TENSOR_OUT)].sum()
    row: dict[str, float | int | None] = {
        "total_time": seconds,
        "total_exec_time": seconds,
        "neuroncore_cycle_count": int(total * hw.tensor_engine.clock_ghz),
        "model_flops": int(hw_flops - tr_flops),
        "hardware_flops": int(hw_flops),
        "transpose_flops": int(tr_flops),
        "adjusted_hardware_flops": int(hw_adj),
        "adjusted_transpose_flops": int(tr_adj),
        "mm_arithmetic_intensity": (hw_adj - tr_adj) / (hbm_read + hbm_write) if hbm_read + hbm_write else None,
        "peak_flops_bandwidth_ratio": peak / bw,
        "trace_count": 1,
        "event_count": ins.num_rows + pk.num_rows,
        "total_row_count": sum(tables[t].num_rows for t in TIMELINE_TABLES),
        "inputs_and_weights_size_bytes": int(inputs),
        "inputs_outputs_weights_size_bytes": int(inputs + outputs),
        "weight_size_bytes": 0,
        "hbm_read_bytes": int(hbm_read),
        "hbm_write_bytes": int(hbm_write),
        "spill_save_bytes": sums["spill_save_bytes"],
        "spill_reload_bytes": sums["spill_reload_bytes"],
        "weight_queue_bytes": 0,
        "mbu_estimated_percent": _pct((hbm_read + hbm_write) / bw, seconds),
        "mbu_min_read_util_percent": _pct(inputs / bw, seconds),
        "matmul_instruction_count": int(matmul.sum()),
        "mfu_estimated_percent": _pct((hw_adj - tr_adj) / peak, seconds),
        "mfu_inst_estimated_percent": _pct((hw_adj - tr_adj) / peak, seconds),
        "hfu_estimated_percent": _pct(hw_adj / peak, seconds),
    }
    for name in (
        "sbuf_read_bytes",
        "sbuf_write_bytes",
        "psum_read_bytes",
        "psum_write_bytes",
        "psum_read_sbuf_write_bytes",
        "input_queue_bytes",
        "output_queue_bytes",
    ):
        row[name] = sums[name]
    row["psum_read_sbuf_write_count"] = sums["positive:psum_read_sbuf_write_bytes"]
    activate = opcode.eq("ACTIVATE")
    row["activate_instruction_time"] = dur[activate].sum() / 1e9
    row["activate_instruction_count"] = int(activate.sum())
    for low, cap in ENGINE_NAMES.items():
        mask = engine.eq(cap)
        active = merged_length(start[mask], end[mask]) / 1e9
        row[f"{low}_engine_instruction_time"] = dur[mask].sum() / 1e9
        row[f"{low}_engine_active_time"] = active
        row[f"{low}_engine_active_time_percent"] = _pct(active, seconds)
        row[f"{low}_engine_instruction_count"] = int(mask.sum())
    tensor_active = row["tensor_engine_active_time"]
    row["mfu_max_achievable_estimated_percent"] = _pct((hw_adj - tr_adj) / peak, tensor_active)
    row["mfu_inst_max_achievable_estimated_percent"] = row["mfu_max_achievable_estimated_percent"]
    dma, (pk_s, pk_e) = _dma_fields(pk, dpa, seconds, hw)
    row.update(dma)
    row.update({k: 0.0 if "time" in k or "percent" in k else 0 for k in _CC_FIELDS})
    # the union of everything: instructions and packets merged apart first (the union of unions is the same)
    ins_s, ins_e = merge_blocked(start, end)
    row["total_active_time"] = merged_length(np.concatenate([ins_s, pk_s]), np.concatenate([ins_e, pk_e])) / 1e9
    row["total_active_time_percent"] = _pct(row["total_active_time"], seconds)
    return to_table("Summary", {k: [v] for k, v in row.items()})


# Instruction's byte columns that Summary sums (and counts the rows > 0 of)
_SUMMED = (
    "hbm_read_bytes",
    "hbm_write_bytes",
    "spill_save_bytes",
    "spill_reload_bytes",
    "sbuf_read_bytes",
    "sbuf_write_bytes",
    "psum_read_bytes",
    "psum_write_bytes",
    "psum_read_sbuf_write_bytes",
    "input_queue_bytes",
    "output_queue_bytes",
)

_CC_FIELDS = (
    "cc_op_time",
    "cc_op_active_time",
    "cc_op_active_time_percent",
    "cc_op_count",
    "cc_cores_instruction_time",
    "cc_cores_instruction_active_time",
    "cc_cores_instruction_active_time_percent",
    "cc_cores_instruction_count",
)


def _codes(table, name: str) -> tuple[np.ndarray, list]:
    """A string column as int32 codes and the distinct values (None included when present; from a LazyTable's
    dictionary arrays, values that do not occur may be listed too)."""
    index: dict = {}
    out = np.empty(table.num_rows, dtype=np.int32)
    k = 0
    for chunk in _pieces(table, name):
        codes, local = _chunk_codes(chunk)
        remap = np.array([index.setdefault(v, len(index)) for v in local], dtype=np.int32)
        out[k : k + len(codes)] = remap[codes]
        k += len(codes)
    return out, list(index)


def _chunk_codes(chunk) -> tuple[np.ndarray, list]:
    """One chunk of strings as codes into its distinct values (None last: the code of nulls)."""
    arr = _arrow(chunk)
    enc = arr if pa.types.is_dictionary(arr.type) else arr.cast(pa.string()).dictionary_encode()
    entries = enc.dictionary.cast(pa.string()).dictionary_encode()  # a dictionary's entries may repeat
    distinct = entries.dictionary.to_pylist() + [None]
    of_entry = np.append(entries.indices.fill_null(len(distinct) - 1).to_numpy(zero_copy_only=False), len(distinct) - 1)
    return of_entry[enc.indices.fill_null(len(of_entry) - 1).to_numpy(zero_copy_only=False)], distinct


def _packet_pass(pk) -> tuple[list, dict]:
    """One pass over the packets, a chunk at a time (no column of millions of rows is held): per queue type,
    its packet count, bytes, and merged intervals; and the summed packet time (`(queue types, per type, time)`).
    The union of the per-chunk unions is the union; the sums are of integers, exact in float64 in any order."""
    index: dict = {}
    per: dict[int, dict] = {}
    time_ns = 0.0
    names = ("start_ts", "end_ts", "queue_type", "transfer_bytes")
    if isinstance(pk, pa.Table):
        pieces = zip(*(_pieces(pk, name) for name in names))
    else:  # the columns of a chunk built together: a packet's plan is looked up once for its end and bytes
        pieces = ((p[n] for n in names) for p in pk.parts(names))
    for start, end, kind, nbytes in pieces:
        s, e, b = (_numbers(c) if _integers(c) else np.nan_to_num(_numbers(c)) for c in (start, end, nbytes))
        codes, local = _chunk_codes(kind)
        codes = np.array([index.setdefault(v, len(index)) for v in local], dtype=np.int64)[codes]
        time_ns += float((e - s).sum())
        for c in np.flatnonzero(np.bincount(codes)).tolist():
            mask = codes == c
            acc = per.setdefault(c, {"count": 0, "bytes": 0.0, "starts": [], "ends": []})
            ms, me = merge(s[mask], e[mask])
            acc["count"] += int(mask.sum())
            acc["bytes"] += float(b[mask].sum())
            acc["starts"].append(ms)
            acc["ends"].append(me)
    return list(index), per, time_ns


def _union(per: dict, codes) -> tuple[np.ndarray, np.ndarray]:
    """Merged intervals of the packets of the queue types `codes`."""
    starts = [x for c in codes if c in per for x in per[c]["starts"]]
    ends = [x for c in codes if c in per for x in per[c]["ends"]]
    return merge_blocked(np.concatenate(starts), np.concatenate(ends)) if starts else (np.zeros(0), np.zeros(0))


def _dma_fields(pk, dpa, seconds: float, hw: Target) -> tuple[dict, tuple[np.ndarray, np.ndarray]]:
    """The DMA fields of Summary, and the merged packet intervals (for the total active time)."""
    kinds, per, packet_ns = _packet_pass(pk)
    merged = _union(per, range(len(kinds)))
    active = float((merged[1] - merged[0]).sum()) / 1e9
    count = dpa.num_rows
    total_bytes = _num(dpa, "transfer_bytes").sum()
    out = {
        "dma_active_time": active,
        "dma_active_time_percent": _pct(active, seconds),
        "dma_active_cycles": int(active * 1e9 * hw.tensor_engine.clock_ghz),
        "dma_transfer_count": count,
        "dma_transfer_total_bytes": int(total_bytes),
        "dma_transfer_average_bytes": total_bytes / count if count else None,
        "dma_packet_time": packet_ns / 1e9,
        "dma_transfer_time": (_num(dpa, "end_ts") - _num(dpa, "start_ts")).sum() / 1e9,
        "dma_queue_count": len(_Strings(dpa, "queue_name").present()),
    }
    code_of = {v: c for c, v in enumerate(kinds)}
    static = [code_of[q] for q in STATIC_QUEUES if q in code_of]
    groups = {
        "static": static,
        "software_dynamic": [code_of["software_dynamic"]] if "software_dynamic" in code_of else [],
        "hardware_dynamic": [code_of["hardware_dynamic"]] if "hardware_dynamic" in code_of else [],
        "dynamic": [c for c in range(len(kinds)) if c not in static],
    }
    n_packets = pk.num_rows
    all_bytes = sum(p["bytes"] for p in per.values())
    for name, codes in groups.items():  # the schema keeps a subset of these per group
        packets = sum(per[c]["count"] for c in codes if c in per)
        size = sum(per[c]["bytes"] for c in codes if c in per)
        if packets == n_packets:  # all or nothing needs no second merge of millions of packets
            t = active
        else:
            ms, me = _union(per, codes)
            t = float((me - ms).sum()) / 1e9 if packets else 0.0
        out[f"{name}_dma_active_time"] = t
        out[f"{name}_dma_active_time_percent"] = _pct(t, active)
        out[f"{name}_dma_packet_count"] = packets
        out[f"{name}_dma_size"] = int(size)
        out[f"{name}_dma_packet_percent"] = _pct(packets, n_packets)
        out[f"{name}_dma_size_percent"] = _pct(size, all_bytes)
    return {k: v for k, v in out.items() if k in _SUMMARY_FIELDS}, merged


_SUMMARY_FIELDS = set(schema.column_names("Summary"))


def opcode_summary_table(ins: pa.Table, total: float) -> pa.Table:
    engine, opcode = _Strings(ins, "engine"), _Strings(ins, "opcode")
    start, end = _num(ins, "start_ts"), _num(ins, "end_ts")
    pair = engine.codes.astype(np.int64) * max(len(opcode.values), 1) + opcode.codes
    used = [divmod(int(k), max(len(opcode.values), 1)) for k in np.unique(pair)]
    keys = sorted((engine.values[e], opcode.values[o], e * max(len(opcode.values), 1) + o) for e, o in used)
    cols: dict[str, list] = {n: [] for n in schema.column_names("OpcodeSummary")}
    for e, o, key in keys:
        mask = pair == key
        active = merged_length(start[mask], end[mask])
        cols["engine"].append(e)
        cols["opcode"].append(o)
        cols["instruction_count"].append(int(mask.sum()))
        cols["instruction_time_ns"].append(int((end[mask] - start[mask]).sum()))
        cols["active_time_ns"].append(int(active))
        cols["active_time_percent"].append(_pct(active, total))
    return to_table("OpcodeSummary", cols)


def metadata_table(hw: Target, kernel: str, total: float, programs: int) -> pa.Table:
    from nkidev import __version__

    te, ve, se, ge = hw.tensor_engine, hw.vector_engine, hw.scalar_engine, hw.gpsimd_engine
    row = {
        "profile_schema_version": schema.SCHEMA_VERSION,
        "ntff_version": 0,
        "num_physical_cores": programs,
        "vnc_enabled": programs > 1,
        "first_hw_timestamp": 0,
        "last_hw_timestamp": int(total),
        "first_ts": "0",
        "last_ts": str(int(total)),
        "dma_ddr_bandwidth": hw.dma.ddr_bandwidth_bytes_per_s,
        "num_dma_engines_per_neuroncore": hw.dma.engines,
        "hbm_ddr_bandwidth": hw.hbm.bytes_per_s_per_stack,
        "tensor_engine_num_rows": te.rows,
        "tensor_engine_num_cols": te.cols,
        "tensor_engine_clock_freq": te.clock_ghz,
        "vector_engine_clock_freq": ve.clock_ghz,
        "vector_engine_num_channels": ve.lanes,
        "scalar_engine_clock_freq": se.clock_ghz,
        "scalar_engine_num_channels": se.lanes,
        "gpsimd_engine_clock_freq": ge.clock_ghz,
        "gpsimd_engine_num_channels": ge.lanes,
        "neuroncore_clock_freq": te.clock_ghz,
        "ticks_per_nanosec": 1,
        "instance_type": hw.instance_type,
        "explorer_version": f"nkidev {__version__} (cost model, target {hw.name})",
        "neuroncore_idx": 0,
        "neuron_device_idx": 0,
        "profile_name": kernel,
        "explorer_build_time": datetime.now(UTC).isoformat(timespec="seconds"),
        "is_simulation": True,
    }
    return to_table("Metadata", {k: [v] for k, v in row.items()})


def warning_table(warnings: list[tuple[str, str]]) -> pa.Table:
    return to_table("Warning", {"category": [c for c, _ in warnings], "message": [m for _, m in warnings]})
