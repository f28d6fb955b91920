"""BLAS thread crossover: fp32 GEMM time on one thread and on all of BLAS's threads, min/median of --repeat.

    python bench/blas_threads.py [--repeat 7]

The shapes are the emulator's: a 128x2048x512 PSUM accumulation group up to whole-problem GEMMs. The smallest
GEMM where all threads beat one is what nkidev gives up by always using one thread (emulator/blas.py: the thread
count changes GEMM results, so reproducible bits win).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

SHAPES = [(2048, 128, 512), (8192, 128, 512), (2048, 512, 2048), (2048, 2048, 2048), (4096, 1024, 4096)]  # (K, M, N)


def timed(fn, repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[0], times[len(times) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    wide = max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
    print(f"{'K x M x N':>18} {'GFLOP':>7} {'1 thread min/med ms':>20} {f'{wide} threads min/med ms':>20}")
    for k, m, n in SHAPES:
        s, mv = np.ones((k, m), np.float32), np.ones((k, n), np.float32)
        row = []
        for threads in (1, wide):
            with threadpool_limits(threads, user_api="blas"):
                lo, med = timed(lambda s=s, mv=mv: s.T @ mv, args.repeat)
            row.append(f"{lo * 1e3:8.1f} / {med * 1e3:8.1f}")
        print(f"{f'{k}x{m}x{n}':>18} {2 * k * m * n / 1e9:7.2f} {row[0]:>20} {row[1]:>20}")


if __name__ == "__main__":
    main()
