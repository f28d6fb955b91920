"""Timeline -> the timeline tables of a profile: Instruction, DmaPacketAggregated, DmaPacket, Flow,
ActiveTime, TensorInfo, DmaQueuesInfo. Columns are built as lists / NumPy arrays, one pass each."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from nkidev.costmodel.dma import QUEUES
from nkidev.costmodel.intervals import merge
from nkidev.costmodel.timeline import Timeline
from nkidev.emulator.ops import OPS
from nkidev.emulator.trace import Instruction
from nkidev.hardware import Target
from nkidev.profile import schema
from nkidev.profile.operands import generic_operands, load_stationary_operands, matmul_operands

ENGINE_NAMES = dict(zip(schema.ACTIVE_ENGINES, schema.INSTRUCTION_ENGINES))  # engine key -> Instruction.engine
FP8 = ("float8_e4m3", "float8_e5m2", "float8_e4m3fn")


def to_table(name: str, columns: dict) -> pa.Table:
    """An Arrow table with exactly the schema's columns; columns not given are all-null."""
    n = len(next(iter(columns.values()))) if columns else 0
    arrays = []
    for col in schema.TABLES[name]:
        values = columns.get(col.name)
        arrays.append(pa.nulls(n, col.type) if values is None else pa.array(values, type=col.type))
    return pa.Table.from_arrays(arrays, schema=schema.arrow_schema(name))


def ns(values) -> np.ndarray:
    """Float ns -> int64 ns (rounded)."""
    return np.rint(np.asarray(values, dtype=np.float64)).astype(np.int64)


def flop_factor(ins: Instruction, hw: Target) -> float:
    """bf16-equivalent FLOP weight: the TensorE cycle factor of fp32 (x4) and fp8 (x0.5 where double-row
    exists) operands, else x1."""
    a = ins.attrs
    dtypes = {a.get("dtype"), a.get("moving_dtype")}
    if a.get("fp32") or "float32" in dtypes:
        return hw.tensor_engine.fp32_cycle_factor
    if dtypes & set(FP8):
        return hw.tensor_engine.fp8_cycle_factor
    return 1.0


def _bytes(accesses) -> dict[str, int]:
    out = {"hbm": 0, "sbuf": 0, "psum": 0}
    for a in accesses:
        out[a.buffer] = out.get(a.buffer, 0) + a.nbytes
    return out


def _accumulates(tl: Timeline, i: int) -> bool:
    ins = tl.trace.instructions[i]
    acc = ins.attrs.get("accumulate")
    if acc is not None:
        return bool(acc)
    dst = ins.writes[0].tensor if ins.writes else None
    deps = tl.deps[i] if tl.deps else ()
    return any(
        OPS[tl.trace.instructions[j].opcode].kind == "matmul"
        and tl.trace.instructions[j].writes
        and tl.trace.instructions[j].writes[0].tensor == dst
        for j in deps
    )


_ATTRS_TEXT: dict = {}


def _attrs_text(ins: Instruction) -> str:
    key = tuple(ins.attrs.items())
    try:
        return _ATTRS_TEXT[key]
    except (KeyError, TypeError):
        pass
    text = " ".join(f"{k}={v}" for k, v in ins.attrs.items() if isinstance(v, int | float | str | bool) and v != "")
    try:
        if len(_ATTRS_TEXT) < 100_000:
            _ATTRS_TEXT[key] = text
    except TypeError:  # an unhashable attribute value
        pass
    return text


# Instruction-table columns filled per row (the rest come from per-row lists in instruction_table)
ROW_COLUMNS = (
    "operands",
    "compiler_operands",
    "hbm_read_bytes",
    "hbm_write_bytes",
    "sbuf_read_bytes",
    "sbuf_write_bytes",
    "psum_read_bytes",
    "psum_write_bytes",
    "psum_read_sbuf_write_bytes",
    "input_queue_bytes",
    "output_queue_bytes",
    "performance_mode",
    "tensor_instruction_type",
    "tensor_elements",
    "raw_flops",
    "adjusted_flops",
    "tensor_elements_transpose",
    "flops_transpose",
    "adjusted_flops_transpose",
    "scalar_activation_fn",
    "dma_trigger_start_ts",
    "dma_trigger_end_ts",
    "dma_wait_time_ns",
    "timeline_track",
)
_EMPTY = {name: 0 if name.endswith("_bytes") else None for name in ROW_COLUMNS}  # byte counts default to 0


def _row(**values) -> tuple:
    return tuple({**_EMPTY, **values}.values())


def instruction_table(tl: Timeline) -> pa.Table:
    rows, trace = tl.rows, tl.trace
    transfer_of_row = {r: k for k, r in enumerate(tl.transfers.row)}
    per_row = []
    for r, (i, opcode) in enumerate(zip(rows.ins, rows.opcode)):
        ins = trace.instructions[i]
        if opcode == schema.DMA_TRIGGER_OPCODE:
            per_row.append(_dma_row(tl, transfer_of_row[r]))
        elif ins.engine == "tensor":
            per_row.append(_tensor_row(tl, i, opcode))
        else:
            per_row.append(_compute_row(tl, i))
    columns = dict(zip(ROW_COLUMNS, (list(c) for c in zip(*per_row)))) if per_row else {}
    start, end = ns(rows.start), ns(rows.end)
    src = [trace.instructions[i] for i in rows.ins]
    ins_ids = [x.id for x in src]
    columns.update(
        {
            "start_ts": start,
            "end_ts": end,
            "duration_ns": end - start,
            "engine": [ENGINE_NAMES[e] for e in rows.engine],
            "pcore_idx": [x.program for x in src],
            "opcode": rows.opcode,
            "id": np.arange(len(rows), dtype=np.int64),
            "pc": rows.pc,
            "compiler_opcode": [x.opcode for x in src],
            "compiler_pc": ins_ids,
            "bir_id": [str(x) for x in ins_ids],
            "raw_bir_id": ins_ids,
            "bir_instruction_name": [f"{x.opcode}-{x.id}" for x in src],
            "kernel_instruction_name": [x.opcode for x in src],
            "evt_wait_time_ns": ns(rows.wait),
            "nki_source_location": [x.location for x in src],
            "bir_debug_info_source_location": [x.location for x in src],
            "spill_save_bytes": np.zeros(len(rows), dtype=np.int64),
            "spill_reload_bytes": np.zeros(len(rows), dtype=np.int64),
            "weight_queue_bytes": np.zeros(len(rows), dtype=np.int64),
        }
    )
    return to_table("Instruction", columns)


def _tensor_row(tl: Timeline, i: int, opcode: str) -> tuple:
    ins = tl.trace.instructions[i]
    a = ins.attrs
    transpose = OPS[ins.opcode].kind == "move" or bool(a.get("is_transpose"))  # a TensorE move is a transpose
    kind = "TRANSPOSE" if transpose else "REGULAR"
    if opcode == "LDWEIGHTS":
        stationary = [x for x in ins.reads if x.role in ("stationary", "data")] or ins.reads[:1]
        return _row(
            operands=load_stationary_operands(ins),
            compiler_operands=_attrs_text(ins),
            sbuf_read_bytes=sum(x.nbytes for x in stationary),
            hbm_read_bytes=0,
            hbm_write_bytes=0,
            tensor_instruction_type=kind,
            raw_flops=0,
            adjusted_flops=0,
            timeline_track="Tensor",
        )
    moving = [x for x in ins.reads if x.role == "moving"]
    flops = int(ins.flops)
    adjusted = int(flops * flop_factor(ins, tl.target))
    elements = a.get("K", ins.partitions) * a.get("N", ins.partitions)
    dst = ins.writes[0].nbytes if ins.writes else 0
    return _row(
        operands=matmul_operands(ins, _accumulates(tl, i)),
        compiler_operands=_attrs_text(ins),
        sbuf_read_bytes=sum(x.nbytes for x in moving),
        psum_write_bytes=dst,
        hbm_read_bytes=0,
        hbm_write_bytes=0,
        tensor_instruction_type=kind,
        tensor_elements=elements,
        raw_flops=flops,
        adjusted_flops=adjusted,
        tensor_elements_transpose=elements if transpose else 0,
        flops_transpose=flops if transpose else 0,
        adjusted_flops_transpose=adjusted if transpose else 0,
        timeline_track="Tensor",
    )


def _compute_row(tl: Timeline, i: int) -> tuple:
    ins = tl.trace.instructions[i]
    rd, wr = _bytes(ins.reads), _bytes(ins.writes)
    mode = tl.work[i].perf_mode if tl.work[i] is not None else 1.0
    return _row(
        operands=generic_operands(ins),
        compiler_operands=_attrs_text(ins),
        hbm_read_bytes=0,
        hbm_write_bytes=0,
        sbuf_read_bytes=rd["sbuf"],
        sbuf_write_bytes=wr["sbuf"],
        psum_read_bytes=rd["psum"],
        psum_write_bytes=wr["psum"],
        psum_read_sbuf_write_bytes=wr["sbuf"] if rd["psum"] else 0,
        performance_mode=f"{int(mode)}x" if mode > 1 else None,
        scalar_activation_fn=ins.attrs.get("func") if ins.engine == "scalar" else None,
        timeline_track=ENGINE_NAMES.get(ins.engine, ins.engine),
    )


def _dma_row(tl: Timeline, k: int) -> tuple:
    t = tl.transfers.plan[k]
    ins = tl.trace.instructions[tl.transfers.ins[k]]
    rd, wr = _bytes(ins.reads), _bytes(ins.writes)
    start, end = int(round(tl.transfers.start[k])), int(round(tl.transfers.end[k]))
    issued = int(round(tl.rows.end[tl.transfers.row[k]]))
    queue_type = QUEUES[t.queue][0]
    return _row(
        operands=f"{t.queue} " + generic_operands(ins),
        compiler_operands=_attrs_text(ins),
        hbm_read_bytes=t.hbm_read,
        hbm_write_bytes=t.hbm_write,
        sbuf_read_bytes=rd["sbuf"],
        sbuf_write_bytes=wr["sbuf"],
        psum_read_bytes=0,
        psum_write_bytes=0,
        input_queue_bytes=t.transfer_bytes if queue_type == "input" else 0,
        output_queue_bytes=t.transfer_bytes if queue_type == "output" else 0,
        dma_trigger_start_ts=start,
        dma_trigger_end_ts=end,
        dma_wait_time_ns=max(0, start - issued),
        timeline_track=t.queue,
    )


def _partitions(p) -> str:
    return "" if p is None else f"{p[0]}-{p[0] + p[1] - 1}"


def transfer_tables(tl: Timeline) -> dict[str, pa.Table]:
    """DmaPacketAggregated, DmaPacket and Flow."""
    tr, trace = tl.transfers, tl.trace
    n = len(tr)
    start, end = ns(tr.start), ns(tr.end)
    block_ids: dict[str, int] = {}
    block = []
    for t in tr.plan:
        block.append(block_ids.get(t.queue, 0))
        block_ids[t.queue] = block[-1] + 1
    srcs = [trace.instructions[i].reads[0] if trace.instructions[i].reads else trace.instructions[i].writes[0] for i in tr.ins]
    dsts = [trace.instructions[i].writes[0] for i in tr.ins]
    nbytes = np.asarray([t.transfer_bytes for t in tr.plan], dtype=np.int64)
    dur = np.maximum(end - start, 1)
    trig_start = ns(tl.rows.start[tr.row]) if n else np.zeros(0, np.int64)
    trig_end = ns(tl.rows.end[tr.row]) if n else np.zeros(0, np.int64)
    queue_idx = [QUEUES[t.queue][1] for t in tr.plan]
    dpa = {
        "start_ts": start,
        "end_ts": end,
        "duration_ns": end - start,
        "id": np.arange(n, dtype=np.int64),
        "pcore_idx": [trace.instructions[i].program for i in tr.ins],
        "block_id": block,
        "queue_idx": queue_idx,
        "queue_name": [t.queue for t in tr.plan],
        "queue_type": [QUEUES[t.queue][0] for t in tr.plan],
        "op": [t.op for t in tr.plan],
        "variable": [t.variable for t in tr.plan],
        "read_bytes": [t.read_bytes for t in tr.plan],
        "write_bytes": [t.write_bytes for t in tr.plan],
        "transfer_bytes": nbytes,
        "throughput": nbytes / dur * 1e9,
        "source": [t.source for t in tr.plan],
        "dest": [t.dest for t in tr.plan],
        "semaphore_id": [f"S[{q}] ({t.queue})" for q, t in zip(queue_idx, tr.plan)],
        "read_sbuf_partitions": [_partitions(t.read_partitions) for t in tr.plan],
        "read_num_sbuf_partitions": [t.read_partitions[1] if t.read_partitions else 0 for t in tr.plan],
        "read_shape": [str(list(a.shape)) for a in srcs],
        "read_offset": [f"[{a.byte_start:#x}]" for a in srcs],
        "read_steps": [f"[{a.contiguous_bytes}]" for a in srcs],
        "write_sbuf_partitions": [_partitions(t.write_partitions) for t in tr.plan],
        "write_num_sbuf_partitions": [t.write_partitions[1] if t.write_partitions else 0 for t in tr.plan],
        "write_shape": [str(list(a.shape)) for a in dsts],
        "write_offset": [f"[{a.byte_start:#x}]" for a in dsts],
        "write_steps": [f"[{a.contiguous_bytes}]" for a in dsts],
        "is_transpose_mode": [t.is_transpose for t in tr.plan],
        "transpose_shape": [str(list(a.shape)) if t.is_transpose else None for a, t in zip(dsts, tr.plan)],
        "transpose_from_shape": [str(list(a.shape)) if t.is_transpose else None for a, t in zip(srcs, tr.plan)],
        "transpose_to_shape": [str(list(a.shape)) if t.is_transpose else None for a, t in zip(dsts, tr.plan)],
        "transpose_element_size": [f"[{_itemsize(a.dtype)}]" if t.is_transpose else None for a, t in zip(srcs, tr.plan)],
        "trigger": trig_start,
        "completion": trig_end,
    }
    flow = {
        "in_id": np.asarray(tr.row, dtype=np.int64),
        "out_id": np.arange(n, dtype=np.int64),
        "in_table": [schema.FLOW_INSTRUCTION] * n,
        "out_table": [schema.FLOW_DMA] * n,
        "dependency_type": [schema.FLOW_DMA_TRIGGER] * n,
        "gap_time": start - trig_end,
    }
    return {"DmaPacketAggregated": to_table("DmaPacketAggregated", dpa), "DmaPacket": _packets(tl, dpa), "Flow": to_table("Flow", flow)}


def _packets(tl: Timeline, dpa: dict) -> pa.Table:
    pk = tl.packets
    n = len(pk)
    start, end = ns(pk.start), ns(pk.end)
    first = np.zeros(len(tl.transfers) + 1, dtype=np.int64)
    if n:
        counts = np.bincount(pk.transfer, minlength=len(tl.transfers))
        first[1:] = np.cumsum(counts)
    idx = np.arange(n, dtype=np.int64) - first[pk.transfer] if n else np.zeros(0, np.int64)
    by_transfer = {
        name: np.asarray(dpa[name], dtype=object)[pk.transfer] if n else []
        for name in ("queue_type", "variable", "queue_name", "pcore_idx")
    }
    cols = {
        "start_ts": start,
        "end_ts": end,
        "duration_ns": end - start,
        "id": np.arange(n, dtype=np.int64),
        "packet_idx": idx.astype(np.int32),
        "packet_aggregation_id": pk.transfer,
        "engine_idx": pk.engine,
        "read_bytes": pk.nbytes,
        "write_bytes": pk.nbytes,
        "transfer_bytes": pk.nbytes,
        "throughput": pk.nbytes / np.maximum(end - start, 1) * 1e9,
        "queue_type": list(by_transfer["queue_type"]),
        "variable": list(by_transfer["variable"]),
        "queue_name": list(by_transfer["queue_name"]),
        "pcore_idx": list(by_transfer["pcore_idx"]),
        "queue_idx": np.asarray(dpa["queue_idx"], dtype=np.int64)[pk.transfer] if n else [],
        "crc": np.zeros(n, dtype=np.int64),
    }
    return to_table("DmaPacket", cols)


def _itemsize(dtype: str) -> int:
    from nkidev.emulator.dtypes import DTYPES

    return DTYPES[dtype].itemsize if dtype in DTYPES else 4


def active_time_table(tl: Timeline) -> pa.Table:
    """Merged busy intervals per (core, compute engine); DMA triggers (sync) are left out, as in neuron-explorer."""
    engines = np.asarray(tl.rows.engine)
    programs = np.asarray([tl.trace.instructions[i].program for i in tl.rows.ins], dtype=np.int64)
    cols: dict[str, list] = {"start_ts": [], "end_ts": [], "engine": [], "pcore_idx": [], "duration_ns": []}
    for program in np.unique(programs):
        for engine in ("tensor", "vector", "scalar", "gpsimd"):
            mask = (engines == engine) & (programs == program)
            if not mask.any():
                continue
            s, e = merge(tl.rows.start[mask], tl.rows.end[mask])
            s, e = ns(s), ns(e)
            cols["start_ts"] += s.tolist()
            cols["end_ts"] += e.tolist()
            cols["duration_ns"] += (e - s).tolist()
            cols["engine"] += [engine] * len(s)
            cols["pcore_idx"] += [int(program)] * len(s)
    return to_table("ActiveTime", cols)


def tensor_info_table(tl: Timeline) -> pa.Table:
    loads: dict[int, list[int]] = {}
    for i, t in zip(tl.transfers.ins, tl.transfers.plan):
        ins = tl.trace.instructions[i]
        if t.op == "read":
            for a in ins.reads:
                if a.buffer == "hbm":  # each transfer loads a byte of the tensor once (a broadcast reads it P times)
                    loads.setdefault(a.tensor, []).append(min(a.nbytes, a.byte_stop - a.byte_start))
    cols: dict[str, list] = {
        k: []
        for k in (
            "variable_name",
            "type",
            "shape",
            "size",
            "node",
            "pcore_idx",
            "load_to_sbuf_avg_size_bytes",
            "load_to_sbuf_total_size_bytes",
            "load_to_sbuf_dma_count",
            "load_to_sbuf_repeat_factor",
        )
    }
    for rec in tl.trace.tensors.values():
        if rec.kind not in ("input", "output"):
            continue
        sizes = loads.get(rec.id, [])
        cols["variable_name"].append(rec.name)
        cols["type"].append(schema.TENSOR_IN if rec.kind == "input" else schema.TENSOR_OUT)
        cols["shape"].append(" ".join(map(str, rec.shape)))
        cols["size"].append(rec.nbytes)
        cols["node"].append(rec.id)
        cols["pcore_idx"].append(0)
        cols["load_to_sbuf_avg_size_bytes"].append(sum(sizes) // len(sizes) if sizes else None)
        cols["load_to_sbuf_total_size_bytes"].append(sum(sizes) if sizes else None)
        cols["load_to_sbuf_dma_count"].append(len(sizes) if sizes else None)
        cols["load_to_sbuf_repeat_factor"].append(sum(sizes) / rec.nbytes if sizes and rec.nbytes else None)
    return to_table("TensorInfo", cols)


def dma_queues_table(tl: Timeline) -> pa.Table:
    used = sorted({(tl.trace.instructions[i].program, t.queue) for i, t in zip(tl.transfers.ins, tl.transfers.plan)})
    return to_table(
        "DmaQueuesInfo",
        {
            "name": [q for _, q in used],
            "type": [QUEUES[q][0] for _, q in used],
            "pcore_idx": [p for p, _ in used],
            "idx": [QUEUES[q][1] for _, q in used],
            "engine_idx": [-1] * len(used),
            "axi_port": [-1] * len(used),
            "dram_channel": [-1] * len(used),
        },
    )
