"""CLI commands of nkidev.analysis (registered by nkidev.cli): `nkidev analyze`, `nkidev query` and `nkidev compare`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from nkidev import exitcodes
from nkidev.cli_common import CalibrationOption, JsonOption, MemoryOption, TargetOption, TimeoutOption, command, console, print_json
from nkidev.errors import NkiUsageError

SEVERITY_RANK = {"low": 0, "medium": 1, "high": 2}


@command
def analyze(
    profile_dir: Annotated[Path, typer.Argument(help="Profile directory (nkidev profile or neuron-explorer).")],
    as_json: JsonOption = False,
    html: Annotated[Path | None, typer.Option("--html", help="Also write a self-contained HTML report here.")] = None,
    source_root: Annotated[
        Path | None,
        typer.Option(
            "--source-root",
            help="Directory kernel sources are read from (default: the current directory); .py files outside it are never read.",
        ),
    ] = None,
    fail_on: Annotated[
        str | None, typer.Option("--fail-on", help="Exit 1 when a finding has this severity or higher: high | medium | low.")
    ] = None,
    calibration: CalibrationOption = None,
) -> None:
    """Bounds, bottleneck engine and inefficiencies traced to kernel source lines."""
    from nkidev.analysis import report_html, report_text
    from nkidev.analysis.api import analyze as run_analysis

    if fail_on is not None and fail_on not in SEVERITY_RANK:
        raise NkiUsageError("err_bad_argument", f"--fail-on {fail_on!r} is not a severity", "use high, medium or low")
    result = run_analysis(profile_dir, source_root=source_root, calibration=calibration)
    if html is not None:
        write_text_atomic(html, report_html.render(result))
    if as_json:
        print_json(result.to_dict())
    else:
        report_text.render(result, console)
        if html is not None:
            console.print(f"HTML report: {html}", highlight=False)
    if fail_on and any(SEVERITY_RANK[f.severity] >= SEVERITY_RANK[fail_on] for f in result.findings):
        raise typer.Exit(exitcodes.FAILED)


@command
def query(
    profile_dir: Annotated[Path, typer.Argument(help="Profile directory (nkidev profile or neuron-explorer).")],
    sql: Annotated[str, typer.Argument(help="One SELECT over the tables, e.g. 'SELECT opcode, count(*) FROM Instruction GROUP BY 1'.")],
    timeout: Annotated[float, typer.Option("--timeout", help="Interrupt the query after this many seconds.")] = 60.0,
    row_cap: Annotated[int, typer.Option("--row-cap", help="Refuse results with more rows than this (err_query_too_large).")] = 100_000,
    as_json: JsonOption = False,
    fmt: Annotated[
        str, typer.Option("--format", help="table (fits the terminal: wide results become records or lose columns) | csv | json.")
    ] = "table",
    max_rows: Annotated[int, typer.Option("--max-rows", help="Rows the table view prints (csv and json print all).")] = 100,
) -> None:
    """Run a read-only SQL SELECT over a profile's tables (DuckDB; table names as in neuron-explorer).

    The query can read only the profile's own tables (no file functions, no settings), for --timeout seconds."""
    import sys

    from nkidev.analysis import report_query
    from nkidev.analysis.api import query as run_query

    if fmt not in report_query.FORMATS:
        raise NkiUsageError("err_bad_argument", f"--format {fmt!r} is not a format", f"use one of: {', '.join(report_query.FORMATS)}")
    rows = run_query(profile_dir, sql, timeout_s=timeout, max_rows=row_cap)
    if as_json or fmt == "json":
        print_json(rows)
    elif fmt == "csv":
        sys.stdout.write(report_query.to_csv(rows))
    else:
        report_query.render(rows, console, max_rows=max_rows)


@command
def compare(
    a: Annotated[str, typer.Argument(metavar="A", help="Before: a profile directory or FILE::KERNEL (profiled with the cost model).")],
    b: Annotated[str, typer.Argument(metavar="B", help="After: a profile directory or FILE::KERNEL.")],
    as_json: JsonOption = False,
    html: Annotated[Path | None, typer.Option("--html", help="Also write a self-contained HTML comparison here.")] = None,
    case: Annotated[int, typer.Option("--case", help="Input case of a FILE::KERNEL spec's task file.")] = 0,
    target: TargetOption = None,
    calibration: CalibrationOption = None,
    source_root: Annotated[
        Path | None, typer.Option("--source-root", help="Directory to find kernel files in when the profile's paths do not exist here.")
    ] = None,
    timeout: TimeoutOption = None,
    memory: MemoryOption = None,
) -> None:
    """Compare two profiles: time and per-engine deltas, bounds, findings fixed/introduced, cost per source line.

    A FILE::KERNEL side runs its task file and kernel in an isolated child stopped by --timeout / --memory."""
    from nkidev.analysis import report_compare, report_html
    from nkidev.analysis.compare import compare as run_compare
    from nkidev.sandbox.limits import cli_limits

    result = run_compare(
        a, b, case=case, target=target, source_root=source_root, limits=cli_limits(timeout, memory), calibration=calibration
    )
    if html is not None:
        write_text_atomic(html, report_html.render_compare(result))
    if as_json:
        print_json(result.to_dict())
        return
    report_compare.render(result, console)
    if html is not None:
        console.print(f"HTML comparison: {html}", highlight=False)


def write_text_atomic(path: Path, text: str) -> None:
    """Write a report next to its final name, then rename: an interrupted write never leaves half a file."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


def register(app: typer.Typer) -> None:
    """Add this package's commands to the nkidev app."""
    app.command("analyze")(analyze)
    app.command("query")(query)
    app.command("compare")(compare)
