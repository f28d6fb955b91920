"""Hardware generations as data: one TOML file per target, loaded into frozen dataclasses.

Nothing outside this package hard-codes a hardware number or asks which NeuronCore version it runs
on: the emulator's rules, the cost model and the docs read a `Target` from `get_target()`, and what a
generation can do is its `[features]` section. Adding a generation is adding one TOML file, here or
in a directory listed in `NKIDEV_HARDWARE_PATH`. The loader is strict: a key the dataclasses do not
know, or one they need and the file lacks, is a named error that names the file and the key.
"""

from __future__ import annotations

import os
import tomllib
import typing
from contextvars import ContextVar
from dataclasses import dataclass, fields
from functools import cache
from pathlib import Path

from nkidev.errors import NkiUsageError

_DIR = Path(__file__).parent
DEFAULT_TARGET = "trn2"
TARGET_ENV = "NEURON_PLATFORM_TARGET_OVERRIDE"
PATH_ENV = "NKIDEV_HARDWARE_PATH"  # extra directories of <target>.toml files (os.pathsep-separated)

# `nkidev.emulate(target=...)` sets this for the calling thread (a ContextVar, so threads never see each
# other's choice and nothing is written to os.environ).
target_override: ContextVar[str | None] = ContextVar("nkidev_target_override", default=None)


@dataclass(frozen=True)
class Sbuf:
    partitions: int
    bytes_per_partition: int
    usable_bytes_per_partition: int


@dataclass(frozen=True)
class Psum:
    bytes_per_partition: int
    banks: int
    bank_bytes: int


@dataclass(frozen=True)
class TensorEngine:
    clock_ghz: float
    rows: int
    cols: int
    stationary_fmax: int
    moving_fmax_fp32_dst: int
    moving_fmax_bf16_dst: int
    fp32_cycle_factor: float
    fp8_cycle_factor: float
    load_stationary_factor: float
    mm_init_latency_cycles: int
    transpose_engine_max: int
    throttle_start_utilization: float  # dI/dt limit: share of full rate a burst starts at (1.0: no throttle)
    throttle_ramp_ns: float  # time the limit takes to ramp from the start utilization to full
    throttle_window_ns: float  # utilization below the start utilization over this window re-engages the limit

    @property
    def peak_flops(self) -> float:
        """bf16 FLOP/s of one NeuronCore: rows x cols MACs x 2 FLOP x clock."""
        return self.rows * self.cols * 2 * self.clock_ghz * 1e9


@dataclass(frozen=True)
class ComputeEngine:
    """A Vector/Scalar/GpSimd engine. `elems_per_cycle_*` are the architecture table's data-path widths (peak
    element throughput, read by the roofline); the `*_rate` numbers are the throughput of each documented
    performance mode as a multiple of the per-instruction cost formulas (costs.py), per dtype class."""

    clock_ghz: float
    lanes: int
    elems_per_cycle_16bit: int
    elems_per_cycle_other: int
    mode_dtypes: tuple[str, ...]  # dtypes the performance modes apply to (every operand must be one)
    copy_mode_rate: float  # tensor_copy / tensor_scalar: mode dtypes, every operand in SBUF and contiguous
    copy_mode_rate_partial: float  # mode dtypes, in SBUF but strided, or contiguous with one side in PSUM
    tensor_tensor_mode_rate: float  # tensor_tensor: both inputs in SBUF, every operand a mode dtype
    other_dtype_rate: float  # every other case (fp32, integers, ...): the formulas as written


@dataclass(frozen=True)
class VectorEngine(ComputeEngine):
    transpose_max: int  # largest square block VectorE transposes


@dataclass(frozen=True)
class GpSimdEngine(ComputeEngine):
    start_cycles: int  # fixed start-up cost of a GpSimd instruction


@dataclass(frozen=True)
class Engines:
    min_ii_cycles: int
    static_overhead_cycles: int
    dynamic_min_ii_cycles: int
    semaphore_sync_ns: float
    exclusive_sbuf_engines: tuple[str, ...]  # engines that cannot access SBUF at the same time
    exclusive_psum_engines: tuple[str, ...]  # engines that cannot access PSUM at the same time
    schedule_window: int  # the compiler's list scheduler: how many of an engine's next instructions it may reorder


@dataclass(frozen=True)
class Dma:
    engines: int
    queues_per_engine: int
    bytes_per_ns_per_engine: float  # practical throughput of one DMA engine
    theoretical_bytes_per_s_per_engine: float
    peak_bytes_per_s: float
    fixed_cost_ns: float  # latency from trigger to first packet (descriptor setup, semaphore-to-start)
    hwdge_cost_ns: float  # issue cost of a hardware-DGE DMA instruction
    swdge_cost_ns: float  # issue cost of a software-DGE DMA (descriptors written by GpSimd)
    trigger_ns: float  # issue cost of a static (compiler-built) DMA on its queue
    descriptor_overhead_ns: float  # per-descriptor processing cost in a DMA engine
    hbm_efficiency: float  # share of bytes_per_ns_per_engine reached when one side is HBM
    partitions_per_engine: int  # SBUF partitions served by one DMA engine
    min_efficient_bytes_per_partition: int
    saturating_bytes_per_partition: int
    overhead_bound_bytes_per_partition: int
    transpose_efficiency: float
    transpose_onchip_efficiency: float
    # share of a spilled SBUF tile's bytes the compiler moves each way (costmodel/spills.py); 0: spills cost no time
    spill_traffic_fraction: float

    @property
    def ddr_bandwidth_bytes_per_s(self) -> float:
        """All DMA engines of one NeuronCore at their theoretical rate (neuron-explorer's dma_ddr_bandwidth)."""
        return self.engines * self.theoretical_bytes_per_s_per_engine


@dataclass(frozen=True)
class Hbm:
    bytes_per_s_per_nc: float
    bytes_per_s_per_stack: float
    capacity_bytes_per_chip: int  # the emulator refuses live HBM tensors beyond one NeuronCore's share of it


@dataclass(frozen=True)
class Features:
    """What a generation can do: every capability the emulator and cost model used to infer from nc_version."""

    missing_instructions: tuple[str, ...]  # nki.isa ops this generation does not have
    missing_alu_ops: tuple[str, ...]  # ALU operators (nl.abs_max, ...) it does not have
    hwdge: bool  # hardware descriptor generation (dge_mode=hwdge)
    matmul_input_dtypes: tuple[str, ...]  # nc_matmul stationary/moving dtypes
    matmul_psum_dtypes: tuple[str, ...]  # nc_matmul dst dtypes
    matmul_tile_sizes: tuple[int, ...]  # legal tile_size rows/columns of a tiled nc_matmul
    matmul_double_row: bool  # perf_mode=double_row (fp8)
    matmul_output_within_bank: bool  # one nc_matmul writes at most one 2 KiB PSUM bank per partition
    matmul_transpose_passthrough: bool  # nc_matmul(is_transpose=True) moves bits, no arithmetic
    activation_scalar_bias: bool  # activation bias may be a Python number (else a [P, 1] vector)
    gpsimd_rng: bool  # nisa.rng may run on GpSimd
    gpsimd_activation: bool  # nisa.activation / activate2 may run on GpSimd (engine=, NKI 0.7)
    tensor_indirection: bool  # NkiTensor.indirect() (gather/scatter views of free-dim offsets)
    vector_rng_state: bool  # rand_set_state / rand_get_state may run on VectorE (24 uint32 XORWOW words per lane)
    scalar_tensor_copy: bool  # nisa.tensor_copy may run on ScalarE
    scalar_tensor_scalar_ops: tuple[str, ...]  # op0[+op1] pairs tensor_scalar may run on ScalarE ("*": all)


@dataclass(frozen=True)
class Target:
    name: str
    nc_version: int
    aliases: tuple[str, ...]
    instance_type: str
    neuroncores_per_chip: int
    sbuf: Sbuf
    psum: Psum
    tensor_engine: TensorEngine
    vector_engine: VectorEngine
    scalar_engine: ComputeEngine
    gpsimd_engine: GpSimdEngine
    engines: Engines
    dma: Dma
    hbm: Hbm
    features: Features
    source: str  # the TOML file it was loaded from
    # The model's free constants: ("section.key", low, high) for each number `nkidev calibrate` may fit.
    free_constants: tuple[tuple[str, float, float], ...] = ()
    calibration: str = ""  # the calibration file applied on top of `source` ("" when none)

    @property
    def hbm_bytes_per_nc(self) -> int:
        """One NeuronCore's share of the chip's HBM: the cap on live HBM tensors of one program."""
        return self.hbm.capacity_bytes_per_chip // max(1, self.neuroncores_per_chip)

    @property
    def psum_bank_fmax(self) -> int:
        """fp32 elements per partition in one PSUM bank (512)."""
        return self.psum.bank_bytes // 4

    def engine(self, name: str) -> ComputeEngine:
        return {"vector": self.vector_engine, "scalar": self.scalar_engine, "gpsimd": self.gpsimd_engine}[name]

    def has_instruction(self, op: str) -> bool:
        return op not in self.features.missing_instructions

    def has_alu_op(self, op: str) -> bool:
        return op not in self.features.missing_alu_ops

    def scalar_tensor_scalar(self, op0: str, op1: str | None) -> bool:
        allowed = self.features.scalar_tensor_scalar_ops
        return "*" in allowed or (op0 if op1 is None else f"{op0}+{op1}") in allowed


_CLASSES = {
    "sbuf": Sbuf,
    "psum": Psum,
    "tensor_engine": TensorEngine,
    "vector_engine": VectorEngine,
    "scalar_engine": ComputeEngine,
    "gpsimd_engine": GpSimdEngine,
    "engines": Engines,
    "dma": Dma,
    "hbm": Hbm,
    "features": Features,
}
_TOP = ("name", "nc_version", "aliases", "instance_type", "neuroncores_per_chip")
FREE_SECTION = "calibration"  # [calibration] "section.key" = [low, high]: the constants a calibration may fit


def _bad(path, message: str) -> NkiUsageError:
    return NkiUsageError(
        "err_bad_hardware_file",
        f"{path}: {message}",
        "every key of a hardware file is required and must be one the loader knows; compare with src/nkidev/hardware/trn2.toml",
    )


def _bad_calibration(path, message: str) -> NkiUsageError:
    return NkiUsageError(
        "err_bad_calibration_file",
        f"{path}: {message}",
        "a calibration sets numbers the target file has (overrides.SECTION.KEY = number); rerun `nkidev calibrate` for a fresh one",
    )


def _value(path, where: str, value, kind):
    """Check one TOML value against the dataclass field's annotation (int, float, bool, str, tuples)."""
    origin = typing.get_origin(kind)
    if origin is tuple:
        if not isinstance(value, list):
            raise _bad(path, f"{where} must be a list")
        item = typing.get_args(kind)[0]
        return tuple(_value(path, where, v, item) for v in value)
    ok = {
        bool: isinstance(value, bool),
        str: isinstance(value, str),
        int: isinstance(value, int) and not isinstance(value, bool),
        float: isinstance(value, int | float) and not isinstance(value, bool),
    }.get(kind)
    if not ok:
        raise _bad(path, f"{where} = {value!r} is not a {getattr(kind, '__name__', kind)}")
    return float(value) if kind is float else value


@cache
def _hints(cls) -> dict:
    return typing.get_type_hints(cls)  # evaluates the string annotations: once per class, not per file read


def _section(path, name: str, raw, cls) -> object:
    if not isinstance(raw, dict):
        raise _bad(path, f"[{name}] is missing or not a table")
    hints = _hints(cls)
    known = [f.name for f in fields(cls)]
    unknown = sorted(set(raw) - set(known))
    if unknown:
        raise _bad(path, f"unknown key [{name}] {unknown[0]}" + (f" (and {len(unknown) - 1} more)" if unknown[1:] else ""))
    missing = [k for k in known if k not in raw]
    if missing:
        raise _bad(path, f"missing key [{name}] {missing[0]}" + (f" (and {len(missing) - 1} more)" if missing[1:] else ""))
    values = {k: _value(path, f"[{name}] {k}", raw[k], hints[k]) for k in known}
    for k, v in values.items():
        _check_share(path, f"[{name}] {k}", k, v)
    return cls(**values)


def _check_share(path, where: str, key: str, value) -> None:
    """Shares of a rate are fractions by their name: `*_efficiency` in (0, 1] (0 would divide by zero, above 1
    beats the rate it is a share of) and `*_fraction` in [0, 1] (0: off). Out of range is an error rather than a
    silent clamp, so a typo in a calibration file cannot quietly change a prediction."""
    if key.endswith("_efficiency") and not 0 < value <= 1:
        raise _bad(path, f"{where} = {value!r} must be a share in (0, 1]")
    if key.endswith("_fraction") and not 0 <= value <= 1:
        raise _bad(path, f"{where} = {value!r} must be a share in [0, 1]")


def _build(raw: dict, source: str, calibration: str = "") -> Target:
    unknown = sorted(set(raw) - set(_TOP) - set(_CLASSES) - {FREE_SECTION})
    if unknown:
        raise _bad(source, f"unknown key {unknown[0]}")
    missing = [k for k in (*_TOP, *_CLASSES, FREE_SECTION) if k not in raw]
    if missing:
        raise _bad(source, f"missing key {missing[0]}")
    hints = _hints(Target)
    top = {k: _value(source, k, raw[k], hints[k]) for k in _TOP}
    sections = {name: _section(source, name, raw[name], cls) for name, cls in _CLASSES.items()}
    free = _free_constants(source, raw[FREE_SECTION], sections)
    return Target(source=source, **top, **sections, free_constants=free, calibration=calibration)


def _free_constants(path, raw, sections: dict) -> tuple[tuple[str, float, float], ...]:
    """[calibration] "section.key" = [low, high]: each names a number of the file, and its value lies in the range."""
    if not isinstance(raw, dict):
        raise _bad(path, f"[{FREE_SECTION}] is missing or not a table")
    out = []
    for key, bounds in raw.items():
        value = constant_value(sections, key)
        if value is None:
            raise _bad(path, f'[{FREE_SECTION}] {key!r} names no number of the file (write it as "section.key")')
        low, high = _value(path, f"[{FREE_SECTION}] {key}", bounds, tuple[float, ...]) + (None,) * (2 - len(bounds))
        if len(bounds) != 2 or not 0 < low <= value <= high:
            raise _bad(path, f"[{FREE_SECTION}] {key} = {bounds!r} must be [low, high] with 0 < low <= {value} <= high")
        out.append((key, low, high))
    return tuple(out)


def constant_value(sections, key: str) -> float | None:
    """The number at "section.key" of a Target (or of its sections by name), or None if there is none."""
    section, _, field_name = key.partition(".")
    obj = sections.get(section) if isinstance(sections, dict) else getattr(sections, section, None)
    value = getattr(obj, field_name, None) if obj is not None and field_name else None
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def with_overrides(target: Target, overrides: dict[str, dict], calibration: str) -> Target:
    """`target` with `overrides` ({section: {key: value}}) applied through the same strict loader as the files:
    a section or key the target does not have, or a value of the wrong type, is err_bad_calibration_file naming
    `calibration` (the file the overrides come from)."""
    raw = _read(Path(target.source))
    for section, values in overrides.items():
        if section not in _CLASSES or section == "features" or not isinstance(values, dict):
            raise _bad_calibration(calibration, f"overrides.{section} is not a section of numbers a calibration may set")
        for key, value in values.items():
            if key not in raw[section]:
                raise _bad_calibration(calibration, f"unknown key overrides.{section}.{key}")
            raw[section][key] = value
    try:
        return _build(raw, target.source, calibration=str(calibration))
    except NkiUsageError as e:
        raise _bad_calibration(calibration, e.message.split(": ", 1)[-1]) from None


# ---------------------------------------------------------------- finding targets


def _dirs() -> tuple[Path, ...]:
    extra = [Path(p) for p in os.environ.get(PATH_ENV, "").split(os.pathsep) if p.strip()]
    return (_DIR, *extra)


@cache
def _catalog(dirs: tuple[Path, ...]) -> dict[str, tuple[str, Path]]:
    """alias (lower case) -> (target name, file) for every <name>.toml in `dirs` (later dirs cannot shadow)."""
    out: dict[str, tuple[str, Path]] = {}
    for directory in dirs:
        for path in sorted(directory.glob("*.toml")) if directory.is_dir() else ():
            raw = _read(path)
            name = raw.get("name")
            if name != path.stem:
                raise _bad(path, f"name = {name!r} must equal the file name {path.stem!r}")
            for alias in (name, *raw.get("aliases", ())):
                out.setdefault(str(alias).lower(), (name, path))
    return out


def _read(path: Path) -> dict:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise _bad(path, f"cannot be read: {e}") from None


def target_names() -> tuple[str, ...]:
    """Every known target, bundled ones first (trn1, trn2, trn3, then any from NKIDEV_HARDWARE_PATH)."""
    return tuple(dict.fromkeys(name for name, _ in _catalog(_dirs()).values()))


TARGET_NAMES = tuple(name for name, path in dict.fromkeys(_catalog((_DIR,)).values()))  # the bundled targets


def default_target_name() -> str:
    """`emulate(target=...)` for this thread, else $NEURON_PLATFORM_TARGET_OVERRIDE, else trn2."""
    return target_override.get() or os.environ.get(TARGET_ENV) or DEFAULT_TARGET


def resolve_target_name(name: str | None = None) -> str:
    """The target a name or alias (trn1/inf2/gen2, trn2/gen3, trn3/gen4, ...) means; None: the default."""
    if name is None:
        name = default_target_name()
    found = _catalog(_dirs()).get(str(name).strip().lower())
    if found is None:
        known = ", ".join(f"{t} ({', '.join(a for a in get_target(t).aliases if a != t) or 'no aliases'})" for t in target_names())
        raise NkiUsageError("err_unknown_target", f"unknown target {name!r}", f"use one of {known}; {TARGET_ENV} takes the same names")
    return found[0]


@cache
def _load(path: Path) -> Target:
    return _build(_read(path), str(path))


def get_target(name: str | Target | None = None) -> Target:
    """The hardware spec for `name` (a target name or alias); None means the default target."""
    if isinstance(name, Target):
        return name
    target = resolve_target_name(name)
    return _load(_catalog(_dirs())[target][1])


def load_target_file(path: str | os.PathLike) -> Target:
    """A custom spec (same keys as the bundled TOML files), for what-if studies."""
    return _build(_read(Path(path)), str(path))


def target_for_instance(instance_type: str | None) -> Target | None:
    """The target whose instance type (or name) prefixes `instance_type`, e.g. 'trn2.48xlarge' -> trn2."""
    kind = (instance_type or "").lower()
    for name in target_names():
        t = get_target(name)
        keys = {t.instance_type.split(".")[0].lower(), *(a.lower() for a in t.aliases)}
        if any(kind.startswith(k) for k in keys if k):
            return t
    return None


__all__ = [
    "DEFAULT_TARGET",
    "TARGET_ENV",
    "TARGET_NAMES",
    "Target",
    "get_target",
    "constant_value",
    "load_target_file",
    "resolve_target_name",
    "target_names",
    "with_overrides",
]
