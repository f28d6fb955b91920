"""Crash-safe file writes: a file is either its old bytes or its new bytes, never a torn mix.

`write_bytes` writes a temporary file next to the destination, fsyncs it, renames it over the destination
(atomic on POSIX and Windows) and fsyncs the directory, so the rename itself survives a power cut.
`crash_point(label)` marks the steps of a multi-file operation; tests set `crash_hook` to stop a process at
the k-th step and check that the next run recovers (tests/test_crash_points.py).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path

crash_hook: Callable[[str], None] | None = None  # tests only: called at every crash point with its label


def crash_point(label: str) -> None:
    if crash_hook is not None:
        crash_hook(label)


def fsync_dir(path: Path) -> None:
    """Make a rename or a new entry in `path` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def temp_name(path: Path, tag: str) -> Path:
    """A hidden sibling of `path` naming the process that made it: `.NAME.nkidev-TAG-PID-RANDOM`."""
    return path.with_name(f".{path.name}.nkidev-{tag}-{os.getpid()}-{uuid.uuid4().hex[:8]}")


def owner_alive(leftover: Path) -> bool:
    """Whether the process that made a `temp_name` is still running (its leftovers are not ours to clean)."""
    try:
        pid = int(leftover.name.rsplit("-", 2)[-2])
    except (ValueError, IndexError):
        return False
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def write_bytes(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace `path` with `data` atomically (temp file + fsync + rename + directory fsync)."""
    path = Path(path)
    tmp = temp_name(path, "tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        elif path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        crash_point(f"replace {path.name}")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def remove_stale_temps(path: Path) -> None:
    """Delete temporary siblings of `path` that a crashed `write_bytes` left behind (their process is gone)."""
    path = Path(path)
    if not path.parent.is_dir():
        return
    for tmp in path.parent.glob(f".{path.name}.nkidev-tmp-*"):
        if not owner_alive(tmp):
            tmp.unlink(missing_ok=True)
