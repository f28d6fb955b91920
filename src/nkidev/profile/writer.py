"""Build every table of a profile from a timeline and write the directory atomically.

Files go to a temporary directory next to the destination, which is renamed into place only when
everything is written: a failure leaves nothing half-written behind.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from nkidev.costmodel.timeline import Timeline
from nkidev.errors import NkiUsageError
from nkidev.hardware import Target
from nkidev.profile import schema, summary, tables
from nkidev.profile.perfetto import MAX_PACKET_EVENTS, write_trace


def build_tables(tl: Timeline, notes: list[tuple[str, str]] = ()) -> dict[str, pa.Table]:
    """All profile tables for one timeline (`notes`: extra Warning rows, (category, message))."""
    out = {"Instruction": tables.instruction_table(tl)}
    out.update(tables.transfer_tables(tl))
    out["ActiveTime"] = tables.active_time_table(tl)
    out["TensorInfo"] = tables.tensor_info_table(tl)
    out["DmaQueuesInfo"] = tables.dma_queues_table(tl)
    total = summary.total_ns(out)
    out["Summary"] = summary.summary_table(out, tl.target, total)
    out["OpcodeSummary"] = summary.opcode_summary_table(out["Instruction"], total)
    out["Metadata"] = summary.metadata_table(tl.target, tl.trace.kernel, total, tl.trace.programs)
    out["SchemaFields"] = tables.to_table("SchemaFields", schema.schema_field_rows())
    warnings = [
        (
            "Simulation",
            f"Timeline predicted by nkidev's cost model for {tl.target.name}; not measured on "
            "hardware (Metadata.is_simulation). DMA queue names and packets are the model's, not the compiler's.",
        )
    ]
    warnings += list(notes)
    if len(tl.packets) > MAX_PACKET_EVENTS:
        warnings.append(
            ("Trace", f"trace.json leaves out the per-engine DMA packet tracks ({len(tl.packets)} packets); DmaPacket.parquet has them all")
        )
    warnings += [("Kernel", f"{w['name']}: {w['message']} ({w.get('location')})") for w in tl.trace.warnings]
    out["Warning"] = summary.warning_table(warnings)
    return out


def check_destination(out: str | os.PathLike, force: bool) -> Path:
    path = Path(out)
    if path.exists() and not force:
        raise NkiUsageError(
            "err_output_exists", f"{path} already exists", "pass --force (force=True) to replace it, or choose another --out directory"
        )
    if path.exists() and not path.is_dir():
        raise NkiUsageError("err_output_exists", f"{path} exists and is not a directory", "choose a directory path for --out")
    return path


def write_profile(path: Path, tables_: dict[str, pa.Table], title: str, force: bool = False, target: Target | None = None) -> None:
    """Write `<Table>.parquet` files, trace.json and (given `target`) hardware.json, the full hardware spec the
    cost model used, into `path` (an existing `path` is replaced only if `force`)."""
    path = check_destination(path, force)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")
    tmp.mkdir()  # mkdir, not mkdtemp: the profile gets the user's normal permissions
    try:
        for name, table in tables_.items():
            pq.write_table(table, tmp / f"{name}.parquet")
        write_trace(tmp / schema.TRACE_FILE, tables_, title)
        if target is not None:
            (tmp / schema.HARDWARE_FILE).write_text(json.dumps(dataclasses.asdict(target), indent=1))
        _replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _replace(tmp: Path, path: Path) -> None:
    if not path.exists():
        tmp.rename(path)
        return
    old = path.with_name(f".{path.name}.old-{os.getpid()}")
    path.rename(old)
    try:
        tmp.rename(path)
    except BaseException:
        old.rename(path)
        raise
    shutil.rmtree(old, ignore_errors=True)
