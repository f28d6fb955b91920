"""report.json and report.html of an optimization run: the progression, why each candidate was rejected, the diff
of the best against the original and the findings the best fixed. Self-contained HTML: no scripts, no network."""

from __future__ import annotations

import difflib
import html
import json

from nkidev.atomic import write_bytes


def findings_fixed(baseline: list[dict], best: list[dict]) -> list[str]:
    """Finding kinds the original had and the best no longer has."""
    after = {f["kind"] for f in best}
    return sorted({f["kind"] for f in baseline} - after)


def report_data(session, result: dict) -> dict:
    st = session.state
    base = (st["baseline"] or {}).get("findings") or []
    return {
        **result,
        "provider": st["provider"],
        "settings": {k: v for k, v in st["settings"].items() if v is not None},
        "elapsed_s": st["elapsed_s"],
        "tokens": st["tokens"],
        "usd": st["usd"],
        "iterations": [{k: v for k, v in it.items() if k != "sha256"} for it in st["iterations"]],
        "baseline_findings": base,
        "best_findings": st["best"]["findings"],
        "findings_fixed": findings_fixed(base, st["best"]["findings"]),
    }


def write_reports(session, result: dict) -> None:
    data = report_data(session, result)
    write_bytes(session.out / "report.json", (json.dumps(data, indent=2, default=str) + "\n").encode("utf-8"))
    diff = difflib.unified_diff(
        session.original().splitlines(), (session.out / "best.py").read_text().splitlines(), "original.py", "best.py", lineterm=""
    )
    write_bytes(session.out / "report.html", render(data, "\n".join(diff)).encode("utf-8"))


def _us(ns) -> str:
    return "-" if ns is None else f"{ns / 1e3:,.2f} µs"


def _chart(data: dict) -> str:
    """A bar per iteration (its time; none when it failed), accepted ones filled, the baseline as a line."""
    its = data["iterations"]
    base = data["baseline"]["total_time_ns"] or 1.0
    top = max([base] + [it["total_time_ns"] or 0.0 for it in its])
    width, height, bar = max(200, 28 * len(its) + 40), 160, 20
    parts = [f'<svg width="{width}" height="{height + 30}" role="img" aria-label="time per iteration">']
    y_base = height - height * base / top
    parts.append(f'<line x1="0" x2="{width}" y1="{y_base:.1f}" y2="{y_base:.1f}" stroke="#888" stroke-dasharray="4"/>')
    parts.append(f'<text x="2" y="{max(10, y_base - 3):.1f}" font-size="10">baseline {_us(base)}</text>')
    for i, it in enumerate(its):
        x = 30 + 28 * i
        t = it["total_time_ns"]
        if t:
            h = height * t / top
            fill = "#2a7" if it["accepted"] else "#ccc"
            parts.append(f'<rect x="{x}" y="{height - h:.1f}" width="{bar}" height="{h:.1f}" fill="{fill}"><title>{_us(t)}</title></rect>')
        else:
            parts.append(f'<text x="{x + 5}" y="{height - 4}" font-size="12" fill="#c33">✕</text>')
        parts.append(f'<text x="{x + 3}" y="{height + 14}" font-size="10">{it["index"]}</text>')
    parts.append("</svg>")
    return "".join(parts)


def render(data: dict, diff: str) -> str:
    e = html.escape
    best = data["best"]
    rows = []
    for it in data["iterations"]:
        status = "accepted" if it["accepted"] else "rejected"
        speedup = "" if it["speedup"] is None else f"{it['speedup']:.2f}×"
        rows.append(
            f"<tr class={status}><td>{it['index']}</td><td>{status}</td><td>{_us(it['total_time_ns'])}</td>"
            f"<td>{speedup}</td><td>{e(', '.join(it['verdicts']))}</td>"
            f"<td>{e(it['reason'])}</td></tr>"
        )
    best_speedup = f"{best['speedup']:.2f}×" if best["speedup"] else "-"
    fixed = ", ".join(data["findings_fixed"]) or "none"
    kept = ", ".join(sorted({f["kind"] for f in data["best_findings"]})) or "none"
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>nkidev optimize: {e(data["kernel"])}</title>
<style>body{{font-family:sans-serif;margin:2em}} table{{border-collapse:collapse}} td,th{{border:1px solid #ddd;padding:4px 8px;
vertical-align:top}} tr.accepted td{{background:#efe}} pre{{background:#f6f6f6;padding:1em;overflow:auto}} .add{{color:#070}}
.del{{color:#a00}}</style></head><body>
<h1>nkidev optimize: {e(data["kernel"])}</h1>
<p>target {e(data["target"])} · provider {e(data["provider"])} · stopped: <b>{e(str(data["stopped"]))}</b> ·
{len(data["iterations"])} candidates in {data["elapsed_s"]:.1f} s</p>
<p>baseline {_us(data["baseline"]["total_time_ns"])} → best {_us(best["total_time_ns"])} (candidate {best["index"]}),
<b>{best_speedup}</b></p>
<h2>Time per candidate</h2>{_chart(data)}
<h2>Candidates</h2><table><tr><th>#</th><th></th><th>time</th><th>speedup</th><th>verdicts</th><th>why</th></tr>
{"".join(rows)}</table>
<h2>Findings</h2><p>fixed by the best: {e(fixed)}; still present: {e(kept)}</p>
<h2>Best vs original</h2><pre>{_diff_html(diff)}</pre>
</body></html>
"""


def _diff_html(diff: str) -> str:
    out = []
    for line in diff.splitlines():
        cls = (
            "add"
            if line.startswith("+") and not line.startswith("+++")
            else "del"
            if line.startswith("-") and not line.startswith("---")
            else ""
        )
        out.append(f'<span class="{cls}">{html.escape(line)}</span>' if cls else html.escape(line))
    return "\n".join(out) or "(the best is the original)"
