"""Build every table of a profile from a timeline and write the directory atomically.

Files go to a hidden temporary directory next to the destination (`.NAME.nkidev-new-PID-RANDOM`), each
fsynced, the marker file `nkidev-profile.json` last; only then is it renamed into place. Replacing an
existing profile (`force`) first renames the old one aside (`.NAME.nkidev-old-...`) and deletes it only
after the new one is in place, so some complete copy exists at every instant. A crash in between is
repaired by the next write to the same destination (`recover`): a missing destination gets the newest
complete copy back, and leftovers of dead processes are removed. `force` replaces only a directory that
carries the marker (or, for profiles of older nkidev versions, holds nothing but profile files): a
user's directory is never deleted.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from nkidev import __version__, heap
from nkidev.atomic import crash_point, fsync_dir, fsync_file, owner_alive, temp_name
from nkidev.costmodel.timeline import Timeline
from nkidev.errors import NkiUsageError
from nkidev.hardware import Target
from nkidev.profile import schema, summary, tables
from nkidev.profile.perfetto import check_trace_mode, with_packet_tracks, write_trace


def build_tables(tl: Timeline, notes: list[tuple[str, str]] = (), trace: str = "auto") -> dict[str, pa.Table | tables.LazyTable]:
    """All profile tables for one timeline (`notes`: extra Warning rows, (category, message); `trace`: what
    trace.json will hold, perfetto.TRACE_MODES, for the Warning rows that say what it leaves out). The big ones
    (Instruction, DmaPacketAggregated, DmaPacket, Flow) are `tables.LazyTable`s: built chunk by chunk when
    written or read (`.to_table()` materializes one)."""
    with heap.arrow_on_glibc():
        return _build_tables(tl, notes, trace)


def _build_tables(tl: Timeline, notes, trace: str) -> dict[str, pa.Table | tables.LazyTable]:
    out = {"Instruction": tables.instruction_table(tl)}
    out.update(tables.transfer_tables(tl))
    out["ActiveTime"] = tables.active_time_table(tl)
    out["TensorInfo"] = tables.tensor_info_table(tl)
    out["DmaQueuesInfo"] = tables.dma_queues_table(tl)
    total = summary.total_ns(out)
    steps = tables.throttle_steps(tl, total)
    out["Throttle"] = tables.throttle_table(steps)  # a timeline table: before the Summary, which counts its rows
    out["ThrottleSummary"] = tables.throttle_summary_table(steps, total)
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
    if check_trace_mode(trace) == "none":
        warnings.append(("Trace", "no trace.json was written (--trace none); the Parquet tables have every event"))
    elif len(tl.packets) and not with_packet_tracks(trace, len(tl.packets)):
        warnings.append(
            ("Trace", f"trace.json leaves out the per-engine DMA packet tracks ({len(tl.packets)} packets); DmaPacket.parquet has them all")
        )
    warnings += [("Kernel", f"{w['name']}: {w['message']} ({w.get('location')})") for w in tl.trace.warnings]
    out["Warning"] = summary.warning_table(warnings)
    heap.release()  # the summary's temporary columns
    return out


MARKER_FILE = schema.MARKER_FILE


def is_profile_dir(path: Path) -> bool:
    """A directory nkidev may replace: it carries the marker, or (older nkidev) holds only profile files."""
    marker = path / MARKER_FILE
    if marker.is_file():
        try:
            return json.loads(marker.read_text()).get("tool") == "nkidev"
        except (ValueError, OSError, AttributeError):
            return False
    known = {f"{t}.parquet" for t in schema.TABLES} | {schema.TRACE_FILE, schema.HARDWARE_FILE, schema.KERNEL_FILE}
    names = {p.name for p in path.iterdir()}
    return "Instruction.parquet" in names and names <= known


def check_destination(out: str | os.PathLike, force: bool) -> Path:
    """Refuse before any work: an existing non-empty `out` without `force`, a `force` onto a directory that is
    not an nkidev profile, or a place that cannot be written (err_not_writable)."""
    path = Path(out)
    recover(path)
    if path.exists() and not path.is_dir():
        raise NkiUsageError("err_output_exists", f"{path} exists and is not a directory", "choose a directory path for --out")
    if path.is_dir() and not any(path.iterdir()):
        _check_writable(path)  # an empty directory holds nothing to lose: write into it
        return path
    if path.exists() and not force:
        raise NkiUsageError(
            "err_output_exists", f"{path} already exists", "pass --force (force=True) to replace it, or choose another --out directory"
        )
    if path.exists() and not is_profile_dir(path):
        raise NkiUsageError(
            "err_output_exists",
            f"{path} is not an nkidev profile directory (no {MARKER_FILE}); --force replaces only profiles nkidev wrote",
            "choose another --out directory; nothing was changed",
        )
    _check_writable(path)
    return path


def _check_writable(path: Path) -> None:
    probe = path.parent if path.parent != Path("") else Path(".")
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise NkiUsageError(
            "err_not_writable",
            f"cannot write the profile {path}: {probe} is not a writable directory",
            "choose an --out directory you can write",
        )


def recover(path: Path) -> None:
    """Finish or undo a replace that a crash interrupted, and remove the leftovers of dead writers."""
    parent = path.parent
    if not parent.is_dir():
        return
    leftovers = [p for p in parent.glob(f".{path.name}.nkidev-*") if p.is_dir() and not owner_alive(p)]
    if not leftovers:
        return
    # a new copy is complete once its marker exists; an old copy was a whole profile when it was moved aside
    complete = sorted(
        (p for p in leftovers if (p / MARKER_FILE).is_file() or "-old-" in p.name), key=lambda p: p.stat().st_mtime, reverse=True
    )
    if not path.exists() and complete:
        newest = next((p for p in complete if "-new-" in p.name), complete[0])
        newest.rename(path)
        leftovers.remove(newest)
    for p in leftovers:
        shutil.rmtree(p, ignore_errors=True)


def write_profile(
    path: Path,
    tables_: dict[str, pa.Table],
    title: str,
    force: bool = False,
    target: Target | None = None,
    kernel: dict | None = None,
    trace: str = "auto",
) -> None:
    """Write `<Table>.parquet` files, trace.json (what `trace` says: perfetto.TRACE_MODES), (given `target`)
    hardware.json, the full hardware spec the cost model used, and (given `kernel`) nkidev-kernel.json, what was
    profiled, into `path` (an existing `path` is replaced only if `force` and it is an nkidev profile)."""
    check_trace_mode(trace)
    path = check_destination(path, force)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(path, "new")
    tmp.mkdir()  # mkdir, not mkdtemp: the profile gets the user's normal permissions
    try:
        with heap.arrow_on_glibc():
            _write_files(tmp, tables_, title, target, kernel, trace)
        marker = {"tool": "nkidev", "version": __version__, "title": title, "written": tmp.name.split("-new-")[-1]}  # pid-random
        (tmp / MARKER_FILE).write_text(json.dumps(marker) + "\n")
        fsync_file(tmp / MARKER_FILE)
        fsync_dir(tmp)
        crash_point("complete")
        _replace(tmp, path)
        heap.release()
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _write_files(tmp: Path, tables_: dict, title: str, target: Target | None, kernel: dict | None, trace: str) -> None:
    """Every file of the profile but the marker, each fsynced."""
    for name, table in tables_.items():
        _write_table(table, tmp / f"{name}.parquet")
        heap.release()  # what the table's chunks freed, back to the OS before the next table's
        crash_point(f"table {name}")
    if trace != "none":
        write_trace(tmp / schema.TRACE_FILE, tables_, title, trace)
    if target is not None:
        (tmp / schema.HARDWARE_FILE).write_text(json.dumps(dataclasses.asdict(target), indent=1))
    if kernel is not None:
        (tmp / schema.KERNEL_FILE).write_text(json.dumps(kernel, indent=1) + "\n")
    for f in tmp.iterdir():
        fsync_file(f)


# rows per Parquet row group where tables.CHUNK rows are too wide: a 131,072-row chunk of Instruction's 55 columns
# is 84 MB of Arrow buffers plus the encoder's, the write's peak in a million-instruction profile (swiglu_1m:
# 745 -> 677 MiB at this stage, same write time, file 0.4% larger)
ROW_GROUP_ROWS = {"Instruction": 65_536}

# string columns with a distinct value per row (Instruction's ids as text): a dictionary of them is hashed, then
# dropped for plain encoding once it outgrows its page, so they are written plain from the start
UNIQUE_STRINGS = ("bir_id", "bir_instruction_name")


def _write_table(table: pa.Table | tables.LazyTable, path: Path) -> None:
    """One Parquet file; a LazyTable is streamed a chunk (row group) at a time, never built whole. Only string
    columns are dictionary-encoded: trying it on every numeric column of a big table doubles the write time."""
    strings = [f.name for f in table.schema if pa.types.is_string(f.type) and f.name not in UNIQUE_STRINGS]
    if isinstance(table, pa.Table):
        pq.write_table(table, path, use_dictionary=strings)
        return
    with pq.ParquetWriter(path, table.schema, use_dictionary=strings) as writer:
        for chunk in table.batches(ROW_GROUP_ROWS.get(table.name, tables.CHUNK)):
            writer.write_table(chunk)
            del chunk  # else it stays alive while the next chunk is built: two row groups in memory at the peak
        if table.num_rows == 0:
            writer.write_table(table.schema.empty_table())


def _replace(tmp: Path, path: Path) -> None:
    if not path.exists():
        tmp.rename(path)
        fsync_dir(path.parent)
        return
    old = temp_name(path, "old")
    path.rename(old)
    crash_point("old moved aside")
    try:
        tmp.rename(path)
    except BaseException:
        old.rename(path)
        raise
    fsync_dir(path.parent)
    crash_point("new in place")
    shutil.rmtree(old, ignore_errors=True)
