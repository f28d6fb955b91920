"""Fake Neuron SDK executables for the hardware-path tests: `neuronx-cc` and `neuron-explorer` as small
Python scripts put on PATH. They follow the command lines of nkidev/device/sdk.py; the "device" is nkidev's
emulator (outputs) and cost model (time, with the constants of $FAKE_DEVICE_CALIBRATION), and `view` writes the
hand-built real-layout profile of tests/analysis/fixtures/make_real_profile.py with the measured total time.

$FAKE_COMPILE_FAIL=1 makes the compiler reject the kernel; $FAKE_DEVICE_OFFSET adds a constant to every output.
$FAKE_DEVICE_WRONG=K makes the device compute one instruction wrong (tests/device/wrong_device.py): the K-th
that the kernel's own lines issue gets $FAKE_DEVICE_WRONG_DELTA (default 1.0) added to its destination.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[1] / "analysis" / "fixtures" / "make_real_profile.py"
REPO = Path(__file__).resolve().parents[2]  # the fake device imports tests.device.wrong_device from here

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
    case = arrays.load_case(Path(a.inputs))
    hw = calibrated_target(neff["target"], os.environ.get("FAKE_DEVICE_CALIBRATION") or "none")
    if os.environ.get("FAKE_DEVICE_WRONG"):
        from tests.device.wrong_device import wrong_instruction
        wrong = wrong_instruction(spec.path, int(os.environ["FAKE_DEVICE_WRONG"]), float(os.environ.get("FAKE_DEVICE_WRONG_DELTA", "1.0")))
        wrong.__enter__()  # kept referenced: the block stays open for the rest of the run
    result = run(kernel, case.args, case.kwargs, options=EmulatorOptions(target=hw, compute=True))
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
    header = f"#!{sys.executable}\nFIXTURE = {str(FIXTURE)!r}\nimport sys\nsys.path.insert(0, {str(REPO)!r})\n"
    for name, body in (("neuronx-cc", NEURONX_CC), ("neuron-explorer", NEURON_EXPLORER)):
        path = directory / name
        path.write_text(header + body)
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return directory


def path_with(directory: Path) -> str:
    return f"{directory}{os.pathsep}{os.environ.get('PATH', '')}"
