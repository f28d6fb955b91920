"""On-chip tensors placed with address=(partition_offset, byte_offset) lie inside their memory: partitions within the
128, bytes within one partition (the target's SBUF bytes_per_partition, PSUM 16 KiB), for nl.ndarray, nl.empty_like,
nl.alloc_tiles and nl.alloc_blocks alike; a placement past either end is err_address_out_of_range at the kernel line,
saying the limit. Placements at the very end fit, and the way nki-library places tiles (PSUM banks at bank * 2048,
SBUF tiles at byte offsets) is accepted.
Docs: https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/generated/nki.language.ndarray.html (address),
https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.1/nki/migration/index.html ("Improved allocation API")."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import nkidev
from nkidev.emulator import isa as nisa
from nkidev.emulator import language as nl
from nkidev.emulator.jit import jit
from nkidev.errors import NkiError
from nkidev.hardware import get_target

GEOMETRY = dict(tile_shape=(128, 4), element_shape=(128, 8), dtype=nl.float32)  # a grid backing of 8 fp32 = 32 bytes


def placing(kind: str, buffer, address, shape=(128, 8)):
    """A kernel placing one fp32 tensor of `shape` (kind "ndarray", "empty_like") or a 128 x 8 grid at `address`."""

    @jit
    def place(x):
        if kind == "ndarray":
            nl.ndarray(shape, dtype=nl.float32, buffer=buffer, address=address)
        elif kind == "empty_like":
            like = nl.ndarray(shape, dtype=nl.float32, buffer=buffer)
            nl.empty_like(like, address=address)
        elif kind == "alloc_tiles":
            nl.alloc_tiles(**GEOMETRY, buffer=buffer, address=address)
        else:
            nl.alloc_blocks(**GEOMETRY, block_shape=(1, 1), buffer=buffer, address=address)
        return x

    return place


def placement_line(kernel, kind: str) -> int:
    lines, start = inspect.getsourcelines(kernel.fn)
    (line,) = [start + i for i, text in enumerate(lines) if f"nl.{kind}(" in text and "like = " not in text]
    return line


def run(kernel, target="trn2"):
    return nkidev.simulate(kernel, target=target, nki_version="0.7")(np.ones((4, 4), np.float32))


KINDS = ("ndarray", "empty_like", "alloc_tiles", "alloc_blocks")


@pytest.mark.parametrize("target", ["trn1", "trn2", "trn3"])
@pytest.mark.parametrize("kind", KINDS)
def test_bytes_past_an_sbuf_partition_are_err_address_out_of_range_with_the_limit(kind, target):
    limit = get_target(target).sbuf.bytes_per_partition
    kernel = placing(kind, nl.sbuf, (0, limit - 16))  # 32 bytes per partition from 16 before the end
    with pytest.raises(NkiError) as info:
        run(kernel, target)
    err = info.value
    assert err.name == "err_address_out_of_range", str(err)
    assert err.lineno == placement_line(kernel, kind), str(err)
    assert f"end at byte {limit + 16}" in err.message and f"past the {limit} bytes" in err.message, err.message
    assert f"at most {limit - 32}" in err.fix
    run(placing(kind, nl.sbuf, (0, limit - 32)), target)  # ending at the last byte fits


@pytest.mark.parametrize("kind", KINDS)
def test_a_psum_tile_past_the_last_bank_is_err_address_out_of_range(kind):
    shape = (128, 1024)  # 4 KiB per partition: two banks
    kernel = placing(kind, nl.psum, (0, 7 * 2048), shape) if kind in ("ndarray", "empty_like") else None
    if kernel is None:  # the grids' 32-byte backing fits every bank: place one past the end of PSUM instead
        kernel = placing(kind, nl.psum, (0, 8 * 2048))
    with pytest.raises(NkiError) as info:
        run(kernel)
    err = info.value
    assert err.name == "err_address_out_of_range", str(err)
    assert err.lineno == placement_line(kernel, kind), str(err)
    assert "past the 16384 bytes of one PSUM partition" in err.message, err.message
    run(placing(kind, nl.psum, (0, 6 * 2048), shape))  # the same tile in the last two banks fits


@pytest.mark.parametrize("buffer", [nl.sbuf, nl.psum], ids=["sbuf", "psum"])
@pytest.mark.parametrize("kind", KINDS)
def test_partitions_past_the_128th_are_err_address_out_of_range(kind, buffer):
    kernel = placing(kind, buffer, (1, 0))  # 128 partitions from partition 1
    with pytest.raises(NkiError) as info:
        run(kernel)
    err = info.value
    assert err.name == "err_address_out_of_range", str(err)
    assert err.lineno == placement_line(kernel, kind), str(err)
    assert "end at partition 129, past the 128" in err.message and "at most 0" in err.fix, err.message


def test_a_tile_on_the_upper_partitions_fits_and_holds_its_values():
    @jit
    def upper_half(x):
        t = nl.ndarray((64, 4), dtype=x.dtype, buffer=nl.sbuf, address=(64, 0))
        nisa.dma_copy(dst=t, src=x)
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out

    x = np.arange(64 * 4, dtype=np.float32).reshape(64, 4)
    np.testing.assert_array_equal(nkidev.simulate(upper_half)(x), x)
    with pytest.raises(NkiError) as info:
        nkidev.simulate(placing("ndarray", nl.sbuf, (65, 0), shape=(64, 4)))(x)
    assert info.value.name == "err_address_out_of_range" and "at most 64" in info.value.fix


def test_a_tile_too_big_for_any_address_keeps_the_shape_error():
    """The shape's own errors come first: no address could hold these tiles."""
    with pytest.raises(NkiError) as info:
        run(placing("ndarray", nl.sbuf, (0, 0), shape=(129, 4)))
    assert info.value.name == "err_num_partition_exceed_arch_limit", str(info.value)
    with pytest.raises(NkiError) as info:
        run(placing("ndarray", nl.psum, (0, 0), shape=(128, 8192)))
    assert info.value.name == "err_psum_tile_too_large", str(info.value)


@jit
def library_style_placements(x):
    """Placements the way nki-library's kernels make them: fp32 matmul tiles rotated over all 8 PSUM banks at
    bank * 2048 bytes (the last one ends at the last PSUM byte), a second accumulator one bank up, and bf16 SBUF tiles
    one after another at byte offsets up to the compiler's usable share (nl.tile_size.total_available_sbuf_size)."""
    for bank in range(8):
        nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum, address=(0, bank * 2048))
    nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum, address=(0, 1 * nl.tile_size.psum_fmax * 4))
    tile_bytes = 2048 * 2
    slots = nl.tile_size.total_available_sbuf_size // tile_bytes
    for k in range(slots):
        nl.ndarray((128, 2048), dtype=nl.bfloat16, buffer=nl.sbuf, address=(0, k * tile_bytes))
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf, address=(0, (slots - 1) * tile_bytes))
    nisa.dma_copy(dst=t, src=x)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


@pytest.mark.parametrize("target", ["trn1", "trn2", "trn3"])
def test_library_style_placements_are_accepted(target):
    x = np.arange(128 * 8, dtype=np.float32).reshape(128, 8)
    np.testing.assert_array_equal(nkidev.simulate(library_style_placements, target=target)(x), x)
