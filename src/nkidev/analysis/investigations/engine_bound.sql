-- Engine-bound kernels: what fills the bottleneck engine (Vector, Scalar or GpSimd), per opcode and
-- source line, within the window. $engine is the engine key.

-- name: lines
SELECT src, opcode, count(*) AS instructions, sum(duration_ns) AS busy_ns, avg(duration_ns) AS mean_ns
FROM inst, win w
WHERE engine = $engine AND start_ts >= w.t0 AND start_ts < w.t1
GROUP BY src, opcode
ORDER BY busy_ns DESC, src, opcode
LIMIT 20;

-- name: opcodes
SELECT opcode, count(*) AS instructions, sum(duration_ns) AS busy_ns, avg(duration_ns) AS mean_ns
FROM inst, win w
WHERE engine = $engine AND start_ts >= w.t0 AND start_ts < w.t1
GROUP BY opcode
ORDER BY busy_ns DESC, opcode;
