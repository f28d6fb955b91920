"""Whose fault is it: an exception raised in nkidev's own code is err_internal (exit 5), never the kernel's
err_kernel_raised; a user's folder named `nkidev` is still the user's code; NumPy warnings from nkidev's own
arithmetic never reach the user."""

from __future__ import annotations

import warnings

import pytest

from nkidev import exitcodes
from nkidev.emulator.opdef import OPS
from nkidev.errors import NkiError
from nkidev.validate.api import validate_task

KERNEL = """
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def copy_kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    u = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=u, src=t)  # <- copy
    nisa.dma_copy(dst=out, src=u)
    return out


@nki.jit
def raising_kernel(x):
    raise ValueError("my own bug")  # <- raise


@nki.jit
def overflowing_kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.activation(dst=t, op=nl.log, data=t)  # log(0) = -inf and log(-1) = NaN: data, not warnings
    nisa.tensor_scalar(dst=t, data=t, op0=nl.divide, operand0=0.0)
    nisa.dma_copy(dst=out, src=t)
    return out


def reference(x):
    return x


def cases():
    return [(np.linspace(-1, 1, 128 * 4, dtype=np.float32).reshape(128, 4),)]
"""


@pytest.fixture
def task(tmp_path):
    folder = tmp_path / "nkidev"  # a user project folder with nkidev's name
    folder.mkdir()
    path = folder / "task.py"
    path.write_text(KERNEL)
    return path


def line(path, marker: str) -> int:
    return next(i for i, t in enumerate(path.read_text().splitlines(), 1) if marker in t)


def test_a_bug_in_nkidev_is_internal_not_the_kernels(task, monkeypatch):
    from nkidev.emulator.tensor import free_size

    # as if the op's semantics had a bug: nkidev's own free_size fails on what it was handed
    monkeypatch.setattr(OPS["tensor_copy"], "impl", lambda a, ctx, engine: free_size(None))
    with pytest.raises(NkiError) as e:
        validate_task(f"{task}::copy_kernel", seeds=0)
    assert e.value.name == "err_internal" and "AttributeError" in e.value.message
    assert e.value.location == f"{task}:{line(task, '<- copy')}"
    assert exitcodes.BY_ERROR["err_internal"] == exitcodes.INTERNAL


def test_the_kernels_own_exception_in_a_folder_named_nkidev(task):
    with pytest.raises(NkiError) as e:
        validate_task(f"{task}::raising_kernel", seeds=0)
    assert e.value.name == "err_kernel_raised" and "my own bug" in e.value.message
    assert e.value.location == f"{task}:{line(task, '<- raise')}"


def test_numpy_warnings_of_the_emulators_math_are_not_shown(task):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = validate_task(f"{task}::overflowing_kernel", seeds=0).to_dict()
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert not any("RuntimeWarning" in text for text in result["warnings"] + result["notes"])
    assert not result["passed"]  # the NaN/Inf outputs are a verdict
