-- TPC-H Q22a, the simplified Q22 of the DBToaster journal (App. A.1) / VLDB paper (Q22).
-- Kept exactly: under SQL semantics `0 = (SELECT SUM(1) ...)` is never true (SUM over no
-- rows is NULL), so the view is empty, and Viewlet must agree with Spark on that.
SELECT c1.c_nationkey, SUM(c1.c_acctbal) AS query22a
FROM customer c1
WHERE c1.c_acctbal < (SELECT SUM(c2.c_acctbal) FROM customer c2 WHERE c2.c_acctbal > 0)
  AND 0 = (SELECT SUM(1) FROM orders o WHERE o.o_custkey = c1.c_custkey)
GROUP BY c1.c_nationkey
