"""YAML frontmatter of SKILL.md and agent files, for the small YAML subset these files need.

Supported: `key: scalar` (plain, "double-quoted" or 'single-quoted'), a nested map of scalars
(`metadata:` then indented `key: value` lines) and a block list (`skills:` then `  - item` lines).
Everything else (flow collections, anchors, multi-line scalars, a plain scalar containing ': ' or
' #') is rejected, as strict YAML parsers such as the one behind `skills-ref` reject it or read it
differently. No YAML library is needed.
"""

from __future__ import annotations

import json
import re

_KEY = re.compile(r"^([A-Za-z0-9_-]+):(?:\s+(.*))?$")
_INDICATORS = tuple("[]{}&*!|>%@`,?#")


class FrontmatterError(ValueError):
    """The frontmatter is missing, unclosed or outside the supported YAML subset."""


def split(text: str) -> tuple[str, str]:
    """(frontmatter, body) of a document that starts with a `---` line."""
    if not text.startswith("---"):
        raise FrontmatterError("the file must start with YAML frontmatter (a line '---')")
    lines = text.split("\n")
    for i, line in enumerate(lines[1:], start=1):
        if line.rstrip() == "---":
            return "\n".join(lines[1:i]), "\n".join(lines[i + 1 :])
    raise FrontmatterError("the frontmatter is not closed with a line '---'")


def parse(text: str) -> tuple[dict, str]:
    """Parse a document's frontmatter into a dict of str, dict[str, str] and list[str] values; return it and the body."""
    head, body = split(text)
    data: dict = {}
    key = None
    for number, raw in enumerate(head.split("\n"), start=2):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        if raw[0] in " \t":
            data[key] = _nested(data.get(key), raw, key, number)
            continue
        match = _KEY.match(raw.rstrip())
        if not match:
            raise FrontmatterError(f"line {number}: expected 'key: value', got {raw!r}")
        key, value = match.group(1), match.group(2)
        if key in data:
            raise FrontmatterError(f"line {number}: duplicate key {key!r}")
        data[key] = None if value is None else scalar(value, number)
    for name, value in data.items():
        if value is None:
            raise FrontmatterError(f"key {name!r} has no value")
    return data, body


def _nested(current, raw: str, key: str | None, number: int):
    if key is None:
        raise FrontmatterError(f"line {number}: indented line without a parent key")
    line = raw.strip()
    if line.startswith("- "):
        if current is not None and not isinstance(current, list):
            raise FrontmatterError(f"line {number}: {key!r} mixes a map and a list")
        return [*(current or []), scalar(line[2:], number)]
    match = _KEY.match(line)
    if not match or match.group(2) is None:
        raise FrontmatterError(f"line {number}: expected '  key: value' or '  - item' under {key!r}")
    if current is not None and not isinstance(current, dict):
        raise FrontmatterError(f"line {number}: {key!r} mixes a list and a map")
    return {**(current or {}), match.group(1): scalar(match.group(2), number)}


def scalar(value: str, number: int = 0) -> str:
    """One YAML scalar; always a string (strict YAML reads no implicit types)."""
    value = value.strip()
    if value.startswith('"'):
        try:
            parsed = json.loads(value)
        except ValueError:
            raise FrontmatterError(f"line {number}: bad double-quoted string {value!r}") from None
        if not isinstance(parsed, str):
            raise FrontmatterError(f"line {number}: bad double-quoted string {value!r}")
        return parsed
    if value.startswith("'"):
        if len(value) < 2 or not value.endswith("'") or "'" in value[1:-1].replace("''", ""):
            raise FrontmatterError(f"line {number}: bad single-quoted string {value!r}")
        return value[1:-1].replace("''", "'")
    if value.startswith(_INDICATORS) or value.startswith(("- ", ": ")):
        raise FrontmatterError(f"line {number}: quote values that start with {value[0]!r}")
    if ": " in value or " #" in value or value.endswith(":"):
        raise FrontmatterError(f"line {number}: quote values containing ': ' or ' #' ({value[:40]!r}...)")
    return value


def dump(data: dict) -> str:
    """Frontmatter text (without the --- lines) that `parse` reads back to `data`."""
    lines = []
    for key, value in data.items():
        if isinstance(value, dict):
            lines.append(f"{key}:")
            lines += [f"  {k}: {_quote(str(v))}" for k, v in value.items()]
        elif isinstance(value, list | tuple):
            lines.append(f"{key}:")
            lines += [f"  - {_quote(str(v))}" for v in value]
        else:
            lines.append(f"{key}: {_quote(str(value).lower() if isinstance(value, bool) else str(value))}")
    return "\n".join(lines)


def _quote(value: str) -> str:
    try:
        if scalar(value) == value and value == value.strip() and value:
            return value
    except FrontmatterError:
        pass
    return json.dumps(value)
