"""CLI commands of the emulator: `nkidev run`."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path
from typing import Annotated

import typer

from nkidev.cli_common import NkiVersionOption, TargetOption, command
from nkidev.errors import NkiUsageError
from nkidev.shim import emulate


@command
def run(
    script: Annotated[Path, typer.Argument(help="A Python script that imports nki.")],
    args: Annotated[list[str] | None, typer.Argument(help="Arguments passed to the script.")] = None,
    target: TargetOption = None,
    nki_version: NkiVersionOption = None,
) -> None:
    """Run a script with `import nki` resolving to the emulator."""
    if not script.is_file():
        raise NkiUsageError("err_bad_task_file", f"no such script: {script}", "check the path")
    sys.argv = [str(script), *(args or [])]
    sys.path.insert(0, str(script.parent.resolve()))
    with emulate(target=target, nki_version=nki_version):
        runpy.run_path(str(script), run_name="__main__")


def register(app: typer.Typer) -> None:
    app.command("run", context_settings={"allow_extra_args": True})(run)
