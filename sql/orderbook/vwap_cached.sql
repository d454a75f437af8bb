-- VWAP (vwap.sql) with view caches (DBToaster journal §5.2): the bid volume above each
-- price (an inequality-correlated nested sum) is kept as a map keyed by price, over the
-- prices the book holds, instead of being summed from the volume-by-price map for every
-- price in every batch. It pays when prices take few distinct values.
CREATE INCREMENTAL VIEW vwap_cached WITH (caches = true) AS
SELECT SUM(b1.price * b1.volume) AS vwap
FROM bids b1
WHERE 0.25 * (SELECT SUM(b3.volume) FROM bids b3) >
      (SELECT SUM(b2.volume) FROM bids b2 WHERE b2.price > b1.price)
