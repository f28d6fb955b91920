"""`nkidev tune`: every config gated and profiled, invalid ones reported by name, times equal single-config profiles."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import nkidev
from nkidev.errors import NkiUsageError
from nkidev.loops import tunable
from nkidev.loops.tune import tune
from nkidev.taskfile import load_task

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tiled_add.py"
SPEC = f"{EXAMPLE}::tiled_add"


def test_tune_json_equals_single_config_profiles_and_names_the_invalid_config(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "nkidev", "tune", SPEC, "--param", "tile_rows=64,128,256", "--param", "tile_cols=512", "--seeds", "0"]
        + ["--jobs", "2", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert set(result) >= {"kernel", "target", "configs", "best", "baseline"} and result["target"] == "trn2"
    assert [c["params"] for c in result["configs"]] == [{"tile_rows": r, "tile_cols": 512} for r in (64, 128, 256)]
    for c in result["configs"]:
        assert set(c) >= {"params", "passed", "verdicts", "error", "total_time_ns"}

    task = load_task(EXAMPLE)
    kernel, case = task.kernel("tiled_add"), task.cases()[0]

    def alone(**params) -> float:
        return round(nkidev.profile(kernel, *case, out=tmp_path / str(len(list(tmp_path.iterdir()))), **params).total_time_ns, 1)

    ok = result["configs"][:2]
    assert [c["passed"] for c in ok] == [True, True] and all(c["error"] is None for c in ok)
    assert [c["total_time_ns"] for c in ok] == [alone(tile_rows=64, tile_cols=512), alone(tile_rows=128, tile_cols=512)]
    bad = result["configs"][2]
    assert bad["passed"] is False and bad["total_time_ns"] is None
    assert bad["error"]["name"] == "err_num_partition_exceed_arch_limit" and bad["verdicts"] == ["err_num_partition_exceed_arch_limit"]
    assert bad["error"]["location"] == f"{EXAMPLE}:25"  # the line of the file itself (the candidate keeps its lines)

    assert result["baseline"]["params"] == {"tile_rows": 32, "tile_cols": 128}
    assert result["baseline"]["total_time_ns"] == alone()
    fastest = min(ok, key=lambda c: c["total_time_ns"])
    assert result["best"]["params"] == fastest["params"] == {"tile_rows": 128, "tile_cols": 512}
    assert result["best"]["speedup"] == pytest.approx(result["baseline"]["total_time_ns"] / fastest["total_time_ns"], rel=1e-3)


def test_unknown_parameter_is_err_bad_tunable():
    with pytest.raises(NkiUsageError) as info:
        tune(SPEC, ["tile_depth=1,2"])
    assert info.value.name == "err_bad_tunable" and "tile_depth" in info.value.message


def test_per_kernel_tunable_and_param_literals():
    source = 'import nki\n@nki.jit\ndef k(x, a=1, *, b="x"):\n    return x\nTUNABLE = {"k": {"a": [1, 2], "b": ["x", "y"]}}\n'
    assert tunable.read_tunable(source, "k", "t.py") == {"a": [1, 2], "b": ["x", "y"]}
    assert tunable.kernel_defaults(source, "k", "t.py") == {"a": 1, "b": "x"}
    edited = tunable.with_defaults(source, "k", {"a": 4, "b": "y"}, "t.py")
    assert "def k(x, a=4, *, b='y'):" in edited and edited.count("\n") == source.count("\n")
    assert tunable.parse_param("a=1,2.5,None,wide") == ("a", [1, 2.5, None, "wide"])
    assert [c for c in tunable.configs({"a": [1, 2], "b": ["x"]})] == [{"a": 1, "b": "x"}, {"a": 2, "b": "x"}]


def test_tunable_that_is_not_a_literal_names_its_line(tmp_path):
    path = tmp_path / "t.py"
    path.write_text('import nki\n\n@nki.jit\ndef k(x, a=1):\n    return x\n\nTUNABLE = {"a": list(range(3))}\n')
    with pytest.raises(NkiUsageError) as info:
        tune(f"{path}::k")
    assert info.value.name == "err_bad_tunable" and info.value.location == f"{path}:7"


@pytest.mark.slow
@pytest.mark.skipif(__import__("importlib").util.find_spec("ray") is None, reason="Ray is not installed (pip install 'nkidev[ray]')")
def test_tune_on_ray_equals_local():
    params = ["tile_rows=64,256", "tile_cols=512"]
    local = tune(SPEC, params, seeds=0, jobs=2)
    on_ray = tune(SPEC, params, seeds=0, jobs=2, executor="ray")
    assert on_ray == local and local["best"]["params"] == {"tile_rows": 64, "tile_cols": 512}


@pytest.mark.slow
def test_successive_halving_gates_only_the_fastest_screened_configs():
    result = tune(SPEC, ["tile_rows=32,64,128,256", "tile_cols=512"], strategy="successive-halving", seeds=0, jobs=2)
    by_rows = {c["params"]["tile_rows"]: c for c in result["configs"]}
    assert by_rows[256]["error"]["name"] == "err_num_partition_exceed_arch_limit" and by_rows[256]["stage"] == "screened"
    assert [by_rows[r]["stage"] for r in (32, 64, 128)] == ["screened", "gated", "gated"]  # the fastest half of 3 survivors
    assert by_rows[32]["passed"] is False and by_rows[32]["total_time_ns"] > by_rows[64]["total_time_ns"]
    assert result["best"]["params"] == {"tile_rows": 128, "tile_cols": 512}
    random = tune(SPEC, ["tile_rows=32,64,128", "tile_cols=512"], strategy="random", budget=1, seed=0, seeds=0, jobs=1)
    assert len(random["configs"]) == 1 and random["baseline"]["passed"] is True


KEYWORDS = Path(__file__).resolve().parents[1] / "validate" / "tasks" / "keywords.py"


def test_tune_gates_and_times_the_case_with_its_keywords(tmp_path):
    """Case 1 is Case(x, eps=0.5, scale=2.0, weight=w): each config's time is the profile of that call with the
    config's rows_per_tile, not of the bare x (the weight adds instructions, so the two differ)."""
    result = tune(f"{KEYWORDS}::scaled_rmsnorm", case=1, seeds=0, jobs=2)
    task = load_task(KEYWORDS)
    kernel, case = task.kernel("scaled_rmsnorm"), task.calls()[1]

    def alone(*args, **kwargs) -> float:
        return round(
            nkidev.profile(kernel, *args, out=tmp_path / str(len(list(tmp_path.iterdir()))), compute=False, **kwargs).total_time_ns, 1
        )

    assert [c["passed"] for c in result["configs"]] == [True, True], result["configs"]
    times = [c["total_time_ns"] for c in result["configs"]]
    assert times == [alone(*case.args, **case.kwargs, rows_per_tile=r) for r in (64, 128)]
    assert times != [alone(*case.args, rows_per_tile=r) for r in (64, 128)]


def test_tune_refuses_a_timed_case_that_pins_the_tuned_parameter():
    """Case 2 passes rows_per_tile=64 itself: every config would time rows_per_tile=64."""
    result = tune(f"{KEYWORDS}::scaled_rmsnorm", case=2, seeds=0, jobs=2)
    errors = [c["error"] for c in result["configs"]]
    assert [e["name"] for e in errors] == ["err_bad_tunable", "err_bad_tunable"] and result["best"] is None
    assert f"{KEYWORDS}: case 2 passes rows_per_tile=64 itself" in errors[0]["message"]


def test_the_gate_calls_the_candidate_with_the_cases_keywords():
    """A candidate that drops `scale` is right on case 0 (the default scale) and wrong on the cases that set it."""
    from nkidev.loops.evaluate import evaluate_item

    source = KEYWORDS.read_text()
    candidate = source.replace("operand1=scale)", "operand1=1.0)")
    assert candidate != source
    item = {"task_text": source, "task_name": KEYWORDS.name, "kernel": "scaled_rmsnorm", "seeds": 0, "timeout_s": 120.0}
    result = evaluate_item({**item, "source": candidate})
    assert result["passed"] is False and result["verdicts"] == ["fail_tolerance"]
    assert [c["passed"] for c in result["validation"]["cases"]] == [True, False, False]
    assert evaluate_item({**item, "source": source})["passed"] is True
