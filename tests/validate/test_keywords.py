"""Task-file cases with keyword arguments (`nkidev.Case`): they reach the kernel and the reference in every run,
their arrays are resampled and changed on their own like positional ones, their constants never change, and a
malformed case is err_bad_task_file naming the task file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import nkidev
from nkidev import exitcodes, sandbox
from nkidev.case import Case
from nkidev.cli import app
from nkidev.errors import NkiUsageError
from nkidev.sandbox import Limits
from nkidev.taskfile import load_task
from nkidev.validate import validate, validate_task
from nkidev.validate.parallel import validate_parallel

TASK = Path(__file__).parent / "tasks" / "keywords.py"
SPEC = f"{TASK}::scaled_rmsnorm"
MODULE = load_task(TASK).module


def cli(*args):
    return CliRunner().invoke(app, ["validate", *map(str, args)])


def test_case_takes_any_keyword_and_is_exported_lazily():
    case = nkidev.Case(np.zeros((2, 3), np.float32), 0.5, args=1, self=2)
    assert case.args[1] == 0.5 and case.kwargs == {"args": 1, "self": 2}
    assert repr(case) == "Case(float32[2, 3], 0.5, args=1, self=2)"
    assert case.call(lambda *a, **k: (len(a), sorted(k))) == (2, ["args", "self"])


def test_task_cases_keep_tuples_for_old_scripts_and_calls_are_all_cases():
    task = load_task(TASK)
    given, calls = task.cases(), task.calls()
    assert isinstance(given[0], tuple) and isinstance(given[1], Case)
    assert all(isinstance(c, Case) for c in calls) and calls[0].kwargs == {}
    assert calls[1].kwargs["eps"] == 0.5 and calls[2].kwargs["rows_per_tile"] == 64


def test_keyword_cases_pass_and_report_their_keywords():
    result = validate_task(SPEC, seeds=1)
    assert result.passed, [c.reason for c in result.cases]
    assert [c.to_dict()["kwargs"] for c in result.cases] == [
        {},
        {"eps": 0.5, "scale": 2.0, "weight": {"dtype": "float32", "shape": [96]}},
        {"weight": {"dtype": "float32", "shape": [32]}, "scale": 0.5, "rows_per_tile": 64},
    ]
    assert all(c.primary.max_abs_diff < 1e-4 for c in result.cases)


def test_a_reference_that_ignores_eps_fails_the_case_that_sets_it():
    result = validate_task(SPEC, reference="reference_ignores_eps", seeds=0)
    assert not result.passed and [c.passed for c in result.cases] == [True, False, True]
    assert result.cases[1].verdicts == ["fail_tolerance"]
    case = load_task(TASK).calls()[1]
    wanted = np.max(np.abs(case.call(MODULE.reference) - case.call(MODULE.reference_ignores_eps)))
    assert wanted > 1.0 and result.cases[1].primary.max_abs_diff == pytest.approx(wanted, abs=1e-3)


def test_a_kernel_that_ignores_its_keyword_array_fails_where_the_weight_matters():
    """Case 0 passes no weight; case 1, the first that does, changes it on its own; case 2 does not again."""
    result = validate_task(f"{TASK}::ignores_weight", seeds=0)
    assert [c.passed for c in result.cases] == [True, False, False]
    assert result.cases[1].verdicts == ["cheat_input_independent", "fail_tolerance"]
    assert result.cases[2].verdicts == ["fail_tolerance"]


def test_a_keyword_array_only_later_cases_pass_is_changed_on_its_own_there():
    """A weight of ones in case 1 hides the kernel that ignores it from every run but the one changing `weight`
    alone, which case 1 makes because case 0 passes no weight (the check used to run on case 0 only)."""
    result = validate_task(f"{TASK}::ignores_weight", cases="ones_weight_in_a_later_case", seeds=0)
    assert [c.primary.max_abs_diff < 1e-4 for c in result.cases] == [True, True]  # both cases' own inputs pass
    assert [f.verdict for f in result.cheats] == ["cheat_input_independent"]
    assert result.cheats[0].case == 1 and "input 'weight' changed" in result.cheats[0].message
    assert validate_task(SPEC, cases="ones_weight_in_a_later_case", seeds=0).passed  # the honest kernel passes


def test_a_keyword_array_is_changed_on_its_own():
    """A weight of ones hides the kernel that ignores it; only the run that changes `weight` alone shows it."""
    result = validate_task(f"{TASK}::ignores_weight", cases="ones_weight_cases", seeds=0)
    assert result.cases[0].primary.max_abs_diff < 1e-4  # the case's own inputs pass
    assert [f.verdict for f in result.cheats] == ["cheat_input_independent"]
    assert "input 'weight' changed" in result.cheats[0].message


def test_a_kernel_that_writes_a_keyword_array_is_named_with_its_line():
    result = validate_task(f"{TASK}::writes_weight", cases="ones_weight_cases", seeds=0)
    line = next(i for i, t in enumerate(TASK.read_text().splitlines(), 1) if "marker: writes weight" in t)
    assert [(f.verdict, f.location) for f in result.cheats] == [("cheat_input_modified", f"{TASK}:{line}")]
    assert result.cheats[0].message.startswith("the kernel wrote input 'weight'")


def test_seeds_redraw_keyword_arrays_and_keep_keyword_constants():
    seen = []

    def recording(x, eps=1e-6, scale=1.0, weight=None, rows_per_tile=128):
        seen.append((x.shape, eps, scale, rows_per_tile, None if weight is None else weight.copy()))
        return MODULE.reference(x, eps, scale, weight, rows_per_tile)

    result = validate(MODULE.scaled_rmsnorm, recording, MODULE.cases, seeds=2, tolerance=MODULE.TOLERANCE)
    assert result.passed
    case1 = [s for s in seen if s[0] == (200, 96)]
    assert {(eps, scale) for _, eps, scale, _, _ in case1} == {(0.5, 2.0)}
    assert {s[3] for s in seen if s[0] == (7, 32)} == {64}
    weights = [s[4] for s in case1]
    assert all(w.dtype == np.float64 and w.shape == (96,) for w in weights)  # widened like positional floats
    seed1 = MODULE.cases(seed=1)[1].kwargs["weight"].astype(np.float64)  # cases(seed=) makes the seeds' inputs
    assert any(np.array_equal(w, seed1) for w in weights) and len({w.tobytes() for w in weights}) == 3


def test_cli_json_pass_and_fail_on_keyword_cases():
    ok = cli(SPEC, "--json", "--seeds", "1")
    assert ok.exit_code == exitcodes.OK, ok.output
    assert json.loads(ok.stdout)["cases"][1]["kwargs"]["eps"] == 0.5
    bad = cli(SPEC, "--json", "--seeds", "0", "--reference", "reference_ignores_eps")
    d = json.loads(bad.stdout)
    assert bad.exit_code == exitcodes.FAILED and d["passed"] is False
    assert [c["verdicts"] for c in d["cases"]] == [[], ["fail_tolerance"], []]
    assert d["cases"][1]["max_abs_diff"] > 1.0


def test_cli_case_lines_show_the_keywords():
    r = cli(SPEC, "--seeds", "0")
    lines = r.stdout.splitlines()
    assert r.exit_code == exitcodes.OK, r.output
    assert lines[0].startswith("PASS: shape=(128, 64), max_diff=")
    assert lines[1].startswith("PASS: shape=(200, 96), eps=0.5, scale=2.0, weight=float32[96], max_diff=")
    assert lines[2].startswith("PASS: shape=(7, 32), weight=float32[32], scale=0.5, rows_per_tile=64, max_diff=")


def test_workers_split_keyword_cases_like_one_process():
    limits = Limits(timeout_s=180)
    one = sandbox.run("nkidev.validate.api:validate_task_data", {"spec": SPEC, "seeds": 0}, limits)
    merged, _ = validate_parallel(SPEC, {"seeds": 0}, limits, 2)
    assert merged == one and merged["cases"][2]["kwargs"]["rows_per_tile"] == 64


BAD = [
    ("unknown_keyword_cases", "case 0 has 1 input(s) and keyword(s) epsilon but scaled_rmsnorm("),
    ("dict_cases", "case 0 is a dict ('x', 'eps')"),
    ("object_keyword_cases", "case 0 keyword 'eps' is a object, which a kernel cannot take"),
    ("non_str_keyword_cases", "case 0 is Case(float32[8, 8], 1=0.5): keyword 1 is not a parameter name"),
]


@pytest.mark.parametrize("cases,message", BAD, ids=[b[0] for b in BAD])
def test_a_malformed_case_is_err_bad_task_file_naming_the_file(cases, message):
    with pytest.raises(NkiUsageError) as e:
        validate_task(SPEC, cases=cases, seeds=0)
    assert e.value.name == "err_bad_task_file" and str(TASK) in e.value.message and message in e.value.message


def test_a_malformed_case_on_the_cli_is_a_usage_error_without_traceback():
    r = cli(SPEC, "--cases", "dict_cases", "--json")
    assert r.exit_code == exitcodes.USAGE and "Traceback" not in r.output
    error = json.loads(r.stdout)["error"]
    assert error["name"] == "err_bad_task_file" and "nkidev.Case(" in error["fix"]
