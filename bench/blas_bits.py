"""Do one and two BLAS threads give the same GEMM bits? fp32 `s.T @ mv` (the emulator's group GEMM) per shape.

    python bench/blas_bits.py [--repeat 5] [--set emulator|grid|odd|kscan]

Prints, per (K, M, N): how many of --repeat two-thread results equal the one-thread result bit for bit, and
the most elements that differed. emulator: the group shapes the bundled examples issue; grid: 128..4096 per dim
(up to 2048^3 MACs); odd: dims 129..3000 that are not multiples of 32; kscan: K = 1..1300 at M=128, N=512.
The answer depends on the BLAS build and the CPU's kernel (threadpool_info() is printed first).
"""

from __future__ import annotations

import argparse

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

EMULATOR = [(2048, 128, 512), (512, 128, 512), (256, 128, 512), (128, 128, 512), (64, 128, 512), (1024, 128, 64), (512, 128, 128)]
GRID_DIMS = [128, 256, 512, 1024, 2048, 4096]
ODD_DIMS = [129, 500, 1000, 1537, 3000]


def shapes(which: str) -> list[tuple[int, int, int]]:
    if which == "emulator":
        return EMULATOR
    if which == "kscan":
        return [(k, 128, 512) for k in range(1, 1301)]
    dims = GRID_DIMS if which == "grid" else ODD_DIMS
    return [(k, m, n) for k in dims for m in dims for n in dims if k * m * n <= 2048**3]


def compare(k: int, m: int, n: int, repeat: int) -> tuple[int, int]:
    rng = np.random.default_rng(k * 7 + m * 13 + n)
    s = rng.standard_normal((k, m)).astype(np.float32)
    mv = rng.standard_normal((k, n)).astype(np.float32)
    with threadpool_limits(1, user_api="blas"):
        one = (s.T @ mv).view(np.uint32)
    same = worst = 0
    for _ in range(repeat):
        with threadpool_limits(2, user_api="blas"):
            two = (s.T @ mv).view(np.uint32)
        differ = int(np.count_nonzero(one != two))
        same += differ == 0
        worst = max(worst, differ)
    return same, worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--set", default="emulator", choices=["emulator", "grid", "odd", "kscan"])
    args = parser.parse_args()
    print([(i["internal_api"], i["version"], i["architecture"], i["num_threads"]) for i in threadpool_info() if i["user_api"] == "blas"])
    differing = []
    for k, m, n in shapes(args.set):
        same, worst = compare(k, m, n, args.repeat)
        if args.set != "kscan":
            print(f"{k:5d} x {m:5d} x {n:5d}: {same}/{args.repeat} identical, at most {worst} of {m * n} elements differ")
        if same < args.repeat:
            differing.append(k)
    if args.set == "kscan":
        print(f"K differing (M=128, N=512): {len(differing)} of 1300; the smallest {min(differing, default=None)};", end=" ")
        print(f"multiples of 32 among them: {[k for k in differing if k % 32 == 0]}")


if __name__ == "__main__":
    main()
