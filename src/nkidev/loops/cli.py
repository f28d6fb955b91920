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


ProviderOption = Annotated[
    str | None,
    typer.Option("--provider", help="replay:DIR (candidates DIR/*.py in name order) | anthropic | bedrock | openai."),
]
ModelOption = Annotated[str | None, typer.Option("--model", help="Model name (anthropic, openai) or model id (bedrock).")]
BaseUrlOption = Annotated[str | None, typer.Option("--base-url", help="OpenAI-compatible endpoint (vLLM, Ollama, LM Studio).")]
RegionOption = Annotated[str | None, typer.Option("--region", help="AWS region of the Bedrock endpoint.")]


@command
def optimize_command(
    spec: Annotated[str | None, typer.Argument(metavar="FILE::KERNEL", help="Task file and kernel name.")] = None,
    provider: ProviderOption = None,
    out: Annotated[str | None, typer.Option("--out", help="Run directory (default ./nkidev-optimize/<kernel>-<time>/).")] = None,
    resume: Annotated[str | None, typer.Option("--resume", help="Continue the run in this directory.")] = None,
    target_speedup: Annotated[float | None, typer.Option("--target-speedup", help="Stop once the best is this many times faster.")] = None,
    target_time_us: Annotated[float | None, typer.Option("--target-time-us", help="Stop once the best takes at most this long.")] = None,
    target_peak_percent: Annotated[
        float | None, typer.Option("--target-peak-percent", help="Stop once the best reaches this percent of its roofline.")
    ] = None,
    budget_iterations: Annotated[int | None, typer.Option("--budget-iterations", help="Most candidates (default 20).")] = None,
    budget_minutes: Annotated[float | None, typer.Option("--budget-minutes", help="Most minutes of work.")] = None,
    budget_usd: Annotated[float | None, typer.Option("--budget-usd", help="Most USD of provider tokens (needs --price-in/out).")] = None,
    price_in: Annotated[float | None, typer.Option("--price-in", help="USD per million input tokens.")] = None,
    price_out: Annotated[float | None, typer.Option("--price-out", help="USD per million output tokens.")] = None,
    width: Annotated[int, typer.Option("--width", help="Candidates per step (judged in parallel).")] = 1,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    region: RegionOption = None,
    apply: Annotated[bool, typer.Option("--apply", help="Copy best.py over FILE at the end (FILE.orig keeps the old bytes).")] = False,
    force: Annotated[bool, typer.Option("--force", help="With --apply: overwrite an existing FILE.orig.")] = False,
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
    """Iterate on a kernel until a performance target: propose, gate, profile, analyze, keep the best.

    Every candidate is validated against the ORIGINAL task file (reference, cases, TOLERANCE, anti-cheat checks) in
    an isolated child (--timeout/--memory) and accepted only if it passes and is faster. FILE is never modified
    unless --apply. Exit 0 when the target was met (or, without a target, when a candidate was accepted)."""
    from nkidev.cli_progress import Progress
    from nkidev.loops.optimize import optimize
    from nkidev.sandbox.limits import cli_limits

    limits = cli_limits(timeout, memory)
    with Progress(as_json, f"optimize {spec or resume}") as progress:
        result = optimize(
            spec, provider, out=out, resume=resume, target_speedup=target_speedup, target_time_us=target_time_us,
            target_peak_percent=target_peak_percent, budget_iterations=budget_iterations, budget_minutes=budget_minutes,
            budget_usd=budget_usd, price_in=price_in, price_out=price_out, width=width, target=target, case=case, seeds=seeds,
            model=model, base_url=base_url, region=region, executor=executor, jobs=jobs, ray_address=ray_address, limits=limits,
            apply=apply, force=force, progress=_lines(progress, as_json),
        )  # fmt: skip
    if as_json:
        print_json(result)
    else:
        _print_optimize(result)
    if result["stopped"] == "interrupted":
        raise typer.Exit(130)
    has_target = any(v is not None for v in (target_speedup, target_time_us, target_peak_percent))
    ok = result["stopped"] == "target_met" if has_target else result["best"]["index"] is not None
    raise typer.Exit(exitcodes.OK if ok else exitcodes.FAILED)


def _lines(progress, as_json: bool):
    def event(e: dict) -> None:
        progress.event(e)
        if not as_json and e.get("event") == "iteration":
            console.print(e["line"], highlight=False, markup=False, soft_wrap=True)

    return event


def _print_optimize(result: dict) -> None:
    best = result["best"]
    console.print(
        f"[bold]{result['kernel']}[/] on {result['target']}: baseline {_us(result['baseline']['total_time_ns'])}, "
        f"best {_us(best['total_time_ns'])} ({best['speedup']:.2f}x, candidate {best['index']}); stopped: {result['stopped']}",
        highlight=False,
    )
    console.print(f"best: {best['path']}\nreport: {result['out']}/report.html", highlight=False)
    if result.get("applied", {}).get("applied"):
        console.print(f"applied to {result['applied']['file']} (previous bytes in {result['applied']['backup']})", highlight=False)


@command
def debug_command(
    spec: SpecArgument,
    provider: ProviderOption = None,
    out: Annotated[str | None, typer.Option("--out", help="Run directory (default ./nkidev-debug/<kernel>-<time>/).")] = None,
    max_iterations: Annotated[int, typer.Option("--max-iterations", help="Most fixes to try (1-10).")] = 10,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    region: RegionOption = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing FILE.pre-debug backup.")] = False,
    target: TargetOption = None,
    seeds: SeedsOption = 3,
    timeout: TimeoutOption = None,
    memory: MemoryOption = None,
    as_json: JsonOption = False,
) -> None:
    """Fix a failing kernel: ask the provider for fixes (the named error, its line and docs page) until it validates.

    FILE is backed up to FILE.pre-debug first; at most 10 iterations, simplifying when stuck; RESOLVED writes the fix
    over FILE and prints the diff, BLOCKED leaves FILE as it was. Exit 0 on RESOLVED, 1 on BLOCKED."""
    from nkidev.cli_progress import Progress
    from nkidev.errors import NkiUsageError
    from nkidev.loops.debug import debug
    from nkidev.sandbox.limits import cli_limits

    if provider is None:
        raise NkiUsageError("err_invalid_argument", "debug needs --provider", "pass --provider replay:DIR, anthropic, bedrock or openai")
    limits = cli_limits(timeout, memory)
    with Progress(as_json, f"debug {spec}") as progress:
        result = debug(
            spec, provider, out=out, max_iterations=max_iterations, target=target, seeds=seeds, model=model, base_url=base_url,
            region=region, limits=limits, force=force, progress=_lines(progress, as_json),
        )  # fmt: skip
    if as_json:
        print_json(result)
    else:
        console.print(f"[bold]{result['status']}[/] {result['kernel']} after {len(result['iterations'])} fix(es)", highlight=False)
        if result["diff"]:
            console.print(result["diff"], highlight=False, markup=False)
        if result["last_failure"]:
            console.print(f"still failing: {result['last_failure']}", highlight=False, markup=False, soft_wrap=True)
        console.print(f"backup: {result['backup']}  report: {result['out']}/report.json", highlight=False)
    raise typer.Exit(exitcodes.OK if result["status"] == "RESOLVED" else exitcodes.FAILED)


def register(app: typer.Typer) -> None:
    """Add this package's commands to the nkidev app."""
    app.command("tune")(tune_command)
    app.command("optimize")(optimize_command)
    app.command("debug")(debug_command)
