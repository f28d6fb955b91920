"""Calibration: the four variants of the classic tiled-matmul tutorial, predicted on trn1.

C[M, N] = lhsT[K, M].T @ rhs[K, N] in bf16 with M=4096, K=8192, N=8192 (the tutorial's shapes), written
for the current NKI API (the kernels of examples/fidelity/matmul_progressions.py). The published hardware latencies
(one trn1 NeuronCore, [sources: mm-tutorial]) are printed next to the cost model's prediction.

    python bench/matmul_tutorial.py [--target trn1] [--json]

Also a task file: `nkidev profile bench/matmul_tutorial.py::matmul_fully_optimized --no-compute --out DIR`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import ml_dtypes
import numpy as np

M, K, N = 4096, 8192, 8192
TM, TK, TN = 128, 128, 512  # stationary free, contraction, moving free tile sizes

# [sources: mm-tutorial "Testing Correctness and Benchmarking"]: nki.benchmark P99 latency on one trn1.32xlarge NeuronCore, milliseconds
PUBLISHED_MS = {
    "matmul_tiled": 51.80,
    "matmul_hoisted": 42.96,
    "matmul_blocked": 22.07,
    "matmul_fully_optimized": 6.97,
}


# The kernels are the published progression's, shipped with the fidelity set (one copy for both).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "fidelity"))
from matmul_progressions import matmul_blocked, matmul_fully_optimized, matmul_hoisted, matmul_tiled  # noqa: E402, F401

VARIANTS = ("matmul_tiled", "matmul_hoisted", "matmul_blocked", "matmul_fully_optimized")


def inputs(m=M, k=K, n=N, seed=None):
    """bf16 lhsT [k, m] and rhs [k, n]: zeros by default (timing does not depend on values)."""
    if seed is None:
        return np.zeros((k, m), ml_dtypes.bfloat16), np.zeros((k, n), ml_dtypes.bfloat16)
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((k, m)).astype(ml_dtypes.bfloat16), rng.standard_normal((k, n)).astype(ml_dtypes.bfloat16))


def reference(lhsT, rhs, **_):
    return np.asarray(lhsT, np.float32).T @ np.asarray(rhs, np.float32)


def cases():
    """Task-file cases: 0 = a small shape that runs with numerics, 1 = the tutorial's shape."""
    return [inputs(512, 1024, 1024, seed=0), inputs()]


TOLERANCE = dict(atol=0.5, rtol=2e-2)


def predict(name: str, target: str) -> dict:
    from nkidev.profile.api import profile

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        result = profile(globals()[name], *inputs(), target=target, compute=False, out=f"{tmp}/profile")
    wall = time.perf_counter() - t0
    return {"variant": name, "predicted_ms": result.total_time_ns / 1e6, "seconds_to_profile": round(wall, 2), "engines": result.engines}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="trn1")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = []
    for name in VARIANTS:
        row = predict(name, args.target)
        if args.target == "trn1":
            row["published_ms"] = PUBLISHED_MS[name]
            row["ratio"] = row["predicted_ms"] / PUBLISHED_MS[name]
        rows.append(row)
    predicted_order = [r["variant"] for r in sorted(rows, key=lambda r: -r["predicted_ms"])]
    ranked = predicted_order == list(VARIANTS)
    if args.json:
        print(json.dumps({"target": args.target, "rows": rows, "ranking_correct": ranked}, indent=2))
    else:
        print(f"{'variant':26} {'predicted ms':>13} {'published ms':>13} {'ratio':>7} {'profile s':>10}")
        for r in rows:
            pub = f"{r['published_ms']:13.2f}" if "published_ms" in r else f"{'-':>13}"
            ratio = f"{r['ratio']:7.2f}" if "ratio" in r else f"{'-':>7}"
            print(f"{r['variant']:26} {r['predicted_ms']:13.2f} {pub} {ratio} {r['seconds_to_profile']:10.2f}")
        print(f"ranking {'correct' if ranked else 'WRONG'}: predicted slowest-first {predicted_order}")
    return 0 if ranked else 1


if __name__ == "__main__":
    sys.exit(main())
