"""New inputs for extra seeds: same shapes, dtypes and value distribution; scalars untouched."""

import ml_dtypes
import numpy as np

from nkidev.case import Case
from nkidev.validate.inputs import numpy_case, same_bits, seed_cases, vary, vary_case


def test_vary_keeps_shape_dtype_and_range():
    rng = np.random.default_rng(0)
    x = rng.uniform(0.5, 2.0, (64, 32)).astype(ml_dtypes.bfloat16)
    y = vary(x, np.random.default_rng(1))
    assert y.shape == x.shape and y.dtype == x.dtype and not same_bits(x, y)
    xf, yf = x.astype(np.float64), y.astype(np.float64)
    assert xf.min() <= yf.min() and yf.max() <= xf.max()  # positive inputs stay positive


def test_vary_permutes_integers_and_jitters_constants():
    idx = np.arange(100, dtype=np.int32)
    new = vary(idx, np.random.default_rng(2))
    assert sorted(new.tolist()) == idx.tolist() and not np.array_equal(new, idx)
    ones = vary(np.ones(512, np.float32), np.random.default_rng(3))
    assert 0.2 < ones.std() < 0.3 and abs(ones.mean() - 1) < 0.05


def test_vary_case_changes_arrays_only():
    case = Case(np.zeros((4, 4), np.float32) + np.arange(4), 0.125, np.ones(4, np.float32))
    new = vary_case(case, seed=5, only=0).args
    assert new[1] == 0.125 and same_bits(new[2], case.args[2]) and not same_bits(new[0], case.args[0])


def test_vary_case_changes_keyword_arrays_and_keeps_keyword_constants():
    x, w = np.arange(8, dtype=np.float32), np.linspace(1, 2, 4, dtype=np.float32)
    case = Case(x, eps=1e-6, w=w, act="gelu")
    new = vary_case(case, seed=5)
    assert list(new.kwargs) == ["eps", "w", "act"] and new.kwargs["eps"] == 1e-6 and new.kwargs["act"] == "gelu"
    assert not same_bits(new.args[0], x) and not same_bits(new.kwargs["w"], w) and new.kwargs["w"].dtype == np.float32
    only_w = vary_case(case, seed=5, only=2)  # slot 2: positional x is slot 0, then eps, w, act
    assert same_bits(only_w.args[0], x) and not same_bits(only_w.kwargs["w"], w)


def test_vary_case_draws_positional_slots_as_a_tuple_case_did():
    """A keyword-free Case draws the same numbers as before Case existed (validation stays bit-identical)."""
    x, y = np.arange(12, dtype=np.float32).reshape(3, 4), np.linspace(-1, 1, 5).astype(np.float32)
    rng = np.random.default_rng(42)
    want = (vary(x, rng), vary(y, rng))
    got = vary_case(Case(x, y), seed=42).args
    assert all(same_bits(a, b) for a, b in zip(got, want))


def test_seed_cases_prefers_the_tasks_generator():
    def cases(seed=0):
        return [(np.full((2, 3), float(seed), np.float32), 0.5)]

    new, from_task = seed_cases(cases, [numpy_case(c) for c in cases()], 2)
    assert from_task and new[0].args[0][0, 0] == 2.0 and new[0].args[1] == 0.5


def test_seed_cases_takes_keyword_arrays_from_the_generator_and_keeps_its_constants():
    def cases(seed=0):
        return [Case(np.zeros(3, np.float32), w=np.full(3, float(seed), np.float32), eps=seed + 0.5)]

    new, from_task = seed_cases(cases, [numpy_case(c) for c in cases()], 2)
    assert from_task and new[0].kwargs["w"][0] == 2.0 and new[0].kwargs["eps"] == 0.5  # eps is the original's


def test_seed_cases_falls_back_when_shapes_change_or_no_seed():
    original = [Case(np.arange(6, dtype=np.float32).reshape(2, 3))]

    def reshaping(seed=0):
        return [(np.zeros((3, 2), np.float32),)]

    new, from_task = seed_cases(reshaping, original, 1)
    assert not from_task and new[0].args[0].shape == (2, 3)
    _, from_task = seed_cases(lambda: original, original, 1)
    assert not from_task


def test_seed_cases_falls_back_when_the_keywords_change():
    original = [Case(np.arange(3, dtype=np.float32), w=np.ones(3, np.float32))]

    def renamed(seed=0):
        return [Case(np.arange(3, dtype=np.float32), weight=np.ones(3, np.float32))]

    new, from_task = seed_cases(renamed, original, 1)
    assert not from_task and list(new[0].kwargs) == ["w"] and not same_bits(new[0].kwargs["w"], original[0].kwargs["w"])


def test_same_bits_treats_equal_nans_as_equal():
    a = np.array([1.0, np.nan], np.float32)
    assert same_bits(a, a.copy()) and not same_bits(a, np.array([1.0, 2.0], np.float32))
