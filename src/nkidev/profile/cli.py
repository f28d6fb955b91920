"""CLI commands of nkidev.profile (registered by nkidev.cli)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from nkidev.cli_common import JsonOption, TargetOption, command, console, print_json


def _human(result) -> None:
    d = result.to_dict()
    console.print(
        f"[bold]{d['kernel']}[/] on {d['target']} (simulated): [bold]{d['total_time_ns'] / 1e3:,.1f} us[/] "
        f"for {d['instructions']} instructions, {d['dma_transfers']} DMA transfers",
        highlight=False,
    )
    for engine, e in d["engines"].items():
        extra = f", {e['bytes'] / 1e6:,.1f} MB" if "bytes" in e else f", {e['instructions']} rows"
        console.print(f"  {engine:7} busy {e['busy_ns'] / 1e3:12,.1f} us  {e['busy_percent']:6.2f}%{extra}", highlight=False)
    console.print(f"profile: {d['profile_dir']}  (Parquet tables; open trace.json in https://ui.perfetto.dev)", highlight=False)


@command
def profile(
    spec: Annotated[str, typer.Argument(metavar="FILE::KERNEL", help="Task file and kernel name.")],
    out: Annotated[Path, typer.Option("--out", help="Profile directory to write (must not exist unless --force).")],
    case: Annotated[int, typer.Option("--case", help="Index into the task file's cases().")] = 0,
    target: TargetOption = None,
    no_compute: Annotated[bool, typer.Option("--no-compute", help="Skip the numerics, build only the trace (large shapes).")] = False,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing --out directory.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Predict a kernel's timeline on Trainium and write a neuron-explorer-style profile (no hardware needed)."""
    from nkidev.profile.api import profile_task

    result = profile_task(spec, case=case, target=target, out=out, compute=not no_compute, force=force)
    if as_json:
        print_json(result.to_dict())
    else:
        _human(result)


def register(app: typer.Typer) -> None:
    """Add this package's commands to the nkidev app."""
    app.command("profile")(profile)
