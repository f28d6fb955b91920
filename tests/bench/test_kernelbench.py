"""KernelBench-style problems: the reference comes from the PyTorch module (torch is an optional extra)."""

from pathlib import Path

import pytest

HERE = Path(__file__).parent / "kernelbench"
PROBLEM = HERE / "scaled_silu.py"

torch = pytest.importorskip("torch", reason="the KernelBench adapter needs the optional extra nkidev[kernelbench] (torch)")


def test_module_problem_builds_a_task_whose_reference_is_the_module():
    from nkidev.bench.kernelbench import task_names

    ns = {}
    exec(compile(PROBLEM.read_text(), str(PROBLEM), "exec"), ns)
    names = task_names(ns["Model"], ns["get_inputs"], ns["get_init_inputs"], "scaled_silu")
    (case,) = names["quick_cases"](seed=3)
    x, w = case
    assert x.shape == (200, 256) and w.shape == (256,)
    torch.manual_seed(3)
    model = ns["Model"](256)
    expected = (torch.nn.functional.silu(torch.as_tensor(x, dtype=torch.float64)) * model.weight.double()).detach().numpy()
    assert abs(names["reference"](x, w) - expected).max() < 1e-12
    assert names["MIN_BYTES"](x, w) == x.nbytes * 2 + w.nbytes


def test_kernelbench_solution_is_validated_and_timed():
    from nkidev.bench.kernelbench import run_kernelbench

    result = run_kernelbench(PROBLEM, HERE / "solutions", seeds=1)
    (row,) = result["tasks"]
    assert row["passed"] and row["task"] == "scaled_silu" and 0 < row["percent_of_peak"] <= 100
    assert row["baseline_time_ns"] is None and row["speedup"] is None
    assert result["meta"]["kernelbench"] == str(PROBLEM) and result["summary"]["mean_percent_of_peak"] == row["percent_of_peak"]
    # a solution that ignores the module's weight is caught against the module's reference
    from nkidev.bench.evaluate import evaluate_task
    from nkidev.bench.kernelbench import task_source

    wrong = (HERE / "solutions" / "scaled_silu.py").read_text().replace("data2=w[:rows]", "data2=act[:rows]")
    bad = evaluate_task("scaled_silu", source=wrong, seeds=0, task_source=task_source(PROBLEM))
    assert bad["passed"] is False and "fail_tolerance" in bad["verdicts"]
