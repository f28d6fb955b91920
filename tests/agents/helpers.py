"""Shared helpers for the docs and agents tests: run the CLI in-process and snapshot directory trees."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from typer.testing import CliRunner

from nkidev.cli import app

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def run_cli(args: list[str] | str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `nkidev ARGS`, run in this process."""
    argv = shlex.split(args) if isinstance(args, str) else list(args)
    result = CliRunner().invoke(app, argv, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def run_json(args: list[str] | str):
    code, out, err = run_cli(args)
    return code, json.loads(out) if out.strip() else None


def snapshot(root: Path) -> dict[str, tuple[bytes | None, int]]:
    """Every file and directory under root with its bytes (None for directories) and mtime in ns."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        out[rel] = (None if path.is_dir() else path.read_bytes(), path.stat().st_mtime_ns)
    return out


def backend_available(module: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False
