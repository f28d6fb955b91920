"""Published matmul optimization progressions, rewritten for the current NKI API (our own code; the
structure, tile sizes, loop order and shapes follow the published kernels, see measurements.toml).

C[M, N] = lhsT[K, M].T @ rhs[K, N]; tiles of 128 (contraction, partitions) x 128 (stationary free) x 512
(moving free, one fp32 PSUM bank).

  matmul_tiled            both operand tiles loaded inside the contraction loop
  matmul_hoisted          the lhsT column loaded once per M tile, outside the N and K loops
  matmul_blocked          BM x BN output tiles share their loaded operand tiles (free dims blocked)
  matmul_blocked_m8       matmul_blocked with BM=8, BN=2
  matmul_blocked_rows     as matmul_blocked_m8, but each K tile is one DMA of a whole block row: BM*128 lhsT
                          columns and BN*512 rhs columns (the published V2's 128x1024 row loads)
  matmul_fully_optimized  all dims blocked (BM/BN/BK), results accumulated in SBUF with tensor_tensor,
                          each output row block stored once

A task file: `nkidev profile examples/fidelity/matmul_progressions.py::matmul_tiled --case 1 --no-compute`.
"""

import ml_dtypes
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

TM, TK, TN = 128, 128, 512


def _evacuate(out, psum, m0, n0):
    """PSUM -> SBUF (cast to the output dtype) -> HBM for one [TM, TN] result tile."""
    res = nl.ndarray((TM, TN), dtype=out.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=psum)
    nisa.dma_copy(dst=out[m0 : m0 + TM, n0 : n0 + TN], src=res)


@nki.jit
def matmul_tiled(lhsT, rhs):
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


def _operand_tiles(src, c0, count, width, wide_rows):
    """`count` [TK, width] tiles per K tile of src's columns c0 : c0 + count*width, as [tile][ki]: one DMA per tile,
    or (wide_rows) one DMA per K tile of the whole count*width row, sliced in SBUF."""
    kt = src.shape[0] // TK
    if wide_rows:
        rows = []
        for ki in nl.affine_range(kt):
            row = nl.ndarray((TK, count * width), dtype=src.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=row, src=src[ki * TK : (ki + 1) * TK, c0 : c0 + count * width])
            rows.append(row)
        return [[rows[ki][0:TK, t * width : (t + 1) * width] for ki in range(kt)] for t in range(count)]
    tiles = [[None] * kt for _ in range(count)]
    for t in range(count):
        t0 = c0 + t * width
        for ki in nl.affine_range(kt):
            tiles[t][ki] = nl.ndarray((TK, width), dtype=src.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=tiles[t][ki], src=src[ki * TK : (ki + 1) * TK, t0 : t0 + width])
    return tiles


def _blocked(lhsT, rhs, BM, BN, wide_rows):
    k_dim, m_dim = lhsT.shape
    n_dim = rhs.shape[1]
    kt = k_dim // TK
    out = nl.ndarray((m_dim, n_dim), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for mb in nl.affine_range(m_dim // (TM * BM)):
        a_tiles = _operand_tiles(lhsT, mb * BM * TM, BM, TM, wide_rows)
        for nb in nl.affine_range(n_dim // (TN * BN)):
            n_block = nb * BN * TN
            b_tiles = _operand_tiles(rhs, n_block, BN, TN, wide_rows)
            for bm in range(BM):
                for bn in range(BN):
                    acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
                    for ki in nl.affine_range(kt):
                        nisa.nc_matmul(dst=acc, stationary=a_tiles[bm][ki], moving=b_tiles[bn][ki])
                    _evacuate(out, acc, (mb * BM + bm) * TM, n_block + bn * TN)
    return out


@nki.jit
def matmul_blocked(lhsT, rhs, BM=2, BN=2):
    return _blocked(lhsT, rhs, BM, BN, wide_rows=False)


@nki.jit
def matmul_blocked_m8(lhsT, rhs, BM=8, BN=2):
    return _blocked(lhsT, rhs, BM, BN, wide_rows=False)


@nki.jit
def matmul_blocked_rows(lhsT, rhs, BM=8, BN=2):
    return _blocked(lhsT, rhs, BM, BN, wide_rows=True)


@nki.jit
def matmul_fully_optimized(lhsT, rhs, BM=16, BN=2, BK=8):
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


def _zeros(dtype, *shapes):
    return tuple(np.zeros(s, dtype) for s in shapes)


def cases():
    """0: small bf16 (K=1024, M=2048, N=1024: every variant's blocks fit; runs with numerics); 1: the trn1
    tutorial's bf16 4096x8192x8192; 2: the trn2 tutorial's fp32 4096x8192x8192; 3: bf16 4096^3 (zeros
    beyond case 0: timing does not depend on values)."""
    rng = np.random.default_rng(0)
    bf16 = ml_dtypes.bfloat16
    small = (rng.standard_normal((1024, 2048)).astype(bf16), rng.standard_normal((1024, 1024)).astype(bf16))
    return [
        small,
        _zeros(bf16, (8192, 4096), (8192, 8192)),
        _zeros(np.float32, (8192, 4096), (8192, 8192)),
        _zeros(bf16, (4096, 4096), (4096, 4096)),
    ]


def reference(lhsT, rhs, *_):
    return np.asarray(lhsT, np.float32).T @ np.asarray(rhs, np.float32)


TOLERANCE = dict(atol=0.5, rtol=2e-2)
