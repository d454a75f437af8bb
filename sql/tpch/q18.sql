-- TPC-H Q18 (large volume customer), streaming form.
-- Changes from the official query:
--   * no ORDER BY / LIMIT 100.
SELECT c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, SUM(l_quantity) AS sum_qty
FROM customer, orders, lineitem
WHERE o_orderkey IN (
    SELECT l2.l_orderkey FROM lineitem l2
    GROUP BY l2.l_orderkey HAVING SUM(l2.l_quantity) > 300)
  AND c_custkey = o_custkey
  AND o_orderkey = l_orderkey
GROUP BY c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice
