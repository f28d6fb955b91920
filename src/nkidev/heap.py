"""Give freed memory back to the operating system between the stages of a big profile.

A million-instruction profile allocates and frees several hundred MB of temporary arrays per stage;
glibc keeps freed heap memory mapped (its mmap threshold grows as large blocks are freed), so the process
would keep its peak footprint for the next stage and for a long-lived server. `release()` asks glibc to
return it (`malloc_trim`); elsewhere it does nothing.
"""

from __future__ import annotations

import ctypes
import sys

_TRIM = None
if sys.platform.startswith("linux"):
    try:
        _TRIM = ctypes.CDLL(None).malloc_trim  # glibc; musl has no malloc_trim
    except (OSError, AttributeError):
        _TRIM = None


def release() -> None:
    """Return free heap memory to the OS (glibc's malloc_trim; a no-op elsewhere)."""
    if _TRIM is not None:
        _TRIM(0)
