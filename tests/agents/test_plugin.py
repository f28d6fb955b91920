"""The Claude Code plugin lives in plugin/ (generated from the package's skills and agents) and the repository
root's marketplace points at it, so installing it copies only the plugin, never the checkout or its .venv."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from nkidev import __version__
from nkidev.agents.bundle import AGENTS_DIR, skill_names
from nkidev.agents.plugin import differences, plugin_files

from .helpers import REPO

PLUGIN_DIR = REPO / "plugin"
MARKET = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text())
KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
CLAUDE = shutil.which("claude")


def test_plugin_directory_is_the_package_data_exactly():
    assert differences(PLUGIN_DIR) == [], "regenerate it: python -m nkidev.agents.plugin plugin/"


def test_plugin_manifest_and_conventional_layout():
    manifest = json.loads((PLUGIN_DIR / ".claude-plugin" / "plugin.json").read_text())
    assert KEBAB.match(manifest["name"]) and manifest["version"] == __version__
    assert "agents" not in manifest and "skills" not in manifest  # discovered from agents/ and skills/
    assert sorted(p.name for p in (PLUGIN_DIR / "agents").glob("*.md")) == sorted(p.name for p in AGENTS_DIR.glob("*.md"))
    assert sorted(p.name for p in (PLUGIN_DIR / "skills").iterdir()) == skill_names()
    assert json.loads((PLUGIN_DIR / ".mcp.json").read_text()) == {"mcpServers": {"nkidev": {"command": "nkidev", "args": ["mcp"]}}}


def test_plugin_ships_only_its_files():
    files = plugin_files()
    assert all(not part.startswith(".venv") and part != "src" for rel in files for part in rel.split("/"))
    assert sum(len(b) for b in files.values()) < 200_000
    assert not (REPO / ".claude-plugin" / "plugin.json").exists()  # the checkout itself is not a plugin


def test_marketplace_lists_the_plugin_directory():
    assert KEBAB.match(MARKET["name"]) and MARKET["owner"]["name"]
    (entry,) = MARKET["plugins"]
    assert entry["source"] == "./plugin" and entry["version"] == __version__
    assert (REPO / entry["source"] / ".claude-plugin" / "plugin.json").is_file()
    assert "pip install nkidev" not in entry["description"]  # nkidev is not on PyPI yet


@pytest.mark.skipif(CLAUDE is None, reason="the Claude Code CLI (claude) is not installed: npm install -g @anthropic-ai/claude-code")
@pytest.mark.parametrize("path", ["plugin", "."])
def test_claude_plugin_validate_strict(path):
    done = subprocess.run([CLAUDE, "plugin", "validate", "--strict", str(REPO / path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Validation passed" in done.stdout
