-- TPC-H Q13 (customer distribution), streaming form.
-- Changes from the official query ([J] §8):
--   * no ORDER BY;
--   * the LEFT OUTER JOIN is an inner join (customers without orders are not counted).
SELECT c_count, COUNT(*) AS custdist
FROM (
    SELECT c_custkey, COUNT(o_orderkey) AS c_count
    FROM customer JOIN orders ON c_custkey = o_custkey AND o_comment NOT LIKE '%special%requests%'
    GROUP BY c_custkey
) AS c_orders
GROUP BY c_count
