-- TPC-H Q6 (forecasting revenue change), streaming form.
-- Changes from the official query:
--   * `DATE '1994-01-01' + INTERVAL '1' YEAR` is written as the constant
--     DATE '1995-01-01';
--   * `l_discount BETWEEN 0.06 - 0.01 AND 0.06 + 0.01` is spelled out as two
--     comparisons with the folded constants 0.05 and 0.07.
-- A global aggregate: the view always has exactly one row.
SELECT
    SUM(l_extendedprice * l_discount) AS revenue
FROM lineitem
WHERE l_shipdate >= DATE '1994-01-01'
  AND l_shipdate < DATE '1995-01-01'
  AND l_discount >= 0.05
  AND l_discount <= 0.07
  AND l_quantity < 24
