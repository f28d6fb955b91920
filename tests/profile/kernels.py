"""Small kernels for the profile tests (also a task file: cases() and reference())."""

import ml_dtypes
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

BF16 = ml_dtypes.bfloat16


@nki.jit
def scale_rows(x):
    """load -> tensor_scalar -> store, one [128, 512] tile per iteration."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[0] // 128):
        t = nl.ndarray((128, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[i * 128 : (i + 1) * 128, :])
        u = nl.ndarray((128, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=u, data=t, op0=nl.multiply, operand0=2.0)
        nisa.dma_copy(dst=out[i * 128 : (i + 1) * 128, :], src=u)
    return out


@nki.jit
def scale_by(x, trace=1.0, out=None):
    """A kernel whose keywords share names with profile()'s options: profile_case keeps them apart."""
    result = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    if trace != 1.0:
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=trace)
    nisa.dma_copy(dst=result, src=t)
    return result


def _matmul(lhsT, rhs, tile_n, reload):
    k_dim, m_dim = lhsT.shape
    n_dim = rhs.shape[1]
    out = nl.ndarray((m_dim, n_dim), dtype=nl.float32, buffer=nl.shared_hbm)
    kt = k_dim // 128
    a_tiles = []
    if not reload:
        for k in range(kt):
            a = nl.ndarray((128, m_dim), dtype=lhsT.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=a, src=lhsT[k * 128 : (k + 1) * 128, :])
            a_tiles.append(a)
    for n in nl.affine_range(n_dim // tile_n):
        acc = nl.ndarray((m_dim, tile_n), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(kt):
            if reload:
                a = nl.ndarray((128, m_dim), dtype=lhsT.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=a, src=lhsT[k * 128 : (k + 1) * 128, :])
            else:
                a = a_tiles[k]
            b = nl.ndarray((128, tile_n), dtype=rhs.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=b, src=rhs[k * 128 : (k + 1) * 128, n * tile_n : (n + 1) * tile_n])
            nisa.nc_matmul(dst=acc, stationary=a, moving=b)
        res = nl.ndarray((m_dim, tile_n), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc)
        nisa.dma_copy(dst=out[:, n * tile_n : (n + 1) * tile_n], src=res)
    return out


@nki.jit
def matmul(lhsT, rhs):
    """lhsT loaded once, rhs in [128, 512] tiles."""
    return _matmul(lhsT, rhs, 512, reload=False)


@nki.jit
def matmul_reload(lhsT, rhs):
    """The same product, reloading lhsT for every output tile: more DMA traffic."""
    return _matmul(lhsT, rhs, 512, reload=True)


@nki.jit
def matmul_narrow(lhsT, rhs):
    """The same product with N = 128 matmuls: the Tensor Engine spends more time per FLOP."""
    return _matmul(lhsT, rhs, 128, reload=False)


@nki.jit
def matmul_starved(lhsT, rhs):
    """Each [K, 512] moving tile is loaded into one buffer right before its matmul: the Tensor Engine waits on every
    load (the dI/dt limit engages again at each matmul). An SPMD launch splits the tiles between the programs."""
    k_dim, m_dim = lhsT.shape
    out = nl.ndarray((m_dim, rhs.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.ndarray((k_dim, m_dim), dtype=lhsT.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=lhsT)
    b = nl.ndarray((k_dim, 512), dtype=rhs.dtype, buffer=nl.sbuf)  # one buffer: the next load waits for the matmul
    per_program = rhs.shape[1] // 512 // nl.num_programs()
    for i in nl.affine_range(per_program):
        n = nl.program_id(0) * per_program + i
        nisa.dma_copy(dst=b, src=rhs[:, n * 512 : (n + 1) * 512])
        acc = nl.ndarray((m_dim, 512), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=acc, stationary=a, moving=b)
        res = nl.ndarray((m_dim, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc)
        nisa.dma_copy(dst=out[:, n * 512 : (n + 1) * 512], src=res)
    return out


@nki.jit
def matmul_resident(lhsT, rhs):
    """The same matmuls with all of rhs loaded first, in one DMA: they run back to back once it has arrived."""
    k_dim, m_dim = lhsT.shape
    out = nl.ndarray((m_dim, rhs.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.ndarray((k_dim, m_dim), dtype=lhsT.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=lhsT)
    b = nl.ndarray((k_dim, rhs.shape[1]), dtype=rhs.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=b, src=rhs)
    for n in nl.affine_range(rhs.shape[1] // 512):
        acc = nl.ndarray((m_dim, 512), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=acc, stationary=a, moving=b[:, n * 512 : (n + 1) * 512])
        res = nl.ndarray((m_dim, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc)
        nisa.dma_copy(dst=out[:, n * 512 : (n + 1) * 512], src=res)
    return out


@nki.jit
def pe_transpose(x):
    """Transpose a [128, 128] tile on the Tensor Engine."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    p = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.psum)
    nisa.nc_transpose(dst=p, data=t, engine=nisa.engine.tensor)
    s = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=s, src=p)
    nisa.dma_copy(dst=out, src=s)
    return out


@nki.jit
def two_cores(x):
    """Each of two programs scales its half of the rows."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    half = x.shape[0] // 2
    r0 = nl.program_id(0) * half
    t = nl.ndarray((half, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[r0 : r0 + half, :])
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=3.0)
    nisa.dma_copy(dst=out[r0 : r0 + half, :], src=t)
    return out


@nki.jit
def exchange(x):
    """LNC2: core 1 works longer, then the cores swap tiles (sendrecv) and meet at a barrier."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    pid = nl.program_id(0)
    t = nl.ndarray((128, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[pid * 128 : (pid + 1) * 128, :])
    for _ in range(pid * 3 + 1):
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
    r = nl.ndarray((128, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
    nisa.sendrecv(src=t, dst=r, send_to_rank=1 - pid, recv_from_rank=1 - pid, pipe_id=0)
    nisa.core_barrier(data=r, cores=(0, 1))
    nisa.dma_copy(dst=out[pid * 128 : (pid + 1) * 128, :], src=r)
    return out


@nki.jit
def too_many_partitions(x):
    """Breaks a hardware rule: a 256-partition SBUF tile."""
    t = nl.ndarray((256, 64), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    return x


@nki.jit
def python_bug(x):
    """Fails in plain Python, not in an NKI rule."""
    sizes = {}
    return sizes["missing"]


def cases():
    rng = np.random.default_rng(0)
    return [
        (rng.standard_normal((256, 512)).astype(BF16),),
        (rng.standard_normal((256, 128)).astype(BF16), rng.standard_normal((256, 1024)).astype(BF16)),
    ]


def reference(x, *rest):
    return np.asarray(x, np.float32) * 2
