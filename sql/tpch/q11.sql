-- TPC-H Q11 (important stock identification), streaming form.
-- Changes from the official query:
--   * no ORDER BY.
-- The HAVING clause compares each group with a subquery; Viewlet refuses subqueries in
-- HAVING so far (the DBToaster rewrite needs an aggregating FROM subquery, also refused).
SELECT ps_partkey, SUM(ps_supplycost * ps_availqty) AS value
FROM partsupp, supplier, nation
WHERE ps_suppkey = s_suppkey AND s_nationkey = n_nationkey AND n_name = 'GERMANY'
GROUP BY ps_partkey
HAVING SUM(ps_supplycost * ps_availqty) > (
    SELECT SUM(ps2.ps_supplycost * ps2.ps_availqty) * 0.0001
    FROM partsupp ps2, supplier s2, nation n2
    WHERE ps2.ps_suppkey = s2.s_suppkey AND s2.s_nationkey = n2.n_nationkey
      AND n2.n_name = 'GERMANY')
