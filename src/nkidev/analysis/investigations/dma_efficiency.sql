-- DMA efficiency ([sources: agentic-investigations]): per source line of the HBM transfers, the bytes each DMA moves
-- per SBUF partition ("descriptor bytes" = median transfer bytes / median partitions).
-- Instruction -> Flow -> DmaPacketAggregated. DMA transposes are excluded (slower by design), and so
-- are compiler spills (the spill investigation accounts for them).

-- name: coverage
SELECT coalesce(sum(d.transfer_bytes), 0) AS dpa_bytes
FROM dpa d, win w WHERE d.start_ts >= w.t0 AND d.start_ts < w.t1;

-- name: lines
WITH t AS (
    SELECT d.src, d.transfer_bytes, d.variable, d.is_load, d.end_ts - d.start_ts AS ns,
           CASE WHEN d.is_load THEN d.write_num_sbuf_partitions ELSE d.read_num_sbuf_partitions END AS partitions
    FROM issued d, win w
    WHERE d.hbm_instruction
      AND d.start_ts >= w.t0 AND d.start_ts < w.t1
      AND NOT d.is_transpose_mode AND NOT d.is_spill_save AND NOT d.is_spill_reload
)
, per_line AS (
    SELECT src, count(*) AS transfers, sum(transfer_bytes) AS bytes, sum(ns) AS transfer_ns,
           median(transfer_bytes) AS median_bytes, median(partitions) AS partitions,
           median(transfer_bytes) / greatest(coalesce(median(partitions), 1), 1) AS desc_bytes
    FROM t GROUP BY src
), tensor AS (
    -- the most frequent tensor and direction of the line (ties: by name, loads first), deterministically
    SELECT src, first(variable ORDER BY n DESC, variable) AS tensor
    FROM (SELECT src, variable, count(*) AS n FROM t GROUP BY src, variable) GROUP BY src
), direction AS (
    SELECT src, first(is_load ORDER BY n DESC, is_load DESC) AS is_load
    FROM (SELECT src, is_load, count(*) AS n FROM t GROUP BY src, is_load) GROUP BY src
)
SELECT l.src, l.transfers, l.bytes, l.transfer_ns, v.tensor, d.is_load, l.median_bytes, l.partitions, l.desc_bytes
FROM per_line l
JOIN tensor v ON v.src IS NOT DISTINCT FROM l.src
JOIN direction d ON d.src IS NOT DISTINCT FROM l.src
ORDER BY l.bytes DESC, l.src;
