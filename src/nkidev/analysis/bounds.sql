-- The inputs of the performance bounds ([sources: agentic-bounds "Performance Bounds"]), all within the window [t0, t1).
-- Byte and FLOP sums count rows that start inside the window; busy times come from the merged
-- intervals of busy.sql, already clipped to the window.
WITH w AS (SELECT t0, t1 FROM win),
active AS (SELECT engine, ns FROM busy_ns),
mm AS (
    SELECT coalesce(sum(adjusted_flops), 0) AS hw_flops,
           coalesce(sum(adjusted_flops) FILTER (WHERE is_transpose), 0) AS transpose_flops,
           count(*) AS matmuls
    FROM inst, w WHERE is_matmul AND start_ts >= w.t0 AND start_ts < w.t1
)
SELECT w.t0, w.t1, w.t1 - w.t0 AS total_time_ns,
       (SELECT source FROM win) AS window_source,
       (SELECT coalesce(sum(transfer_bytes), 0) FROM pkt
         WHERE kernel AND start_ts >= w.t0 AND start_ts < w.t1) AS dma_transfer_bytes,
       (SELECT coalesce(sum(packets), 0) FROM pkt WHERE kernel) AS kernel_packets,
       -- the HBM side of the DMA traffic (prepare.sql), from DmaPacketAggregated; else the DMA instructions'
       -- hbm_read_bytes + hbm_write_bytes; NULL when the profile has neither (then every DMA byte counts)
       CASE WHEN EXISTS (SELECT 1 FROM dpa)
            THEN (SELECT sum(hbm_read_bytes + hbm_write_bytes) FROM dpa WHERE start_ts >= w.t0 AND start_ts < w.t1)
            ELSE (SELECT nullif(sum(hbm_read_bytes + hbm_write_bytes), 0) FROM inst) END AS hbm_bytes,
       (SELECT length_source FROM win) AS length_source,
       (SELECT sum(size) FROM tensors WHERE type IN ('IN', 'OUT')) AS necessary_bytes,
       mm.hw_flops, mm.transpose_flops, mm.matmuls,
       (SELECT dma_bw_peak FROM meta) AS dma_bw_peak,
       (SELECT te_peak_flops FROM meta) AS te_peak_flops,
       coalesce((SELECT ns FROM active WHERE engine = 'dma'), 0) AS dma_ns,
       coalesce((SELECT ns FROM active WHERE engine = 'tensor'), 0) AS tensor_ns,
       coalesce((SELECT ns FROM active WHERE engine = 'vector'), 0) AS vector_ns,
       coalesce((SELECT ns FROM active WHERE engine = 'scalar'), 0) AS scalar_ns,
       coalesce((SELECT ns FROM active WHERE engine = 'gpsimd'), 0) AS gpsimd_ns
FROM w, mm;
