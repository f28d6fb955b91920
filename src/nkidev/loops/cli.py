"""CLI commands of the loops (registered by nkidev.cli): `nkidev tune`, `nkidev optimize`, `nkidev debug`."""

from __future__ import annotations

from typing import Annotated

import typer

from nkidev import exitcodes
from nkidev.cli_common import JsonOption, MemoryOption, TargetOption, TimeoutOption, command, console, print_json

SpecArgument = Annotated[str, typer.Argument(metavar="FILE::KERNEL", help="Task file and kernel name.")]
ExecutorOption = Annotated[str, typer.Option("--executor", help="Where candidates run: local (a process pool) | ray.")]
JobsOption = Annotated[int | None, typer.Option("--jobs", help="Candidates evaluated at once (default: the number of cores).")]
RayAddressOption = Annotated[
    str | None, typer.Option("--ray-address", help="Join this Ray cluster (auto, ray://host:10001); default: start a local Ray.")
]
CaseOption = Annotated[int, typer.Option("--case", help="Index of the task's case the candidates are timed on.")]
SeedsOption = Annotated[int, typer.Option("--seeds", help="Extra random inputs per case in the validation gate.")]


def _us(ns) -> str:
    return "-" if ns is None else f"{ns / 1e3:,.2f} us"


@command
def tune_command(
    spec: SpecArgument,
    param: Annotated[list[str] | None, typer.Option("--param", help="NAME=v1,v2,... (repeatable): replaces TUNABLE[NAME].")] = None,
    strategy: Annotated[str, typer.Option("--strategy", help="exhaustive | random | successive-halving.")] = "exhaustive",
    budget: Annotated[int | None, typer.Option("--budget", help="random: configs drawn; successive-halving: configs gated.")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the random strategy.")] = 0,
    target: TargetOption = None,
    case: CaseOption = 0,
    seeds: SeedsOption = 3,
    executor: ExecutorOption = "local",
    jobs: JobsOption = None,
    ray_address: RayAddressOption = None,
    timeout: TimeoutOption = None,
    memory: MemoryOption = None,
    as_json: JsonOption = False,
) -> None:
    """Search a kernel's TUNABLE keyword arguments: every config validated (full anti-cheat gate) and profiled.

    The task file declares TUNABLE = {"param": [v1, v2, ...]} (or {"KERNEL": {...}}) over keyword arguments with
    defaults; the defaults are the baseline. Exit 0 when some config passed, 1 when none did."""
    from nkidev.cli_progress import Progress
    from nkidev.loops.tune import tune
    from nkidev.sandbox.limits import cli_limits

    limits = cli_limits(timeout, memory)
    with Progress(as_json, f"tune {spec}") as progress:
        result = tune(
            spec, param or [], strategy, budget, seed, target, case, seeds, executor, jobs, ray_address, limits, progress=progress.event
        )
    if as_json:
        print_json(result)
    else:
        _print_tune(result)
    raise typer.Exit(exitcodes.OK if result["best"] else exitcodes.FAILED)


def _print_tune(result: dict) -> None:
    console.print(f"[bold]{result['kernel']}[/] on {result['target']}: {len(result['configs'])} configs ({result['strategy']})")
    rows = sorted(result["configs"], key=lambda c: (not c["passed"], c["total_time_ns"] or float("inf")))
    for c in rows:
        params = ", ".join(f"{k}={v!r}" for k, v in c["params"].items())
        if c["passed"]:
            status = "PASS"
        elif c["error"]:
            status = f"FAIL {c['error']['name']}: {c['error']['message']}"
        elif c["stage"] == "screened":
            status = "screened only"
        else:
            status = "FAIL " + ", ".join(c["verdicts"])
        console.print(f"  {params:40} {_us(c['total_time_ns']):>14}  {status}", highlight=False, markup=False, soft_wrap=True)
    base, best = result["baseline"], result["best"]
    console.print(f"baseline (defaults) {_us(base['total_time_ns'])}", highlight=False)
    if best:
        speedup = f", {best['speedup']:.2f}x the defaults" if best["speedup"] else ""
        console.print(f"[bold]best[/] {best['params']}: {_us(best['total_time_ns'])}{speedup}", highlight=False)
    else:
        console.print("[bold red]no config passed[/]")


def register(app: typer.Typer) -> None:
    """Add this package's commands to the nkidev app."""
    app.command("tune")(tune_command)
