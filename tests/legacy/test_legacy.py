"""The legacy Beta-1 front end (`neuronxcc.nki`): tiles returned by nl.load and nisa ops, masks, nl.arange/nl.mgrid
index expressions, par_dim block dims, psum += matmul, SPMD grids, nki.benchmark latency, and rule errors at their line."""

import inspect
import warnings

import numpy as np
import pytest

import nkidev
from nkidev.emulator.context import EmulatorOptions
from nkidev.errors import NkiError, NkiWarning

with nkidev.emulate():
    from neuronxcc import nki

    from tests.legacy import legacy_kernels as K


def marked_line(kernel) -> int:
    lines, start = inspect.getsourcelines(kernel.fn)
    (hit,) = [start + i for i, text in enumerate(lines) if "# <-" in text]
    return hit


def test_load_store_and_isa_results_are_tiles():
    a, b = K.rng_inputs((128, 64), (128, 64))
    out = nki.simulate_kernel(K.exp_add, a, b)
    assert isinstance(out, np.ndarray) and out.dtype == np.float32
    np.testing.assert_allclose(out, np.exp(a) + b, rtol=1e-6)


def test_masked_tail_tile_touches_only_the_rows_that_exist():
    (x,) = K.rng_inputs((200, 64))
    np.testing.assert_array_equal(nki.simulate_kernel(K.masked_tail, x), 3 * x)


def test_numpy_scalar_constants_are_numbers_for_isa_operands():
    (x,) = K.rng_inputs((128, 64))
    np.testing.assert_allclose(nki.simulate_kernel(K.numpy_scalar_operands, x), np.exp(-0.5 * (x + 1)), rtol=1e-6)


def test_loop_reduce_into_an_unwritten_tile_starts_with_x_and_into_a_written_one_accumulates():
    (x,) = K.rng_inputs((2, 3, 128, 64))
    sums, peak = nki.simulate_kernel(K.loop_reductions, x)
    np.testing.assert_allclose(sums, x.sum(axis=1), rtol=1e-5)
    np.testing.assert_array_equal(peak, np.maximum(x.max(axis=(0, 1)), 0.0))  # b starts at zeros, reduced over both i
    # validate reruns with another fill for fresh memory: the unwritten destination is still recognised, so the
    # outputs do not change with the fill (else validate would report a read of unwritten memory)
    sums7, peak7 = nkidev.run(K.loop_reductions, (x,), options=EmulatorOptions(fill=7.0)).outputs
    np.testing.assert_array_equal(sums7, sums)
    np.testing.assert_array_equal(peak7, peak)


def test_mgrid_affine_index_reads_every_other_column():
    (x,) = K.rng_inputs((128, 64))
    np.testing.assert_array_equal(nki.simulate_kernel(K.mgrid_stride, x), x[:, ::2])


def test_psum_accumulates_matmuls_over_k_tiles():
    a_t, b = K.rng_inputs((384, 64), (384, 32))
    np.testing.assert_allclose(nki.simulate_kernel(K.matmul_accumulate, a_t, b), a_t.T @ b, rtol=1e-4, atol=1e-4)


def test_psum_accumulation_into_a_never_written_ndarray_starts_from_zero():
    # the legacy compiler opens a matmul accumulation group at the first `+=` (that matmul overwrites the bank):
    # the result is the plain sum, with no warning, and the same under validate's other fill for fresh memory
    a_t, b = K.rng_inputs((256, 64), (2, 256, 32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        per_block, total = nki.simulate_kernel(K.psum_ndarray_accumulate, a_t, b)
    expected = np.stack([a_t.T @ b[0], a_t.T @ b[1]])
    np.testing.assert_allclose(per_block, expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(total, expected.sum(axis=0), rtol=1e-4, atol=1e-4)
    per_block7, total7 = nkidev.run(K.psum_ndarray_accumulate, (a_t, b), options=EmulatorOptions(fill=7.0)).outputs
    np.testing.assert_array_equal(per_block7, per_block)
    np.testing.assert_array_equal(total7, total)


def test_masked_psum_accumulation_writes_only_the_masked_in_part():
    a_t, b = K.rng_inputs((256, 64), (256, 32))
    zeroed, fresh = nki.simulate_kernel(K.psum_masked_accumulate, a_t, b)
    expected = a_t.T @ b
    np.testing.assert_allclose(zeroed[:, :16], expected[:, :16], rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(zeroed[:, 16:], 0.0)  # nl.zeros, outside the mask: still zero
    np.testing.assert_allclose(fresh[:, :16], expected[:, :16], rtol=1e-4, atol=1e-4)
    assert np.isnan(fresh[:, 16:]).all()  # nothing wrote these


def test_psum_tile_nothing_wrote_still_reads_as_uninitialized():
    (x,) = K.rng_inputs((128, 64))
    assert np.isnan(nki.simulate_kernel(K.psum_read_unwritten, x)).all()


def test_psum_matmul_accumulating_onto_non_matmul_values_adds_to_them_and_warns():
    a_t, b = K.rng_inputs((128, 64), (128, 32))
    with pytest.warns(NkiWarning, match="warn_accumulate_uninitialized_psum"):
        out = nki.simulate_kernel(K.psum_ones_then_matmul, a_t, b)
    np.testing.assert_allclose(out, 1.0 + a_t.T @ b, rtol=1e-4, atol=1e-4)


def test_par_dim_block_buffer_and_assignment_by_the_op():
    (x,) = K.rng_inputs((256, 64))
    np.testing.assert_allclose(nki.simulate_kernel(K.block_dims, x), np.exp(x), rtol=1e-6)


def test_spmd_grid_runs_one_program_per_tile():
    (x,) = K.rng_inputs((384, 64))
    expected = x + np.repeat(np.arange(3, dtype=np.float32), 128)[:, None]
    np.testing.assert_array_equal(nki.simulate_kernel(K.spmd_rows[3], x), expected)
    np.testing.assert_array_equal(nki.baremetal(K.spmd_rows)[3](x), expected)


def test_benchmark_reports_a_latency_that_grows_with_the_work():
    latencies = []
    for n in (128, 2048):
        a, b = K.rng_inputs((128, n), (128, n))
        bench = nki.benchmark(K.exp_add)
        np.testing.assert_allclose(bench(a, b), np.exp(a) + b, rtol=1e-6)
        latencies.append(bench.benchmark_result.nc_latency.get_latency_percentile(50))
    assert 0 < latencies[0] < latencies[1]


@pytest.mark.parametrize(
    ("kernel", "shape", "name"),
    [(K.too_many_partitions, (256, 64), "err_num_partition_exceed_arch_limit"), (K.squared_index, (128, 64), "err_legacy_index")],
)
def test_rule_errors_name_the_kernel_line(kernel, shape, name):
    (x,) = K.rng_inputs(shape)
    with pytest.raises(NkiError) as e:
        nki.simulate_kernel(kernel, x)
    assert e.value.name == name, str(e.value)
    assert e.value.lineno == marked_line(kernel) and e.value.filename.endswith("legacy_kernels.py")
