"""Shared CLI plumbing: one error-to-exit-code mapping and one JSON/human output path."""

from __future__ import annotations

import functools
import json
import sys
import traceback
from typing import Annotated

import typer
from rich.console import Console

from nkidev import exitcodes
from nkidev.errors import NkiError, NkiUsageError


class _Console(Console):
    """A console whose text messages are never broken with inserted newlines: a path or a command in one stays on
    one line for grep, copy-paste and agents reading piped output (Rich wraps at 80 columns when not on a
    terminal; a terminal still wraps long lines visually). Tables and other renderables keep fitting the width."""

    def print(self, *objects, soft_wrap: bool | None = None, **kwargs) -> None:
        if soft_wrap is None and all(isinstance(o, str) for o in objects):
            soft_wrap = True
        super().print(*objects, soft_wrap=soft_wrap, **kwargs)


console = _Console()
err_console = _Console(stderr=True)

# Options every command spells the same way, declared once.
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object (the library's plain data) instead of text.")]
TargetOption = Annotated[
    str | None,
    typer.Option(
        "--target",
        help="Hardware generation: trn1 | trn2 | trn3 or an alias (gen2..gen4), or a target of $NKIDEV_HARDWARE_PATH "
        "(default: $NEURON_PLATFORM_TARGET_OVERRIDE, else trn2).",
    ),
]

CalibrationOption = Annotated[
    str | None,
    typer.Option(
        "--calibration",
        help="Calibration file (from `nkidev calibrate`) applied to the target's free constants; 'default' for the one nkidev "
        "ships, 'none' for the documented values (default: $NKIDEV_CALIBRATION, else `calibration` in ~/.config/nkidev/config.toml).",
    ),
]

TimeoutOption = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        help="Stop the run after this many seconds (the task file, cases(), reference and kernel run in an isolated "
        "child process; default 600).",
    ),
]
MemoryOption = Annotated[
    str | None,
    typer.Option(
        "--memory", help="Address-space limit of the isolated child process, e.g. 8G or 512M (default: three quarters of the RAM)."
    ),
]
NkiVersionOption = Annotated[
    str | None,
    typer.Option(
        "--nki-version",
        help="NKI version to check the kernel against: 0.6 | 0.7 (also 0.6.0, 0.7.0) (default: a task file's NKI_VERSION, "
        "then $NKIDEV_NKI_VERSION, else the newest, 0.7). Legacy neuronxcc.nki kernels are recognised by their imports.",
    ),
]


def to_json(data) -> str:
    return json.dumps(data, indent=2, default=_default)


def _default(o):
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if hasattr(o, "to_dict"):
        return o.to_dict()
    return str(o)


def print_json(data) -> None:
    sys.stdout.write(to_json(data) + "\n")


def fail(error: NkiError, as_json: bool, code: int) -> None:
    if error.user_traceback and _debug():  # NKIDEV_DEBUG=1: the kernel's own traceback, on stderr in both modes
        sys.stderr.write(error.user_traceback)
    if as_json:
        print_json({"error": error.to_dict()})
    else:
        err_console.print(f"[bold red]error[/] {error}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def command(fn):
    """Wrap a CLI command: named errors become clean messages and documented exit codes, never tracebacks."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        as_json = bool(kwargs.get("as_json", False))
        try:
            return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except NkiError as e:
            default = exitcodes.USAGE if isinstance(e, NkiUsageError) else exitcodes.KERNEL_ERROR
            fail(e, as_json, exitcodes.BY_ERROR.get(e.name, default))
        except KeyboardInterrupt:
            err_console.print("interrupted")
            raise typer.Exit(130) from None
        except Exception as e:  # noqa: BLE001 - last resort: an nkidev bug, say so
            err = NkiError(
                "err_internal",
                f"{type(e).__name__}: {e}",
                "this is a bug in nkidev; rerun with NKIDEV_DEBUG=1 for the traceback and report it",
            )
            if _debug():
                traceback.print_exc()
            fail(err, as_json, exitcodes.INTERNAL)

    return wrapper


def _debug() -> bool:
    import os

    return os.environ.get("NKIDEV_DEBUG", "") not in ("", "0")
