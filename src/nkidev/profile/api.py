"""Profile a kernel without hardware: emulate it, schedule its trace, write neuron-explorer tables.

from nkidev.profile.api import profile, profile_task
result = profile(kernel, a, b, target="trn2", out="prof/")        # also nkidev.profile(...)
result = profile_task("kernels/mm.py::matmul", case=1, out="prof/", compute=False)
result = profile_task("kernels/mm.py::matmul[4]")  # SPMD grid: every program runs, one process per core
result.to_dict()  # {"profile_dir": ..., "total_time_ns": ..., "engines": {...}, ...}

Without `out`, a fresh directory under ./nkidev-profiles/ is created (named after the kernel and the time).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from nkidev.case import Case
from nkidev.costmodel import Timeline, schedule
from nkidev.emulator import versions
from nkidev.emulator.location import internal_error, raised_at, raised_in_nkidev
from nkidev.errors import NkiError, NkiUsageError
from nkidev.hardware import Target
from nkidev.hardware.calibration import calibrated_target
from nkidev.profile.perfetto import check_trace_mode
from nkidev.profile.summary import kernel_time_ns
from nkidev.profile.writer import build_tables, check_destination, write_profile
from nkidev.taskfile import kernel_spec, load_task


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


DEFAULT_ROOT = "nkidev-profiles"


def default_out(kernel_name: str, root: str | Path = DEFAULT_ROOT) -> Path:
    """A fresh directory name under ./nkidev-profiles/: KERNEL-YYYYmmdd-HHMMSS (with -2, -3, ... if taken)."""
    base = Path(root) / f"{kernel_name}-{time.strftime('%Y%m%d-%H%M%S')}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path


def profile(
    kernel,
    *args,
    target: str | Target | None = None,
    out: str | Path | None = None,
    compute: bool = True,
    force: bool = False,
    progress: Callable[[dict], None] | None = None,
    calibration: str | None = None,
    kernel_info: dict | None = None,
    trace: str = "auto",
    **kwargs,
) -> ProfileResult:
    """Run `kernel(*args, **kwargs)` on the emulator, predict its timeline on `target` and write a profile
    directory to `out` (a fresh directory under ./nkidev-profiles/ when None). `compute=False` skips the numerics
    (large shapes); `force=True` replaces an existing `out` if it is an nkidev profile; `kernel[2]` profiles an
    SPMD/LNC2 launch. `calibration`: a calibration file applied to the target ("default": the bundled one,
    "none": none; unset: $NKIDEV_CALIBRATION or the user config). `kernel_info` is stored as nkidev-kernel.json
    (what `nkidev calibrate` re-simulates). `trace`: what trace.json holds ("auto": the DMA packet tracks only
    up to 200,000 packets, "full": always, "none": no trace.json). A kernel keyword named like one of these
    options goes through `profile_case(kernel, Case(...))` instead. Raises NkiUsageError for bad input
    (err_output_exists, err_not_writable, err_invalid_argument before the kernel runs) and NkiError (a named
    rule error, err_kernel_raised, or err_internal for an nkidev bug)."""
    options = dict(out=out, compute=compute, force=force, progress=progress, calibration=calibration, kernel_info=kernel_info)
    return profile_case(kernel, Case(*args, **kwargs), target=target, trace=trace, **options)


def profile_case(
    kernel,
    case: Case,
    target: str | Target | None = None,
    out: str | Path | None = None,
    compute: bool = True,
    force: bool = False,
    progress: Callable[[dict], None] | None = None,
    calibration: str | None = None,
    kernel_info: dict | None = None,
    trace: str = "auto",
) -> ProfileResult:
    """`profile` of `case.call(kernel)`: the kernel's keyword inputs apart from the profile's options, so none
    of them can be taken for one (a kernel parameter named `out` or `trace`)."""
    from nkidev.emulator.context import EmulatorOptions
    from nkidev.emulator.jit import as_kernel, run

    hw = calibrated_target(target, calibration)  # err_unknown_target / err_bad_calibration_file before any work
    check_trace_mode(trace)
    k = as_kernel(kernel)
    dest = check_destination(out if out is not None else default_out(k.__name__), force)
    emit = progress or (lambda event: None)
    emit({"event": "stage", "stage": f"emulating {k.__name__} on {hw.name}"})
    try:
        result = run(k, case.args, case.kwargs, options=EmulatorOptions(target=hw, compute=compute))
    except NkiError:
        raise
    except (Exception, SystemExit) as e:  # noqa: BLE001 - the kernel's own bug (exit() too): report it by name and line
        raise _kernel_raised(k.__name__, e) from None
    emit({"event": "stage", "stage": f"scheduling {len(result.trace)} instructions"})
    timeline = schedule(result.trace, hw)
    notes = [] if compute else [("Simulation", "numerics skipped (--no-compute): outputs were not computed")]
    emit({"event": "stage", "stage": f"writing {dest}"})
    tables = build_tables(timeline, notes, trace)
    title = f"{k.__name__} on {hw.name} (nkidev cost model)"
    write_profile(dest, tables, title, force=force, target=hw, kernel=kernel_info, trace=trace)
    return _result(dest, k.__name__, timeline, tables, compute)


def profile_task(
    spec: str,
    case: int = 0,
    target: str | None = None,
    out: str | Path | None = None,
    compute: bool = True,
    force: bool = False,
    progress: Callable[[dict], None] | None = None,
    nki_version: str | None = None,
    calibration: str | None = None,
    trace: str = "auto",
) -> ProfileResult:
    """Profile FILE::KERNEL (or FILE::KERNEL[grid], or with the task file's GRID) on input case `case` of `cases()`
    (its keyword inputs too, for an `nkidev.Case`), checked against `nki_version` (default: the task's NKI_VERSION,
    else $NKIDEV_NKI_VERSION, else the newest). `trace`: what trace.json holds, as in `profile`."""
    with versions.scope(nki_version):
        return _profile_task(spec, case, target, out, compute, force, progress, calibration, trace)


def _profile_task(spec, case, target, out, compute, force, progress, calibration=None, trace="auto") -> ProfileResult:
    parsed = kernel_spec(spec)
    hw = calibrated_target(target, calibration)
    check_trace_mode(trace)
    if out is not None:
        check_destination(out, force)
    if not isinstance(case, int) or isinstance(case, bool) or case < 0:
        raise NkiUsageError("err_invalid_argument", f"--case {case!r}", "pass a case index of 0 or more")
    task = load_task(parsed.path)
    kernel = task.launch(parsed)
    cases = task.calls()
    if not 0 <= case < len(cases):
        raise NkiUsageError(
            "err_invalid_argument", f"--case {case}: {parsed.path} has {len(cases)} case(s)", f"pass --case between 0 and {len(cases) - 1}"
        )
    grid = f"[{','.join(map(str, parsed.grid))}]" if parsed.grid else ""
    info = {"spec": f"{parsed.path.resolve()}::{parsed.name or kernel.__name__}{grid}", "case": case, "target": hw.name}
    if hw.calibration:
        info["calibration"] = hw.calibration
    with task.version_scope():
        return profile_case(
            kernel, cases[case], target=hw, out=out, compute=compute, force=force, progress=progress, kernel_info=info, trace=trace
        )


def profile_task_data(spec: str, progress: Callable[[dict], None] | None = None, **options) -> dict:
    """`profile_task(...).to_dict()`: the plain-data form the sandbox returns (the CLI's and MCP's entry point)."""
    return profile_task(spec, progress=progress, **options).to_dict()


def _kernel_raised(name: str, e: BaseException) -> NkiError:
    location = raised_at(e, None)  # the deepest user frame
    if isinstance(e, MemoryError):
        return NkiError("err_memory_limit", f"{name}: the kernel ran out of memory: {e}", None, location)
    if raised_in_nkidev(e):
        return internal_error(name, e, location)
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
