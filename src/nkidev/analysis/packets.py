"""The DMA packets grouped on arrays (prepare.sql's `pkt`, built by its `pkt_arrays` part).

`pkt` is one row per (start_ts, end_ts, kernel) with its packet count and bytes. For 9.5M packets a DuckDB scan
plus hash aggregate costs ~0.7 s CPU; here pyarrow decodes the three integer columns and the queue type (as
dictionary codes: the kernel rule is evaluated once per distinct name), each row group is first compressed
into runs of consecutive packets with equal keys (a transfer's packets are stored together and share a start,
and in nkidev's profiles an end), and the runs are sorted and summed per key: the same rows, in ~0.4 s.
Only the profile's own DmaPacket files are read (the ones the connection may read).

Only a profile whose start_ts, end_ts and transfer_bytes are 64-bit integers without NULLs in every file, and
whose queue_type is text (or absent), takes this path; any other (a TIMESTAMP or DOUBLE column, NULLs, a file
pyarrow cannot read) gets None and prepare.sql groups the `packets` view itself: same rows either way.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from nkidev.analysis.tables import Profile

INTS = ("start_ts", "end_ts", "transfer_bytes")
KEYS = ("start_ts", "end_ts", "kernel")


def packet_groups(profile: Profile) -> pa.Table | None:
    """One row per (start_ts, end_ts, kernel) of the DmaPacket rows with `packets` (their count) and
    `transfer_bytes` (their sum), as prepare.sql's `pkt` query; None when the profile needs that query."""
    files = profile.files.get("DmaPacket")
    if not files or not profile.has("DmaPacket", *INTS):
        return None
    parts = []
    try:
        for f in files:
            pf = pq.ParquetFile(f)
            schema = pf.schema_arrow
            if any(c not in schema.names or schema.field(c).type != pa.int64() for c in INTS):
                return None
            has_qt = "queue_type" in schema.names
            if has_qt and not _is_text(schema.field("queue_type").type):
                return None
            cols = [*INTS, "queue_type"] if has_qt else list(INTS)
            if has_qt:  # the queue type as dictionary codes: the kernel rule is evaluated once per distinct name
                pf = pq.ParquetFile(f, metadata=pf.metadata, read_dictionary=["queue_type"])
            for g in range(pf.num_row_groups):
                t = pf.read_row_group(g, columns=cols, use_threads=False)
                if t.num_rows == 0:
                    continue
                if any(t.column(c).null_count for c in INTS):
                    return None
                parts.append(_runs(t, has_qt))
    except (OSError, pa.ArrowException):
        return None
    if not parts:
        return None
    runs = {k: np.concatenate([p[k] for p in parts]) for k in (*KEYS, "packets", "transfer_bytes")}
    b = runs["transfer_bytes"]
    if len(b) and int(np.abs(b).max()) * int(runs["packets"].sum()) >= 2**63:
        return None  # a sum could pass int64 (DuckDB sums in 128 bits)
    o = np.lexsort((runs["kernel"], runs["end_ts"], runs["start_ts"]))
    s, e, k = runs["start_ts"][o], runs["end_ts"][o], runs["kernel"][o]
    at = _breaks(s, e, k)
    return pa.table(
        {
            "start_ts": s[at],
            "end_ts": e[at],
            "kernel": k[at],
            "packets": np.add.reduceat(runs["packets"][o], at),
            "transfer_bytes": np.add.reduceat(b[o], at),
        }
    )


def _is_text(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        t = t.value_type
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _breaks(s: np.ndarray, e: np.ndarray, k: np.ndarray) -> np.ndarray:
    """The indices where a run of equal (s, e, k) starts."""
    brk = np.empty(len(s), dtype=bool)
    brk[0] = True
    np.not_equal(s[1:], s[:-1], out=brk[1:])
    brk[1:] |= e[1:] != e[:-1]
    if not (k.all() or not k.any()):  # a row group of kernel packets only (the usual case) needs no comparison
        brk[1:] |= k[1:] != k[:-1]
    return np.flatnonzero(brk)


def _runs(t: pa.Table, has_qt: bool) -> dict[str, np.ndarray]:
    s = t.column("start_ts").to_numpy()
    e = t.column("end_ts").to_numpy()
    b = t.column("transfer_bytes").to_numpy()
    # prepare.sql's rule: coalesce(queue_type, '') <> 'instruction' AND coalesce(transfer_bytes, 0) > 4
    kernel = b > 4
    if has_qt:
        qt = t.column("queue_type").combine_chunks()
        if not pa.types.is_dictionary(qt.type):
            qt = qt.dictionary_encode()
        infra = np.asarray(qt.dictionary.to_pylist(), dtype=object) == "instruction"
        if infra.any():  # else no packet of the row group is infrastructure: no per-packet lookup
            is_infra = infra[qt.indices.fill_null(0).to_numpy().astype(np.int64)]
            if qt.null_count:  # coalesce(NULL, '') is not 'instruction'
                is_infra &= qt.is_valid().to_numpy(zero_copy_only=False)
            kernel &= ~is_infra
    at = _breaks(s, e, kernel)
    return {
        "start_ts": s[at],
        "end_ts": e[at],
        "kernel": kernel[at],
        "packets": np.diff(np.append(at, len(s))),
        "transfer_bytes": np.add.reduceat(b, at),
    }
