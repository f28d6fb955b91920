"""`nkidev validate` / `nkidev profile` run the task file in an isolated child: endless kernels, exits, SystemExit
in cases(), memory hogs and bad task inputs all end in named errors with non-zero exit codes; SPMD grids run
every program; cases stream as they finish."""

from __future__ import annotations

import json
import time
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from nkidev import exitcodes
from nkidev.cli import app

TASKS = Path(__file__).parent / "tasks"


def cli(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def error_of(result) -> dict:
    return json.loads(result.stdout)["error"]


def line_of(path: Path, marker: str) -> int:
    return next(i for i, t in enumerate(path.read_text().splitlines(), 1) if marker in t)


def test_endless_kernel_is_stopped_by_the_timeout():
    start = time.monotonic()
    # 8 s, not less: on a loaded 2-core machine the child can take over 3 s to import and reach case 1
    r = cli("validate", TASKS / "endless.py", "--timeout", "8", "--json")
    assert r.exit_code == exitcodes.STOPPED, r.output
    e = error_of(r)
    assert e["name"] == "err_timeout" and "8 s" in e["message"] and "case 1 of 1" in e["message"]
    assert time.monotonic() - start < 30


def test_compare_runs_a_spec_side_in_the_sandbox():
    start = time.monotonic()
    softmax = Path(__file__).parents[2] / "examples" / "softmax.py"
    r = cli("compare", f"{softmax}::softmax_kernel", f"{TASKS / 'endless.py'}::endless_kernel", "--timeout", "3", "--json")
    assert r.exit_code == exitcodes.STOPPED, r.output
    assert error_of(r)["name"] == "err_timeout" and time.monotonic() - start < 40


def test_os_exit_zero_in_a_wrong_kernel_is_never_a_pass():
    r = cli("validate", f"{TASKS / 'exits.py'}::exits_kernel", "--json")
    assert r.exit_code == exitcodes.STOPPED and error_of(r)["name"] == "err_child_exited"


def test_system_exit_in_the_kernel_names_its_line():
    r = cli("validate", f"{TASKS / 'exits.py'}::sys_exit_kernel", "--json")
    e = error_of(r)
    assert r.exit_code == exitcodes.KERNEL_ERROR and e["name"] == "err_kernel_raised" and "SystemExit" in e["message"]
    assert e["location"] == f"{TASKS / 'exits.py'}:{line_of(TASKS / 'exits.py', 'raise SystemExit')}"


def test_system_exit_in_cases_is_a_bad_task_file():
    r = cli("validate", TASKS / "cases_exit.py", "--json")
    assert r.exit_code == exitcodes.USAGE and error_of(r)["name"] == "err_bad_task_file" and "SystemExit" in error_of(r)["message"]


def test_memory_hog_is_stopped_by_the_memory_limit():
    r = cli("validate", TASKS / "hog.py", "--memory", "1G", "--json")
    e = error_of(r)
    assert r.exit_code == exitcodes.STOPPED and e["name"] == "err_memory_limit"
    assert e["location"] == f"{TASKS / 'hog.py'}:{line_of(TASKS / 'hog.py', 'hoard.append')}"


@pytest.mark.parametrize(
    "args,where",
    [
        ([TASKS / "wrong.py"], "TOLERANCE: rtol=nan"),  # NaN would make the doubled output pass
        ([f"{TASKS / 'spmd.py'}::grid_copy", "--rtol", "nan"], "rtol=nan"),
        ([f"{TASKS / 'spmd.py'}::grid_copy", "--atol", "-1"], "atol=-1"),
        ([f"{TASKS / 'spmd.py'}::grid_copy", "--atol", "inf"], "atol=inf"),
        ([f"{TASKS / 'spmd.py'}::grid_copy", "--seeds", "100000"], "seeds=100000"),
        ([f"{TASKS / 'spmd.py'}::grid_copy[0]"], "launch grid"),
        ([TASKS / "arity.py"], "case 0 has 3 input(s)"),
        ([TASKS / "arity.py", "--cases", "object_cases"], "case 0 input 1 is a object"),
    ],
)
def test_bad_task_inputs_are_refused_before_running(args, where):
    r = cli("validate", *args, "--json")
    assert r.exit_code == exitcodes.USAGE, r.output
    e = error_of(r)
    assert e["name"] in ("err_bad_task_file", "err_invalid_argument") and where in e["message"]


def test_stray_threads_and_import_prints_do_not_break_a_pass():
    start = time.monotonic()
    r = cli("validate", TASKS / "printing_threads.py", "--seeds", "0", "--json")
    d = json.loads(r.stdout)
    assert r.exit_code == exitcodes.OK and d["passed"] and any("hello from the task file" in n for n in d["notes"])
    assert time.monotonic() - start < 30


@pytest.mark.parametrize("spec", ["grid_copy", "grid_copy_2d[2,2]", "grid_copy_2d[4]"])
def test_spmd_grids_run_every_program(spec):
    r = cli("validate", f"{TASKS / 'spmd.py'}::{spec}", "--seeds", "0", "--json")
    d = json.loads(r.stdout)
    assert r.exit_code == exitcodes.OK and d["passed"], r.output
    assert d["kernel"].endswith(("grid_copy[4]", "grid_copy_2d[2,2]", "grid_copy_2d[4]"))


def test_one_program_of_a_grid_kernel_leaves_output_unwritten():
    r = cli("validate", f"{TASKS / 'spmd.py'}::grid_copy_2d", "--seeds", "0", "--json")
    d = json.loads(r.stdout)
    assert r.exit_code == exitcodes.FAILED and set(d["cases"][0]["verdicts"]) & {"cheat_output_not_written", "fail_output_not_written"}


def test_profile_of_a_grid_shows_every_core(tmp_path):
    r = cli("profile", f"{TASKS / 'spmd.py'}::grid_copy_2d[2,2]", "--out", tmp_path / "p", "--json")
    assert r.exit_code == exitcodes.OK, r.output
    cores = duckdb.sql(f"SELECT DISTINCT pcore_idx FROM '{tmp_path / 'p'}/Instruction.parquet' ORDER BY 1").fetchall()
    assert cores == [(0,), (1,), (2,), (3,)]


def test_cases_stream_as_plain_lines_and_json_stays_one_object():
    from nkidev.cli_progress import Progress

    seen = []
    with Progress(as_json=False, title="t", bar=False) as p:
        p.event({"event": "case", "line": "PASS: shape=(1,), max_diff=0.000000"})
        seen.append("first")
    assert seen
    r = cli("validate", f"{TASKS / 'spmd.py'}::grid_copy", "--seeds", "0", "--json")
    assert json.loads(r.stdout)["passed"]  # nothing but the object on stdout


def test_validate_streams_each_case_before_the_next_one_runs():
    events = []
    from nkidev.validate.api import validate_task

    validate_task("examples/softmax.py::softmax_kernel", seeds=0, progress=events.append)
    kinds = [e["event"] for e in events]
    assert kinds[0] == "start" and kinds[1:] == ["case_start", "case"] * 4
    assert events[2]["line"].startswith("PASS: shape=(2, 128, 512)")


def test_profile_defaults_to_a_fresh_directory_and_reruns_need_no_force(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = f"{TASKS / 'spmd.py'}::grid_copy"
    first, second = (json.loads(cli("profile", spec, "--json").stdout) for _ in range(2))
    assert first["profile_dir"] != second["profile_dir"]
    for d in (first, second):
        assert Path(d["profile_dir"]).parent.name == "nkidev-profiles" and (tmp_path / d["profile_dir"] / "Instruction.parquet").is_file()
    assert sorted(p.name for p in (tmp_path / "nkidev-profiles").iterdir()) == sorted(Path(d["profile_dir"]).name for d in (first, second))


def test_profile_refuses_a_users_directory_even_with_force(tmp_path):
    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "todo.txt").write_text("mine")
    r = cli("profile", f"{TASKS / 'spmd.py'}::grid_copy", "--out", mine, "--force", "--json")
    assert r.exit_code == exitcodes.USAGE and error_of(r)["name"] == "err_output_exists"
    assert (mine / "todo.txt").read_text() == "mine" and sorted(p.name for p in tmp_path.iterdir()) == ["notes"]


def test_profile_out_is_checked_writable_before_the_kernel_runs(tmp_path):
    (tmp_path / "a_file").write_text("not a directory")
    r = cli("profile", TASKS / "endless.py", "--out", tmp_path / "a_file" / "p", "--json")  # would hang if it ran
    assert r.exit_code == exitcodes.USAGE and error_of(r)["name"] == "err_not_writable"
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        import os

        if os.access(locked, os.W_OK):
            pytest.skip("running as a user that can write anywhere (root): permissions are not enforced")
        r = cli("profile", TASKS / "endless.py", "--out", locked / "p", "--json")  # would hang if it ran
        assert r.exit_code == exitcodes.USAGE and error_of(r)["name"] == "err_not_writable"
    finally:
        locked.chmod(0o700)


def test_a_candidate_kernel_given_as_source_is_validated_against_the_original_task():
    from nkidev import sandbox

    task = f"{TASKS / 'spmd.py'}::grid_copy"
    good = (TASKS / "spmd.py").read_text()
    bad = good.replace("nisa.dma_copy(dst=out[i * 128 : (i + 1) * 128, :], src=t)", "nisa.dma_copy(dst=out[0:128, :], src=t)", 1)
    assert bad != good
    ok = sandbox.run("nkidev.validate.api:validate_source", {"source": good, "task_spec": task, "seeds": 0}, sandbox.Limits(120))
    assert ok["passed"] and ok["kernel"].endswith("grid_copy[4]")  # the task's GRID applies to the candidate
    wrong = sandbox.run("nkidev.validate.api:validate_source", {"source": bad, "task_spec": task, "seeds": 0}, sandbox.Limits(120))
    assert not wrong["passed"] and set(wrong["cases"][0]["verdicts"]) & {"cheat_output_not_written", "fail_output_not_written"}
