-- TPC-H Q15 (top supplier), streaming form.
-- Changes from the official query ([J] §8):
--   * the view revenue0 is a subquery in FROM;
--   * MAX rewritten as a nested subquery: no supplier has a larger revenue (NOT EXISTS);
--   * no ORDER BY; `DATE '1996-01-01' + INTERVAL '3' MONTH` written as DATE '1996-04-01'.
SELECT s_suppkey, s_name, s_address, s_phone, total_revenue
FROM supplier, (
    SELECT l_suppkey AS supplier_no, SUM(l_extendedprice * (1 - l_discount)) AS total_revenue
    FROM lineitem
    WHERE l_shipdate >= DATE '1996-01-01' AND l_shipdate < DATE '1996-04-01'
    GROUP BY l_suppkey
) AS revenue0
WHERE s_suppkey = supplier_no
  AND NOT EXISTS (
    SELECT 1 FROM (
        SELECT l2.l_suppkey, SUM(l2.l_extendedprice * (1 - l2.l_discount)) AS rev
        FROM lineitem l2
        WHERE l2.l_shipdate >= DATE '1996-01-01' AND l2.l_shipdate < DATE '1996-04-01'
        GROUP BY l2.l_suppkey
    ) AS r2
    WHERE r2.rev > total_revenue)
