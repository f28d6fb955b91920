"""CLI commands of nkidev.agents: `nkidev install`, `nkidev uninstall` and `nkidev mcp` (registered by nkidev.cli)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from nkidev import exitcodes
from nkidev.cli_common import JsonOption, command, console, err_console, print_json

TARGET = typer.Option(..., "--target", "-t", help="The agent client: claude, kiro or cursor.")
SCOPE = typer.Option("project", "--scope", help="project (the current directory) or user (your home directory).")
DRY_RUN = typer.Option(False, "--dry-run", help="Show what would change without changing anything.")

_NEXT_STEPS = {
    "claude": "Restart Claude Code (or run /agents) to load the agents; approve the nkidev MCP server when asked.",
    "kiro": "Start Kiro with `kiro-cli chat --agent nki-agent`; the nkidev MCP server is registered for the workspace.",
    "cursor": "Reload Cursor; enable the nkidev MCP server under Settings > MCP if it is not enabled.",
}


@command
def install(
    target: str = TARGET,
    scope: str = SCOPE,
    dry_run: bool = DRY_RUN,
    force: bool = typer.Option(False, "--force", help="Overwrite files you changed since nkidev wrote them."),
    as_json: JsonOption = False,
) -> None:
    """Install nkidev's skills, agents and MCP server where an agent client looks for them."""
    from nkidev.agents.clients import launcher_problem, mcp_entry
    from nkidev.agents.installer import install as run_install

    result = run_install(target, scope, dry_run=dry_run, force=force)
    problem = launcher_problem(mcp_entry())
    if problem:
        result["warnings"] = [*result.get("warnings", []), problem]
    _report(result, as_json, "install")
    if problem and not as_json:
        err_console.print(f"[bold yellow]warning[/] {problem}", highlight=False, soft_wrap=True)
    if not dry_run and result["changed"] and not as_json:
        console.print(_NEXT_STEPS[result["target"]], highlight=False)


@command
def uninstall(
    target: str = TARGET,
    scope: str = SCOPE,
    dry_run: bool = DRY_RUN,
    force: bool = typer.Option(False, "--force", help="Also delete installed files you changed since."),
    as_json: JsonOption = False,
) -> None:
    """Remove exactly what `nkidev install` put there (other MCP servers and your own files stay)."""
    from nkidev.agents.installer import uninstall as run_uninstall

    _report(run_uninstall(target, scope, dry_run=dry_run, force=force), as_json, "uninstall")


def _report(result: dict, as_json: bool, verb: str) -> None:
    if as_json:
        print_json(result)
    else:
        prefix = "would " if result["dry_run"] else ""
        for action in result["actions"]:
            if action["action"] not in ("unchanged", "missing"):
                console.print(f"{prefix}{action['action']:9} {action['path']}", highlight=False)
        counts = ", ".join(f"{n} {a}" for a, n in sorted(result["summary"].items())) or "nothing installed"
        console.print(f"{verb} {result['target']} ({result['scope']}: {result['base']}): {counts}", highlight=False)
        if result["conflicts"]:
            console.print(f"{len(result['conflicts'])} file(s) differ from what nkidev wrote; --force replaces them", highlight=False)
        for b in result.get("backups", []):
            console.print(f"backed up {b['path']} -> {b['backup']}", highlight=False)
        if result.get("recovered"):
            console.print("an interrupted earlier run was found and rolled back first", highlight=False)
    if result["dry_run"] and result["conflicts"]:
        raise typer.Exit(exitcodes.FAILED)


@command
def mcp(
    list_tools: bool = typer.Option(False, "--list-tools", help="List the tools instead of serving them."),
    root: Annotated[
        Path | None,
        typer.Option("--root", help="Workspace root: every path argument must resolve inside it (default: the current directory)."),
    ] = None,
    timeout: Annotated[float | None, typer.Option("--timeout", help="Seconds each validate/profile call may run (default 120).")] = None,
    memory: Annotated[
        str | None, typer.Option("--memory", help="Memory limit of each validate/profile call, e.g. 4G (default: min(8G, half the RAM)).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Serve nkidev's tools to MCP clients over stdio (validate, profile, analyze, query, docs_search, ...).

    validate and profile execute the task file's code, in an isolated child process per call."""
    from nkidev import mcp_server
    from nkidev.sandbox.limits import mcp_limits

    if not list_tools:
        mcp_server.serve(root, mcp_limits(timeout, memory))
        return
    tools = mcp_server.list_tools()
    if as_json:
        print_json(tools)
    else:
        for tool in tools:
            console.print(f"[bold]{tool['name']}[/]  {' '.join(tool['description'].split())}", highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add this package's commands to the nkidev app."""
    app.command("install")(install)
    app.command("uninstall")(uninstall)
    app.command("mcp")(mcp)
