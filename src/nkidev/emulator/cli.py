"""CLI commands of the emulator: `nkidev demo` and `nkidev run`."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path
from typing import Annotated

import typer

from nkidev import exitcodes
from nkidev.cli_common import command, console, print_json
from nkidev.errors import NkiUsageError


@command
def demo(as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of text.")] = False) -> None:
    """Run the bundled softmax kernel on the seed's four shapes against a NumPy reference."""
    from nkidev.demo import case_line, run_demo

    result = run_demo()
    if as_json:
        print_json(result)
    else:
        for case in result["softmax"]["cases"]:
            console.print(case_line(case), highlight=False)
        console.print("All tests passed." if result["softmax"]["passed"] else "Some tests FAILED.", highlight=False)
    raise typer.Exit(exitcodes.OK if result["softmax"]["passed"] else exitcodes.FAILED)


@command
def run(
    script: Annotated[Path, typer.Argument(help="A Python script that imports nki.")],
    args: Annotated[list[str] | None, typer.Argument(help="Arguments passed to the script.")] = None,
    target: Annotated[str | None, typer.Option("--target", help="trn1 | trn2 | trn3 (default trn2).")] = None,
) -> None:
    """Run a script with `import nki` resolving to the emulator."""
    from nkidev.shim import emulate

    if not script.is_file():
        raise NkiUsageError("err_bad_task_file", f"no such script: {script}", "check the path")
    sys.argv = [str(script), *(args or [])]
    sys.path.insert(0, str(script.parent.resolve()))
    with emulate(target=target):
        runpy.run_path(str(script), run_name="__main__")


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
    app.command("run", context_settings={"allow_extra_args": True})(run)
