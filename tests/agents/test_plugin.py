"""The repository root is a Claude Code plugin and marketplace pointing at the bundled skills and agents."""

from __future__ import annotations

import json
import re

from nkidev import __version__
from nkidev.agents.bundle import AGENTS_DIR, SKILLS_DIR

from .helpers import REPO

PLUGIN = json.loads((REPO / ".claude-plugin" / "plugin.json").read_text())
MARKET = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text())
KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def test_plugin_manifest():
    assert KEBAB.match(PLUGIN["name"]) and PLUGIN["version"] == __version__
    assert (REPO / PLUGIN["skills"]).resolve() == SKILLS_DIR
    agents = [p for p in PLUGIN["agents"]]
    assert all(p.startswith("./") for p in [PLUGIN["skills"], *agents])
    assert sorted((REPO / p).resolve() for p in agents) == sorted(AGENTS_DIR.glob("*.md"))
    assert PLUGIN["mcpServers"]["nkidev"] == {"command": "nkidev", "args": ["mcp"]}


def test_marketplace_lists_the_plugin_at_the_root():
    assert KEBAB.match(MARKET["name"]) and MARKET["owner"]["name"]
    (entry,) = MARKET["plugins"]
    assert entry["name"] == PLUGIN["name"] and entry["source"] == "./" and entry["version"] == __version__
    assert (REPO / entry["source"] / ".claude-plugin" / "plugin.json").is_file()
