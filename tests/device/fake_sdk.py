"""Fake Neuron SDK executables for the hardware-path tests: `neuronx-cc` and `neuron-explorer` as small
Python scripts put on PATH. They follow the command lines of nkidev/device/sdk.py; the "device" is nkidev's
emulator (outputs) and cost model (time, with the constants of $FAKE_DEVICE_CALIBRATION), and `view` writes the
hand-built real-layout profile of tests/analysis/fixtures/make_real_profile.py with the measured total time.

$FAKE_COMPILE_FAIL=1 makes the compiler reject the kernel; $FAKE_DEVICE_OFFSET adds a constant to every output.
$FAKE_DEVICE_WRONG=K makes the device compute one instruction wrong: the K-th (from 0, in program order) that
the kernel's own lines issue (not the probe helpers after nkidev's marker line) gets $FAKE_DEVICE_WRONG_DELTA
(default 1.0) added to its destination, so a bisect must find exactly that instruction.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[1] / "analysis" / "fixtures" / "make_real_profile.py"

NEURONX_CC = """
import argparse, json, os, sys
p = argparse.ArgumentParser()
p.add_argument("cmd"); p.add_argument("--framework"); p.add_argument("--target"); p.add_argument("--kernel")
p.add_argument("--inputs"); p.add_argument("--output")
a = p.parse_args()
if a.cmd != "compile" or a.framework != "NKI":
    sys.exit("neuronx-cc: unexpected command line")
if os.environ.get("FAKE_COMPILE_FAIL"):
    print("ERROR NCC_EVRF007: fake compiler rejects the kernel", file=sys.stderr)
    sys.exit(70)
open(a.output, "w").write(json.dumps({"kernel": a.kernel, "target": a.target}))
"""

NEURON_EXPLORER = """
import argparse, json, os, sys
from pathlib import Path


def inject_wrong(kernel_path, k, delta):
    # wrap every op's semantics: count the instructions issued from the kernel's own lines, perturb the k-th
    from nkidev.device.probes import marker_line
    from nkidev.emulator import memory
    from nkidev.emulator.ops import OPS
    path = str(Path(kernel_path).resolve())
    marker = marker_line(Path(path).read_text()) or 10**9
    seen = [0]

    def kernel_line():
        frame = sys._getframe(2)
        while frame is not None and frame.f_code.co_filename != path:
            frame = frame.f_back
        return frame.f_lineno if frame is not None else None

    def wrap(op, impl):
        def perturbed(a, ctx, engine):
            result = impl(a, ctx, engine)
            line = kernel_line()
            if line is not None and line < marker:
                if seen[0] == k:
                    dst = getattr(a, op.writes[0])
                    memory.store(dst, memory.f32(dst) + delta)
                seen[0] += 1
            return result
        return perturbed

    for op in OPS.values():
        if op.impl is not None:
            op.impl = wrap(op, op.impl)

p = argparse.ArgumentParser()
p.add_argument("cmd"); p.add_argument("-n"); p.add_argument("-s"); p.add_argument("--inputs"); p.add_argument("--outputs")
p.add_argument("--output-format"); p.add_argument("--output-dir")
a = p.parse_args()
neff = json.loads(Path(a.n).read_text())
if a.cmd == "capture":
    if os.environ.get("NEURON_RT_INSPECT_ENABLE") != "1":
        sys.exit("capture needs NEURON_RT_INSPECT_ENABLE=1")
    import numpy as np
    import nkidev
    from nkidev.costmodel import schedule
    from nkidev.device import arrays
    from nkidev.emulator.context import EmulatorOptions
    from nkidev.emulator.jit import run
    from nkidev.hardware.calibration import calibrated_target
    from nkidev.taskfile import kernel_spec, load_task
    spec = kernel_spec(neff["kernel"])
    kernel = load_task(spec.path).launch(spec)
    args = arrays.load(Path(a.inputs), "arg")
    hw = calibrated_target(neff["target"], os.environ.get("FAKE_DEVICE_CALIBRATION") or "none")
    if os.environ.get("FAKE_DEVICE_WRONG"):
        inject_wrong(spec.path, int(os.environ["FAKE_DEVICE_WRONG"]), float(os.environ.get("FAKE_DEVICE_WRONG_DELTA", "1.0")))
    result = run(kernel, tuple(args), {}, options=EmulatorOptions(target=hw, compute=True))
    outs = result.outputs if isinstance(result.outputs, (tuple, list)) else [result.outputs]
    offset = float(os.environ.get("FAKE_DEVICE_OFFSET", "0"))
    outs = [np.asarray(o) + np.asarray(offset).astype(np.asarray(o).dtype) if offset else np.asarray(o) for o in outs]
    arrays.save(Path(a.outputs), outs, "out")
    Path(a.s).write_text(json.dumps({"total_ns": schedule(result.trace, hw).total_ns}))
elif a.cmd == "view":
    assert a.output_format == "parquet", a.output_format
    import importlib.util
    import pyarrow as pa
    import pyarrow.parquet as pq
    spec = importlib.util.spec_from_file_location("make_real_profile", FIXTURE)
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    out = Path(a.output_dir)
    mod.write(out)
    total = json.loads(Path(a.s).read_text())["total_ns"] / 1e9
    summary = pq.read_table(out / "Summary.parquet")
    summary = summary.set_column(0, "total_time", pa.array([total], pa.float64()))
    pq.write_table(summary, out / "Summary.parquet")
else:
    sys.exit(f"neuron-explorer: unknown command {a.cmd}")
"""


def install(directory: Path) -> Path:
    """Write the two fake tools into `directory` (put it first on PATH)."""
    directory.mkdir(parents=True, exist_ok=True)
    header = f"#!{sys.executable}\nFIXTURE = {str(FIXTURE)!r}\n"
    for name, body in (("neuronx-cc", NEURONX_CC), ("neuron-explorer", NEURON_EXPLORER)):
        path = directory / name
        path.write_text(header + body)
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return directory


def path_with(directory: Path) -> str:
    return f"{directory}{os.pathsep}{os.environ.get('PATH', '')}"
