"""`nkidev query` output that fits the terminal: a table when it fits, one record per block when there are
few rows and many columns, else the columns that fit plus a note; CSV and JSON for scripts."""

from __future__ import annotations

import csv
import io

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

FORMATS = ("table", "csv", "json")
MAX_CELL = 40  # characters of one cell in the table view (CSV and JSON are never cut)
RECORDS_VIEW_ROWS = 5  # at most this many rows are shown one record per block when the table does not fit


def cell(value) -> str:
    return "" if value is None else str(value)


def to_csv(rows: list[dict]) -> str:
    out = io.StringIO()
    if rows:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: cell(v) for k, v in r.items()} for r in rows)
    return out.getvalue()


def _width(name: str, rows: list[dict]) -> int:
    return min(MAX_CELL, max([len(name)] + [len(cell(r[name])) for r in rows])) + 3  # borders and padding


def _table(columns: list[str], rows: list[dict], max_rows: int) -> Table:
    t = Table(show_lines=False)
    for name in columns:
        t.add_column(name, overflow="ellipsis", max_width=MAX_CELL, no_wrap=True)
    for r in rows[:max_rows]:
        t.add_row(*(Text(cell(r[c])) for c in columns))
    return t


def _records(rows: list[dict]) -> Group:
    blocks = []
    for i, r in enumerate(rows, 1):
        t = Table(title=f"row {i}", title_justify="left", show_header=False, box=None, pad_edge=False)
        t.add_column("column", style="bold", no_wrap=True)
        t.add_column("value", overflow="fold")
        for k, v in r.items():
            t.add_row(k, Text(cell(v)))
        blocks.append(t)
    return Group(*blocks)


def render(rows: list[dict], console: Console, max_rows: int = 100) -> None:
    """Print `rows` to fit `console.width`."""
    if not rows:
        console.print("0 row(s)", highlight=False)
        return
    columns = list(rows[0])
    widths = [_width(c, rows[:max_rows]) for c in columns]
    if sum(widths) + 1 <= console.width:
        console.print(_table(columns, rows, max_rows))
    elif len(rows) <= RECORDS_VIEW_ROWS:
        console.print(_records(rows))
    else:
        shown, used = [], 1
        for c, w in zip(columns, widths):
            if used + w > console.width and shown:
                break
            shown.append(c)
            used += w
        console.print(_table(shown, rows, max_rows))
        hidden = columns[len(shown) :]
        console.print(
            Text(
                f"{len(hidden)} more column(s) do not fit ({', '.join(hidden[:8])}{', ...' if len(hidden) > 8 else ''}): "
                "select fewer columns, or pass --format csv or --format json",
                style="yellow",
            )
        )
    more = len(rows) - max_rows
    console.print(f"{len(rows)} row(s)" + (f"; the first {max_rows} shown, pass --format csv for all" if more > 0 else ""), highlight=False)
