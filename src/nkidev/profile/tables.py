"""Timeline -> the timeline tables of a profile: Instruction, DmaPacketAggregated, DmaPacket, Flow,
ActiveTime, TensorInfo, DmaQueuesInfo, Throttle and ThrottleSummary.

Nothing here runs Python per row. A row's static columns (operands text, byte counts, flops, ...) depend
only on its instruction's form (and for DMAs the transfer plan), so they are computed once per *row class*
and gathered with NumPy / Arrow `take`; times come from the timeline's arrays. The four big tables are
`LazyTable`s: built in chunks of rows when written or read, so a million-instruction profile never holds
a whole table (nor a Python object per row) in memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from nkidev.costmodel.deps import Deps
from nkidev.costmodel.dma import QUEUES
from nkidev.costmodel.intervals import merge
from nkidev.costmodel.timeline import Timeline
from nkidev.emulator.dtypes import DTYPES
from nkidev.emulator.ops import OPS
from nkidev.hardware import Target
from nkidev.profile import schema
from nkidev.profile.operands import generic_operands, load_stationary_operands, matmul_operands

ENGINE_NAMES = dict(zip(schema.ACTIVE_ENGINES, schema.INSTRUCTION_ENGINES))  # engine key -> Instruction.engine
FP8 = ("float8_e4m3", "float8_e5m2", "float8_e4m3fn")
CHUNK = 131_072  # rows per built chunk (and Parquet row group) of the big tables


def to_table(name: str, columns: dict) -> pa.Table:
    """An Arrow table with exactly the schema's columns; columns not given are all-null."""
    return pa.Table.from_batches([_batch(name, columns)], schema=schema.arrow_schema(name))


def _batch(name: str, columns: dict, n: int | None = None) -> pa.RecordBatch:
    if n is None:
        n = len(next(iter(columns.values()))) if columns else 0
    arrays = []
    for col in schema.TABLES[name]:
        values = columns.get(col.name)
        if values is None:
            arrays.append(pa.nulls(n, col.type))
        elif isinstance(values, pa.Array | pa.ChunkedArray):
            arrays.append(values if values.type == col.type else values.cast(col.type))
        else:
            arrays.append(pa.array(values, type=col.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema.arrow_schema(name))


class LazyTable:
    """A profile table built on demand from `build(rows, names) -> {column: values}` (`rows`: int64 row
    numbers; `names`: the columns wanted). Reads like a small part of `pa.Table`: `num_rows`, `schema`,
    `column(name)`, `take(rows, names)`, `to_table()`; `batches()` yields it in chunks (the writer streams them)."""

    def __init__(self, name: str, num_rows: int, build: Callable[[np.ndarray, Sequence[str]], dict]):
        self.name = name
        self.num_rows = num_rows
        self.schema = schema.arrow_schema(name)
        self._build = build

    @property
    def column_names(self) -> list[str]:
        return self.schema.names

    def take(self, rows, names: Sequence[str] | None = None) -> pa.Table:
        """The given rows (row numbers) and columns, as a pa.Table with this table's column types."""
        names = list(names) if names is not None else self.column_names
        fields = [self.schema.field(n) for n in names]
        arrays = self.arrays(rows, names)
        columns = [v if v.type == f.type else v.cast(f.type) for v, f in zip(arrays.values(), fields)]
        return pa.Table.from_arrays(columns, schema=pa.schema(fields))

    def arrays(self, rows, names: Sequence[str]) -> dict[str, pa.Array]:
        """The given rows of columns `names` as Arrow arrays of the column types, except that strings the builder
        gathers from a few distinct values stay dictionary arrays (for readers that work per distinct value)."""
        rows = np.asarray(rows, dtype=np.int64)
        cols = self._build(rows, list(names))
        out = {}
        for name in names:
            f = self.schema.field(name)
            v = cols.get(name)
            if v is None:
                out[name] = pa.nulls(len(rows), f.type)
            elif isinstance(v, pa.Array | pa.ChunkedArray):
                out[name] = v if v.type == f.type or pa.types.is_dictionary(v.type) else v.cast(f.type)
            else:
                out[name] = pa.array(v, type=f.type)
        return out

    def batches(self, chunk: int = CHUNK, names: Sequence[str] | None = None) -> Iterator[pa.Table]:
        for lo in range(0, self.num_rows, chunk):
            yield self.take(np.arange(lo, min(self.num_rows, lo + chunk), dtype=np.int64), names)

    def pieces(self, name: str, chunk: int = CHUNK) -> Iterator[np.ndarray | pa.Array]:
        """One column a chunk at a time, as the builder makes it (NumPy for plain numbers, Arrow otherwise;
        a missing column is all-null Arrow): for readers that want NumPy without an Arrow round trip."""
        for part in self.parts([name], chunk):
            yield part[name]

    def parts(self, names: Sequence[str], chunk: int = CHUNK) -> Iterator[dict[str, np.ndarray | pa.Array]]:
        """Columns `names` a chunk at a time as `pieces` gives them, built together (what rows share, such as a
        packet's plan lookup, is computed once per chunk)."""
        for lo in range(0, self.num_rows, chunk):
            rows = np.arange(lo, min(self.num_rows, lo + chunk), dtype=np.int64)
            built = self._build(rows, list(names))
            yield {n: pa.nulls(len(rows), self.schema.field(n).type) if built.get(n) is None else built[n] for n in names}

    def column(self, name: str) -> pa.ChunkedArray:
        chunks = [t.column(0) for t in self.batches(names=[name])]
        if not chunks:
            return pa.chunked_array([], type=self.schema.field(name).type)
        return pa.chunked_array([c for ch in chunks for c in ch.chunks], type=self.schema.field(name).type)

    def to_table(self) -> pa.Table:
        parts = list(self.batches())
        return pa.concat_tables(parts) if parts else self.schema.empty_table()


def gather(values: pa.Array, codes: pa.Array) -> pa.Array:
    """`values.take(codes)`; for strings a dictionary array over `values` instead (no copy of the text: readers
    that count or compare strings use the codes, and `LazyTable.take` casts it to the schema's plain string)."""
    if pa.types.is_string(values.type):
        return pa.DictionaryArray.from_arrays(codes.cast(pa.int32()), values)
    return values.take(codes)


def ns(values) -> np.ndarray:
    """Float ns -> int64 ns (rounded)."""
    return np.rint(np.asarray(values, dtype=np.float64)).astype(np.int64)


def flop_factor(ins, hw: Target) -> float:
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


def _attrs_text(attrs: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in attrs.items() if isinstance(v, int | float | str | bool) and v != "")


# Instruction-table columns that depend only on the row class (form and row kind; a DMA's plan)
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
    "timeline_track",
)
_EMPTY = {name: 0 if name.endswith("_bytes") else None for name in ROW_COLUMNS}  # byte counts default to 0
LDWEIGHTS_ROW, MATMUL_RESET, MATMUL_ACCUMULATE = 0, 1, 2  # row variants of Tensor Engine instructions


def _row(**values) -> tuple:
    return tuple({**_EMPTY, **values}.values())


def _tensor_row(f, variant: int, hw: Target) -> tuple:
    a = f.attrs
    transpose = OPS[f.opcode].kind == "move" or bool(a.get("is_transpose"))  # a TensorE move is a transpose
    kind = "TRANSPOSE" if transpose else "REGULAR"
    if variant == LDWEIGHTS_ROW:
        stationary = [x for x in f.reads if x.role in ("stationary", "data")] or f.reads[:1]
        return _row(
            operands=load_stationary_operands(f),
            compiler_operands=_attrs_text(a),
            sbuf_read_bytes=sum(x.nbytes for x in stationary),
            tensor_instruction_type=kind,
            raw_flops=0,
            adjusted_flops=0,
            timeline_track="Tensor",
        )
    moving = [x for x in f.reads if x.role == "moving"]
    flops = int(f.flops)
    adjusted = int(flops * flop_factor(f, hw))
    elements = a.get("K", f.partitions) * a.get("N", f.partitions)
    return _row(
        operands=matmul_operands(f, variant == MATMUL_ACCUMULATE),
        compiler_operands=_attrs_text(a),
        sbuf_read_bytes=sum(x.nbytes for x in moving),
        psum_write_bytes=f.writes[0].nbytes if f.writes else 0,
        tensor_instruction_type=kind,
        tensor_elements=elements,
        raw_flops=flops,
        adjusted_flops=adjusted,
        tensor_elements_transpose=elements if transpose else 0,
        flops_transpose=flops if transpose else 0,
        adjusted_flops_transpose=adjusted if transpose else 0,
        timeline_track="Tensor",
    )


def _compute_row(f, work) -> tuple:
    rd, wr = _bytes(f.reads), _bytes(f.writes)
    mode = work.perf_mode if work is not None else 1.0
    return _row(
        operands=generic_operands(f),
        compiler_operands=_attrs_text(f.attrs),
        sbuf_read_bytes=rd["sbuf"],
        sbuf_write_bytes=wr["sbuf"],
        psum_read_bytes=rd["psum"],
        psum_write_bytes=wr["psum"],
        psum_read_sbuf_write_bytes=wr["sbuf"] if rd["psum"] else 0,
        performance_mode=f"{int(mode)}x" if mode > 1 else None,
        scalar_activation_fn=f.attrs.get("func") if f.engine == "scalar" else None,
        timeline_track=ENGINE_NAMES.get(f.engine, f.engine),
    )


def _dma_row(f, t) -> tuple:
    rd, wr = _bytes(f.reads), _bytes(f.writes)
    queue_type = QUEUES[t.queue][0]
    return _row(
        operands=f"{t.queue} " + generic_operands(f),
        compiler_operands=_attrs_text(f.attrs),
        hbm_read_bytes=t.hbm_read,
        hbm_write_bytes=t.hbm_write,
        sbuf_read_bytes=rd["sbuf"],
        sbuf_write_bytes=wr["sbuf"],
        input_queue_bytes=t.transfer_bytes if queue_type == "input" else 0,
        output_queue_bytes=t.transfer_bytes if queue_type == "output" else 0,
        timeline_track=t.queue,
    )


def _accumulates(tl: Timeline, positions: np.ndarray) -> np.ndarray:
    """Whether each Tensor Engine instruction continues an accumulation group: its `accumulate` attribute, else
    whether it depends on a matmul writing the same PSUM tile (vectorized over the dependency edges)."""
    trace = tl.trace
    forms = trace.forms
    cols = trace.columns()
    n_reads = np.array([len(f.reads) for f in forms] or [0], dtype=np.int64)
    has_write = np.array([bool(f.writes) for f in forms] or [False])
    is_matmul = np.array([OPS[f.opcode].kind == "matmul" for f in forms] or [False])
    attr = np.array([-1 if f.attrs.get("accumulate") is None else int(bool(f.attrs["accumulate"])) for f in forms] or [-1], dtype=np.int8)
    form = cols.form.astype(np.int64)
    first_write = np.where(has_write[form], cols.acc_tensor[np.minimum(cols.acc_start + n_reads[form], len(cols.acc_tensor) - 1)], -1)
    out = attr[form[positions]] == 1
    open_ = np.flatnonzero(attr[form[positions]] == -1)  # no attribute: look at the dependencies
    deps = tl.deps
    if len(open_) and isinstance(deps, Deps):
        cons = positions[open_]
        counts = deps.start[cons + 1] - deps.start[cons]
        edge = np.repeat(deps.start[cons], counts) + (np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts))
        producer = deps.src[edge]
        owner = np.repeat(np.arange(len(cons)), counts)
        dst = first_write[cons]
        hit = is_matmul[form[producer]] & has_write[form[producer]] & (first_write[producer] == dst[owner]) & (dst[owner] >= 0)
        out[open_] = np.bincount(owner[hit], minlength=len(cons)) > 0
    elif len(open_):  # hand-made timelines with plain lists of deps
        for k in open_.tolist():
            i = int(positions[k])
            dst = first_write[i]
            out[k] = dst >= 0 and any(
                is_matmul[form[j]] and has_write[form[j]] and first_write[j] == dst for j in (deps[i] if deps else ())
            )
    return out


class _InstructionRows:
    """Row classes of the Instruction table and the per-row facts that are not per class."""

    def __init__(self, tl: Timeline):
        rows, trace = tl.rows, tl.trace
        cols = trace.columns()
        forms = trace.forms
        self.tl = tl
        self.n = len(rows)
        ins = np.asarray(rows.ins, dtype=np.int64)
        self.ins = ins
        form = cols.form.astype(np.int64)
        row_form = form[ins] if self.n else np.zeros(0, np.int64)
        is_tensor = np.array([f.engine == "tensor" for f in forms] or [False])[row_form]
        is_dma = np.array([f.engine == "dma" for f in forms] or [False])[row_form]
        second = np.zeros(self.n, dtype=bool)
        second[1:] = is_tensor[1:] & (ins[1:] == ins[:-1])
        variant = np.where(second, MATMUL_RESET, LDWEIGHTS_ROW)
        mm = np.flatnonzero(second)
        if len(mm):
            variant[mm] += _accumulates(tl, ins[mm]).astype(np.int64)
        tr = tl.transfers
        transfer_of_ins = np.full(len(trace), -1, dtype=np.int64)
        transfer_of_ins[np.asarray(tr.ins[: tr.issued], dtype=np.int64)] = np.arange(tr.issued)  # not the spill DMAs
        self.transfer = np.where(is_dma, transfer_of_ins[ins] if self.n else -1, -1)
        plan_code = tr.plan_code if tr.plan_code is not None else np.arange(len(tr))
        plans = tr.plans if tr.plans is not None else tr.plan
        key = np.where(is_dma, -1 - plan_code[np.maximum(self.transfer, 0)] if len(tr) else -1, row_form * 3 + variant)
        uniq, first, self.cls = np.unique(key, return_index=True, return_inverse=True)
        self.cls = self.cls.reshape(-1)
        values = []
        for k, r in zip(uniq.tolist(), first.tolist()):
            if k < 0:
                values.append(_dma_row(forms[row_form[r]], plans[-1 - k]))
            elif is_tensor[r]:
                values.append(_tensor_row(forms[k // 3], k % 3, tl.target))
            else:
                values.append(_compute_row(forms[k // 3], tl.work[ins[r]]))
        by_column = list(zip(*values)) if values else [() for _ in ROW_COLUMNS]
        types = {c.name: c.type for c in schema.TABLES["Instruction"]}
        self.class_values = {name: pa.array(list(v), type=types[name]) for name, v in zip(ROW_COLUMNS, by_column)}
        # a row class also fixes the row's opcode and engine
        self.class_values["opcode"] = pa.array([rows.opcode[r] for r in first.tolist()], type=pa.string())
        self.class_values["engine"] = pa.array([ENGINE_NAMES[rows.engine[r]] for r in first.tolist()], type=pa.string())
        self.cls = self.cls.astype(np.int32)
        self.nki = pa.array([f.opcode for f in forms], type=pa.string())
        self.locations = pa.array(trace.locations, type=pa.string())
        self.cols = cols
        self.rows = rows
        if len(tr):
            self.t_start, self.t_end = ns(tr.start), ns(tr.end)
            self.issued = ns(np.asarray(rows.end)[np.asarray(tr.row, dtype=np.int64)])
        self.spill_save, self.spill_reload = _spill_bytes(tl, ins)

    def build(self, r: np.ndarray, names: Sequence[str]) -> dict:
        i = self.ins[r]
        cols, rows = self.cols, self.rows
        out = {}
        wanted = set(names)
        take = pa.array(self.cls[r])
        for name in wanted & self.class_values.keys():
            out[name] = gather(self.class_values[name], take)
        if wanted & {"dma_trigger_start_ts", "dma_trigger_end_ts", "dma_wait_time_ns"}:
            k = self.transfer[r]
            dma = k >= 0
            kk = np.maximum(k, 0)
            if dma.any():
                s, e = self.t_start[kk], self.t_end[kk]
                out["dma_trigger_start_ts"] = pa.array(s, mask=~dma)
                out["dma_trigger_end_ts"] = pa.array(e, mask=~dma)
                out["dma_wait_time_ns"] = pa.array(np.maximum(0, s - self.issued[kk]), mask=~dma)
        ids = cols.id[i]
        simple = {
            "start_ts": lambda: ns(rows.start[r]),
            "end_ts": lambda: ns(rows.end[r]),
            "duration_ns": lambda: ns(rows.end[r]) - ns(rows.start[r]),
            "pcore_idx": lambda: cols.program[i],
            "id": lambda: r,
            "pc": lambda: np.asarray(rows.pc)[r],
            "compiler_opcode": lambda: gather(self.nki, pa.array(cols.form[i])),
            "compiler_pc": lambda: ids,
            "bir_id": lambda: pa.array(ids).cast(pa.string()),
            "raw_bir_id": lambda: ids,
            "bir_instruction_name": lambda: pc.binary_join_element_wise(
                self.nki.take(pa.array(cols.form[i])), pa.array(ids).cast(pa.string()), "-"
            ),
            "kernel_instruction_name": lambda: gather(self.nki, pa.array(cols.form[i])),
            "evt_wait_time_ns": lambda: ns(rows.wait[r]),
            "nki_source_location": lambda: gather(self.locations, pa.array(cols.location[i])),
            "bir_debug_info_source_location": lambda: gather(self.locations, pa.array(cols.location[i])),
            "spill_save_bytes": lambda: self._spilled(self.spill_save, r),
            "spill_reload_bytes": lambda: self._spilled(self.spill_reload, r),
            "weight_queue_bytes": lambda: np.zeros(len(r), dtype=np.int64),
        }
        for name in wanted & simple.keys():
            out[name] = simple[name]()
        return out

    @staticmethod
    def _spilled(per_row: np.ndarray | None, r: np.ndarray) -> np.ndarray:
        return np.zeros(len(r), dtype=np.int64) if per_row is None else per_row[r]


def _spill_bytes(tl: Timeline, ins: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Per Instruction row, the bytes the compiler's spills store to HBM and load back (Trace.spills).

    neuron-explorer's spill_save_bytes / spill_reload_bytes are the intermediate data spilled from SBUF into device
    memory and reloaded into SBUF (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/deep-dives/nki_perf_guide.html),
    so a PSUM tile evicted to SBUF is not counted. A save follows the tensor's last access before the gap: it is
    charged to that instruction's last row (an nc_matmul's MATMUL, after its LDWEIGHTS); a reload precedes the
    next access: charged to that instruction's first row. None, None without spills (no whole-table column held)."""
    spills = [sp for sp in tl.trace.spills if sp.to == "hbm" and sp.store_after is not None and sp.reload_before is not None]
    if not spills or not len(ins):
        return None, None
    save, reload = np.zeros(len(ins), dtype=np.int64), np.zeros(len(ins), dtype=np.int64)
    ids = tl.trace.columns().id.astype(np.int64)  # trace position -> the instruction id a Spill names
    order = np.argsort(ids, kind="stable")
    position = order[np.searchsorted(ids, np.array([[sp.store_after, sp.reload_before] for sp in spills]), sorter=order)]
    rows = np.arange(len(ins), dtype=np.int64)
    first, last = np.full(len(ids), len(ins), dtype=np.int64), np.full(len(ids), -1, dtype=np.int64)
    np.minimum.at(first, ins, rows)
    np.maximum.at(last, ins, rows)
    nbytes = np.array([sp.nbytes for sp in spills], dtype=np.int64)
    saved_on, reloaded_on = last[position[:, 0]], first[position[:, 1]]
    has_rows = (saved_on >= 0) & (reloaded_on < len(ins))  # every instruction has a row; never charge a wrong one
    np.add.at(save, saved_on[has_rows], nbytes[has_rows])
    np.add.at(reload, reloaded_on[has_rows], nbytes[has_rows])
    return save, reload


def _distinct(values: list) -> list:
    return list(dict.fromkeys(values))


def instruction_table(tl: Timeline) -> LazyTable:
    rows = _InstructionRows(tl)
    return LazyTable("Instruction", rows.n, rows.build)


def _partitions(p) -> str:
    return "" if p is None else f"{p[0]}-{p[0] + p[1] - 1}"


def _itemsize(dtype: str) -> int:
    return DTYPES[dtype].itemsize if dtype in DTYPES else 4


def _plan_columns(tl: Timeline) -> dict[str, list]:
    """DmaPacketAggregated columns that depend only on the transfer's plan (its form and tensors)."""
    tr = tl.transfers
    plans = tr.plans if tr.plans is not None else tr.plan
    forms = tl.trace.forms
    cols = tl.trace.columns()
    code = tr.plan_code if tr.plan_code is not None else np.arange(len(tr))
    first = np.full(len(plans), -1, dtype=np.int64)
    first[code[::-1]] = np.arange(len(tr))[::-1]  # a transfer of each plan
    out: dict[str, list] = {}
    for p, k in zip(plans, first.tolist()):
        f = p.form if p.form is not None else forms[cols.form[int(tr.ins[k])]]  # a spill DMA's own form
        src, dst = (f.reads or f.writes)[0], f.writes[0]
        q = QUEUES[p.queue][1]
        row = {
            "block_id": None,
            "queue_idx": q,
            "queue_name": p.queue,
            "queue_type": QUEUES[p.queue][0],
            "op": p.op,
            "variable": p.variable,
            "read_bytes": p.read_bytes,
            "write_bytes": p.write_bytes,
            "transfer_bytes": p.transfer_bytes,
            "source": p.source,
            "dest": p.dest,
            "semaphore_id": f"S[{q}] ({p.queue})",
            "read_sbuf_partitions": _partitions(p.read_partitions),
            "read_num_sbuf_partitions": p.read_partitions[1] if p.read_partitions else 0,
            "read_shape": str(list(src.shape)),
            "read_offset": f"[{src.byte_start:#x}]",
            "read_steps": f"[{src.contiguous_bytes}]",
            "write_sbuf_partitions": _partitions(p.write_partitions),
            "write_num_sbuf_partitions": p.write_partitions[1] if p.write_partitions else 0,
            "write_shape": str(list(dst.shape)),
            "write_offset": f"[{dst.byte_start:#x}]",
            "write_steps": f"[{dst.contiguous_bytes}]",
            "is_transpose_mode": p.is_transpose,
            "transpose_shape": str(list(dst.shape)) if p.is_transpose else None,
            "transpose_from_shape": str(list(src.shape)) if p.is_transpose else None,
            "transpose_to_shape": str(list(dst.shape)) if p.is_transpose else None,
            "transpose_element_size": f"[{_itemsize(src.dtype)}]" if p.is_transpose else None,
        }
        for name, v in row.items():
            out.setdefault(name, []).append(v)
    return out


class _Transfers:
    """Per-transfer facts of DmaPacketAggregated and Flow."""

    def __init__(self, tl: Timeline):
        tr = tl.transfers
        self.n = len(tr)
        self.code = tr.plan_code if tr.plan_code is not None else np.arange(self.n)
        self.start, self.end = ns(tr.start), ns(tr.end)
        row = np.asarray(tr.row, dtype=np.int64)
        self.row = row
        self.trig_start = ns(np.asarray(tl.rows.start)[row]) if self.n else np.zeros(0, np.int64)
        self.trig_end = ns(np.asarray(tl.rows.end)[row]) if self.n else np.zeros(0, np.int64)
        self.program = tl.trace.columns().program.astype(np.int64)[np.asarray(tr.ins, dtype=np.int64)]
        types = {c.name: c.type for c in schema.TABLES["DmaPacketAggregated"]}
        per_plan = _plan_columns(tl) if self.n else {}
        self.per_plan = {k: pa.array(v, type=types[k]) for k, v in per_plan.items() if k != "block_id"}
        # block_id: the transfer's index within its queue, in program order
        queue_code = {q: k for k, q in enumerate(dict.fromkeys(p.queue for p in (tr.plans if tr.plans is not None else tr.plan)))}
        plan_queue = np.array([queue_code[p.queue] for p in (tr.plans if tr.plans is not None else tr.plan)] or [0], dtype=np.int64)
        self.queue_of = plan_queue[self.code] if self.n else np.zeros(0, np.int64)
        by_queue = np.argsort(self.queue_of, kind="stable")
        sq = self.queue_of[by_queue]
        heads = np.r_[0, np.flatnonzero(sq[1:] != sq[:-1]) + 1] if self.n else np.zeros(0, np.int64)
        rank = np.arange(self.n) - np.repeat(heads, np.diff(np.r_[heads, self.n]))
        self.block = np.empty(self.n, dtype=np.int64)
        self.block[by_queue] = rank

    def build_dpa(self, r: np.ndarray, names: Sequence[str]) -> dict:
        take = pa.array(self.code[r])
        out = {name: gather(self.per_plan[name], take) for name in names if name in self.per_plan}
        start, end = self.start[r], self.end[r]
        nbytes = np.asarray(self.per_plan["transfer_bytes"].take(take)) if "throughput" in names else None
        simple = {
            "start_ts": lambda: start,
            "end_ts": lambda: end,
            "duration_ns": lambda: end - start,
            "id": lambda: r,
            "pcore_idx": lambda: self.program[r],
            "block_id": lambda: self.block[r],
            "throughput": lambda: nbytes / np.maximum(end - start, 1) * 1e9,
            "trigger": lambda: self.trig_start[r],
            "completion": lambda: self.trig_end[r],
        }
        for name in set(names) & simple.keys():
            out[name] = simple[name]()
        return out

    def build_flow(self, r: np.ndarray, names: Sequence[str]) -> dict:
        n = len(r)
        return {
            "in_id": self.row[r],
            "out_id": r,
            "in_table": pa.array([schema.FLOW_INSTRUCTION], pa.string()).take(pa.array(np.zeros(n, np.int64))),
            "out_table": pa.array([schema.FLOW_DMA], pa.string()).take(pa.array(np.zeros(n, np.int64))),
            "dependency_type": pa.array([schema.FLOW_DMA_TRIGGER], pa.string()).take(pa.array(np.zeros(n, np.int64))),
            "gap_time": self.start[r] - self.trig_end[r],
        }


class _Packets:
    def __init__(self, tl: Timeline, transfers: _Transfers):
        pk = tl.packets
        self.n = len(pk)
        self.pk = pk
        self.tr = transfers
        first = np.zeros(len(tl.transfers) + 1, dtype=np.int64)
        if self.n:
            np.cumsum(np.bincount(pk.transfer, minlength=len(tl.transfers)), out=first[1:])
        self.first = first

    def build(self, r: np.ndarray, names: Sequence[str]) -> dict:
        pk, tr = self.pk, self.tr
        t = np.asarray(pk.transfer[r], dtype=np.int64)
        take = pa.array(tr.code[t]) if len(t) else pa.array([], pa.int64())
        wanted = set(names)
        start = ns(pk.start[r])
        if wanted & {"end_ts", "duration_ns", "engine_idx", "read_bytes", "write_bytes", "transfer_bytes", "throughput"}:
            engine, nbytes, end = pk.at(r)  # computed from the plans: only when asked for
            end = ns(end)
        simple = {
            "start_ts": lambda: start,
            "end_ts": lambda: end,
            "duration_ns": lambda: end - start,
            "id": lambda: r,
            "packet_idx": lambda: (r - self.first[t]).astype(np.int32),
            "packet_aggregation_id": lambda: t,
            "engine_idx": lambda: engine.astype(np.int64),
            "read_bytes": lambda: nbytes,
            "write_bytes": lambda: nbytes,
            "transfer_bytes": lambda: nbytes,
            "throughput": lambda: nbytes / np.maximum(end - start, 1) * 1e9,
            "queue_type": lambda: gather(tr.per_plan["queue_type"], take),
            "variable": lambda: gather(tr.per_plan["variable"], take),
            "queue_name": lambda: gather(tr.per_plan["queue_name"], take),
            "pcore_idx": lambda: tr.program[t],
            "queue_idx": lambda: np.asarray(tr.per_plan["queue_idx"].take(take), dtype=np.int64),
            "crc": lambda: np.zeros(len(r), dtype=np.int64),
        }
        return {name: simple[name]() for name in wanted & simple.keys()}


def transfer_tables(tl: Timeline) -> dict[str, LazyTable]:
    """DmaPacketAggregated, DmaPacket and Flow."""
    tr = _Transfers(tl)
    pk = _Packets(tl, tr)
    return {
        "DmaPacketAggregated": LazyTable("DmaPacketAggregated", tr.n, tr.build_dpa),
        "DmaPacket": LazyTable("DmaPacket", pk.n, pk.build),
        "Flow": LazyTable("Flow", tr.n, tr.build_flow),
    }


def active_time_table(tl: Timeline) -> pa.Table:
    """Merged busy intervals per (core, compute engine); DMA triggers (sync) are left out, as in neuron-explorer."""
    names = _distinct(tl.rows.engine)
    code = {e: k for k, e in enumerate(names)}
    engines = np.array([code[e] for e in tl.rows.engine], dtype=np.int8) if len(tl.rows) else np.zeros(0, np.int8)
    programs = tl.trace.columns().program.astype(np.int64)[np.asarray(tl.rows.ins, dtype=np.int64)]
    parts: dict[str, list] = {"start_ts": [], "end_ts": [], "engine": [], "pcore_idx": []}
    for program in np.unique(programs):
        for engine in ("tensor", "vector", "scalar", "gpsimd"):
            mask = (engines == code.get(engine, -1)) & (programs == program)
            if not mask.any():
                continue
            s, e = merge(tl.rows.start[mask], tl.rows.end[mask])
            parts["start_ts"].append(ns(s))
            parts["end_ts"].append(ns(e))
            parts["engine"].append(np.full(len(s), engine, dtype=object))
            parts["pcore_idx"].append(np.full(len(s), int(program), dtype=np.int64))
    cols = {k: np.concatenate(v) if v else [] for k, v in parts.items()}
    if parts["start_ts"]:
        cols["duration_ns"] = cols["end_ts"] - cols["start_ts"]
    return to_table("ActiveTime", cols)


def _hbm_loads(tl: Timeline) -> dict[int, tuple[int, int]]:
    """Storage id -> (bytes, reads) of the HBM reads of DMA transfers that load (op == "read")."""
    tr = tl.transfers
    if not len(tr):
        return {}
    trace = tl.trace
    forms, cols = trace.forms, trace.columns()
    plans = tr.plans if tr.plans is not None else tr.plan
    code = tr.plan_code if tr.plan_code is not None else np.arange(len(tr))
    is_read = np.array([p.op == "read" for p in plans], dtype=bool)[code[: tr.issued]]  # spill reloads load no input
    ins = np.asarray(tr.ins[: tr.issued], dtype=np.int64)[is_read]
    tensors, sizes = [], []
    uniq, inverse = np.unique(cols.form[ins], return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(len(uniq) + 1))
    for g, f_code in enumerate(uniq.tolist()):
        sel = ins[order[bounds[g] : bounds[g + 1]]]
        for k, a in enumerate(forms[f_code].reads):
            if a.buffer == "hbm":  # each transfer loads a byte of the tensor once (a broadcast reads it P times)
                tensors.append(cols.acc_tensor[cols.acc_start[sel] + k])
                sizes.append(np.full(len(sel), min(a.nbytes, a.byte_stop - a.byte_start), dtype=np.int64))
    if not tensors:
        return {}
    t, s = np.concatenate(tensors), np.concatenate(sizes)
    uniq, inv = np.unique(t, return_inverse=True)
    total = np.bincount(inv, weights=s).astype(np.int64)
    count = np.bincount(inv)
    return {int(u): (int(b), int(c)) for u, b, c in zip(uniq, total, count)}


def tensor_info_table(tl: Timeline) -> pa.Table:
    loads = _hbm_loads(tl)
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
    tab = tl.trace.tensors
    kinds, strings = tab.codes("kind")
    io = {k for k, s in enumerate(strings) if s in ("input", "output")}
    ids = tab.column("id")
    for row in np.flatnonzero(np.isin(kinds, list(io))).tolist():
        rec = tab[int(ids[row])]
        total, count = loads.get(rec.id, (0, 0))
        cols["variable_name"].append(rec.name)
        cols["type"].append(schema.TENSOR_IN if rec.kind == "input" else schema.TENSOR_OUT)
        cols["shape"].append(" ".join(map(str, rec.shape)))
        cols["size"].append(rec.nbytes)
        cols["node"].append(rec.id)
        cols["pcore_idx"].append(0)
        cols["load_to_sbuf_avg_size_bytes"].append(total // count if count else None)
        cols["load_to_sbuf_total_size_bytes"].append(total if count else None)
        cols["load_to_sbuf_dma_count"].append(count if count else None)
        cols["load_to_sbuf_repeat_factor"].append(total / rec.nbytes if count and rec.nbytes else None)
    return to_table("TensorInfo", cols)


def dma_queues_table(tl: Timeline) -> pa.Table:
    tr = tl.transfers
    plans = tr.plans if tr.plans is not None else tr.plan
    code = tr.plan_code if tr.plan_code is not None else np.arange(len(tr))
    programs = tl.trace.columns().program.astype(np.int64)[np.asarray(tr.ins, dtype=np.int64)]
    n_plans = max(len(plans), 1)
    pairs = np.unique(programs * n_plans + code) if len(tr) else np.zeros(0, np.int64)  # one int per (core, plan)
    used = sorted({(p, plans[c].queue) for p, c in (divmod(int(k), n_plans) for k in pairs)})
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


def throttle_steps(tl: Timeline, total_ns: float) -> dict[str, np.ndarray]:
    """The Throttle rows as columns: each interval of the TensorE dI/dt limit (Timeline.throttled) cut into the
    schema's THROTTLE_STEPS equal parts of a whole ramp, clipped to the kernel's end, each at the limit of its
    midpoint in 1/THROTTLE_LEVELS (hardware reports its limit as steps k/n; the model's ramp is linear)."""
    th = tl.throttled
    step = th.ramp_ns / schema.THROTTLE_STEPS
    lo = th.start[:, None] + step * np.arange(schema.THROTTLE_STEPS)[None, :]
    hi = np.minimum(np.minimum(lo + step, th.end[:, None]), total_ns)
    row = np.broadcast_to(np.arange(len(th))[:, None], lo.shape)
    start, stop = ns(lo), ns(hi)
    keep = stop > start  # steps past the interval's end or the kernel's: none
    row, lo, hi, start, stop = row[keep], lo[keep], hi[keep], start[keep], stop[keep]
    limit = th.limit_at(row, (lo + hi) / 2)
    return {
        "timestamp": start,
        "duration": stop - start,
        "k": np.rint(limit * schema.THROTTLE_LEVELS).astype(np.int64),
        "n": np.full(len(start), schema.THROTTLE_LEVELS, dtype=np.int64),
        "core": th.core[row],
    }


def throttle_table(steps: dict[str, np.ndarray]) -> pa.Table:
    return to_table(
        "Throttle",
        {
            "duration": steps["duration"],
            "k": steps["k"],
            "n": steps["n"],
            "timestamp": steps["timestamp"],
            "type": [schema.THROTTLE_TYPE] * len(steps["timestamp"]),
            "pcore_idx": steps["core"],
        },
    )


def throttle_summary_table(steps: dict[str, np.ndarray], total_ns: float) -> pa.Table:
    """Per NeuronCore that was throttled: a row for nkidev's one kind ('didt') and the 'all' row, which equals it."""
    cols: dict[str, list] = {n: [] for n in schema.column_names("ThrottleSummary")}
    for core in np.unique(steps["core"]).tolist():
        mine = steps["core"] == core
        time = int(steps["duration"][mine].sum())
        mean = float((steps["k"][mine] / steps["n"][mine] * steps["duration"][mine]).sum() / time) if time else 1.0
        for kind in (schema.THROTTLE_TYPE, schema.THROTTLE_ALL):
            cols["nc_idx"].append(core)
            cols["throttle_type"].append(kind)
            cols["throttle_active_time_ns"].append(time)
            cols["throttle_active_time_percent"].append(100.0 * time / total_ns if total_ns > 0 else 0.0)
            cols["max_achievable_util_with_throttling_percent"].append(mean)
    return to_table("ThrottleSummary", cols)
