"""Check that two profile directories hold the same tables: every `<Table>.parquet` equal (schema and values),
and trace.json / hardware.json the same bytes. Performance changes to the cost model and the profile writer
must keep profiles bit-identical; run this on a profile written before and after the change.

    python bench/profile_large.py --kernel matmul_tiled --out /tmp/before   # on the old code
    python bench/profile_large.py --kernel matmul_tiled --out /tmp/after    # on the new code
    python bench/compare_profiles.py /tmp/before /tmp/after

Metadata columns that record when the profile was written are ignored (`--ignore-metadata COLUMN,...`).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

import pyarrow.parquet as pq

VOLATILE_METADATA = ("explorer_build_time",)  # the time the profile was written


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _without_volatile(table, ignore: set[str]):
    return table.drop_columns([c for c in table.column_names if c in ignore])


def compare(a: Path, b: Path, ignore: set[str]) -> list[str]:
    """The differences between profiles `a` and `b` (empty: identical)."""
    problems = []
    names_a = {p.name for p in a.glob("*.parquet")}
    names_b = {p.name for p in b.glob("*.parquet")}
    for name in sorted(names_a ^ names_b):
        problems.append(f"{name}: only in {'the first' if name in names_a else 'the second'} profile")
    for name in sorted(names_a & names_b):
        ta, tb = pq.read_table(a / name), pq.read_table(b / name)
        if name == "Metadata.parquet":
            ta, tb = _without_volatile(ta, ignore), _without_volatile(tb, ignore)
        if ta.schema != tb.schema:
            problems.append(f"{name}: schemas differ\n{ta.schema}\n---\n{tb.schema}")
        elif not ta.equals(tb):
            diff = [c for c in ta.column_names if not ta.column(c).equals(tb.column(c))]
            problems.append(f"{name}: {ta.num_rows} vs {tb.num_rows} rows; columns that differ: {diff}")
    for name in ("trace.json", "hardware.json"):
        pa_, pb = a / name, b / name
        if pa_.exists() != pb.exists():
            problems.append(f"{name}: only in one profile")
        elif pa_.exists() and _digest(pa_) != _digest(pb):
            problems.append(f"{name}: contents differ")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--ignore-metadata", default=",".join(VOLATILE_METADATA), help="Metadata keys that may differ")
    args = parser.parse_args(argv)
    problems = compare(args.before, args.after, {k for k in args.ignore_metadata.split(",") if k})
    for p in problems:
        print(p)
    print("identical" if not problems else f"{len(problems)} difference(s)")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
