"""`nkidev debug` with the replay provider: backup first, fixes judged against the original task file, RESOLVED writes
the fix with a diff, BLOCKED leaves the file alone; the simplification ladder starts when the loop is stuck."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nkidev.loops.debug import LADDER, ladder_step

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tiled_add.py"


def broken(tmp_path: Path) -> Path:
    task = tmp_path / "tiled_add.py"
    task.write_text(EXAMPLE.read_text().replace("tile_rows=32,", "tile_rows=256,"))  # 256 partitions: a rule error
    return task


def replay(tmp_path: Path, *sources: str) -> Path:
    d = tmp_path / "fixes"
    d.mkdir()
    for i, text in enumerate(sources):
        (d / f"{i:02d}.py").write_text(text)
    return d


def run(*args) -> tuple[int, dict]:
    done = subprocess.run(
        [sys.executable, "-m", "nkidev", "debug", *map(str, args), "--seeds", "0", "--json"], capture_output=True, text=True
    )
    return done.returncode, json.loads(done.stdout)


def test_resolved_after_a_wrong_fix(tmp_path):
    task = broken(tmp_path)
    before = task.read_text()
    wrong = EXAMPLE.read_text().replace("op=nl.add", "op=nl.subtract")
    code, result = run(
        f"{task}::tiled_add", "--provider", f"replay:{replay(tmp_path, wrong, EXAMPLE.read_text())}", "--out", tmp_path / "run"
    )
    assert code == 0 and result["status"] == "RESOLVED"
    assert [(it["index"], it["passed"]) for it in result["iterations"]] == [(1, False), (2, True)]
    assert result["iterations"][0]["verdicts"] == ["fail_tolerance"]
    assert Path(result["backup"]).read_text() == before and task.read_text() == EXAMPLE.read_text()
    assert "-def tiled_add(x, y, tile_rows=256, tile_cols=128):" in result["diff"]


@pytest.mark.slow  # ~20 s on the shared 2-core machine: run with -m slow
def test_blocked_leaves_the_file_and_names_the_error(tmp_path):
    task = broken(tmp_path)
    before = task.read_text()
    code, result = run(f"{task}::tiled_add", "--provider", f"replay:{replay(tmp_path, before)}", "--out", tmp_path / "run")
    assert code == 1 and result["status"] == "BLOCKED" and task.read_text() == before
    assert result["iterations"][0]["error"]["name"] == "err_num_partition_exceed_arch_limit"
    assert result["iterations"][0]["error"]["location"].endswith("001.py:25")
    code, again = run(f"{task}::tiled_add", "--provider", f"replay:{tmp_path / 'fixes'}", "--out", tmp_path / "run2")
    assert code == 2 and again["error"]["name"] == "err_output_exists"  # the backup is never overwritten silently


def test_ladder_starts_when_stuck_or_late():
    same = ("err_x", "k.py:3")
    assert ladder_step([same, same]) is None
    assert ladder_step([same, same, same]) == LADDER[0]
    assert ladder_step([same, same, same, ("other",)]) == LADDER[1]
    assert ladder_step([("a",), ("b",), ("c",), ("d",), ("e",), ("f",)]) is None
    assert ladder_step([("a",), ("b",), ("c",), ("d",), ("e",), ("f",), ("g",)]) == LADDER[0]
