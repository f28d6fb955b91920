"""The `nkidev` command line: a thin layer over the library. Every command has a Python function
behind it and a `--json` form for agents; subsystems register their own commands."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="nkidev",
    help="Write, debug, profile and optimize NKI kernels for AWS Trainium - no hardware needed.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_REGISTRARS = (
    "nkidev.emulator.cli",
    "nkidev.workflows.cli",
    "nkidev.validate.cli",
    "nkidev.profile.cli",
    "nkidev.analysis.cli",
    "nkidev.docs.cli",
    "nkidev.agents.cli",
)


def _register() -> None:
    import importlib

    for name in _REGISTRARS:
        importlib.import_module(name).register(app)


_register()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
