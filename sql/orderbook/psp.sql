-- PriceSpread (DBToaster journal §6.2, App. A.2): two uncorrelated nested aggregates, so
-- every batch re-evaluates the outer part (from six materialized maps, [J] Fig. 4).
SELECT SUM(a.price - b.price) AS psp
FROM bids b, asks a
WHERE b.volume > 0.0001 * (SELECT SUM(b1.volume) FROM bids b1)
  AND a.volume > 0.0001 * (SELECT SUM(a1.volume) FROM asks a1)
