"""The selective-scan (Mamba-v1 SSM) layer of the NKI "Fused Mamba" tutorial, in its three published versions
(see measurements.toml), rewritten in our own code for the current NKI API. fp32 throughout.

    out[b, c, t] = sum_s C[b, s, t] * h_s[c, t],  h_s[c, t] = exp(delta[b, c, t] * A[c, s]) * h_s[c, t-1]
                                                              + delta[b, c, t] * u[b, c, t] * B[b, s, t]

Channels are the partitions (tiles of 128), seq_len the free dim. Per (state, channel tile): one ScalarE
activation exp(delta * A) with A as the per-partition scale, VectorE products delta*u and (delta*u)*B (B broadcast
across the partitions), one VectorE tensor_tensor_scan along seq_len, the product with C (broadcast likewise) and
its accumulation over the states.

  mamba_v1  loops batch > state > channel tile; delta and u are loaded inside the innermost loop, the
            accumulators of all channel tiles live across the state loop and are stored at the end
  mamba_v2  loops batch > channel tile > state; delta and u loaded once per channel tile (loop reordering and
            fusion of the store loop)
  mamba_v3  mamba_v2 with seq_len tiled by 512 inside the state loop; each tile's scan starts from the last
            column of the previous tile's, copied out right after the scan (every intermediate in SBUF, as in
            the published kernel)
"""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

P = 128  # channels per tile (partitions)
SEQ_TILE = 512  # mamba_v3's seq_len tile (the tutorial's choice)
PSUM_BANK_FP32 = 512  # fp32 columns of one 2 KiB PSUM bank, what one nc_matmul writes on trn1


def _ones():
    """The [1, P] ones a partition broadcast multiplies by: a constant, set once per kernel (the published source has
    no memset: the compiler supplies it)."""
    ones = nl.ndarray((1, P), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=ones, value=1.0)
    return ones


def _row_broadcast(src_row, width, ones):
    """One state's row of B or C ([1, width] in HBM) loaded, then broadcast across the P partitions.

    The tutorial passes `B_i.broadcast_to(...)` straight to the VectorE instruction and calls the partition broadcast
    "a separate instruction on TensorE": one matmul against ones, whose result (TensorE writes PSUM) the consumer reads
    from PSUM, at tensor_tensor's PSUM-input rate. One nc_matmul writes one 2 KiB PSUM bank (512 fp32), so a wider row
    (mamba_v2 at seq_len > 512) takes nl.broadcast_to's lowering: a matmul per bank, copied into SBUF."""
    row = nl.ndarray((1, width), dtype=src_row.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=row, src=src_row)
    if width > PSUM_BANK_FP32:
        return nl.broadcast_to(row, (P, width))
    bcast = nl.ndarray((P, width), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=bcast, stationary=ones, moving=row, is_stationary_onezero=True)
    return bcast


def _state_step(delta_t, u_t, a_col, b_row, c_row, acc, initial, ones, carry_out=None):
    """One state's contribution to one [P, width] tile: acc += C * scan(exp(delta*A), delta*u*B); with carry_out,
    the scan's last column is copied there before the product with C (the next seq_len tile's initial)."""
    width = delta_t.shape[1]
    decay = nl.ndarray((P, width), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=decay, op=nl.exp, data=delta_t, scale=a_col)
    du = nl.ndarray((P, width), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=du, data1=delta_t, data2=u_t, op=nl.multiply)
    dbu = nl.ndarray((P, width), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=dbu, data1=du, data2=_row_broadcast(b_row, width, ones), op=nl.multiply)
    scan = nl.ndarray((P, width), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor_scan(dst=scan, data0=decay, data1=dbu, initial=initial, op0=nl.multiply, op1=nl.add)
    if carry_out is not None:
        nisa.tensor_copy(dst=carry_out, src=scan[0:P, width - 1 : width])
    weighted = nl.ndarray((P, width), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=weighted, data1=scan, data2=_row_broadcast(c_row, width, ones), op=nl.multiply)
    nisa.tensor_tensor(dst=acc, data1=acc, data2=weighted, op=nl.add)


def _load(src):
    tile = nl.ndarray(src.shape, dtype=src.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=src)
    return tile


def _shapes(delta, A):
    batch, channels, seq_len = delta.shape
    return batch, channels // P, seq_len, A.shape[1]


@nki.jit
def mamba_v1(delta, u, A, B, C):
    batch, n_tiles, seq_len, states = _shapes(delta, A)
    out = nl.ndarray(delta.shape, dtype=delta.dtype, buffer=nl.shared_hbm)
    ones = _ones()
    for b in nl.affine_range(batch):
        accs = []
        for _ in range(n_tiles):
            acc = nl.ndarray((P, seq_len), dtype=nl.float32, buffer=nl.sbuf)
            nisa.memset(dst=acc, value=0.0)
            accs.append(acc)
        for s in nl.affine_range(states):
            for t in nl.affine_range(n_tiles):
                rows = slice(t * P, (t + 1) * P)
                delta_t = _load(delta[b, rows, 0:seq_len])
                a_col = _load(A[rows, s : s + 1])
                u_t = _load(u[b, rows, 0:seq_len])
                _state_step(delta_t, u_t, a_col, B[b, s : s + 1, 0:seq_len], C[b, s : s + 1, 0:seq_len], accs[t], 0.0, ones)
        for t in nl.affine_range(n_tiles):
            nisa.dma_copy(dst=out[b, t * P : (t + 1) * P, 0:seq_len], src=accs[t])
    return out


@nki.jit
def mamba_v2(delta, u, A, B, C):
    batch, n_tiles, seq_len, states = _shapes(delta, A)
    out = nl.ndarray(delta.shape, dtype=delta.dtype, buffer=nl.shared_hbm)
    ones = _ones()
    for b in nl.affine_range(batch):
        for t in nl.affine_range(n_tiles):
            rows = slice(t * P, (t + 1) * P)
            acc = nl.ndarray((P, seq_len), dtype=nl.float32, buffer=nl.sbuf)
            nisa.memset(dst=acc, value=0.0)
            delta_t = _load(delta[b, rows, 0:seq_len])
            u_t = _load(u[b, rows, 0:seq_len])
            for s in nl.affine_range(states):
                a_col = _load(A[rows, s : s + 1])
                _state_step(delta_t, u_t, a_col, B[b, s : s + 1, 0:seq_len], C[b, s : s + 1, 0:seq_len], acc, 0.0, ones)
            nisa.dma_copy(dst=out[b, rows, 0:seq_len], src=acc)
    return out


@nki.jit
def mamba_v3(delta, u, A, B, C):
    batch, n_tiles, seq_len, states = _shapes(delta, A)
    out = nl.ndarray(delta.shape, dtype=delta.dtype, buffer=nl.shared_hbm)
    ones = _ones()
    for b in nl.affine_range(batch):
        for t in nl.affine_range(n_tiles):
            rows = slice(t * P, (t + 1) * P)
            acc = nl.ndarray((P, seq_len), dtype=nl.float32, buffer=nl.sbuf)
            nisa.memset(dst=acc, value=0.0)
            delta_t = _load(delta[b, rows, 0:seq_len])
            u_t = _load(u[b, rows, 0:seq_len])
            for s in nl.affine_range(states):
                a_col = _load(A[rows, s : s + 1])
                carry = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
                nisa.memset(dst=carry, value=0.0)
                for j in range(seq_len // SEQ_TILE):  # the scan carries from tile to tile: in order
                    cols = slice(j * SEQ_TILE, (j + 1) * SEQ_TILE)
                    _state_step(
                        delta_t[0:P, cols],
                        u_t[0:P, cols],
                        a_col,
                        B[b, s : s + 1, cols],
                        C[b, s : s + 1, cols],
                        acc[0:P, cols],
                        carry,
                        ones,
                        carry_out=carry,
                    )
            nisa.dma_copy(dst=out[b, rows, 0:seq_len], src=acc)
    return out


def _inputs(batch, channels, seq_len, states, rng=None):
    """delta, u, A, B, C; zeros unless rng (timing does not depend on values)."""
    if rng is None:
        z = np.zeros
        return (
            z((batch, channels, seq_len), np.float32),
            z((batch, channels, seq_len), np.float32),
            z((channels, states), np.float32),
            z((batch, states, seq_len), np.float32),
            z((batch, states, seq_len), np.float32),
        )
    f = np.float32
    return (
        rng.uniform(0.01, 0.1, (batch, channels, seq_len)).astype(f),
        rng.standard_normal((batch, channels, seq_len)).astype(f),
        -rng.uniform(0.5, 2.0, (channels, states)).astype(f),
        rng.standard_normal((batch, states, seq_len)).astype(f),
        rng.standard_normal((batch, states, seq_len)).astype(f),
    )


def cases():
    """0: small (channels 256, seq_len 1024, 2 states, with numerics); then the published shapes (batch 1,
    16 states, zeros): 1: channels 256, seq_len 512; 2: channels 4096, seq_len 512; 3: channels 4096,
    seq_len 2048; 4: channels 4096, seq_len 8192."""
    return [
        _inputs(1, 256, 1024, 2, np.random.default_rng(0)),
        _inputs(1, 256, 512, 16),
        _inputs(1, 4096, 512, 16),
        _inputs(1, 4096, 2048, 16),
        _inputs(1, 4096, 8192, 16),
    ]


def reference(delta, u, A, B, C):
    delta, u, A, B, C = (np.asarray(x, np.float64) for x in (delta, u, A, B, C))
    decay = np.exp(delta[:, :, None, :] * A[None, :, :, None])  # [batch, channels, states, seq]
    drive = (delta * u)[:, :, None, :] * B[:, None, :, :]
    h = np.zeros(decay.shape[:-1])
    out = np.zeros(delta.shape)
    for i in range(delta.shape[-1]):
        h = decay[..., i] * h + drive[..., i]
        out[..., i] = (h * C[:, None, :, i]).sum(axis=2)
    return out


TOLERANCE = dict(atol=1e-3, rtol=1e-3)
