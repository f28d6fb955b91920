"""A validator for the Agent Skills format: every rule of the `skills-ref` reference validator, plus the
spec's recommendations that make a skill portable (short body, references that exist, no angle
brackets in the description, which some uploaders reject).
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from nkidev.agents.frontmatter import FrontmatterError, parse

ALLOWED_FIELDS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
MAX_NAME, MAX_DESCRIPTION, MAX_COMPATIBILITY, MAX_BODY_LINES = 64, 1024, 500, 500
_LINK = re.compile(r"\((references/[^)\s#]+)\)|`(references/[^`\s]+)`")


def validate_skill(skill_dir: Path) -> list[str]:
    """Problems with one skill directory; an empty list means valid."""
    skill_dir = Path(skill_dir)
    if not skill_dir.is_dir():
        return [f"not a directory: {skill_dir}"]
    skill_md = next((skill_dir / n for n in ("SKILL.md", "skill.md") if (skill_dir / n).is_file()), None)
    if skill_md is None:
        return ["missing required file: SKILL.md"]
    try:
        meta, body = parse(skill_md.read_text(encoding="utf-8"))
    except (FrontmatterError, UnicodeDecodeError) as e:
        return [f"{skill_md.name}: {e}"]
    return [
        *_fields(meta),
        *_name(meta.get("name"), skill_dir),
        *_description(meta.get("description")),
        *_compatibility(meta),
        *_metadata(meta),
        *_body(body, skill_dir),
    ]


def _fields(meta: dict) -> list[str]:
    extra = sorted(set(meta) - set(ALLOWED_FIELDS))
    missing = [f"missing required field: {f}" for f in ("name", "description") if f not in meta]
    return missing + ([f"unexpected frontmatter fields: {', '.join(extra)}; allowed: {', '.join(ALLOWED_FIELDS)}"] if extra else [])


def _name(name, skill_dir: Path) -> list[str]:
    if name is None:
        return []
    if not isinstance(name, str) or not name.strip():
        return ["field 'name' must be a non-empty string"]
    name = unicodedata.normalize("NFKC", name.strip())
    problems = []
    if len(name) > MAX_NAME:
        problems.append(f"name {name!r} is longer than {MAX_NAME} characters")
    if name != name.lower():
        problems.append(f"name {name!r} must be lowercase")
    if name.startswith("-") or name.endswith("-") or "--" in name:
        problems.append(f"name {name!r} must not start or end with '-' or contain '--'")
    if not all(c.isalnum() or c == "-" for c in name):
        problems.append(f"name {name!r} may contain only letters, digits and '-'")
    if unicodedata.normalize("NFKC", skill_dir.name) != name:
        problems.append(f"directory name {skill_dir.name!r} must equal the skill name {name!r}")
    return problems


def _description(description) -> list[str]:
    if description is None:
        return []
    if not isinstance(description, str) or not description.strip():
        return ["field 'description' must be a non-empty string"]
    problems = []
    if len(description) > MAX_DESCRIPTION:
        problems.append(f"description is {len(description)} characters; the limit is {MAX_DESCRIPTION}")
    if "<" in description or ">" in description:
        problems.append("description must not contain '<' or '>'")
    return problems


def _compatibility(meta: dict) -> list[str]:
    value = meta.get("compatibility")
    if value is None:
        return []
    if not isinstance(value, str) or not value.strip():
        return ["field 'compatibility' must be a non-empty string"]
    return [f"compatibility is {len(value)} characters; the limit is {MAX_COMPATIBILITY}"] if len(value) > MAX_COMPATIBILITY else []


def _metadata(meta: dict) -> list[str]:
    problems = []
    if "metadata" in meta and not isinstance(meta["metadata"], dict):
        problems.append("field 'metadata' must be a map of string keys to string values")
    for field in ("license", "allowed-tools"):
        if field in meta and not isinstance(meta[field], str):
            problems.append(f"field {field!r} must be a string")
    return problems


def _body(body: str, skill_dir: Path) -> list[str]:
    problems = []
    lines = body.strip().split("\n")
    if not body.strip():
        problems.append("SKILL.md has no body")
    if len(lines) > MAX_BODY_LINES:
        problems.append(f"SKILL.md body has {len(lines)} lines; keep it under {MAX_BODY_LINES} and move detail into references/")
    for match in _LINK.finditer(body):
        ref = match.group(1) or match.group(2)
        if not (skill_dir / ref).is_file():
            problems.append(f"SKILL.md refers to {ref}, which does not exist")
    return problems
