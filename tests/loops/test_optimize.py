"""`nkidev optimize` with the replay provider: cheats and wrong candidates rejected with the right verdicts, an endless
one stopped by the time limit, the honest rewrite kept; target and budget stops, --apply's backup, resume after a crash."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REPLAY = ROOT / "examples" / "replay" / "swiglu_naive"
SMALL = Path(__file__).resolve().parent / "data" / "swiglu_small.py"


def nkidev(*args, cwd=None, timeout=300) -> tuple[int, dict]:
    done = subprocess.run(
        [sys.executable, "-m", "nkidev", *map(str, args), "--json"], capture_output=True, text=True, cwd=cwd, timeout=timeout
    )
    try:
        return done.returncode, json.loads(done.stdout)
    except ValueError:
        raise AssertionError(f"exit {done.returncode}: {done.stdout}\n{done.stderr}") from None


@pytest.fixture
def task(tmp_path) -> Path:
    path = tmp_path / "swiglu_small.py"
    shutil.copy(SMALL, path)
    return path


def test_the_replay_directory_is_judged_right(task, tmp_path):
    before = task.read_bytes()
    out = tmp_path / "run"
    code, result = nkidev(
        "optimize", f"{task}::swiglu_naive", "--provider", f"replay:{REPLAY}", "--out", out, "--seeds", 0, "--timeout", 15, "--width", 2
    )
    assert code == 0, result
    its = {it["index"]: it for it in result["iterations"]}
    assert sorted(its) == [1, 2, 3, 4, 5, 6] and [it["accepted"] for it in its.values()] == [False] * 5 + [True]
    assert "fail_tolerance" in its[1]["verdicts"]  # its own reference was ignored
    assert its[2]["verdicts"] == ["fail_tolerance"]
    assert "cheat_input_modified" in its[3]["verdicts"]
    assert any("timeout" in v for v in its[4]["verdicts"]) and its[4]["error"]["name"] == "err_timeout"
    assert its[5]["verdicts"] == [] and its[5]["total_time_ns"] > result["baseline"]["total_time_ns"]  # correct but slower
    assert its[6]["speedup"] > 1.05 and its[6]["source"] == str(out / "candidates" / "006.py")
    assert result["best"] == {
        "index": 6,
        "path": str(out / "best.py"),
        "total_time_ns": its[6]["total_time_ns"],
        "speedup": its[6]["speedup"],
    }
    assert result["stopped"] == "provider_exhausted"
    assert (out / "best.py").read_text() == (REPLAY / "06_honest_rewrite.py").read_text()
    assert task.read_bytes() == before and not task.with_name(task.name + ".orig").exists()  # the user's file is untouched
    state = json.loads((out / "state.json").read_text())
    reasons = {it["index"]: it["reason"] for it in state["iterations"]}
    assert reasons[5].startswith("slower: ") and "cheat_input_modified" in reasons[3] and "004.py" not in reasons[3]
    report = json.loads((out / "report.json").read_text())
    assert report["best"]["index"] == 6 and "redundant_load" in report["findings_fixed"]
    html = (out / "report.html").read_text()
    assert "<script" not in html and "cheat_input_modified" in html and "+++ best.py" in html


ADD = ROOT / "examples" / "tiled_add.py"


def tiled_add(tmp_path: Path, rows: int, cols: int, name: str) -> Path:
    """examples/tiled_add.py with other defaults: a cheap task (or candidate) whose speed the defaults decide."""
    path = tmp_path / name
    path.write_text(ADD.read_text().replace("tile_rows=32, tile_cols=128", f"tile_rows={rows}, tile_cols={cols}"))
    return path


def test_target_stop_then_apply_keeps_a_backup(tmp_path):
    task = tiled_add(tmp_path, 32, 128, "task.py")
    replay = tmp_path / "replay"
    replay.mkdir()
    fast = tiled_add(replay, 128, 512, "a_fast.py")
    (replay / "b_wrong.py").write_text(ADD.read_text().replace("op=nl.add", "op=nl.subtract"))
    before = task.read_bytes()
    code, result = nkidev(
        "optimize", f"{task}::tiled_add", "--provider", f"replay:{replay}", "--out", tmp_path / "run", "--seeds", 0,
        "--target-speedup", 2, "--apply",
    )  # fmt: skip
    assert code == 0 and result["stopped"] == "target_met" and [it["index"] for it in result["iterations"]] == [1]
    assert result["applied"]["applied"] is True and result["best"]["speedup"] > 2
    assert task.with_name(task.name + ".orig").read_bytes() == before
    assert task.read_text() == fast.read_text()
    code, again = nkidev("optimize", f"{task}::tiled_add", "--provider", f"replay:{replay}", "--out", tmp_path / "run2", "--apply")
    assert code == 2 and again["error"]["name"] == "err_output_exists" and not (tmp_path / "run2").exists()


@pytest.mark.slow  # ~20 s on the shared 2-core machine: run with -m slow
def test_budget_stop(tmp_path):
    task = tiled_add(tmp_path, 32, 128, "task.py")
    replay = tmp_path / "replay"
    replay.mkdir()
    tiled_add(replay, 64, 128, "a.py")
    tiled_add(replay, 128, 128, "b.py")
    code, result = nkidev("optimize", f"{task}::tiled_add", "--provider", f"replay:{replay}", "--out", tmp_path / "run", "--seeds", 0,
                          "--budget-iterations", 1)  # fmt: skip
    assert code == 0 and result["stopped"] == "budget_exhausted" and [it["accepted"] for it in result["iterations"]] == [True]


CRASH = """
import os, sys
from nkidev import atomic
def hook(label):
    if label == "optimize: candidates evaluated" and os.path.exists(sys.argv[1] + "/candidates/002.json"):
        os._exit(17)  # the second candidate's evaluation is on disk, the state does not know it yet
atomic.crash_hook = hook
from nkidev.loops.optimize import optimize
optimize(sys.argv[2], sys.argv[3], out=sys.argv[1], seeds=0, budget_iterations=3)
"""


@pytest.mark.slow  # ~20 s on the shared 2-core machine: run with -m slow
def test_resume_after_a_crash_judges_no_candidate_twice(tmp_path):
    task = tiled_add(tmp_path, 64, 256, "task.py")
    replay = tmp_path / "replay"
    replay.mkdir()
    tiled_add(replay, 32, 128, "a_slower.py")
    tiled_add(replay, 128, 512, "b_faster.py")
    tiled_add(replay, 128, 512, "c_same_again.py")
    out = tmp_path / "run"
    crashed = subprocess.run([sys.executable, "-c", CRASH, out, f"{task}::tiled_add", f"replay:{replay}"], capture_output=True, timeout=300)
    assert crashed.returncode == 17, crashed.stderr
    state = json.loads((out / "state.json").read_text())
    assert [it["index"] for it in state["iterations"]] == [1] and state["pending"] == [2]
    evaluation = (out / "candidates" / "002.json").read_text()
    code, result = nkidev("optimize", "--resume", out, "--seeds", 0)
    assert code == 0, result
    assert (out / "candidates" / "002.json").read_text() == evaluation  # reused, not evaluated again
    its = result["iterations"]
    assert [it["index"] for it in its] == [1, 2, 3] and [it["accepted"] for it in its] == [False, True, False]
    assert its[2]["verdicts"] == ["duplicate"] and not (out / "candidates" / "003.json").exists()  # identical source: not rerun
    assert result["stopped"] == "budget_exhausted" and result["best"]["index"] == 2
