-- TPC-H Q13 (customer distribution), the official query.
-- Changes from the official query:
--   * no ORDER BY (a view is unordered; order when you read it).
-- The LEFT OUTER JOIN keeps customers without orders (c_count = 0); they move to another
-- c_count group as their first order arrives or their last one goes.
select
    c_count,
    count(*) as custdist
from (
    select
        c_custkey,
        count(o_orderkey)
    from
        customer left outer join orders on
            c_custkey = o_custkey
            and o_comment not like '%special%requests%'
    group by
        c_custkey
) as c_orders (c_custkey, c_count)
group by
    c_count
