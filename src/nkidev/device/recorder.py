"""The probe functions of a recording variant (probes.recording_variant): each instrumented statement, as it
finishes in the emulator, notes its site and how many instructions the program had issued by then, so the
bisect knows which instructions each statement execution issued (and the shape and dtype of its tile); the
kernel's return notes which storages it returns, so a differing output element leads to the instructions
that wrote it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

from nkidev.emulator import context


class Record(NamedTuple):
    site: int
    issued: int  # instructions issued by the program when the statement finished
    shape: tuple[int, ...]
    dtype: str


_local = threading.local()


def record(site: int, tile) -> None:
    records = getattr(_local, "records", None)
    if records is not None:
        records.append(Record(site, context.current().counter[0], tuple(getattr(tile, "shape", ())), str(getattr(tile, "dtype", ""))))


def returned(value):
    """The kernel's return value, unchanged; notes the trace storage id of each returned tensor (None if not one)."""
    records = getattr(_local, "records", None)
    if records is not None:
        values = value if isinstance(value, tuple | list) else (value,)
        records.returned = [getattr(getattr(v, "storage", None), "id", None) for v in values]
    return value


class Records(list):
    returned: list | None = None  # storage ids of the kernel's outputs, in return order


@contextmanager
def recording() -> Iterator[Records]:
    """Collect the records of the kernel runs inside the block (this thread only)."""
    previous = getattr(_local, "records", None)
    _local.records = records = Records()
    try:
        yield records
    finally:
        _local.records = previous
