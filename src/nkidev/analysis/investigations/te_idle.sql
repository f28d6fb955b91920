-- TensorE idle gaps (AWS's skill: "coming soon"): what the Tensor Engine waited on between its busy
-- intervals. The gap before the first matmul is the prologue; the time after the last is not a wait.
-- A gap is attributed to the last producer to finish inside it before the TensorE resumed: a DMA that
-- brings data on chip (loads and spill reloads; stores cannot feed the TensorE) or an instruction on
-- another compute engine. Heuristic: the profile holds no data dependencies between instructions.

-- name: build
-- Every producer: a DMA that brings data on chip or an instruction on another compute engine. A view
-- read twice: for its end times only (no join), then for the end times a gap waited on.
CREATE OR REPLACE TEMP VIEW te_producers AS
SELECT end_ts, 'DMA' AS waited_on, variable AS what, id AS dma_id, CAST(NULL AS nk_src) AS src
FROM dpa
WHERE end_ts IS NOT NULL AND NOT is_spill_save AND NOT is_store
UNION ALL
SELECT end_ts, 'DMA', queue_name, NULL, NULL FROM packets WHERE kernel AND NOT EXISTS (SELECT 1 FROM dpa)
UNION ALL
SELECT end_ts, engine, opcode, NULL, src FROM inst
WHERE engine IN ('vector', 'scalar', 'gpsimd') AND hbm_read_bytes = 0 AND hbm_write_bytes = 0;

-- Per gap (te_gaps), the end time of the last producer to finish by its end (pe; the gap waited on it when
-- pe is inside the gap), and the first TensorE start from its end (ts) with the line that resumed there
-- (te_src: the first by location when several start together). The producers' ASOF join reads end times
-- only: every producer ending at pe gives the same pe, so no tie needs breaking yet.
CREATE OR REPLACE TEMP TABLE te_waits AS
WITH te_gaps AS (
    -- busy.sql marks the pieces that follow an idle gap: they start after prev_end. Gaps that end by the
    -- first MATMUL are prologue too: a LoadStationary may run before the moving data arrives.
    SELECT CASE WHEN s <= (SELECT min(start_ts) FROM inst WHERE is_matmul) THEN 'prologue' ELSE 'inner' END AS phase,
           prev_end AS gs, s AS ge
    FROM busy WHERE engine = 'tensor' AND s > prev_end
    UNION ALL
    SELECT 'prologue', w.t0, min(b.s) FROM busy b, win w WHERE b.engine = 'tensor' GROUP BY w.t0 HAVING min(b.s) > w.t0
), with_end AS (
    SELECT g.*, p.end_ts AS pe FROM te_gaps g ASOF LEFT JOIN (SELECT end_ts FROM te_producers) p ON g.ge >= p.end_ts
), te_starts AS (
    SELECT start_ts, min(src) AS src FROM inst WHERE engine = 'tensor' GROUP BY start_ts
)
SELECT g.*, t.start_ts AS ts, t.src AS te_src
FROM with_end g ASOF LEFT JOIN te_starts t ON g.ge <= t.start_ts;

-- name: gaps
WITH waited AS (
    -- the producers ending when a gap waited on them; a DMA's line is its issuing instruction's (issued)
    SELECT p.end_ts, p.waited_on, p.what, coalesce(i.src, p.src) AS src
    FROM (SELECT * FROM te_producers WHERE end_ts IN (SELECT pe FROM te_waits WHERE pe > gs)) p
    LEFT JOIN issued i ON i.out_id = p.dma_id
), producer AS (
    -- one per end time (ties broken by name), so the attribution is deterministic
    SELECT * FROM waited QUALIFY row_number() OVER (PARTITION BY end_ts ORDER BY waited_on, what, src) = 1
), attributed AS (
    SELECT g.phase, g.ge - g.gs AS ns, g.te_src,
           CASE WHEN g.pe > g.gs THEN p.waited_on ELSE 'unattributed' END AS waited_on,
           CASE WHEN g.pe > g.gs THEN p.what END AS what,
           CASE WHEN g.pe > g.gs THEN p.src END AS src
    FROM te_waits g LEFT JOIN producer p ON p.end_ts = g.pe
), by_resume AS (
    -- the most frequent resuming line of a group (ties: the first by location) needs its count per group
    SELECT phase, waited_on, what, src, te_src, count(*) AS te_n, sum(ns) AS ns, max(ns) AS longest_ns
    FROM attributed
    GROUP BY phase, waited_on, what, src, te_src
)
SELECT phase, waited_on, what, src, sum(te_n) AS gaps, sum(ns) AS idle_ns, max(longest_ns) AS longest_ns,
       first(te_src ORDER BY te_n DESC, te_src) AS resumed_src
FROM by_resume
GROUP BY phase, waited_on, what, src
ORDER BY idle_ns DESC, phase, waited_on, what, src;
