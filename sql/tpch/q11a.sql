-- TPC-H Q11a, the simplified Q11 of the DBToaster journal (App. A.1) / VLDB paper (Q11).
SELECT ps_partkey, SUM(ps_supplycost * ps_availqty) AS query11a
FROM partsupp, supplier
WHERE ps_suppkey = s_suppkey
GROUP BY ps_partkey
