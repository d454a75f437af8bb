-- TPC-H Q18a, the simplified Q18 of the DBToaster journal (App. A.1) / VLDB paper (Q18).
SELECT c_custkey, SUM(l1.l_quantity) AS query18a
FROM customer, orders, lineitem l1
WHERE 1 <= (SELECT SUM(1) FROM lineitem l2
            WHERE l1.l_orderkey = l2.l_orderkey
              AND 100 < (SELECT SUM(l3.l_quantity) FROM lineitem l3
                         WHERE l2.l_orderkey = l3.l_orderkey))
  AND c_custkey = o_custkey
  AND o_orderkey = l1.l_orderkey
GROUP BY c_custkey
