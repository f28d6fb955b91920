"""The `nkidev` command line: a thin layer over the library. Every command has a Python function
behind it and a `--json` form for agents; subsystems register their own commands."""

from __future__ import annotations

from typing import Annotated

import typer

app = typer.Typer(
    name="nkidev",
    help="Write, debug, profile and optimize NKI kernels for AWS Trainium - no hardware needed.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion [bash|zsh|fish|powershell]
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from nkidev import __version__

        typer.echo(f"nkidev {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print nkidev's version and exit.")] = False,
) -> None:
    """Write, debug, profile and optimize NKI kernels for AWS Trainium - no hardware needed."""


_REGISTRARS = (
    "nkidev.emulator.cli",
    "nkidev.workflows.cli",
    "nkidev.validate.cli",
    "nkidev.profile.cli",
    "nkidev.analysis.cli",
    "nkidev.calibrate.cli",
    "nkidev.fidelity.cli",
    "nkidev.docs.cli",
    "nkidev.agents.cli",
    "nkidev.migrate.cli",
    "nkidev.loops.cli",
    "nkidev.bench.cli",
)


def _register() -> None:
    import importlib

    for name in _REGISTRARS:
        importlib.import_module(name).register(app)


_register()


def main() -> None:
    app(prog_name="nkidev")  # also under `python -m nkidev`, so completion scripts name the real command


if __name__ == "__main__":
    main()
