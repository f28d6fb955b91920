"""BLAS threads while emulating: one thread for the many small and medium GEMMs of a kernel, more only for a
single GEMM large enough to gain from them, and only when a core is free.

Why: NumPy's OpenBLAS starts one thread per core. Its workers spin-wait after each call, so through the
Python-only stretches of emulation they keep a second core busy, and on a busy machine every medium GEMM
(a 128x2048x512 PSUM accumulation group) waits for a descheduled worker. Measured on the 2-core dev machine
(bench/blas_threads.py, min of 7): a 128x2048x512 fp32 GEMM takes 8 ms on one thread and 58 ms on two; the
2048^3 bf16 matmul example emulates in 1.2 s with one thread and 10 s with two. Two threads first win at
~4 GFLOP per GEMM (512x2048x2048: 72 ms against 128 ms) and only while the machine is otherwise idle.

The thread count does not change results: OpenBLAS splits a GEMM over M and N, never over K (checked by
running every example with both counts and comparing output bits).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from threadpoolctl import ThreadpoolController

PARALLEL_GEMM_FLOPS = 4e9  # a single GEMM at least this large runs on all of BLAS's threads (when cores are free)

_lock = threading.Lock()
_depth = 0  # active single_thread() blocks in every thread: the limit holds until the last one ends
_limiter = None  # threadpoolctl's handle on the limits before the first block (restored by the last)
_wide = 1  # BLAS's thread count before the first block: what one large GEMM may use
_controller: list = []  # the process's BLAS libraries, found once (scanning the loaded libraries takes ~10 ms)


def _blas() -> ThreadpoolController:
    if not _controller:
        _controller.append(ThreadpoolController().select(user_api="blas"))
    return _controller[0]


@contextmanager
def single_thread() -> Iterator[None]:
    """Run BLAS on one thread until the block ends (blocks may nest and run in several threads at once)."""
    global _depth, _limiter, _wide
    with _lock:
        if _depth == 0:
            _wide = max((info["num_threads"] for info in _blas().info()), default=1)
            _limiter = _blas().limit(limits=1)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _limiter is not None:
                _limiter.restore_original_limits()
                _limiter = None


def _free_cores() -> bool:
    """Whether another core is idle: the 1-minute load (which counts this process) leaves at least one core."""
    try:
        return os.getloadavg()[0] <= (os.cpu_count() or 1) - 1
    except OSError:  # no load average on this platform
        return False


@contextmanager
def threads_for(flops: float) -> Iterator[None]:
    """Inside single_thread(): give one GEMM of `flops` all the threads BLAS had before, when that gains."""
    if _limiter is None or _wide <= 1 or flops < PARALLEL_GEMM_FLOPS or not _free_cores():
        yield
        return
    raised = _blas().limit(limits=_wide)
    try:
        yield
    finally:
        raised.restore_original_limits()
