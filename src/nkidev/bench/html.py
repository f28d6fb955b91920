"""The leaderboard page of a bench run: one row per task, the summary and the stamps; self-contained (no
scripts, no network)."""

from __future__ import annotations

from html import escape

_STYLE = """
body{font:14px system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}
th,td{padding:4px 10px;border-bottom:1px solid #ddd;text-align:right}
th:first-child,td:first-child,td.text{text-align:left}
.pass{color:#0a7a2f;font-weight:600}.fail{color:#b00020;font-weight:600}
.bar{display:inline-block;height:10px;background:#3b82f6;vertical-align:middle}
.meta{color:#555;font-size:12px}
"""


def _num(value, fmt: str) -> str:
    return "" if value is None else format(value, fmt)


def _row(row: dict, detail: dict) -> str:
    status = '<span class="pass">PASS</span>' if row["passed"] else '<span class="fail">FAIL</span>'
    pct = row["percent_of_peak"]
    bar = f'<span class="bar" style="width:{pct:.0f}px"></span> ' if pct else ""
    why = ", ".join(row["verdicts"]) or ""
    bound = ", ".join(sorted({c["bound"] for c in detail.get("cases", [])}))
    cells = [
        f"<td>{escape(row['task'])}</td>",
        f"<td>{status}</td>",
        f"<td>{_num(row['total_time_ns'] and row['total_time_ns'] / 1e3, ',.1f')}</td>",
        f"<td>{_num(row['baseline_time_ns'] and row['baseline_time_ns'] / 1e3, ',.1f')}</td>",
        f"<td>{_num(row['speedup'], '.2f')}</td>",
        f"<td>{bar}{_num(pct, '.1f')}</td>",
        f'<td class="text">{escape(bound)}</td>',
        f'<td class="text">{escape(why)}</td>',
    ]
    return "<tr>" + "".join(cells) + "</tr>"


def leaderboard(result: dict) -> str:
    """The HTML text of a `run_suite` result."""
    meta, summary, details = result.get("meta", {}), result["summary"], result.get("details", {})
    head = "".join(f"<th>{h}</th>" for h in ("task", "result", "time (us)", "baseline (us)", "speedup", "% of peak", "bound", "verdicts"))
    rows = "\n".join(_row(r, details.get(r["task"], {})) for r in result["tasks"])
    summ = "".join(f"<tr><td>{escape(k)}</td><td>{escape(str(v))}</td></tr>" for k, v in summary.items())
    stamp = " · ".join(f"{escape(k)}: {escape(str(v))}" for k, v in meta.items())
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>nkidev bench</title>"
        f"<style>{_STYLE}</style></head><body>"
        f"<h1>nkidev bench on {escape(str(meta.get('target', '')))}</h1>"
        f"<p class='meta'>{stamp}</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>\n{rows}\n</tbody></table>"
        "<h2>Summary</h2>"
        f"<table>{summ}</table>"
        "<p class='meta'>% of peak: the roofline-ideal time (the task's FLOPs at the engines' peak rates, or its "
        "minimum bytes at the HBM bandwidth, whichever is longer) over the predicted time. fast_p: the share of tasks "
        "correct and at least p times as fast as the baseline.</p>"
        "</body></html>\n"
    )
