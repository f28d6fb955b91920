"""NKI versions: selecting one (argument, context, environment, CLI), gating both ways with the error's name and line,
and the 0.7 additions' values (NkiScalar arithmetic, scalar_load/store, fori_loop scalars, tile grids, compile configs)."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import nkidev
from nkidev.emulator import isa as nisa
from nkidev.emulator import language as nl
from nkidev.emulator import versions
from nkidev.emulator.jit import jit
from nkidev.errors import NkiError, NkiUsageError


def marked_line(kernel) -> int:
    lines, start = inspect.getsourcelines(getattr(kernel, "fn", kernel))
    (hit,) = [start + i for i, text in enumerate(lines) if "# <-" in text]
    return hit


def expect(name: str, kernel, *args, nki_version=None) -> NkiError:
    with pytest.raises(NkiError) as info:
        nkidev.simulate(kernel, nki_version=nki_version)(*args)
    assert info.value.name == name, str(info.value)
    assert info.value.lineno == marked_line(kernel), str(info.value)
    return info.value


# ---------------------------------------------------------------- selecting a version


@pytest.mark.parametrize(
    ("spec", "expected"), [("0.7", "0.7"), ("0.7.0", "0.7"), ("v0.6", "0.6"), ("0.6.0", "0.6"), (None, versions.NEWEST)]
)
def test_resolve_accepts_short_and_long_forms(spec, expected, monkeypatch):
    monkeypatch.delenv(versions.ENV_VAR, raising=False)
    assert versions.resolve(spec) == expected


@pytest.mark.parametrize("spec", ["0.5", "0.7.1", "1.0", "seven"])
def test_unknown_version_is_a_named_usage_error(spec):
    with pytest.raises(NkiUsageError) as e:
        versions.resolve(spec)
    assert e.value.name == "err_unknown_nki_version" and "0.6" in e.value.fix and "0.7" in e.value.fix


def test_environment_then_explicit_scope_take_precedence(monkeypatch):
    monkeypatch.setenv(versions.ENV_VAR, "0.6.0")
    assert versions.default() == "0.6"
    with versions.scope("0.7"):
        assert versions.default() == "0.7"
    assert versions.default() == "0.6"
    monkeypatch.delenv(versions.ENV_VAR)
    assert versions.default() == versions.NEWEST == "0.7"


def test_emulate_selects_the_version_of_a_block():
    with nkidev.emulate(nki_version="0.6"):
        assert versions.default() == "0.6"
    assert versions.default() == versions.NEWEST


# ---------------------------------------------------------------- gating both ways


@jit
def uses_dynamic_range(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for _i in nl.dynamic_range(2):  # <-
        nisa.dma_copy(dst=out, src=x)
    return out


@jit
def uses_scalar_load(x, n):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    n_sb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=n_sb, src=n)
    nisa.scalar_load(n_sb)  # <-
    nisa.dma_copy(dst=out, src=x)
    return out


X = np.arange(128 * 4, dtype=np.float32).reshape(128, 4)
N = np.array([[3]], dtype=np.int32)


def test_removed_api_under_07_names_the_replacement_and_line():
    err = expect("err_removed_in_nki_version", uses_dynamic_range, X, nki_version="0.7")
    assert "nl.fori_loop" in str(err) and "0.6" in str(err)
    np.testing.assert_array_equal(nkidev.simulate(uses_dynamic_range, nki_version="0.6")(X), X)


def test_07_api_under_06_names_the_version_that_adds_it():
    err = expect("err_requires_nki_version", uses_scalar_load, X, N, nki_version="0.6")
    assert "0.7" in str(err)
    np.testing.assert_array_equal(nkidev.simulate(uses_scalar_load, nki_version="0.7")(X, N), X)


def test_while_register_is_removed_in_07():
    @jit
    def k(x, n):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        n_sb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=n_sb, src=n)
        r = nisa.register_alloc()
        nisa.register_load(r, n_sb)
        while r:  # <-
            nisa.memset(dst=n_sb, value=0)  # nki.isa calls return an NkiInstruction handle, not the tile
            nisa.register_load(r, n_sb)
        nisa.dma_copy(dst=out, src=x)
        return out

    err = expect("err_removed_in_nki_version", k, X, N, nki_version="0.7")
    assert "nl.while_loop" in str(err)
    np.testing.assert_array_equal(nkidev.simulate(k, nki_version="0.6")(X, N), X)


def test_cli_nki_version_and_environment_select_the_version(tmp_path):
    task = tmp_path / "task.py"
    task.write_text(
        "import nki\nimport nki.isa as nisa\nimport nki.language as nl\nimport numpy as np\n\n\n"
        "@nki.jit\ndef k(x):\n    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)\n"
        "    for _i in nl.dynamic_range(1):\n        nisa.dma_copy(dst=out, src=x)\n    return out\n\n\n"
        "def reference(x):\n    return x\n\n\ndef cases():\n    return [(np.ones((128, 4), np.float32),)]\n"
    )
    cmd = [sys.executable, "-m", "nkidev", "validate", f"{task}::k", "--json"]
    env = {k: v for k, v in os.environ.items() if k != versions.ENV_VAR}
    new = subprocess.run(cmd, capture_output=True, text=True, env=env)
    old = subprocess.run([*cmd, "--nki-version", "0.6"], capture_output=True, text=True, env=env)
    via_env = subprocess.run(cmd, capture_output=True, text=True, env=env | {versions.ENV_VAR: "0.6.0"})
    assert new.returncode != 0 and "err_removed_in_nki_version" in new.stdout
    assert old.returncode == 0, old.stdout + old.stderr
    assert via_env.returncode == 0, via_env.stdout + via_env.stderr
    assert json.loads(old.stdout)["passed"] is True


# ---------------------------------------------------------------- NKI 0.7 values


def test_nki_scalar_int32_wraps_and_int64_does_not():
    a = nisa.NkiScalar(100000, nl.int32)
    assert (a * 100000).value == 1410065408
    assert (nisa.NkiScalar(2**31 - 1, nl.int32) + 1).value == -(2**31)
    assert (nisa.NkiScalar(100000, nl.int64) * 100000).value == 10**10
    assert (-(a - 7) * 2).value == -199986


def test_nki_scalar_rules_are_named_errors():
    big = nisa.NkiScalar(1, nl.int64)
    with pytest.raises(NkiError) as e:
        _ = big < 2
    assert e.value.name == "err_nki_scalar_operation"
    with pytest.raises(NkiError) as e:
        _ = nisa.NkiScalar(1, nl.int32) + big
    assert e.value.name == "err_nki_scalar_operation"
    with pytest.raises(TypeError) as e:
        bool(nisa.NkiScalar(1, nl.int32))
    assert e.value.name == "err_nki_scalar_host_value"


def test_scalar_load_store_and_fori_loop_bounds():
    @jit
    def k(n):
        out = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.shared_hbm)
        acc = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=acc, value=0.0)
        n_sb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=n_sb, src=n)
        s = nisa.scalar_load(n_sb)

        def body(i):
            nisa.tensor_scalar(dst=acc, data=acc, op0=nl.add, operand0=1.0)

        nl.fori_loop(1, s * 2 + 1, body)  # 2n iterations
        res = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.scalar_store(res, s * 10 - 1)
        nisa.dma_copy(dst=out, src=res)
        total = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=total, src=acc)
        return out, total

    with nkidev.emulate(nki_version="0.7"):
        out, acc = nkidev.simulate(k)(np.array([[4]], dtype=np.int32))
    assert out.tolist() == [[39]]
    np.testing.assert_array_equal(acc, np.full((128, 1), 8.0, np.float32))


def test_scalar_store_of_a_python_int_is_refused_at_its_line():
    @jit
    def k(n):
        out = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.shared_hbm)
        t = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.scalar_store(t, 5)  # <-
        nisa.dma_copy(dst=out, src=t)
        return out

    expect("err_nki_scalar_invalid", k, N, nki_version="0.7")


def test_alloc_tiles_grid_addresses_each_tile():
    @jit
    def k(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        grid = nl.alloc_tiles(tile_shape=(128, 4), element_shape=(128, 8), buffer=nl.sbuf, dtype=x.dtype)
        for j in range(2):
            nisa.dma_copy(dst=grid[0, j].data, src=x[:, j * 4 : (j + 1) * 4])
            nisa.tensor_scalar(dst=grid[0, j].data, data=grid[0, j].data, op0=nl.multiply, operand0=float(j + 1))
            nisa.dma_copy(dst=out[:, j * 4 : (j + 1) * 4], src=grid[0, j].data)
        return out

    x = np.arange(128 * 8, dtype=np.float32).reshape(128, 8)
    got = nkidev.simulate(k, nki_version="0.7")(x)
    np.testing.assert_array_equal(got, np.concatenate([x[:, :4], 2 * x[:, 4:]], axis=1))


def test_compile_config_is_07_only():
    from nkidev.emulator import nki_api

    nki = nki_api.MODULES["nki"]
    cfg = nki.compiler.CompileConfig()

    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=x)
        return out

    with versions.scope("0.7"):
        np.testing.assert_array_equal(nkidev.simulate(nki.jit(kernel, compile_config=cfg))(X), X)
    with versions.scope("0.6"), pytest.raises(NkiError) as e:
        nkidev.simulate(nki.jit(kernel, compile_config=cfg))(X)
    assert e.value.name == "err_requires_nki_version"


def test_empty_like_of_a_selected_tile_allocates_its_exact_extent():
    # the NkiTileGrid docs' pattern: nl.empty_like(src_tiles[i, j], buffer=nl.sbuf) is a one-tile grid whose .data is
    # the SBUF operand, clamped at the remainder tiles
    @jit
    def scale(src):
        dst = nl.ndarray(src.shape, dtype=src.dtype, buffer=nl.shared_hbm)
        src_tiles, dst_tiles = nl.tiles(src, tile_shape=(128, 128)), nl.tiles(dst, tile_shape=(128, 128))
        for i in range(src_tiles.shape[0]):
            for j in range(src_tiles.shape[1]):
                t = nl.empty_like(src_tiles[i, j], buffer=nl.sbuf)
                nisa.dma_copy(t.data, src_tiles[i, j].data)
                nisa.tensor_scalar(t.data, t.data, nl.multiply, 3.0)
                nisa.dma_copy(dst_tiles[i, j].data, t.data)
        return dst

    x = np.arange(200 * 150, dtype=np.float32).reshape(200, 150)
    np.testing.assert_array_equal(nkidev.simulate(scale, nki_version="0.7")(x), 3 * x)


def test_tiles_of_a_block_one_tile_wide_keep_both_grid_axes():
    # 3 tiles of 256 columns in blocks of 2: the last block holds one tile, and nl.tiles of it is still a 1 x 1 grid
    @jit
    def copy_blocks(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        src = nl.blocks(x, tile_shape=(128, 256), block_shape=(1, 2))
        dst = nl.blocks(out, tile_shape=(128, 256), block_shape=(1, 2))
        shapes = []
        for b in range(src.shape[1]):
            st, dt = nl.tiles(src[0, b]), nl.tiles(dst[0, b])
            shapes.append(st.shape)
            for j in range(st.shape[1]):
                t = nl.ndarray(st[0, j].element_shape, dtype=x.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=t, src=st[0, j].data)
                nisa.dma_copy(dst=dt[0, j].data, src=t)
        assert shapes == [(1, 2), (1, 1)], shapes
        return out

    x = np.arange(128 * 768, dtype=np.float32).reshape(128, 768)
    np.testing.assert_array_equal(nkidev.simulate(copy_blocks, nki_version="0.7")(x), x)


@jit
def ranges_over_a_register(n):
    t = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=n)
    r = nisa.register_alloc()
    nisa.register_load(r, t)
    for _i in range(r):  # <-
        pass
    return n


def test_range_of_a_register_is_a_type_error_under_07_and_names_no_removed_loop():
    err = expect("err_dynamic_control_flow_not_supported", ranges_over_a_register, N, nki_version="0.7")
    assert isinstance(err, TypeError) and "dynamic_range" not in str(err) and "nl.fori_loop" in str(err)
    old = expect("err_dynamic_control_flow_not_supported", ranges_over_a_register, N, nki_version="0.6")
    assert not isinstance(old, TypeError) and "nl.dynamic_range" in str(old)
