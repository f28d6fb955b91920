"""Profile a kernel without hardware: emulate it, schedule its trace, write neuron-explorer tables.

from nkidev.profile.api import profile, profile_task
result = profile(kernel, a, b, target="trn2", out="prof/")        # also nkidev.profile(...)
result = profile_task("kernels/mm.py::matmul", case=1, out="prof/", compute=False)
result.to_dict()  # {"profile_dir": ..., "total_time_ns": ..., "engines": {...}, ...}
"""

from __future__ import annotations

import tempfile
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from nkidev.costmodel import Timeline, schedule
from nkidev.emulator.location import is_internal
from nkidev.errors import NkiError, NkiUsageError
from nkidev.hardware import Target, get_target
from nkidev.profile.summary import kernel_time_ns
from nkidev.profile.writer import build_tables, check_destination, write_profile
from nkidev.taskfile import load_task, parse_spec


@dataclass
class ProfileResult:
    profile_dir: str
    kernel: str
    target: str
    total_time_ns: float
    engines: dict[str, dict]
    instructions: int
    dma_transfers: int
    compute: bool
    timeline: Timeline = field(repr=False)
    tables: dict[str, pa.Table] = field(repr=False)

    def to_dict(self) -> dict:
        """The `nkidev profile --json` object."""
        return {
            "profile_dir": self.profile_dir,
            "kernel": self.kernel,
            "target": self.target,
            "total_time_ns": round(self.total_time_ns, 1),
            "engines": self.engines,
            "instructions": self.instructions,
            "dma_transfers": self.dma_transfers,
            "compute": self.compute,
        }


def profile(
    kernel, *args, target: str | Target | None = None, out: str | Path | None = None, compute: bool = True, force: bool = False, **kwargs
) -> ProfileResult:
    """Run `kernel(*args, **kwargs)` on the emulator, predict its timeline on `target` and write a profile
    directory to `out` (a fresh temporary directory when None). `compute=False` skips the numerics (large
    shapes); `force=True` replaces an existing `out`; `kernel[2]` profiles an SPMD/LNC2 launch. Raises
    NkiUsageError for bad input and NkiError (a named rule error or err_kernel_raised) when the kernel fails."""
    from nkidev.emulator.context import EmulatorOptions
    from nkidev.emulator.jit import as_kernel, run

    hw = get_target(target)  # err_unknown_target before any work
    dest = check_destination(out, force) if out is not None else None
    k = as_kernel(kernel)
    try:
        result = run(k, args, kwargs, options=EmulatorOptions(target=hw, compute=compute))
    except NkiError:
        raise
    except Exception as e:  # noqa: BLE001 - the kernel's own bug: report it by name and line
        raise _kernel_raised(k.__name__, e) from None
    timeline = schedule(result.trace, hw)
    notes = [] if compute else [("Simulation", "numerics skipped (--no-compute): outputs were not computed")]
    tables = build_tables(timeline, notes)
    if dest is None:
        dest = Path(tempfile.mkdtemp(prefix=f"nkidev-profile-{k.__name__}-")) / "profile"
    write_profile(dest, tables, f"{k.__name__} on {hw.name} (nkidev cost model)", force=force, target=hw)
    return _result(dest, k.__name__, timeline, tables, compute)


def profile_task(
    spec: str, case: int = 0, target: str | None = None, out: str | Path | None = None, compute: bool = True, force: bool = False
) -> ProfileResult:
    """Profile FILE::KERNEL on input case `case` of the task file's `cases()`."""
    path, name = parse_spec(spec)
    hw = get_target(target)
    if out is not None:
        check_destination(out, force)
    task = load_task(path)
    kernel = task.kernel(name)
    cases = task.cases()
    if not 0 <= case < len(cases):
        raise NkiUsageError(
            "err_invalid_argument", f"--case {case}: {path} has {len(cases)} case(s)", f"pass --case between 0 and {len(cases) - 1}"
        )
    return profile(kernel, *cases[case], target=hw, out=out, compute=compute, force=force)


def _kernel_raised(name: str, e: Exception) -> NkiError:
    location = None
    for frame in traceback.extract_tb(e.__traceback__):
        if not is_internal(frame.filename) and not frame.filename.startswith("<"):
            location = f"{frame.filename}:{frame.lineno}"
    return NkiError(
        "err_kernel_raised",
        f"{name}: the kernel raised {type(e).__name__}: {e}",
        "fix the kernel line named here; rerun with NKIDEV_DEBUG=1 for the full traceback",
        location,
    ).with_traceback_of(e)


def _result(dest: Path, kernel: str, tl: Timeline, tables: dict[str, pa.Table], compute: bool) -> ProfileResult:
    total = kernel_time_ns(tables)
    busy = tl.busy_ns()
    counts: dict[str, int] = {}
    for e in tl.rows.engine:
        counts[e] = counts.get(e, 0) + 1
    engines = {
        e: {
            "instructions": counts.get(e, 0),
            "busy_ns": round(busy.get(e, 0.0), 1),
            "busy_percent": round(100 * busy.get(e, 0.0) / total, 2) if total else 0.0,
        }
        for e in ("tensor", "vector", "scalar", "gpsimd", "sync")
        if counts.get(e)
    }
    if len(tl.transfers):
        engines["dma"] = {
            "transfers": len(tl.transfers),
            "bytes": int(sum(t.transfer_bytes for t in tl.transfers.plan)),
            "busy_ns": round(busy.get("dma", 0.0), 1),
            "busy_percent": round(100 * busy.get("dma", 0.0) / total, 2) if total else 0.0,
        }
    return ProfileResult(str(dest), kernel, tl.target.name, total, engines, len(tl.trace), len(tl.transfers), compute, tl, tables)
