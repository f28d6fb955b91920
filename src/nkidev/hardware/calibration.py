"""Calibration files: fitted values of a target's free constants, applied on top of its TOML.

A calibration is a small TOML file written by `nkidev calibrate`:

    target = "trn2"
    [provenance]            # what it was fitted to, when, and how well it predicts what it left out
    ...
    [overrides.dma]
    fixed_cost_ns = 1100.0

It is applied by the hardware loader (`with_overrides`), so it is exactly as strict as the target files: a
section or key the target does not have is err_bad_calibration_file naming the file and the key. Which file
applies: `calibration=` (the CLI's --calibration) first, then $NKIDEV_CALIBRATION, then `calibration = "..."`
in the user config ($NKIDEV_CONFIG, else $XDG_CONFIG_HOME/nkidev/config.toml). "default" names the bundled
calibration of the target (hardware/calibrations/<target>.toml) where nkidev ships one; "none" applies
nothing. A calibration from the environment or the config is for one target and is not applied to another;
one passed explicitly must match.
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from nkidev.atomic import write_bytes
from nkidev.errors import NkiUsageError
from nkidev.hardware import Target, get_target, with_overrides

CALIBRATION_ENV = "NKIDEV_CALIBRATION"
CONFIG_ENV = "NKIDEV_CONFIG"
BUNDLED_DIR = Path(__file__).parent / "calibrations"
_KEYS = ("target", "provenance", "overrides")


@dataclass(frozen=True)
class Calibration:
    path: str
    target: str
    overrides: dict[str, dict[str, float]]
    provenance: dict = field(default_factory=dict)


def _bad(path, message: str) -> NkiUsageError:
    return NkiUsageError(
        "err_bad_calibration_file",
        f"{path}: {message}",
        "a calibration file has `target = NAME`, a provenance table and overrides.SECTION tables of numbers; "
        "rerun `nkidev calibrate` to write one",
    )


def load_calibration(path: str | os.PathLike) -> Calibration:
    """Read a calibration file (its overrides are checked against the target when applied)."""
    path = Path(path)
    try:
        stat = path.stat()
    except OSError as e:
        raise _bad(path, f"cannot be read: {e.strerror or e}") from None
    return _load(str(path), stat.st_mtime_ns, stat.st_size)


@cache
def _load(path: str, _mtime: int, _size: int) -> Calibration:
    try:
        with open(path, "rb") as f:
            raw = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise _bad(path, f"cannot be read: {e}") from None
    unknown = sorted(set(raw) - set(_KEYS))
    if unknown:
        raise _bad(path, f"unknown key {unknown[0]}")
    if not isinstance(raw.get("target"), str):
        raise _bad(path, "missing key target (the target name it was fitted for)")
    overrides = raw.get("overrides", {})
    if not isinstance(overrides, dict) or not all(isinstance(v, dict) for v in overrides.values()):
        raise _bad(path, "overrides must hold one table per target section, e.g. overrides.dma")
    return Calibration(path, raw["target"], overrides, raw.get("provenance", {}))


def bundled_calibration(target: str) -> Path:
    """The calibration shipped with nkidev for `target` (`--calibration default`)."""
    return BUNDLED_DIR / f"{target}.toml"


def user_config_path() -> Path:
    if os.environ.get(CONFIG_ENV):
        return Path(os.environ[CONFIG_ENV])
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "nkidev" / "config.toml"


def _configured() -> str | None:
    path = user_config_path()
    if not path.is_file():
        return None
    try:
        with open(path, "rb") as f:
            value = tomllib.load(f).get("calibration")
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise NkiUsageError("err_bad_calibration_file", f"{path}: cannot be read: {e}", "fix or remove the nkidev user config") from None
    return value if isinstance(value, str) else None


def calibration_choice(calibration: str | os.PathLike | None = None) -> tuple[str | None, bool]:
    """(the calibration that applies, whether it was asked for explicitly); None: none applies."""
    if calibration is not None:
        return str(calibration), True
    chosen = os.environ.get(CALIBRATION_ENV) or _configured()
    return chosen, False


def calibrated_target(target: str | Target | None = None, calibration: str | os.PathLike | None = None) -> Target:
    """`get_target(target)` with the applicable calibration's overrides (see the module docstring)."""
    hw = get_target(target)
    if hw.calibration and calibration is None:
        return hw  # already calibrated (a Target passed down from a caller that resolved it)
    chosen, explicit = calibration_choice(calibration)
    if chosen is None or chosen.lower() == "none":
        return hw
    path = bundled_calibration(hw.name) if chosen.lower() == "default" else Path(chosen)
    if chosen.lower() == "default" and not path.is_file():
        return hw  # "default" is the bundled calibration where nkidev ships one, else the documented constants
    cal = load_calibration(path)
    if cal.target != hw.name:
        if explicit:
            raise _bad(path, f"was fitted for {cal.target}, not {hw.name}")
        return hw
    return with_overrides(hw, cal.overrides, str(path))


# ---------------------------------------------------------------- writing


def _scalar(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ("nan" if math.isnan(value) else ("inf" if value > 0 else "-inf"))
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_scalar(v) for v in value) + "]"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _key(k: str) -> str:
    return k if k.replace("_", "").replace("-", "").isalnum() else _scalar(k)


def to_toml(doc: dict, prefix: str = "") -> str:
    """A small TOML writer for calibration files: scalars, lists of scalars, tables and arrays of tables."""
    lines = [f"{_key(k)} = {_scalar(v)}" for k, v in doc.items() if not isinstance(v, dict) and not _is_table_list(v)]
    for k, v in doc.items():
        name = f"{prefix}{_key(k)}"
        if isinstance(v, dict):
            only_tables = v and all(isinstance(i, dict) for i in v.values())
            lines += ([""] if only_tables else ["", f"[{name}]"]) + [to_toml(v, f"{name}.")]
        elif _is_table_list(v):
            for item in v:
                lines += ["", f"[[{name}]]", to_toml(item, f"{name}.")]
    return "\n".join(line for line in lines if line is not None).strip("\n")


def _is_table_list(v) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(i, dict) for i in v)


def write_calibration(path: str | os.PathLike, target: str, overrides: dict[str, dict], provenance: dict, header: str = "") -> Path:
    """Write a calibration file atomically (and check it applies: a bad override fails before anything is kept)."""
    doc = {"target": target, "provenance": provenance, "overrides": overrides}
    text = (header + "\n" if header else "") + to_toml(doc) + "\n"
    tomllib.loads(text)  # what we write must read back
    with_overrides(get_target(target), overrides, str(path))
    path = Path(path)
    write_bytes(path, text.encode())
    return path
