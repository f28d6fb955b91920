"""`nkidev fidelity`: the cost model against published hardware measurements (registered by nkidev.cli)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from nkidev.cli_common import CalibrationOption, JsonOption, MemoryOption, TimeoutOption, command, console, print_json

FIDELITY_TIMEOUT_S = 3600.0  # the bundled set schedules a dozen 100k-instruction kernels


def _human(d: dict) -> None:
    console.print(f"[bold]fidelity[/] of the cost model on {d['measurement_set']} ({d['seconds']} s)", highlight=False)
    for target, cal in d["calibration"].items():
        console.print(f"  {target}: calibration {cal}", highlight=False)
    for name, p in d["progressions"].items():
        console.print(
            f"\n[bold]{name}[/] ({p['split']}): MAPE {p['mape_percent']}%, Kendall tau {p['kendall_tau']}, "
            f"top-1 {'agrees' if p['top1_agrees'] else 'DISAGREES'}",
            highlight=False,
        )
        for r in sorted((r for r in d["rows"] if r["progression"] == name), key=lambda r: r["order"]):
            if r["error"]:
                console.print(f"  {r['order']}. {r['kernel'].split('::')[-1]:26} not predicted: {r['error']['name']}", highlight=False)
                continue
            console.print(
                f"  {r['order']}. {r['kernel'].split('::')[-1]:26} measured {r['measured_ns'] / 1e6:9.3f} ms  "
                f"predicted {r['predicted_ns'] / 1e6:9.3f} ms  x{r['ratio']:.2f}",
                highlight=False,
                soft_wrap=True,
            )
    s = d["summary"]
    console.print(
        f"\n[bold]all {s['rows']} rows[/]: MAPE {s['mape_percent']}%, median {s['median_ape_percent']}%, mean Kendall tau "
        f"{s['mean_kendall_tau']}, top-1 {s['top1_agreement']}",
        highlight=False,
    )
    for split, v in d["splits"].items():
        console.print(f"  {split}: {v['rows']} rows, MAPE {v['mape_percent']}%, median {v['median_ape_percent']}%", highlight=False)


@command
def fidelity(
    measurement_set: Annotated[
        Path | None, typer.Option("--set", help="A published-measurement TOML (default: the bundled examples/fidelity/measurements.toml).")
    ] = None,
    calibration: CalibrationOption = None,
    progression: Annotated[str | None, typer.Option("--progression", help="Only progressions whose name contains this.")] = None,
    split: Annotated[str | None, typer.Option("--split", help="Only rows of this split: calibration | held-out.")] = None,
    timeout: TimeoutOption = None,
    memory: MemoryOption = None,
    as_json: JsonOption = False,
) -> None:
    """Predicted vs published measured time for every published measurement of the calibration set, with MAPE,
    Kendall tau per optimization progression and top-1 agreement."""
    from nkidev.cli_progress import run_isolated
    from nkidev.sandbox.limits import cli_limits

    options = {
        "measurement_set": str(measurement_set.resolve()) if measurement_set is not None else None,
        "calibration": calibration,
        "progression": progression,
        "split": split,
    }
    limits = cli_limits(timeout if timeout is not None else FIDELITY_TIMEOUT_S, memory)
    result, _ = run_isolated("fidelity", "nkidev.fidelity.api:fidelity", options, limits, as_json)
    if as_json:
        print_json(result)
    else:
        _human(result)


def register(app: typer.Typer) -> None:
    """Add this package's commands to the nkidev app."""
    app.command("fidelity")(fidelity)
