"""Finding the Neuron SDK's tools and running them.

nkidev drives the SDK through three command lines (the only place they are spelled; a test runs them against
fake tools that write real-schema output):

  compile  neuronx-cc compile --framework NKI --target TARGET --kernel FILE::KERNEL --inputs INPUTS.npz --output KERNEL.neff
  capture  neuron-explorer capture -n KERNEL.neff --inputs INPUTS.npz --outputs OUTPUTS.npz -s PROFILE.ntff
  convert  neuron-explorer view -n KERNEL.neff -s PROFILE.ntff --output-format parquet --output-dir DIR

`capture` runs the NEFF on the device (NEURON_RT_INSPECT_ENABLE=1, NEURON_RT_INSPECT_DEVICE_PROFILE=1) and
saves the kernel's outputs; `convert` writes neuron-explorer's Parquet tables. Tools are looked up on PATH
(or $NKIDEV_NEURONX_CC / $NKIDEV_NEURON_EXPLORER).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from nkidev.errors import NkiError, NkiUsageError

TOOLS = {
    "neuronx-cc": ("NKIDEV_NEURONX_CC", "the Neuron compiler (pip install neuronx-cc from the Neuron SDK repository)"),
    "neuron-explorer": ("NKIDEV_NEURON_EXPLORER", "Neuron Explorer, which captures device profiles (part of aws-neuronx-tools)"),
}
CAPTURE_ENV = {"NEURON_RT_INSPECT_ENABLE": "1", "NEURON_RT_INSPECT_DEVICE_PROFILE": "1"}
TOOL_TIMEOUT_S = 1800.0
OUTPUT_TAIL = 2000  # characters of a failing tool's output quoted in the error


@dataclass(frozen=True)
class Sdk:
    neuronx_cc: str
    neuron_explorer: str

    def compile(self, spec: str, target: str, inputs: Path, neff: Path) -> list[str]:
        return [
            self.neuronx_cc,
            "compile",
            "--framework",
            "NKI",
            "--target",
            target,
            "--kernel",
            spec,
            "--inputs",
            str(inputs),
            "--output",
            str(neff),
        ]

    def capture(self, neff: Path, inputs: Path, outputs: Path, ntff: Path) -> list[str]:
        return [self.neuron_explorer, "capture", "-n", str(neff), "--inputs", str(inputs), "--outputs", str(outputs), "-s", str(ntff)]

    def convert(self, neff: Path, ntff: Path, out: Path) -> list[str]:
        return [self.neuron_explorer, "view", "-n", str(neff), "-s", str(ntff), "--output-format", "parquet", "--output-dir", str(out)]


def find_sdk() -> Sdk:
    """The SDK's tools, or err_sdk_missing naming each one that is missing and where it comes from."""
    found, missing = {}, []
    for tool, (env, what) in TOOLS.items():
        path = os.environ.get(env) or shutil.which(tool)
        if path and Path(path).is_file() and os.access(path, os.X_OK):
            found[tool] = path
        else:
            missing.append(f"{tool} ({what})")
    if missing:
        raise NkiUsageError(
            "err_sdk_missing",
            f"--hardware needs the Neuron SDK; not found on PATH: {'; '.join(missing)}",
            "run on a Trainium instance with the Neuron SDK installed, or drop --hardware to use the cost model",
        )
    return Sdk(found["neuronx-cc"], found["neuron-explorer"])


def run_tool(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run one SDK command; a non-zero exit is err_hardware_run_failed quoting the command and its output."""
    try:
        proc = subprocess.run(
            command, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise NkiError("err_hardware_run_failed", f"{Path(command[0]).name} could not run: {e}", "check the SDK install") from None
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout)[-OUTPUT_TAIL:].strip()
        raise NkiError(
            "err_hardware_run_failed",
            f"{Path(command[0]).name} exited with {proc.returncode}: {' '.join(command)}\n{tail}",
            "read the tool's output above; the kernel may use something the Neuron compiler rejects",
        )
    return proc.stdout
