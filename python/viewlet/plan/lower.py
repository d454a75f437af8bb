"""Lowering calculus queries to Spark SQL.

Each monomial becomes one SELECT: its relation, batch and map atoms are FROM items (Spark
DataFrames, or symbolic leaves a batch binds to DataFrames later, passed as parameters),
shared variables become join equalities, conditions go to WHERE, and the multiplicity is the
product of the atoms' multiplicities, the coefficient and the value terms, summed per group.
Monomials are combined with UNION ALL and summed again.

A map atom whose key variables the batch binds (the variable is a column of a batch atom of
the same monomial) is read with `lookups`: the batch columns its keys must equal, so the
source can read only the map rows that hold one of the batch's values. A map read by lookup
binds its other key variables to values the driver knows before Spark runs (that column of
the rows the lookup reads: a `MapOrigin`), so maps joined on those are read by lookup too.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple

from ..calculus.ir import (COUNT_DISTINCT, EMPTY_VALUE, MAX, MIN, SUM, SUM_DISTINCT, Cond, DeltaRel,
                           Domain, Groups, Lift, MapRef, Monomial, Nested, Query, Rel, Value)
from ..errors import ViewletError
from ..frontend.collects import COLLECT_LIST, COLLECT_SET

MULT = "__m"
NESTED = "__n"
VAL = "__val"     # a nested multiset's value column

#: key position -> the batch columns ((relation, column), ...) that bind it; a `MapOrigin`
#: in place of a relation: that key column of a map's rows read by lookup
Lookups = Dict[int, FrozenSet[Tuple[object, str]]]
Origins = Dict[str, FrozenSet[Tuple[object, str]]]


@dataclass(frozen=True)
class MapOrigin:
    """Map `name` read with the (frozen) `lookups`: its rows' key values bind variables."""
    name: str
    lookups: tuple


def freeze_lookups(lookups: Optional[Lookups]) -> tuple:
    """Lookups as a hashable, ordered value (relations and MapOrigins sort by repr)."""
    return tuple(sorted((j, tuple(sorted(cols, key=repr))) for j, cols in (lookups or {}).items()))


def q(name: str) -> str:
    """A Spark SQL identifier, backquoted."""
    return "`" + name.replace("`", "``") + "`"


#: table names of a batch plan's leaves (LeafBuilder): `__viewlet_leaf_f0`, ...
LEAF_PREFIX = "__viewlet_leaf_"


@dataclass
class SqlBuilder:
    """Collects the parameters of `spark.sql(text, **params)`: DataFrames (the same object
    gets the same name) or hashable leaf descriptions bound to DataFrames later."""

    params: Dict[str, object] = field(default_factory=dict)

    def frame(self, df) -> str:
        for name, existing in self.params.items():
            if existing is df or (not _is_frame(df) and not _is_frame(existing) and existing == df):
                return self.reference(name)
        name = f"f{len(self.params)}"
        self.params[name] = df
        return self.reference(name)

    def reference(self, name: str) -> str:
        return "{" + name + "}"

    def sub(self, text: str) -> str:
        """A subquery as a FROM item (then `AS alias`)."""
        return f"({text})"


class LeafBuilder(SqlBuilder):
    """A SqlBuilder for batch plans: each leaf is a table named LEAF_PREFIX + parameter, and
    each subquery a CTE of its own, named once per distinct text (lowering repeats the same
    subquery once per monomial that reads it: TPC-H Q20 eighty of them, Q17a one twelve
    times), so the plan's text is a flat list of small queries that parses once into a tree
    (plan/batch.py), which each target emits with its own bindings."""

    def __init__(self):
        super().__init__()
        self.shared: Dict[str, str] = {}          # subquery text -> its CTE name

    def reference(self, name: str) -> str:
        return q(LEAF_PREFIX + name)

    def sub(self, text: str) -> str:
        name = self.shared.get(text)
        if name is None:
            name = self.shared[text] = f"{SUB_PREFIX}{len(self.shared)}"
        return name


SUB_PREFIX = "sq"


def _is_frame(x) -> bool:
    return hasattr(x, "sparkSession")


@dataclass(frozen=True)
class Sql:
    """A FROM item given as SQL text (already parenthesizable), not as a parameter."""
    text: str


class AtomSource:
    """Where a trigger statement's atoms read from (depends on the batch position)."""

    def delta(self, relation: str): ...        # base columns + __m
    def relation(self, relation: str): ...     # base columns
    def map(self, name: str, lookups: Optional[Lookups] = None): ...   # k0..kn + value column(s)

    def snapshot_only(self, name: str) -> bool:
        """Whether map `name` is read as a stored snapshot only (no rows Spark computes in
        the same query), so that the driver can know its rows' keys beforehand."""
        return False

    def pending_origins(self, name: str) -> Optional[List[Optional[FrozenSet]]]:
        """For a map read with rows an earlier trigger of the batch adds: per key position,
        the batch columns those rows' keys are among (None where unknown)."""
        return None

    def columns(self, atom) -> Optional[List[str]]:
        """Every column the FROM item of `atom` (a DeltaRel, Rel or MapRef) has, when known
        (None: only those the monomial reads are carried through a nested stage)."""
        return None


def _from(item, sb: SqlBuilder) -> str:
    return sb.sub(item.text) if isinstance(item, Sql) else sb.frame(item)


@dataclass
class Select:
    """A monomial as SQL pieces. Monomials with the same FROM items and joins differ only in
    their conditions and products, so several of them can share one SELECT."""

    froms: List[str]
    joins: List[str]          # equalities between atoms (never moved out of WHERE)
    conds: List[str]          # the monomial's conditions
    keys: List[str]           # SQL of each group variable
    product: str
    #: per group variable, the batch columns its values are among (None: unknown)
    key_origins: List[Optional[FrozenSet[Tuple[object, str]]]]

    def sql(self, out_keys: Sequence[str], out_value: str) -> str:
        keys = [f"{k} AS {q(o)}" for k, o in zip(self.keys, out_keys)]
        return _select(self.froms, self.joins + self.conds,
                       keys + [f"{self.product} AS {q(out_value)}"])

    def shape(self) -> tuple:
        return tuple(self.froms), tuple(self.joins)


def lower_monomial(mono: Monomial, group: Sequence[str], source: AtomSource, sb: SqlBuilder,
                   out_keys: Sequence[str], out_value: str, pre=None,
                   origins: Optional[Origins] = None) -> str:
    """One monomial as a SELECT of out_keys + out_value. `pre` = (FROM item, {var: SQL})
    binds input variables of a nested query from its enclosing query's distinct bindings."""
    return monomial_select(mono, group, source, sb, pre, origins).sql(out_keys, out_value)


def batch_origins(mono: Monomial, inherited: Optional[Origins] = None,
                  source: Optional["AtomSource"] = None) -> Origins:
    """Variables whose values all come from batch columns: bound by a batch atom, or by a
    domain of batch columns; `inherited` from an enclosing query (its inputs)."""
    out: Dict[str, set] = {}
    for atom in mono.atoms:
        if isinstance(atom, DeltaRel):
            for col, var in zip(atom.columns, atom.vars):
                out.setdefault(var, set()).add((atom.table, col))
        elif isinstance(atom, Domain):
            for var, cols in _domain_origins(atom.query, source).items():
                out.setdefault(var, set()).update(cols)
    merged = {v: frozenset(c) for v, c in out.items()}
    for var, cols in (inherited or {}).items():
        merged.setdefault(var, cols)
    return merged


def _domain_origins(query: Query, source: Optional["AtomSource"] = None) -> Origins:
    """A domain's group variable has batch origins if every monomial binds it by batch
    columns: directly, through a domain of its own, or (with `source`) through the keys of
    a map it reads by lookup (Q20: the suppliers of the partsupp rows of the changed parts)."""
    out: Dict[str, FrozenSet] = {}
    per_monomial = []
    for m in query.monomials:
        origin = batch_origins(m, None, source)
        if source is not None:
            _chain_map_origins(m, origin, source)
        per_monomial.append(origin)
    for var in query.group:
        cols = set()
        for origin in per_monomial:
            found = origin.get(var)
            if not found:
                cols = None
                break
            cols |= found
        if cols:
            out[var] = frozenset(cols)
    return out


def _chain_map_origins(mono: Monomial, origin: Dict[str, FrozenSet], source: AtomSource
                       ) -> Dict[str, int]:
    """Add origins for variables bound by a key column of a map read by lookup (a map read
    as its stored snapshot only): their values are among that column's values in the rows
    the lookup reads. Q18a's customer trigger: the customer's orders from one map, then
    the lineitem maps of those orders, instead of those maps whole. Returns the index of
    the atom each added origin comes from (an atom does not look itself up by them)."""
    derived: Dict[str, int] = {}
    changed = True
    while changed:
        changed = False
        for i, atom in enumerate(mono.atoms):
            if not isinstance(atom, MapRef):
                continue
            # rows an earlier trigger adds have keys from its batch columns: a key is
            # chained through such a map if those columns are known for its position
            added = None if source.snapshot_only(atom.name) else \
                (source.pending_origins(atom.name) or [None] * len(atom.vars))
            lookups = {j: origin[v] for j, v in enumerate(atom.vars) if v in origin}
            free = [(j, v) for j, v in enumerate(atom.vars) if v not in origin
                    and (added is None or added[j] is not None)]
            if not lookups or not free:
                continue
            src = MapOrigin(atom.name, freeze_lookups(lookups))
            for j, v in free:
                if v not in origin:
                    origin[v] = frozenset({(src, f"k{j}")}) | (added[j] if added else frozenset())
                    derived[v] = i
            changed = True
    return derived


def monomial_select(mono: Monomial, group: Sequence[str], source: AtomSource, sb: SqlBuilder,
                    pre=None, origins: Optional[Origins] = None) -> Select:
    froms: List[str] = []
    joins: List[str] = []
    conds: List[str] = []
    # the product's factors in order: column SQL, Value atoms (rendered last, over the final
    # binding) and _Factors (those of before a nested stage, kept as one parenthesized term)
    mults: List[object] = []
    # every column of the FROM items: a nested stage carries them all, so monomials that
    # differ only in the column they multiply by (a map's value columns, a relation's
    # columns) have one enclosing text, and their statements fuse into one block (the
    # view state's value columns of Q17a's delta join it with the per-part sums once)
    available: List[str] = []
    binding: Dict[str, str] = {}
    origin = batch_origins(mono, origins, source)
    derived = _chain_map_origins(mono, origin, source)

    def bind(var: str, sql: str):
        if var in binding:
            joins.append(f"{binding[var]} = {sql}")
        else:
            binding[var] = sql

    def offer(alias: str, atom, read: Sequence[str]):
        columns = source.columns(atom)
        available.extend(f"{alias}.{q(c)}" for c in (read if columns is None else columns))

    if pre is not None:
        froms.append(pre[0])
        binding.update(pre[1])
    for i, atom in enumerate(mono.atoms):
        alias = f"a{i}"
        if isinstance(atom, DeltaRel):
            froms.append(f"{_from(source.delta(atom.table), sb)} AS {alias}")
            for col, var in zip(atom.columns, atom.vars):
                bind(var, f"{alias}.{q(col)}")
            mults.append(f"{alias}.{q(MULT)}")
            offer(alias, atom, list(atom.columns) + [MULT])
        elif isinstance(atom, Rel):
            froms.append(f"{_from(source.relation(atom.table), sb)} AS {alias}")
            for col, var in zip(atom.columns, atom.vars):
                bind(var, f"{alias}.{q(col)}")
            offer(alias, atom, atom.columns)
        elif isinstance(atom, MapRef):
            lookups = {j: origin[v] for j, v in enumerate(atom.vars)
                       if v in origin and derived.get(v) != i}
            froms.append(f"{_from(source.map(atom.name, lookups or None), sb)} AS {alias}")
            for j, var in enumerate(atom.vars):
                bind(var, f"{alias}.{q(f'k{j}')}")
            mults.append(f"{alias}.{q(atom.column)}")
            offer(alias, atom, [f"k{j}" for j in range(len(atom.vars))] + [atom.column])
        elif isinstance(atom, Groups):
            keys = [f"d{j}" for j in range(len(atom.vars))]
            inner = lower_query(atom.query, source, sb, keys, "__g", aggregate=True)
            groups = (f"SELECT {', '.join(q(k) for k in keys) or '1 AS unit'} FROM "
                      f"{sb.sub(inner)} AS gg WHERE {q('__g')} <> 0")
            froms.append(f"{sb.sub(groups)} AS {alias}")
            for k, var in zip(keys, atom.vars):
                if var in binding:             # GROUP BY groups: NULL is a key
                    joins.append(f"{binding[var]} <=> {alias}.{q(k)}")
                else:
                    binding[var] = f"{alias}.{q(k)}"
        elif isinstance(atom, Domain):
            keys = [f"d{j}" for j in range(len(atom.vars))]
            inner = lower_query(atom.query, source, sb, keys, "__d", aggregate=False)
            domain = f"SELECT DISTINCT {', '.join(q(k) for k in keys)} FROM {sb.sub(inner)} AS dd"
            froms.append(f"{sb.sub(domain)} AS {alias}")
            for k, var in zip(keys, atom.vars):
                if var in binding:             # a superset of the touched keys: NULL too
                    joins.append(f"{binding[var]} <=> {alias}.{q(k)}")
                else:
                    binding[var] = f"{alias}.{q(k)}"

    pending = [a for a in mono.atoms if isinstance(a, (Lift, Nested, Cond, Value))]
    stage = 0
    while True:
        # Assignments bind variables from other variables; resolve them in dependency order.
        progress = True
        while progress:
            progress = False
            for l in [a for a in pending if isinstance(a, Lift)]:
                if all(v in binding for v in l.expr.vars):
                    value = l.expr.to_sql(binding.__getitem__)
                    if l.var in binding:
                        joins.append(f"({binding[l.var]}) <=> ({value})")
                    else:
                        binding[l.var] = f"({value})"
                    pending.remove(l)
                    progress = True
        for atom in [a for a in pending if isinstance(a, (Cond, Value)) and a.free_vars() <= set(binding)]:
            if isinstance(atom, Cond):
                conds.append(f"({atom.pred.to_sql(binding.__getitem__)})")
            else:
                mults.append(atom)
            pending.remove(atom)
        nested = [a for a in pending if isinstance(a, Nested) and set(a.inputs) <= set(binding)]
        if not nested:
            break
        # Nested aggregates: wrap what is bound so far as a subquery, compute each nested
        # query once per distinct input binding, and LEFT JOIN the values back.
        stage += 1
        # numbered in the order of their SQL, not of the variables' names: monomials that
        # differ in names only have one text
        # (the factors' columns are among `available`: each atom offers the one it multiplies by)
        carried = sorted(set(available) | set(binding.values()))
        col_of = {sql: f"c{j}" for j, sql in enumerate(carried)}
        cols = {v: col_of[binding[v]] for v in binding}
        inner = _select(froms, joins + conds, [f"{sql} AS {q(c)}" for sql, c in col_of.items()]
                        or [f"1 AS {q(MULT)}"])
        base = f"s{stage}"
        enclosing = sb.sub(inner)
        text = f"{enclosing} AS {base}"
        for n, atom in enumerate(nested):
            nalias = f"n{stage}_{n}"
            eq = "=" if _range_restricted(atom) and not atom.null_safe else "<=>"
            inherited = {g: origin[g] for g in atom.inputs if g in origin}
            value = sb.sub(_nested_sql(atom, enclosing, cols, source, sb, inherited))
            text += f" LEFT JOIN {value} AS {nalias} ON " + (
                " AND ".join(f"{base}.{q(cols[g])} {eq} {nalias}.{q(input_column(i))}"
                             for i, g in enumerate(atom.inputs))
                or "TRUE")
        carry = {sql: f"{base}.{q(c)}" for sql, c in col_of.items()}
        froms, joins, conds = [text], [], []
        mults = [_Factors(tuple(_carried_factors(mults, carry)))]
        available = list(carry.values())
        new_binding = {v: carry[sql] for v, sql in binding.items()}
        for n, atom in enumerate(nested):
            value = f"COALESCE(n{stage}_{n}.{q(NESTED)}, 0)" if EMPTY_VALUE[atom.kind] == 0 \
                else f"n{stage}_{n}.{q(NESTED)}"
            if atom.var in new_binding:
                joins.append(f"{new_binding[atom.var]} <=> {value}")
            else:
                new_binding[atom.var] = value
            pending.remove(atom)
        binding = new_binding
    if pending:
        missing = sorted(set().union(*(a.free_vars() for a in pending)) - set(binding))
        raise ViewletError(f"internal: unbound variables {missing} in {pending}")
    product = _rendered(mults, binding)
    if mono.coef != 1:
        product.insert(0, _number(mono.coef))
    if not froms:
        froms.append("(SELECT 1) AS unit")
    return Select(froms, joins, conds, [binding[v] for v in group], _product(product, 1),
                  [origin.get(v) for v in group])


@dataclass(frozen=True)
class _Factors:
    """A monomial's factors from before a nested stage: one parenthesized term of the
    product, as when the enclosing query multiplied them (the same association, so the same
    decimal result types)."""
    items: tuple


def _carried_factors(mults, carry: Dict[str, str]) -> list:
    """The factors with each column SQL replaced by the stage's column carrying it."""
    return [carry[f] if isinstance(f, str) else
            _Factors(tuple(_carried_factors(f.items, carry))) if isinstance(f, _Factors) else f
            for f in mults]


def _rendered(mults, binding: Dict[str, str]) -> List[str]:
    """The factors as SQL: Value atoms over `binding` (the monomial's final one)."""
    out = []
    for f in mults:
        if isinstance(f, str):
            out.append(f)
        elif isinstance(f, _Factors):
            out.append(f"({_product(_rendered(f.items, binding), 1)})")
        else:
            out.append(f"({f.expr.to_sql(binding.__getitem__)})")
    return out


def _select(froms, where, items) -> str:
    sql = f"SELECT {', '.join(items)} FROM {', '.join(froms) if froms else '(SELECT 1) AS unit'}"
    if where:
        sql += " WHERE " + " AND ".join(where)
    return sql


def _product(mults, default) -> str:
    return " * ".join(mults) if mults else str(default)


def _range_restricted(atom: Nested) -> bool:
    for m in atom.query.monomials:
        bound = set()
        for a in m.atoms:
            if isinstance(a, (Rel, DeltaRel, MapRef, Domain, Groups)):
                bound |= set(a.vars)
        if not set(atom.inputs) <= bound:
            return False
    return True


def input_column(i: int) -> str:
    """The column of a nested query's i-th input in its value subquery. Named by position,
    not after the enclosing query's columns: the same nested query under two enclosing
    queries (Q17a's per-part sums under each of its delta's joins) is then one text, one
    CTE computed once (LeafBuilder)."""
    return f"i{i}"


def _nested_sql(atom: Nested, enclosing: str, cols, source, sb, inherited: Origins) -> str:
    """The nested query's value per distinct binding of its inputs in the enclosing rows
    (`enclosing`: those rows as a FROM item), keyed by input_column(i) per input.
    `inherited`: batch origins of inputs in the enclosing query (only those input values
    are looked up, so maps the nested query reads by them are read by lookup too)."""
    inputs = list(atom.inputs)
    keys = [input_column(i) for i in range(len(inputs))]
    distinct = ", ".join(f"{q(cols[g])} AS {q(k)}" for g, k in zip(inputs, keys))
    out_keys = keys + ([VAL] if atom.kind != SUM else [])
    if not atom.query.monomials:
        empty = "CAST(0 AS BIGINT)" if EMPTY_VALUE[atom.kind] == 0 else "NULL"
        return (f"SELECT DISTINCT {distinct + ', ' if keys else ''}"
                f"{empty} AS {q(NESTED)} FROM {enclosing} AS e")
    if _range_restricted(atom):
        # Every monomial binds the inputs itself: aggregate per input, no enclosing rows
        # needed (the LEFT JOIN back uses SQL `=`, so NULL inputs get 0, as correlation does).
        parts = [lower_monomial(m, atom.query.group, source, sb, out_keys, NESTED,
                                origins=inherited) for m in atom.query.monomials]
        return _nested_value(atom, " UNION ALL ".join(f"({p})" for p in parts), keys, sb)
    window = _threshold_sums(atom, enclosing, cols, source, sb)
    if window is not None:
        return window
    pre = None
    if inputs:
        domain = f"SELECT DISTINCT {distinct} FROM {enclosing} AS e"
        pre = (f"{sb.sub(domain)} AS inp", {g: f"inp.{q(k)}" for g, k in zip(inputs, keys)})
    parts = [lower_monomial(m, atom.query.group, source, sb, out_keys, NESTED, pre,
                            origins=inherited) for m in atom.query.monomials]
    return _nested_value(atom, " UNION ALL ".join(f"({p})" for p in parts), keys, sb)


#: a multiset kind's value over the values with a positive count (`{v}`: the value column)
MULTISET_SQL = {MIN: "MIN({v})", MAX: "MAX({v})", COUNT_DISTINCT: "COUNT({v})",
                SUM_DISTINCT: "SUM({v})",
                # the view's collections (frontend/collects.py), in ascending order of the values;
                # `{n}`: a value's number of rows
                COLLECT_LIST: "array_sort(flatten(collect_list(CASE WHEN {n} > 0 THEN "
                              "array_repeat({v}, CAST({n} AS INT)) END)))",
                COLLECT_SET: "array_sort(collect_list({v}))"}


def _nested_value(atom: Nested, union: str, keys: Sequence[str], sb: SqlBuilder) -> str:
    """SELECT keys, value per input binding from the UNION ALL of the nested query's rows:
    a sum of their values, or (multiset kinds: rows keyed by inputs and value) the kind's
    aggregate over the values whose counts add up to a positive number."""
    key_list = ", ".join(q(k) for k in keys)
    select_keys = key_list + ", " if keys else ""
    group = f" GROUP BY {key_list}" if keys else ""
    if atom.kind == SUM:
        return f"SELECT {select_keys}SUM({q(NESTED)}) AS {q(NESTED)} FROM {sb.sub(union)} AS u{group}"
    return multiset_aggregate_sql([(atom.kind, NESTED)], union, keys, VAL, NESTED, sb.sub)


def multiset_aggregate_sql(outs: Sequence[Tuple[str, str]], rows: str, group: Sequence[str],
                           value: str, count: str, sub=lambda text: f"({text})") -> str:
    """SELECT group..., out...: for each (kind, out), the kind's aggregate (MIN / MAX / COUNT
    / SUM of the distinct values; NULL, or 0 for a count, when no value has a positive count)
    of multiset `rows`, which are keyed by group and value and counted by `count` (summed
    here: rows of a map plus rows of its delta)."""
    key_list = ", ".join(q(k) for k in group)
    select_keys = key_list + ", " if group else ""
    counted = (f"SELECT {select_keys}{q(value)}, SUM({q(count)}) AS __cnt FROM {sub(rows)} AS ms "
               f"GROUP BY {select_keys}{q(value)}")
    present = f"CASE WHEN __cnt > 0 THEN {q(value)} END"
    items = ", ".join(f"{MULTISET_SQL[kind].format(v=present, n='__cnt')} AS {q(out)}"
                      for kind, out in outs)
    return (f"SELECT {select_keys}{items} FROM {sub(counted)} AS mc"
            + (f" GROUP BY {key_list}" if group else ""))


_FLIPPED = {"gt": "lt", "gte": "lte", "lt": "gt", "lte": "gte"}
# For `key OP input`: the window's sort order, and whether an input row sorts before the
# rows of an equal key (so that they are left out of its running sum: strict comparisons).
_WINDOW = {"gt": ("DESC", True), "gte": ("DESC", False), "lt": ("ASC", True),
           "lte": ("ASC", False)}


def _threshold(mono: Monomial, g: str):
    """(the monomial without it, k, op) when the input g occurs in exactly one atom of the
    monomial, a condition `k OP g` (OP an inequality) on a variable k an atom binds."""
    from sqlglot import exp
    hits = [a for a in mono.atoms if g in a.free_vars()]
    if len(hits) != 1 or not isinstance(hits[0], Cond):
        return None
    node = hits[0].pred.ast
    while isinstance(node, exp.Paren):
        node = node.this
    op = {exp.GT: "gt", exp.GTE: "gte", exp.LT: "lt", exp.LTE: "lte"}.get(type(node))
    if op is None:
        return None
    left, right = node.this, node.expression
    while isinstance(left, exp.Paren):
        left = left.this
    while isinstance(right, exp.Paren):
        right = right.this
    if not (isinstance(left, exp.Column) and isinstance(right, exp.Column)):
        return None
    if right.name == g and left.name != g:
        k = left.name
    elif left.name == g and right.name != g:
        k, op = right.name, _FLIPPED[op]
    else:
        return None
    bound = set()
    for a in mono.atoms:
        if isinstance(a, (Rel, DeltaRel, MapRef)):
            bound |= set(a.vars)
    if k not in bound:
        return None
    return Monomial(mono.coef, tuple(a for a in mono.atoms if a is not hits[0])), k, op


def _threshold_sums(atom: Nested, enclosing: str, cols, source, sb):
    """A nested sum correlated with its one input only by `key OP input` (VWAP's "volume
    above this price"): running sums over the rows sorted by key, read at each input value
    of the enclosing rows, instead of joining every input with every row (quadratic). None
    when the nested query does not have that form."""
    if len(atom.inputs) != 1 or atom.null_safe or atom.kind != SUM:
        return None
    g = atom.inputs[0]
    parts = [_threshold(m, g) for m in atom.query.monomials]
    if not parts or any(p is None for p in parts):
        return None
    c, out = q(cols[g]), q(input_column(0))
    by_op: Dict[str, List[str]] = {}
    for mono, k, op in parts:
        by_op.setdefault(op, []).append(lower_monomial(mono, [k], source, sb, ["__k"], NESTED))
    sums = []
    domain = sb.sub(f"SELECT DISTINCT {c} AS __k FROM {enclosing} AS e WHERE {c} IS NOT NULL")
    for op, selects in by_op.items():
        order, inputs_first = _WINDOW[op]
        rows = " UNION ALL ".join(f"SELECT __k, {q(NESTED)} AS __val, 0 AS __inp FROM "
                                  f"{sb.sub(x)} AS r WHERE __k IS NOT NULL" for x in selects)
        tie = "DESC" if inputs_first else "ASC"
        both = sb.sub(f"{rows} UNION ALL SELECT __k, NULL, 1 FROM {domain} AS d")
        running = sb.sub(f"SELECT __k, __inp, SUM(__val) OVER (ORDER BY __k {order}, __inp {tie} "
                         f"ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS __run FROM "
                         f"{both} AS u")
        sums.append(f"SELECT __k AS {out}, __run AS {q(NESTED)} FROM {running} AS w "
                    "WHERE __inp = 1")
    union = " UNION ALL ".join(f"({x})" for x in sums)
    return (f"SELECT {out}, SUM({q(NESTED)}) AS {q(NESTED)} FROM {sb.sub(union)} AS t "
            f"GROUP BY {out}")


def lower_query(query: Query, source: AtomSource, sb: SqlBuilder, out_keys: Sequence[str],
                out_value: str, aggregate: bool = True) -> str:
    """SQL for the query's rows: out_keys + out_value. Aggregated, one row per key; or not:
    rows whose values add up per key (NULL values count as 0), left for a later, single
    aggregation (every extra GROUP BY is a shuffle)."""
    parts = [lower_monomial(m, query.group, source, sb, out_keys, out_value) for m in query.monomials]
    union = " UNION ALL ".join(f"({p})" for p in parts)
    if not aggregate:
        return union if len(parts) == 1 else f"SELECT * FROM {sb.sub(union)} AS u"
    keys = ", ".join(q(k) for k in out_keys)
    select_keys = f"{keys}, " if keys else ""
    group = f" GROUP BY {keys}" if keys else ""
    return (f"SELECT {select_keys}COALESCE(SUM({q(out_value)}), 0) AS {q(out_value)} "
            f"FROM {sb.sub(union)} AS u{group}")


def _number(c) -> str:
    from fractions import Fraction
    if isinstance(c, Fraction) and c.denominator != 1:
        return f"(CAST({c.numerator} AS DOUBLE) / {c.denominator})"
    return f"CAST({int(c)} AS BIGINT)"
