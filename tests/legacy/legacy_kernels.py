"""Legacy Beta-1 kernels (`from neuronxcc import nki`) for tests/legacy; imported under nkidev.emulate().
A line marked `# <-` is where the test expects an error."""

import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np
from neuronxcc import nki


@nki.jit
def exp_add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    at = nl.load(a)
    bt = nl.load(b)
    e = nisa.activation(op=nl.exp, data=at)
    nl.store(out, value=nisa.tensor_tensor(e, bt, op=nl.add))
    return out


@nki.jit
def masked_tail(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(x.shape[1])[None, :]
    for t in nl.affine_range((x.shape[0] + 127) // 128):
        xt = nl.load(x[t * 128 + i_p, i_f], mask=(t * 128 + i_p < x.shape[0]))
        nl.store(out[t * 128 + i_p, i_f], value=xt * 3.0, mask=(t * 128 + i_p < x.shape[0]))
    return out


@nki.jit
def mgrid_stride(x):
    """Every other column of x (128 x 2n) with an nl.mgrid index expression."""
    out = nl.ndarray((x.shape[0], x.shape[1] // 2), dtype=x.dtype, buffer=nl.shared_hbm)
    i = nl.mgrid[0:128, 0 : x.shape[1] // 2]
    t = nl.load(x[i.p, 2 * i.x])
    nl.store(out[i.p, i.x], value=t)
    return out


@nki.jit
def matmul_accumulate(a_t, b):
    """a_t is (K, M) = a transposed, K a multiple of 128: psum += nl.matmul(..., transpose_x=True) over K tiles."""
    k, m = a_t.shape
    out = nl.ndarray((m, b.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    psum = nl.zeros((m, b.shape[1]), nl.float32, buffer=nl.psum)
    for kt in nl.affine_range(k // 128):
        at = nl.load(a_t[kt * 128 : (kt + 1) * 128, :])
        bt = nl.load(b[kt * 128 : (kt + 1) * 128, :])
        psum += nl.matmul(at, bt, transpose_x=True)
    res = nl.copy(psum, dtype=nl.float32)
    nl.store(out, value=res)
    return out


@nki.jit
def block_dims(x):
    """x (2*128, 64) in a (2, par_dim(128), 64) SBUF buffer; t[...] = op(...) writes the op's result in place."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    buf = nl.ndarray((2, nl.par_dim(128), 64), dtype=x.dtype, buffer=nl.sbuf)
    for b in nl.affine_range(2):
        buf[b] = nl.load(x[b * 128 : (b + 1) * 128, :])
        buf[b, :, :] = nl.exp(buf[b])
        nl.store(out[b * 128 : (b + 1) * 128, :], value=buf[b])
    return out


@nki.jit
def spmd_rows(x):
    """One 128-row tile per program of a [n] grid."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    p = nl.program_id(0)
    t = nl.load(x[p * 128 : (p + 1) * 128, :])
    nl.store(out[p * 128 : (p + 1) * 128, :], value=nl.add(t, float(p)))
    return out


@nki.jit
def too_many_partitions(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)  # <-
    nl.store(out, value=t)
    return out


@nki.jit
def squared_index(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(8)[None, :]
    t = nl.load(x[i_p, i_f * i_f])  # <-
    nl.store(out[i_p, i_f], value=t)
    return out


@nki.jit
def numpy_scalar_operands(x):
    # machine-generated kernels (AccelOpt's NKIBench) spell constants as NumPy scalars, which are not Python floats
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    a = nisa.tensor_scalar(data=t, op0=nl.add, operand0=np.dtype(np.float32).type(1), reverse0=True, dtype=np.float32)
    e = nisa.activation(op=nl.exp, data=a, bias=np.float32(0.0), scale=np.float32(-0.5), dtype=np.float32)
    nl.store(out, value=e)
    return out


@nki.jit
def loop_reductions(x):
    # x: (2, 3, 128, 64). Row sums over k as NKIBench writes them (an uninitialized destination, a subscript
    # assignment, the reduced loop inside another), and a running max in the legacy docs' form (`b = ...`).
    sums = nl.ndarray((2, 128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    peak = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((2, nl.par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
    b = nl.zeros((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(2):
        for k in nl.affine_range(3):
            t = nl.load(x[i, k])
            acc[i, nl.arange(128)[:, None], nl.arange(64)[None, :]] = nl.loop_reduce(t, op=np.add, loop_indices=[k])
            b = nl.loop_reduce(t, op=np.max, loop_indices=[k])
        nl.store(sums[i], value=acc[i])
    nl.store(peak, value=b)
    return sums, peak


@nki.jit
def psum_ndarray_accumulate(a_t, b):
    """`psum += matmul` into PSUM nl.ndarrays that nothing zeroed: a (2, par_dim(M), N) block buffer, one block per
    b[g] (nisa.nc_matmul), and a plain (M, N) tile (nl.matmul); a_t (K, M), b (2, K, N), K a multiple of 128."""
    k, m = a_t.shape
    n = b.shape[2]
    per_block = nl.ndarray((2, m, n), dtype=nl.float32, buffer=nl.shared_hbm)
    total = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((2, nl.par_dim(m), n), dtype=nl.float32, buffer=nl.psum)
    both = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.psum)
    for g in nl.affine_range(2):
        for kt in nl.affine_range(k // 128):
            at = nl.load(a_t[kt * 128 : (kt + 1) * 128, :])
            bt = nl.load(b[g, kt * 128 : (kt + 1) * 128, :])
            acc[g] += nisa.nc_matmul(at, bt)
            both += nl.matmul(at, bt, transpose_x=True)
        nl.store(per_block[g], value=nl.copy(acc[g], dtype=nl.float32))
    nl.store(total, value=nl.copy(both, dtype=nl.float32))
    return per_block, total


@nki.jit
def psum_read_unwritten(x):
    """Copies out a PSUM tile nothing wrote (x only gives the shape)."""
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    never = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.psum)
    nl.store(out, value=nl.copy(never, dtype=nl.float32))
    return out


@nki.jit
def psum_ones_then_matmul(a_t, b):
    """`+= matmul` onto a PSUM tile a non-matmul instruction filled (nl.ones): a_t (128, M), b (128, N)."""
    out = nl.ndarray((a_t.shape[1], b.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    psum = nl.ones((a_t.shape[1], b.shape[1]), dtype=nl.float32, buffer=nl.psum)
    psum += nisa.nc_matmul(nl.load(a_t), nl.load(b))
    nl.store(out, value=nl.copy(psum, dtype=nl.float32))
    return out


@nki.jit
def psum_masked_accumulate(a_t, b):
    """`psum += matmul` with a mask keeping the first half of the output columns, into an nl.zeros tile and into an
    nl.ndarray nothing wrote: a_t (K, M), b (K, N), K a multiple of 128."""
    k, m = a_t.shape
    n = b.shape[1]
    zeroed = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.shared_hbm)
    fresh = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.shared_hbm)
    acc0 = nl.zeros((m, n), dtype=nl.float32, buffer=nl.psum)
    acc1 = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.psum)
    i_p = nl.arange(128)[:, None]
    i_m = nl.arange(m)[None, :]
    i_n = nl.arange(n)[None, :]
    for kt in nl.affine_range(k // 128):
        at = nl.load(a_t[kt * 128 + i_p, i_m])
        bt = nl.load(b[kt * 128 + i_p, i_n])
        acc0 += nisa.nc_matmul(at[i_p, i_m], bt[i_p, i_n], mask=(i_n < n // 2))
        acc1 += nisa.nc_matmul(at[i_p, i_m], bt[i_p, i_n], mask=(i_n < n // 2))
    nl.store(zeroed, value=nl.copy(acc0, dtype=nl.float32))
    nl.store(fresh, value=nl.copy(acc1, dtype=nl.float32))
    return zeroed, fresh


def rng_inputs(*shapes):
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]
