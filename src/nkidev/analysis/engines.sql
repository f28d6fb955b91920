-- Per-engine instruction counts and summed instruction time within the window (the busy time is
-- the merged interval length from busy.sql); DMA counts kernel packets and their bytes.
-- (inst_lines, prepare.sql: the instructions within the window per engine and line.)
WITH w AS (SELECT t0, t1 FROM win)
SELECT engine, sum(instructions) AS instruction_count, sum(engine_ns) AS instruction_time_ns, NULL AS bytes
FROM inst_lines
GROUP BY engine
UNION ALL
SELECT 'dma', sum(packets), sum(packets * (end_ts - start_ts)), sum(transfer_bytes)
FROM pkt, w
WHERE kernel AND start_ts >= w.t0 AND start_ts < w.t1;
