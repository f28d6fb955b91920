"""Would batching matmul groups into bigger GEMMs pay? The 2048^3 example's 64 group GEMMs against the same
products batched along M or N, on one BLAS thread (as the emulator runs them), CPU seconds and bits.

    python bench/gemm_batching.py [--repeat 9] [--k 2048]

The example issues one 128 x K x 512 GEMM per output tile (16 row blocks x 4 column blocks). Batching stacks
the operands of several groups and splits the product back into their PSUM tiles:
- along M: 4 row blocks that share a moving operand, one 512 x K x 512 GEMM (the 4 stationary stacks copied
  side by side first, the product copied back into 4 tiles: both copies are in the times);
- along N: 4 column blocks that share a stationary operand, one 128 x K x 2048 GEMM on the moving operands
  already side by side (a cache could keep them so), the product copied back.
Each variant's 64 tiles are compared bit for bit with the 64 separate GEMMs. In the emulator a group's PSUM
tile is read right after its last matmul, so batching across groups needs those reads deferred: along M, the
first group of a batch waits for 12 more groups of the kernel (psum.py, deferred.py).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

ROWS, COLS, TM, TN = 16, 4, 128, 512  # the example's row blocks, column blocks and tile sizes at 2048^3


def operands(k: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    rng = np.random.default_rng(0)
    stationary = [rng.standard_normal((k, TM)).astype(np.float32) for _ in range(ROWS)]
    moving = [rng.standard_normal((k, TN)).astype(np.float32) for _ in range(COLS)]
    return stationary, moving


def per_group(stationary, moving, tiles) -> None:
    for m in range(ROWS):
        for n in range(COLS):
            np.matmul(stationary[m].T, moving[n], out=tiles[m][n])


def along_m(stationary, moving, tiles, side: np.ndarray, product: np.ndarray) -> None:
    for q in range(ROWS // 4):
        for i in range(4):
            side[:, i * TM : (i + 1) * TM] = stationary[4 * q + i]
        for n in range(COLS):
            np.matmul(side.T, moving[n], out=product)
            for i in range(4):
                tiles[4 * q + i][n][...] = product[i * TM : (i + 1) * TM]


def along_n(stationary, moving_all: np.ndarray, tiles, product: np.ndarray) -> None:
    for m in range(ROWS):
        np.matmul(stationary[m].T, moving_all, out=product)
        for n in range(COLS):
            tiles[m][n][...] = product[:, n * TN : (n + 1) * TN]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--k", type=int, default=2048, help="contraction depth of each group")
    args = parser.parse_args()
    print([(i["internal_api"], i["version"], i.get("architecture")) for i in threadpool_info()])
    stationary, moving = operands(args.k)
    tiles = [[np.empty((TM, TN), np.float32) for _ in range(COLS)] for _ in range(ROWS)]
    side, product_m = np.empty((args.k, 4 * TM), np.float32), np.empty((4 * TM, TN), np.float32)
    moving_all, product_n = np.concatenate(moving, axis=1), np.empty((TM, COLS * TN), np.float32)
    variants = {
        "64 groups, 128xKx512": lambda: per_group(stationary, moving, tiles),
        "along M, 16x 512xKx512 + copies": lambda: along_m(stationary, moving, tiles, side, product_m),
        "along N, 16x 128xKx2048 + copies": lambda: along_n(stationary, moving_all, tiles, product_n),
    }
    with threadpool_limits(1, user_api="blas"):
        per_group(stationary, moving, tiles)
        reference = [[t.copy() for t in row] for row in tiles]
        times: dict[str, list[float]] = {name: [] for name in variants}
        for name, fn in variants.items():
            for row in tiles:
                for t in row:
                    t.fill(np.nan)
            fn()
            same = all(np.array_equal(reference[m][n], tiles[m][n]) for m in range(ROWS) for n in range(COLS))
            print(f"{name}: {'bit-identical' if same else 'DIFFERENT bits'} to the 64 separate GEMMs")
        for _ in range(args.repeat):  # interleaved, so every variant sees the same load
            for name, fn in variants.items():
                c0 = time.process_time()
                fn()
                times[name].append(time.process_time() - c0)
    for name, ts in times.items():
        print(f"{name:36s} CPU min/median {min(ts):.3f}/{statistics.median(ts):.3f} s")


if __name__ == "__main__":
    main()
