"""One test per hardware rule: the error's name, and the kernel line it points at (marked `# <-`)."""

from __future__ import annotations

import inspect

import ml_dtypes
import numpy as np
import pytest

import nkidev
from nkidev.emulator import isa as nisa
from nkidev.emulator import language as nl
from nkidev.emulator.jit import jit
from nkidev.errors import KernelRuleError, NkiError, NkiNotSupportedError

BF16 = ml_dtypes.bfloat16


def marked_line(kernel) -> int:
    fn = getattr(kernel, "fn", kernel)
    lines, start = inspect.getsourcelines(fn)
    hits = [start + i for i, text in enumerate(lines) if "# <-" in text]
    assert len(hits) == 1, "mark exactly one line with '# <-'"
    return hits[0]


def expect(name: str, kernel, *args, target=None, **kwargs) -> NkiError:
    with pytest.raises(NkiError) as info:
        nkidev.simulate(kernel, target=target)(*args, **kwargs)
    err = info.value
    assert err.name == name, str(err)
    line = marked_line(kernel)
    assert err.lineno == line, f"reported {err.location}, expected line {line}: {err}"
    text = str(err)
    assert text.startswith(f"{name}: ") and text.endswith(f"(test_rules.py:{line})"), text
    assert err.fix, "every rule error carries a fix"
    return err


def f32(*shape):
    return np.ones(shape, np.float32)


@jit
def too_many_partitions(x):
    t = nl.ndarray((256, 64), nl.float32, buffer=nl.sbuf)  # <-
    return t


def test_partition_dim_limit():
    err = expect("err_num_partition_exceed_arch_limit", too_many_partitions, f32(2, 2))
    assert "256 partitions" in err.message and "128" in err.message


@jit
def mismatched_partitions(x):
    a = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    b = nl.ndarray((64, 64), nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=a, value=1.0)
    nisa.memset(dst=b, value=1.0)
    nisa.tensor_tensor(dst=a, data1=a, data2=b, op=nl.add)  # <-
    return x


def test_partition_mismatch():
    expect("err_num_partition_mismatch", mismatched_partitions, f32(2, 2))


@jit
def implicit_broadcast(x):
    a = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    b = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=a, value=1.0)
    nisa.memset(dst=b, value=2.0)
    nisa.tensor_tensor(dst=a, data1=a, data2=b, op=nl.multiply)  # <-
    return x


def test_no_implicit_broadcasting():
    err = expect("err_free_size_mismatch", implicit_broadcast, f32(2, 2))
    assert "tensor_scalar" in err.fix


@jit
def both_psum(x):
    a = nl.ndarray((8, 8), nl.float32, buffer=nl.psum)
    b = nl.ndarray((8, 8), nl.float32, buffer=nl.psum)
    out = nl.ndarray((8, 8), nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=out, data1=a, data2=b, op=nl.add)  # <-
    return x


def test_tensor_tensor_inputs_not_both_in_psum():
    expect("err_both_inputs_in_psum", both_psum, f32(2, 2))


@jit
def moving_too_wide(x):
    s = nl.ndarray((128, 128), nl.bfloat16, buffer=nl.sbuf)
    m = nl.ndarray((128, 1024), nl.bfloat16, buffer=nl.sbuf)
    d = nl.ndarray((128, 1024), nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=d, stationary=s, moving=m)  # <-
    return x


def test_matmul_moving_free_size_limit_on_trn2():
    err = expect("err_size_of_dimension_exceed_arch_limit", moving_too_wide, f32(2, 2))
    assert "512" in err.message


def test_matmul_moving_free_size_1024_is_fine_on_trn3():
    out = nkidev.simulate(moving_too_wide, target="trn3")(f32(2, 2))
    assert out.shape == (2, 2)


@jit
def stationary_too_wide(x):
    s = nl.ndarray((128, 256), nl.bfloat16, buffer=nl.sbuf)
    m = nl.ndarray((128, 512), nl.bfloat16, buffer=nl.sbuf)
    d = nl.ndarray((256, 512), nl.float32, buffer=nl.psum)  # <-
    nisa.nc_matmul(dst=d, stationary=s, moving=m)
    return x


def test_psum_tile_partitions_checked_at_allocation():
    expect("err_num_partition_exceed_arch_limit", stationary_too_wide, f32(2, 2))


@jit
def stationary_free_too_big(x):
    s = nl.ndarray((128, 130), nl.bfloat16, buffer=nl.sbuf)
    m = nl.ndarray((128, 64), nl.bfloat16, buffer=nl.sbuf)
    d = nl.ndarray((128, 64), nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=d[:, :], stationary=s, moving=m)  # <-
    return x


def test_matmul_stationary_free_limit():
    err = expect("err_size_of_dimension_exceed_arch_limit", stationary_free_too_big, f32(2, 2))
    assert "stationary free size 130" in err.message


@jit
def matmul_into_sbuf(x):
    s = nl.ndarray((128, 128), nl.bfloat16, buffer=nl.sbuf)
    m = nl.ndarray((128, 512), nl.bfloat16, buffer=nl.sbuf)
    d = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.nc_matmul(dst=d, stationary=s, moving=m)  # <-
    return x


def test_matmul_must_write_psum():
    expect("err_unsupported_memory", matmul_into_sbuf, f32(2, 2))


@jit
def matmul_mixed_fp32(x):
    s = nl.ndarray((128, 128), nl.float32, buffer=nl.sbuf)
    m = nl.ndarray((128, 512), nl.bfloat16, buffer=nl.sbuf)
    d = nl.ndarray((128, 512), nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=d, stationary=s, moving=m)  # <-
    return x


def test_matmul_fp32_cannot_mix_with_bf16():
    expect("err_matmul_dtype_mismatch", matmul_mixed_fp32, f32(2, 2))


@jit
def matmul_crossing_bank(x):
    s = nl.ndarray((128, 128), nl.bfloat16, buffer=nl.sbuf)
    m = nl.ndarray((128, 512), nl.bfloat16, buffer=nl.sbuf)
    d = nl.ndarray((128, 2, 512), nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=d[:, 0, 256:512], stationary=s, moving=m[:, 0:256])
    nisa.nc_matmul(dst=d.reshape((128, 1024))[:, 256:768], stationary=s, moving=m)  # <-
    return x


def test_matmul_output_stays_in_one_psum_bank():
    expect("err_psum_bank_overflow", matmul_crossing_bank, f32(2, 2))


@jit
def psum_too_big(x):
    nl.ndarray((128, 8192), nl.float32, buffer=nl.psum)  # <-
    return x


def test_psum_tile_larger_than_psum():
    expect("err_psum_tile_too_large", psum_too_big, f32(2, 2))


@jit
def too_many_psum_banks(x):
    # occupancy follows access intervals (liveness.py); what no allocation can hold is one instruction whose
    # PSUM operands exceed the 8 banks together
    a = nl.ndarray((128, 4096), nl.float32, buffer=nl.psum)
    b = nl.ndarray((128, 4096), nl.float32, buffer=nl.psum)
    nisa.memset(dst=a, value=0.0)
    nisa.tensor_copy(dst=b, src=a)  # <-
    return x


def test_psum_capacity_is_eight_banks():
    err = expect("err_psum_capacity_exceeded", too_many_psum_banks, f32(2, 2))
    assert "16384" in err.message


@jit
def sbuf_overflow(x):
    # many live tiles are spilled, not refused; a single tile larger than a partition's SBUF is refused
    nl.ndarray((128, 60000), nl.float32, buffer=nl.sbuf)  # <-
    return x


def test_sbuf_capacity_tracks_live_tiles():
    err = expect("err_sbuf_capacity_exceeded", sbuf_overflow, f32(2, 2))
    assert "212984" in err.message  # trn2's usable bytes per partition
    expect("err_sbuf_capacity_exceeded", sbuf_overflow, f32(2, 2), target="trn1")


@jit
def sbuf_reuse(x):
    for _i in range(100):
        t = nl.ndarray((128, 1024), nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=t, value=0.0)
    return x


def test_freed_tiles_release_their_bytes():
    nkidev.simulate(sbuf_reuse)(f32(2, 2))


@jit
def dma_out_of_psum(x):
    out = nl.ndarray((8, 8), nl.float32, buffer=nl.shared_hbm)
    p = nl.ndarray((8, 8), nl.float32, buffer=nl.psum)
    nisa.dma_copy(dst=out, src=p)  # <-
    return out


def test_no_dma_from_psum():
    expect("err_dma_from_psum", dma_out_of_psum, f32(2, 2))


@jit
def reduce_partition_axis(x):
    t = nl.ndarray((64, 32), nl.float32, buffer=nl.sbuf)
    r = nl.ndarray((64, 1), nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=t, value=1.0)
    nisa.tensor_reduce(dst=r, op=nl.add, data=t, axis=0)  # <-
    return x


@jit
def reduce_middle_axis(x):
    t = nl.ndarray((64, 4, 32), nl.float32, buffer=nl.sbuf)
    r = nl.ndarray((64, 32), nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=t, value=1.0)
    nisa.tensor_reduce(dst=r, op=nl.add, data=t, axis=1)  # <-
    return x


def test_reduce_axis_rules():
    expect("err_reduce_axis_invalid", reduce_partition_axis, f32(2, 2))
    expect("err_reduce_axis_invalid", reduce_middle_axis, f32(2, 2))


@jit
def bias_wrong_shape(x):
    t = nl.ndarray((64, 32), nl.float32, buffer=nl.sbuf)
    b = nl.ndarray((64, 2), nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=t, value=1.0)
    nisa.memset(dst=b, value=1.0)
    nisa.activation(dst=t, op=nl.exp, data=t, bias=b)  # <-
    return x


@jit
def scale_not_fp32(x):
    t = nl.ndarray((64, 32), nl.float32, buffer=nl.sbuf)
    s = nl.ndarray((64, 1), nl.bfloat16, buffer=nl.sbuf)
    nisa.memset(dst=t, value=1.0)
    nisa.memset(dst=s, value=1.0)
    nisa.activation(dst=t, op=nl.exp, data=t, scale=s)  # <-
    return x


@jit
def scalar_bias(x):
    t = nl.ndarray((64, 32), nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=t, value=1.0)
    nisa.activation(dst=t, op=nl.exp, data=t, bias=0.5)  # <-
    return x


def test_activation_bias_and_scale_rules():
    expect("err_activation_bias_invalid_type", bias_wrong_shape, f32(2, 2))
    expect("err_activation_scale_invalid_type", scale_not_fp32, f32(2, 2))
    expect("err_activation_bias_invalid_type", scalar_bias, f32(2, 2), target="trn1")
    nkidev.simulate(scalar_bias, target="trn2")(f32(2, 2))  # a scalar bias is fine from NeuronCore-v3 on


@jit
def misaligned_start(x):
    t = nl.ndarray((128, 32), nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=t[16:48], value=1.0)  # <-
    return x


def test_partition_start_alignment():
    err = expect("err_partition_start_alignment", misaligned_start, f32(2, 2))
    assert "starting at partition 16" in err.message


@jit
def out_of_bounds(x):
    t = nl.ndarray((128, 32), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[0:128, 0:32])  # <-
    return x


def test_static_out_of_bounds_access():
    expect("err_tensor_access_out_of_bound", out_of_bounds, f32(64, 32))


@jit
def private_output(x):
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.hbm)  # <-
    nisa.dma_copy(dst=out, src=x)
    return out


def test_outputs_must_be_shared_hbm():
    expect("err_output_must_be_shared_hbm", private_output, f32(4, 4))


@jit
def unwritten_output(x):
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)  # <-
    return out


def test_output_must_be_written():
    expect("err_tensor_output_not_written_to", unwritten_output, f32(4, 4))


@jit
def gpsimd_on_psum(x):
    p = nl.ndarray((8, 8), nl.float32, buffer=nl.psum)
    nisa.memset(dst=p, value=0.0, engine=nisa.engine.gpsimd)  # <-
    return x


def test_gpsimd_cannot_touch_psum():
    expect("err_gpsimd_cannot_access_psum", gpsimd_on_psum, f32(2, 2))


@jit
def vector_transpose_too_big(x):
    t = nl.ndarray((64, 64), nl.bfloat16, buffer=nl.sbuf)
    d = nl.ndarray((64, 64), nl.bfloat16, buffer=nl.sbuf)
    nisa.nc_transpose(dst=d, data=t, engine=nisa.engine.vector)  # <-
    return x


def test_vector_engine_transpose_limit():
    expect("err_transpose_too_large", vector_transpose_too_big, f32(2, 2))


@jit
def numpy_on_tensor(x):
    return np.exp(x)  # <-


def test_numpy_on_kernel_data_is_named():
    expect("err_numpy_on_kernel_data", numpy_on_tensor, f32(2, 2))


@jit
def uses_unemulated_op(x):
    t = nl.ndarray((16, 8), nl.float32, buffer=nl.sbuf)
    nl.atomic_rmw(t, value=t, op=nl.add)  # <- (every nisa op is emulated; nl.atomic_rmw is not yet)
    return x


def test_documented_but_unemulated_op_is_named():
    err = expect("err_not_supported_yet", uses_unemulated_op, f32(2, 2))
    assert isinstance(err, NkiNotSupportedError)


@jit
def exponential_on_trn2(x):
    t = nl.ndarray((16, 8), nl.float32, buffer=nl.sbuf)
    nisa.exponential(dst=t, src=t)  # <-
    return x


def test_generation_specific_op():
    expect("err_unsupported_on_target", exponential_on_trn2, f32(2, 2))


def test_rule_errors_are_assertion_errors_like_the_official_simulator():
    with pytest.raises(AssertionError):
        nkidev.simulate(too_many_partitions)(f32(2, 2))
    assert issubclass(KernelRuleError, nisa.NkiValidationError)


def test_traceback_shows_no_nkidev_frames():
    import traceback

    try:
        nkidev.simulate(implicit_broadcast)(f32(2, 2))
    except NkiError as e:
        frames = traceback.extract_tb(e.__traceback__)
    files = [f.filename for f in frames]
    assert files[-1].endswith("test_rules.py")
    inside = [f for f in files if "/src/nkidev/" in f]
    assert len(inside) <= 2, inside  # at most the public entry point (simulate.__call__ / run)


@jit
def branches_on_data(x):
    t = nl.ndarray((1, 1), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    if t:  # <-
        pass
    return x


def test_control_flow_on_tensor_values():
    expect("err_dynamic_control_flow_not_supported", branches_on_data, f32(1, 1))


@jit
def inner_grid(x):
    return x


@jit
def outer(x):
    inner_grid[2](x)  # <-
    return x


def test_nested_spmd_launch():
    expect("err_nested_kernel_with_spmd_grid", outer, f32(1, 1))


@jit
def host_reads_register(x, n):
    cnt = nl.ndarray((1, 1), nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=cnt, src=n)
    r = nisa.register_alloc()
    nisa.register_load(r, cnt)
    for _ in range(r):  # <-
        pass
    return x


def test_kernel_code_cannot_read_register_values():
    expect("err_dynamic_control_flow_not_supported", host_reads_register, f32(1, 1), np.array([[3]], np.int32))


@jit
def device_loop(x, n):
    out = nl.ndarray((1, 4), nl.float32, buffer=nl.shared_hbm)
    cnt = nl.ndarray((1, 1), nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=cnt, src=n)
    r = nisa.register_alloc()
    nisa.register_load(r, cnt)
    acc = nl.zeros((1, 4), nl.float32)
    t = nl.load(x)
    nl.fori_loop(0, r, lambda i: nisa.tensor_tensor(dst=acc, data1=acc, data2=t, op=nl.add))
    for _ in nl.dynamic_range(r):
        nisa.tensor_tensor(dst=acc, data1=acc, data2=t, op=nl.add)
    nl.store(out, acc)
    return out


def test_register_bounded_device_loops_run():
    out = nkidev.simulate(device_loop, nki_version="0.6")(np.ones((1, 4), np.float32), np.array([[3]], np.int32))  # dynamic_range: 0.6
    np.testing.assert_array_equal(out, np.full((1, 4), 6.0))
