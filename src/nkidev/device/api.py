"""`profile_hardware` / `validate_hardware`: the kernel compiled, run and captured on a Trainium device.

from nkidev.device.api import profile_hardware, validate_hardware
profile_hardware("kernels/mm.py::matmul", case=1, target="trn2", out="hw-prof/")   # then nkidev analyze hw-prof/
validate_hardware("kernels/mm.py::matmul")  # device outputs vs the reference and vs the emulator, per case;
                                            # on a device/emulator mismatch, bisect to the first differing
                                            # instruction (nkidev.device.bisect), dumps under `out`

Both fail first, before any work, with err_sdk_missing when neuronx-cc or neuron-explorer is not installed.
The captured profile is neuron-explorer's Parquet tables plus nkidev-kernel.json (the kernel, case and target,
so `nkidev calibrate` can re-simulate it) and raw/ (the NEFF, NTFF and inputs it was made from).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from nkidev import __version__
from nkidev.case import Case
from nkidev.device import arrays
from nkidev.device.sdk import CAPTURE_ENV, Sdk, find_sdk, run_tool
from nkidev.errors import NkiError
from nkidev.hardware import get_target
from nkidev.profile.schema import KERNEL_FILE, MARKER_FILE
from nkidev.profile.writer import check_destination
from nkidev.taskfile import kernel_spec, load_task

DEFAULT_TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
BISECT_ROOT = "nkidev-bisect"  # where validate --hardware writes a bisect's probes when no --out is given


def _spec(parsed, kernel) -> str:
    grid = f"[{','.join(map(str, parsed.grid))}]" if parsed.grid else ""
    return f"{parsed.path.resolve()}::{parsed.name or kernel.__name__}{grid}"


def _run_on_device(sdk: Sdk, spec: str, target: str, case: Case, work: Path, emit, env: dict | None = None) -> tuple[Path, Path, list]:
    """Compile and run one case (its keyword inputs as kw0.. in inputs.npz: device/arrays.py); returns (neff, ntff,
    device outputs). `env` is added to the tools' environment."""
    inputs, outputs = work / "inputs.npz", work / "outputs.npz"
    neff, ntff = work / "kernel.neff", work / "profile.ntff"
    arrays.save_case(inputs, case)
    emit({"event": "stage", "stage": f"compiling {spec} with neuronx-cc"})
    run_tool(sdk.compile(spec, target, inputs, neff), work, env)
    emit({"event": "stage", "stage": "running on the device and capturing a profile"})
    run_tool(sdk.capture(neff, inputs, outputs, ntff), work, {**CAPTURE_ENV, **(env or {})})
    for path in (neff, ntff, outputs):
        if not path.is_file():
            raise NkiError("err_hardware_run_failed", f"the SDK did not write {path.name}", "check the tool output and the device")
    return neff, ntff, arrays.load(outputs, "out")


def _total_seconds(tables: Path) -> float:
    import pyarrow.parquet as pq

    files = sorted(tables.glob("Summary*.parquet"))
    if not files or "Instruction" not in {p.stem.split("_")[0] for p in tables.glob("*.parquet")}:
        raise NkiError("err_hardware_run_failed", f"neuron-explorer wrote no Summary/Instruction tables into {tables}", "check its output")
    return float(pq.read_table(files[0], columns=["total_time"]).column("total_time")[0].as_py())


def profile_hardware(
    spec: str,
    case: int = 0,
    target: str | None = None,
    out: str | Path | None = None,
    force: bool = False,
    progress: Callable[[dict], None] | None = None,
) -> dict:
    """Profile FILE::KERNEL on a Trainium device: a neuron-explorer profile directory `out` that `nkidev
    analyze/query/compare/calibrate` read like any other."""
    from nkidev.profile.api import default_out

    sdk = find_sdk()
    emit = progress or (lambda event: None)
    parsed = kernel_spec(spec)
    hw = get_target(target)
    task = load_task(parsed.path)
    kernel = task.launch(parsed)
    cases = task.calls()
    if not 0 <= case < len(cases):
        raise NkiError("err_invalid_argument", f"--case {case}: {parsed.path} has {len(cases)} case(s)", "pass a valid --case")
    dest = check_destination(out if out is not None else default_out(kernel.__name__), force)
    full = _spec(parsed, kernel)
    with tempfile.TemporaryDirectory(prefix="nkidev-hw-") as tmp:
        work = Path(tmp)
        neff, ntff, _ = _run_on_device(sdk, full, hw.name, cases[case], work, emit)
        tables = work / "profile"
        emit({"event": "stage", "stage": "converting the capture to Parquet with neuron-explorer"})
        run_tool(sdk.convert(neff, ntff, tables), work)
        seconds = _total_seconds(tables)
        raw = tables / "raw"
        raw.mkdir()
        for path in (neff, ntff, work / "inputs.npz"):
            shutil.copy2(path, raw / path.name)
        info = {
            "spec": full,
            "case": case,
            "target": hw.name,
            "measured": True,
            "sdk": {"neuronx-cc": sdk.neuronx_cc, "neuron-explorer": sdk.neuron_explorer},
        }
        (tables / KERNEL_FILE).write_text(json.dumps(info, indent=1) + "\n")
        title = f"{kernel.__name__} on {hw.name} (measured on the device)"
        (tables / MARKER_FILE).write_text(json.dumps({"tool": "nkidev", "version": __version__, "title": title}) + "\n")
        if dest.exists():  # check_destination allowed it: an empty directory, or (force) an nkidev profile
            shutil.rmtree(dest)
        shutil.move(str(tables), str(dest))
    return {
        "profile_dir": str(dest),
        "kernel": kernel.__name__,
        "target": hw.name,
        "total_time_ns": round(seconds * 1e9, 1),
        "hardware": True,
    }


def _max_abs(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b))) if a.shape == b.shape and a.size else (0.0 if a.shape == b.shape else float("inf"))


def _device_runner(sdk: Sdk, kernel_name: str, target: str, case: Case, original: Path) -> Callable[[Path], list]:
    """variant path -> the device's outputs for `case` (the original's directory importable, as in the task)."""
    env = {"PYTHONPATH": os.pathsep.join(p for p in (str(original.parent), os.environ.get("PYTHONPATH", "")) if p)}

    def run_variant(variant: Path) -> list:
        with tempfile.TemporaryDirectory(prefix="nkidev-hw-") as tmp:
            return _run_on_device(sdk, f"{variant.resolve()}::{kernel_name}", target, case, Path(tmp), lambda e: None, env)[2]

    return run_variant


def _bisect(sdk, task, parsed, kernel, hw, case, index: int, tol: dict, out, max_probes, device_outputs: list, emit) -> dict:
    from nkidev.device.bisect import bisect_case
    from nkidev.profile.api import default_out

    if parsed.grid or task.grid(kernel.__name__):
        return {"status": "skipped", "reason": "the kernel runs an SPMD grid; the bisect probes single-program kernels"}
    emit({"event": "stage", "stage": f"case {index}: the device differs from the emulator; bisecting"})
    root = Path(out) if out is not None else default_out(kernel.__name__, BISECT_ROOT)
    device = _device_runner(sdk, kernel.__name__, hw.name, case, parsed.path.resolve())
    try:
        path = parsed.path.resolve()
        result = bisect_case(path, kernel.__name__, case, hw, tol, device, root / f"case{index}", emit, max_probes, device_outputs)
    except NkiError as e:  # a probe that does not compile or run: the validation rows still stand
        result = {"status": "failed", "reason": str(e), "error": e.name}
    return {"case": index, **result}


def validate_hardware(
    spec: str,
    reference: str = "reference",
    cases: str = "cases",
    target: str | None = None,
    progress: Callable[[dict], None] | None = None,
    bisect: bool = True,
    out: str | None = None,
    max_probes: int | None = None,
    **_,
) -> dict:
    """Run FILE::KERNEL on the device for every case; compare its outputs with the reference and with the
    emulator's. `passed`: every case matches the reference within the task's TOLERANCE (atol/rtol).

    When the device's outputs differ from the emulator's (`bisect`), the first such case is bisected to the
    first instruction whose output differs (`result["bisect"]`, see nkidev.device.bisect): at most about
    log2(statements executed) + 3 more device runs (`max_probes` caps them), each probe's device and emulator
    tiles written as .npy under `out` (default ./nkidev-bisect/KERNEL-TIME/caseN/)."""
    from nkidev.emulator.context import EmulatorOptions
    from nkidev.emulator.jit import run

    sdk = find_sdk()
    emit = progress or (lambda event: None)
    parsed = kernel_spec(spec)
    hw = get_target(target)
    task = load_task(parsed.path)
    kernel = task.launch(parsed)
    ref_fn = task.function(reference, "reference(*inputs) returning the expected output(s)")
    tol = {**DEFAULT_TOLERANCE, **{k: v for k, v in (task.attr("TOLERANCE") or {}).items() if k in DEFAULT_TOLERANCE}}
    full = _spec(parsed, kernel)
    rows = []
    bisected = None
    for i, case in enumerate(task.calls(cases)):
        with tempfile.TemporaryDirectory(prefix="nkidev-hw-") as tmp:
            _, _, device = _run_on_device(sdk, full, hw.name, case, Path(tmp), emit)
        expected = case.call(ref_fn)
        expected = list(expected) if isinstance(expected, tuple | list) else [expected]
        emulated = run(kernel, case.args, case.kwargs, options=EmulatorOptions(target=hw, compute=True)).outputs
        emulated = list(emulated) if isinstance(emulated, tuple | list) else [emulated]
        vs_ref = (
            max((_max_abs(d, e) for d, e in zip(device, expected)), default=float("inf")) if len(device) == len(expected) else float("inf")
        )
        vs_emu = (
            max((_max_abs(d, e) for d, e in zip(device, emulated)), default=float("inf")) if len(device) == len(emulated) else float("inf")
        )
        ok = len(device) == len(expected) and all(
            np.allclose(np.asarray(d, np.float64), np.asarray(e, np.float64), atol=tol["atol"], rtol=tol["rtol"])
            for d, e in zip(device, expected)
        )
        agrees = len(device) == len(emulated) and all(
            np.allclose(np.asarray(d, np.float64), np.asarray(e, np.float64), atol=tol["atol"], rtol=tol["rtol"])
            for d, e in zip(device, emulated)
        )
        rows.append(
            {"index": i, "passed": ok, "agrees_with_emulator": agrees, "max_abs_vs_reference": vs_ref, "max_abs_vs_emulator": vs_emu}
        )
        emit({"event": "case", "index": i, "line": f"{'PASS' if ok else 'FAIL'} on the device: case {i}, max_diff={vs_ref:.6f}"})
        if bisect and not agrees and bisected is None:
            bisected = _bisect(sdk, task, parsed, kernel, hw, case, i, tol, out, max_probes, device, emit)
    passed = all(r["passed"] for r in rows)
    result = {"kernel": full, "target": hw.name, "hardware": True, "passed": passed, "cases": rows, "tolerance": tol}
    if bisected is not None:
        result["bisect"] = bisected
    return result
