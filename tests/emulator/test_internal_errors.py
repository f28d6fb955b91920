"""An nkidev bug met while a kernel runs through the Python API (`simulate`, calling a `@nki.jit` kernel, `run`) is
the named err_internal at the kernel line that was running, never a bare exception from nkidev's insides that
reads as the user's fault; the kernel's own exceptions still come out as they are, as in the official simulator."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import nkidev
from nkidev.emulator.opdef import OPS
from nkidev.errors import NkiError

KERNEL = """
import nki
import nki.isa as nisa
import nki.language as nl


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
"""


@pytest.fixture
def kernels(tmp_path):
    path = tmp_path / "kernels.py"
    path.write_text(KERNEL)
    namespace: dict = {"__file__": str(path)}
    with nkidev.emulate():
        exec(compile(path.read_text(), str(path), "exec"), namespace)
        yield path, namespace


def _line(path, marker: str) -> int:
    return next(i for i, t in enumerate(path.read_text().splitlines(), 1) if marker in t)


@pytest.fixture
def broken_copy(monkeypatch):
    from nkidev.emulator.tensor import free_size

    # as if tensor_copy's semantics had a bug: nkidev's own free_size fails on what it was handed
    monkeypatch.setattr(OPS["tensor_copy"], "impl", lambda a, ctx, engine: free_size(None))


@pytest.mark.parametrize("how", ["simulate", "call", "run"])
def test_a_bug_in_nkidev_is_err_internal_at_the_kernel_line(kernels, broken_copy, how):
    path, ns = kernels
    x = np.ones((128, 4), np.float32)
    calls = {
        "simulate": lambda: nkidev.simulate(ns["copy_kernel"])(x),
        "call": lambda: ns["copy_kernel"](x),
        "run": lambda: nkidev.run(ns["copy_kernel"], (x,)),
    }
    with pytest.raises(NkiError) as e:
        calls[how]()
    assert e.value.name == "err_internal"
    assert "AttributeError" in e.value.message and "bug in nkidev" in e.value.fix
    assert e.value.location == f"{path}:{_line(path, '<- copy')}"


def test_the_kernels_own_exception_comes_out_as_it_is(kernels):
    path, ns = kernels
    with pytest.raises(ValueError, match="my own bug") as e:
        nkidev.simulate(ns["raising_kernel"])(np.ones((128, 4), np.float32))
    assert e.traceback[-1].lineno + 1 == _line(path, "<- raise")


def test_the_kernel_still_runs_when_nothing_is_broken(kernels):
    _, ns = kernels
    x = np.arange(512, dtype=np.float32).reshape(128, 4)
    np.testing.assert_array_equal(nkidev.simulate(ns["copy_kernel"])(x), x)


def test_a_kernel_without_a_source_file_still_raises_its_own_exception():
    # `python -c` and exec'd source give the kernel's code the filename "<string>", as dataclasses' generated
    # methods have: the kernel's frame must count as the user's, not be skipped as library code (it read as
    # err_internal "a bug in nkidev" before)
    namespace: dict = {}
    with nkidev.emulate():
        exec(compile(KERNEL, "<string>", "exec"), namespace)
        with pytest.raises(ValueError, match="my own bug"):
            nkidev.simulate(namespace["raising_kernel"])(np.ones((128, 4), np.float32))


@dataclasses.dataclass
class _FailingInit:
    # its generated __init__ (code in "<string>") raises: dict.fromkeys() needs an argument
    a: object
    ctx: object
    engine: object
    table: dict = dataclasses.field(default_factory=dict.fromkeys)


def test_an_exception_from_a_dataclass_init_nkidev_calls_is_still_err_internal(kernels, monkeypatch):
    path, ns = kernels
    monkeypatch.setattr(OPS["tensor_copy"], "impl", _FailingInit)
    with pytest.raises(NkiError) as e:
        nkidev.simulate(ns["copy_kernel"])(np.ones((128, 4), np.float32))
    assert e.value.name == "err_internal"
    assert "TypeError" in e.value.message
    assert e.value.location == f"{path}:{_line(path, '<- copy')}"
