"""Hardware generations as data: one TOML file per target, loaded into frozen dataclasses.

Nothing outside this package hard-codes a hardware number: the emulator's rules, the cost
model and the docs all read a `Target` from `get_target()`.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, fields
from functools import cache
from pathlib import Path

from nkidev.errors import NkiUsageError

_DIR = Path(__file__).parent
TARGET_NAMES = ("trn1", "trn2", "trn3")
DEFAULT_TARGET = "trn2"
TARGET_ENV = "NEURON_PLATFORM_TARGET_OVERRIDE"


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

    @property
    def peak_flops(self) -> float:
        """bf16 FLOP/s of one NeuronCore: rows x cols MACs x 2 FLOP x clock."""
        return self.rows * self.cols * 2 * self.clock_ghz * 1e9


@dataclass(frozen=True)
class ComputeEngine:
    clock_ghz: float
    lanes: int
    elems_per_cycle_16bit: int
    elems_per_cycle_other: int
    transpose_max: int = 0
    start_cycles: int = 0


@dataclass(frozen=True)
class Engines:
    min_ii_cycles: int
    static_overhead_cycles: int
    dynamic_min_ii_cycles: int
    semaphore_sync_ns: float
    exclusive_sbuf_engines: tuple[str, ...] = ()  # engines that cannot access SBUF at the same time
    exclusive_psum_engines: tuple[str, ...] = ()  # engines that cannot access PSUM at the same time


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

    @property
    def ddr_bandwidth_bytes_per_s(self) -> float:
        """All DMA engines of one NeuronCore at their theoretical rate (neuron-explorer's dma_ddr_bandwidth)."""
        return self.engines * self.theoretical_bytes_per_s_per_engine


@dataclass(frozen=True)
class Hbm:
    bytes_per_s_per_nc: float
    bytes_per_s_per_stack: float


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
    vector_engine: ComputeEngine
    scalar_engine: ComputeEngine
    gpsimd_engine: ComputeEngine
    engines: Engines
    dma: Dma
    hbm: Hbm
    source: str

    @property
    def psum_bank_fmax(self) -> int:
        """fp32 elements per partition in one PSUM bank (512)."""
        return self.psum.bank_bytes // 4

    def engine(self, name: str) -> ComputeEngine:
        return {"vector": self.vector_engine, "scalar": self.scalar_engine, "gpsimd": self.gpsimd_engine}[name]


_SECTIONS = {
    "sbuf": Sbuf,
    "psum": Psum,
    "tensor_engine": TensorEngine,
    "vector_engine": ComputeEngine,
    "scalar_engine": ComputeEngine,
    "gpsimd_engine": ComputeEngine,
    "engines": Engines,
    "dma": Dma,
    "hbm": Hbm,
}


def _build(raw: dict, source: str) -> Target:
    kwargs = {k: v for k, v in raw.items() if k not in _SECTIONS}
    kwargs["aliases"] = tuple(kwargs.get("aliases", ()))
    for section, cls in _SECTIONS.items():
        known = {f.name for f in fields(cls)}
        kwargs[section] = cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in raw[section].items() if k in known})
    return Target(source=source, **kwargs)


def resolve_target_name(name: str | None = None) -> str:
    """Map trn1/inf2/gen2, trn2/gen3, trn3/gen4 (or the env override, or the default) to a target name."""
    if name is None:
        name = os.environ.get(TARGET_ENV) or DEFAULT_TARGET
    key = str(name).strip().lower()
    for target in TARGET_NAMES:
        if key == target or key in _aliases(target):
            return target
    raise NkiUsageError(
        "err_unknown_target",
        f"unknown target {name!r}",
        f"use one of trn1 (gen2, inf2), trn2 (gen3) or trn3 (gen4); {TARGET_ENV} takes the same names",
    )


@cache
def _aliases(target: str) -> tuple[str, ...]:
    with open(_DIR / f"{target}.toml", "rb") as f:
        return tuple(tomllib.load(f).get("aliases", ()))


@cache
def _load(target: str) -> Target:
    path = _DIR / f"{target}.toml"
    with open(path, "rb") as f:
        return _build(tomllib.load(f), str(path))


def get_target(name: str | Target | None = None) -> Target:
    """The hardware spec for `name` (trn1|trn2|trn3 or a gen alias); None reads the env override."""
    if isinstance(name, Target):
        return name
    return _load(resolve_target_name(name))


def load_target_file(path: str | os.PathLike) -> Target:
    """A custom spec (same keys as the bundled TOML files), for what-if studies."""
    with open(path, "rb") as f:
        return _build(tomllib.load(f), str(path))
