"""The Python API: known metric values through a whole validation, options, and the result structure."""

import math
from pathlib import Path

import numpy as np
import pytest

import nkidev.validate
from nkidev.errors import NkiError, NkiUsageError
from nkidev.taskfile import load_task
from nkidev.validate import validate, validate_task

HERE = Path(__file__).parent
OFFSET = load_task(HERE / "tasks" / "offset.py")
CHEATS = HERE.parent / "cheats"


def line_of(path, text: str) -> int:
    return next(i for i, line in enumerate(Path(path).read_text().splitlines(), 1) if text in line)


def _case():
    return OFFSET.attr("cases")()


def test_one_element_off_by_a_quarter_has_known_metrics():
    ((x, y),) = _case()
    ref = x.astype(np.float64) + y
    result = validate(OFFSET.kernel("off_by_quarter"), OFFSET.attr("reference"), _case)
    case = result.cases[0]
    assert not result.passed and case.verdicts == ["fail_tolerance"]
    assert case.primary.max_abs_diff == 0.25
    assert case.primary.rel_l2 == pytest.approx(0.25 / np.linalg.norm(ref), rel=1e-12)
    wrong = ref.copy()
    wrong[0, 5] += 0.25
    assert case.primary.cosine == pytest.approx(np.sum(wrong * ref) / np.linalg.norm(wrong) / np.linalg.norm(ref))
    assert "worst at index (0, 5), ref=1.125" in case.reason
    assert len(case.seeds) == 3 and all(s.max_abs_diff == pytest.approx(0.25, abs=1e-6) for s in case.seeds)


def test_exact_kernel_passes_with_zero_diff_on_every_seed():
    result = validate(OFFSET.kernel("add_kernel"), OFFSET.attr("reference"), _case())  # a list works too
    assert result.passed and result.cheats == []
    assert result.cases[0].primary.max_abs_diff == 0.0 and len(result.cases[0].seeds) == 3
    assert result.cases[0].tolerance.precision == "float32"


def test_flags_loosen_every_bound():
    k, ref = OFFSET.kernel("off_by_quarter"), OFFSET.attr("reference")
    assert not validate(k, ref, _case, atol=0.3).passed  # rel_l2 0.0059 > rtol 1e-4 still fails
    assert validate(k, ref, _case, atol=0.3, rtol=1e-2).passed


def test_package_is_callable_and_result_serializes():
    result = nkidev.validate(OFFSET.kernel("add_kernel"), OFFSET.attr("reference"), _case, seeds=0)
    d = result.to_dict()
    assert {"passed", "cases", "cheats", "kernel", "target", "warnings", "notes"} <= set(d)
    assert set(d["cases"][0]) >= {"shape", "passed", "max_abs_diff", "rel_l2", "cosine", "reason", "verdicts"}
    assert d["cases"][0]["shape"] == [64, 16] and d["cases"][0]["seeds"] == [] and d["passed"] is True


def test_allow_turns_a_verdict_into_a_warning():
    spec = str(CHEATS / "cheat_bf16_exp.py")
    strict = validate_task(spec)
    relaxed = validate_task(spec, allow=["cheat_precision_downgrade"])
    assert not strict.passed and relaxed.passed
    assert [(f.verdict, f.severity) for f in relaxed.cheats] == [("cheat_precision_downgrade", "warn")]
    assert relaxed.cheats[0].location == f"{spec}:{line_of(spec, 'nisa.activation(')}"


def test_declared_precision_allows_bf16_math():
    spec = str(CHEATS / "cheat_bf16_exp.py")
    assert validate_task(spec, tolerance=dict(atol=1e-3, rtol=1e-2, precision="bfloat16")).passed


def test_unknown_allow_and_target_are_usage_errors():
    k, ref = OFFSET.kernel("add_kernel"), OFFSET.attr("reference")
    with pytest.raises(NkiUsageError) as e:
        validate(k, ref, _case, allow=["cheat_nope"])
    assert e.value.name == "err_invalid_argument"
    with pytest.raises(NkiError) as e:
        validate(k, ref, _case, target="trn9")
    assert e.value.name == "err_unknown_target"


def test_kernel_error_names_file_kernel_and_case():
    task = load_task(HERE / "tasks" / "errors.py")
    with pytest.raises(NkiError) as e:
        validate(task.kernel("asserts_kernel"), task.attr("reference"), task.attr("cases"), label="errors.py::k")
    assert e.value.name == "err_kernel_raised" and e.value.location.endswith("errors.py:11")
    assert e.value.message.startswith("errors.py::k case 0 (shape (128, 32)): the kernel raised AssertionError")


def test_resampled_inputs_that_break_the_reference_are_skipped_with_a_note():
    def kernel_ref(x):
        if not np.all(np.asarray(x) > 0.9):  # finite on the case, NaN on any other input
            return np.full(np.shape(x), math.nan)
        return np.asarray(x, np.float64)

    result = validate(
        OFFSET.kernel("add_kernel"),
        lambda x, y: kernel_ref(x) + y,
        [(np.ones((64, 16), np.float32), np.zeros((64, 16), np.float32))],
        seeds=1,
    )
    assert result.passed and any("skipped" in n for n in result.notes)


@pytest.mark.parametrize("reference", ["reference", "reference_methods"])
def test_torch_reference_gets_float64_tensors(reference):
    pytest.importorskip("torch")
    result = validate_task(str(HERE / "tasks" / "torch_silu.py::silu_kernel"), reference=reference)
    assert result.passed, [c.reason for c in result.cases]
    assert [c.shape for c in result.cases] == [(128, 64), (64, 32)]  # the torch case was converted
    assert all(c.tolerance.precision == "bfloat16" and c.primary.max_abs_diff < 0.01 for c in result.cases)
