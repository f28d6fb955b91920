"""A self-contained HTML report: zoomable engine timeline, bounds, roofline with bandwidth and engine rates,
findings with code; and the side-by-side page of `nkidev compare`.

Everything is inline (SVG, CSS, no scripts, no fonts or files from the network), so the page renders
the same offline, in CI artifacts and in a mail attachment. The timeline zooms with radio buttons and CSS.
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
svg text.small{font-size:10px;fill:#555}
.zoom input{margin-left:8px} .tl{display:flex;border:1px solid #eee;margin-top:4px}
.tl .lanes{flex:0 0 64px;font-size:12px} .tl .scroll{flex:1;overflow-x:auto} .tl .inner{width:100%}
td.up{color:#d62728} td.down{color:#2ca02c}
"""


ZOOMS = (1, 4, 16, 64)
TICKS = 40  # time-axis ticks; the minor ones show from 4x zoom on


def _zoom_css(uids: tuple[str, ...] = ("",)) -> str:
    """Script-free zoom: radio buttons before the timeline widen its inner box; the SVG inside draws in %."""
    rules = [f"#tz{u}{z}:checked~.tl .inner{{width:{100 * z}%}}" for u in uids for z in ZOOMS]
    rules += [f"#tz{u}1:checked~.tl .minor{{display:none}}" for u in uids]
    return "".join(rules)


def _runs(lane: list[float]) -> list[tuple[int, int, float]]:
    """(first bin, bins, busy fraction) runs of equal (5%-quantized) busy fraction, so a long busy stretch is one rect."""
    out: list[tuple[int, int, float]] = []
    for b, frac in enumerate(lane):
        q = round(frac * 20) / 20
        if out and out[-1][2] == q and out[-1][0] + out[-1][1] == b:
            out[-1] = (out[-1][0], out[-1][1] + 1, q)
        else:
            out.append((b, 1, q))
    return [r for r in out if r[2] > 0]


def _svg_timeline(result: AnalysisResult, uid: str = "") -> str:
    """Engine busy fraction over the kernel, zoomable (1x-64x) and scrollable without scripts."""
    tl = result.timeline or {"bins": 1, "lanes": {}}
    bins, lane_h = tl["bins"], 22
    height = lane_h * len(LANES) + 24
    parts = [f'<svg width="100%" height="{height}" role="img" aria-label="engine timeline" shape-rendering="crispEdges">']
    for i, (name, key) in enumerate(LANES):
        y = i * lane_h
        busy = result.engines.get(name, {}).get("active_ns", 0.0)
        parts.append(f"<g><title>{name}: busy {escape(fmt_ns(busy))}</title>")
        parts.append(f'<rect x="0" y="{y + 2}" width="100%" height="{lane_h - 4}" fill="#f3f3f3"/>')
        for b, n, frac in _runs(tl["lanes"].get(key, [])):
            parts.append(
                f'<rect x="{100 * b / bins:.4f}%" y="{y + 2}" width="{max(100 * n / bins, 0.02):.4f}%" '
                f'height="{lane_h - 4}" fill="{COLORS[key]}" fill-opacity="{0.15 + 0.85 * frac:.2f}"/>'
            )
        parts.append("</g>")
    y = lane_h * len(LANES)
    for k in range(TICKS + 1):
        x = 100 * k / TICKS
        cls = "" if k % (TICKS // 5) == 0 else ' class="minor"'
        anchor = "start" if k == 0 else "end" if k == TICKS else "middle"
        parts.append(
            f'<g{cls}><line x1="{x:.3f}%" x2="{x:.3f}%" y1="{y}" y2="{y + 5}" stroke="#888"/>'
            f'<text x="{x:.3f}%" y="{y + 17}" text-anchor="{anchor}">{escape(fmt_ns(result.total_time_ns * k / TICKS))}</text></g>'
        )
    parts.append("</svg>")
    labels = "".join(f'<div style="height:{lane_h}px;line-height:{lane_h}px">{name}</div>' for name, _ in LANES)
    radios = "".join(
        f'<input type="radio" name="tz{uid}" id="tz{uid}{z}"{" checked" if z == 1 else ""}><label for="tz{uid}{z}">{z}x</label> '
        for z in ZOOMS
    )
    return (
        f'<div class="zoom">zoom {radios}<span class="meta">(scroll sideways when zoomed)</span>'
        f'<div class="tl"><div class="lanes">{labels}</div><div class="scroll"><div class="inner">{"".join(parts)}</div></div></div></div>'
    )


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


def _si(v: float, unit: str) -> str:
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= scale:
            return f"{v / scale:.3g} {prefix}{unit}"
    return f"{v:.3g} {unit}"


def rates(result: AnalysisResult) -> list[dict]:
    """Achieved against peak for every ceiling of the kernel: HBM and DMA bytes/s, TensorE FLOP/s, engine busy."""
    inp, total = result.bounds["inputs"], result.total_time_ns
    ceil = inp["memory_ceiling"]
    seconds = total / 1e9 if total else None
    out = []

    def add(name, achieved, peak, unit, note=""):
        out.append(
            {
                "name": name,
                "achieved": achieved,
                "peak": peak,
                "unit": unit,
                "fraction": achieved / peak if achieved is not None and peak else None,
                "note": note,
            }
        )

    binding = ceil["binding"]
    add("HBM", ceil["hbm_bytes"] / seconds if seconds else None, ceil["hbm_bytes_per_s"], "B/s", "binds" if binding == "HBM" else "")
    add(
        "DMA", inp["dma_transfer_bytes"] / seconds if seconds else None, ceil["dma_bytes_per_s"], "B/s", "binds" if binding == "DMA" else ""
    )
    add("TensorE", inp["hw_flops"] / seconds if seconds else None, inp["te_peak_flops_per_s"], "FLOP/s")
    for name in ("Vector", "Scalar", "GpSimd"):
        e = result.engines.get(name, {})
        add(f"{name} busy", e.get("active_ns", 0.0), total, "ns")
    return out


def _rate_bars(result: AnalysisResult, x0: int, width: int, top: int) -> list[str]:
    parts = [f'<text x="{x0}" y="{top - 8}" font-weight="bold">achieved / peak, over the kernel time</text>']
    bar_w = width - 150
    for i, r in enumerate(rates(result)):
        y = top + i * 34
        frac = min(r["fraction"] or 0.0, 1.0)
        label = f"{r['name']}{' (binding)' if r['note'] else ''}"
        if r["unit"] == "ns":
            value = f"{100 * frac:.0f}% of the kernel time"
        elif r["achieved"] is None or not r["peak"]:
            value = "n/a (profile lacks the peak)"
        else:
            value = f"{_si(r['achieved'], r['unit'])} of {_si(r['peak'], r['unit'])} ({100 * (r['fraction'] or 0):.0f}%)"
        parts.append(f'<text x="{x0}" y="{y + 12}">{escape(label)}</text>')
        parts.append(f'<rect x="{x0 + 110}" y="{y + 2}" width="{bar_w}" height="12" fill="#eee"/>')
        color = COLORS["dma"] if r["name"] in ("HBM", "DMA") else COLORS["tensor"] if r["name"] == "TensorE" else "#59a14f"
        parts.append(
            f'<rect x="{x0 + 110}" y="{y + 2}" width="{bar_w * frac:.1f}" height="12" fill="{color}"><title>{escape(value)}</title></rect>'
        )
        parts.append(f'<text x="{x0 + 110}" y="{y + 27}" class="small">{escape(value)}</text>')
    return parts


def _svg_roofline(result: AnalysisResult, width: int = 900, height: int = 320) -> str:
    """Log-log roofline (FLOP/s against FLOPs per HBM byte, with the HBM and DMA roofs and the kernel's point) and,
    for every kernel, bars of achieved against peak bandwidth and engine rates."""
    inp = result.bounds["inputs"]
    ceil = inp["memory_ceiling"]
    peak, total = inp["te_peak_flops_per_s"], result.total_time_ns
    flops, hbm_bytes = inp["hw_flops"], ceil["hbm_bytes"]
    roof_bw = [(name, bw) for name, bw in (("HBM", ceil["hbm_bytes_per_s"]), ("DMA", ceil["dma_bytes_per_s"])) if bw]
    plot_w, pad_l, pad_b = 420, 62, 40
    parts = [f'<svg width="{width}" height="{height}" role="img" aria-label="roofline">']
    parts += _rate_bars(result, plot_w + 40, width - plot_w - 50, 30)
    if not (peak and roof_bw and total):
        parts.append('<text x="10" y="40">Roofline needs the Metadata peaks (TensorE and DMA).</text></svg>')
        return "".join(parts)
    bw_min = min(bw for _, bw in roof_bw)
    ridge = peak / bw_min
    ai = flops / hbm_bytes if flops and hbm_bytes else None
    achieved = flops / (total / 1e9) if flops else None
    anchor = [ridge] + ([ai] if ai else [])
    x_lo, x_hi = math.floor(math.log10(min(anchor) / 10)), math.ceil(math.log10(max(anchor) * 10))
    y_hi = math.ceil(math.log10(peak * 2))
    y_lo = min(math.floor(math.log10(achieved / 10)), y_hi - 4) if achieved else y_hi - 4

    def px(v: float) -> float:
        return pad_l + (math.log10(v) - x_lo) / (x_hi - x_lo) * (plot_w - pad_l - 10)

    def py(v: float) -> float:
        return height - pad_b - (math.log10(max(v, 10.0**y_lo)) - y_lo) / (y_hi - y_lo) * (height - pad_b - 20)

    parts.append(
        f'<rect x="{pad_l}" y="{py(10**y_hi):.1f}" width="{plot_w - pad_l - 10}" '
        f'height="{py(10**y_lo) - py(10**y_hi):.1f}" fill="none" stroke="#bbb"/>'
    )
    for e in range(x_lo, x_hi + 1):  # x ticks: every decade, labelled
        x = px(10.0**e)
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{py(10**y_lo):.1f}" y2="{py(10**y_hi):.1f}" stroke="#eee"/>')
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{py(10**y_lo):.1f}" y2="{py(10**y_lo) + 5:.1f}" stroke="#666"/>')
        parts.append(f'<text x="{x:.1f}" y="{py(10**y_lo) + 17:.1f}" text-anchor="middle">{_si(10.0**e, "")}</text>')
    for e in range(y_lo, y_hi + 1):  # y ticks
        y = py(10.0**e)
        parts.append(f'<line x1="{pad_l}" x2="{plot_w - 10}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
        parts.append(f'<line x1="{pad_l - 5}" x2="{pad_l}" y1="{y:.1f}" y2="{y:.1f}" stroke="#666"/>')
        parts.append(f'<text x="{pad_l - 8}" y="{y + 4:.1f}" text-anchor="end">{_si(10.0**e, "")}</text>')
    xs = [10 ** (x_lo + k * (x_hi - x_lo) / 80) for k in range(81)]
    for k, (name, bw) in enumerate(sorted(roof_bw, key=lambda r: r[1])):
        roof = " ".join(f"{px(x):.1f},{py(min(peak, x * bw)):.1f}" for x in xs)
        dash = "" if bw == bw_min else ' stroke-dasharray="5,4"'
        parts.append(f'<polyline points="{roof}" fill="none" stroke="{"#333" if bw == bw_min else "#999"}" stroke-width="2"{dash}/>')
        lx = 10 ** (x_lo + 0.35 + 0.5 * k)  # the lower roof labelled below its line, the upper one above
        dy = 16 if k == 0 else -8
        parts.append(f'<text x="{px(lx) + 4:.1f}" y="{py(lx * bw) + dy:.1f}" fill="#555">{name} {bw / 1e9:.0f} GB/s</text>')
    parts.append(f'<text x="{plot_w - 12}" y="{py(peak) - 6:.1f}" text-anchor="end">TensorE peak {peak / 1e12:.1f} TFLOP/s</text>')
    if ai and achieved:
        right = px(ai) > plot_w * 0.6
        parts.append(f'<circle cx="{px(ai):.1f}" cy="{py(achieved):.1f}" r="5" fill="#d62728"><title>kernel</title></circle>')
        parts.append(
            f'<text x="{px(ai) + (-8 if right else 8):.1f}" y="{py(achieved) + 16:.1f}" text-anchor="{"end" if right else "start"}">'
            f"kernel: {achieved / 1e12:.2f} TFLOP/s, {ai:.1f} FLOP/B</text>"
        )
    else:
        bottom = py(10.0**y_lo)
        parts.append(f'<text x="{plot_w - 14}" y="{bottom - 24:.1f}" text-anchor="end">no TensorE FLOPs: no point to plot;</text>')
        parts.append(f'<text x="{plot_w - 14}" y="{bottom - 10:.1f}" text-anchor="end">the bars show its bandwidth and engines</text>')
    parts.append(f'<text x="{pad_l}" y="{height - 6}">FLOPs per HBM byte (log)</text>')
    parts.append('<text x="4" y="12">FLOP/s (log)</text>')
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


def _ceiling_note(result: AnalysisResult) -> str:
    c = result.bounds["inputs"]["memory_ceiling"]
    if not c["binding"]:
        return "unknown (the profile lacks Metadata.dma_ddr_bandwidth)"
    return (
        f"HBM {(c['hbm_bytes_per_s'] or 0) / 1e9:.0f} GB/s for {fmt_bytes(c['hbm_bytes'])}, "
        f"DMA {(c['dma_bytes_per_s'] or 0) / 1e9:.0f} GB/s "
        f"for {fmt_bytes(c['dma_bytes'])}; {c['binding']} binds"
    )


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
<meta name="viewport" content="width=device-width, initial-scale=1"><style>{CSS}{_zoom_css()}</style></head>
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
<div class="meta">Memory bounds use the binding ceiling: {escape(_ceiling_note(result))}</div>
{_svg_bounds(result)}
<h2>Roofline, bandwidth and engine rates</h2>
{_svg_roofline(result)}
<h2 id="findings">Findings ({len(result.findings)})</h2>
{findings}
<h2>Investigations</h2>
{_investigations_table(result)}
</body></html>
"""


def _cell(delta: float | None, fmt=fmt_ns) -> str:
    if delta is None:
        return "<td class='n'>?</td>"
    cls = "up" if delta > 0 else "down" if delta < 0 else ""
    sign = "+" if delta > 0 else "-" if delta < 0 else ""
    return f"<td class='n {cls}'>{sign}{escape(fmt(abs(delta)))}</td>"


def _pair_bar(a: float | None, b: float | None, top: float) -> str:
    def bar(v, color):
        w = 0 if not v or not top else 100 * v / top
        return f"<div style='height:7px;margin:1px 0;background:{color};width:{w:.1f}%'></div>"

    return f"<td style='width:260px'>{bar(a, '#999')}{bar(b, '#4e79a7')}</td>"


def render_compare(c) -> str:
    """The `nkidev compare --html` page: A (grey) against B (blue), then both timelines."""
    a, b, t = c.a.result, c.b.result, c.time
    speed = t["speedup"]
    cards = [
        ("A: " + c.a.label, fmt_ns(t["a_ns"])),
        ("B: " + c.b.label, fmt_ns(t["b_ns"])),
        ("B vs A", f"{speed:.2f}x faster" if speed and speed >= 1 else f"{1 / speed:.2f}x slower" if speed else "?"),
    ]
    top = max([e["a"] or 0 for e in c.engines.values()] + [e["b"] or 0 for e in c.engines.values()]) or 1
    engines = "".join(
        f"<tr><td>{name}</td><td class='n'>{escape(fmt_ns(e['a']))}</td><td class='n'>{escape(fmt_ns(e['b']))}</td>"
        f"{_cell(e['delta'])}{_pair_bar(e['a'], e['b'], top)}</tr>"
        for name, e in c.engines.items()
    )
    bound_rows = []
    for key, v in c.bounds.items():
        if key == "binding_memory_ceiling":
            bound_rows.append(f"<tr><td>binding memory ceiling</td><td>{v['a']}</td><td>{v['b']}</td><td></td></tr>")
        elif key == "dma_transfer_bytes":
            bound_rows.append(
                f"<tr><td>DMA bytes</td><td class='n'>{fmt_bytes(v['a'])}</td><td class='n'>{fmt_bytes(v['b'])}</td>"
                f"{_cell(v['delta'], fmt_bytes)}</tr>"
            )
        else:
            bound_rows.append(
                f"<tr><td>{escape(key.removesuffix('_ns'))}</td><td class='n'>{escape(fmt_ns(v['a']))}</td>"
                f"<td class='n'>{escape(fmt_ns(v['b']))}</td>{_cell(v['delta'])}</tr>"
            )
    f = c.findings

    def items(xs, tag):
        return "".join(
            f"<div class='finding {x['severity']}' data-change='{tag}'><span class='sev {x['severity']}'>{tag}</span> "
            f"<b>{x['kind']}</b> ~{escape(fmt_ns(x['time_gap_ns']))} <span class='meta'>{escape(', '.join(x['source_lines']))}</span>"
            f"<p>{escape(x['summary'])}</p></div>"
            for x in xs
        )

    remaining = "".join(
        f"<tr><td>{x['kind']}</td><td>{escape(', '.join(x['b']['source_lines']))}</td>{_cell(x['time_gap_delta_ns'])}</tr>"
        for x in f["remaining"]
    )
    line_top = max([max(r["cost_a_ns"], r["cost_b_ns"]) for r in c.lines] or [1]) or 1
    lines = "".join(
        f"<tr><td><code>{escape(r['code'][:110])}</code></td><td class='n'>{escape(fmt_ns(r['cost_a_ns'])) if r['a'] else '-'}</td>"
        f"<td class='n'>{escape(fmt_ns(r['cost_b_ns'])) if r['b'] else '-'}</td>{_cell(r['delta_ns'])}"
        f"{_pair_bar(r['cost_a_ns'], r['cost_b_ns'], line_top)}</tr>"
        for r in c.lines
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>nkidev compare</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>{CSS}{_zoom_css(("a", "b"))}</style></head>
<body>
<h1>nkidev compare</h1>
<div class="meta">A = grey, B = blue &middot; targets {escape(a.target)} / {escape(b.target)}</div>
<div class="cards">{"".join(f'<div class="card">{escape(k)}<b>{escape(v)}</b></div>' for k, v in cards)}</div>
<h2>Engine busy time</h2>
<table><tr><th>engine</th><th>A</th><th>B</th><th>change</th><th></th></tr>{engines}</table>
<h2>Bounds</h2>
<table><tr><th>bound</th><th>A</th><th>B</th><th>change</th></tr>{"".join(bound_rows)}</table>
<h2 id="findings">Findings: {len(f["fixed"])} fixed, {len(f["introduced"])} introduced, {len(f["remaining"])} remaining</h2>
{items(f["fixed"], "fixed")}{items(f["introduced"], "introduced")}
{"<table><tr><th>remaining</th><th>lines (B)</th><th>change</th></tr>" + remaining + "</table>" if remaining else ""}
<h2>Cost per source line</h2>
<div class="meta">Engine instruction time plus DMA transfer time of each line, lines matched by their code.</div>
<table><tr><th>code</th><th>A</th><th>B</th><th>change</th><th></th></tr>{lines}</table>
<h2>Timeline A</h2>{_svg_timeline(a, "a")}
<h2>Timeline B</h2>{_svg_timeline(b, "b")}
</body></html>
"""
