"""MX (OCP microscaling) instructions of NeuronCore-v4: quantize_mx (VectorE) and nc_matmul_mx (TensorE).

Facts (aws-neuron-sdk nki/api/nki/isa/__init__.py docstrings of both ops; nki/deep-dives/mxfp-matmul.rst,
"Data Tensor", "Scale Tensor", "Packing Scale Values"; nki.language dtype docs):
- Packed data types hold four values per element: float8_e5m2_x4 / float8_e4m3fn_x4 are 32-bit (value k in
  byte k), float4_e2m1fn_x4 is 16-bit (value k in nibble k, low nibble first); all little-endian.
- A scaling group is 32 values: 8 partitions x the 4 values of one x4 element. Its scale is a float8_e8m0fnu
  (or uint8) byte, value 2^(byte - 127).
- Scale layout: group row g (= data partitions 8g..8g+7) lives at partition (g // 4) * 32 + g % 4 of the
  scale view (the first 4 partitions of the data's SBUF quadrant); slicing the scale tile at partition 4, 8 or
  12 packs the scales of up to four tensors into one tile.
- quantize_mx: scale X = 2^(floor(log2 amax) - (Emax - 1)) (twice the OCP sample algorithm's), 2^-127 for an
  all-zero group; data = cast(v / X). Emax 8 (e4m3fn), 15 (e5m2). No fp4 output.
- nc_matmul_mx: dst[i, j] = sum_k sum_q stat[k, i, q] * mov[k, j, q] after scaling each value by its group's
  scale; accumulate as nc_matmul.
"""

from __future__ import annotations

import numpy as np

from nkidev.emulator import costs
from nkidev.emulator import rules as R
from nkidev.emulator.context import warn
from nkidev.emulator.dtypes import NkiDType, to_f32
from nkidev.emulator.memory import acc_view, raw, read, rows, store_raw
from nkidev.emulator.opdef import declare
from nkidev.emulator.ops.tensor_engine import store_matmul
from nkidev.emulator.tensor import NkiTensor, free_size, partition_start, partitions

X4_TYPES = ("float8_e5m2_x4", "float8_e4m3fn_x4", "float4_e2m1fn_x4")
SCALE_TYPES = ("float8_e8m0fnu", "uint8")
EMAX = {"float8_e4m3fn_x4": 8, "float8_e5m2_x4": 15}
QUADRANT = 32
GROUP_PARTITIONS = 8


# ---------------------------------------------------------------- packing


def unpack(values: np.ndarray, dt: NkiDType) -> np.ndarray:
    """Packed elements (P, F) -> their values as fp32, (P, F, 4)."""
    values = np.ascontiguousarray(values).reshape(values.shape[0], -1)
    p, f = values.shape
    octets = values.view(np.uint8).reshape(p, f, dt.itemsize)
    if dt.itemsize == 4:  # four fp8 bytes
        return octets.view(dt.element).astype(np.float32)
    nibbles = np.stack([octets & 0xF, octets >> 4], axis=-1).reshape(p, f, 4)  # low nibble first
    return nibbles.astype(np.uint8).view(dt.element).astype(np.float32)


def pack(values: np.ndarray, dt: NkiDType) -> np.ndarray:
    """fp32 values (P, F, 4) -> packed elements (P, F), each value rounded to the element type."""
    p, f, _ = values.shape
    octets = values.astype(dt.element).view(np.uint8)
    if dt.itemsize == 4:
        return octets.reshape(p, f * 4).view(np.uint32)
    pairs = octets.reshape(p, f, 2, 2)
    return (pairs[..., 0] & 0xF | (pairs[..., 1] & 0xF) << 4).astype(np.uint8).reshape(p, f * 2).view(np.uint16)


def scale_partition(group: int) -> int:
    """Partition (relative to the scale view) of the scale row of data partitions 8g..8g+7."""
    return (group // 4) * QUADRANT + group % 4


def _scale_rows(p: int) -> list[int]:
    return [scale_partition(g) for g in range(p // GROUP_PARTITIONS)]


def read_scales(scale: NkiTensor, p: int, f: int) -> np.ndarray:
    """Scale factors 2^(byte - 127) of p data partitions x f packed columns, as (p // 8, f) fp32."""
    bytes_ = np.asarray(read(scale)).reshape(partitions(scale), -1).view(np.uint8)[_scale_rows(p), :f]
    return np.exp2(bytes_.astype(np.float32) - 127.0)


# ---------------------------------------------------------------- rules


def _scale_layout(data_name: str, scale_name: str, free_of):
    def check(a, ctx, engine):
        data, scale = getattr(a, data_name), getattr(a, scale_name)
        if not isinstance(scale, NkiTensor) or not isinstance(data, NkiTensor):
            return f"{scale_name} must be an SBUF tile", None
        if scale.storage.kind != "sbuf":
            return f"{scale_name} {scale.name!r} is in {scale.storage.kind.upper()}, must be in SBUF", None
        if scale.dtype.name not in SCALE_TYPES:
            return (
                f"{scale_name} has dtype {scale.dtype}, must be float8_e8m0fnu (or uint8)",
                "allocate the scale tile as nl.float8_e8m0fnu",
            )
        p = partitions(data)
        need = _scale_rows(p)[-1] + 1 if p >= GROUP_PARTITIONS else 1
        if partitions(scale) < need:
            return (
                f"{scale_name} {scale.shape} holds {partitions(scale)} partitions; {p} data partitions put scales up to "
                f"partition {need - 1} (the first 4 partitions of each 32-partition quadrant)",
                f"allocate the scale tile as ({p // GROUP_PARTITIONS if p <= QUADRANT else p}, F)",
            )
        if partition_start(scale) % QUADRANT not in (0, 4, 8, 12):
            return f"{scale_name} starts at partition {partition_start(scale)}; scales sit at offset 0, 4, 8 or 12 of a quadrant", None
        if free_size(scale) < free_of(a):
            return f"{scale_name} has {free_size(scale)} elements per partition, needs {free_of(a)}", None

    return R.custom("err_shape_mismatch", f"{scale_name} is an SBUF e8m0/uint8 tile in the MX scale layout", check)


def _quantize_check(a, ctx, engine):
    p = partitions(a.src)
    if p % QUADRANT or p > 128:
        return f"src has {p} partitions; quantize_mx needs a multiple of 32, at most 128", "pad the partition dim to 32"
    if free_size(a.src) % 4:
        return f"src has {free_size(a.src)} elements per partition, not a multiple of 4", None
    if partitions(a.dst) != p or free_size(a.dst) * 4 != free_size(a.src):
        return f"dst {a.dst.shape} must be [{p}, {free_size(a.src) // 4}] (four values per packed element)", None


QUANTIZE_MX = declare(
    "quantize_mx",
    "dst, src, dst_scale, name=None",
    ("vector",),
    "Quantize fp16/bf16 to MXFP8 data (x4-packed) and e8m0 scales, one scale per 8-partition x 4-value group (NeuronCore-v4).",
    semantics="X = 2^(floor(log2 max|group|) - (Emax - 1)) (2^-127 for an all-zero group); dst = fp8(src / X); "
    "scale row g at partition (g // 4) * 32 + g % 4 of dst_scale.",
    writes=("dst", "dst_scale"),
    tiles=("dst", "src"),
    rules=(
        R.in_memory("dst", ("sbuf",)),
        R.in_memory("src", ("sbuf",)),
        R.dtype_in("src", ("float16", "bfloat16")),
        R.dtype_in("dst", ("float8_e5m2_x4", "float8_e4m3fn_x4")),
        R.custom("err_shape_mismatch", "src P is a multiple of 32 (<= 128), F a multiple of 4; dst is [P, F // 4]", _quantize_check),
        _scale_layout("src", "dst_scale", lambda a: free_size(a.dst)),
    ),
    attrs=lambda a: {"dtype": a.src.dtype.name, "dst_dtype": a.dst.dtype.name},
    kind="compute",
    cost=costs.STREAMING,
)


@QUANTIZE_MX.semantics_impl
def _quantize_mx(a, ctx, engine):
    x = rows(a.src)
    p, f = x.shape[0], x.shape[1] // 4
    groups = x.reshape(p // GROUP_PARTITIONS, GROUP_PARTITIONS, f, 4)
    amax = np.abs(groups).max(axis=(1, 3))  # (p // 8, f)
    _, exp = np.frexp(amax)  # amax = m * 2^exp with m in [0.5, 1): floor(log2 amax) = exp - 1
    biased = np.where(amax > 0, (exp - 1) - (EMAX[a.dst.dtype.name] - 1) + 127, 0)
    biased = np.clip(biased, 0, 254).astype(np.uint8)
    scale = np.exp2(biased.astype(np.float32) - 127.0)
    q = groups / scale[:, None, :, None]
    store_raw(a.dst, pack(q.reshape(p, f, 4), a.dst.dtype))
    dst_scale = a.dst_scale
    current = np.array(np.asarray(read(dst_scale)).reshape(partitions(dst_scale), -1))
    current.view(np.uint8)[_scale_rows(p), :f] = biased  # other partitions keep what is there (packed scales)
    store_raw(dst_scale, current.reshape(dst_scale.shape))


# ---------------------------------------------------------------- nc_matmul_mx


def _mx_matmul_check(a, ctx, engine):
    s, m, d = a.stationary, a.moving, a.dst
    k = partitions(s)
    if partitions(m) != k:
        return f"stationary has {k} partitions, moving {partitions(m)}: the contraction dims must match", None
    if k % QUADRANT or k > 128:
        return f"contraction (partition) size {k} must be a multiple of 32, at most 128", None
    mm, n = free_size(s), free_size(m)
    if mm % 2 or mm > 128:
        return f"stationary free size {mm} must be even and at most 128", None
    fmax = 8192 if d.dtype.name == "bfloat16" else 4096
    if n > fmax:
        return f"moving free size {n} exceeds {fmax} for a {d.dtype} dst", None
    if partitions(d) != mm or free_size(d) != n:
        return f"dst {d.shape} must be [{mm}, {n}]", f"allocate the PSUM tile as ({mm}, {n})"
    if a.tile_position or a.tile_size:
        if not (a.tile_position and a.tile_size):
            return "tile_position and tile_size must both be set", "set both or neither"
        row, col = (int(v) for v in a.tile_size)
        start, start_col = (int(v) for v in a.tile_position)
        if col != 128 or row not in (32, 64, 128) or start_col != 0 or start % row or start >= 128 or k > row:
            return f"tile_size {a.tile_size} / tile_position {a.tile_position}: row tiling only (rows 32/64/128, column 128)", None


MX_RULES = (
    R.in_memory("stationary", ("sbuf",)),
    R.in_memory("moving", ("sbuf",)),
    R.in_memory("dst", ("psum",)),
    R.dtype_in("stationary", X4_TYPES, "err_matmul_dtype_mismatch"),
    R.dtype_in("moving", X4_TYPES, "err_matmul_dtype_mismatch"),
    R.dtype_in("dst", ("float32", "bfloat16"), "err_matmul_dtype_mismatch"),
    R.custom(
        "err_size_of_dimension_exceed_arch_limit",
        "K a multiple of 32 (<= 128) on both; stationary free even, <= 128; moving free <= 4096 (8192 bf16 dst); dst [M, N]",
        _mx_matmul_check,
    ),
    _scale_layout("stationary", "stationary_scale", lambda a: free_size(a.stationary)),
    _scale_layout("moving", "moving_scale", lambda a: free_size(a.moving)),
)


def _mx_attrs(a) -> dict:
    return {
        "K": partitions(a.stationary) * 4,
        "M": free_size(a.stationary),
        "N": free_size(a.moving),
        "dtype": a.stationary.dtype.name,
        "moving_dtype": a.moving.dtype.name,
        "dst_dtype": a.dst.dtype.name,
        "accumulate": a.accumulate,
        "tile_size": tuple(a.tile_size or ()),
    }


NC_MATMUL_MX = declare(
    "nc_matmul_mx",
    "dst, stationary, moving, stationary_scale, moving_scale, tile_position=None, tile_size=None, accumulate=None, name=None",
    ("tensor",),
    "MXFP8/MXFP4 matmul with integrated dequantization: contraction over partitions and the 4 values of each x4 element (NeuronCore-v4).",
    semantics="dst[i, j] (+)= sum over k, q of stationary[k, i, q] * moving[k, j, q], each value times 2^(scale - 127) of "
    "its 8-partition x 4-value group; accumulate as nc_matmul.",
    tiles=("dst", "stationary", "moving"),
    rules=MX_RULES,
    attrs=_mx_attrs,
    flops=lambda a: 2 * partitions(a.stationary) * 4 * free_size(a.stationary) * free_size(a.moving),
    kind="matmul",
    cost=costs.MATMUL,
    load_cost=costs.LOAD_STATIONARY,
)


def _dequantized(data: NkiTensor, scale: NkiTensor) -> np.ndarray:
    k, f = partitions(data), free_size(data)
    values = unpack(np.asarray(read(data)), data.dtype)  # (k, f, 4)
    factors = np.repeat(read_scales(scale, k, f), GROUP_PARTITIONS, axis=0)  # (k, f)
    return values * factors[:, :, None]


@NC_MATMUL_MX.semantics_impl
def _nc_matmul_mx(a, ctx, engine):
    s = _dequantized(a.stationary, a.stationary_scale)
    m = _dequantized(a.moving, a.moving_scale)
    res = np.einsum("kiq,kjq->ij", s, m, dtype=np.float32, optimize=True)
    d = a.dst
    mode = a.accumulate
    if d.dyn is not None:  # an .indirect() dst scatters: no accumulation-group tracking through it
        cur = to_f32(np.asarray(raw(d)), d.dtype).reshape(res.shape)
        store_matmul(d, cur + res if mode else res)
        return
    mask = acc_view(d)
    if mode is None:
        mode = True if mask.all() else (False if not mask.any() else None)
    if mode is True and not mask.all():
        warn(
            "warn_accumulate_uninitialized_psum",
            f"nc_matmul_mx accumulate=True into PSUM {d.name!r} that no matmul initialized; undefined on hardware",
        )
    shape = (free_size(a.stationary), free_size(a.moving))
    if mode is not False:
        cur = to_f32(np.asarray(raw(d)), d.dtype).reshape(shape)
        res = cur + res if mode else np.where(mask.reshape(shape), cur + res, res)
    store_matmul(d, res)
    mask[...] = True
