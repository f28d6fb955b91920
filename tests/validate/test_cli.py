"""`nkidev validate`: output format, --json, and one exit code per kind of failure."""

import json
import re
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from nkidev import exitcodes
from nkidev.validate.cli import register
from nkidev.validate.verdicts import VERDICTS

ROOT = Path(__file__).parents[2]
TASKS = Path(__file__).parent / "tasks"

app = typer.Typer()
app.callback()(lambda: None)  # keep `validate` a subcommand, as in the real app
register(app)


def run(*args):
    return CliRunner().invoke(app, ["validate", *map(str, args)])


def test_softmax_example_prints_the_seed_lines():
    r = run(ROOT / "examples" / "softmax.py::softmax_kernel")
    lines = r.stdout.strip().splitlines()
    assert r.exit_code == exitcodes.OK, r.output
    shapes = [(2, 128, 512), (4, 256, 1024), (1, 1, 64), (2, 300, 768)]
    for line, shape in zip(lines, shapes):
        assert re.fullmatch(rf"PASS: shape={re.escape(str(shape))}, max_diff=0\.0000\d\d", line), line
    assert lines[-1] == "All tests passed." and len(lines) == 5


def test_json_is_one_object_with_cases_and_cheats():
    r = run(ROOT / "examples" / "softmax.py::softmax_kernel", "--json", "--seeds", "1")
    d = json.loads(r.stdout)
    assert d["passed"] is True and d["cheats"] == [] and len(d["cases"]) == 4
    assert d["cases"][3]["shape"] == [2, 300, 768] and 0 < d["cases"][3]["max_abs_diff"] < 1e-4


def test_a_cheat_fails_with_its_verdict():
    r = run(ROOT / "tests" / "cheats" / "cheat_inplace.py", "--json", "--seeds", "0")
    d = json.loads(r.stdout)
    assert r.exit_code == exitcodes.FAILED and d["passed"] is False
    assert d["cheats"][0]["verdict"] == "cheat_input_modified"
    path = ROOT / "tests" / "cheats" / "cheat_inplace.py"
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if "dst=x, src=a" in t)
    assert d["cheats"][0]["location"] == f"{path}:{line}"


ERRORS = [
    (["bad_import.py"], exitcodes.USAGE, "err_bad_task_file", "bad_import.py:4"),
    (["nothere.py::k"], exitcodes.USAGE, "err_bad_task_file", "no such file"),
    (["no_reference.py::copy_kernel"], exitcodes.USAGE, "err_bad_task_file", "reference is missing"),
    (["errors.py::nokernel"], exitcodes.USAGE, "err_kernel_not_found", "nokernel"),
    (["errors.py::transpose_kernel", "--cases", "bad_cases"], exitcodes.USAGE, "err_bad_task_file", "ndarray"),
    (["errors.py::asserts_kernel"], exitcodes.KERNEL_ERROR, "err_kernel_raised", "errors.py:11"),
    (["errors.py::rule_kernel"], exitcodes.KERNEL_ERROR, "err_num_partition_exceed_arch_limit", "errors.py:17"),
    (["errors.py::transpose_kernel", "--reference", "reference_raises"], exitcodes.REFERENCE_ERROR, "err_reference_failed", "errors.py:50"),
    (["errors.py::transpose_kernel", "--reference", "reference_nan"], exitcodes.REFERENCE_ERROR, "err_reference_failed", "NaN/Inf"),
]


@pytest.mark.parametrize("args,code,name,where", ERRORS, ids=[" ".join(e[0]) for e in ERRORS])
def test_bad_input_is_a_named_error_with_its_exit_code(args, code, name, where):
    r = run(TASKS / args[0], *args[1:])
    assert r.exit_code == code, r.output
    assert f"error {name}" in r.output and where in r.output and "Traceback" not in r.output
    j = run(TASKS / args[0], *args[1:], "--json")
    assert j.exit_code == code and json.loads(j.stdout)["error"]["name"] == name


@pytest.mark.parametrize(
    "args,verdict",
    [
        (["errors.py::transpose_kernel"], "fail_shape"),
        (["errors.py::float_argmax", "--reference", "argmax_reference"], "fail_dtype"),
    ],
)
def test_mismatched_outputs_fail_the_case(args, verdict):
    r = run(TASKS / args[0], *args[1:])
    assert r.exit_code == exitcodes.FAILED
    assert r.stdout.startswith(f"FAIL: shape=(128, 32), max_diff=nan [{verdict}]")


def test_verdict_list():
    r = run("--verdicts", "--json")
    assert [v["name"] for v in json.loads(r.stdout)] == list(VERDICTS)


def test_prints_from_kernel_and_reference_stay_out_of_json():
    r = run(TASKS / "printing.py::print_kernel", "--json")
    d = json.loads(r.stdout)
    assert d["passed"] and d["notes"][0].endswith("the kernel printed:\ntile [[0. 1. 2. 3.]]")
