-- TPC-H Q3 (shipping priority), streaming form.
-- Changes from the official query:
--   * no ORDER BY revenue DESC, o_orderdate and no LIMIT 10: Viewlet maintains
--     the whole grouped result; take the top 10 when reading the view
--     (SELECT * FROM q3 ORDER BY revenue DESC, o_orderdate LIMIT 10).
SELECT
    l_orderkey,
    o_orderdate,
    o_shippriority,
    SUM(l_extendedprice * (1 - l_discount)) AS revenue
FROM customer, orders, lineitem
WHERE c_mktsegment = 'BUILDING'
  AND c_custkey = o_custkey
  AND l_orderkey = o_orderkey
  AND o_orderdate < DATE '1995-03-15'
  AND l_shipdate > DATE '1995-03-15'
GROUP BY l_orderkey, o_orderdate, o_shippriority
