"""The compiler's pass lists (compiler/passes.py) are what it runs, in their order."""
from compiler_helpers import dump, spec_of
from test_tpch import TABLES, load_query
from viewlet.calculus.normalize import fresh_names
from viewlet.compiler import passes as P
from viewlet.compiler.hoivm import Compiler, compile_view
from viewlet.frontend.translator import COUNT_COLUMN

VIEWS = [
    ("SELECT r.a, SUM(s.c) FROM r JOIN s ON r.b = s.b WHERE s.c > 2 GROUP BY r.a", {}),
    # a nested aggregate (decorrelation), MIN (a multiset), caches on
    ("SELECT r.a, MIN(r.b) FROM r WHERE r.b > (SELECT SUM(s.c) FROM s WHERE s.b < r.a) "
     "GROUP BY r.a", {"caches": True}),
    (load_query("q3"), {"tables": TABLES}),
]


def _compile(sql, depth=None, caches=False, tables=None, trace=None):
    spec = spec_of(sql, tables)
    return compile_view(spec.group, spec.columns, depth,
                        {n: m.query for n, m in spec.multisets.items()}, caches=caches,
                        support=COUNT_COLUMN, trace=trace)


def _runs(trace, stage):
    """The pass names of each run of the `stage` list (a run: one work item), in run order."""
    runs = {}
    for s, name, item in trace:
        if s == stage:
            runs.setdefault(id(item), []).append(name)
    return list(runs.values())


def test_every_list_is_named_and_documented():
    for title, passes in P.PIPELINE:
        names = [p.name for p in passes]
        assert len(names) == len(set(names)), title
        for p in passes:
            assert p.doc and "\n" not in p.doc, p.name
            assert p.run.__doc__ and len(p.run.__doc__.split()) > 8, p.name
    text = P.describe()
    assert all(p.name in text for _, passes in P.PIPELINE for p in passes)


def test_the_compiler_runs_each_list_in_order():
    for sql, opts in VIEWS:
        for depth in (None, 0, 1, 2):
            trace = []
            _compile(sql, depth, trace=lambda *e: trace.append(e), **opts)
            assert _runs(trace, "view") == [[p.name for p in P.VIEW_PASSES]]
            for stage in ("delta", "monomial"):
                order = [p.name for p in {"delta": P.DELTA_PASSES,
                                          "monomial": P.MONOMIAL_PASSES}[stage]]
                runs = _runs(trace, stage)
                for run in runs:
                    # a prefix of the list: a pass may end it early, none is skipped
                    assert run == order[:len(run)], (stage, run)
                assert (order in runs) == (depth != 0 and (stage == "delta" or depth != 1))
            maps = [n for s, n, _ in trace if s == "map"]
            assert set(maps) <= {p.name for p in P.MAP_RULES}
            if depth == 0:
                assert not any(s in ("delta", "monomial", "map") for s, _, _ in trace)
            if depth is None:
                assert maps.count("new_map") == len(_compile(sql, depth, **opts).maps) - 1 - len(
                    spec_of(sql, opts.get("tables")).multisets)


def test_passes_run_by_hand_give_the_compilers_program():
    """VIEW_PASSES run one by one on a fresh Compiler print the program compile_view gives
    (fresh variables numbered alike: each compile in its own fresh_names block)."""
    for sql, opts in VIEWS:
        for depth in (None, 0, 1, 2):
            with fresh_names():
                spec = spec_of(sql, opts.get("tables"))
                c = Compiler(depth, caches=opts.get("caches", False))
                view = P.View(tuple(spec.group), dict(spec.columns),
                              {n: m.query for n, m in spec.multisets.items()}, COUNT_COLUMN)
                for p in P.VIEW_PASSES:
                    view = p.run(c, view)
            with fresh_names():
                compiled = _compile(sql, depth, **opts)
            assert dump(c.program) == dump(compiled)
            assert len(compiled.maps) > (1 if depth is None else 0)
