-- TPC-H Q17a, the simplified Q17 of the DBToaster journal (App. A.1) / VLDB paper (Q17).
SELECT SUM(l_extendedprice) AS query17a
FROM lineitem, part
WHERE p_partkey = l_partkey
  AND l_quantity < 0.005 * (SELECT SUM(l2.l_quantity) FROM lineitem l2
                            WHERE l2.l_partkey = p_partkey)
