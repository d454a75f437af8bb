-- TPC-H Q11 (important stock identification), streaming form.
-- Changes from the official query:
--   * no ORDER BY value DESC.
-- The HAVING clause compares each group with an uncorrelated scalar subquery (the
-- journal's §8 rewrote it into a FROM subquery; Viewlet maintains HAVING subqueries).
SELECT ps_partkey, SUM(ps_supplycost * ps_availqty) AS value
FROM partsupp, supplier, nation
WHERE ps_suppkey = s_suppkey
  AND s_nationkey = n_nationkey
  AND n_name = 'GERMANY'
GROUP BY ps_partkey
HAVING SUM(ps_supplycost * ps_availqty) > (
    SELECT SUM(ps_supplycost * ps_availqty) * 0.0001
    FROM partsupp, supplier, nation
    WHERE ps_suppkey = s_suppkey
      AND s_nationkey = n_nationkey
      AND n_name = 'GERMANY')
