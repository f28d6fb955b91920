"""The bundled agents: Claude Code frontmatter, the skills they load, and their Kiro and Cursor renderings."""

from __future__ import annotations

import json

import pytest

from nkidev.agents.bundle import agents, skill_names
from nkidev.agents.clients import CLIENTS, Context, mcp_entry
from nkidev.agents.frontmatter import parse
from nkidev.mcp_server import TOOLS

AGENTS = {a.name: a for a in agents()}
CLAUDE_TOOLS = {"Read", "Write", "Edit", "Grep", "Glob", "Bash", "TodoWrite"}


def test_the_five_agents_are_bundled():
    assert sorted(AGENTS) == ["nki-agent", "nki-debugger", "nki-docs-navigator", "nki-optimizer", "nki-profile-analyst", "nki-writer"]


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_claude_frontmatter(name):
    agent = AGENTS[name]
    meta, body = parse(agent.source)
    assert set(meta) == {"name", "description", "tools", "model", "skills"}
    assert meta["name"] == name and meta["model"] == "inherit" and len(body.strip()) > 200
    assert set(agent.skills) <= set(skill_names()) and agent.skills
    tool_names = {t.__name__ for t in TOOLS}
    for tool in agent.tools:
        assert tool in CLAUDE_TOOLS or tool.removeprefix("mcp__nkidev__") in tool_names, tool


def test_entry_agent_routes_to_every_skill():
    assert set(AGENTS["nki-agent"].skills) == set(skill_names())
    for skill in skill_names():
        assert skill in AGENTS["nki-agent"].prompt


def test_debugger_contract():
    prompt = AGENTS["nki-debugger"].prompt
    for needle in (
        ".pre-debug",
        "10 iterations",
        "RESOLVED",
        "BLOCKED",
        "Smaller tiles",
        "simpler tiling",
        "split fused instructions",
        "simpler dtypes",
        "less parallelism",
    ):
        assert needle.lower() in prompt.lower(), needle


def test_docs_navigator_is_read_only():
    assert not {"Write", "Edit"} & set(AGENTS["nki-docs-navigator"].tools)


def _ctx(client: str) -> Context:
    return Context(CLIENTS[client].skills_dir, mcp_entry())


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_kiro_rendering(name):
    agent = AGENTS[name]
    spec = json.loads(CLIENTS["kiro"].render(agent, _ctx("kiro")))
    assert {"name", "description", "prompt", "tools", "allowedTools", "resources"} <= set(spec)
    assert spec["name"] == name and spec["prompt"] == agent.prompt
    assert spec["resources"] == [f"skill://.kiro/skills/{s}/SKILL.md" for s in agent.skills]
    assert set(spec["allowedTools"]) <= set(spec["tools"]) | {t for t in spec["allowedTools"] if t.startswith("@nkidev/")}
    assert "fs_write" not in spec["allowedTools"] and "execute_bash" not in spec["allowedTools"]
    if agent.mcp_tools:
        assert "@nkidev" in spec["tools"] and spec["mcpServers"]["nkidev"] == mcp_entry()


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_cursor_rendering(name):
    agent = AGENTS[name]
    meta, body = parse(CLIENTS["cursor"].render(agent, _ctx("cursor")))
    assert meta["name"] == name and meta["description"] == agent.description
    assert meta["readonly"] == ("false" if {"Write", "Edit"} & set(agent.tools) else "true")
    assert all(f".cursor/skills/{s}/SKILL.md" in body for s in agent.skills)
