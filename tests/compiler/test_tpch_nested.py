"""The shipped TPC-H views (sql/tpch): which compile, which are refused and why, and for the
compiled ones the trigger program equals re-evaluation on random batches over tiny
TPC-H-shaped relations (reference evaluator, no Spark)."""
import datetime as dt
import os
import random
import re
from decimal import Decimal

import pytest

from compiler_helpers import compile_sql
from test_randomized import check_equivalence
from viewlet.errors import UnsupportedSQL
from viewlet.workloads.tpch import SCHEMAS

SQL_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "sql", "tpch")


def _spark_type(t) -> str:
    s = str(t)
    return {"int64": "bigint", "int32": "int", "string": "string", "date32[day]": "date"}.get(
        s, s.replace("decimal128", "decimal"))


TPCH = {name: [(f.name, _spark_type(f.type), False) for f in schema]
        for name, schema in SCHEMAS.items()}


def load(name: str) -> str:
    text = open(os.path.join(SQL_DIR, f"{name}.sql")).read()
    return "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("--"))


# the constants the queries compare with, so that random rows match them often
_STRINGS = ["BUILDING", "EUROPE", "AMERICA", "ASIA", "FRANCE", "GERMANY", "CANADA", "BRAZIL",
            "SAUDI ARABIA", "Brand#23", "Brand#12", "Brand#45", "MED BOX", "SM CASE", "LG BOX",
            "ECONOMY ANODIZED STEEL", "PROMO BRUSHED", "LARGE BRASS", "forest green", "F", "O",
            "1-URGENT", "2-HIGH", "5-LOW", "MAIL", "SHIP", "AIR", "DELIVER IN PERSON",
            "13-555", "31-222", "44-111", "R", "A", "N"]
_DATES = [dt.date(1993, 7, 15), dt.date(1994, 6, 1), dt.date(1995, 3, 10), dt.date(1995, 3, 20),
          dt.date(1995, 9, 15), dt.date(1996, 2, 1), dt.date(1997, 5, 5), dt.date(1998, 8, 1)]


def tpch_row(rng, table):
    row = {}
    for col, typ, _ in TPCH[table]:
        if typ in ("bigint", "int"):
            row[col] = rng.randrange(1, 4) if re.search(r"key$", col) else rng.choice([1, 5, 15, 25, 400])
        elif typ.startswith("decimal"):
            row[col] = Decimal(rng.choice([1, 5, 20, 60, 150, 200])) / (100 if "discount" in col or "tax" in col else 1)
        elif typ == "date":
            row[col] = rng.choice(_DATES)
        else:
            row[col] = rng.choice(_STRINGS)
    return row


SUPPORTED = ["q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8", "q9", "q10", "q12", "q14", "q17",
             "q18", "q19", "q20", "q21", "q22", "q11a", "q17a", "q18a", "q22a", "ssb4"]
REFUSED = {"q11": "subquery outside WHERE", "q13": "aggregating subquery in FROM",
           "q15": "aggregating subquery in FROM", "q16": "DISTINCT"}
# Pure-Python evaluation of wide joins is slow; these run with fewer batches.
HEAVY = {"q2", "q5", "q7", "q8", "q9", "q10", "q20", "q21", "ssb4"}


def test_every_query_file_is_classified():
    files = {f[:-4] for f in os.listdir(SQL_DIR) if f.endswith(".sql")}
    assert files == set(SUPPORTED) | set(REFUSED)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_with_a_named_construct(name):
    with pytest.raises(UnsupportedSQL) as err:
        compile_sql(load(name), tables=TPCH)
    assert REFUSED[name] in str(err.value)


@pytest.mark.parametrize("name", SUPPORTED)
def test_program_equals_reevaluation(name):
    batches = 3 if name in HEAVY else 6
    check_equivalence(load(name), None, 0, tables=TPCH, batches=batches, row=tpch_row)
