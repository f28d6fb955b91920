"""LNC=2: both programs zero-initialize a shared_hbm output, then each writes its own half.
nki-library's test_cascaded_max_utils.py::folded_load_store_dst_kernel does exactly this. On hardware the
two NeuronCores run the program concurrently and each core's instruction stream is in order, so each core's
zero-fill (issued first) precedes its own stores, and the two zero-fills precede the stores only if they are
issued at the same time -- i.e. the kernel relies on the two cores progressing together (it has no barrier).
nkidev schedules LNC programs cooperatively (launch.py Baton: a program runs until it blocks in
core_barrier/sendrecv or ends), so program 1's zero-fill runs after program 0's stores and wipes its half.
Same pattern: nki-library moe_cte bwmm_shard_on_I.py blockwise_mm_baseline_shard_intermediate_hybrid
(output_initialization(output) on both cores, first core_barrier only after the first block).
Expected (what nki-library's test asserts, and what lock-step execution of the two cores gives): all rows.
Caveat: the kernel has no barrier, so this is a race nkidev resolves in the least favourable order; running
the programs interleaved (round-robin per instruction), or flagging the cross-program write-after-write as a
named race error, would both be better than silently wrong numbers."""

import nki
import nki.isa as nisa
import nki.language as nl
from _common import expect, np


@nki.jit
def kernel(a):
    P, F = a.shape
    out = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.shared_hbm)
    z = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf)
    nisa.memset(dst=z, value=0.0)
    nisa.dma_copy(dst=out, src=z)  # every program clears the whole output
    pid = nl.program_id(0)
    half = P // 2
    t = nl.ndarray((half, F), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a[nl.ds(pid * half, half), :])
    nisa.dma_copy(dst=out[nl.ds(pid * half, half), :], src=t)
    return out


a = np.random.rand(16, 8).astype(np.float32) + 1.0
expect(
    "lnc2_shared_init_race",
    lambda: nki.simulate(kernel)[2](a),
    lambda r: None if np.array_equal(r, a) else f"rows written by program 0 lost: {int((r == 0).all(axis=1).sum())} zero rows",
)
