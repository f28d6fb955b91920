-- TensorE underutilization ([sources: agentic-investigations]): MATMUL tile sizes per source line, parsed from
-- Instruction.operands. Two layouts are known: neuron-explorer 2.22+ ends the text with `K*M`
-- (AWS's analysis skill); the legacy profiler syntax has `<M>*<K> acc_flags=...`. N is the first
-- element of the src shape in both. Transposes are left to redundant_transpose.
-- The operand text is parsed once per distinct (line, operands), not once per matmul.
WITH tiles AS (
    SELECT src, operands, count(*) AS tiles, sum(adjusted_flops) AS flops, sum(duration_ns) AS busy_ns
    FROM inst, win w
    WHERE is_matmul AND NOT is_transpose AND start_ts >= w.t0 AND start_ts < w.t1
    GROUP BY src, operands
), parsed AS (
    SELECT src, tiles, flops, busy_ns,
           regexp_extract(operands, '(\d+)\*(\d+)\s*$', ['a', 'b']) AS tail_km,
           regexp_extract(operands, '(\d+)\*(\d+)\s+acc_flags', ['a', 'b']) AS legacy_mk,
           nullif(regexp_extract(operands, 'src=\S+?\[[\d,\-]+\]\[(\d+)', 1), '') AS n_text
    FROM tiles
), mm AS (
    SELECT src, tiles, flops, busy_ns, n_text,
           CASE WHEN tail_km.a <> '' THEN tail_km.a ELSE legacy_mk.b END AS k_text,
           CASE WHEN tail_km.a <> '' THEN tail_km.b ELSE legacy_mk.a END AS m_text
    FROM parsed
)
SELECT src, TRY_CAST(k_text AS INTEGER) AS K, TRY_CAST(m_text AS INTEGER) AS M, TRY_CAST(n_text AS INTEGER) AS N,
       sum(tiles) AS tiles, sum(flops) AS flops, sum(busy_ns) AS busy_ns
FROM mm
GROUP BY src, K, M, N
ORDER BY busy_ns DESC, src, K, M, N;
