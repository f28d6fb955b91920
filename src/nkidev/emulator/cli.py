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
def demo(
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of text.")] = False,
    diagnose: Annotated[bool, typer.Option(help="End with the profile diagnosis of the naive SwiGLU kernel.")] = True,
) -> None:
    """The seed walkthrough on bundled kernels: softmax numerics on four shapes, then a SwiGLU profile diagnosis."""
    from nkidev.analysis.demo import diagnosis_text
    from nkidev.demo import softmax_check, swiglu_diagnosis

    softmax = softmax_check()
    if not as_json:
        for line in softmax.pop("lines"):
            console.print(line, highlight=False, markup=False)
    else:
        softmax.pop("lines")
    result = {"softmax": softmax}
    if diagnose:
        if not as_json:
            console.print("\nProfiling examples/swiglu_naive.py on the trn2 cost model and analyzing it ...", highlight=False)
        result["swiglu"] = swiglu_diagnosis()
        if not as_json:
            console.print(diagnosis_text(result["swiglu"]), highlight=False, soft_wrap=True, markup=False)
    if as_json:
        print_json(result)
    raise typer.Exit(exitcodes.OK if softmax["passed"] else exitcodes.FAILED)


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
