"""Which instruction issued each DMA transfer, on arrays (prepare.sql's `dpa` and `issued`).

Flow's Instruction -> DMA edges are deduplicated with a sort (DuckDB's DISTINCT hashed every pair: 0.2 s for
0.6M edges). When no transfer has more than one issuing instruction, as in nkidev's profiles, each transfer's
issuer (its line's code and whether it moves HBM bytes) is looked up here in a table indexed by instruction id,
and prepare.sql joins it into `dpa` once: `issued` is then a view of dpa instead of a second join and a second
copy of every transfer (0.6M rows of a 1M-instruction profile). Otherwise `issued` stays prepare.sql's join,
one row per (transfer, issuer).
"""

from __future__ import annotations

import numpy as np

# A lookup table indexed by instruction id is used while the largest id is at most this many times the number of
# instructions (plus a little): ids are dense in every profile seen; sparse ones take prepare.sql's join.
MAX_ID_SPREAD = 4
ID_SLACK = 1 << 20


def distinct_edges(in_id: np.ndarray, out_id: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (in_id, out_id) pairs, sorted."""
    a, b = in_id.astype(np.int64), out_id.astype(np.int64)
    o = np.lexsort((b, a))
    a, b = a[o], b[o]
    new = np.ones(len(a), dtype=bool)
    new[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    return a[new], b[new]


def single_issuers(in_id: np.ndarray, out_id: np.ndarray, inst: dict[str, np.ndarray]) -> dict[str, np.ndarray] | None:
    """Per transfer with an issuer: `out_id`, the issuer's line `code` (-1: none) and `hbm_instruction`, for the
    distinct edges (in_id, out_id) whose in_id is an instruction of `inst` (id, src, hbm; id -1: NULL, src -1:
    no line). None when that does not give one row per transfer: an instruction id that repeats, a transfer
    with several issuers, negative or sparse ids (then prepare.sql joins)."""
    ids = inst["id"]
    if len(in_id) and (int(in_id.min()) < 0 or int(out_id.min()) < 0):
        return None
    if len(ids) == 0 or len(in_id) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return {"out_id": empty, "code": empty, "hbm_instruction": np.zeros(0, dtype=bool)}
    top = max(int(ids.max()), int(in_id.max())) + 1
    if top > MAX_ID_SPREAD * len(ids) + ID_SLACK:
        return None
    real = np.flatnonzero(ids >= 0)  # a negative id (or NULL, -1) is never an edge's in_id: it issues nothing
    row = np.full(top, -1, dtype=np.int64)
    row[ids[real]] = real
    if not np.array_equal(row[ids[real]], real):
        return None  # an id names two instructions: a transfer joins both
    at = row[in_id]
    linked = at >= 0
    out, at = out_id[linked], at[linked]
    # a stable sort is run-aware: the edges come sorted by instruction, and so do their transfers in nkidev's profiles
    ordered = np.sort(out, kind="stable")
    if (ordered[1:] == ordered[:-1]).any():
        return None  # a transfer with several issuers: one issued row each
    return {"out_id": out, "code": inst["src"][at].astype(np.int64), "hbm_instruction": inst["hbm"][at].astype(bool)}
