-- Spills ([sources: agentic-investigations]): compiler-inserted SBUF <-> HBM traffic, DmaPacketAggregated rows with
-- VIRTUAL in source (reload) or dest (save). Lines come from the reload direction (its Flow edges
-- are complete); the cost of a spill is save + reload = 2 x reload bytes.

-- name: totals
SELECT coalesce(sum(transfer_bytes) FILTER (WHERE is_spill_save), 0) AS save_bytes,
       coalesce(sum(transfer_bytes) FILTER (WHERE is_spill_reload), 0) AS reload_bytes,
       (SELECT coalesce(sum(transfer_bytes), 0) FROM packets
         WHERE kernel AND queue_name ILIKE '%spill%') AS spill_queue_bytes
FROM dpa;

-- name: lines
SELECT d.src, count(*) AS reloads, sum(d.transfer_bytes) AS reload_bytes,
       list(DISTINCT CAST(d.variable AS VARCHAR) ORDER BY CAST(d.variable AS VARCHAR))
         FILTER (WHERE d.variable IS NOT NULL) AS tensors
FROM issued d
WHERE d.has_issuer AND d.is_spill_reload
GROUP BY d.src
ORDER BY reload_bytes DESC, d.src;
