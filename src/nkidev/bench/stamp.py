"""What a benchmark result was measured with: nkidev's version, the target, its calibration and the cost model.

The cost-model version is a digest of the sources that decide a predicted time (the scheduler, the cost
expressions and the op declarations); the calibration is a digest of the target's hardware file (its fitted
and documented constants). Two runs with equal stamps predict equal times for equal kernels.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path

import nkidev
from nkidev.hardware import Target

_PACKAGE = Path(nkidev.__file__).parent
COST_MODEL_SOURCES = ("costmodel/*.py", "emulator/costs.py", "emulator/ops/*.py")


def _digest(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.relative_to(_PACKAGE).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:12]


def cost_model_version() -> str:
    files = sorted(f for pattern in COST_MODEL_SOURCES for f in _PACKAGE.glob(pattern))
    return f"{nkidev.__version__}+{_digest(files)}"


def calibration(target: Target) -> str:
    return f"{target.name}:{hashlib.sha256(Path(target.source).read_bytes()).hexdigest()[:12]}"


def stamp(target: Target, **extra) -> dict:
    """The run's "meta" object."""
    return {
        "nkidev_version": nkidev.__version__,
        "target": target.name,
        "calibration": calibration(target),
        "cost_model_version": cost_model_version(),
        "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        **extra,
    }
