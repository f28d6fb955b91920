"""The terminal report of an analysis: bounds, engine times, findings with their source lines."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from nkidev.analysis.findings import fmt_bytes, fmt_ns, pct
from nkidev.analysis.result import AnalysisResult

SEVERITY_STYLE = {"high": "bold red", "medium": "yellow", "low": "cyan"}

# (family, bound key, what the gap from the previous row measures)
BOUND_ROWS = (
    ("memory", "memory_bound_ns", "DMA idle"),
    ("memory", "memory_bound_ideal_ns", "DMA inefficiency"),
    ("memory", "memory_bound_ideal_no_reloads_ns", "excess traffic (reloads, spills)"),
    ("compute", "compute_bound_ns", "TensorE idle"),
    ("compute", "compute_bound_ideal_flops_ns", "TensorE underutilization"),
    ("compute", "compute_bound_ideal_useful_flops_ns", "transposes"),
    ("pipeline", "perfect_pipeline_ns", "serialization between engines"),
)


def bounds_table(result: AnalysisResult) -> Table:
    b, total = result.bounds, result.total_time_ns
    t = Table(title="Performance bounds", title_justify="left")
    for col, justify in (
        ("family", "left"),
        ("bound", "left"),
        ("time", "right"),
        ("of total", "right"),
        ("gap from previous", "left"),
        ("bn_speedup", "right"),
    ):
        t.add_column(col, justify=justify)
    t.add_row("", "total_time", fmt_ns(total), "100%", "", "")
    previous = {"memory": total, "compute": total, "pipeline": total}
    for family, key, gap_name in BOUND_ROWS:
        value = b.get(key)
        gap = None if value is None or previous[family] is None else previous[family] - value
        speed = b["bn_speedup"].get(key)
        t.add_row(
            family,
            key.removesuffix("_ns"),
            fmt_ns(value),
            pct(value, total),
            f"{gap_name}: {fmt_ns(gap)}" if gap is not None else gap_name,
            f"{speed:.2f}x" if speed else "-",
        )
        previous[family] = value
    return t


def engines_table(result: AnalysisResult) -> Table:
    t = Table(title="Engine busy time", title_justify="left")
    for col in ("engine", "busy", "of total", "instructions", "bytes"):
        t.add_column(col, justify="left" if col == "engine" else "right")
    for name, e in result.engines.items():
        mark = " (bottleneck)" if name == result.bottleneck_engine else ""
        t.add_row(
            name + mark,
            fmt_ns(e["active_ns"]),
            f"{e['active_percent']:.0f}%",
            str(e["instruction_count"]),
            fmt_bytes(e["transfer_bytes"]) if "transfer_bytes" in e else "",
        )
    return t


def finding_lines(result: AnalysisResult) -> list[Text]:
    out = []
    for i, f in enumerate(result.findings, 1):
        head = Text(f"{i}. ")
        head.append(f"[{f.severity}]", style=SEVERITY_STYLE[f.severity])
        head.append(f" {f.kind}", style="bold")
        head.append(f"  ~{fmt_ns(f.time_gap_ns)} ({pct(f.time_gap_ns, result.total_time_ns)} of the kernel)")
        out.append(head)
        out.append(Text("   " + f.summary))
        for s in f.source:
            code = s["text"] if s["text"] is not None else "(source file not found; pass --source-root DIR)"
            line = Text(f"   {s['location']:>22} | ", style="dim")
            line.append(code, style="green" if s["text"] is not None else "dim")
            out.append(line)
    return out


def investigations_lines(result: AnalysisResult) -> list[Text]:
    out = []
    for name, inv in result.investigations.items():
        if inv["status"] == "ran":
            state = f"{inv['findings']} finding(s)" if inv["findings"] else "ran, nothing found"
        else:
            state = f"{inv['status'].replace('_', ' ')}: {inv['reason']}"
        out.append(Text(f"  {name:<20} {state}"))
    return out


def render(result: AnalysisResult, console: Console) -> None:
    bn = result.bottleneck_engine or "none"
    console.print(Text.assemble(("Profile ", "bold"), result.profile_dir, f"  (target {result.target})"))
    console.print(Text.assemble("Kernel time ", (fmt_ns(result.total_time_ns), "bold"), "   bottleneck engine ", (bn, "bold magenta")))
    for w in result.warnings:
        console.print(Text(f"warning: {w}", style="yellow"))
    console.print(bounds_table(result))
    console.print(engines_table(result))
    console.print(Text(f"Findings ({len(result.findings)})", style="bold"))
    for line in finding_lines(result) or [Text("  none: no inefficiency above 1% of the kernel time")]:
        console.print(line, soft_wrap=True)
    console.print(Text("Investigations", style="bold"))
    for line in investigations_lines(result):
        console.print(line, soft_wrap=True)
