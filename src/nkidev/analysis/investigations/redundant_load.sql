-- Redundant loads ([sources: agentic-investigations]): per input tensor, the bytes its loads read from HBM against its size
-- (TensorInfo), and the lines that load it.
-- A load's bytes are the HBM side (dpa.hbm_read_bytes, prepare.sql): a cast on the DMA writes more bytes
-- than it reads, and the read side is what reloads repeat. A transfer counts each byte of the tensor at
-- most once: a stride-0 broadcast (one row sent to 128 partitions) reads more bytes than the tensor holds
-- but loads every element once, so one transfer's bytes are capped at the tensor's size. When the profile's
-- producer states the bytes loaded per tensor (TensorInfo.load_to_sbuf_total_size_bytes; nkidev counts each
-- transfer's region of the tensor once), that number is used instead.

-- name: tensors
WITH moved AS (
    SELECT d.variable, sum(least(d.hbm_read_bytes, t.size)) AS bytes, sum(d.hbm_read_bytes) AS raw_bytes,
           count(*) AS transfers, max(d.hbm_read_bytes) AS largest_transfer
    FROM dpa d JOIN tensors t ON TRY_CAST(t.variable_name AS nk_variable) = d.variable  -- a name no transfer has matches none
    WHERE d.is_load AND d.variable IS NOT NULL AND t.type = 'IN'
    GROUP BY d.variable
)
SELECT t.variable_name AS tensor, t.size,
       coalesce(t.loaded_bytes, m.bytes, 0) AS bytes,
       CASE WHEN t.loaded_bytes IS NOT NULL THEN 'TensorInfo.load_to_sbuf_total_size_bytes'
            ELSE 'DmaPacketAggregated.read_bytes' END AS bytes_source,
       coalesce(m.raw_bytes, 0) AS raw_bytes, coalesce(m.transfers, 0) AS transfers,
       coalesce(m.largest_transfer, 0) AS largest_transfer,
       coalesce(t.loaded_bytes, m.bytes, 0) / t.size AS repeat
FROM tensors t LEFT JOIN moved m ON m.variable = t.variable_name
WHERE t.type = 'IN'
ORDER BY coalesce(t.loaded_bytes, m.bytes, 0) - t.size DESC, t.variable_name;

-- name: lines
SELECT d.variable AS tensor, d.src, count(*) AS transfers, sum(d.hbm_read_bytes) AS bytes
FROM issued d
WHERE d.has_issuer AND d.is_load
GROUP BY d.variable, d.src
ORDER BY bytes DESC, d.variable, d.src;
