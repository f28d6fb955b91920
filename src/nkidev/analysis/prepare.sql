-- Normalized tables shared by the bounds and the investigations, built from the typed copies
-- _raw_<Table> (tables.py). Column meanings: [sources: explorer-schema].
-- Run in order by tables.prepare: `load`, `pkt` (or `pkt_arrays`, the same table built from the groups
-- packets.py computed), `flow` and `inst_ids` (read by issuers.py), `dpa`, `issued_view` (or `issued_join`
-- when a transfer has several issuers), then `tables`.

-- name: load

-- Engine names differ between producers ('Tensor', 'tensor', 'TensorMatrix', 'Pool'...): one key each.
CREATE OR REPLACE MACRO engine_key(e) AS CASE
    WHEN lower(e) LIKE 'tensor%' OR lower(e) = 'pe' THEN 'tensor'
    WHEN lower(e) LIKE 'vector%' OR lower(e) = 'dve' THEN 'vector'
    WHEN lower(e) LIKE 'scalar%' OR lower(e) LIKE 'act%' THEN 'scalar'
    WHEN lower(e) LIKE 'gpsimd%' OR lower(e) LIKE 'pool%' THEN 'gpsimd'
    ELSE coalesce(lower(e), 'unknown') END;

-- Text columns are coded once, at load time: engine, opcode and source location become ENUMs of their
-- distinct values (sorted, so ORDER BY, min() and comparisons see the same order as the text), and the
-- tables below hold small integers instead of a million strings. Results still come back as text.
CREATE OR REPLACE TEMP TABLE _texts AS
SELECT DISTINCT engine, opcode, coalesce(nki_source_location, bir_debug_info_source_location) AS src FROM _raw_Instruction;
CREATE TYPE nk_engine AS ENUM (
    SELECT DISTINCT engine_key(e) AS k FROM (
        SELECT engine AS e FROM _texts
        UNION SELECT engine FROM _raw_ActiveTime
        UNION SELECT unnest(['tensor', 'vector', 'scalar', 'gpsimd', 'dma'])
    ) ORDER BY k);
CREATE TYPE nk_opcode AS ENUM (SELECT DISTINCT opcode FROM _texts WHERE opcode IS NOT NULL ORDER BY opcode);
CREATE TYPE nk_src AS ENUM (SELECT DISTINCT src FROM _texts WHERE src IS NOT NULL ORDER BY src);
-- The DMA transfers' tensor names, coded the same way (a few names for 0.6M transfers of a 1M-instruction profile).
CREATE TYPE nk_variable AS ENUM (SELECT DISTINCT variable FROM _raw_DmaPacketAggregated WHERE variable IS NOT NULL ORDER BY variable);

-- The codes of each distinct (engine, opcode, location), computed once per combination: an instruction
-- takes its codes from this small table by a join on its text, which DuckDB hashes once per Parquet
-- dictionary entry, instead of evaluating the casts and string functions on a million rows.
CREATE OR REPLACE TEMP TABLE _codes AS
SELECT engine AS engine_text, opcode AS opcode_text, src AS src_text,
       CAST(engine_key(engine) AS nk_engine) AS engine,
       CAST(opcode AS nk_opcode) AS opcode,
       CAST(src AS nk_src) AS src,
       -- MATMUL is neuron-explorer's opcode; nc_matmul / nc_transpose are the NKI names a writer may keep.
       engine_key(engine) = 'tensor' AND upper(opcode) IN ('MATMUL', 'NC_MATMUL', 'NC_TRANSPOSE') AS is_matmul
FROM _texts;

CREATE OR REPLACE TEMP TABLE inst AS
SELECT r.id,
       c.engine,
       c.opcode,
       r.start_ts,
       r.end_ts,
       coalesce(r.duration_ns, r.end_ts - r.start_ts) AS duration_ns,
       c.is_matmul,
       coalesce(upper(r.tensor_instruction_type) = 'TRANSPOSE', false) AS is_transpose,
       -- only matmul operands are ever parsed (te_underutilization): other rows keep no text
       CASE WHEN c.is_matmul THEN r.operands END AS operands,
       coalesce(r.adjusted_flops, 0) AS adjusted_flops,
       c.src,
       coalesce(r.hbm_read_bytes, 0) AS hbm_read_bytes,
       coalesce(r.hbm_write_bytes, 0) AS hbm_write_bytes,
       coalesce(r.pcore_idx, 0) AS core
FROM _raw_Instruction r
JOIN _codes c ON c.engine_text IS NOT DISTINCT FROM r.engine AND c.opcode_text IS NOT DISTINCT FROM r.opcode
             AND c.src_text IS NOT DISTINCT FROM coalesce(r.nki_source_location, r.bir_debug_info_source_location)
WHERE r.start_ts IS NOT NULL AND r.end_ts IS NOT NULL;

-- Every DMA packet; kernel packets exclude infrastructure traffic (instruction fetch) and 4-byte semaphore
-- writes. A view over the Parquet files: the aggregate below reads it once, and the two queries that need a
-- packet's queue name (spill, te_idle without DmaPacketAggregated) read that column only.
CREATE OR REPLACE TEMP VIEW packets AS
SELECT start_ts, end_ts, transfer_bytes, queue_name,
       coalesce(queue_type, '') <> 'instruction' AND coalesce(transfer_bytes, 0) > 4 AS kernel
FROM _raw_DmaPacket
WHERE start_ts IS NOT NULL AND end_ts IS NOT NULL;

-- name: pkt
-- The packets aggregated once: one row per (start, end, kernel) with its packet count and bytes. The packets
-- of one transfer share a start (and in nkidev's profiles an end), and the window, the bounds and the busy
-- merge need only counts, sums and spans: a 1M-instruction profile's 9.5M packets become 0.6M rows.
CREATE OR REPLACE TEMP TABLE pkt AS
SELECT start_ts, end_ts, kernel, count(*) AS packets, sum(transfer_bytes) AS transfer_bytes
FROM packets
GROUP BY start_ts, end_ts, kernel;

-- name: pkt_arrays
-- The same rows, grouped on arrays (packets.py) when the profile's packet columns allow it: _pkt_groups holds
-- one row per (start_ts, end_ts, kernel); the types are those of the query above (sum(BIGINT) is a HUGEINT).
CREATE OR REPLACE TEMP TABLE pkt AS
SELECT start_ts, end_ts, kernel, CAST(packets AS BIGINT) AS packets, CAST(transfer_bytes AS HUGEINT) AS transfer_bytes
FROM _pkt_groups;

-- name: flow
-- Instruction -> DMA edges. AWS's analysis code matches 'Instruction' -> 'DmaPacketAggregated'; the schema
-- reference names the tables 'instruction' -> 'dma_block'. Accept both spellings. An edge without both ids
-- joins nothing (issued). tables.prepare keeps each distinct (in_id, out_id) once (issuers.py). The names are
-- compared case-insensitively with ILIKE (no wildcard but the escaped `_`): lower() made a new string per edge.
SELECT in_id, out_id FROM _raw_Flow
WHERE in_table ILIKE 'instruction' AND (out_table ILIKE 'dmapacketaggregated' OR out_table ILIKE 'dma\_block' ESCAPE '\')
  AND in_id IS NOT NULL AND out_id IS NOT NULL;

-- name: inst_ids
-- What issuers.py needs of every instruction: its id (-1: NULL), its line's code (-1: none), whether it moves HBM bytes.
SELECT coalesce(id, -1) AS id, coalesce(enum_code(src), -1) AS src, hbm_read_bytes > 0 OR hbm_write_bytes > 0 AS hbm
FROM inst;

-- name: dpa
-- The HBM side of a transfer: what it read from HBM (read_bytes) when its source is in HBM, what it wrote
-- (write_bytes) when its destination is; transfer_bytes when a profile lacks those columns. A cast on the DMA
-- (bf16 in HBM -> fp32 in SBUF) writes more bytes than it reads: the HBM side counts the bf16 bytes.
-- _issuer (issuers.py) holds each transfer's only issuing instruction, when no transfer has several: its line
-- (code) and whether it moves HBM bytes; has_issuer, issuer_src and issuer_hbm carry them for the `issued` view.
-- When some transfer has several issuers _issuer is empty and `issued` is the join of `issued_join` instead.
CREATE OR REPLACE TEMP TABLE dpa AS
-- The text tests are evaluated once per distinct (source, dest, variable), a handful, and joined to the
-- transfers (like inst's codes): per transfer they were eight LIKEs and an ENUM cast.
WITH k AS MATERIALIZED (
    SELECT source, dest, variable, CAST(variable AS nk_variable) AS variable_code,
           coalesce(source NOT LIKE '%SB%' AND source NOT LIKE '%PSUM%', false) AS src_hbm,
           coalesce(dest NOT LIKE '%SB%' AND dest NOT LIKE '%PSUM%', false) AS dst_hbm,
           coalesce(source LIKE '%INPUT%', false) AS is_load,
           coalesce(source LIKE '%VIRTUAL%', false) AS is_spill_reload,
           coalesce(dest LIKE '%VIRTUAL%', false) AS is_spill_save,
           coalesce(dest LIKE '%OUTPUT%', false) AS is_store
    FROM (SELECT DISTINCT source, dest, variable FROM _raw_DmaPacketAggregated)
), names AS (SELECT CAST(unnest(enum_range(NULL::nk_src)) AS nk_src) AS src)
SELECT d.id, d.start_ts, d.end_ts, coalesce(d.transfer_bytes, 0) AS transfer_bytes, k.variable_code AS variable,
       CASE WHEN k.src_hbm THEN coalesce(nullif(d.read_bytes, 0), d.transfer_bytes, 0) ELSE 0 END AS hbm_read_bytes,
       CASE WHEN k.dst_hbm THEN coalesce(nullif(d.write_bytes, 0), d.transfer_bytes, 0) ELSE 0 END AS hbm_write_bytes,
       d.write_num_sbuf_partitions, d.read_num_sbuf_partitions,
       coalesce(d.is_transpose_mode, false) AS is_transpose_mode,
       k.is_load, k.is_spill_reload, k.is_spill_save, k.is_store,
       x.out_id IS NOT NULL AS has_issuer, n.src AS issuer_src, coalesce(x.hbm_instruction, false) AS issuer_hbm
FROM _raw_DmaPacketAggregated d
JOIN k ON k.source IS NOT DISTINCT FROM d.source AND k.dest IS NOT DISTINCT FROM d.dest
      AND k.variable IS NOT DISTINCT FROM d.variable
LEFT JOIN _issuer x ON x.out_id = d.id
LEFT JOIN names n ON enum_code(n.src) = x.code;

-- name: issued_view
-- Each DMA transfer with the line of the instruction that issued it (DmaPacketAggregated <- Flow <- Instruction),
-- for the per-line queries and te_idle: one row per transfer, has_issuer false for one no Flow edge names
-- (te_idle still counts it). When no transfer has several issuers, dpa already holds that (issuers.py).
CREATE OR REPLACE TEMP VIEW issued AS
SELECT id AS out_id, has_issuer, issuer_src AS src, issuer_hbm AS hbm_instruction,
       start_ts, end_ts, transfer_bytes, variable, hbm_read_bytes, is_load, is_transpose_mode,
       is_spill_save, is_spill_reload, is_store, write_num_sbuf_partitions, read_num_sbuf_partitions
FROM dpa;

-- name: issued_join
-- The same with transfers that several instructions issued: one row per (transfer, issuing instruction).
-- (The narrow Flow -> Instruction join first: joined in one step, DuckDB probes the instructions with the wide
-- transfer rows and takes twice as long.)
CREATE OR REPLACE TEMP TABLE issued AS
-- _flow_dma (tables.prepare): the distinct Instruction -> DMA edges of the `flow` query (issuers.distinct_edges).
WITH issuer AS MATERIALIZED (
    SELECT f.out_id, i.src, i.hbm_read_bytes > 0 OR i.hbm_write_bytes > 0 AS hbm_instruction
    FROM _flow_dma f JOIN inst i ON i.id = f.in_id
)
SELECT d.id AS out_id, f.out_id IS NOT NULL AS has_issuer, f.src, coalesce(f.hbm_instruction, false) AS hbm_instruction,
       d.start_ts, d.end_ts, d.transfer_bytes, d.variable, d.hbm_read_bytes, d.is_load, d.is_transpose_mode,
       d.is_spill_save, d.is_spill_reload, d.is_store, d.write_num_sbuf_partitions, d.read_num_sbuf_partitions
FROM dpa d LEFT JOIN issuer f ON f.out_id = d.id;

-- name: tables
CREATE OR REPLACE TEMP TABLE tensors AS
SELECT variable_name, upper(type) AS type, size, load_to_sbuf_total_size_bytes AS loaded_bytes
FROM _raw_TensorInfo WHERE size > 0;

CREATE OR REPLACE TEMP TABLE meta AS
SELECT dma_ddr_bandwidth AS dma_bw_peak,
       tensor_engine_num_rows * tensor_engine_num_cols * 2.0 * tensor_engine_clock_freq * 1e9 AS te_peak_flops,
       tensor_engine_num_rows AS te_rows,
       tensor_engine_num_cols AS te_cols,
       instance_type
FROM (SELECT * FROM _raw_Metadata LIMIT 1);

-- The analysis window and the kernel time (one definition, used by every report): the window ends with the
-- last kernel DMA transfer (DmaPacket, and DmaPacketAggregated when present; a profile without DMA ends with
-- its last instruction). Its length is the profile's own kernel time, Summary.total_time, when the profile
-- has one (nkidev writes the first instruction start to the last end, so `nkidev profile` and
-- `nkidev analyze` print the same time); otherwise the window starts with the first kernel DMA transfer.
CREATE OR REPLACE TEMP TABLE win AS
WITH dma AS (
    SELECT start_ts, end_ts FROM pkt WHERE kernel
    UNION ALL SELECT start_ts, end_ts FROM dpa WHERE start_ts IS NOT NULL
), d AS (SELECT min(start_ts) AS t0, max(end_ts) AS t1, count(*) AS n FROM dma),
   i AS (SELECT min(start_ts) AS t0, max(end_ts) AS t1 FROM inst),
   s AS (SELECT CAST(round(max(total_time) * 1e9) AS BIGINT) AS ns FROM _raw_Summary WHERE total_time > 0),
   w AS (
    SELECT CASE WHEN d.n > 0 THEN d.t0 ELSE i.t0 END AS first_ts,
           CASE WHEN d.n > 0 THEN d.t1 ELSE i.t1 END AS t1,
           CASE WHEN d.n > 0 THEN 'dma' ELSE 'instructions' END AS source,
           s.ns AS summary_ns
    FROM d, i, s
)
SELECT CASE WHEN summary_ns IS NOT NULL THEN t1 - summary_ns ELSE first_ts END AS t0, t1, source,
       CASE WHEN summary_ns IS NOT NULL THEN 'Summary.total_time' ELSE 'window' END AS length_source
FROM w;

-- The compute engines' instructions within the window, counted and timed per (engine, line): engines.sql sums
-- them per engine and lines.sql per line, from these few rows instead of a scan of every instruction each.
CREATE OR REPLACE TEMP TABLE inst_lines AS
WITH w AS (SELECT t0, t1 FROM win)
SELECT engine, src, count(*) AS instructions, sum(duration_ns) AS engine_ns
FROM inst, w
WHERE engine IN ('tensor', 'vector', 'scalar', 'gpsimd') AND start_ts >= w.t0 AND start_ts < w.t1
GROUP BY engine, src;
