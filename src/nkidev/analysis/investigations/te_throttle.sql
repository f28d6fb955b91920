-- TensorE throttling ([sources: explorer-summary "Understanding throttling"]; columns: [sources: explorer-schema]
-- "Throttle"): the Throttle rows whose utilization limit k/n is below full rate, against the Tensor Engine's busy
-- time on the same NeuronCore (pcore_idx; a profile without it is one core). Only the limit in force while the
-- TensorE computes costs work. The start-up ramp (from a core's first MATMUL for $startup_ns: every burst from
-- idle starts limited) cannot be avoided: it is counted apart and never flagged.

-- name: build
-- Throttled pieces per core: rows below full rate, clipped to the window, in start order, each keeping only the part
-- after the rows before it (rows of two kinds may overlap: the earlier row's limit stands). A piece (re-)engages the
-- limit when it follows unthrottled time or lowers the limit of the piece before it.
CREATE OR REPLACE TEMP TABLE thr_pieces AS
WITH r AS (
    SELECT coalesce(pcore_idx, 0) AS core, greatest(timestamp, w.t0) AS s, least(timestamp + duration, w.t1) AS e,
           k / n AS lim
    FROM _raw_Throttle, win AS w
    WHERE n > 0 AND k < n AND duration > 0 AND timestamp < w.t1 AND timestamp + duration > w.t0
), ordered AS (
    SELECT *, max(e) OVER (PARTITION BY core ORDER BY s, e ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
    FROM r
), pieces AS (
    SELECT core, greatest(s, coalesce(prev_end, s)) AS s, e, lim, prev_end FROM ordered WHERE prev_end IS NULL OR e > prev_end
)
SELECT core, s, e, lim,
       prev_end IS NULL OR s > prev_end OR lim < lag(lim) OVER (PARTITION BY core ORDER BY s) AS engages
FROM pieces;

-- name: startup
-- Each core's start-up ramp: from its first MATMUL for $startup_ns, or until the limit engages again, if sooner
-- (engagements before the first MATMUL throttle nothing and are not counted).
CREATE OR REPLACE TEMP TABLE thr_startup AS
WITH first_mm AS (SELECT core, min(start_ts) AS first_mm FROM inst WHERE is_matmul GROUP BY core),
again AS (
    SELECT f.core, min(p.s) FILTER (WHERE p.k = 2) AS second_engagement
    FROM first_mm f
    LEFT JOIN (
        SELECT core, s, row_number() OVER (PARTITION BY core ORDER BY s) AS k
        FROM thr_pieces p WHERE engages AND s >= (SELECT first_mm FROM first_mm WHERE first_mm.core = p.core)
    ) p ON p.core = f.core
    GROUP BY f.core
)
SELECT f.core, f.first_mm, least(f.first_mm + $startup_ns, coalesce(a.second_engagement, f.first_mm + $startup_ns)) AS ramp_end
FROM first_mm f JOIN again a ON a.core = f.core;

-- name: after
-- The pieces after the start-up of cores that ran MATMULs (the limit of a core without any costs no work; a piece
-- that straddles the start-up's end keeps the part after it, without its engagement), with the throttled time and
-- the work lost ((1 - limit) x time) of the pieces before each: C(t) below.
CREATE OR REPLACE TEMP TABLE thr_after AS
WITH a AS (
    SELECT p.core, greatest(p.s, st.ramp_end) AS s, p.e, p.lim, p.engages AND p.s >= st.ramp_end AS engages
    FROM thr_pieces p JOIN thr_startup st ON st.core = p.core
    WHERE p.e > st.ramp_end
)
-- (A running sum less the piece itself: DuckDB streams it, where a frame ending at 1 PRECEDING is a segment tree.)
SELECT *,
       sum(e - s) OVER upto - (e - s) AS time_done,
       sum((1 - lim) * (e - s)) OVER upto - (1 - lim) * (e - s) AS lost_done
FROM a
WINDOW upto AS (PARTITION BY core ORDER BY s ROWS UNBOUNDED PRECEDING);

-- Tensor Engine busy intervals per core: its Instruction rows merged (busy.sql's running max), clipped to the window.
CREATE OR REPLACE TEMP TABLE thr_busy AS
WITH c AS (
    SELECT core, greatest(start_ts, w.t0) AS s, least(end_ts, w.t1) AS e
    FROM inst, win AS w
    WHERE engine = 'tensor' AND start_ts < end_ts AND start_ts < w.t1 AND end_ts > w.t0
), ordered AS (
    SELECT core, s, e,
           max(e) OVER (PARTITION BY core ORDER BY s, e DESC ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
    FROM c
)
SELECT core, greatest(s, coalesce(prev_end, s)) AS s, e FROM ordered WHERE prev_end IS NULL OR e > prev_end;

-- Throttled time and lost work before time t on a core, from the last piece starting by t (the pieces are disjoint):
-- C(t) = time_done + (min(t, e) - s). An interval [s, e) was throttled C(e) - C(s) of its length.
CREATE OR REPLACE MACRO thr_time(t, p_s, p_e, done) AS
    CASE WHEN p_s IS NULL THEN 0 ELSE done + least(t, p_e) - p_s END;
CREATE OR REPLACE MACRO thr_lost(t, p_s, p_e, lim, done) AS
    CASE WHEN p_s IS NULL THEN 0 ELSE done + (1 - lim) * (least(t, p_e) - p_s) END;

-- The throttled part of each TensorE busy interval: C(e) - C(s), two ASOF lookups.
CREATE OR REPLACE TEMP TABLE thr_busy_parts AS
WITH at_s AS (
    SELECT b.core, b.s, b.e, thr_time(b.s, p.s, p.e, p.time_done) AS t0, thr_lost(b.s, p.s, p.e, p.lim, p.lost_done) AS l0
    FROM thr_busy b ASOF LEFT JOIN thr_after p ON p.core = b.core AND b.s >= p.s
)
SELECT b.core, b.e - b.s AS busy_ns,
       thr_time(b.e, p.s, p.e, p.time_done) - b.t0 AS throttled_ns,
       thr_lost(b.e, p.s, p.e, p.lim, p.lost_done) - b.l0 AS lost_ns
FROM at_s b ASOF LEFT JOIN thr_after p ON p.core = b.core AND b.e >= p.s;

-- name: totals
SELECT (SELECT coalesce(sum(busy_ns), 0) FROM thr_busy_parts) AS busy_ns,
       (SELECT coalesce(sum(throttled_ns), 0) FROM thr_busy_parts) AS throttled_busy_ns,
       (SELECT coalesce(sum(lost_ns), 0) FROM thr_busy_parts) AS lost_ns,
       (SELECT coalesce(sum(e - s), 0) FROM thr_after) AS throttled_ns,
       (SELECT count(*) FILTER (WHERE engages) FROM thr_after) AS engagements,
       (SELECT coalesce(sum(least(p.e, st.ramp_end) - p.s), 0) FROM thr_pieces p JOIN thr_startup st ON st.core = p.core
        WHERE p.s < st.ramp_end) AS startup_throttled_ns,
       (SELECT coalesce(sum(p.e - p.s), 0) FROM thr_pieces p WHERE p.core NOT IN (SELECT core FROM thr_startup))
        AS other_cores_throttled_ns,
       (SELECT count(*) FROM thr_pieces) AS pieces,
       (SELECT count(*) FILTER (WHERE engages) FROM thr_pieces) AS all_engagements,
       (SELECT count(DISTINCT core) FROM thr_pieces) AS cores;

-- name: lines
-- The MATMULs that ran under the limit after the start-up, per source line: how many, their throttled time, and the
-- first one's start (the lines are reported in that order: where the throttling begins).
WITH m AS (
    SELECT i.core, i.src, i.start_ts AS s, i.end_ts AS e FROM inst i, win AS w
    WHERE i.is_matmul AND i.start_ts < i.end_ts AND i.start_ts < w.t1 AND i.end_ts > w.t0
), at_s AS (
    SELECT m.*, thr_time(m.s, p.s, p.e, p.time_done) AS t0
    FROM m ASOF LEFT JOIN thr_after p ON p.core = m.core AND m.s >= p.s
), parts AS (
    SELECT m.src, m.s, thr_time(m.e, p.s, p.e, p.time_done) - m.t0 AS throttled_ns
    FROM at_s m ASOF LEFT JOIN thr_after p ON p.core = m.core AND m.e >= p.s
)
SELECT src, count(*) AS matmuls, sum(throttled_ns) AS throttled_ns, min(s) AS first_ts
FROM parts WHERE throttled_ns > 0
GROUP BY src
ORDER BY first_ts, src;
