"""The skills and agents nkidev ships, as package data: `skills/<name>/` directories in the Agent Skills
format and `agents/<name>.md` files in Claude Code's subagent format. These are the single source of
truth; the installer copies the skills and renders each agent for Claude Code, Kiro and Cursor, and the
repository root's Claude Code plugin points at the same directories.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from nkidev.agents.frontmatter import parse

ROOT = Path(__file__).resolve().parent
SKILLS_DIR = ROOT / "skills"
AGENTS_DIR = ROOT / "agents"
_SKIP = ("__pycache__", ".pyc", ".DS_Store")


@dataclass(frozen=True)
class AgentDef:
    """An agent as written in its canonical Claude Code file."""

    name: str
    description: str
    tools: tuple[str, ...]
    model: str
    skills: tuple[str, ...]
    prompt: str
    source: str  # the canonical file's text

    @property
    def mcp_tools(self) -> tuple[str, ...]:
        """Names of the nkidev MCP tools this agent may call."""
        return tuple(t.removeprefix("mcp__nkidev__") for t in self.tools if t.startswith("mcp__nkidev__"))


def skill_names() -> list[str]:
    return sorted(p.name for p in SKILLS_DIR.iterdir() if (p / "SKILL.md").is_file())


def skill_files(name: str) -> list[tuple[str, bytes]]:
    """(path relative to the skill directory, content) for every file of a skill, sorted."""
    base = SKILLS_DIR / name
    files = [p for p in base.rglob("*") if p.is_file() and not any(s in str(p) for s in _SKIP)]
    return [(p.relative_to(base).as_posix(), p.read_bytes()) for p in sorted(files)]


def agents() -> list[AgentDef]:
    return [load_agent(p) for p in sorted(AGENTS_DIR.glob("*.md"))]


def load_agent(path: Path) -> AgentDef:
    text = path.read_text(encoding="utf-8")
    meta, body = parse(text)
    return AgentDef(
        name=meta["name"],
        description=meta["description"],
        tools=tuple(t.strip() for t in meta.get("tools", "").split(",") if t.strip()),
        model=meta.get("model", "inherit"),
        skills=tuple(meta.get("skills", ())),
        prompt=body.strip() + "\n",
        source=text,
    )
