"""The terminal view of `nkidev compare`: time, engines, bounds, findings fixed/introduced, lines that changed."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from nkidev.analysis.compare import Comparison
from nkidev.analysis.findings import fmt_bytes, fmt_ns

SHOWN_LINES = 12


def _signed(ns: float | None) -> str:
    if ns is None:
        return "?"
    return ("+" if ns > 0 else "-" if ns < 0 else "") + fmt_ns(abs(ns))


def _ratio(r: float | None) -> str:
    return "-" if r is None else f"{r:.2f}x"


def render(c: Comparison, console: Console) -> None:
    t = c.time
    speed = t["speedup"]
    verdict = "faster" if speed and speed > 1 else "slower" if speed and speed < 1 else "same time"
    for tag, side, ns in (("A ", c.a, t["a_ns"]), ("B ", c.b, t["b_ns"])):
        console.print(
            Text.assemble((tag, "bold"), side.label, "  ", (fmt_ns(ns), "bold"), f"  (bottleneck {side.result.bottleneck_engine})"),
            soft_wrap=True,
        )
    factor = speed if speed and speed >= 1 else (1 / speed if speed else None)
    console.print(
        Text.assemble(
            "B is ",
            (f"{factor:.2f}x {verdict}" if factor else verdict, "bold green" if verdict == "faster" else "bold red"),
            f" ({_signed(t['delta_ns'])})",
        )
    )

    eng = Table(title="Engine busy time", title_justify="left")
    for col in ("engine", "A", "B", "change", "B/A"):
        eng.add_column(col, justify="left" if col == "engine" else "right")
    for name, e in c.engines.items():
        marks = "".join(m for m, on in zip(("A", "B"), e["bottleneck"]) if on)
        eng.add_row(
            name + (f" (bottleneck {marks})" if marks else ""), fmt_ns(e["a"]), fmt_ns(e["b"]), _signed(e["delta"]), _ratio(e["ratio"])
        )
    console.print(eng)

    bt = Table(title="Bounds", title_justify="left")
    for col in ("bound", "A", "B", "change"):
        bt.add_column(col, justify="left" if col == "bound" else "right")
    for key, v in c.bounds.items():
        if key == "binding_memory_ceiling":
            bt.add_row("binding memory ceiling", str(v["a"]), str(v["b"]), "")
        elif key == "dma_transfer_bytes":
            bt.add_row("DMA bytes", fmt_bytes(v["a"]), fmt_bytes(v["b"]), _ratio(v["ratio"]))
        else:
            bt.add_row(key.removesuffix("_ns"), fmt_ns(v["a"]), fmt_ns(v["b"]), _signed(v["delta"]))
    console.print(bt)

    f = c.findings
    console.print(
        Text(f"Findings: {len(f['fixed'])} fixed, {len(f['introduced'])} introduced, {len(f['remaining'])} remaining", style="bold")
    )
    for tag, style, items in (("fixed", "green", f["fixed"]), ("introduced", "red", f["introduced"])):
        for x in items:
            console.print(
                Text.assemble((f"  {tag:<10}", style), f" {x['kind']:<20} ~{fmt_ns(x['time_gap_ns']):>9}  {', '.join(x['source_lines'])}"),
                soft_wrap=True,
            )
    for x in f["remaining"]:
        console.print(
            Text(f"  remaining  {x['kind']:<20} {_signed(x['time_gap_delta_ns'])}  {', '.join(x['b']['source_lines'])}"), soft_wrap=True
        )

    lt = Table(title="Cost per source line (engine time + DMA transfer time; matched by code)", title_justify="left", expand=True)
    lt.add_column("code", overflow="ellipsis", no_wrap=True, ratio=1)
    for col in ("A", "B", "change"):
        lt.add_column(col, justify="right", no_wrap=True, min_width=9)
    for r in c.lines[:SHOWN_LINES]:
        lt.add_row(
            Text(r["code"]), fmt_ns(r["cost_a_ns"]) if r["a"] else "-", fmt_ns(r["cost_b_ns"]) if r["b"] else "-", _signed(r["delta_ns"])
        )
    console.print(lt)
    if len(c.lines) > SHOWN_LINES:
        console.print(Text(f"  ... {len(c.lines) - SHOWN_LINES} more lines in --json", style="dim"))
