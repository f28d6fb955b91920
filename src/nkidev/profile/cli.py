"""CLI commands of nkidev.profile (registered by nkidev.cli)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from nkidev.cli_common import (
    CalibrationOption,
    JsonOption,
    MemoryOption,
    NkiVersionOption,
    TargetOption,
    TimeoutOption,
    command,
    console,
    print_json,
)


def _human(d: dict) -> None:
    if d.get("hardware"):
        console.print(f"[bold]{d['kernel']}[/] on {d['target']} (measured): [bold]{d['total_time_ns'] / 1e3:,.1f} us[/]", highlight=False)
        console.print(f"profile: {d['profile_dir']}  (neuron-explorer Parquet tables; nkidev analyze reads it)", highlight=False)
        return
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
    spec: Annotated[
        str, typer.Argument(metavar="FILE::KERNEL", help="Task file and kernel name; KERNEL[4] / KERNEL[2,2] for an SPMD grid.")
    ],
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Profile directory to write (default: a fresh directory under ./nkidev-profiles/, printed at the end)."),
    ] = None,
    case: Annotated[int, typer.Option("--case", help="Index into the task file's cases().")] = 0,
    target: TargetOption = None,
    nki_version: NkiVersionOption = None,
    calibration: CalibrationOption = None,
    no_compute: Annotated[bool, typer.Option("--no-compute", help="Skip the numerics, build only the trace (large shapes).")] = False,
    trace: Annotated[
        str,
        typer.Option(
            "--trace",
            help="What trace.json (Perfetto) holds: auto = every track, the per-engine DMA packet tracks only up to 200,000 "
            "packets; full = the packet tracks at any count (a million packets add ~130 MB); none = no trace.json. "
            "The Parquet tables always have every event.",
        ),
    ] = "auto",
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing --out directory (only one that holds an nkidev profile).")
    ] = False,
    hardware: Annotated[
        bool,
        typer.Option("--hardware", help="Compile, run and capture on a Trainium device with the Neuron SDK (neuronx-cc, neuron-explorer)."),
    ] = False,
    timeout: TimeoutOption = None,
    memory: MemoryOption = None,
    as_json: JsonOption = False,
) -> None:
    """Predict a kernel's timeline on Trainium and write a neuron-explorer-style profile (no hardware needed).

    The task file and the kernel run in an isolated child process stopped by --timeout / --memory; --out is
    checked (exists, writable) before the kernel runs."""
    from nkidev.cli_progress import run_isolated
    from nkidev.profile.perfetto import check_trace_mode
    from nkidev.profile.writer import check_destination
    from nkidev.sandbox.limits import cli_limits

    limits = cli_limits(timeout, memory)
    check_trace_mode(trace)
    if out is not None:
        check_destination(out, force)  # fail before starting anything
    options = {
        "spec": spec,
        "case": case,
        "target": target,
        "out": str(out) if out is not None else None,
        "compute": not no_compute,
        "nki_version": nki_version,
    }
    if trace != "auto":
        options["trace"] = trace
    if calibration is not None:
        options["calibration"] = calibration
    function = "nkidev.profile.api:profile_task_data"
    if hardware:
        from nkidev.device.sdk import find_sdk

        find_sdk()  # err_sdk_missing before starting anything
        function = "nkidev.device.api:profile_hardware"
        options = {k: v for k, v in options.items() if k in ("spec", "case", "target", "out")}
    result, _ = run_isolated(f"profile {spec}", function, {**options, "force": force}, limits, as_json, label=spec, warm=True)
    if as_json:
        print_json(result)
    else:
        _human(result)


def register(app: typer.Typer) -> None:
    """Add this package's commands to the nkidev app."""
    app.command("profile")(profile)
