-- TPC-H Q1 (pricing summary report), streaming form.
-- Changes from the official query:
--   * no ORDER BY: an incremental view is a set of rows, order it when you read it;
--   * the official `DATE '1998-12-01' - INTERVAL '90' DAY` is written as the
--     constant it evaluates to (DATE '1998-09-02'), so the filter is a plain
--     date comparison.
SELECT
    l_returnflag,
    l_linestatus,
    SUM(l_quantity) AS sum_qty,
    SUM(l_extendedprice) AS sum_base_price,
    SUM(l_extendedprice * (1 - l_discount)) AS sum_disc_price,
    SUM(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge,
    AVG(l_quantity) AS avg_qty,
    AVG(l_extendedprice) AS avg_price,
    AVG(l_discount) AS avg_disc,
    COUNT(*) AS count_order
FROM lineitem
WHERE l_shipdate <= DATE '1998-09-02'
GROUP BY l_returnflag, l_linestatus
