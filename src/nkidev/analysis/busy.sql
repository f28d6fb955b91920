-- Busy time per engine within the window, without double counting ("interval merge", [sources: agentic-bounds "Performance Bounds"]).
-- busy_engines(engine, start_ts, end_ts) is built by bounds.py from ActiveTime (or, when a profile lacks
-- it, from the Instruction rows); every DmaPacket row (pkt, prepare.sql) is busy time of engine 'dma'.
-- In start order, each interval keeps only the part after `prev_end`, the latest end of all earlier
-- intervals of its engine. These pieces are disjoint and their union is the merged busy time; a piece
-- that starts after prev_end follows an idle gap (prev_end, s): one running max over the sorted intervals.
CREATE OR REPLACE TEMP TABLE busy AS
WITH clipped AS (
    -- intervals outside the window are dropped, the others clipped to it
    SELECT engine, greatest(start_ts, w.t0) AS s, least(end_ts, w.t1) AS e
    FROM busy_engines, win AS w
    WHERE start_ts < end_ts AND start_ts < w.t1 AND end_ts > w.t0
    UNION ALL
    -- the DMA packets (pkt, prepare.sql); rows sharing a start need no grouping: the window below orders them
    -- longest first like any other ties
    SELECT CAST('dma' AS nk_engine), greatest(start_ts, w.t0), least(end_ts, w.t1)
    FROM pkt, win AS w
    WHERE start_ts < end_ts AND start_ts < w.t1 AND end_ts > w.t0
), ordered AS (
    -- intervals sharing a start: the longest first, so the others end by its end (prev_end) and are dropped
    SELECT engine, s, e,
           max(e) OVER (PARTITION BY engine ORDER BY s, e DESC ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
    FROM clipped
)
SELECT engine, greatest(s, coalesce(prev_end, s)) AS s, e, prev_end
FROM ordered
WHERE prev_end IS NULL OR e > prev_end;
