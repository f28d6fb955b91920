"""CLI commands of nkidev.validate (registered by nkidev.cli)."""

from __future__ import annotations

from typing import Annotated

import typer

from nkidev import exitcodes
from nkidev.cli_common import JsonOption, TargetOption, command, console, print_json
from nkidev.errors import NkiUsageError


def verdict_table() -> list[dict]:
    from nkidev.validate.verdicts import VERDICTS

    return [{"name": v.name, "summary": v.summary, "fix": v.fix} for v in VERDICTS.values()]


@command
def validate_command(
    spec: Annotated[str, typer.Argument(help="FILE::KERNEL, e.g. examples/softmax.py::softmax_kernel")] = "",
    reference: Annotated[str, typer.Option("--reference", help="Name of the reference function in FILE.")] = "reference",
    cases: Annotated[str, typer.Option("--cases", help="Name of the function in FILE returning the input tuples.")] = "cases",
    target: TargetOption = None,
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
    as_json: JsonOption = False,
) -> None:
    """Check a kernel against its CPU reference on every case, with anti-cheat checks. Exit 0 only if all pass."""
    if verdicts:
        return _print_verdicts(as_json)
    if not spec:
        raise NkiUsageError("err_bad_task_file", "no task given", "run `nkidev validate FILE::KERNEL`")
    from nkidev.validate.api import validate_task
    from nkidev.validate.report import lines

    result = validate_task(spec, reference=reference, cases=cases, target=target, seeds=seeds, atol=atol, rtol=rtol, allow=allow or ())
    if as_json:
        print_json(result.to_dict())
    else:
        for line in lines(result):
            console.print(line, highlight=False, markup=False, soft_wrap=True)
    raise typer.Exit(exitcodes.OK if result.passed else exitcodes.FAILED)


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
