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
import pyarrow as pa
import pyarrow.parquet as pq

from nkidev.analysis.tables import Profile

FLOW_INTS = ("in_id", "out_id")
FLOW_NAMES = ("in_table", "out_table")

# A lookup table indexed by instruction id is used while the largest id is at most this many times the number of
# instructions (plus a little): ids are dense in every profile seen; sparse ones take prepare.sql's join.
MAX_ID_SPREAD = 4
ID_SLACK = 1 << 20


def flow_edges(profile: Profile) -> tuple[np.ndarray, np.ndarray] | None:
    """(in_id, out_id) of the Flow rows prepare.sql's `flow` query keeps, read with pyarrow: the ids as int64 arrays,
    the table names as dictionary codes, so the query's name test (ILIKE, run by DuckDB itself) is evaluated once
    per distinct name instead of once per edge. None when the query must run instead: Flow absent or split over
    files whose ids are not int64 or whose names are not text, or a file pyarrow cannot read."""
    files = profile.files.get("Flow")
    if not files or not profile.has("Flow", *FLOW_INTS, *FLOW_NAMES):
        return None
    ins, outs, cache = [], [], {}
    try:
        for f in files:
            schema = pq.read_schema(f)
            if any(c not in schema.names for c in (*FLOW_INTS, *FLOW_NAMES)):
                return None
            if any(schema.field(c).type != pa.int64() for c in FLOW_INTS) or not all(_is_text(schema.field(c).type) for c in FLOW_NAMES):
                return None
            t = pq.read_table(f, columns=[*FLOW_INTS, *FLOW_NAMES], read_dictionary=list(FLOW_NAMES), use_threads=False)
            keep = _name_matches(profile, t.column("in_table"), "in", cache) & _name_matches(profile, t.column("out_table"), "out", cache)
            ids = []
            for c in FLOW_INTS:  # an edge without both ids joins nothing
                col = t.column(c)
                if col.null_count:
                    keep &= col.is_valid().to_numpy(zero_copy_only=False)
                    col = col.fill_null(0)
                ids.append(col.to_numpy())
            if not keep.all():
                ids = [a[keep] for a in ids]
            ins.append(ids[0])
            outs.append(ids[1])
    except (OSError, pa.ArrowException):
        return None
    if not ins:
        return None
    return (ins[0], outs[0]) if len(ins) == 1 else (np.concatenate(ins), np.concatenate(outs))


# prepare.sql's `flow` rule per side, evaluated by DuckDB on each distinct name (a list, in dictionary order)
_NAME_RULE = {
    "in": "SELECT list_transform($names, lambda x: x ILIKE 'instruction') AS ok",
    "out": "SELECT list_transform($names, lambda x: x ILIKE 'dmapacketaggregated' OR x ILIKE 'dma\\_block' ESCAPE '\\') AS ok",
}


def _name_matches(profile: Profile, column: pa.ChunkedArray, side: str, cache: dict) -> np.ndarray:
    """Per row of the dictionary-coded `column`: whether its name passes the `side` rule (NULL: no)."""
    out = []
    for chunk in column.chunks:
        if not pa.types.is_dictionary(chunk.type):
            chunk = chunk.dictionary_encode()
        names = chunk.dictionary.to_pylist()
        key = (side, tuple(names))
        if key not in cache:  # row groups mostly share their dictionary: one query per distinct one
            ok = profile.rows(_NAME_RULE[side], {"names": names})[0]["ok"] if names else []
            cache[key] = np.asarray([bool(v) for v in ok] + [False], dtype=bool)  # the extra entry: a NULL name
        passes = cache[key]
        codes = chunk.indices.fill_null(len(names)).to_numpy().astype(np.int64)
        out.append(passes[codes])
    return np.concatenate(out) if out else np.zeros(0, dtype=bool)


def _is_text(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        t = t.value_type
    return pa.types.is_string(t) or pa.types.is_large_string(t)


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
