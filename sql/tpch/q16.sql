-- TPC-H Q16 (parts/supplier relationship), the official query.
-- Changes from the official query:
--   * no ORDER BY (a view is unordered; order when you read it).
-- COUNT(DISTINCT ps_suppkey) reads a multiset of suppliers per group (a map keyed by the
-- group and ps_suppkey); NOT IN is a nested count, exact with NULLs.
select
    p_brand,
    p_type,
    p_size,
    count(distinct ps_suppkey) as supplier_cnt
from
    partsupp,
    part
where
    p_partkey = ps_partkey
    and p_brand <> 'Brand#45'
    and p_type not like 'MEDIUM POLISHED%'
    and p_size in (49, 14, 23, 45, 19, 3, 36, 9)
    and ps_suppkey not in (
        select
            s_suppkey
        from
            supplier
        where
            s_comment like '%Customer%Complaints%'
    )
group by
    p_brand,
    p_type,
    p_size
