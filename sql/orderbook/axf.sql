-- AXFinder (DBToaster journal App. A.2): per broker, volume difference against asks more
-- than 1000 price units away (a 2-way inequality join).
SELECT b.broker_id, SUM(a.volume - b.volume) AS axf
FROM bids b, asks a
WHERE b.broker_id = a.broker_id
  AND (a.price - b.price > 1000 OR b.price - a.price > 1000)
GROUP BY b.broker_id
