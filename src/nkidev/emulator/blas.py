"""BLAS threads while emulating: always one, so results are reproducible and the many medium GEMMs are fast.

Why: NumPy's OpenBLAS starts one thread per core. Its workers spin-wait after each call, so through the
Python-only stretches of emulation they keep a second core busy, and on a busy machine every medium GEMM
(a 128x2048x512 PSUM accumulation group) waits for a descheduled worker. Measured on the 2-core dev machine
(bench/blas_threads.py, min of 7): a 128x2048x512 fp32 GEMM takes 8 ms on one thread and 58 ms on two; the
2048^3 bf16 matmul example emulates in 1.2 s with one thread and 10 s with two. Two threads win only for a
single GEMM of ~4 GFLOP or more (512x2048x2048: 72 ms against 128 ms) on an idle machine; on a loaded one
(load average ~6, 2026-12-03, bench/blas_threads.py) not even a 4096x1024x4096 GEMM is faster on two (median
848 against 676 ms), and letting the 2048^3 example's GEMMs use two threads made it 2.6-6.6 s against 0.95-1.25 s.

Bits: with OpenBLAS 0.3.31 (SkylakeX kernels, numpy 2.4) one and two threads give identical fp32 results for
every shape tried with K a multiple of 32 or K <= 448 (bench/blas_bits.py: every group shape of the bundled
examples, a 128..4096 grid, K = 32..4096 in steps of 32 at three M x N; fp64 on a 128..2048 grid too): the
threads split M and N and keep the one-thread K blocking. Every other K above 448 tried (449..1300, 500, 1000,
1537, 3000) differs, in up to ~75% of the elements. An earlier measurement (build not recorded) had even
K=2048 GEMMs differ (51,128 of 1,048,576 elements of a 512x2048x2048 one). So the thread count can change
bits, and is rarely faster here: no GEMM gets more than one thread.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from threadpoolctl import ThreadpoolController

_lock = threading.Lock()
_depth = 0  # active single_thread() blocks in every thread: the limit holds until the last one ends
_limiter = None  # threadpoolctl's handle on the limits before the first block (restored by the last)
_controller: list = []  # the process's BLAS libraries, found once (scanning the loaded libraries takes ~10 ms)


def _blas() -> ThreadpoolController:
    if not _controller:
        _controller.append(ThreadpoolController().select(user_api="blas"))
    return _controller[0]


@contextmanager
def single_thread() -> Iterator[None]:
    """Run BLAS on one thread until the block ends (blocks may nest and run in several threads at once)."""
    global _depth, _limiter
    with _lock:
        if _depth == 0:
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
