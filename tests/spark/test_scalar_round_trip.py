"""Scalar expressions survive the front end: each is parsed by sqlglot, held as a calculus
scalar over variables, and rendered back as Spark SQL (calculus/scalar.py); Spark must give
the rendered text exactly the value (and type) of the original, NULLs included."""
from __future__ import annotations

from viewlet.calculus.scalar import Scalar

from .workload import registered_workload

EXPRESSIONS = [
    "DATE '1995-01-01' + INTERVAL 3 MONTH", "date_add(DATE '2024-12-30', r.a)",
    "extract(year from date_add(DATE '2024-12-30', r.a))", "year(DATE '2024-01-01' + r.a)",
    "add_months(DATE '2024-01-31', r.a)", "datediff(DATE '2024-03-01', DATE '2024-02-01' + r.a)",
    "date_format(DATE '2024-01-01' + r.a, 'yyyy-MM')", "dayofweek(DATE '2024-01-01' + r.a)",
    "last_day(DATE '2024-02-01' + r.a)", "make_date(2024, 1, r.a + 1)",
    "TIMESTAMP '2024-01-01 00:00:00' + INTERVAL 2 HOURS",
    "date_trunc('MONTH', TIMESTAMP '2024-05-05 10:00:00' + make_interval(0, 0, 0, r.a))",
    "INTERVAL '1' DAY * r.a", "to_date('2024-02-03')", "try_cast(t.h AS DATE)",
    "substring(t.h, 1, 2)", "substr(t.h, 2)", "t.h || 'x'", "concat(t.h, '-', CAST(r.a AS STRING))",
    "upper(t.h)", "length(t.h)", "trim(t.h)", "lpad(t.h, 4, '*')", "replace(t.h, ' ', '_')",
    "instr(t.h, 'z')", "locate('z', t.h)", "regexp_extract(t.h, '([a-z])([0-9])', 2)",
    "split_part(t.h, ' ', 1)", "t.h LIKE 'x%'", "t.h NOT LIKE '%z'", "t.h RLIKE '^x'",
    "t.h ILIKE 'X%'", "t.h IN ('x1', 'y')", "t.h NOT IN ('x1')", "r.a IN (1, NULL)",
    "nvl(r.b, 0)", "ifnull(r.b, 0)", "nullif(r.b, 0)", "coalesce(r.b, r.a, 0)",
    "if(r.b > 1, 'big', 'small')", "CASE r.a WHEN 1 THEN 'one' ELSE 'other' END",
    "CASE WHEN r.c > 0 THEN r.c WHEN r.c < 0 THEN -r.c END",
    "CAST(r.c AS INT)", "CAST(r.a AS STRING)", "r.c::int", "try_cast(t.h AS INT)",
    "r.a DIV 2", "r.a % 3", "pmod(r.a, 3)", "round(r.d, 1)", "abs(r.c)", "r.c / 3", "r.a / 2",
    "greatest(r.a, r.b)", "least(r.a, r.b)", "r.a BETWEEN 1 AND 3", "r.d NOT BETWEEN -1 AND 1",
    "r.d IS NOT NULL", "r.a <=> r.b", "NOT (r.a <=> r.b)", "r.a <> r.b", "r.a != r.b",
    "array_contains(array(1, 2), r.a)", "bit_length(t.h)", "hash(r.a, t.h)",
    "sha2(CAST(r.a AS STRING), 256)", "named_struct('x', r.a).x", "element_at(array(r.a, 7), 2)",
]


def test_rendered_scalars_equal_the_original(spark, vl, tmp_path):
    registered_workload(spark, str(tmp_path), 5, null_heavy=True)
    originals, rendered = [], []
    for i, text in enumerate(EXPRESSIONS):
        scalar = Scalar.parse(text)
        back = scalar.to_sql(lambda var: var)
        originals.append(f"{text} AS o{i}")
        rendered.append(f"{back} AS b{i}")
    df = spark.sql(f"SELECT {', '.join(originals + rendered)} FROM r JOIN t ON r.a = t.e")
    types = {f.name: f.dataType for f in df.schema.fields}
    for i, text in enumerate(EXPRESSIONS):
        assert types[f"o{i}"] == types[f"b{i}"], text
    mismatch = []
    for row in df.collect():
        for i, text in enumerate(EXPRESSIONS):
            if row[f"o{i}"] != row[f"b{i}"]:
                mismatch.append((text, Scalar.parse(text).to_sql(lambda v: v), row[f"o{i}"],
                                 row[f"b{i}"]))
    assert df.count() > 3 and not mismatch, mismatch[:5]
