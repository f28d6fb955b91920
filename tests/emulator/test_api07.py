"""The NKI 0.7 API audit's fixes (notes: api07_audit.md), each gated both ways with the error's name and line and,
where it computes, checked against NumPy: the 64-bit dtypes, NkiTensor.data, empty_like(address=), and the NKI 0.8
names (nl.if_else, fori_loop(unroll=)) that no emulated version has; and the audit's open items closed since: grids placed
with alloc_tiles/alloc_blocks(address=) (nisa.sendrecv_compute: test_sendrecv_compute.py)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import nkidev
from nkidev.emulator import isa as nisa
from nkidev.emulator import language as nl
from nkidev.emulator.jit import jit
from nkidev.errors import NkiError


def marked_line(kernel) -> int:
    lines, start = inspect.getsourcelines(getattr(kernel, "fn", kernel))
    (hit,) = [start + i for i, text in enumerate(lines) if "# <-" in text]
    return hit


def expect(name: str, kernel, *args, nki_version: str) -> NkiError:
    with pytest.raises(NkiError) as info:
        nkidev.simulate(kernel, nki_version=nki_version)(*args)
    assert info.value.name == name, str(info.value)
    assert info.value.lineno == marked_line(kernel), str(info.value)
    return info.value


# ---------------------------------------------------------------- nl.int64 / nl.uint64 (NKI 0.7 dtypes)


@jit
def int64_triple_plus_one(n):
    t = nl.ndarray((1, 1), dtype=nl.int64, buffer=nl.sbuf)  # <-
    nisa.dma_copy(dst=t, src=n)
    s = nisa.scalar_load(t)
    r = nl.ndarray((1, 1), dtype=nl.int64, buffer=nl.sbuf)
    nisa.scalar_store(r, s * 3 + 1)
    out = nl.ndarray((1, 1), dtype=nl.int64, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=r)
    return out


def test_int64_is_07_and_holds_values_past_int32():
    n = np.array([[3_000_000_000]], dtype=np.int64)
    got = nkidev.simulate(int64_triple_plus_one, nki_version="0.7")(n)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, n * 3 + 1)  # 9_000_000_001: wraps in int32
    err = expect("err_requires_nki_version", int64_triple_plus_one, n, nki_version="0.6")
    assert "nl.int64" in err.message and "new in NKI 0.7" in err.message and "--nki-version 0.7" in err.fix
    assert isinstance(err, AttributeError)  # a name NKI 0.6 does not have: hasattr() is False there


@jit
def uint64_round_trip(x):
    t = nl.ndarray(x.shape, dtype=nl.uint64, buffer=nl.sbuf)  # <-
    nisa.dma_copy(dst=t, src=x)
    out = nl.ndarray(x.shape, dtype=nl.uint64, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


def test_uint64_is_07_and_copies_bit_exactly():
    x = np.array([[2**63 + 5, 2**64 - 1, 0, 7]], dtype=np.uint64)
    got = nkidev.simulate(uint64_round_trip, nki_version="0.7")(x)
    assert got.dtype == np.uint64
    np.testing.assert_array_equal(got, x)
    err = expect("err_requires_nki_version", uint64_round_trip, x, nki_version="0.6")
    assert "nl.uint64" in err.message and "0.7" in err.message


@pytest.mark.parametrize("name", ["int64", "uint64"])
def test_64_bit_dtype_names_exist_only_under_07(name):
    for version, present in (("0.6", False), ("0.7", True)):
        with nkidev.emulate(nki_version=version):
            import nki
            import nki.language as shim_nl

            assert hasattr(shim_nl, name) is present
            assert hasattr(nki.dtype, name) is present
    assert getattr(nl, name).itemsize == 8 and name not in nl.__all__  # star imports stay valid under 0.6


# ---------------------------------------------------------------- NkiTensor.data (NKI 0.7)


@jit
def data_of_a_plain_tensor(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t.data, src=x)  # <-
    nisa.tensor_scalar(dst=t.data, data=t, op0=nl.multiply, operand0=3.0)
    nisa.dma_copy(dst=out, src=t.data)
    return out


@jit
def copy_tile_grid(src):
    # the NkiTileGrid page's example (v2.33.0/nki/api/generated/nki.language.NkiTileGrid.html), scaled per tile
    tile_shape = (128, 256)
    src_tiles = nl.tiles(src, tile_shape=tile_shape)
    dst = nl.ndarray(src.shape, dtype=src.dtype, buffer=nl.shared_hbm)
    dst_tiles = nl.tiles(dst, tile_shape=tile_shape)
    for i in range(src_tiles.shape[0]):
        for j in range(src_tiles.shape[1]):
            src_tile = src_tiles[i, j]
            tile = nl.ndarray(src_tile.element_shape, dtype=src.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=tile.data, src=src_tile.data)
            nisa.tensor_scalar(dst=tile.data, data=tile.data, op0=nl.add, operand0=float(10 * i + j))
            nisa.dma_copy(dst=dst_tiles[i, j].data, src=tile.data)
    return dst


def test_tensor_data_is_the_tensor_itself_under_07():
    x = np.arange(128 * 8, dtype=np.float32).reshape(128, 8)
    np.testing.assert_array_equal(nkidev.simulate(data_of_a_plain_tensor, nki_version="0.7")(x), 3 * x)
    src = np.arange(256 * 512, dtype=np.float32).reshape(256, 512)
    want = src.copy()
    for i in range(2):
        for j in range(2):
            want[i * 128 : (i + 1) * 128, j * 256 : (j + 1) * 256] += 10 * i + j
    np.testing.assert_array_equal(nkidev.simulate(copy_tile_grid, nki_version="0.7")(src), want)


def test_tensor_data_is_new_in_07():
    x = np.ones((128, 8), np.float32)
    err = expect("err_requires_nki_version", data_of_a_plain_tensor, x, nki_version="0.6")
    assert "NkiTensor.data" in err.message and "0.7" in err.message


# ---------------------------------------------------------------- nl.empty_like(address=) (NKI 0.7)


@jit
def two_views_of_one_address(x):
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    first = nl.empty_like(t, address=(0, 4096))  # <-
    nisa.dma_copy(dst=first, src=x)
    second = nl.empty_like(t, address=(0, 4096))  # the same live memory: it reads what `first` holds
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=second)
    return out


def test_empty_like_address_places_the_tensor_under_07():
    x = np.arange(128 * 4, dtype=np.float32).reshape(128, 4) - 100.0
    np.testing.assert_array_equal(nkidev.simulate(two_views_of_one_address, nki_version="0.7")(x), x)
    err = expect("err_requires_nki_version", two_views_of_one_address, x, nki_version="0.6")
    assert "empty_like(address=)" in err.message


# ---------------------------------------------------------------- alloc_tiles / alloc_blocks (address=) (NKI 0.7)
# address= has "the same contract as nki.language.ndarray()" (latest/nki/api/generated/nki.language.alloc_tiles.html,
# nki.language.alloc_blocks.html): grids placed at one address are one memory, as tensors are


@jit
def grids_at_one_address(x):
    geometry = dict(tile_shape=(128, 4), element_shape=(128, 8), dtype=x.dtype)
    tiles = nl.alloc_tiles(**geometry, buffer=nl.sbuf, address=(0, 2048))
    blocks = nl.alloc_blocks(**geometry, block_shape=(1, 2), buffer=nl.sbuf, address=(0, 2048))
    nisa.dma_copy(dst=tiles[0, 1].data, src=x[:, 0:4])  # written through the tile grid
    nisa.dma_copy(dst=nl.tiles(blocks[0, 0])[0, 0].data, src=x[:, 4:8])  # and through the block grid
    again = nl.empty_like(tiles, address=(0, 2048))
    out = nl.ndarray((128, 12), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out[:, 0:4], src=nl.tiles(blocks[0, 0])[0, 1].data)  # what `tiles` wrote
    nisa.dma_copy(dst=out[:, 4:8], src=tiles[0, 0].data)  # what `blocks` wrote
    nisa.dma_copy(dst=out[:, 8:12], src=again[0, 1].data)  # an empty_like grid at the address is that memory too
    return out


@jit
def psum_grids_at_one_bank(x):
    geometry = dict(tile_shape=(128, 4), element_shape=(128, 8), dtype=nl.float32, buffer=nl.psum)
    first = nl.alloc_tiles(**geometry, address=(0, 2048))
    second = nl.alloc_tiles(**geometry, address=(0, 2048))
    t = nl.ndarray((128, 8), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_copy(dst=first[0, 0].data, src=t[:, 0:4])
    nisa.tensor_copy(dst=first[0, 1].data, src=t[:, 4:8])
    back = nl.ndarray((128, 8), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=back[:, 0:4], src=second[0, 1].data)
    nisa.tensor_copy(dst=back[:, 4:8], src=second[0, 0].data)
    out = nl.ndarray((128, 8), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=back)
    return out


def test_grids_placed_at_one_address_share_their_memory():
    x = np.arange(128 * 8, dtype=np.float32).reshape(128, 8) - 300.0
    got = nkidev.simulate(grids_at_one_address, nki_version="0.7")(x)
    np.testing.assert_array_equal(got, np.concatenate([x[:, 0:4], x[:, 4:8], x[:, 0:4]], axis=1))
    got = nkidev.simulate(psum_grids_at_one_bank, nki_version="0.7")(x)
    np.testing.assert_array_equal(got, np.concatenate([x[:, 4:8], x[:, 0:4]], axis=1))


def _placed_at(kind: str, buffer, address):
    """A kernel placing one tensor (kind "ndarray") or grid at `address` of `buffer`, on its marked line."""
    geometry = dict(tile_shape=(128, 4), element_shape=(128, 8), dtype=nl.float32, buffer=buffer)

    @jit
    def place(x):
        if kind == "ndarray":
            nl.ndarray((128, 8), dtype=nl.float32, buffer=buffer, address=address)
        elif kind == "alloc_tiles":
            nl.alloc_tiles(**geometry, address=address)
        else:
            nl.alloc_blocks(**geometry, block_shape=(1, 1), address=address)
        return x

    return place


@pytest.mark.parametrize(
    ("buffer", "address", "words"),
    [
        (nl.psum, (0, 100), "does not start on a bank boundary"),
        (nl.psum, 4096, "does not start on a bank boundary"),
        (nl.sbuf, (-1, 0), "address=(-1, 0)"),
        (nl.sbuf, (0, 1.5), "address=(0, 1.5)"),
    ],
    ids=["psum-off-bank", "psum-not-a-pair", "sbuf-negative", "sbuf-not-an-int"],
)
def test_a_bad_grid_address_is_the_error_ndarray_gives(buffer, address, words):
    errors = []
    for kind in ("ndarray", "alloc_tiles", "alloc_blocks"):
        kernel = _placed_at(kind, buffer, address)
        with pytest.raises(NkiError) as info:
            nkidev.simulate(kernel, nki_version="0.7")(np.ones((4, 4), np.float32))
        lines, start = inspect.getsourcelines(kernel.fn)
        (line,) = [start + i for i, text in enumerate(lines) if f"nl.{kind}(" in text]
        assert info.value.lineno == line, str(info.value)
        errors.append((info.value.name, info.value.message, info.value.fix))
    assert errors[0][0] == "err_invalid_argument" and words in errors[0][1]
    assert errors[1] == errors[2] == errors[0]


# ---------------------------------------------------------------- NKI 0.8 names: in neither emulated version


@jit
def uses_if_else(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.if_else(True, lambda: nisa.dma_copy(dst=out, src=x))  # <-
    return out


@jit
def unrolled_fori_loop(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.fori_loop(0, 2, lambda i: nisa.dma_copy(dst=out, src=x), unroll=True)  # <-
    return out


@pytest.mark.parametrize("version", ["0.6", "0.7"])
@pytest.mark.parametrize(("kernel", "spelled"), [(uses_if_else, "nl.if_else"), (unrolled_fori_loop, "nl.fori_loop(unroll=)")])
def test_nki_08_names_are_named_errors_in_every_emulated_version(kernel, spelled, version):
    err = expect("err_requires_nki_version", kernel, np.ones((4, 4), np.float32), nki_version=version)
    assert f"{spelled} is new in NKI 0.8" in err.message and "emulates NKI 0.6 to 0.7" in err.message
    assert "--nki-version" not in err.fix and "NKI 0.7" in err.fix  # 0.8 is not selectable: the fix names the 0.7 form


def test_if_else_is_absent_to_feature_tests_and_fori_loop_keeps_its_07_signature():
    for version in ("0.6", "0.7"):
        with nkidev.emulate(nki_version=version):
            import nki.language as shim_nl

            assert not hasattr(shim_nl, "if_else")
    assert list(inspect.signature(nl.fori_loop).parameters) == ["lower", "upper", "body_fun", "step"]
    with pytest.raises(TypeError) as e:
        nl.fori_loop(0, 1, lambda i: None, bogus=1)
    assert not isinstance(e.value, NkiError) and "bogus" in str(e.value)
