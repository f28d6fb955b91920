-- Engine busy fraction per time bin (for the HTML timeline): each merged busy interval is spread over
-- the bins it overlaps. $bins bins of equal width cover [t0, t1).
WITH w AS (SELECT t0, t1, greatest(CAST(ceil((t1 - t0) / $bins) AS BIGINT), 1) AS width FROM win),
iv AS (
    SELECT engine, s, e, (s - w.t0) // w.width AS b0, (e - 1 - w.t0) // w.width AS b1 FROM busy, w
),
parts AS (
    -- an interval inside one bin adds its whole length to it; only the few that cross a bin edge are spread
    SELECT engine, b0 AS b, sum(e - s) AS ns FROM iv WHERE b0 = b1 GROUP BY engine, b0
    UNION ALL
    SELECT engine, b, sum(least(e, w.t0 + (b + 1) * w.width) - greatest(s, w.t0 + b * w.width))
    FROM (SELECT engine, s, e, unnest(range(b0, b1 + 1)) AS b FROM iv WHERE b0 <> b1), w
    GROUP BY engine, b
)
SELECT engine, b AS bin, sum(ns) / any_value(w.width) AS busy
FROM parts, w
GROUP BY engine, b
ORDER BY engine, b;
