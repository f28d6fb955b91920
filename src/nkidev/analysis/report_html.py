"""A self-contained HTML report: engine timeline, bounds and roofline charts, findings with code.

Everything is inline (SVG, CSS, no scripts, no fonts or files from the network), so the page renders
the same offline, in CI artifacts and in a mail attachment.
"""

from __future__ import annotations

import math
from html import escape

from nkidev.analysis.findings import fmt_bytes, fmt_ns, pct
from nkidev.analysis.report_text import BOUND_ROWS
from nkidev.analysis.result import AnalysisResult

LANES = (("Tensor", "tensor"), ("Vector", "vector"), ("Scalar", "scalar"), ("GpSimd", "gpsimd"), ("DMA", "dma"))
COLORS = {
    "tensor": "#4e79a7",
    "vector": "#59a14f",
    "scalar": "#f28e2b",
    "gpsimd": "#b07aa1",
    "dma": "#e15759",
    "memory": "#e15759",
    "compute": "#4e79a7",
    "pipeline": "#9c755f",
}

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1280px;color:#222}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
.meta{color:#555} .cards{display:flex;gap:12px;flex-wrap:wrap;margin:12px 0}
.card{border:1px solid #ddd;border-radius:6px;padding:8px 14px;min-width:150px}
.card b{display:block;font-size:20px}
table{border-collapse:collapse;margin:6px 0} td,th{border-bottom:1px solid #eee;padding:3px 10px;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.finding{border:1px solid #ddd;border-left:6px solid #999;border-radius:4px;padding:8px 12px;margin:10px 0}
.finding.high{border-left-color:#d62728} .finding.medium{border-left-color:#ff9f1c}
.finding.low{border-left-color:#17becf}
.sev{font-weight:bold;text-transform:uppercase;font-size:12px;padding:1px 6px;border-radius:3px;color:#fff}
.sev.high{background:#d62728} .sev.medium{background:#ff9f1c} .sev.low{background:#17becf}
pre{background:#f7f7f7;border:1px solid #eee;padding:6px 8px;overflow-x:auto;margin:6px 0;font-size:12.5px}
pre .hit{background:#fff3b0;display:inline-block;width:100%} .ln{color:#999;user-select:none}
.warn{color:#8a6d3b;background:#fcf8e3;border:1px solid #faebcc;padding:6px 10px;border-radius:4px;margin:4px 0}
svg text{font:11px system-ui,sans-serif;fill:#333}
details{margin:4px 0} summary{cursor:pointer;color:#555}
"""


def _svg_timeline(result: AnalysisResult, width: int = 1200) -> str:
    tl = result.timeline or {"bins": 1, "lanes": {}}
    bins, label_w, lane_h = tl["bins"], 70, 22
    scale = (width - label_w) / bins
    height = lane_h * len(LANES) + 24
    parts = [f'<svg width="{width}" height="{height}" role="img" aria-label="engine timeline" shape-rendering="crispEdges">']
    for i, (name, key) in enumerate(LANES):
        y = i * lane_h
        busy = result.engines.get(name, {}).get("active_ns", 0.0)
        parts.append(f'<g><title>{name}: busy {escape(fmt_ns(busy))}</title><text x="0" y="{y + 15}">{name}</text>')
        parts.append(f'<rect x="{label_w}" y="{y + 2}" width="{width - label_w}" height="{lane_h - 4}" fill="#f3f3f3"/>')
        for b, frac in enumerate(tl["lanes"].get(key, [])):
            if frac > 0:
                parts.append(
                    f'<rect x="{label_w + b * scale:.1f}" y="{y + 2}" width="{max(scale, 0.6):.2f}" '
                    f'height="{lane_h - 4}" fill="{COLORS[key]}" fill-opacity="{0.15 + 0.85 * frac:.2f}"/>'
                )
        parts.append("</g>")
    y = lane_h * len(LANES) + 14
    for k in range(6):
        x = label_w + k * (width - label_w - 1) / 5
        parts.append(
            f'<text x="{x:.0f}" y="{y}" text-anchor="{"start" if k == 0 else "end" if k == 5 else "middle"}">'
            f"{escape(fmt_ns(result.total_time_ns * k / 5))}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _svg_bounds(result: AnalysisResult, width: int = 780) -> str:
    rows = [("total", "total_time_ns", "pipeline")] + [(k.removesuffix("_ns"), k, fam) for fam, k, _ in BOUND_ROWS]
    label_w, bar_h = 250, 20
    top = max([result.total_time_ns] + [result.bounds.get(k) or 0 for _, k, _ in rows]) or 1
    height = bar_h * len(rows) + 10
    parts = [f'<svg width="{width}" height="{height}" role="img" aria-label="performance bounds">']
    for i, (label, key, family) in enumerate(rows):
        value = result.bounds.get(key)
        y = i * bar_h
        w = 0 if value is None else (width - label_w - 110) * value / top
        parts.append(f'<text x="0" y="{y + 14}">{escape(label)}</text>')
        fill = "#555" if key == "total_time_ns" else COLORS[family]
        parts.append(f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{bar_h - 6}" fill="{fill}"/>')
        parts.append(f'<text x="{label_w + w + 6:.1f}" y="{y + 14}">{escape(fmt_ns(value))} ({pct(value, result.total_time_ns)})</text>')
    parts.append("</svg>")
    return "".join(parts)


def _svg_roofline(result: AnalysisResult, width: int = 420, height: int = 300) -> str:
    """Log-log roofline: FLOP/s against FLOPs per DMA byte, with the kernel's point."""
    inp = result.bounds["inputs"]
    peak, bw = inp["te_peak_flops_per_s"], inp["dma_bw_peak_bytes_per_s"]
    flops, nbytes, total = inp["hw_flops"], inp["dma_transfer_bytes"], result.total_time_ns
    if not (peak and bw and flops and nbytes and total):
        return "<p class='meta'>Roofline needs TensorE FLOPs, DMA bytes and the Metadata peaks.</p>"
    ai, achieved, ridge = flops / nbytes, flops / (total / 1e9), peak / bw
    x_lo, x_hi = math.floor(math.log10(min(ai, ridge) / 10)), math.ceil(math.log10(max(ai, ridge) * 10))
    y_hi = math.ceil(math.log10(peak * 2))
    y_lo = min(math.floor(math.log10(max(achieved, 1) / 10)), y_hi - 3)
    pad = 46

    def px(v: float) -> float:
        return pad + (math.log10(v) - x_lo) / (x_hi - x_lo) * (width - pad - 10)

    def py(v: float) -> float:
        return height - pad + 14 - (math.log10(v) - y_lo) / (y_hi - y_lo) * (height - pad - 10)

    xs = [10 ** (x_lo + k * (x_hi - x_lo) / 60) for k in range(61)]
    roof = " ".join(f"{px(x):.1f},{py(min(peak, x * bw)):.1f}" for x in xs)
    parts = [
        f'<svg width="{width}" height="{height}" role="img" aria-label="roofline">',
        f'<polyline points="{roof}" fill="none" stroke="#333" stroke-width="2"/>',
        f'<circle cx="{px(ai):.1f}" cy="{py(achieved):.1f}" r="5" fill="#d62728"><title>kernel</title></circle>',
        f'<text x="{px(ai) + (8 if px(ai) < width * 0.5 else -8):.1f}" y="{py(achieved) + 4:.1f}" '
        f'text-anchor="{"start" if px(ai) < width * 0.5 else "end"}">kernel: {achieved / 1e12:.2f} TFLOP/s, '
        f"{ai:.1f} FLOP/B</text>",
        f'<text x="{width - 10}" y="{py(peak) - 6:.1f}" text-anchor="end">TensorE peak {peak / 1e12:.1f} TFLOP/s</text>',
        f'<text x="{pad}" y="{height - 8}">FLOPs per DMA byte (log)</text>',
        '<text x="4" y="12">FLOP/s (log)</text>',
    ]
    for e in range(x_lo, x_hi + 1):
        parts.append(f'<text x="{px(10**e):.1f}" y="{height - 22}" text-anchor="middle">1e{e}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _code(source: dict) -> str:
    if not source["context"]:
        note = "source file not found; pass --source-root DIR" if source["line"] else "no source location"
        return f"<pre>{escape(source['location'])}  <span class='ln'>({note})</span></pre>"
    rows = []
    for c in source["context"]:
        text = f"<span class='ln'>{c['line']:>5} </span>{escape(c['text'])}"
        rows.append(f"<span class='hit'>{text}</span>" if c["line"] == source["line"] else text)
    return f"<pre title='{escape(source['path'] or '')}'>{escape(source['location'])}\n" + "\n".join(rows) + "</pre>"


def _finding(i: int, f, total: float) -> str:
    import json

    code = "".join(_code(s) for s in f.source)
    evidence = escape(json.dumps(f.evidence, indent=1, default=str))
    return (
        f"<div class='finding {f.severity}' data-kind='{f.kind}'>"
        f"<div><span class='sev {f.severity}'>{f.severity}</span> <b>{i}. {f.kind}</b> &nbsp;"
        f"~{escape(fmt_ns(f.time_gap_ns))} ({pct(f.time_gap_ns, total)} of the kernel) &nbsp;"
        f"<span class='meta'>{escape(', '.join(f.source_lines))}</span></div>"
        f"<p>{escape(f.summary)}</p>{code}<details><summary>evidence</summary><pre>{evidence}</pre></details>"
        f"</div>"
    )


def _engines_table(result: AnalysisResult) -> str:
    rows = "".join(
        f"<tr><td>{name}{' (bottleneck)' if name == result.bottleneck_engine else ''}</td>"
        f"<td class='n'>{escape(fmt_ns(e['active_ns']))}</td><td class='n'>{e['active_percent']:.0f}%</td>"
        f"<td class='n'>{e['instruction_count']}</td>"
        f"<td class='n'>{escape(fmt_bytes(e['transfer_bytes'])) if 'transfer_bytes' in e else ''}</td></tr>"
        for name, e in result.engines.items()
    )
    return f"<table><tr><th>engine</th><th>busy</th><th>of total</th><th>instructions</th><th>bytes</th></tr>{rows}</table>"


def _investigations_table(result: AnalysisResult) -> str:
    rows = []
    for name, inv in result.investigations.items():
        state = (
            (f"{inv['findings']} finding(s)" if inv["findings"] else "ran, nothing found")
            if inv["status"] == "ran"
            else f"{inv['status'].replace('_', ' ')}: {inv['reason']}"
        )
        rows.append(f"<tr><td>{name}</td><td>{escape(state)}</td></tr>")
    return "<table>" + "".join(rows) + "</table>"


def render(result: AnalysisResult) -> str:
    total = result.total_time_ns
    cards = [
        ("kernel time", fmt_ns(total)),
        ("bottleneck", result.bottleneck_engine or "none"),
        ("findings", str(len(result.findings))),
        ("DMA bytes", fmt_bytes(result.bounds["inputs"]["dma_transfer_bytes"])),
    ]
    ratio = result.bounds["inputs"]["excess_ratio"]
    if ratio:
        cards.append(("bytes moved / needed", f"{ratio:.1f}x"))
    findings = (
        "".join(_finding(i, f, total) for i, f in enumerate(result.findings, 1))
        or "<p>No inefficiency costs more than 1% of the kernel time.</p>"
    )
    warnings = "".join(f"<div class='warn'>{escape(w)}</div>" for w in result.warnings)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>nkidev analysis</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>{CSS}</style></head>
<body>
<h1>nkidev profile analysis</h1>
<div class="meta">{escape(result.profile_dir)} &middot; target {escape(result.target)}</div>
<div class="cards">{"".join(f'<div class="card">{escape(k)}<b>{escape(v)}</b></div>' for k, v in cards)}</div>
{warnings}
<h2>Engine timeline</h2>
<div class="meta">Busy fraction of each engine over the kernel (darker = busier).</div>
{_svg_timeline(result)}
{_engines_table(result)}
<h2>Performance bounds</h2>
<div style="display:flex;gap:24px;flex-wrap:wrap;align-items:flex-start">
<div>{_svg_bounds(result)}</div><div>{_svg_roofline(result)}</div></div>
<h2 id="findings">Findings ({len(result.findings)})</h2>
{findings}
<h2>Investigations</h2>
{_investigations_table(result)}
</body></html>
"""
