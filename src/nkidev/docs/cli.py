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


@docs_app.command("list")
@command
def list_pages(
    kind: str = typer.Option(None, "--kind", help="Only pages of one kind: guide, isa, language, error, verdict, finding, ncc, hardware."),
    as_json: JsonOption = False,
) -> None:
    """List every docs page (id and summary); `nkidev docs show ID` prints one."""
    from rich.text import Text

    from nkidev.docs.api import listing

    pages = listing(kind)
    if as_json:
        print_json(pages)
        return
    current = None
    for p in pages:
        if p["kind"] != current:
            current = p["kind"]
            console.print(Text(f"{current} pages", style="bold"))
        console.print(Text.assemble(f"  {p['id']:<40} ", (p["summary"], "dim")), soft_wrap=True)
    console.print(f"{len(pages)} page(s)", highlight=False)


@docs_app.command("show")
@command
def show(
    topic: str = typer.Argument(..., help="A page id or name: nc_matmul, nl.ndarray, gelu, trn2, tiling, err_..., redundant_load"),
    as_json: JsonOption = False,
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
    name: str = typer.Argument(
        ..., help="An error (err_psum_bank_overflow or a whole error line), a verdict, a finding (redundant_load) or an NCC_ code."
    ),
    as_json: JsonOption = False,
) -> None:
    """Explain an error, validation verdict, analysis finding or Neuron compiler (NCC_) code, and how to fix it."""
    from nkidev.docs.api import explain as run_explain

    info = run_explain(name)
    if as_json:
        print_json(info)
        return
    console.print(f"[bold]{info['name']}[/]: {info['summary']}", highlight=False, soft_wrap=True)
    console.print(f"[bold]fix[/]: {info['fix']}", highlight=False, soft_wrap=True)
    for line in info["raised_by"]:
        console.print(f"  raised by {line}", highlight=False, soft_wrap=True)
    if info.get("url"):
        console.print(f"  docs: {info['url']}", highlight=False, soft_wrap=True)
    console.print(f"  more: nkidev docs show {info['page']}", highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add this package's commands to the nkidev app."""
    app.add_typer(docs_app, name="docs")
    app.command("explain")(explain)
