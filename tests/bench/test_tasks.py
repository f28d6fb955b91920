"""The suite's task files: enough tasks, complete declarations, baselines that pass their own validation."""

import numpy as np
import pytest

from nkidev.bench import inputs, registry, roofline
from nkidev.hardware import get_target
from nkidev.validate.api import validate_task

ISSUE_FAMILIES = {
    "matmul",
    "fused",
    "normalization",
    "mlp",
    "attention",
    "scan",
    "elementwise",
    "optimizer",
    "conv",
    "data_movement",
    "loss",
}


def test_suite_has_at_least_14_tasks_covering_the_families():
    names = registry.task_names()
    assert len(names) >= 14
    families = {registry.describe(n)["family"] for n in names}
    assert families == ISSUE_FAMILIES
    for needed in ("matmul", "matmul_lhsT", "bmm", "bmm_softmax", "softmax", "rmsnorm", "layernorm", "rmsnorm_matmul", "swiglu_mlp"):
        assert needed in names
    for needed in ("attention_causal", "attention_gqa", "selective_scan", "rope", "gelu", "silu", "adamw"):
        assert needed in names
    for needed in ("conv1d_depthwise", "cumsum", "transpose", "cross_entropy"):
        assert needed in names


def test_list_rows_have_quick_and_full_shapes():
    row = registry.describe("matmul")
    assert set(row) == {"task", "family", "entry", "dtypes", "quick_cases", "full_cases"}
    assert row["entry"] == "matmul" and row["dtypes"] == ["bfloat16"]
    assert row["full_cases"] == [[[4096, 5120], [5120, 12288]]]
    assert row["quick_cases"][0] == [[128, 128], [128, 512]]


@pytest.mark.parametrize("name", registry.task_names())
def test_baseline_passes_its_own_validation_on_the_quick_cases(name):
    info, task = registry.load(name)
    result = validate_task(info.spec, cases="quick_cases", seeds=0)
    assert result.passed, [c.reason for c in result.cases]
    assert len(result.cases) >= 2
    ideal = roofline.ideal_ns(task.attr("FLOPS")(*task.cases()[0]), task.attr("MIN_BYTES")(*task.cases()[0]), get_target("trn2"), ())
    assert ideal["ideal_ns"] > 0


def test_distributions_differ_and_seeds_are_fixed():
    rng = np.random.default_rng(0)
    normal, uniform, outliers = (inputs.sample(rng, (20000,), np.float64, d) for d in inputs.DISTRIBUTIONS)
    assert abs(uniform).max() <= np.sqrt(3.0) < abs(normal).max()
    assert (abs(outliers) == inputs.OUTLIER_SCALE).mean() == pytest.approx(inputs.OUTLIER_SHARE, rel=0.2)
    _, task = registry.load("softmax")
    a, b = task.attr("quick_cases")(seed=0), task.attr("quick_cases")(seed=0)
    assert all(np.array_equal(x[0], y[0]) for x, y in zip(a, b))
    assert not np.array_equal(a[0][0], task.attr("quick_cases")(seed=1)[0][0])
    assert [inputs.distribution(0, i) for i in range(3)] == ["normal", "uniform", "outliers"]


def test_shapes_only_draws_no_values():
    with inputs.shapes_only():
        x = inputs.sample(np.random.default_rng(0), (4096, 8192), np.float32)
    assert x.shape == (4096, 8192) and x.strides == (0, 0)


def test_ideal_time_is_the_larger_of_compute_and_memory():
    hw = get_target("trn2")
    mm = roofline.ideal_ns({"tensor": 2 * 4096**3}, 3 * 4096 * 4096 * 2, hw, ())
    assert mm["bound"] == "tensor" and mm["ideal_ns"] == pytest.approx(2 * 4096**3 / hw.tensor_engine.peak_flops * 1e9)
    copy = roofline.ideal_ns({}, 1e9, hw, ())
    assert copy["bound"] == "memory" and copy["ideal_ns"] == pytest.approx(1e9 / roofline.memory_bytes_per_s(hw) * 1e9)
    fp32 = roofline.ideal_ns({"tensor": 1e12}, 0, hw, (np.zeros(2, np.float32),))
    assert fp32["ideal_ns"] == pytest.approx(hw.tensor_engine.fp32_cycle_factor * 1e21 / hw.tensor_engine.peak_flops)
