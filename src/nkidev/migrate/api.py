"""Migrate a kernel file: legacy Beta-1 (`neuronxcc.nki`) -> current NKI, or NKI 0.6 -> 0.7.

`migrate_file(path)` returns a MigrationResult: the unified diff, the new source, the changes made and the
manual steps left (each with its line), and -- when the file is a task file with `cases()` -- how the
migrated kernels compare with the originals on those cases (bit-identical, within tolerance, or not).
`write=True` replaces the file after copying it to `<file>.bak` (`.bak.1`, ... when that exists), atomically.
"""

from __future__ import annotations

import ast
import difflib
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from nkidev.emulator import versions
from nkidev.errors import NkiUsageError


def _libcst():
    try:
        import libcst
    except ImportError:
        raise NkiUsageError(
            "err_migrate_missing_extra",
            "`nkidev migrate` needs LibCST, which is not installed",
            "install it with: pip install 'nkidev[migrate]'",
        ) from None
    return libcst


@dataclass
class MigrationResult:
    path: str
    kind: str  # "legacy -> 0.7" | "0.6 -> 0.7" | "none"
    source: str  # the migrated source
    diff: str
    changes: list[dict] = field(default_factory=list)
    manual: list[dict] = field(default_factory=list)
    validation: dict | None = None  # see check.compare
    written: bool = False
    backup: str | None = None

    @property
    def passed(self) -> bool:
        return self.validation is None or self.validation.get("status") in ("identical", "within tolerance", "not validated")

    def to_dict(self) -> dict:
        return {
            "path": self.path,
            "kind": self.kind,
            "diff": self.diff,
            "changes": self.changes,
            "manual": self.manual,
            "validation": self.validation,
            "written": self.written,
            "backup": self.backup,
        }


def migrate_source(source: str, filename: str = "<string>") -> tuple[str, str, list]:
    """(new source, kind, notes) for the text of a kernel file."""
    cst = _libcst()
    from libcst.metadata import MetadataWrapper

    from nkidev.migrate import legacy_rules, v07_rules
    from nkidev.migrate.common import Notes

    try:
        ast.parse(source, filename)  # CPython's own parser names the line of a syntax error exactly
        module = cst.parse_module(source)
    except SyntaxError as e:
        raise NkiUsageError("err_migrate_parse", e.msg, "fix the syntax error, then rerun", f"{filename}:{e.lineno}") from None
    except cst.ParserSyntaxError as e:
        raise NkiUsageError("err_migrate_parse", e.message, "fix the syntax error, then rerun", f"{filename}:{e.raw_line}") from None
    notes = Notes()
    modules = legacy_rules.legacy_modules(module)
    if modules:
        rules = legacy_rules.LegacyToCurrent(notes, modules)
        module = MetadataWrapper(module).visit(rules)
        # until nothing changes: dropping a dead mask definition can leave the index variables it used dead too
        for _ in range(8):
            cleaned = module.visit(legacy_rules.Cleanup(notes, rules.accumulators, rules.index_names, rules.index_origins))
            if cleaned.deep_equals(module):
                break
            module = cleaned
        for line, text in _leftover_index(module, rules.index_origins, rules.module_of):
            notes.manual(line, text, "an nl.arange / nl.mgrid expression is left: rewrite it as slices or an .ap() pattern")
        kind = f"legacy -> {versions.NEWEST}"
        module = cst.parse_module(module.code)
    else:
        kind = "none"
    modules07 = v07_rules.current_modules(module)
    if modules07 and v07_rules.uses_06_constructs(module, modules07):
        before = len(notes.items)
        module = MetadataWrapper(module).visit(v07_rules.To07(notes, modules07))
        if kind == "none" and len(notes.items) > before:
            kind = f"0.6 -> {versions.NEWEST}"
    return module.code, kind, sorted(notes.items, key=lambda n: (n.line, n.kind))


def _leftover_index(module, origins: dict[int, tuple[int, object]], module_of) -> list[tuple[int, str]]:
    """(line, migrated source line) of every `nl.arange` / `nl.mgrid` the rules left in code (not in strings or
    comments; `module_of(node)` is "language" for the NKI language module, so NumPy's np.arange is not one). The
    line is the original file's (the one the user has open), found through `origins` (id of the node -> its original
    line, see LegacyToCurrent.leave_Attribute); a node without one gets the migrated line."""
    cst = _libcst()
    from libcst.metadata import MetadataWrapper, PositionProvider

    from nkidev.migrate import legacy_rules

    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)  # the same node objects, so their ids still match
    positions = wrapper.resolve(PositionProvider)
    lines = module.code.splitlines()
    found: dict[int, str] = {}

    class Finder(cst.CSTVisitor):
        def visit_Attribute(self, node) -> None:
            if node.attr.value in legacy_rules.INDEX_ATTRIBUTES and module_of(node.value) == "language":
                migrated = positions[node].start.line
                found.setdefault(origins.get(id(node), (migrated,))[0], lines[migrated - 1].strip())

    wrapper.visit(Finder())
    return sorted(found.items())


def migrate_file(path: str | Path, write: bool = False, validate: bool = True) -> MigrationResult:
    """Migrate a file (see the module doc); `validate` compares old and new kernels on the file's cases."""
    path = Path(path)
    if not path.is_file():
        raise NkiUsageError("err_bad_task_file", f"no such file: {path}", "check the path")
    source = path.read_text(encoding="utf-8")
    new, kind, notes = migrate_source(source, str(path))
    diff = "".join(difflib.unified_diff(source.splitlines(True), new.splitlines(True), f"a/{path.name}", f"b/{path.name}"))
    result = MigrationResult(
        str(path),
        kind,
        new,
        diff,
        [n.to_dict() for n in notes if n.kind == "changed"],
        [n.to_dict() for n in notes if n.kind == "manual"],
    )
    if validate and kind != "none":
        from nkidev.migrate.check import compare

        result.validation = compare(path, new, kind)
    if write and kind != "none":
        result.backup = str(_backup(path))
        _atomic_write(path, new)
        result.written = True
    return result


def _backup(path: Path) -> Path:
    dest = path.with_name(path.name + ".bak")
    n = 1
    while dest.exists():
        dest = path.with_name(f"{path.name}.bak.{n}")
        n += 1
    shutil.copy2(path, dest)
    return dest


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        shutil.copymode(path, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
