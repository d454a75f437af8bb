-- TPC-H Q2 (minimum cost supplier), streaming form.
-- Changes from the official query:
--   * no ORDER BY / LIMIT 100;
--   * MIN rewritten as a nested subquery ([J] §8): "ps_supplycost equals the minimum cost
--     of the part in EUROPE" is "no EUROPE supplier offers the part cheaper" (NOT EXISTS).
SELECT s_acctbal, s_name, n_name, p_partkey, p_mfgr, s_address, s_phone, s_comment
FROM part, supplier, partsupp ps, nation, region
WHERE p_partkey = ps.ps_partkey
  AND s_suppkey = ps.ps_suppkey
  AND p_size = 15
  AND p_type LIKE '%BRASS'
  AND s_nationkey = n_nationkey
  AND n_regionkey = r_regionkey
  AND r_name = 'EUROPE'
  AND NOT EXISTS (
    SELECT 1
    FROM partsupp ps2, supplier s2, nation n2, region r2
    WHERE ps2.ps_partkey = ps.ps_partkey
      AND s2.s_suppkey = ps2.ps_suppkey
      AND s2.s_nationkey = n2.n_nationkey
      AND n2.n_regionkey = r2.r_regionkey
      AND r2.r_name = 'EUROPE'
      AND ps2.ps_supplycost < ps.ps_supplycost)
