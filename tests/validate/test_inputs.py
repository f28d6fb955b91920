"""New inputs for extra seeds: same shapes, dtypes and value distribution; scalars untouched."""

import ml_dtypes
import numpy as np

from nkidev.validate.inputs import same_bits, seed_cases, vary, vary_case


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
    case = (np.zeros((4, 4), np.float32) + np.arange(4), 0.125, np.ones(4, np.float32))
    new = vary_case(case, seed=5, only=0)
    assert new[1] == 0.125 and same_bits(new[2], case[2]) and not same_bits(new[0], case[0])


def test_seed_cases_prefers_the_tasks_generator():
    def cases(seed=0):
        return [(np.full((2, 3), float(seed), np.float32), 0.5)]

    new, from_task = seed_cases(cases, cases(), 2)
    assert from_task and new[0][0][0, 0] == 2.0 and new[0][1] == 0.5


def test_seed_cases_falls_back_when_shapes_change_or_no_seed():
    original = [(np.arange(6, dtype=np.float32).reshape(2, 3),)]

    def reshaping(seed=0):
        return [(np.zeros((3, 2), np.float32),)]

    new, from_task = seed_cases(reshaping, original, 1)
    assert not from_task and new[0][0].shape == (2, 3)
    _, from_task = seed_cases(lambda: original, original, 1)
    assert not from_task


def test_same_bits_treats_equal_nans_as_equal():
    a = np.array([1.0, np.nan], np.float32)
    assert same_bits(a, a.copy()) and not same_bits(a, np.array([1.0, 2.0], np.float32))
