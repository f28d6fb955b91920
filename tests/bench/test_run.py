"""bench run: scores, the summary, the anti-cheat gate on solutions, saved runs, compare and the leaderboard."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nkidev.bench import registry
from nkidev.bench.compare import compare_runs
from nkidev.bench.evaluate import evaluate_task, percent_of_peak
from nkidev.bench.html import leaderboard
from nkidev.bench.run import ROW_KEYS, summarize

# A softmax "solution" that returns memory it never wrote, and a transpose that is the baseline itself.
CHEAT = """
import nki
import nki.language as nl


@nki.jit
def softmax(x):
    return nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
"""


def cli(*args):
    """The CLI in-process (for commands that start no child): exit code and stdout."""
    from typer.testing import CliRunner

    from nkidev.cli import app

    done = CliRunner().invoke(app, list(args), env={"COLUMNS": "200", "TERM": "dumb"})
    return done.exit_code, done.stdout


def nkidev(*args, cwd=None):
    env = {**os.environ, "COLUMNS": "200", "TERM": "dumb"}
    return subprocess.run([sys.executable, "-m", "nkidev", *args], capture_output=True, text=True, env=env, timeout=1800, cwd=cwd)


@pytest.fixture(scope="module")
def solutions_run(tmp_path_factory):
    """One CLI run over a cheat (softmax) and an honest copy of the baseline (transpose), saved for the tests below."""
    root = tmp_path_factory.mktemp("bench")
    kernels = root / "kernels"
    kernels.mkdir()
    (kernels / "softmax.py").write_text(CHEAT)
    (kernels / "transpose.py").write_text(registry.task_path("transpose").read_text())
    (kernels / "notes.py").write_text("# not a task: ignored\n")
    save, html = root / "run.json", root / "board.html"
    done = nkidev("bench", "run", "--kernels", str(kernels), "--quick", "--json", "--save", str(save), "--html", str(html), "--jobs", "2")
    return done, save, html


def test_cheat_solution_is_flagged_and_honest_one_scored(solutions_run):
    done, save, _ = solutions_run
    assert done.returncode == 1, done.stderr  # exitcodes.FAILED: not every task passed
    out = json.loads(done.stdout)
    rows = {r["task"]: r for r in out["tasks"]}
    assert list(rows) == ["softmax", "transpose"] and all(set(r) == set(ROW_KEYS) for r in out["tasks"])
    assert rows["softmax"]["passed"] is False and "cheat_output_not_written" in rows["softmax"]["verdicts"]
    assert rows["softmax"]["total_time_ns"] is None and rows["softmax"]["speedup"] is None
    honest = rows["transpose"]
    assert honest["passed"] and honest["speedup"] == 1.0 and honest["total_time_ns"] == honest["baseline_time_ns"] > 0
    assert 0 < honest["percent_of_peak"] <= 100
    assert out["summary"] == {
        "fast_1": 0.5,
        "fast_1.5": 0.0,
        "fast_2": 0.0,
        "geomean_speedup": 1.0,
        "mean_percent_of_peak": honest["percent_of_peak"],
    }
    meta = out["meta"]
    assert meta["target"] == "trn2" and meta["nkidev_version"] and meta["cost_model_version"].startswith(meta["nkidev_version"] + "+")
    assert meta["calibration"].startswith("trn2:") and meta["quick"] is True
    assert json.loads(save.read_text())["tasks"] == out["tasks"]


def test_leaderboard_has_one_row_per_task(solutions_run):
    _, _, html = solutions_run
    page = html.read_text()
    assert page.count("<tr><td>softmax</td>") == 1 and page.count("<tr><td>transpose</td>") == 1
    assert "cheat_output_not_written" in page and "<script" not in page and "geomean_speedup" in page


def test_compare_two_saved_runs(solutions_run, tmp_path):
    _, save, _ = solutions_run
    run = json.loads(save.read_text())
    faster = json.loads(save.read_text())
    for r in faster["tasks"]:
        if r["passed"]:
            r["total_time_ns"] = r["total_time_ns"] / 2
    faster["meta"]["target"] = "trn3"
    b = tmp_path / "b.json"
    b.write_text(json.dumps(faster))
    result = compare_runs(save, b)
    rows = {r["task"]: r for r in result["tasks"]}
    assert rows["transpose"]["speedup"] == 2.0 and rows["softmax"]["speedup"] is None
    assert result["summary"]["geomean_speedup"] == 2.0 and result["summary"]["common_tasks"] == 1
    assert any("target" in n for n in result["notes"])
    assert run["summary"] == result["summary"]["a"]
    done = nkidev("bench", "compare", str(save), str(b))
    assert done.returncode == 0 and "2.00x" in done.stdout


def test_compare_rejects_a_file_that_is_not_a_run(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text("[1, 2]")
    code, out = cli("bench", "compare", str(bad), str(bad), "--json")
    assert code == 2 and json.loads(out)["error"]["name"] == "err_bad_argument"


def test_existing_outputs_are_not_replaced_without_force(tmp_path):
    mine = tmp_path / "mine.html"
    mine.write_text("my notes")
    code, out = cli("bench", "run", "--tasks", "softmax", "--quick", "--html", str(mine), "--json")
    assert code == 2 and json.loads(out)["error"]["name"] == "err_output_exists"
    assert mine.read_text() == "my notes"


def test_unknown_task_is_a_named_error():
    code, out = cli("bench", "show", "matmull", "--json")
    assert code == 2
    err = json.loads(out)["error"]
    assert err["name"] == "err_unknown_task" and "matmul" in err["fix"]


def test_list_json_shape():
    code, out = cli("bench", "list", "--json")
    assert code == 0, out
    tasks = json.loads(out)["tasks"]
    assert len(tasks) >= 14 and all(set(t) == {"task", "family", "entry", "dtypes", "quick_cases", "full_cases"} for t in tasks)


def test_show_prints_the_spec_and_baseline():
    code, out = cli("bench", "show", "cumsum")
    assert code == 0, out
    assert "Inclusive prefix sum" in out and "def cumsum(x):" in out and "tensor_scalar_cumulative" in out


def test_percent_of_peak_of_baselines_is_in_range():
    for task in ("rope", "matmul_lhsT"):
        row = evaluate_task(task, seeds=0)
        assert row["passed"], row["reasons"]
        assert 0 < row["percent_of_peak"] <= 100
        assert row["percent_of_peak"] == pytest.approx(100 * row["ideal_time_ns"] / row["total_time_ns"], abs=0.01)


def test_solution_is_checked_against_the_tasks_reference_not_its_own():
    # a wrong kernel that ships its own matching reference still fails: the task file's reference is used
    source = CHEAT.replace("return nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)", "return x") + (
        "\n\ndef reference(x):\n    return x\n\n\ndef quick_cases(seed=0):\n    return []\n"
    )
    row = evaluate_task("softmax", source=source, seeds=0)
    assert row["passed"] is False and row["total_time_ns"] is None
    assert row["verdicts"]


def test_summary_fast_p_and_geomean():
    rows = [
        {"task": "a", "passed": True, "speedup": 2.0, "percent_of_peak": 40.0},
        {"task": "b", "passed": True, "speedup": 0.5, "percent_of_peak": 10.0},
        {"task": "c", "passed": True, "speedup": 1.6, "percent_of_peak": 30.0},
        {"task": "d", "passed": False, "speedup": None, "percent_of_peak": None},
    ]
    s = summarize(rows)
    assert s == {
        "fast_1": 0.5,
        "fast_1.5": 0.5,
        "fast_2": 0.25,
        "geomean_speedup": pytest.approx(1.1696, abs=1e-4),
        "mean_percent_of_peak": 26.667,
    }


def test_percent_of_peak_never_exceeds_100():
    assert percent_of_peak(50.0, 100.0) == 50.0
    assert percent_of_peak(150.0, 100.0) == 100.0
    assert percent_of_peak(0.0, 100.0) is None


def test_leaderboard_escapes_names():
    result = {
        "tasks": [{k: None for k in ROW_KEYS} | {"task": "<b>x", "passed": False, "verdicts": ["fail_shape"]}],
        "summary": {},
        "meta": {},
    }
    assert "&lt;b&gt;x" in leaderboard(result) and "<b>x" not in leaderboard(result)


def test_readme_documents_bench():
    text = (Path(__file__).parents[2] / "README.md").read_text()
    assert "nkidev bench run" in text and "percent_of_peak" in text


def test_ray_executor_without_ray_is_a_named_error():
    try:
        import ray  # noqa: F401
    except ImportError:
        code, out = cli("bench", "run", "--tasks", "softmax", "--quick", "--executor", "ray", "--json")
        assert code == 2 and json.loads(out)["error"]["name"] == "err_missing_extra"
    else:
        pytest.skip("ray is installed: the missing-extra error cannot happen")


@pytest.mark.slow
@pytest.mark.parametrize("quick", [True, False], ids=["quick", "full"])
def test_whole_suite_of_baselines_on_trn2(quick):
    # quick: ~1.5 min on 2 cores; full (the public suites' sizes, numerics skipped): ~10 min
    done = nkidev("bench", "run", "--target", "trn2", "--json", *(["--quick"] if quick else []))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert len(out["tasks"]) == len(registry.task_names()) >= 14
    assert all(r["passed"] and 0 < r["percent_of_peak"] <= 100 and r["speedup"] == 1.0 for r in out["tasks"])
    assert out["summary"]["fast_1"] == 1.0 and out["summary"]["geomean_speedup"] == 1.0


def test_bench_tune_needs_a_task_with_tunable():
    code, out = cli("bench", "tune", "--tasks", "softmax", "--quick", "--json")
    assert code == 2 and json.loads(out)["error"]["name"] == "err_bad_tunable"


@pytest.mark.slow
def test_bench_tune_scores_the_best_config_like_bench_run():
    done = nkidev("bench", "tune", "--tasks", "matmul_lhsT", "--quick", "--json")
    out = json.loads(done.stdout)
    (row,) = out["tasks"]
    assert set(row) == set(ROW_KEYS) and row["passed"] and 0 < row["percent_of_peak"] <= 100
    detail = out["details"]["matmul_lhsT"]
    assert detail["configs"] == 3 and detail["best_params"]["TN"] in (128, 256, 512)
    assert out["meta"]["loop"] == "tune" and row["baseline_time_ns"] > 0


@pytest.mark.slow
def test_bench_optimize_replays_candidates_per_task(tmp_path):
    replay = tmp_path / "replay"
    replay.mkdir()
    (replay / "001.py").write_text(registry.task_path("transpose").read_text())
    done = nkidev("bench", "optimize", "--provider", f"replay:{replay}", "--out", str(tmp_path / "out"), "--tasks", "transpose", "--quick")
    assert done.returncode == 0, done.stderr
    assert "PASS transpose" in done.stdout and (tmp_path / "out" / "transpose" / "best.py").is_file()
