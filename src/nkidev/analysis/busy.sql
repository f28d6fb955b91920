-- Busy time per engine within the window, without double counting ("interval merge", [sources: agentic-bounds "Performance Bounds"]).
-- busy_engines(engine, start_ts, end_ts) is built by bounds.py from ActiveTime (or, when a profile lacks
-- it, from the Instruction rows); every DmaPacket row (pkt, prepare.sql) is busy time of engine 'dma'.
-- In start order (the longest first among intervals sharing a start), each interval keeps only the part after
-- `prev_end`, the latest end of all earlier intervals of its engine. These pieces are disjoint and their union
-- is the merged busy time; a piece that starts after prev_end follows an idle gap (prev_end, s). The running
-- max over the sorted intervals is computed on arrays (intervals.merge_busy, called by bounds.py between
-- these two queries): in SQL it was a window over every row.

-- name: intervals
-- intervals outside the window are dropped, the others clipped to it; the engine as its ENUM code
WITH w AS (SELECT t0, t1 FROM win)
SELECT enum_code(engine) AS engine, greatest(start_ts, w.t0) AS s, least(end_ts, w.t1) AS e
FROM busy_engines, w
WHERE start_ts < end_ts AND start_ts < w.t1 AND end_ts > w.t0
UNION ALL
-- the DMA packets (pkt, prepare.sql); rows sharing a start need no grouping: the merge keeps the longest
SELECT enum_code(CAST('dma' AS nk_engine)), greatest(start_ts, w.t0), least(end_ts, w.t1)
FROM pkt, w
WHERE start_ts < end_ts AND start_ts < w.t1 AND end_ts > w.t0;

-- name: pieces
-- The merged pieces of TensorE (_busy_pieces: engine code, s, e, prev_end; NULL prev_end: the engine's first
-- piece; te_idle's gaps read them) and every engine's busy time, the sum of its pieces (_busy_ns: engine code,
-- ns; summed by bounds.build_busy). The codes back to their names by a join with the few engine names.
CREATE OR REPLACE TEMP TABLE busy AS
WITH names AS (SELECT CAST(unnest(enum_range(NULL::nk_engine)) AS nk_engine) AS engine)
SELECT n.engine, p.s, p.e, p.prev_end
FROM _busy_pieces p JOIN names n ON enum_code(n.engine) = p.engine;
CREATE OR REPLACE TEMP TABLE busy_ns AS
WITH names AS (SELECT CAST(unnest(enum_range(NULL::nk_engine)) AS nk_engine) AS engine)
SELECT n.engine, CAST(p.ns AS HUGEINT) AS ns
FROM _busy_ns p JOIN names n ON enum_code(n.engine) = p.engine;
