-- VWAP (DBToaster journal App. A.2): volume-weighted price of the bids above which less
-- than a quarter of the bid volume sits. Nested: an uncorrelated total and an
-- inequality-correlated partial sum.
SELECT SUM(b1.price * b1.volume) AS vwap
FROM bids b1
WHERE 0.25 * (SELECT SUM(b3.volume) FROM bids b3) >
      (SELECT SUM(b2.volume) FROM bids b2 WHERE b2.price > b1.price)
