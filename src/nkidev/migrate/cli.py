"""CLI of nkidev.migrate: `nkidev migrate FILE [--write] [--no-validate] [--json]`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from nkidev import exitcodes
from nkidev.cli_common import JsonOption, command, console, print_json


def _human(result) -> None:
    d = result.to_dict()
    if d["kind"] == "none":
        console.print(f"{d['path']}: nothing to migrate (no legacy neuronxcc.nki or NKI 0.6-only constructs)", highlight=False)
        return
    if d["diff"]:
        console.print(d["diff"].rstrip("\n"), highlight=False, markup=False, soft_wrap=True)
    console.print(f"\n{d['path']}: {d['kind']}, {len(d['changes'])} change(s)", highlight=False)
    for m in d["manual"]:
        console.print(f"  MANUAL line {m['line']}: {m['construct']}\n      {m['step']}", highlight=False, markup=False, soft_wrap=True)
    v = d["validation"]
    if v is not None:
        console.print(f"validation: {v['status']}" + (f" ({v['reason']})" if v.get("reason") else ""), highlight=False, markup=False)
        for r in v["kernels"]:
            extra = f", max |new - old| = {r['max_abs_diff']:.3g}" if r.get("max_abs_diff") else ""
            why = f": {r['reason']}" if r.get("reason") else ""
            console.print(f"  {r['kernel']} case {r['case']}: {r['status']}{extra}{why}", highlight=False, markup=False, soft_wrap=True)
    if d["written"]:
        console.print(f"wrote {d['path']} (the original is in {d['backup']})", highlight=False)


@command
def migrate(
    path: Annotated[Path, typer.Argument(help="A kernel or task file (legacy neuronxcc.nki, or NKI 0.6).")],
    write: Annotated[bool, typer.Option("--write", help="Replace FILE with the migrated source (after a FILE.bak backup).")] = False,
    no_validate: Annotated[bool, typer.Option("--no-validate", help="Skip running old against new on the file's cases().")] = False,
    as_json: JsonOption = False,
) -> None:
    """Rewrite a legacy (neuronxcc.nki) or NKI 0.6 kernel for NKI 0.7: print the diff, list what needs a manual
    step, and check old against new on the file's cases (bit-identical / within tolerance)."""
    from nkidev.migrate.api import migrate_file

    result = migrate_file(path, write=write, validate=not no_validate)
    if as_json:
        print_json(result.to_dict())
    else:
        _human(result)
    raise typer.Exit(exitcodes.OK if result.passed else exitcodes.FAILED)


def register(app: typer.Typer) -> None:
    """Add this package's commands to the nkidev app."""
    app.command("migrate")(migrate)
