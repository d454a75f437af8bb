-- TPC-H Q15 (top supplier), the official query.
-- Changes from the official query:
--   * the view revenue0 (CREATE VIEW ... / DROP VIEW in the official text) is a WITH clause;
--   * no ORDER BY (a view is unordered; order when you read it).
-- The MAX over revenue0 is a nested aggregate over the multiset of per-supplier revenues;
-- both references to revenue0 share its maps.
with revenue0 (supplier_no, total_revenue) as (
    select
        l_suppkey,
        sum(l_extendedprice * (1 - l_discount))
    from
        lineitem
    where
        l_shipdate >= date '1996-01-01'
        and l_shipdate < date '1996-01-01' + interval '3' month
    group by
        l_suppkey
)
select
    s_suppkey,
    s_name,
    s_address,
    s_phone,
    total_revenue
from
    supplier,
    revenue0
where
    s_suppkey = supplier_no
    and total_revenue = (
        select
            max(total_revenue)
        from
            revenue0
    )
