-- Redundant loads (profiles.md §3.5): per input tensor, the bytes DMAs moved for it
-- (DmaPacketAggregated.variable) against its size (TensorInfo), and the lines that load it.

-- name: tensors
WITH moved AS (
    SELECT variable, sum(transfer_bytes) AS bytes, count(*) AS transfers
    FROM dpa WHERE variable IS NOT NULL GROUP BY variable
)
SELECT t.variable_name AS tensor, t.size, coalesce(m.bytes, 0) AS bytes, coalesce(m.transfers, 0) AS transfers,
       coalesce(m.bytes, 0) / t.size AS repeat
FROM tensors t LEFT JOIN moved m ON m.variable = t.variable_name
WHERE t.type = 'IN'
ORDER BY coalesce(m.bytes, 0) - t.size DESC;

-- name: lines
SELECT d.variable AS tensor, i.src, count(*) AS transfers, sum(d.transfer_bytes) AS bytes
FROM flow_dma f
JOIN inst i ON i.id = f.in_id
JOIN dpa d ON d.id = f.out_id
WHERE d.is_load AND i.hbm_read_bytes > 0
GROUP BY d.variable, i.src
ORDER BY bytes DESC;
