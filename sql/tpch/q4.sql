-- TPC-H Q4 (order priority checking), streaming form.
-- Changes from the official query:
--   * no ORDER BY;
--   * `DATE '1993-07-01' + INTERVAL '3' MONTH` written as DATE '1993-10-01'.
SELECT o_orderpriority, COUNT(*) AS order_count
FROM orders
WHERE o_orderdate >= DATE '1993-07-01'
  AND o_orderdate < DATE '1993-10-01'
  AND EXISTS (
    SELECT * FROM lineitem
    WHERE l_orderkey = o_orderkey AND l_commitdate < l_receiptdate)
GROUP BY o_orderpriority
