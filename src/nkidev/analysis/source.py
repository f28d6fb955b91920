"""Kernel source lines for findings: resolve the profile's file paths and read the text.

Profiles name lines as absolute paths on the machine that compiled the kernel ("/home/u/k.py:42").
`--source-root DIR` lets the report find them elsewhere: DIR/<path>, then DIR/<file name>.

A profile is data from elsewhere, so its paths are not trusted: only Python files (.py) are read, and only
inside the source root (default: the working directory), the profile directory or nkidev's bundled
examples, with symlinks resolved. A profile naming /etc/passwd:1 gets no text.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from nkidev.analysis.findings import Finding, short_location, split_location

CONTEXT_LINES = 2


@lru_cache(maxsize=64)
def _read_lines(path: str) -> tuple[str, ...]:
    try:
        return tuple(Path(path).read_text(errors="replace").splitlines())
    except OSError:
        return ()


def resolve_path(path: str, source_root: str | Path | None, profile_dir: str | Path | None, roots: list[Path] | None = None) -> str | None:
    """The first existing file among the candidates for `path`, or None. `roots`: readable_roots(source_root,
    profile_dir), when the caller resolves many paths (finding the roots costs more than checking a path)."""
    name = os.path.basename(path)
    candidates: list[Path] = []
    if source_root:
        root = Path(source_root)
        candidates += [root / path.lstrip("/"), root / name]
    candidates.append(Path(path))
    if profile_dir:
        candidates += [Path(profile_dir) / name, Path(profile_dir) / "source" / name]
    roots = roots if roots is not None else readable_roots(source_root, profile_dir)
    for c in candidates:
        if c.is_file() and readable(c, roots):
            return str(c.resolve())
    return None


def readable_roots(source_root, profile_dir) -> list[Path]:
    """The directories kernel sources may be read from."""
    roots = [Path(source_root) if source_root else Path.cwd()]
    if profile_dir:
        roots.append(Path(profile_dir))
    try:
        from nkidev.examples import examples_dir

        roots.append(examples_dir())
    except Exception:  # noqa: BLE001 - an install without examples simply has no such root
        pass
    return [r.resolve() for r in roots]


def readable(path: Path, roots: list[Path]) -> bool:
    real = path.resolve()
    return real.suffix == ".py" and any(real.is_relative_to(r) for r in roots)


def describe(location: str, source_root=None, profile_dir=None, roots: list[Path] | None = None) -> dict:
    """{location, path, line, text, context} for one 'path:line' (text None when the file is not found)."""
    parts = split_location(location)
    entry = {"location": short_location(location), "path": None, "line": None, "text": None, "context": []}
    if not parts:
        return entry
    path, line = parts
    entry["line"] = line
    resolved = resolve_path(path, source_root, profile_dir, roots)
    lines = _read_lines(resolved) if resolved else ()
    if resolved and 0 < line <= len(lines):
        entry["path"] = resolved
        entry["text"] = lines[line - 1].strip()
        lo, hi = max(1, line - CONTEXT_LINES), min(len(lines), line + CONTEXT_LINES)
        entry["context"] = [{"line": n, "text": lines[n - 1]} for n in range(lo, hi + 1)]
    return entry


def attach(findings: list[Finding], full_locations: list[str], source_root=None, profile_dir=None, roots: list[Path] | None = None) -> None:
    """Fill `finding.source` for every short location, using the profile's full paths to find the file."""
    roots = roots if roots is not None else readable_roots(source_root, profile_dir)
    by_short: dict[str, list[str]] = {}
    for loc in full_locations:
        by_short.setdefault(short_location(loc), []).append(loc)
    for f in findings:
        f.source = []
        for short in f.source_lines:
            entries = [describe(full, source_root, profile_dir, roots) for full in by_short.get(short, [short])]
            found = [e for e in entries if e["text"] is not None]
            f.source.append(found[0] if found else entries[0])
