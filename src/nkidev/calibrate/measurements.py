"""Measured kernel times to calibrate against, and the kernel each one re-simulates.

A measurement comes from
  - a profile directory (neuron-explorer's Parquet tables: `Summary.total_time` in seconds) that carries
    `nkidev-kernel.json` = {"spec": "FILE::KERNEL", "case": N, "target": "trn2"} — `nkidev profile` (with or
    without --hardware) writes it; for a capture made elsewhere, write it by hand next to the tables;
  - or a JSON summary file: one object, or a list of them, {"kernel": "FILE::KERNEL", "case": N,
    "target": "trn2", "total_time_ns": T} (also "label", "progression");
  - or a published-measurement set (TOML, `[[measurement]]` rows: see examples/fidelity/measurements.toml),
    optionally only the rows of one `split`.
A relative FILE is looked up next to the profile (or summary), then in the working directory.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pyarrow.parquet as pq

from nkidev.errors import NkiUsageError
from nkidev.hardware import resolve_target_name, target_for_instance
from nkidev.profile.schema import KERNEL_FILE


@dataclass(frozen=True)
class Measurement:
    label: str  # where it came from (profile directory, summary file[index], or a published source)
    spec: str  # FILE::KERNEL (FILE absolute once resolved)
    case: int  # index into the task file's cases()
    target: str
    measured_ns: float
    progression: str = ""  # rows of one progression are ranked against each other (Kendall tau)
    order: int = 0  # published position in its progression (1 = first)
    split: str = ""  # calibration | held-out (published sets)
    source: str = ""  # URL and section of a published number
    # what the source's profile shows besides the total (published sets, optional): key of PROFILE_KEYS -> value
    profile: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def _failed(message: str, fix: str | None = None) -> NkiUsageError:
    return NkiUsageError(
        "err_calibration_failed",
        message,
        fix or "a profile must carry nkidev-kernel.json ({'spec': 'FILE::KERNEL', 'case': N}); a summary needs kernel, case, total_time_ns",
    )


def _resolve_spec(spec: str, base: Path) -> str:
    path, sep, name = spec.partition("::")
    if not sep or not path:
        raise _failed(f"{base}: kernel {spec!r} is not FILE::KERNEL")
    for candidate in (Path(path), base / path, Path.cwd() / path):
        if candidate.is_file():
            return f"{candidate.resolve()}::{name}"
    raise _failed(f"{base}: the kernel file {path} does not exist", "copy the kernel file next to the profile, or fix the path in it")


def _case(value, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _failed(f"{where}: case {value!r} is not a case index (0 or more)")
    return value


def _summary_seconds(directory: Path) -> float:
    files = sorted(directory.glob("Summary.parquet")) or sorted(directory.glob("Summary_*.parquet"))
    if not files:
        raise _failed(f"{directory}: no Summary.parquet (not a neuron-explorer profile directory)")
    try:
        value = pq.read_table(files[0], columns=["total_time"]).column("total_time")[0].as_py()
    except (OSError, KeyError, IndexError, ValueError) as e:
        raise _failed(f"{files[0]}: no Summary.total_time ({e})") from None
    if not isinstance(value, int | float) or not value > 0:
        raise _failed(f"{files[0]}: Summary.total_time = {value!r} is not a positive time")
    return float(value)


def _profile_target(directory: Path, declared: str | None) -> str:
    if declared:
        return resolve_target_name(declared)
    files = sorted(directory.glob("Metadata*.parquet"))
    if files:
        table = pq.read_table(files[0])
        if "instance_type" in table.column_names:
            found = target_for_instance(table.column("instance_type")[0].as_py())
            if found is not None:
                return found.name
    raise _failed(f"{directory}: the target is not recorded", 'add "target": "trn2" to nkidev-kernel.json')


def from_profile(directory: Path) -> Measurement:
    info_path = directory / KERNEL_FILE
    if not info_path.is_file():
        raise _failed(f"{directory}: no {KERNEL_FILE}: the profile does not say which kernel it measured")
    try:
        info = json.loads(info_path.read_text())
    except (OSError, ValueError) as e:
        raise _failed(f"{info_path}: not JSON ({e})") from None
    if not isinstance(info, dict) or not isinstance(info.get("spec"), str):
        raise _failed(f'{info_path}: no "spec": "FILE::KERNEL"')
    return Measurement(
        label=str(directory),
        spec=_resolve_spec(info["spec"], directory),
        case=_case(info.get("case", 0), str(info_path)),
        target=_profile_target(directory, info.get("target")),
        measured_ns=_summary_seconds(directory) * 1e9,
        progression=str(info.get("progression", "")),
    )


def from_summary(path: Path) -> list[Measurement]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise _failed(f"{path}: not a JSON summary ({e})") from None
    rows = data if isinstance(data, list) else [data]
    out = []
    for i, row in enumerate(rows):
        where = f"{path}[{i}]" if isinstance(data, list) else str(path)
        if not isinstance(row, dict) or not isinstance(row.get("kernel"), str):
            raise _failed(f'{where}: no "kernel": "FILE::KERNEL"')
        time_ns = row.get("total_time_ns")
        if not isinstance(time_ns, int | float) or isinstance(time_ns, bool) or not time_ns > 0:
            raise _failed(f"{where}: total_time_ns = {time_ns!r} is not a positive time")
        if not isinstance(row.get("target"), str):
            raise _failed(f'{where}: no "target"')
        out.append(
            Measurement(
                label=str(row.get("label") or where),
                spec=_resolve_spec(row["kernel"], path.parent),
                case=_case(row.get("case", 0), where),
                target=resolve_target_name(row["target"]),
                measured_ns=float(time_ns),
                progression=str(row.get("progression", "")),
            )
        )
    return out


PUBLISHED_KEYS = {
    "progression": str,
    "order": int,
    "kernel": str,
    "case": int,
    "target": str,
    "dtype": str,
    "shapes": str,
    "measured_ns": float,
    "split": str,
    "source": str,
    "section": str,
    "note": str,
}
# Optional: components of the published profile, where the source prints them (compared by
# bench/fidelity_components.py): DMA active time (union of the DMA packets), TensorE active time, bytes the DMA
# packets moved, and how many descriptors (one contiguous run each) those transfers had.
PROFILE_KEYS = ("dma_active_ns", "te_active_ns", "dma_bytes", "dma_descriptors")
SPLITS = ("calibration", "held-out")


def from_published(path: Path, split: str | None = None) -> list[Measurement]:
    """The rows of a published-measurement set (every key of PUBLISHED_KEYS required, those of PROFILE_KEYS
    optional; unknown keys are errors)."""
    try:
        raw = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise _failed(f"{path}: not a measurement set ({e})") from None
    rows = raw.get("measurement")
    if set(raw) != {"measurement"} or not isinstance(rows, list):
        raise _failed(f"{path}: a measurement set holds only [[measurement]] rows", "see examples/fidelity/measurements.toml")
    out = []
    for i, row in enumerate(rows):
        where = f"{path} measurement {i + 1}"
        unknown, missing = sorted(set(row) - set(PUBLISHED_KEYS) - set(PROFILE_KEYS)), sorted(set(PUBLISHED_KEYS) - set(row))
        if unknown or missing:
            raise _failed(
                f"{where}: {'unknown' if unknown else 'missing'} key {(unknown or missing)[0]}", "see examples/fidelity/measurements.toml"
            )
        for key, kind in PUBLISHED_KEYS.items():
            ok = isinstance(row[key], int | float) and not isinstance(row[key], bool) if kind is float else isinstance(row[key], kind)
            if not ok:
                raise _failed(f"{where}: {key} = {row[key]!r} is not a {kind.__name__}")
        for key in PROFILE_KEYS:
            value = row.get(key)
            if value is not None and (not isinstance(value, int | float) or isinstance(value, bool) or not value > 0):
                raise _failed(f"{where}: {key} = {value!r} is not a positive number")
        if row["split"] not in SPLITS:
            raise _failed(f"{where}: split = {row['split']!r}", f"use one of {', '.join(SPLITS)}")
        if split is not None and row["split"] != split:
            continue
        out.append(
            Measurement(
                label=f"{row['progression']} #{row['order']}",
                spec=_resolve_spec(row["kernel"], path.parent),
                case=_case(row["case"], where),
                target=resolve_target_name(row["target"]),
                measured_ns=float(row["measured_ns"]),
                progression=row["progression"],
                order=row["order"],
                split=row["split"],
                source=f'{row["source"]} "{row["section"]}"',
                profile={k: float(row[k]) for k in PROFILE_KEYS if k in row},
            )
        )
    return out


def read(paths: list[str | Path], split: str | None = None) -> list[Measurement]:
    """Every measurement of the given profile directories, JSON summaries and published sets (`split`: only
    those rows of a published set), in order."""
    if split is not None and split not in SPLITS:  # a typo would otherwise read as "no measurements given"
        raise NkiUsageError("err_invalid_argument", f"--split {split!r}", f"use one of {', '.join(SPLITS)}")
    out: list[Measurement] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.append(from_profile(p))
        elif p.is_file() and p.suffix == ".json":
            out.extend(from_summary(p))
        elif p.is_file() and p.suffix == ".toml":
            out.extend(from_published(p, split))
        else:
            raise _failed(f"{p}: not a profile directory, .json summary or .toml set", "pass profile directories or JSON summary files")
    if not out:
        raise _failed("no measurements given", "pass one or more profile directories or JSON summaries")
    return out
