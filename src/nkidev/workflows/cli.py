"""CLI commands of the workflows (registered by nkidev.cli): `nkidev demo`."""

from __future__ import annotations

from typing import Annotated

import typer

from nkidev import exitcodes
from nkidev.cli_common import JsonOption, command, console, print_json


@command
def demo(
    as_json: JsonOption = False,
    diagnose: Annotated[bool, typer.Option(help="End with the profile diagnosis of the naive SwiGLU kernel.")] = True,
) -> None:
    """The seed walkthrough on bundled kernels: softmax numerics on four shapes, then a SwiGLU profile diagnosis."""
    from nkidev.workflows.demo import diagnose_swiglu, diagnosis_text, softmax_check

    softmax = softmax_check()
    text = softmax.pop("lines")
    if not as_json:
        for line in text:
            console.print(line, highlight=False, markup=False)
    result = {"softmax": softmax}
    if diagnose:
        if not as_json:
            console.print("\nProfiling examples/swiglu_naive.py on the trn2 cost model and analyzing it ...", highlight=False)
        result["swiglu"] = diagnose_swiglu()
        if not as_json:
            console.print(diagnosis_text(result["swiglu"]), highlight=False, soft_wrap=True, markup=False)
    if as_json:
        print_json(result)
    raise typer.Exit(exitcodes.OK if softmax["passed"] else exitcodes.FAILED)


def register(app: typer.Typer) -> None:
    """Add this package's commands to the nkidev app."""
    app.command("demo")(demo)
