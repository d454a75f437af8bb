-- TPC-H Q11 (important stock identification), streaming form.
-- Changes from the official query ([J] §8):
--   * no ORDER BY;
--   * HAVING rewritten with subqueries: the grouped query is a subquery in FROM and its
--     condition on the group's value a WHERE comparison with the scalar subquery.
SELECT ps_partkey, value
FROM (
    SELECT ps_partkey, SUM(ps_supplycost * ps_availqty) AS value
    FROM partsupp, supplier, nation
    WHERE ps_suppkey = s_suppkey AND s_nationkey = n_nationkey AND n_name = 'GERMANY'
    GROUP BY ps_partkey
) AS part_value
WHERE value > (
    SELECT SUM(ps2.ps_supplycost * ps2.ps_availqty) * 0.0001
    FROM partsupp ps2, supplier s2, nation n2
    WHERE ps2.ps_suppkey = s2.s_suppkey AND s2.s_nationkey = n2.n_nationkey
      AND n2.n_name = 'GERMANY')
