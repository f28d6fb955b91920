-- Busy time per engine within the window, without double counting ("interval merge", [sources: agentic-bounds "Performance Bounds"]).
-- busy_raw(engine, start_ts, end_ts) is built by bounds.py from ActiveTime (or, when a profile lacks
-- it, from the Instruction rows) plus every DmaPacket row as engine 'dma'.
-- In start order, each interval keeps only the part after `prev_end`, the latest end of all earlier
-- intervals of its engine. These pieces are disjoint and their union is the merged busy time; a piece
-- that starts after prev_end follows an idle gap (prev_end, s). One running max, no grouping pass.
CREATE OR REPLACE TEMP TABLE busy AS
WITH clipped AS (
    -- intervals sharing a start (the 16 packets of one DMA) collapse to the longest first; intervals
    -- outside the window are dropped before grouping (clipped, they would be empty)
    SELECT engine, greatest(start_ts, w.t0) AS s, max(least(end_ts, w.t1)) AS e
    FROM busy_raw, win AS w
    WHERE start_ts < end_ts AND start_ts < w.t1 AND end_ts > w.t0
    GROUP BY engine, greatest(start_ts, w.t0)
), ordered AS (
    SELECT engine, s, e,
           max(e) OVER (PARTITION BY engine ORDER BY s ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
    FROM clipped
)
SELECT engine, greatest(s, coalesce(prev_end, s)) AS s, e, prev_end
FROM ordered
WHERE prev_end IS NULL OR e > prev_end;
