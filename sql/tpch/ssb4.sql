-- SSB4 of the DBToaster journal (App. A.1): a 7-way join over the TPC-H schema (the Star
-- Schema Benchmark's Q4 family).
SELECT sn.n_regionkey AS s_region, cn.n_regionkey AS c_region, p_type,
       SUM(l_quantity) AS ssb4
FROM customer, orders, lineitem, part, supplier, nation cn, nation sn
WHERE c_custkey = o_custkey
  AND o_orderkey = l_orderkey
  AND l_partkey = p_partkey
  AND l_suppkey = s_suppkey
  AND o_orderdate >= DATE '1997-01-01'
  AND o_orderdate < DATE '1998-01-01'
  AND cn.n_nationkey = c_nationkey
  AND sn.n_nationkey = s_nationkey
GROUP BY sn.n_regionkey, cn.n_regionkey, p_type
