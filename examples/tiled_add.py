"""A tunable kernel: out = x + y, streamed through SBUF in tiles whose size `nkidev tune` picks.

The tile shape is a pair of keyword arguments with defaults; `TUNABLE` lists the values to try. Small tiles
pay the fixed cost of a DMA many times, large ones move more bytes per descriptor; a tile of 256 rows breaks
the 128-partition rule and is reported with its named error, never chosen.

    nkidev tune examples/tiled_add.py::tiled_add              # 16 configs, validated and profiled
    nkidev tune examples/tiled_add.py::tiled_add --param tile_cols=512,1024 --json
"""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def tiled_add(x, y, tile_rows=32, tile_cols=128):
    rows, cols = x.shape
    assert rows % tile_rows == 0 and cols % tile_cols == 0, "the tile must divide the tensor"
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for r in nl.affine_range(rows // tile_rows):
        for c in nl.affine_range(cols // tile_cols):
            block = (slice(r * tile_rows, (r + 1) * tile_rows), slice(c * tile_cols, (c + 1) * tile_cols))
            a = nl.ndarray((tile_rows, tile_cols), dtype=x.dtype, buffer=nl.sbuf)
            b = nl.ndarray((tile_rows, tile_cols), dtype=y.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=a, src=x[block])
            nisa.dma_copy(dst=b, src=y[block])
            s = nl.ndarray((tile_rows, tile_cols), dtype=x.dtype, buffer=nl.sbuf)
            nisa.tensor_tensor(dst=s, data1=a, data2=b, op=nl.add)
            nisa.dma_copy(dst=out[block], src=s)
    return out


TUNABLE = {"tile_rows": [32, 64, 128, 256], "tile_cols": [128, 256, 512, 1024]}


def reference(x, y):
    return x + y


def cases(seed=0):
    rng = np.random.default_rng(seed)
    return [tuple(rng.standard_normal((256, 1024)).astype(np.float32) for _ in range(2))]
