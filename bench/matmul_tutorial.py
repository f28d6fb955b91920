"""Calibration: the four variants of the classic tiled-matmul tutorial, predicted on trn1.

C[M, N] = lhsT[K, M].T @ rhs[K, N] in bf16 with M=4096, K=8192, N=8192 (the tutorial's shapes), written
for the current NKI API (nisa.dma_copy / nc_matmul / tensor_copy). The published hardware latencies
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

import ml_dtypes
import nki
import nki.isa as nisa
import nki.language as nl
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


def _evacuate(out, psum, m0, n0):
    """PSUM -> SBUF (cast to the output dtype) -> HBM for one [TM, TN] result tile."""
    res = nl.ndarray((TM, TN), dtype=out.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=psum)
    nisa.dma_copy(dst=out[m0 : m0 + TM, n0 : n0 + TN], src=res)


@nki.jit
def matmul_tiled(lhsT, rhs):
    """Variant 0: both operand tiles are loaded inside the innermost (contraction) loop."""
    k_dim, m_dim = lhsT.shape
    n_dim = rhs.shape[1]
    out = nl.ndarray((m_dim, n_dim), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for mi in nl.affine_range(m_dim // TM):
        for ni in nl.affine_range(n_dim // TN):
            acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
            for ki in nl.affine_range(k_dim // TK):
                a = nl.ndarray((TK, TM), dtype=lhsT.dtype, buffer=nl.sbuf)
                b = nl.ndarray((TK, TN), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=a, src=lhsT[ki * TK : (ki + 1) * TK, mi * TM : (mi + 1) * TM])
                nisa.dma_copy(dst=b, src=rhs[ki * TK : (ki + 1) * TK, ni * TN : (ni + 1) * TN])
                nisa.nc_matmul(dst=acc, stationary=a, moving=b)
            _evacuate(out, acc, mi * TM, ni * TN)
    return out


@nki.jit
def matmul_hoisted(lhsT, rhs):
    """Variant 1: the lhsT column of tiles is loaded once per M tile, outside the N and K loops."""
    k_dim, m_dim = lhsT.shape
    n_dim = rhs.shape[1]
    kt = k_dim // TK
    out = nl.ndarray((m_dim, n_dim), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for mi in nl.affine_range(m_dim // TM):
        a_tiles = []
        for ki in nl.affine_range(kt):
            a = nl.ndarray((TK, TM), dtype=lhsT.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=a, src=lhsT[ki * TK : (ki + 1) * TK, mi * TM : (mi + 1) * TM])
            a_tiles.append(a)
        for ni in nl.affine_range(n_dim // TN):
            b_tiles = []
            for ki in nl.affine_range(kt):
                b = nl.ndarray((TK, TN), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=b, src=rhs[ki * TK : (ki + 1) * TK, ni * TN : (ni + 1) * TN])
                b_tiles.append(b)
            acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
            for ki in nl.affine_range(kt):
                nisa.nc_matmul(dst=acc, stationary=a_tiles[ki], moving=b_tiles[ki])
            _evacuate(out, acc, mi * TM, ni * TN)
    return out


@nki.jit
def matmul_blocked(lhsT, rhs, BM=2, BN=2):
    """Variant 2: BM x BN output tiles share their loaded operand tiles (free dims blocked)."""
    k_dim, m_dim = lhsT.shape
    n_dim = rhs.shape[1]
    kt = k_dim // TK
    out = nl.ndarray((m_dim, n_dim), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for mb in nl.affine_range(m_dim // (TM * BM)):
        a_tiles = [[None] * kt for _ in range(BM)]
        for bm in range(BM):
            m0 = (mb * BM + bm) * TM
            for ki in nl.affine_range(kt):
                a_tiles[bm][ki] = nl.ndarray((TK, TM), dtype=lhsT.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=a_tiles[bm][ki], src=lhsT[ki * TK : (ki + 1) * TK, m0 : m0 + TM])
        for nb in nl.affine_range(n_dim // (TN * BN)):
            b_tiles = [[None] * kt for _ in range(BN)]
            for bn in range(BN):
                n0 = (nb * BN + bn) * TN
                for ki in nl.affine_range(kt):
                    b_tiles[bn][ki] = nl.ndarray((TK, TN), dtype=rhs.dtype, buffer=nl.sbuf)
                    nisa.dma_copy(dst=b_tiles[bn][ki], src=rhs[ki * TK : (ki + 1) * TK, n0 : n0 + TN])
            for bm in range(BM):
                for bn in range(BN):
                    acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
                    for ki in nl.affine_range(kt):
                        nisa.nc_matmul(dst=acc, stationary=a_tiles[bm][ki], moving=b_tiles[bn][ki])
                    _evacuate(out, acc, (mb * BM + bm) * TM, (nb * BN + bn) * TN)
    return out


@nki.jit
def matmul_fully_optimized(lhsT, rhs, BM=16, BN=2, BK=8):
    """Variant 3: all three dims blocked, wide DMAs (BN*TN, BM*TM columns per row), and results kept in
    SBUF across the K blocks so each output row block is stored once with one large DMA."""
    k_dim, m_dim = lhsT.shape
    n_dim = rhs.shape[1]
    block_m, block_n, block_k = TM * BM, TN * BN, TK * BK
    out = nl.ndarray((m_dim, n_dim), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for nb in nl.affine_range(n_dim // block_n):
        n0 = nb * block_n
        rows = []  # one [TM, BN, TN] accumulator per M tile of the whole M range
        for _ in range(m_dim // TM):
            row = nl.ndarray((TM, BN, TN), dtype=out.dtype, buffer=nl.sbuf)
            nisa.memset(dst=row, value=0.0)
            rows.append(row)
        for kb in nl.sequential_range(k_dim // block_k):
            b_blk = nl.ndarray((TK, BK, block_n), dtype=rhs.dtype, buffer=nl.sbuf)
            for kt in range(BK):
                k0 = (kb * BK + kt) * TK
                nisa.dma_copy(dst=b_blk[0:TK, kt, 0:block_n], src=rhs[k0 : k0 + TK, n0 : n0 + block_n])
            for mb in nl.affine_range(m_dim // block_m):
                m0 = mb * block_m
                a_blk = nl.ndarray((TK, BK, block_m), dtype=lhsT.dtype, buffer=nl.sbuf)
                for kt in nl.affine_range(BK):
                    k0 = (kb * BK + kt) * TK
                    nisa.dma_copy(dst=a_blk[0:TK, kt, 0:block_m], src=lhsT[k0 : k0 + TK, m0 : m0 + block_m])
                for bn in nl.affine_range(BN):
                    for bm in nl.affine_range(BM):
                        acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
                        for kt in nl.affine_range(BK):
                            nisa.nc_matmul(
                                dst=acc,
                                stationary=a_blk[0:TK, kt, bm * TM : (bm + 1) * TM],
                                moving=b_blk[0:TK, kt, bn * TN : (bn + 1) * TN],
                            )
                        row = rows[mb * BM + bm]
                        nisa.tensor_tensor(dst=row[0:TM, bn, 0:TN], data1=row[0:TM, bn, 0:TN], data2=acc, op=nl.add)
        for mt in nl.affine_range(m_dim // TM):
            flat = rows[mt].reshape((TM, block_n))
            nisa.dma_copy(dst=out[mt * TM : (mt + 1) * TM, n0 : n0 + block_n], src=flat[0:TM, 0:block_n])
    return out


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
