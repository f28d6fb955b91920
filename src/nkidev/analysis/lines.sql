-- Cost per kernel source line within the window: the summed instruction time per compute engine and the
-- DMA transfers it issued (Instruction -> Flow -> DmaPacketAggregated: the `issued` table). nkidev compare matches lines of two
-- profiles by their source text. Ordered deterministically: most expensive first, then by location.
WITH w AS (SELECT t0, t1 FROM win),
compute AS (
    -- inst_lines (prepare.sql): the compute engines' instructions within the window per engine and line
    SELECT src, sum(engine_ns) AS engine_ns, sum(instructions) AS instructions,
           sum(engine_ns) FILTER (WHERE engine = 'tensor') AS tensor_ns,
           sum(engine_ns) FILTER (WHERE engine = 'vector') AS vector_ns,
           sum(engine_ns) FILTER (WHERE engine = 'scalar') AS scalar_ns,
           sum(engine_ns) FILTER (WHERE engine = 'gpsimd') AS gpsimd_ns
    FROM inst_lines
    WHERE src IS NOT NULL
    GROUP BY src
),
dma AS (
    SELECT d.src, count(*) AS transfers, sum(d.end_ts - d.start_ts) AS dma_ns, sum(d.transfer_bytes) AS dma_bytes
    FROM issued d, w
    WHERE d.src IS NOT NULL AND d.start_ts >= w.t0 AND d.start_ts < w.t1
    GROUP BY d.src
)
SELECT coalesce(c.src, d.src) AS src,
       coalesce(c.instructions, 0) AS instructions, coalesce(c.engine_ns, 0) AS engine_ns,
       coalesce(c.tensor_ns, 0) AS tensor_ns, coalesce(c.vector_ns, 0) AS vector_ns,
       coalesce(c.scalar_ns, 0) AS scalar_ns, coalesce(c.gpsimd_ns, 0) AS gpsimd_ns,
       coalesce(d.transfers, 0) AS transfers, coalesce(d.dma_ns, 0) AS dma_ns, coalesce(d.dma_bytes, 0) AS dma_bytes
FROM compute c FULL OUTER JOIN dma d ON d.src = c.src
ORDER BY coalesce(c.engine_ns, 0) + coalesce(d.dma_ns, 0) DESC, 1;
