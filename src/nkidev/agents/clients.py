"""Where each agent client looks for skills, agents and MCP servers, and how an agent is written for it.

Paths are relative to the install base: the project directory (`--scope project`) or the home
directory (`--scope user`). Sources: [sources: agent-clients] (Claude Code skills and
sub-agents.md, kiro.dev configuration reference, Cursor's .cursor/ layout).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nkidev.agents.bundle import AgentDef
from nkidev.agents.frontmatter import dump
from nkidev.errors import NkiUsageError

SERVER_NAME = "nkidev"
SCOPES = ("project", "user")
READ_ONLY_MCP_TOOLS = ("docs_search", "docs_show", "explain", "analyze", "query")


@dataclass(frozen=True)
class Context:
    """What rendering an agent needs to know about the install."""

    skills_dir: str  # as the client should see it in agent files
    mcp_entry: dict


@dataclass(frozen=True)
class Client:
    name: str
    home: str  # the client's directory, which also holds nkidev's install manifest
    agent_suffix: str
    mcp_config: dict[str, str]  # scope -> config file
    render: Callable[[AgentDef, Context], str]

    @property
    def skills_dir(self) -> str:
        return f"{self.home}/skills"

    @property
    def agents_dir(self) -> str:
        return f"{self.home}/agents"

    @property
    def manifest(self) -> str:
        return f"{self.home}/nkidev-install.json"


PORTABLE_ENTRY = {"command": SERVER_NAME, "args": ["mcp"]}


def mcp_entry() -> dict:
    """How clients start the server: a command found on PATH, never an absolute path, so a committed project config
    works for every teammate. `nkidev` when it is on PATH; else `python3 -m nkidev` when that Python has nkidev;
    else `nkidev` anyway (`launcher_problem()` says what to fix)."""
    if shutil.which(SERVER_NAME):
        return dict(PORTABLE_ENTRY)
    python = _python_with_nkidev()
    if python is not None:
        return {"command": python, "args": ["-m", "nkidev", "mcp"]}
    return dict(PORTABLE_ENTRY)


def _python_with_nkidev() -> str | None:
    """The name of a Python on PATH that can import nkidev (python3, then python), or None."""
    for name in ("python3", "python"):
        exe = shutil.which(name)
        if exe and subprocess.run([exe, "-c", "import nkidev"], capture_output=True, timeout=60).returncode == 0:
            return name
    return None


def launcher_problem(entry: dict) -> str | None:
    """Why a client could not start the registered server from a shell like this one, or None when it can."""
    if shutil.which(entry["command"]):
        return None
    here = Path(sys.executable).parent
    return (
        f"`{entry['command']}` is not on PATH here, so the client cannot start the nkidev MCP server; put the environment "
        f"that has nkidev on PATH (e.g. `. {here}/activate`, or install nkidev with `pipx install` / `uv tool install` "
        "from a checkout or a wheel), then restart the client"
    )


def _claude(agent: AgentDef, ctx: Context) -> str:
    return agent.source  # the canonical files are Claude Code subagents


# Claude Code tool names -> Kiro built-in tool names
_KIRO_TOOLS = {
    "Read": "fs_read",
    "Write": "fs_write",
    "Edit": "fs_write",
    "Grep": "grep",
    "Glob": "glob",
    "Bash": "execute_bash",
    "TodoWrite": "todo_list",
}
_KIRO_PREAPPROVED = ("fs_read", "grep", "glob", "todo_list")


def _kiro(agent: AgentDef, ctx: Context) -> str:
    tools = list(dict.fromkeys(_KIRO_TOOLS[t] for t in agent.tools if t in _KIRO_TOOLS))
    allowed = [t for t in tools if t in _KIRO_PREAPPROVED]
    spec = {"name": agent.name, "description": agent.description, "prompt": agent.prompt}
    if agent.mcp_tools:
        tools.append(f"@{SERVER_NAME}")
        allowed += [f"@{SERVER_NAME}/{t}" for t in agent.mcp_tools if t in READ_ONLY_MCP_TOOLS]
    spec |= {"tools": tools, "allowedTools": allowed, "resources": [f"skill://{ctx.skills_dir}/{s}/SKILL.md" for s in agent.skills]}
    if agent.mcp_tools:
        spec["mcpServers"] = {SERVER_NAME: ctx.mcp_entry}
    return json.dumps(spec, indent=2) + "\n"


def _cursor(agent: AgentDef, ctx: Context) -> str:
    readonly = not any(t in ("Write", "Edit") for t in agent.tools)
    head = dump({"name": agent.name, "description": agent.description, "model": "inherit", "readonly": readonly})
    skills = ", ".join(f"`{ctx.skills_dir}/{s}/SKILL.md`" for s in agent.skills)
    return f"---\n{head}\n---\n\n{agent.prompt}\nThe skills named above are {skills}; read them before you start.\n"


CLIENTS: dict[str, Client] = {
    "claude": Client("claude", ".claude", ".md", {"project": ".mcp.json", "user": ".claude.json"}, _claude),
    "kiro": Client("kiro", ".kiro", ".json", {"project": ".kiro/settings/mcp.json", "user": ".kiro/settings/mcp.json"}, _kiro),
    "cursor": Client("cursor", ".cursor", ".md", {"project": ".cursor/mcp.json", "user": ".cursor/mcp.json"}, _cursor),
}


def get_client(name: str) -> Client:
    client = CLIENTS.get(str(name).strip().lower())
    if client is None:
        raise NkiUsageError("err_unknown_client", f"unknown client {name!r}", f"use --target {', '.join(CLIENTS)}")
    return client


def check_scope(scope: str) -> str:
    if scope not in SCOPES:
        raise NkiUsageError(
            "err_invalid_argument", f"unknown scope {scope!r}", "use --scope project (this directory) or --scope user (your home directory)"
        )
    return scope


def skills_dir_for(client: Client, scope: str) -> str:
    """The skills directory as agent files should name it."""
    return client.skills_dir if scope == "project" else f"~/{client.skills_dir}"
