"""Library entry points: `analyze(profile_dir)` and `query(profile_dir, sql)`.

The same code reads nkidev's own profiles and neuron-explorer's: both are directories of Parquet
tables with neuron-explorer's names. Whatever a profile lacks is reported, never a crash.
"""

from __future__ import annotations

import math
from pathlib import Path

import duckdb
import numpy as np

from nkidev.analysis import bounds as bounds_mod
from nkidev.analysis import source
from nkidev.analysis.findings import SEVERITIES, off_critical_path
from nkidev.analysis.intervals import bin_busy
from nkidev.analysis.investigations import Context, engine_of, modules, run_all
from nkidev.analysis.result import AnalysisResult
from nkidev.analysis.tables import Profile, Watchdog, open_profile, prepare, sql_text
from nkidev.errors import NkiUsageError
from nkidev.hardware import target_for_instance
from nkidev.hardware.calibration import calibrated_target

TIMELINE_BINS = 2400  # fine enough to zoom the HTML timeline 16x
KINDS_ORDER = {m.NAME: m.RANK for m in modules()}
ANALYZE_TIMEOUT_S = 600.0  # the whole analysis of one profile (a 1M-instruction profile takes 1-3 s CPU)
QUERY_TIMEOUT_S = 60.0  # one `query` statement
QUERY_MAX_ROWS = 100_000  # rows one `query` may return (err_query_too_large beyond)


def analyze(
    profile_dir: str | Path,
    source_root: str | Path | None = None,
    timeout_s: float | None = ANALYZE_TIMEOUT_S,
    calibration: str | None = None,
) -> AnalysisResult:
    """Bounds, engine times and findings (with source lines) for one profile directory. Kernel source lines are
    read only from .py files under `source_root` (default: the working directory) or the profile directory;
    the analysis is interrupted after `timeout_s` seconds (err_timeout). `calibration` applies a calibration
    file to the target the profile names (see nkidev.hardware.calibration)."""
    profile = open_profile(profile_dir)
    watchdog = Watchdog(profile, timeout_s, f"the analysis of {profile.path}")
    try:
        prepare(profile)
        target = _target(profile, calibration)
        bounds, engines = bounds_mod.compute(profile, target)
        bottleneck = bounds.pop("bottleneck_engine")
        ctx = Context(profile, bounds, engines, bottleneck, target)
        outcomes = run_all(ctx)
        findings = [f for o in outcomes.values() for f in o.findings]
        for f in findings:
            off_critical_path(f, engine_of(f.kind), bottleneck)
        findings.sort(key=finding_order)
        locations = [r["src"] for r in profile.rows("SELECT DISTINCT src FROM inst WHERE src IS NOT NULL ORDER BY src")]
        roots = source.readable_roots(source_root, profile.path)  # once: the findings and lines resolve ~100 paths
        source.attach(findings, locations, source_root, profile.path, roots)
        investigations = {
            name: {"status": o.status, "reason": o.reason, "findings": len(o.findings), "details": o.details}
            for name, o in outcomes.items()
        }
        return AnalysisResult(
            profile_dir=str(profile.path),
            target=target.name,
            bottleneck_engine=bottleneck,
            total_time_ns=bounds["total_time_ns"],
            bounds=bounds,
            engines=engines,
            findings=findings,
            investigations=investigations,
            warnings=_warnings(profile, bounds, bool(locations)),
            timeline=_timeline(profile),
            lines=_line_costs(profile, source_root, roots),
        )
    except duckdb.Error as e:
        raise watchdog.error(e) from None
    finally:
        watchdog.cancel()
        profile.con.close()


def finding_order(f) -> tuple:
    """Severity (high first), cost (largest first), then fixed keys so ties print the same way on every run."""
    return (SEVERITIES.index(f.severity), -round(f.time_gap_ns, 3), KINDS_ORDER.get(f.kind, 99), f.source_lines, f.summary)


def _target(profile: Profile, calibration: str | None = None):
    """The target whose instance type Metadata.instance_type names (e.g. 'trn2.48xlarge'); else the default."""
    return calibrated_target(target_for_instance(profile.scalar("SELECT instance_type FROM meta")), calibration)


def _warnings(profile: Profile, bounds: dict, has_locations: bool) -> list[str]:
    out = list(profile.notes)
    wanted = {
        "ideal memory bounds": ("Metadata", ("dma_ddr_bandwidth",)),
        "ideal compute bounds": ("Metadata", ("tensor_engine_num_rows", "tensor_engine_num_cols", "tensor_engine_clock_freq")),
        "memory_bound_ideal_no_reloads": ("TensorInfo", ("type", "size")),
        "memory bounds": ("DmaPacket", ("start_ts", "end_ts", "transfer_bytes")),
    }
    for what, (table, cols) in wanted.items():
        missing = profile.lacking(table, *cols)
        if missing:
            out.append(f"{what} unavailable: profile lacks {', '.join(missing)}")
    if bounds["inputs"]["kernel_dma_packets"] == 0:
        out.append(
            "no kernel DMA packets: the window falls back to the instructions (re-capture with NEURON_RT_ENABLE_DGE_NOTIFICATIONS=1)"
        )
    if not has_locations:
        out.append(
            "no source locations (Instruction.nki_source_location / bir_debug_info_source_location are "
            "empty): findings cannot name lines; recompile with NKI debug info (NEURON_FRAMEWORK_DEBUG=1)"
        )
    return out


def _line_costs(profile: Profile, source_root, roots) -> list[dict]:
    """Per kernel source line: instruction time per engine, DMA transfers, and the line's text (lines.sql)."""
    out = []
    for r in profile.rows(sql_text("lines.sql")):
        where = source.describe(r["src"], source_root, profile.path, roots)
        out.append(
            {
                "source_line": where["location"],
                "text": where["text"],
                **{k: (int(v) if isinstance(v, int | float) else v) for k, v in r.items() if k != "src"},
            }
        )
    return out


def _timeline(profile: Profile) -> dict:
    """Each engine's busy fraction per time bin (for the HTML timeline): the merged busy pieces (busy.sql) spread
    over TIMELINE_BINS bins of equal width covering [t0, t1), on arrays (intervals.bin_busy)."""
    lanes: dict[str, list[float]] = {}
    t0, t1 = profile.con.execute("SELECT t0, t1 FROM win").fetchone() or (None, None)
    if t0 is None or t1 is None:
        return {"bins": TIMELINE_BINS, "lanes": lanes}
    width = max(int(math.ceil((t1 - t0) / TIMELINE_BINS)), 1)
    names = [r[0] for r in profile.con.execute("SELECT unnest(enum_range(NULL::nk_engine))").fetchall()]
    pieces = profile.busy  # the rows of the busy table, still as arrays
    group = pieces["engine"].astype(np.int64)
    ns = bin_busy(group, pieces["s"], pieces["e"], t0, width, len(names))
    for code, name in enumerate(names):  # engines in ENUM (name) order, as the lanes always were
        touched = np.flatnonzero(ns[code] > 0)
        if len(touched) == 0:
            continue
        lane = lanes.setdefault(name, [0.0] * TIMELINE_BINS)
        touched = touched[touched < TIMELINE_BINS]
        for b, f in zip(touched.tolist(), np.minimum(ns[code, touched] / width, 1.0).tolist()):  # one division per array
            lane[b] = f
    return {"bins": TIMELINE_BINS, "lanes": lanes}


def query(
    profile_dir: str | Path, sql: str, timeout_s: float | None = QUERY_TIMEOUT_S, max_rows: int | None = QUERY_MAX_ROWS
) -> list[dict]:
    """Run one read-only SELECT over the profile's tables (views named like neuron-explorer's tables).

    The connection reads only the profile's Parquet files (no read_text/read_csv/glob/ATTACH/URLs, settings
    locked); the statement is interrupted after `timeout_s` seconds (err_timeout) and more than `max_rows`
    rows is err_query_too_large."""
    profile = open_profile(profile_dir)
    try:
        tables = ", ".join(sorted(profile.columns))
        try:
            statements = profile.con.extract_statements(sql)
        except duckdb.Error as e:
            raise NkiUsageError("err_bad_query", f"cannot parse the query: {e}", f"tables: {tables}") from None
        if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
            raise NkiUsageError("err_bad_query", "only a single SELECT (or WITH ... SELECT) statement is allowed", f"tables: {tables}")
        watchdog = Watchdog(profile, timeout_s, "the query")
        try:
            cur = profile.con.execute(sql)
            names = [d[0] for d in cur.description]
            rows = cur.fetchmany(max_rows + 1) if max_rows else cur.fetchall()
        except duckdb.Error as e:
            error = watchdog.error(e)
            if error is not e:
                raise error from None
            raise NkiUsageError("err_bad_query", f"DuckDB rejected the query: {e}", f"tables: {tables}") from None
        finally:
            watchdog.cancel()
        if max_rows and len(rows) > max_rows:
            raise NkiUsageError(
                "err_query_too_large",
                f"the query returns more than {max_rows:,} rows",
                "add a LIMIT or an aggregation (GROUP BY), or raise the cap with --row-cap",
            )
        return [dict(zip(names, row)) for row in rows]
    finally:
        profile.con.close()
