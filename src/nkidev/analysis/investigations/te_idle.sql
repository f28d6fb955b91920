-- TensorE idle gaps (AWS's skill: "coming soon"): what the Tensor Engine waited on between its busy
-- intervals. The gap before the first matmul is the prologue; the time after the last is not a wait.
-- A gap is attributed to the last producer to finish inside it before the TensorE resumed: a DMA that
-- brings data on chip (loads and spill reloads; stores cannot feed the TensorE) or an instruction on
-- another compute engine. Heuristic: the profile holds no data dependencies between instructions.

-- name: build
-- Producers that end together are told apart by name (waited_on, what, line; NULLs last), so the attribution is
-- deterministic. Each producer's names become one integer `label` ordered like them: engine, opcode, tensor and
-- line are already sorted ENUM codes (prepare.sql), NULL takes the code after the last, and the packets' queue
-- names (the DMA producers of a profile without DmaPacketAggregated) are ranked here.
CREATE OR REPLACE TEMP TABLE te_queues AS
SELECT queue_name, row_number() OVER (ORDER BY queue_name) - 1 AS code
FROM (SELECT DISTINCT queue_name FROM packets WHERE kernel AND queue_name IS NOT NULL AND NOT EXISTS (SELECT 1 FROM dpa));
-- how many codes each part of a label has (+1: the code of NULL)
CREATE OR REPLACE TEMP TABLE te_codes AS
SELECT greatest(len(enum_range(NULL::nk_variable)), len(enum_range(NULL::nk_opcode)), (SELECT count(*) FROM te_queues)) + 1 AS n_what,
       len(enum_range(NULL::nk_src)) + 1 AS n_src;

-- name: producers
-- Every producer's end time with its label: a DMA that brings data on chip (`issued` holds every transfer, with
-- the line of each instruction that issued it) or an instruction on another compute engine. `who` is 0 for a DMA,
-- 1 + the engine's code for an instruction ('DMA' sorts before the lowercase engine keys). Of the producers ending
-- together the gap takes the first label (te_idle.py sorts by end, then label).
SELECT end_ts, (who * c.n_what + coalesce(what, c.n_what - 1)) * c.n_src + coalesce(src, c.n_src - 1) AS label
FROM (
    SELECT end_ts, 0 AS who, enum_code(variable) AS what, enum_code(src) AS src
    FROM issued
    WHERE end_ts IS NOT NULL AND NOT is_spill_save AND NOT is_store
    UNION ALL
    SELECT p.end_ts, 0, q.code, NULL
    FROM packets p LEFT JOIN te_queues q ON q.queue_name = p.queue_name
    WHERE p.kernel AND NOT EXISTS (SELECT 1 FROM dpa)
    UNION ALL
    SELECT end_ts, 1 + CAST(enum_code(engine) AS INTEGER), enum_code(opcode), enum_code(src) FROM inst
    WHERE engine IN ('vector', 'scalar', 'gpsimd') AND hbm_read_bytes = 0 AND hbm_write_bytes = 0
), te_codes c;

-- name: gaps
-- busy.sql marks the pieces that follow an idle gap: they start after prev_end. Gaps that end by the first
-- MATMUL are prologue too: a LoadStationary may run before the moving data arrives.
SELECT coalesce(s <= (SELECT min(start_ts) FROM inst WHERE is_matmul), false) AS prologue, prev_end AS gs, s AS ge
FROM busy WHERE engine = 'tensor' AND s > prev_end
UNION ALL
SELECT true, w.t0, min(b.s) FROM busy b, win w WHERE b.engine = 'tensor' GROUP BY w.t0 HAVING min(b.s) > w.t0;

-- name: te_starts
-- the TensorE starts with their line's code (n_src - 1: no line), for the line that resumed after each gap
SELECT start_ts, coalesce(enum_code(src), c.n_src - 1) AS src FROM inst, te_codes c WHERE engine = 'tensor';

-- name: groups
-- te_waits (te_idle.py): per gap its phase, span (gs, ge), the label of the last producer to end by the gap's end
-- when it ended inside the gap (NULL: unattributed), and the code of the line of the first TensorE start from its
-- end (te_src; the first by location when several start together).
WITH by_resume AS (
    -- per group (phase and the label of what the gap waited on) and resuming line: the most frequent resuming
    -- line of a group (ties: the first by location) needs its count per group
    SELECT CASE WHEN prologue THEN 'prologue' ELSE 'inner' END AS phase, label, te_src,
           count(*) AS te_n, sum(ge - gs) AS ns, max(ge - gs) AS longest_ns
    FROM te_waits
    GROUP BY ALL
), by_group AS (
    SELECT phase, label, sum(te_n) AS gaps, sum(ns) AS idle_ns, max(longest_ns) AS longest_ns,
           first(te_src ORDER BY te_n DESC, te_src) AS resumed_src
    FROM by_resume
    GROUP BY phase, label
), parts AS (
    -- the label's parts: who, what and line codes
    SELECT g.*, label // (c.n_what * c.n_src) AS who, label // c.n_src % c.n_what AS what, label % c.n_src AS src, c.*
    FROM by_group g, te_codes c
), named AS (
    SELECT p.phase,
           CASE WHEN p.label IS NULL THEN 'unattributed' WHEN p.who = 0 THEN 'DMA'
                ELSE CAST(enum_range(NULL::nk_engine)[p.who] AS VARCHAR) END AS waited_on,
           CASE WHEN p.label IS NULL OR p.what = p.n_what - 1 THEN NULL
                WHEN p.who > 0 THEN enum_range(NULL::nk_opcode)[p.what + 1]
                ELSE coalesce(q.queue_name, enum_range(NULL::nk_variable)[p.what + 1]) END AS what,
           CASE WHEN p.label IS NOT NULL AND p.src < p.n_src - 1 THEN enum_range(NULL::nk_src)[p.src + 1] END AS src,
           p.gaps, p.idle_ns, p.longest_ns,
           enum_range(NULL::nk_src)[p.resumed_src + 1] AS resumed_src
    FROM parts p LEFT JOIN te_queues q ON p.who = 0 AND q.code = p.what
)
SELECT * FROM named
ORDER BY idle_ns DESC, phase, waited_on, what, src;
