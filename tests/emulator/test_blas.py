"""BLAS threads: one while a kernel is emulated, the caller's count restored after (nested and threaded runs too)."""

from __future__ import annotations

import threading

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from nkidev.emulator import blas
from nkidev.emulator import isa as nisa
from nkidev.emulator import language as nl
from nkidev.emulator.jit import jit, simulate


def _blas_threads() -> int:
    return max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")


def _kernel(seen: list):
    @jit
    def copy_and_count(x):
        seen.append(_blas_threads())
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.dma_copy(dst=out, src=t)
        return out

    return copy_and_count


def test_a_kernel_runs_blas_on_one_thread_and_the_callers_count_comes_back():
    seen: list = []
    x = np.arange(128 * 4, dtype=np.float32).reshape(128, 4)
    with threadpool_limits(2, user_api="blas"):
        np.testing.assert_array_equal(_kernel(seen)(x), x)
        assert _blas_threads() == 2
    assert seen == [1]


def test_concurrent_and_nested_runs_restore_the_count_once_the_last_ends():
    seen: list = []
    kernel = _kernel(seen)
    x = np.ones((128, 4), np.float32)
    with threadpool_limits(2, user_api="blas"):
        with blas.single_thread():
            threads = [threading.Thread(target=kernel, args=(x,)) for _ in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert _blas_threads() == 1
        assert _blas_threads() == 2
    assert seen == [1, 1, 1, 1]


def test_matmuls_stay_on_one_thread_so_their_bits_do_not_depend_on_the_machine():
    seen: list = []

    @jit
    def big(a, b):
        out = nl.ndarray((512, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
        lhs = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
        rhs = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=lhs, src=a)
        nisa.dma_copy(dst=rhs, src=b)
        seen.append(_blas_threads())
        nisa.nc_matmul(dst=acc, stationary=lhs, moving=rhs)
        seen.append(_blas_threads())
        res = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc)
        nisa.dma_copy(dst=out[0:128, :], src=res)
        return out

    a, b = np.ones((128, 128), np.float32), np.ones((128, 512), np.float32)
    with threadpool_limits(2, user_api="blas"):
        simulate(big)(a, b)
    assert seen == [1, 1]
