"""Every name the official nki.isa / nki.language docs define exists under the shim, with NKI's spelling,
and kernels keep their Python identity (name, signature, kwargs, enums, None, their own exceptions)."""

from __future__ import annotations

import inspect
import subprocess
import sys

import numpy as np
import pytest

import nkidev

ISA_NAMES = """NkiInstruction NkiValidationError VirtualRegister activate2 activation activation_reduce affine_select bn_aggr
bn_stats core_barrier dge_mode dma_compute dma_copy dma_engine dma_transpose dropout engine exponential
get_nc_sub_version get_nc_version gpsimd_engine iota local_gather matmul_perf_mode max8 memset nc_find_index8
nc_match_replace8 nc_matmul nc_matmul_mx nc_n_gather nc_stream_shuffle nc_transpose nc_version nonzero_with_count
oob_mode quantize_mx rand2 rand_get_state rand_set_state range_select reciprocal reduce_cmd register_alloc
register_load register_move register_store rng scalar_engine scalar_tensor_tensor select_reduce sendrecv
sendrecv_compute sequence_bounds set_rng_seed tensor_copy tensor_copy_predicated tensor_engine tensor_partition_reduce tensor_reduce
tensor_scalar tensor_scalar_cumulative tensor_scalar_reduce tensor_tensor tensor_tensor_scan topk unknown_engine
vector_engine""".split()

LANGUAGE_NAMES = """DType MemoryRegion NKIObject NkiTensor abs abs_max abs_min add affine_range all arctan average bfloat16
bitwise_and bitwise_or bitwise_xor bool_ broadcast_to bypass ceil copy cos device_print divide dropout ds dynamic_range
empty_like equal erf erf_dx exp expand_dims float16 float32 float4_e2m1fn_x4 float8_e4m3 float8_e4m3fn
float8_e4m3fn_x4 float8_e5m2 float8_e5m2_x4 float8_e8m0fnu floor fmod fori_loop full gather_flattened gelu
gelu_apprx_sigmoid gelu_apprx_sigmoid_dx gelu_apprx_tanh gelu_dx greater greater_equal hbm int16 int32 int8 invert
is_hbm is_on_chip is_psum is_sbuf left_shift less less_equal load load_transpose2d log logical_and logical_not
logical_or logical_xor matmul max maximum mean min minimum mish mod multiply ndarray negative no_reorder not_equal
num_programs ones power prelu private_hbm prod program_id program_ndim psum rand random_seed reciprocal relu
right_shift rms_norm rsqrt sbuf sequential_range shared_constant shared_hbm shared_identity_matrix sigmoid sign silu
silu_dx sin softmax softplus sqrt square static_range store subtract sum tan tanh tfloat32 tile_size transpose trunc
uint16 uint32 uint8 var where while_loop zeros zeros_like""".split()


@pytest.fixture()
def nki():
    with nkidev.emulate():
        import nki

        yield nki


def test_documented_isa_names_exist(nki):
    import nki.isa as nisa

    missing = [n for n in ISA_NAMES if not hasattr(nisa, n)]
    assert not missing


def test_documented_language_names_exist(nki):
    import nki.language as nl

    missing = [n for n in LANGUAGE_NAMES if not hasattr(nl, n)]
    assert not missing


def test_enums_and_constants(nki):
    import nki.isa as nisa
    from nki.isa.constants import dge_mode, oob_mode

    assert [v.value for v in nisa.nc_version] == [2, 3, 4]
    assert nisa.nc_version.gen3.name == "gen3"
    assert dge_mode.hwdge is nisa.dge_mode.hwdge and oob_mode.skip.value == 1
    assert nisa.engine.vector.value == 5 and nisa.reduce_cmd.reset_reduce.value == 3
    assert nisa.get_nc_version() == nisa.nc_version.gen3  # trn2 default


def test_tile_size_constants(nki):
    import nki.language as nl

    ts = nl.tile_size
    assert (ts.pmax, ts.psum_bank_fmax, ts.gemm_stationary_fmax, ts.gemm_moving_fmax, ts.bn_stats_fmax) == (128, 512, 128, 512, 512)
    assert ts.psum_num_banks == 8 and ts.sbuf_fmax_bytes == 212984


def test_dtypes_interoperate_with_numpy(nki):
    import ml_dtypes
    import nki.language as nl

    assert np.zeros(3, dtype=nl.bfloat16).dtype == ml_dtypes.bfloat16
    assert np.arange(3).astype(nl.float8_e4m3).dtype == ml_dtypes.float8_e4m3
    assert nl.float32 == np.float32 and nl.bfloat16 == ml_dtypes.bfloat16 and nl.bfloat16 != nl.float16
    assert nl.float8_e4m3fn_x4.itemsize == 4 and nl.tfloat32 != nl.float32


def test_unemulated_op_is_named_not_missing(nki):
    import nki.language as nl

    from nkidev.errors import NkiNotSupportedError

    with pytest.raises(NkiNotSupportedError, match="err_not_supported_yet"):
        nl.atomic_rmw(None, value=None, op=None)  # every nisa op is emulated; nl.atomic_rmw is not yet


def kernel_source():
    return '''
import nki
import nki.language as nl
import nki.isa as nisa

@nki.jit
def scaled_copy(x, factor=2.0, mode=None, op=nl.multiply, engine=nisa.engine.vector, *, check=True):
    """Doc of scaled_copy."""
    assert x.shape[0] <= 128, f"too many rows: {x.shape[0]}"
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    if mode is not None:
        factor = factor * 10
    nisa.tensor_scalar(dst=t, data=t, op0=op, operand0=factor, engine=engine)
    nisa.dma_copy(dst=out, src=t)
    return out
'''


def test_kernel_identity_kwargs_and_own_exceptions(tmp_path, nki):
    path = tmp_path / "k.py"
    path.write_text(kernel_source())
    from nkidev.taskfile import load_task

    k = load_task(path).kernel("scaled_copy")
    assert k.__name__ == "scaled_copy" and k.__doc__ == "Doc of scaled_copy."
    assert list(inspect.signature(k).parameters) == ["x", "factor", "mode", "op", "engine", "check"]
    import nki.isa as nisa
    import nki.language as nl

    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(nkidev.simulate(k)(x), 2 * x)
    np.testing.assert_array_equal(
        nkidev.simulate(k)(x=x, factor=3.0, mode="on", op=nl.add, engine=nisa.engine.gpsimd if False else nisa.engine.scalar, check=False),
        x + 30.0,
    )
    with pytest.raises(AssertionError, match="too many rows: 200"):
        nkidev.simulate(k)(np.zeros((200, 4), np.float32))


def test_fallback_import_without_real_nki_and_env_forcing(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("import nki, nki.language as nl\nprint(nl.tile_size.pmax, hasattr(nki, 'simulate'))\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["128", "True"]
    env = {"NKIDEV_EMULATE": "1", "PATH": "/usr/bin:/bin"}
    forced = subprocess.run([sys.executable, "-c", "import nki; print(nki.__file__)"], capture_output=True, text=True, env=env, check=True)
    assert "nkidev" in forced.stdout


def test_emulate_context_restores_a_real_nki(tmp_path, monkeypatch):
    fake = tmp_path / "nki"
    fake.mkdir()
    (fake / "__init__.py").write_text("REAL = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [n for n in sys.modules if n == "nki" or n.startswith("nki.")]:
        monkeypatch.delitem(sys.modules, name)
    import nki

    assert getattr(nki, "REAL", False), "a real nki install is not shadowed by default"
    with nkidev.emulate():
        import nki as emulated

        assert hasattr(emulated, "simulate") and not hasattr(emulated, "REAL")
    import nki as again

    assert getattr(again, "REAL", False)


def test_nkidev_run_executes_scripts_under_the_shim(tmp_path):
    script = tmp_path / "run_me.py"
    script.write_text(
        kernel_source() + "\nimport numpy as np\nx = np.ones((2, 2), np.float32)\nprint(float(nki.simulate(scaled_copy)(x).sum()))\n"
    )
    out = subprocess.run([sys.executable, "-m", "nkidev", "run", str(script)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "8.0"
