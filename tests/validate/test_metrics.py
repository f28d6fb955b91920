"""Metric values on constructed inputs, and tolerance resolution."""

import math

import ml_dtypes
import numpy as np
import pytest

from nkidev.errors import NkiUsageError
from nkidev.validate.metrics import compare, cosine, failures, rel_l2
from nkidev.validate.tolerance import DEFAULTS, check_spec, expected_dtype, resolve

LOOSE = resolve("float32", {}, atol=0.0, rtol=0.0)


def test_metrics_of_one_wrong_element():
    out = np.array([1, 2, 3, 4], np.float32)
    ref = np.array([1, 2, 3, 4.5])
    m = compare(out, ref, resolve("float32", {}))
    assert m.max_abs_diff == 0.5
    assert m.rel_l2 == pytest.approx(0.5 / math.sqrt(34.25), rel=1e-12)
    assert m.cosine == pytest.approx(32 / math.sqrt(30 * 34.25), rel=1e-12)
    assert (m.outside, m.worst_index, m.nonfinite) == (1, (3,), 0)


def test_bf16_output_is_compared_in_float64():
    out = np.array([[1.0, 3.0]], ml_dtypes.bfloat16)
    ref = np.array([[1.0, 3.0078125]])  # 3.0078125 is not a bf16 value: the diff is exactly 2**-7
    assert compare(out, ref, LOOSE).max_abs_diff == 2**-7


def test_degenerate_outputs():
    ref = np.array([3.0, 4.0])
    assert (rel_l2(np.zeros(2), ref), cosine(np.zeros(2), ref)) == (1.0, 0.0)
    assert (rel_l2(np.zeros(2), np.zeros(2)), cosine(np.zeros(2), np.zeros(2))) == (0.0, 1.0)
    assert rel_l2(np.ones(2), np.zeros(2)) == math.inf
    assert cosine(2 * ref, ref) == pytest.approx(1.0)  # scale-blind: why rel_l2 is also checked


def test_nan_output_is_counted_not_averaged():
    m = compare(np.array([1.0, np.nan, 2.0], np.float32), np.array([1.0, 1.0, 2.0]), LOOSE)
    assert m.nonfinite == 1 and math.isnan(m.max_abs_diff) and m.worst_index == (1,)
    assert failures(m, np.array([1.0, 1.0, 2.0]), LOOSE) == ["1 NaN/Inf values where the reference is finite"]


def test_failures_name_every_metric_missed():
    tol = resolve("float32", {"cosine": 0.9999}, atol=0.1, rtol=0.0)
    ref = np.ones(100)
    out = np.zeros(100)
    text = failures(compare(out, ref, tol), ref, tol)
    assert text[0].startswith("100 of 100 elements outside atol=0.1")
    assert "cosine=0.000000 < 0.9999" in text


def test_default_tolerances_per_expected_dtype():
    assert resolve("float32", {}) == resolve("float32", {}, scale=0.5)  # the atol scale never shrinks
    f32 = resolve("float32", {}, scale=16.0)
    assert (f32.atol, f32.rtol, f32.rel_l2, f32.precision) == (1.6e-4, 1e-4, 1e-4, "float32")
    bf16 = resolve("bfloat16", {})
    assert (bf16.atol, bf16.rtol) == DEFAULTS["bfloat16"] == (1e-2, 2e-2)
    fp8 = resolve("float8_e4m3", {})
    assert fp8.rtol > bf16.rtol > f32.rtol
    exact = resolve(None, {})
    assert (exact.atol, exact.rtol, exact.rel_l2, exact.precision) == (0.0, 0.0, math.inf, None)


def test_flags_beat_task_tolerance_beats_defaults():
    spec = {"atol": 1e-3, "rtol": 1e-3, "precision": "bfloat16"}
    assert (resolve("float32", spec, scale=100.0).atol, resolve("float32", spec).precision) == (1e-3, "bfloat16")
    assert resolve("float32", spec, atol=0.5, rtol=0.25).atol == 0.5
    assert resolve("float32", spec, atol=0.5, rtol=0.25).rel_l2 == 0.25


def test_expected_dtype_follows_the_main_input_not_the_kernel():
    x16 = np.zeros((128, 64), ml_dtypes.bfloat16)
    w32 = np.zeros(64, np.float32)
    assert expected_dtype(None, (x16, w32, 0.5)) == "bfloat16"  # the big tensor, not the small weight
    assert expected_dtype(None, (np.zeros(4, np.float32),)) == "float32"
    assert expected_dtype(None, (3,)) == "float32"
    assert expected_dtype(np.dtype(ml_dtypes.bfloat16), (np.zeros(4, np.float32),)) == "bfloat16"  # declared
    assert expected_dtype(np.dtype(np.float32), (x16,)) == "bfloat16"  # x.float() in a reference declares nothing
    assert expected_dtype(np.dtype(np.int64), (x16,)) is None


def test_bad_tolerance_spec_is_a_named_usage_error():
    with pytest.raises(NkiUsageError) as e:
        check_spec({"atl": 1e-3}, "task.py")
    assert e.value.name == "err_bad_task_file" and "atl" in e.value.message
    with pytest.raises(NkiUsageError):
        check_spec({"precision": "float64"}, "task.py")
