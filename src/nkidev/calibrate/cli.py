"""`nkidev calibrate`: fit the cost model to measured profiles (registered by nkidev.cli)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from nkidev.cli_common import JsonOption, MemoryOption, TargetOption, TimeoutOption, command, console, print_json


def _human(d: dict) -> None:
    console.print(f"[bold]calibration of {d['target']}[/] from {d['measurements']} measurements ({d['seconds']} s)", highlight=False)
    for c in d["constants"]:
        state = f"{c['default']:g} -> [bold]{c['fitted']:g}[/]" if c["identifiable"] else f"{c['default']:g} (not identifiable here)"
        console.print(f"  {c['key']:40} {state}", highlight=False)
    for name in ("before", "fit", "leave_one_out"):
        s = d[name]
        taus = ", ".join(f"{p}: tau {v['kendall_tau']}" for p, v in s["progressions"].items())
        console.print(f"  {name:14} MAPE {s['mape_percent']}%  median {s['median_ape_percent']}%  {taus}", highlight=False)
    console.print("  worst rows (leave-one-out):", highlight=False)
    for r in d["worst_rows"]:
        console.print(
            f"    {r['label']}: measured {r['measured_ns'] / 1e3:,.1f} us, predicted {r['predicted_loo_ns'] / 1e3:,.1f} us "
            f"({r['loo_ape_percent']:.1f}%)",
            highlight=False,
        )
    if d["out"]:
        console.print(f"calibration: {d['out']}  (apply with --calibration {d['out']} or NKIDEV_CALIBRATION)", highlight=False)


@command
def calibrate(
    profiles: Annotated[
        list[str], typer.Argument(metavar="PROFILE...", help="Measured profile directories (with nkidev-kernel.json) or JSON summaries.")
    ],
    target: TargetOption = None,
    out: Annotated[Path | None, typer.Option("--out", help="Write the calibration TOML here (apply it with --calibration).")] = None,
    fit: Annotated[
        list[str] | None, typer.Option("--fit", help="Fit only this free constant (repeatable), e.g. --fit dma.fixed_cost_ns.")
    ] = None,
    split: Annotated[
        str | None, typer.Option("--split", help="Of a published-measurement .toml set, use only this split (calibration | held-out).")
    ] = None,
    progression: Annotated[str | None, typer.Option("--progression", help="Only rows whose progression name contains this.")] = None,
    timeout: TimeoutOption = None,
    memory: MemoryOption = None,
    as_json: JsonOption = False,
) -> None:
    """Fit the cost model's free constants to measured profiles by re-simulating their kernels; report
    leave-one-out error (MAPE, Kendall tau per progression, worst rows) and write a calibration file."""
    from nkidev.cli_progress import run_isolated
    from nkidev.sandbox.limits import cli_limits

    options = {"paths": [str(Path(p).resolve()) for p in profiles], "target": target, "fit": list(fit or ()) or None, "split": split}
    options["progression"] = progression
    options["other_targets"] = any(p.endswith(".toml") for p in profiles)  # a published set mixes targets
    options["out"] = str(out.resolve()) if out is not None else None
    result, _ = run_isolated("calibrate", "nkidev.calibrate.api:calibrate", options, cli_limits(timeout, memory), as_json)
    if as_json:
        print_json(result)
    else:
        _human(result)


def register(app: typer.Typer) -> None:
    """Add this package's commands to the nkidev app."""
    app.command("calibrate")(calibrate)
