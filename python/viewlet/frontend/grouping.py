"""GROUPING SETS, ROLLUP and CUBE as a union of groupings.

`GROUP BY a, ROLLUP(b, c)` is the grouping sets (a, b, c), (a, b), (a): each set groups the
rows by its expressions, the other grouping expressions are NULL in its rows. The view state
is keyed by one variable per grouping expression and the set's position: a row of the base
counts once per set, with the expressions outside the set assigned NULL and the position a
constant (Lift atoms), so every aggregate's state and multiset is a sum over the sets. A
group whose expression is NULL in the data stays apart from the NULL of a set that leaves
the expression out (their positions differ), and duplicate sets stay apart as in Spark.
`grouping(e)` and `grouping_id(...)` are functions of the position (bit i of grouping_id
is 1 when the i-th grouping expression is not in the set, the first expression the most
significant bit, as in Spark).

A set without expressions (the grand total of ROLLUP / CUBE, `GROUPING SETS (())`) is a
group like the others: it has no row over no input rows, as in Spark (only an aggregate
without GROUP BY has one row over no rows).
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Callable, List, Optional, Tuple

from sqlglot import exp

MAX_SETS = 4096          # CUBE over 12 expressions


@dataclass
class GroupingSets:
    exprs: List[exp.Expression]            # the distinct grouping expressions, in order
    sets: List[Tuple[int, ...]]            # each set: positions into exprs

    def grouping_id(self, k: int, of: Optional[List[int]] = None) -> int:
        """grouping_id(...) of the k-th set over the expressions `of` (default: all)."""
        of = list(range(len(self.exprs))) if of is None else of
        out = 0
        for i in of:
            out = (out << 1) | (0 if i in self.sets[k] else 1)
        return out


def has_grouping_sets(group: Optional[exp.Group]) -> bool:
    if group is None:
        return False
    return bool(group.args.get("rollup") or group.args.get("cube")
                or group.args.get("grouping_sets")) or any(
        isinstance(g, (exp.Rollup, exp.Cube, exp.GroupingSets)) for g in group.expressions)


def grouping_sets(group: exp.Group, resolve: Callable[[exp.Expression], exp.Expression],
                  fail) -> GroupingSets:
    """The grouping sets of a GROUP BY with ROLLUP / CUBE / GROUPING SETS; `resolve(e)`
    turns a GROUP BY item (a position, an alias) into its expression."""
    exprs: List[exp.Expression] = []
    keys: List[str] = []

    def index(e: exp.Expression) -> int:
        e = resolve(e)
        key = e.sql(dialect="spark")
        if key not in keys:
            keys.append(key)
            exprs.append(e)
        return keys.index(key)

    def column_group(e: exp.Expression) -> Tuple[int, ...]:
        """An item of ROLLUP / CUBE / GROUPING SETS: `(a, b)` is one group of columns."""
        if isinstance(e, exp.Tuple):
            return tuple(index(x) for x in e.expressions)
        while isinstance(e, exp.Paren):
            e = e.this
        return (index(e),)

    def element_sets(e: exp.Expression) -> List[Tuple[int, ...]]:
        if isinstance(e, exp.Rollup):
            items = [column_group(x) for x in e.expressions]
            return [sum(items[:k], ()) for k in range(len(items), -1, -1)]
        if isinstance(e, exp.Cube):
            items = [column_group(x) for x in e.expressions]
            if len(items) > 12:
                fail(f"CUBE over {len(items)} expressions", e)
            return [sum((items[i] for i in chosen), ()) for n in range(len(items), -1, -1)
                    for chosen in combinations(range(len(items)), n)]
        if isinstance(e, exp.GroupingSets):
            out: List[Tuple[int, ...]] = []
            for x in e.expressions:
                out += element_sets(x) if isinstance(x, (exp.Rollup, exp.Cube)) \
                    else [column_group(x)]
            return out
        return [(index(e),)]

    plain = [g for g in group.expressions
             if not isinstance(g, (exp.Rollup, exp.Cube, exp.GroupingSets))]
    sets: List[Tuple[int, ...]] = [()]
    for g in group.expressions:
        sets = [_merge(a, b) for a in sets for b in element_sets(g)]
        if len(sets) > MAX_SETS:
            fail(f"more than {MAX_SETS} grouping sets", g)
    if group.args.get("rollup"):              # GROUP BY a, b WITH ROLLUP
        sets = element_sets(exp.Rollup(expressions=[p.copy() for p in plain]))
    elif group.args.get("cube"):              # GROUP BY a, b WITH CUBE
        sets = element_sets(exp.Cube(expressions=[p.copy() for p in plain]))
    elif group.args.get("grouping_sets"):
        fail("this form of GROUPING SETS", group)
    return GroupingSets(exprs, sets)


def _merge(a: Tuple[int, ...], b: Tuple[int, ...]) -> Tuple[int, ...]:
    return a + tuple(i for i in b if i not in a)


def grouping_call(node: exp.Expression, sets: GroupingSets, position_var: str,
                  key_of: Callable[[exp.Expression], str], fail) -> exp.Expression:
    """`grouping(e)` (TINYINT) or `grouping_id(e, ...)` (BIGINT) as a CASE over the set's
    position variable."""
    args = ([node.this] if node.this is not None else []) + list(node.expressions)
    keys = [key_of(e) for e in sets.exprs]
    of = []
    for a in args:
        k = key_of(a)
        if k not in keys:
            fail(f"{node.key.upper()} over an expression that is not grouped", a,
                 "grouping() and grouping_id() take GROUP BY expressions.")
        of.append(keys.index(k))
    if isinstance(node, exp.Grouping) and len(of) != 1:
        fail("grouping() without exactly one argument", node)
    typ = "tinyint" if isinstance(node, exp.Grouping) else "bigint"
    position = exp.column(position_var, quoted=True)
    case = exp.Case(ifs=[exp.If(this=exp.EQ(this=position.copy(), expression=exp.Literal.number(k)),
                                true=exp.Literal.number(sets.grouping_id(k, of or None)))
                         for k in range(len(sets.sets))])
    return exp.Cast(this=case, to=exp.DataType.build(typ, dialect="spark"))


__all__ = ["GroupingSets", "has_grouping_sets", "grouping_sets", "grouping_call"]
