"""The `nkidev` executable: start the sandbox's warm child first, then import the CLI.

`validate` and `profile` run the task file in a child interpreter; starting it before this process imports
typer, rich and the command modules lets the two start-ups overlap (see nkidev.sandbox.pool). The top-level help
is printed from nkidev.help_cache when an identical earlier run recorded it."""

from __future__ import annotations

import sys

from nkidev import help_cache

ISOLATED_COMMANDS = ("validate", "profile")


def wants_sandbox(argv: list[str]) -> bool:
    return len(argv) > 1 and argv[1] in ISOLATED_COMMANDS and not {"--help", "--verdicts"} & set(argv)


def main() -> None:
    if wants_sandbox(sys.argv):
        from nkidev.sandbox import prestart

        prestart()
    args = sys.argv[1:]
    if help_cache.applies(args):
        code = help_cache.serve(args)
        if code is not None:
            sys.exit(code)
        help_cache.record(args, _run_cli)
        return
    _run_cli()


def _run_cli() -> None:
    from nkidev.cli import main as main_cli

    main_cli()
