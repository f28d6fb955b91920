"""Give freed memory back to the operating system between the stages of a big profile.

A million-instruction profile allocates and frees several hundred MB of temporary arrays per stage;
glibc keeps freed heap memory mapped (its mmap threshold grows as large blocks are freed), so the process
would keep its peak footprint for the next stage and for a long-lived server. `release()` asks glibc to
return it (`malloc_trim`); elsewhere it does nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import sys
from collections.abc import Iterator

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


@contextlib.contextmanager
def arrow_on_glibc() -> Iterator[None]:
    """Arrow buffers made inside come from glibc's heap (pyarrow's system pool) instead of its bundled allocator.

    Profile tables are built and written a chunk at a time: the bundled mimalloc keeps the freed chunks' pages
    for itself, where NumPy's next temporaries cannot reuse them and `release` cannot return them, so a big
    profile peaked ~70 MB higher (swiglu_1m: 769 -> 710 MiB on glibc). Buffers remember their pool: they are
    freed correctly after the block ends. Elsewhere (no glibc) nothing changes."""
    if _TRIM is None:
        yield
        return
    import pyarrow as pa

    previous = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())
    try:
        yield
    finally:
        pa.set_memory_pool(previous)
