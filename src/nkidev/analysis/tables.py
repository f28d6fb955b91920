"""Open a profile directory as DuckDB views, one per neuron-explorer table.

A profile directory holds `<Table>.parquet` files, large tables split as `<Table>_0.parquet`,
`<Table>_1.parquet`, ... (neuron-explorer and nkidev's profile writer use the same layout). Each table
becomes a view named like the table, so queries written for real profiles run unchanged.

The analysis then reads a few columns of a few tables through `prepare()`: it copies exactly the
columns it uses ([sources: explorer-schema]) into small typed temp tables, with NULL for any column the
profile lacks, and records what is missing so each investigation can say why it could not run.

The connection is read-only towards the outside once the views exist (`lock_down`): DuckDB may then read
only the profile's own Parquet files (`allowed_paths`, `enable_external_access = false`: no read_text,
read_csv, read_blob, glob, ATTACH or URLs), extensions are neither installed nor loaded automatically,
and `lock_configuration = true` keeps a query from turning any of that back on. `watchdog` interrupts a
statement that runs past its time limit (err_timeout); `query` caps the rows it returns.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

from nkidev.errors import NkiUsageError

_SPLIT = re.compile(r"^(?P<table>.+?)_(?P<part>\d+)$")

# The columns the analysis reads, per table, and the DuckDB type each is cast to ([sources: explorer-schema]).
COLUMNS: dict[str, dict[str, str]] = {
    "Instruction": {
        "id": "BIGINT",
        "engine": "VARCHAR",
        "opcode": "VARCHAR",
        "start_ts": "BIGINT",
        "end_ts": "BIGINT",
        "duration_ns": "BIGINT",
        "operands": "VARCHAR",
        "tensor_instruction_type": "VARCHAR",
        "adjusted_flops": "DOUBLE",
        "nki_source_location": "VARCHAR",
        "bir_debug_info_source_location": "VARCHAR",
        "hbm_read_bytes": "BIGINT",
        "hbm_write_bytes": "BIGINT",
        "pcore_idx": "BIGINT",
    },
    "ActiveTime": {"engine": "VARCHAR", "start_ts": "BIGINT", "end_ts": "BIGINT"},
    "DmaPacket": {"start_ts": "BIGINT", "end_ts": "BIGINT", "transfer_bytes": "BIGINT", "queue_type": "VARCHAR", "queue_name": "VARCHAR"},
    "DmaPacketAggregated": {
        "id": "BIGINT",
        "start_ts": "BIGINT",
        "end_ts": "BIGINT",
        "transfer_bytes": "BIGINT",
        "read_bytes": "BIGINT",
        "write_bytes": "BIGINT",
        "source": "VARCHAR",
        "dest": "VARCHAR",
        "variable": "VARCHAR",
        "write_num_sbuf_partitions": "BIGINT",
        "read_num_sbuf_partitions": "BIGINT",
        "is_transpose_mode": "BOOLEAN",
    },
    "Flow": {"in_table": "VARCHAR", "out_table": "VARCHAR", "in_id": "BIGINT", "out_id": "BIGINT"},
    "TensorInfo": {"type": "VARCHAR", "size": "BIGINT", "variable_name": "VARCHAR", "load_to_sbuf_total_size_bytes": "BIGINT"},
    "Metadata": {
        "dma_ddr_bandwidth": "DOUBLE",
        "tensor_engine_num_rows": "DOUBLE",
        "tensor_engine_num_cols": "DOUBLE",
        "tensor_engine_clock_freq": "DOUBLE",
        "instance_type": "VARCHAR",
    },
    "Summary": {"total_time": "DOUBLE"},
    "Throttle": {"timestamp": "BIGINT", "duration": "BIGINT", "k": "DOUBLE", "n": "DOUBLE", "pcore_idx": "BIGINT"},
}

# Where each table comes from when it is missing, so the message can say how to get it.
HOW_TO_GET = {
    "DmaPacketAggregated": "capture with NEURON_RT_ENABLE_DGE_NOTIFICATIONS=1 (DGE notifications)",
    "Flow": "capture with NEURON_RT_ENABLE_DGE_NOTIFICATIONS=1 (Instruction->DMA links)",
    "TensorInfo": "ingest the profile with its NEFF (neuron-explorer view -n NEFF -s NTFF)",
    "Metadata": "ingest the profile with neuron-explorer (the Metadata table holds the hardware constants)",
    "Throttle": "nkidev profiles written before the Throttle table existed lack it: profile the kernel again",
}


@dataclass
class Profile:
    """An open profile: a DuckDB connection with one view per table, and what the profile lacks."""

    path: Path
    con: duckdb.DuckDBPyConnection
    columns: dict[str, dict[str, str]]  # table -> {column: DuckDB type} as found in the Parquet files
    notes: list[str] = field(default_factory=list)  # how the analysis adapted to what the profile lacks
    files: dict[str, list[str]] = field(default_factory=dict)  # table -> its Parquet files (the ones DuckDB may read)
    busy: dict[str, np.ndarray] = field(default_factory=dict)  # the busy table's pieces as arrays (bounds.build_busy)

    def has(self, table: str, *cols: str) -> bool:
        present = self.columns.get(table)
        return present is not None and all(c in present for c in cols)

    def lacking(self, table: str, *cols: str) -> list[str]:
        """The subset of `table` and `table.col` that this profile does not have, as readable names."""
        if table not in self.columns:
            return [table]
        return [f"{table}.{c}" for c in cols if c not in self.columns[table]]

    def scalar(self, sql: str, params: dict | None = None):
        row = self.con.execute(sql, params or {}).fetchone()
        return row[0] if row else None

    def rows(self, sql: str, params: dict | None = None) -> list[dict]:
        cur = self.con.execute(sql, params or {})
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]

    def arrays(self, sql: str, params: dict | None = None) -> dict[str, np.ndarray]:
        """The result's columns as NumPy arrays (for the array stages, intervals.py); the query must not
        return NULLs (NumPy would mask them): code a missing value as a number."""
        return {k: np.asarray(v) for k, v in self.con.execute(sql, params or {}).fetchnumpy().items()}

    def put(self, name: str, columns: dict[str, np.ndarray], nulls: dict[str, np.ndarray] | None = None) -> None:
        """Make arrays computed in Python readable as the view `name` (no copy); `nulls` marks the rows of a
        column that are NULL. A Python object, not a file: the lockdown does not apply and is not needed."""
        nulls = nulls or {}
        table = pa.table({k: pa.array(v, mask=nulls.get(k)) for k, v in columns.items()})
        self.con.register(name, table)


def sql_text(name: str) -> str:
    """The text of a SQL file shipped next to the analysis modules (`name` relative to this package)."""
    return resources.files("nkidev.analysis").joinpath(name).read_text()


_NAMED = re.compile(r"^-- name: (\w+)\s*$", re.M)


def named_queries(name: str) -> dict[str, str]:
    """The named queries (`-- name: X` headers) of the SQL file `name`; the whole text as "main" without headers."""
    text = sql_text(name)
    parts = _NAMED.split(text)
    if len(parts) == 1:
        return {"main": text}
    return {parts[i]: parts[i + 1].strip() for i in range(1, len(parts), 2)}


def find_profile_dir(path: str | Path) -> Path:
    """The directory holding the Parquet tables: `path` itself, or the one profile below it
    (neuron-explorer's `<data-path>/profiles/global/<name>@latest/` layout)."""
    path = Path(path)
    if not path.is_dir():
        raise NkiUsageError(
            "err_bad_profile", f"{path} is not a directory", "pass the profile directory written by `nkidev profile` or neuron-explorer"
        )
    if any(path.glob("*.parquet")):
        return path
    found = _profile_dirs_below(path)
    if len(found) == 1:
        return found[0]
    if not found:
        raise NkiUsageError(
            "err_bad_profile",
            f"{path} holds no Parquet tables (<Table>.parquet), nor does any folder up to {PROFILE_SEARCH_DEPTH} levels below it",
            "pass the directory written by `nkidev profile`, or a neuron-explorer profiles/global/<name>@latest directory",
        )
    names = ", ".join(str(p.relative_to(path)) for p in found[:5])
    raise NkiUsageError("err_bad_profile", f"{path} holds several profiles ({names})", "pass one of them")


# neuron-explorer's layout puts the tables 3 levels below its data path; a little more leaves room for a folder
# of such data paths, while a home directory or /tmp passed by mistake is not walked to the bottom.
PROFILE_SEARCH_DEPTH = 5


def _profile_dirs_below(path: Path, depth: int = PROFILE_SEARCH_DEPTH) -> list[Path]:
    """The directories below `path` (at most `depth` levels) holding Instruction or DmaPacket tables. os.walk
    skips what it cannot list, so a folder another process deletes or locks while we look is not an error."""
    found = []
    for root, dirs, files in os.walk(path):
        if any(f.endswith(".parquet") and f.startswith(("Instruction", "DmaPacket")) for f in files):
            found.append(Path(root))
        if len(Path(root).relative_to(path).parts) >= depth:
            dirs.clear()
        dirs.sort()
    return sorted(found)


def table_files(path: Path) -> dict[str, list[str]]:
    """Table name -> its Parquet files (`<Table>.parquet` or `<Table>_<n>.parquet`)."""
    stems = {p.stem: p for p in sorted(path.glob("*.parquet"))}
    tables: dict[str, list[str]] = {}
    for stem, file in stems.items():
        m = _SPLIT.match(stem)
        table = m.group("table") if m and stem not in COLUMNS else stem
        tables.setdefault(table, []).append(str(file))
    return tables


def open_profile(path: str | Path) -> Profile:
    """Open a profile directory: one view per table, plus the column inventory; then lock the connection down."""
    path = find_profile_dir(path)
    con = duckdb.connect(":memory:", config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    # No progress bar: DuckDB draws it on stdout once a statement runs 2 s (a busy machine), which breaks `--json`.
    con.execute("SET enable_progress_bar = false")
    columns: dict[str, set[str]] = {}
    tables = table_files(path)
    for table, files in tables.items():
        listing = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
        try:
            con.execute(f'CREATE VIEW "{table}" AS SELECT * FROM read_parquet([{listing}], union_by_name=true)')
            columns[table] = {row[0]: row[1] for row in con.execute(f'DESCRIBE "{table}"').fetchall()}
        except duckdb.Error as e:
            raise NkiUsageError(
                "err_bad_profile",
                f"cannot read table {table} ({files[0]}): {e}",
                "re-export the profile; the Parquet file is damaged or not Parquet",
            ) from None
    if "Instruction" not in columns and "DmaPacket" not in columns:
        raise NkiUsageError(
            "err_bad_profile",
            f"{path} has neither an Instruction nor a DmaPacket table (found: {', '.join(sorted(columns)) or 'no tables'})",
            "pass a neuron-explorer or nkidev profile directory",
        )
    lock_down(con, [f for files in tables.values() for f in files])
    return Profile(path, con, columns, files=tables)


def lock_down(con: duckdb.DuckDBPyConnection, files: list[str]) -> None:
    """From here on the connection reads only `files`: no other file, URL, extension or setting change."""
    listing = ", ".join("'" + str(Path(f).resolve()).replace("'", "''") + "'" for f in files)
    con.execute(f"SET allowed_paths = [{listing}]")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


class Watchdog:
    """Interrupts the connection's running statement after `timeout_s` seconds (None: never); `error(e)` turns
    the interrupt into err_timeout. Started on construction, stopped by `cancel()`."""

    def __init__(self, profile: Profile, timeout_s: float | None, what: str):
        self.timeout_s, self.what = timeout_s, what
        self.fired = threading.Event()
        self.timer = threading.Timer(timeout_s, self._interrupt, args=(profile.con,)) if timeout_s else None
        if self.timer is not None:
            self.timer.daemon = True
            self.timer.start()

    def _interrupt(self, con) -> None:
        self.fired.set()
        con.interrupt()

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()

    def error(self, e: Exception) -> Exception:
        """err_timeout if this watchdog interrupted the statement, else `e` itself."""
        if not self.fired.is_set():
            return e
        return NkiUsageError(
            "err_timeout",
            f"{self.what} ran longer than {self.timeout_s:g} s and was interrupted",
            "narrow the query (WHERE, LIMIT, fewer joins) or raise the limit with --timeout SECONDS",
        )


def _column_expr(profile: Profile, table: str, column: str, sql_type: str) -> str:
    if not profile.has(table, column):
        return f"CAST(NULL AS {sql_type}) AS {column}"
    kind = profile.columns[table][column]
    if sql_type == "BIGINT" and kind.startswith("TIMESTAMP"):
        return f'epoch_ns("{column}") AS {column}'  # some exports store ns timestamps as TIMESTAMP
    return f'TRY_CAST("{column}" AS {sql_type}) AS {column}'


def _select(profile: Profile, table: str) -> str:
    cols = ", ".join(_column_expr(profile, table, c, t) for c, t in COLUMNS[table].items())
    source = f'"{table}"' if table in profile.columns else "(SELECT 1) AS empty WHERE false"
    return f"SELECT {cols} FROM {source}"


def prepare(profile: Profile) -> None:
    """Expose the analysed columns as typed views `_raw_<Table>`, then build the normalized
    tables the investigations share (prepare.sql): inst, packets (a view), pkt, dpa, issued, tensors, meta, win.
    Engine, opcode, source location and a transfer's tensor are coded at load time as sorted ENUMs (nk_engine,
    nk_opcode, nk_src, nk_variable), so captured and nkidev profiles take the same path and the tables hold
    integers, not text. Two groupings run on arrays, where DuckDB's hash aggregates cost the most: the DMA packets
    (packets.py, read from the profile's own DmaPacket files; prepare.sql's `pkt` query when their columns are
    not plain int64) and the distinct Instruction -> DMA edges (a sort), with each transfer's issuer looked up when it
    has only one (issuers.py: `issued` is then a view of dpa). The tables are the same either way."""
    from nkidev.analysis.issuers import distinct_edges, flow_edges, single_issuers
    from nkidev.analysis.packets import packet_groups

    for table in COLUMNS:
        profile.con.execute(f"CREATE OR REPLACE TEMP VIEW _raw_{table} AS {_select(profile, table)}")
    q = named_queries("prepare.sql")
    profile.con.execute(q["load"])
    groups = packet_groups(profile)
    if groups is None:
        profile.con.execute(q["pkt"])
    else:
        profile.con.register("_pkt_groups", groups)
        profile.con.execute(q["pkt_arrays"])
        profile.con.unregister("_pkt_groups")
    # the distinct Instruction -> DMA edges and, when each transfer has at most one, its issuer (issuers.py)
    edges = flow_edges(profile)
    if edges is None:
        flow = profile.arrays(q["flow"])
        edges = flow["in_id"], flow["out_id"]
    in_id, out_id = distinct_edges(*edges)
    single = single_issuers(in_id, out_id, profile.arrays(q["inst_ids"]))
    none = {"out_id": np.zeros(0, dtype=np.int64), "code": np.zeros(0, dtype=np.int64), "hbm_instruction": np.zeros(0, dtype=bool)}
    profile.put("_issuer", none if single is None else single)
    profile.con.execute(q["dpa"])
    profile.con.unregister("_issuer")
    if single is None:
        profile.put("_flow_dma", {"in_id": in_id, "out_id": out_id})
        profile.con.execute(q["issued_join"])
        profile.con.unregister("_flow_dma")
    else:
        profile.con.execute(q["issued_view"])
    profile.con.execute(q["tables"])
