"""heap.arrow_on_glibc: profile tables are built on glibc's heap, and the caller's Arrow pool comes back after."""

import pyarrow as pa
import pytest

from nkidev import heap


@pytest.mark.skipif(heap._TRIM is None, reason="glibc only: elsewhere arrow_on_glibc changes nothing")
def test_arrow_buffers_come_from_the_system_pool_inside_and_the_pool_is_restored():
    before = pa.default_memory_pool().backend_name
    with heap.arrow_on_glibc():
        assert pa.default_memory_pool().backend_name == "system"
        kept = pa.array(range(100_000))  # outlives the block: freed by its own pool later
    assert pa.default_memory_pool().backend_name == before
    assert kept.sum().as_py() == sum(range(100_000))


def test_the_pool_is_restored_when_the_block_raises():
    before = pa.default_memory_pool().backend_name
    with pytest.raises(ZeroDivisionError), heap.arrow_on_glibc():
        raise ZeroDivisionError
    assert pa.default_memory_pool().backend_name == before


def test_liveness_keeps_no_object_per_instruction():
    """Occupancy holds typed columns: a 4,000-instruction run leaves no per-instruction Python objects behind."""
    import gc

    import numpy as np

    import nkidev
    from nkidev.emulator.context import EmulatorOptions
    from nkidev.emulator.jit import run

    with nkidev.emulate():
        import nki
        import nki.isa as nisa
        import nki.language as nl

        @nki.jit
        def many(a):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            for _ in nl.affine_range(2000):
                t = nl.ndarray((128, 8), dtype=a.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=t, src=a)
                nisa.dma_copy(dst=out, src=t)
            return out

    from nkidev.emulator import liveness

    made = []
    original = liveness.Occupancy.settle

    def settle(self, target):
        gc.collect()
        made.append(len(gc.get_objects()))
        return original(self, target)

    liveness.Occupancy.settle = settle
    try:
        gc.collect()
        start = len(gc.get_objects())
        run(many, (np.zeros((128, 8), np.float32),), {}, options=EmulatorOptions(target="trn1", compute=False))
    finally:
        liveness.Occupancy.settle = original
    assert made and made[0] - start < 1000, (start, made)  # was 2 per tile (a Lifetime, its list): 4,758
