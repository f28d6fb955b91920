"""CLI commands of nkidev.validate (registered by nkidev.cli)."""

from __future__ import annotations

from typing import Annotated

import typer

from nkidev import exitcodes
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
from nkidev.errors import NkiUsageError
from nkidev.sandbox.limits import cli_limits


def verdict_table() -> list[dict]:
    from nkidev.validate.verdicts import VERDICTS

    return [{"name": v.name, "summary": v.summary, "fix": v.fix} for v in VERDICTS.values()]


@command
def validate_command(
    spec: Annotated[str, typer.Argument(help="FILE::KERNEL, e.g. examples/softmax.py::softmax_kernel")] = "",
    reference: Annotated[str, typer.Option("--reference", help="Name of the reference function in FILE.")] = "reference",
    cases: Annotated[
        str, typer.Option("--cases", help="Name of the function in FILE returning the cases (input tuples or nkidev.Case values).")
    ] = "cases",
    target: TargetOption = None,
    nki_version: NkiVersionOption = None,
    calibration: CalibrationOption = None,
    seeds: Annotated[int, typer.Option("--seeds", help="Extra random inputs per case (same shapes and dtypes).")] = 3,
    atol: Annotated[float | None, typer.Option("--atol", help="Absolute tolerance (overrides TOLERANCE and the dtype default).")] = None,
    rtol: Annotated[float | None, typer.Option("--rtol", help="Relative tolerance (overrides TOLERANCE and the dtype default).")] = None,
    allow: Annotated[
        list[str] | None,
        typer.Option(
            "--allow", help="Report this verdict as a warning, not a failure (repeatable), e.g. --allow cheat_precision_downgrade."
        ),
    ] = None,
    verdicts: Annotated[bool, typer.Option("--verdicts", help="List the verdict names and exit.")] = False,
    hardware: Annotated[
        bool,
        typer.Option(
            "--hardware", help="Run on a Trainium device (Neuron SDK) and compare its outputs with the reference and the emulator."
        ),
    ] = False,
    bisect: Annotated[
        bool,
        typer.Option(
            "--bisect/--no-bisect",
            help="With --hardware: when the device differs from the emulator, find the first instruction whose output differs.",
        ),
    ] = True,
    out: Annotated[
        str | None,
        typer.Option("--out", help="With --hardware: where the bisect writes its probes (default ./nkidev-bisect/<kernel>-<time>/)."),
    ] = None,
    max_probes: Annotated[
        int | None, typer.Option("--max-probes", min=1, help="With --hardware: at most this many bisect device runs (default log2(n) + 3).")
    ] = None,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            min=1,
            max=64,
            help="Split the cases over this many isolated processes running at once (each with the --timeout and --memory limits).",
        ),
    ] = 1,
    timeout: TimeoutOption = None,
    memory: MemoryOption = None,
    as_json: JsonOption = False,
) -> None:
    """Check a kernel against its CPU reference on every case, with anti-cheat checks. Exit 0 only if all pass.

    FILE::KERNEL[4] or FILE::KERNEL[2,2] (or GRID in the task file) launches an SPMD grid: every program runs.
    The task file runs in an isolated child process stopped by --timeout / --memory."""
    if verdicts:
        return _print_verdicts(as_json)
    if not spec:
        raise NkiUsageError("err_bad_task_file", "no task given", "run `nkidev validate FILE::KERNEL`")
    if hardware and workers != 1:
        raise NkiUsageError("err_invalid_argument", "--workers goes without --hardware", "drop --workers (the device runs cases in turn)")
    if not hardware and (out is not None or max_probes is not None or not bisect):
        raise NkiUsageError("err_invalid_argument", "--out, --max-probes and --no-bisect go with --hardware", "add --hardware or drop them")
    if hardware:
        options = {"reference": reference, "cases": cases, "target": target, "bisect": bisect, "out": out, "max_probes": max_probes}
        result = validate_on_device(spec, options, cli_limits(timeout, memory), as_json)
        raise typer.Exit(exitcodes.OK if result["passed"] else exitcodes.FAILED)
    result = validate_isolated(
        spec,
        {
            "reference": reference,
            "cases": cases,
            "target": target,
            "calibration": calibration,
            "seeds": seeds,
            "atol": atol,
            "rtol": rtol,
            "allow": list(allow or ()),
            "nki_version": nki_version,
        },
        cli_limits(timeout, memory),
        as_json,
        workers,
    )
    raise typer.Exit(exitcodes.OK if result["passed"] else exitcodes.FAILED)


def validate_isolated(spec: str, options: dict, limits, as_json: bool, workers: int = 1) -> dict:
    """Run validate_task in the sandbox (in `workers` children at once), streaming each case's line as it is
    decided; print the rest at the end."""
    from nkidev.cli_progress import Progress, output_notes, run_isolated
    from nkidev.validate.report import tail_lines

    if workers > 1:
        from nkidev.validate.parallel import validate_parallel

        with Progress(as_json, f"validate {spec}") as progress:
            result, outputs = validate_parallel(spec, options, limits, workers, progress.event, warm=True)
        result["notes"] = result["notes"] + list(dict.fromkeys(n for out, err in outputs for n in output_notes(out, err)))
    else:
        function = "nkidev.validate.api:validate_task_data"
        result, job = run_isolated(f"validate {spec}", function, {"spec": spec, **options}, limits, as_json, label=spec, warm=True)
        result["notes"] = result["notes"] + output_notes(job.stdout, job.stderr)
    if as_json:
        print_json(result)
    else:
        for line in tail_lines(result):
            console.print(line, highlight=False, markup=False, soft_wrap=True)
    return result


def validate_on_device(spec: str, options: dict, limits, as_json: bool) -> dict:
    """validate_hardware in the sandbox: each case's device outputs against the reference and the emulator."""
    from nkidev.cli_progress import run_isolated
    from nkidev.device.sdk import find_sdk

    find_sdk()  # err_sdk_missing before starting anything
    title, function = f"validate --hardware {spec}", "nkidev.device.api:validate_hardware"
    result, _ = run_isolated(title, function, {"spec": spec, **options}, limits, as_json, label=spec)
    if as_json:
        print_json(result)
    else:
        for r in result["cases"]:
            emu = (
                "agrees with the emulator" if r["agrees_with_emulator"] else f"DIFFERS from the emulator by {r['max_abs_vs_emulator']:.6g}"
            )
            console.print(f"  case {r['index']}: max_diff vs reference {r['max_abs_vs_reference']:.6g}; {emu}", highlight=False)
        for line in bisect_lines(result.get("bisect")):
            console.print(line, highlight=False, markup=False, soft_wrap=True)
        console.print("All cases passed on the device." if result["passed"] else "FAILED on the device.", highlight=False)
    return result


def _num(value) -> str:
    return "n/a" if value is None else f"{value:.6g}"


def bisect_lines(bisect: dict | None) -> list[str]:
    """The bisect's outcome as text: the first differing instruction, its line and both values, the dumps."""
    if not bisect:
        return []
    case = f"case {bisect.get('case', 0)}"
    if bisect["status"] in ("skipped", "failed"):
        return [f"  bisect {bisect['status']} ({case}): {bisect['reason']}"]
    lines = [f"  bisect ({case}): {bisect['device_runs']} device run(s) over {bisect['probe_points']} probe points ({bisect['mode']})"]
    first = bisect.get("first_difference")
    if first:
        word = "first differing instruction" if bisect["status"] == "found" else "earliest differing instruction found"
        ins = first["instruction"]
        lines.append(f"  {word}: {ins['opcode']} (#{ins['id']}, {ins['engine']}) at {first['location']}, execution {first['execution']}")
        lines.append(f"    {first['source']}")
        if "max_abs_error" in first:
            idx = first.get("first_differing_index")
            at = f"; first at {idx}: device {first['device_value']:.6g}, emulator {first['emulator_value']:.6g}" if idx else ""
            lines.append(
                f"    {first['destination']} {first['dtype']}{first['shape']}: max abs error {first['max_abs_error']:.6g}, "
                f"max rel error {_num(first['max_rel_error'])}, {first['differing_elements']}/{first['elements']} elements differ{at}"
            )
            lines.append(f"    dumps: {first['device_file']}  {first['emulator_file']}  (probe kernel {first['probe_kernel']})")
    if bisect["status"] != "found":
        lines.append(f"  bisect inconclusive: {bisect['reason']}")
    if bisect.get("note"):
        lines.append(f"  note: {bisect['note']}")
    return lines


def _print_verdicts(as_json: bool) -> None:
    table = verdict_table()
    if as_json:
        print_json(table)
        return
    for v in table:
        console.print(f"{v['name']}: {v['summary']}\n    fix: {v['fix']}", highlight=False, markup=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add this package's commands to the nkidev app."""
    app.command("validate")(validate_command)
