-- Per-engine instruction counts and summed instruction time within the window (the busy time is
-- the merged interval length from busy.sql); DMA counts kernel packets and their bytes.
WITH w AS (SELECT t0, t1 FROM win)
SELECT engine, count(*) AS instruction_count, sum(duration_ns) AS instruction_time_ns, NULL AS bytes
FROM inst, w
WHERE start_ts >= w.t0 AND start_ts < w.t1 AND engine IN ('tensor', 'vector', 'scalar', 'gpsimd')
GROUP BY engine
UNION ALL
SELECT 'dma', sum(packets), sum(packets * (end_ts - start_ts)), sum(transfer_bytes)
FROM pkt, w
WHERE kernel AND start_ts >= w.t0 AND start_ts < w.t1;
