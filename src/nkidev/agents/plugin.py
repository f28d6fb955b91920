"""The Claude Code plugin nkidev ships: its files, generated from the package's skills and agents.

The plugin lives in the repository's `plugin/` directory, apart from the checkout, so installing it copies
only what it needs (never a virtualenv or the sources), and Claude Code discovers its `agents/`, `skills/` and
`.mcp.json` by convention. The repository root's `.claude-plugin/marketplace.json` points at it. The files there are
copies of `nkidev/agents/{skills,agents}` (the single source of truth); a test checks they match, and

    python -m nkidev.agents.plugin plugin/

rewrites them after the skills or agents change.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from nkidev.agents.bundle import AGENTS_DIR, skill_files, skill_names
from nkidev.agents.clients import PORTABLE_ENTRY, SERVER_NAME

DESCRIPTION = (
    "Write, debug, profile and optimize NKI kernels for AWS Trainium on any machine: skills, agents and an MCP server "
    "backed by nkidev's CPU emulator, validator, cost model and profile analysis. Needs the nkidev command on PATH."
)


def manifest() -> dict:
    from nkidev import __version__

    return {
        "name": "nkidev",
        "version": __version__,
        "description": DESCRIPTION,
        "author": {"name": "nkidev contributors"},
        "license": "Apache-2.0",
        "keywords": ["nki", "trainium", "aws-neuron", "kernels", "profiling", "emulator"],
    }


def plugin_files() -> dict[str, bytes]:
    """Path inside the plugin directory -> content, for every file the plugin ships."""
    files = {
        ".claude-plugin/plugin.json": (json.dumps(manifest(), indent=2) + "\n").encode("utf-8"),
        # the MCP server, in the file Claude Code discovers at the plugin root
        ".mcp.json": (json.dumps({"mcpServers": {SERVER_NAME: dict(PORTABLE_ENTRY)}}, indent=2) + "\n").encode("utf-8"),
    }
    for name in skill_names():
        for rel, data in skill_files(name):
            files[f"skills/{name}/{rel}"] = data
    for path in sorted(AGENTS_DIR.glob("*.md")):
        files[f"agents/{path.name}"] = path.read_bytes()
    return files


def differences(directory: Path) -> list[str]:
    """Files of the plugin directory that are missing, stale or not the plugin's."""
    want = plugin_files()
    have = {p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file()}
    out = [f"missing {rel}" for rel in sorted(set(want) - have)]
    out += [f"stale {rel}" for rel in sorted(set(want) & have) if (directory / rel).read_bytes() != want[rel]]
    out += [f"extra {rel}" for rel in sorted(have - set(want))]
    return out


def write(directory: Path) -> None:
    """Make `directory` hold exactly the plugin's files (a maintainer's command; the plugin directory is generated)."""
    for line in differences(directory):
        kind, rel = line.split(" ", 1)
        if kind == "extra":
            (directory / rel).unlink()
    for rel, data in plugin_files().items():
        path = directory / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_bytes() != data:
            path.write_bytes(data)


if __name__ == "__main__":
    write(Path(sys.argv[1] if len(sys.argv) > 1 else "plugin"))
