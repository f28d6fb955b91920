-- Redundant TensorE transposes ([sources: agentic-investigations]): TRANSPOSE-type MATMULs per source line.
SELECT src, count(*) AS transposes, sum(adjusted_flops) AS flops, sum(duration_ns) AS busy_ns
FROM inst, win w
WHERE is_matmul AND is_transpose AND start_ts >= w.t0 AND start_ts < w.t1
GROUP BY src
ORDER BY flops DESC, src;
