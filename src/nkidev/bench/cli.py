"""CLI commands of nkidev.bench: `nkidev bench list | show | run | compare` (registered by nkidev.cli)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated

import typer

from nkidev import exitcodes
from nkidev.cli_common import JsonOption, MemoryOption, TargetOption, TimeoutOption, command, console, print_json, to_json
from nkidev.errors import NkiUsageError

bench_app = typer.Typer(
    name="bench", help="The benchmark suite: current-API tasks, baselines and % of peak.", no_args_is_help=True, add_completion=False
)


@bench_app.command("list")
@command
def list_command(as_json: JsonOption = False) -> None:
    """List the suite's tasks: family, kernel entry name, dtypes and case shapes."""
    from nkidev.bench.registry import describe, task_names

    rows = [describe(n) for n in task_names()]
    if as_json:
        return print_json({"tasks": rows})
    for r in rows:
        n_quick, n_full = len(r["quick_cases"]), len(r["full_cases"])
        console.print(f"{r['task']:17} {r['family']:14} {','.join(r['dtypes']):9} {n_quick} quick, {n_full} full", highlight=False)


def _shape_text(case: list) -> str:
    return " ".join("x".join(map(str, s)) if isinstance(s, list) else str(s) for s in case)


def show_data(task: str) -> dict:
    """`bench show --json`: the task's declarations, tolerance, case shapes, doc and the baseline's source."""
    from nkidev.bench.registry import describe, load

    info, module = load(task)
    kernel = module.kernel(info.entry)
    return describe(task) | {
        "tolerance": module.attr("TOLERANCE"),
        "tunable": info.tunable,
        "path": str(info.path),
        "doc": info.doc,
        "baseline": inspect.getsource(getattr(kernel, "fn", kernel)),
    }


@bench_app.command("show")
@command
def show_command(task: Annotated[str, typer.Argument(help="A task name (nkidev bench list).")], as_json: JsonOption = False) -> None:
    """Print a task's spec (what it computes, shapes, tolerance, FLOPs and bytes) and its baseline kernel."""
    data = show_data(task)
    if as_json:
        return print_json(data)
    console.print(f"[bold]{data['task']}[/] ({data['family']}), entry {data['entry']}, dtypes {', '.join(data['dtypes'])}", highlight=False)
    console.print(data["doc"], highlight=False, markup=False)
    console.print(f"tolerance: {data['tolerance']}   tunable: {data['tunable']}", highlight=False, markup=False)
    console.print(f"quick cases: {'; '.join(_shape_text(c) for c in data['quick_cases'])}", highlight=False)
    console.print(f"full cases:  {'; '.join(_shape_text(c) for c in data['full_cases'])}", highlight=False)
    console.print(f"task file:   {data['path']}\n\nbaseline:\n{data['baseline']}", highlight=False, markup=False)


@bench_app.command("run")
@command
def run_command(
    tasks: Annotated[str | None, typer.Option("--tasks", help="Comma-separated task names (default: all, or all in --kernels).")] = None,
    kernels: Annotated[Path | None, typer.Option("--kernels", help="Folder of solutions DIR/<task>.py defining each task's entry.")] = None,
    kernelbench: Annotated[
        Path | None, typer.Option("--kernelbench", help="A KernelBench-style PyTorch problem file (Model, get_inputs, get_init_inputs).")
    ] = None,
    target: TargetOption = None,
    quick: Annotated[bool, typer.Option("--quick", help="Time the quick (CI-sized) cases instead of the full ones.")] = False,
    executor: Annotated[str, typer.Option("--executor", help="Where the tasks run: local (process pool) or ray.")] = "local",
    jobs: Annotated[int | None, typer.Option("--jobs", help="Tasks evaluated at once (default: the number of cores).")] = None,
    ray_address: Annotated[str | None, typer.Option("--ray-address", help="Ray cluster address for --executor ray.")] = None,
    seeds: Annotated[int, typer.Option("--seeds", help="Extra random inputs per case in validation.")] = 1,
    html: Annotated[Path | None, typer.Option("--html", help="Write the leaderboard page here.")] = None,
    save: Annotated[Path | None, typer.Option("--save", help="Write the run's JSON here (for bench compare).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace existing --html / --save files.")] = False,
    timeout: TimeoutOption = None,
    memory: MemoryOption = None,
    as_json: JsonOption = False,
) -> None:
    """Score solutions (or the baselines) on the suite: validated with the anti-cheat gate against each task's
    reference, timed by the cost model, compared with the baseline and with the roofline peak. Exit 0 only if
    every task passed."""
    from nkidev.bench.html import leaderboard
    from nkidev.bench.run import run_suite, task_line
    from nkidev.cli_progress import Progress
    from nkidev.sandbox.limits import cli_limits

    for path in (html, save):
        _check_out(path, force)
    limits = cli_limits(timeout, memory)
    with Progress(as_json, "bench run") as progress:
        if kernelbench is not None:
            from nkidev.bench.kernelbench import run_kernelbench

            result = run_kernelbench(kernelbench, kernels, target=target, seeds=seeds, limits=limits)
        else:
            result = run_suite(tasks, kernels, target, quick, executor, jobs, ray_address, seeds, _per_job(limits, jobs), progress.event)
    if save is not None:
        _write(save, to_json(result) + "\n")
    if html is not None:
        _write(html, leaderboard(result))
    if as_json:
        print_json(result)
    else:
        if kernelbench is not None:
            for row in result["tasks"]:
                console.print(task_line(row | result["details"][row["task"]]), highlight=False, markup=False, soft_wrap=True)
        s = result["summary"]
        console.print(
            f"{sum(r['passed'] for r in result['tasks'])}/{len(result['tasks'])} passed on {result['meta']['target']}; "
            f"fast_1 {s['fast_1']:.2f}, fast_1.5 {s['fast_1.5']:.2f}, fast_2 {s['fast_2']:.2f}, "
            f"geomean speedup {s['geomean_speedup']}, mean % of peak {s['mean_percent_of_peak']}",
            highlight=False,
        )
    raise typer.Exit(exitcodes.OK if all(r["passed"] for r in result["tasks"]) else exitcodes.FAILED)


def _per_job(limits, jobs: int | None):
    """Each of the concurrent children gets its share of the memory limit."""
    from nkidev.executors import default_jobs
    from nkidev.sandbox.limits import MIN_MEMORY_BYTES, Limits

    if limits.memory_bytes is None:
        return limits
    n = jobs or default_jobs()
    return Limits(limits.timeout_s, max(MIN_MEMORY_BYTES, limits.memory_bytes // max(1, n)))


def _check_out(path: Path | None, force: bool) -> None:
    if path is not None and path.exists() and not force:
        raise NkiUsageError("err_output_exists", f"{path} exists", "pass --force to replace it, or choose another file")


def _write(path: Path, text: str) -> None:
    from nkidev.atomic import write_bytes

    write_bytes(path, text.encode())


@bench_app.command("tune")
@command
def tune_command(
    tasks: Annotated[str | None, typer.Option("--tasks", help="Comma-separated task names (default: every task with TUNABLE).")] = None,
    target: TargetOption = None,
    quick: Annotated[bool, typer.Option("--quick", help="Score the best configs on the quick cases.")] = False,
    strategy: Annotated[str, typer.Option("--strategy", help="exhaustive | random | successive-halving (as nkidev tune).")] = "exhaustive",
    budget: Annotated[int | None, typer.Option("--budget", help="Configs per task (as nkidev tune).")] = None,
    executor: Annotated[str, typer.Option("--executor", help="local or ray.")] = "local",
    jobs: Annotated[int | None, typer.Option("--jobs", help="Evaluations at once.")] = None,
    ray_address: Annotated[str | None, typer.Option("--ray-address", help="Ray cluster address for --executor ray.")] = None,
    save: Annotated[Path | None, typer.Option("--save", help="Write the run's JSON here (for bench compare).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing --save file.")] = False,
    timeout: TimeoutOption = None,
    memory: MemoryOption = None,
    as_json: JsonOption = False,
) -> None:
    """Run `nkidev tune` on every task that declares TUNABLE and score each best config like `bench run`."""
    from nkidev.bench.loops import tune_suite
    from nkidev.sandbox.limits import cli_limits

    _check_out(save, force)
    result = tune_suite(tasks, target, quick, strategy, budget, executor, jobs, ray_address, 1, _per_job(cli_limits(timeout, memory), jobs))
    _finish(result, save, as_json)


@bench_app.command("optimize")
@command
def optimize_command(
    provider: Annotated[str, typer.Option("--provider", help="The proposer, as for nkidev optimize (replay:DIR, anthropic, ...).")],
    out: Annotated[Path, typer.Option("--out", help="Folder for the sessions, one per task (OUT/<task>/).")],
    tasks: Annotated[str | None, typer.Option("--tasks", help="Comma-separated task names (default: all).")] = None,
    target: TargetOption = None,
    quick: Annotated[bool, typer.Option("--quick", help="Score the best candidates on the quick cases.")] = False,
    budget_iterations: Annotated[int | None, typer.Option("--budget-iterations", help="Iterations per task (same for all).")] = None,
    budget_minutes: Annotated[float | None, typer.Option("--budget-minutes", help="Minutes per task (same for all).")] = None,
    executor: Annotated[str, typer.Option("--executor", help="local or ray.")] = "local",
    jobs: Annotated[int | None, typer.Option("--jobs", help="Evaluations at once.")] = None,
    save: Annotated[Path | None, typer.Option("--save", help="Write the run's JSON here (for bench compare).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing --save file.")] = False,
    timeout: TimeoutOption = None,
    memory: MemoryOption = None,
    as_json: JsonOption = False,
) -> None:
    """Run `nkidev optimize` on every task's baseline with the same provider and budgets; score each best like `bench run`."""
    from nkidev.bench.loops import optimize_suite
    from nkidev.sandbox.limits import cli_limits

    _check_out(save, force)
    limits = _per_job(cli_limits(timeout, memory), jobs)
    result = optimize_suite(provider, out, tasks, target, quick, budget_iterations, budget_minutes, executor, jobs, None, 1, limits)
    _finish(result, save, as_json)


def _finish(result: dict, save: Path | None, as_json: bool) -> None:
    from nkidev.bench.run import task_line

    if save is not None:
        _write(save, to_json(result) + "\n")
    if as_json:
        print_json(result)
    else:
        for row in result["tasks"]:
            console.print(task_line(row | result["details"][row["task"]]), highlight=False, markup=False, soft_wrap=True)
    raise typer.Exit(exitcodes.OK if all(r["passed"] for r in result["tasks"]) else exitcodes.FAILED)


@bench_app.command("compare")
@command
def compare_command(
    run_a: Annotated[Path, typer.Argument(metavar="RUN_A", help="A run saved with bench run --save (or its --json output).")],
    run_b: Annotated[Path, typer.Argument(metavar="RUN_B", help="The run to compare with RUN_A.")],
    as_json: JsonOption = False,
) -> None:
    """Compare two saved bench runs task by task: times, speedup of B over A, % of peak."""
    from nkidev.bench.compare import compare_runs

    result = compare_runs(run_a, run_b)
    if as_json:
        return print_json(result)
    for r in result["tasks"]:
        a = f"{r['a_time_ns'] / 1e3:,.1f} us" if r["a_time_ns"] else "-"
        b = f"{r['b_time_ns'] / 1e3:,.1f} us" if r["b_time_ns"] else "-"
        sp = f"{r['speedup']:.2f}x" if r["speedup"] else "n/a"
        console.print(f"{r['task']:18} A {a:>14}  B {b:>14}  {sp:>7}", highlight=False)
    console.print(f"geomean speedup of B over A: {result['summary']['geomean_speedup']} over {result['summary']['common_tasks']} task(s)")
    for note in result["notes"]:
        console.print(f"note: {note}", highlight=False, markup=False)


def register(app: typer.Typer) -> None:
    """Add this package's commands to the nkidev app."""
    app.add_typer(bench_app, name="bench")
