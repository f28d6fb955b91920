"""CLI commands of nkidev.docs: `nkidev docs search|show` and `nkidev explain` (registered by nkidev.cli)."""

from __future__ import annotations

from typing import Annotated

import typer

from nkidev.cli_common import JsonOption, command, console, print_json

docs_app = typer.Typer(name="docs", help="Search and read the offline NKI and nkidev docs.", no_args_is_help=True, add_completion=False)


@docs_app.command("search")
@command
def search(
    query: Annotated[list[str], typer.Argument(help="Words to look for, e.g. psum bank matmul.")],
    limit: int = typer.Option(10, "--limit", "-n", help="Most results to show."),
    as_json: JsonOption = False,
) -> None:
    """Full-text search over ops, nl functions, errors, hardware specs and guides."""
    from nkidev.docs.api import search as run_search

    hits = run_search(" ".join(query), limit=limit)
    if as_json:
        print_json(hits)
        return
    if not hits:
        console.print("no matches; try fewer or different words", highlight=False)
    for hit in hits:
        console.print(f"[bold]{hit['id']}[/]  {hit['summary']}", highlight=False, soft_wrap=True)


@docs_app.command("show")
@command
def show(
    topic: str = typer.Argument(..., help="A page id or name: nc_matmul, nl.ndarray, trn2, tiling, err_..."), as_json: JsonOption = False
) -> None:
    """Print one docs page."""
    from rich.markdown import Markdown

    from nkidev.docs.api import show as run_show

    page = run_show(topic)
    if as_json:
        print_json(page)
    else:
        console.print(Markdown(page["body"]))


@command
def explain(
    name: str = typer.Argument(..., help="An error name such as err_psum_bank_overflow, or a whole error line."),
    as_json: JsonOption = False,
) -> None:
    """Explain an error nkidev raised and how to fix it."""
    from nkidev.docs.api import explain as run_explain

    info = run_explain(name)
    if as_json:
        print_json(info)
        return
    console.print(f"[bold]{info['name']}[/]: {info['summary']}", highlight=False, soft_wrap=True)
    console.print(f"[bold]fix[/]: {info['fix']}", highlight=False, soft_wrap=True)
    for line in info["raised_by"]:
        console.print(f"  raised by {line}", highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add this package's commands to the nkidev app."""
    app.add_typer(docs_app, name="docs")
    app.command("explain")(explain)
