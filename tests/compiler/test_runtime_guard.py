"""What the compiler maintains and the Spark runtime does not run yet (MIN / MAX / DISTINCT
aggregates, WITH clauses) is refused by `compile_definition` (CREATE) naming the construct, its
position and "not yet supported by the runtime"; `viewlet explain` still compiles it."""
import pytest

from compiler_helpers import FakeResolver
from viewlet.errors import UnsupportedSQL
from viewlet.runtime.definition import compile_definition


@pytest.mark.parametrize("sql, construct", [
    ("SELECT r.a, MIN(r.b) FROM r GROUP BY r.a", "MIN(r.b)"),
    ("SELECT r.a, COUNT(*), COUNT(DISTINCT r.b) FROM r GROUP BY r.a", "COUNT(DISTINCT r.b)"),
    ("SELECT SUM(r.a) FROM r HAVING MAX(r.b) > 1", "MAX(r.b)"),
    ("SELECT r.a FROM r WHERE r.b = (SELECT MAX(s.c) FROM s WHERE s.b = r.a)",
     "MAX(s.c) in a subquery"),
    ("SELECT x.b FROM (SELECT s.b, AVG(DISTINCT s.c) AS m FROM s GROUP BY s.b) x",
     "AVG(DISTINCT s.c) in a subquery"),
    ("WITH x AS (SELECT a FROM r) SELECT a FROM x", "a WITH clause"),
    ("SELECT r.a, (SELECT MIN(s.c) FROM s WHERE s.b = r.a) FROM r", "MIN(s.c) in a subquery"),
    ("SELECT r.a, COUNT(*) FROM r GROUP BY r.a HAVING COUNT(*) > (SELECT COUNT(DISTINCT s.c) "
     "FROM s)", "COUNT(DISTINCT s.c) in a subquery"),
])
def test_pending_constructs_are_refused_for_the_runtime(sql, construct):
    with pytest.raises(UnsupportedSQL) as err:
        compile_definition(sql, FakeResolver(), None)
    assert err.value.construct == construct
    assert "not yet supported by the runtime" in err.value.message
    assert err.value.position is not None and " at line 1, column " in err.value.message
    compiled = compile_definition(sql, FakeResolver(), None, for_runtime=False)
    assert compiled.spec.runtime_pending[0][0] == construct


def test_supported_views_pass_the_guard():
    compiled = compile_definition("SELECT r.a, SUM(r.b) FROM r GROUP BY r.a", FakeResolver(), 1)
    assert compiled.spec.runtime_pending == [] and not compiled.program.multisets()
