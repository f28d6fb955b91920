"""nl.float4_e2m1fn_x4 has itemsize 4 in nkidev; it is 2 bytes.
Docs: nki.language.float4_e2m1fn_x4 is "4x packed float4_e2m1fn elements" = 4 x 4 bits = 16 bits, and
aws-neuron-sdk nki/library/api/mx-moe-block-tkg-wrapper.rst: NxD passes MX weights "as raw uint16/uint32
tensors that need to be reinterpreted as float4_e2m1fn_x4 or float8_e4m3fn_x4" (uint16 <-> fp4 x4).
Consequence: a uint16 HBM tensor reinterpreted as float4_e2m1fn_x4 has half the elements it should, and the
mxfp-matmul tutorial's loads fail with err_tensor_access_out_of_bound."""

import nki
import nki.isa as nisa
import nki.language as nl
from _common import expect, np


@nki.jit
def kernel(raw):
    P, F = raw.shape  # uint16: one fp4 x4 element each
    out = nl.ndarray((P, F), dtype=nl.uint16, buffer=nl.shared_hbm)
    t = nl.ndarray((P, F), dtype=nl.float4_e2m1fn_x4, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=raw.ap(pattern=[[F, P], [1, F]], offset=0, dtype=nl.float4_e2m1fn_x4))
    nisa.dma_copy(dst=out.ap(pattern=[[F, P], [1, F]], offset=0, dtype=nl.float4_e2m1fn_x4), src=t)
    return out


raw = np.arange(8 * 16, dtype=np.uint16).reshape(8, 16)


def run():
    assert nl.float4_e2m1fn_x4.itemsize == 2, f"nl.float4_e2m1fn_x4.itemsize == {nl.float4_e2m1fn_x4.itemsize}, want 2"
    return nki.simulate(kernel)(raw)


expect(
    "float4_x4_itemsize",
    run,
    lambda r: None if np.array_equal(np.asarray(r).view(np.uint16).reshape(raw.shape), raw) else "bits not preserved",
)
