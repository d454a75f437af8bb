"""UNION [ALL] and SELECT DISTINCT, reduced to what the front end already maintains.

  q1 UNION ALL q2        a FROM item whose rows are the sum of its branches': each branch is
                         translated like a subquery in FROM and assigns its output columns to
                         the union's variables (one monomial set per branch)
  q1 UNION q2            DISTINCT over q1 UNION ALL q2 (an inner UNION under an outer one is
                         subsumed by the outer DISTINCT)
  SELECT DISTINCT ...    without aggregates: the state already counts each distinct output row,
                         the result holds one row per row with count > 0 instead of count copies;
                         with GROUP BY whose keys are all output columns (or a global
                         aggregate): the rows are distinct already; otherwise the aggregating
                         query becomes a subquery in FROM grouped by all its columns
  q1 INTERSECT [ALL] q2,  a FROM item over the distinct rows x of either side: per row, the
  q1 EXCEPT [ALL] q2      numbers of copies a and b on each side are nested counts keyed by
                         x (NULL-safe, as set operations compare NULLs equal), and the row's
                         multiplicity is a function of them, as Spark defines it: INTERSECT
                         ALL min(a, b), EXCEPT ALL max(a - b, 0), INTERSECT 1 when a > 0 and
                         b > 0, EXCEPT 1 when a > 0 and b = 0. A batch re-derives the rows
                         whose counts it changes, like any nested aggregate's
  a view that is a set operation  SELECT [DISTINCT] * FROM (it) AS __union

Column types across branches: Spark widens them (int and bigint to bigint, decimals to a
decimal holding both, ...); when the branches' columns have known, different types, each
branch casts to the widened type, so the union's variables have one type in every map.
"""
from __future__ import annotations

from typing import List, Optional

from sqlglot import exp
from sqlglot.errors import SqlglotError

from ..calculus.ir import Add, Cond, Groups, Lift, Mul, Nested, Value
from ..calculus.normalize import normalize
from ..calculus.scalar import Scalar
from .sources import Derived, safe_name

UNION_ALIAS = "__union"
DISTINCT_ALIAS = "__distinct"
SETOP_ALIAS = "__setop"
SET_OPERATIONS = (exp.Union, exp.Intersect, exp.Except)


def as_select(tree: exp.Expression, fail) -> exp.Expression:
    """A view whose query is a set operation, as a SELECT over it."""
    while isinstance(tree, exp.Subquery) and not tree.alias and isinstance(
            tree.this, SET_OPERATIONS + (exp.Select,)):
        tree = tree.this
    if isinstance(tree, (exp.Intersect, exp.Except)):
        check_union(tree, fail)
        return exp.select(exp.Star()).from_(exp.Subquery(this=tree, alias=exp.TableAlias(
            this=exp.to_identifier(SETOP_ALIAS))))
    if not isinstance(tree, exp.Union):
        return tree
    check_union(tree, fail)
    distinct = bool(tree.args.get("distinct"))
    inner = all_branches(tree) if distinct else tree
    select = exp.select(exp.Star()).from_(exp.Subquery(this=inner, alias=exp.TableAlias(
        this=exp.to_identifier(UNION_ALIAS))))
    if distinct:
        select.set("distinct", exp.Distinct())
    return select


def check_union(node: exp.Expression, fail):
    for key, what in (("order", "ORDER BY"), ("limit", "LIMIT/OFFSET"), ("offset", "LIMIT/OFFSET")):
        if node.args.get(key) is not None:
            fail(f"{what} on a {node.key.upper()}", node.args[key],
                 "A view is an unordered relation: order and limit when you query it.")


def all_branches(node: exp.Expression) -> exp.Expression:
    """The union with every UNION turned into UNION ALL (under an outer DISTINCT)."""
    node = node.copy()
    for u in node.find_all(exp.Union):
        u.set("distinct", False)
    return node


def branches(node: exp.Expression, fail) -> List[exp.Select]:
    """The SELECTs of a UNION ALL, left to right. A UNION (distinct) inside it becomes a
    branch `SELECT DISTINCT * FROM (that union)`."""
    while isinstance(node, exp.Subquery) and not node.alias:
        node = node.this
    if isinstance(node, (exp.Intersect, exp.Except)):
        check_union(node, fail)
        return [exp.select(exp.Star()).from_(exp.Subquery(this=node, alias=exp.TableAlias(
            this=exp.to_identifier(SETOP_ALIAS))))]
    if isinstance(node, exp.Union):
        check_union(node, fail)
        if node.args.get("distinct"):
            select = exp.select(exp.Star()).from_(exp.Subquery(
                this=all_branches(node), alias=exp.TableAlias(this=exp.to_identifier(UNION_ALIAS))))
            select.set("distinct", exp.Distinct())
            return [select]
        return branches(node.this, fail) + branches(node.expression, fail)
    if not isinstance(node, exp.Select):
        fail(f"a {node.key.upper()} in a UNION", node)
    return [node]


def distinct_as_subquery(tree: exp.Select) -> exp.Select:
    """SELECT DISTINCT e1, ..., en FROM ... GROUP BY ... as
    SELECT c0, ..., cn FROM (SELECT e1 AS c0, ... FROM ... GROUP BY ...) AS __distinct
    GROUP BY c0, ..., cn (Spark names the columns from the original query)."""
    inner = tree.copy()
    inner.set("distinct", None)
    names = [f"c{i}" for i in range(len(inner.expressions))]
    inner.set("expressions", [exp.alias_(e.this if isinstance(e, exp.Alias) else e, n)
                              for e, n in zip(inner.expressions, names)])
    outer = exp.select(*[exp.column(n, table=DISTINCT_ALIAS) for n in names]).from_(
        exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier(DISTINCT_ALIAS))))
    outer.set("group", exp.Group(expressions=[exp.column(n, table=DISTINCT_ALIAS) for n in names]))
    return outer


def distinct_derived(tr, select, child, conds, derived):
    """SELECT DISTINCT in FROM: a Groups atom over the output values (NULL is a value,
    as DISTINCT treats it)."""
    outputs = []
    lifts = []
    for name, inner, var in child.output_items(select):
        if var is None:
            var = tr.fresh(f"{safe_name(derived.alias)}_{safe_name(name)}".lower() or "d")
            tr.parent[var] = var
            lifts.append(Lift(var, child.to_scalar(inner)))
        outputs.append((name, var))
    base = child.base_atoms(conds) + lifts
    keys = tuple(dict.fromkeys(child.find(v) for _, v in outputs))
    tr.group_keys.update(keys)
    derived.fixed_atoms = [Groups(normalize(Mul(tuple(base)) if len(base) > 1 else base[0],
                                            group=keys))]
    for name, var in outputs:
        derived.add(name, child.find(var), True)


def add_union(tr, node: exp.Subquery):
    """UNION [ALL] in FROM: each branch is translated like a FROM subquery of a scope of
    its own and assigns its columns to the union's variables (one term per branch)."""
    alias = node.alias_or_name
    if not alias:
        tr.fail("a subquery in FROM without an alias", node)
    selects = branches(node.this, tr.fail)
    derived = Derived(alias, None, [])
    products = _branch_products(tr, selects, derived, "UNION")
    derived.fixed_atoms = [Add(tuple(products))] if len(products) > 1 else list(
        products[0].factors if isinstance(products[0], Mul) else products)
    tr.add_derived_instance(derived, node)


def add_set_operation(tr, node: exp.Subquery):
    """INTERSECT / EXCEPT [ALL] in FROM: the distinct rows of both sides (a Groups atom over
    the output variables) times each row's multiplicity, a function of its nested counts on
    either side (see the module's docstring)."""
    op = node.this
    alias = node.alias_or_name
    if not alias:
        tr.fail("a subquery in FROM without an alias", node)
    check_union(op, tr.fail)
    sides = [_as_select(op.this), _as_select(op.expression)]
    derived = Derived(alias, None, [])
    left, right = _branch_products(tr, sides, derived, op.key.upper())
    keys = tuple(derived.vars[c.name.lower()] for c in derived.table.columns)
    a, b = tr.fresh("setl"), tr.fresh("setr")
    for var in (a, b):
        tr.parent[var] = var
    counts = [Nested(a, normalize(left, group=keys), null_safe=True),
              Nested(b, normalize(right, group=keys), null_safe=True)]
    ca, cb = f"`{a}`", f"`{b}`"
    distinct = bool(op.args.get("distinct"))
    if isinstance(op, exp.Intersect):
        weight = Cond(Scalar.parse(f"{ca} > 0 AND {cb} > 0")) if distinct \
            else Value(Scalar.parse(f"LEAST({ca}, {cb})"))
    else:
        weight = Cond(Scalar.parse(f"{ca} > 0 AND {cb} = 0")) if distinct \
            else Value(Scalar.parse(f"GREATEST({ca} - {cb}, 0)"))
    rows = Groups(normalize(Add((left, right)), group=keys))
    derived.fixed_atoms = [rows] + counts + [weight]
    tr.add_derived_instance(derived, node)


def select_over(node: exp.Expression, fail) -> exp.Expression:
    """A set operation used as a subquery (`x IN (SELECT ... UNION SELECT ...)`, EXISTS, a
    scalar subquery) as a SELECT of its columns from it as a FROM item; any other node as it
    is. The set operation's branches are not correlated (as in FROM)."""
    while isinstance(node, exp.Subquery) and not node.alias and isinstance(
            node.this, SET_OPERATIONS + (exp.Subquery,)):
        node = node.this
    if not isinstance(node, SET_OPERATIONS):
        return node
    first = node
    while not isinstance(first, exp.Select):
        first = first.this
    if any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))
           for e in first.expressions):
        fail(f"a {node.key.upper()} with * as a subquery", node, "List its columns.")
    names = [f"c{i}" for i in range(len(first.expressions))]
    source = exp.Subquery(this=node, alias=exp.TableAlias(
        this=exp.to_identifier(SETOP_ALIAS), columns=[exp.to_identifier(n) for n in names]))
    return exp.select(*[exp.column(n, table=SETOP_ALIAS) for n in names]).from_(source)


def _as_select(node: exp.Expression) -> exp.Select:
    """An operand of a set operation as a SELECT (a nested set operation: SELECT * over it)."""
    while isinstance(node, exp.Subquery) and not node.alias and isinstance(node.this, exp.Select):
        node = node.this
    if isinstance(node, exp.Select):
        return node
    return exp.select(exp.Star()).from_(exp.Subquery(this=node, alias=exp.TableAlias(
        this=exp.to_identifier(SETOP_ALIAS))))


def _branch_products(tr, selects, derived, what: str) -> list:
    """Each branch translated like a FROM subquery of a scope of its own, its columns
    assigned to the shared output variables (added to `derived`, named after the first
    branch's columns, with Spark's widened types): one product of atoms per branch."""
    terms, columns = [], None
    for k, select in enumerate(selects):
        branch = tr.nested_scope(None)           # not correlated
        branch.add_derived(exp.Subquery(this=select, alias=exp.TableAlias(
            this=exp.to_identifier(f"{UNION_ALIAS}{k}"))))
        inst = branch.instances[0]
        cols = [(c.name, branch.find(inst.vars[c.name.lower()])) for c in inst.table.columns]
        if columns is None:
            columns = [(name, []) for name, _ in cols]
        if len(cols) != len(columns):
            tr.fail(f"{what} branches with different numbers of columns ({len(columns)} "
                    f"and {len(cols)})", select)
        for (_, vs), (_, v) in zip(columns, cols):
            vs.append(v)
        terms.append(branch.source_atoms(inst))
    alias = derived.alias
    shared = []
    for name, vs in columns:
        var = tr.fresh(f"{safe_name(alias)}_{safe_name(name)}".lower() or "u")
        tr.parent[var] = var
        tr.nullable[var] = True
        tr.assigned.add(var)
        types = [tr.var_type(v) for v in vs]
        wide = wider_type(types)
        if wide is not None:
            tr.var_types[var] = wide
        shared.append((var, wide if wide is not None and len(set(types)) > 1 else None))
        derived.add(name, var, True)
    products = []
    for k, atoms in enumerate(terms):
        lifts = []
        for (var, cast), vs in zip(shared, (vs for _, vs in columns)):
            value = exp.column(vs[k], quoted=True)
            if cast is not None:
                value = exp.cast(value, exp.DataType.build(cast, dialect="spark"))
            lifts.append(Lift(var, Scalar(value)))
        body = atoms + lifts
        products.append(Mul(tuple(body)) if len(body) > 1 else body[0])
    return products


# -- Spark's type widening for UNION columns (TypeCoercion.findWiderTypeForTwo) -------------

_INTEGRAL = {"tinyint": (3, 1), "smallint": (5, 2), "int": (10, 3), "bigint": (20, 4)}


def wider_type(types: List[Optional[str]]) -> Optional[str]:
    """The type Spark gives a UNION column whose branches have these types; None when a type
    is unknown or the widening is not one of the simple cases below."""
    if not types or any(t is None for t in types):
        return None
    out = types[0].lower()
    for t in types[1:]:
        out = _wider(out, t.lower())
        if out is None:
            return None
    return out


def _wider(a: str, b: str) -> Optional[str]:
    if a == b:
        return a
    if a in _INTEGRAL and b in _INTEGRAL:
        return a if _INTEGRAL[a][1] > _INTEGRAL[b][1] else b
    if "double" in (a, b) and all(t in _FRACTIONAL or _as_decimal(t) for t in (a, b)):
        return "double"
    if "float" in (a, b) and all(t in _FRACTIONAL or t in _INTEGRAL for t in (a, b)):
        return "float"
    da, db = _as_decimal(a), _as_decimal(b)
    if da and db:                     # DecimalPrecision.widerDecimalType, bounded to 38
        (p1, s1), (p2, s2) = da, db
        scale = max(s1, s2)
        return f"decimal({min(38, max(p1 - s1, p2 - s2) + scale)},{min(38, scale)})"
    return None


_FRACTIONAL = {"float", "double"}


def _as_decimal(t: str):
    """(precision, scale) of decimal(p,s), or of the decimal an integral type widens to;
    None for other types (and for a decimal written without both precision and scale)."""
    if t in _INTEGRAL:
        return _INTEGRAL[t][0], 0
    try:
        parsed = exp.DataType.build(t, dialect="spark")
    except SqlglotError:
        return None
    params = [p.this for p in parsed.expressions]
    if parsed.this == exp.DataType.Type.DECIMAL and len(params) == 2 and \
            all(isinstance(p, exp.Literal) and p.is_int for p in params):
        return int(params[0].name), int(params[1].name)
    return None
