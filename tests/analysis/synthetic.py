"""Build small profile directories by hand, in neuron-explorer's table layout.

Tests and benchmarks use this to make profiles whose bounds and findings are known in advance:
`ProfileBuilder` adds instructions, DMA transfers (Instruction + Flow + DmaPacketAggregated +
DmaPacket rows that agree with each other) and tensors, then writes `<Table>.parquet` files.
`write_tables` writes arbitrary column dicts (NumPy arrays welcome) for large generated profiles.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

# Arrow types of the columns we write; other columns are inferred. Mirrors the real exports where
# known (int64 ns timestamps, float64 FLOPs and bandwidths, strings for names and locations).
TYPES = {
    "id": pa.int64(),
    "start_ts": pa.int64(),
    "end_ts": pa.int64(),
    "duration_ns": pa.int64(),
    "engine": pa.string(),
    "opcode": pa.string(),
    "operands": pa.string(),
    "tensor_instruction_type": pa.string(),
    "adjusted_flops": pa.float64(),
    "nki_source_location": pa.string(),
    "bir_debug_info_source_location": pa.string(),
    "hbm_read_bytes": pa.int64(),
    "hbm_write_bytes": pa.int64(),
    "evt_wait_time_ns": pa.int64(),
    "transfer_bytes": pa.int64(),
    "queue_type": pa.string(),
    "queue_name": pa.string(),
    "packet_aggregation_id": pa.int64(),
    "source": pa.string(),
    "dest": pa.string(),
    "variable": pa.string(),
    "write_num_sbuf_partitions": pa.int64(),
    "read_num_sbuf_partitions": pa.int64(),
    "is_transpose_mode": pa.bool_(),
    "in_table": pa.string(),
    "out_table": pa.string(),
    "in_id": pa.int64(),
    "out_id": pa.int64(),
    "type": pa.string(),
    "size": pa.int64(),
    "variable_name": pa.string(),
    "dma_ddr_bandwidth": pa.float64(),
    "tensor_engine_num_rows": pa.int64(),
    "tensor_engine_num_cols": pa.int64(),
    "tensor_engine_clock_freq": pa.float64(),
    "instance_type": pa.string(),
}

TE_ENGINE_NAMES = {"tensor": "Tensor", "vector": "Vector", "scalar": "Scalar", "gpsimd": "GpSimd"}


def _schema_types(table: str) -> dict[str, pa.DataType]:
    """The Arrow types nkidev's profile writer uses for `table` (nkidev.profile.schema), when it has them."""
    try:
        from nkidev.profile.schema import TABLES
    except ImportError:
        return {}
    return {c.name: c.type for c in TABLES.get(table, [])}


def to_arrow(columns: dict, table: str = "") -> pa.Table:
    types = {**TYPES, **_schema_types(table)}
    arrays = {}
    for name, values in columns.items():
        kind = types.get(name)
        arrays[name] = pa.array(values, type=kind) if kind is not None else pa.array(values)
    return pa.table(arrays)


def write_tables(out_dir: str | Path, tables: dict[str, dict], split: dict[str, int] | None = None) -> Path:
    """Write {table: {column: values}} as <Table>.parquet (or <Table>_<i>.parquet in `split[table]` parts)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, columns in tables.items():
        table = to_arrow(columns, name)
        parts = (split or {}).get(name, 0)
        if parts <= 1:
            pq.write_table(table, out / f"{name}.parquet")
            continue
        step = -(-table.num_rows // parts)
        for i in range(parts):
            pq.write_table(table.slice(i * step, step), out / f"{name}_{i}.parquet")
    return out


def matmul_operands(K: int, M: int, N: int, dtype: str = "bf16") -> str:
    """neuron-explorer's MATMUL operand text: N is the first element of the src shape, `K*M` ends it."""
    return f"src={dtype}@0x0[1,1][{N},1] dst=fp32@0x2000000[1,1][{N},1] {K}*{M}"


def merge_intervals(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[list[int]] = []
    for s, e in sorted(intervals):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return [(s, e) for s, e in merged]


def _rows_to_columns(rows: list[dict]) -> dict:
    names: list[str] = []
    for r in rows:
        names.extend(k for k in r if k not in names)
    return {n: [r.get(n) for r in rows] for n in names}


@dataclass
class ProfileBuilder:
    """A hand-made profile. Times are ns; `src` is "path/kernel.py:LINE" (None = no source location)."""

    dma_bw: float = 400e9  # bytes/s (Metadata.dma_ddr_bandwidth)
    te_rows: int = 128
    te_cols: int = 128
    te_clock_ghz: float = 2.5  # 128*128*2*2.5 GHz = 81.92 TFLOP/s
    instance_type: str = "trn2.48xlarge"
    instructions: list[dict] = field(default_factory=list)
    packets: list[dict] = field(default_factory=list)
    dpa: list[dict] = field(default_factory=list)
    flow: list[dict] = field(default_factory=list)
    tensors: list[dict] = field(default_factory=list)
    throttles: list[dict] = field(default_factory=list)

    @property
    def te_peak(self) -> float:
        return self.te_rows * self.te_cols * 2 * self.te_clock_ghz * 1e9

    def _next_id(self) -> int:
        return len(self.instructions) + 1

    def tensor(self, name: str, kind: str, size: int) -> None:
        self.tensors.append({"variable_name": name, "type": kind, "size": size})

    def op(self, engine: str, opcode: str, start: int, end: int, src: str | None = None, **extra) -> int:
        iid = self._next_id()
        self.instructions.append(
            {
                "id": iid,
                "engine": TE_ENGINE_NAMES.get(engine, engine),
                "opcode": opcode,
                "start_ts": start,
                "end_ts": end,
                "duration_ns": end - start,
                "bir_debug_info_source_location": src,
                **extra,
            }
        )
        return iid

    def matmul(
        self,
        start: int,
        end: int,
        K: int = 128,
        M: int = 128,
        N: int = 512,
        src: str | None = None,
        transpose: bool = False,
        flops: float | None = None,
    ) -> int:
        return self.op(
            "tensor",
            "MATMUL",
            start,
            end,
            src,
            operands=matmul_operands(K, M, N),
            tensor_instruction_type="TRANSPOSE" if transpose else "REGULAR",
            adjusted_flops=float(flops if flops is not None else 2 * K * M * N),
        )

    def dma(
        self,
        start: int,
        end: int,
        nbytes: int,
        src: str | None = None,
        variable: str | None = None,
        direction: str = "load",
        partitions: int = 128,
        packets: int = 1,
        queue: str = "qSyncIO0",
        dpa: bool = True,
        transpose: bool | None = False,
    ) -> int:
        """One dma_copy: its trigger instruction, its DPA row + Flow edge, and `packets` DmaPacket rows."""
        source, dest = {
            "load": ("[[INPUT]]", "[[SB]]"),
            "store": ("[[SB]]", "[OUTPUT]"),
            "spill_save": ("[[SB]]", "[VIRTUAL]"),
            "spill_reload": ("[[VIRTUAL]]", "[SB]"),
            "sbuf": ("[[SB]]", "[[SB]]"),
        }[direction]
        hbm = direction in ("load", "store", "spill_save", "spill_reload")
        reads = nbytes if hbm and direction in ("load", "spill_reload") else 0
        writes = nbytes if hbm and direction in ("store", "spill_save") else 0
        iid = self.op("Sync", "PSEUDO_DMA_TRIGGER", start, start + 1, src, hbm_read_bytes=reads, hbm_write_bytes=writes)
        if dpa:
            did = len(self.dpa) + 1
            self.dpa.append(
                {
                    "id": did,
                    "start_ts": start,
                    "end_ts": end,
                    "transfer_bytes": nbytes,
                    "source": source,
                    "dest": dest,
                    "variable": variable,
                    "write_num_sbuf_partitions": partitions if direction != "store" else None,
                    "read_num_sbuf_partitions": partitions if direction == "store" else None,
                    "is_transpose_mode": transpose,
                }
            )
            self.flow.append(
                {"in_table": "Instruction", "out_table": "DmaPacketAggregated", "in_id": iid, "out_id": did, "type": "DGE_TRIGGER"}
            )
        share = nbytes // packets
        for i in range(packets):
            size = share if i < packets - 1 else nbytes - share * (packets - 1)
            self.packets.append(
                {
                    "start_ts": start,
                    "end_ts": end,
                    "duration_ns": end - start,
                    "transfer_bytes": size,
                    "queue_type": "data",
                    "queue_name": queue,
                }
            )
        return iid

    def throttle(self, start: int, end: int, k: int, n: int, kind: str = "activity_0", core: int | None = 0) -> None:
        """A Throttle row: the utilization limit k/n in force over [start, end) on NeuronCore `core`."""
        self.throttles.append({"timestamp": start, "duration": end - start, "k": k, "n": n, "type": kind, "pcore_idx": core})

    def active_time(self) -> dict:
        by_engine: dict[str, list[tuple[int, int]]] = {}
        for r in self.instructions:
            key = r["engine"].lower()
            if key in ("tensor", "vector", "scalar", "gpsimd"):
                by_engine.setdefault(key, []).append((r["start_ts"], r["end_ts"]))
        rows = [
            {"engine": e, "start_ts": s, "end_ts": t, "duration_ns": t - s} for e, ivs in by_engine.items() for s, t in merge_intervals(ivs)
        ]
        return _rows_to_columns(rows) or {"engine": [], "start_ts": [], "end_ts": [], "duration_ns": []}

    def tables(self) -> dict[str, dict]:
        meta = {
            "dma_ddr_bandwidth": [self.dma_bw],
            "tensor_engine_num_rows": [self.te_rows],
            "tensor_engine_num_cols": [self.te_cols],
            "tensor_engine_clock_freq": [self.te_clock_ghz],
            "instance_type": [self.instance_type],
        }
        out = {
            "Instruction": _rows_to_columns(self.instructions),
            "ActiveTime": self.active_time(),
            "DmaPacket": _rows_to_columns(self.packets),
            "DmaPacketAggregated": _rows_to_columns(self.dpa),
            "Flow": _rows_to_columns(self.flow),
            "TensorInfo": _rows_to_columns(self.tensors),
            "Metadata": meta,
            "Throttle": _rows_to_columns(self.throttles),
        }
        return {k: v for k, v in out.items() if v}

    def write(self, out_dir: str | Path, drop_tables: tuple[str, ...] = (), drop_columns: dict[str, tuple[str, ...]] | None = None) -> Path:
        """Write the profile; `drop_*` remove tables or columns to imitate partial real profiles."""
        tables = {k: v for k, v in self.tables().items() if k not in drop_tables}
        for table, cols in (drop_columns or {}).items():
            if table in tables:
                tables[table] = {c: v for c, v in tables[table].items() if c not in cols}
        return write_tables(out_dir, tables)
