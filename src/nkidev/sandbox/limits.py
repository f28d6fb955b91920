"""The limits of one isolated run: wall-clock seconds and bytes of address space.

The memory limit is the child's RLIMIT_AS (virtual address space, Linux): it counts everything the process
maps, including ~250 MB for the interpreter, NumPy and the emulator, so a limit below ~1 GiB leaves little
room for the kernel. Where RLIMIT_AS is not enforced (macOS) only the emulator's own memory budget applies.
The CLI's defaults are generous (a long validation of a big kernel must not be cut short); the MCP server's
are bounded (an agent's call must not hold the machine).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass

from nkidev.errors import NkiUsageError

CLI_TIMEOUT_S = 600.0
MCP_TIMEOUT_S = 120.0
MIN_MEMORY_BYTES = 512 << 20  # below this the interpreter and NumPy alone do not fit
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


@dataclass(frozen=True)
class Limits:
    """timeout_s: wall-clock seconds (None: none). memory_bytes: the child's address-space limit (None: none)."""

    timeout_s: float | None = CLI_TIMEOUT_S
    memory_bytes: int | None = None

    def __post_init__(self):
        t = self.timeout_s
        if t is not None and (not isinstance(t, int | float) or not math.isfinite(t) or t <= 0):
            raise NkiUsageError("err_invalid_argument", f"timeout {t!r} seconds", "pass a positive number of seconds, e.g. --timeout 600")
        m = self.memory_bytes
        if m is not None and (not isinstance(m, int) or m < MIN_MEMORY_BYTES):
            raise NkiUsageError(
                "err_invalid_argument", f"memory limit {m!r} bytes", f"pass at least {MIN_MEMORY_BYTES >> 20}M, e.g. --memory 8G"
            )


def physical_memory() -> int | None:
    """Bytes of RAM of this machine, when the OS says."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def cli_limits(timeout_s: float | None = None, memory: str | int | None = None) -> Limits:
    """The CLI's limits: --timeout (default 600 s) and --memory (default 75% of RAM)."""
    ram = physical_memory()
    default = max(MIN_MEMORY_BYTES, int(ram * 0.75)) if ram else None
    return Limits(CLI_TIMEOUT_S if timeout_s is None else timeout_s, parse_memory(memory) if memory is not None else default)


def mcp_limits(timeout_s: float | None = None, memory: str | int | None = None) -> Limits:
    """The MCP server's limits: 120 s and min(8 GiB, half the RAM) unless the server was started with others."""
    ram = physical_memory()
    default = max(MIN_MEMORY_BYTES, min(8 << 30, int(ram * 0.5))) if ram else 8 << 30
    return Limits(MCP_TIMEOUT_S if timeout_s is None else timeout_s, parse_memory(memory) if memory is not None else default)


def parse_memory(text: str | int) -> int:
    """'8G', '512M', '2.5g', '1073741824' -> bytes (binary units)."""
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*", str(text), re.I)
    if not m:
        raise NkiUsageError("err_invalid_argument", f"memory limit {text!r}", "write a size such as 8G, 512M or 2.5G")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])
