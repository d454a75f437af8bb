"""SQL front end: a view's SELECT (Spark dialect, parsed by sqlglot) to the calculus.

The result is a ViewSpec: the view state's group variables, one calculus query per state
column (the row count, and per aggregate its sum and non-NULL count), the multisets of MIN /
MAX / DISTINCT aggregates (frontend/multisets.py), and how the output columns are computed from
them (the types are in frontend/spec.py). Names are resolved against base tables (through a
TableResolver); types come later from Spark itself. WITH clauses are inlined first
(frontend/ctes.py).
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from ..calculus.ir import ONE, Add, Cond, Const, Groups, Lift, Mul, Query, Rel, Value, product
from ..calculus.normalize import fresh_var, normalize
from ..calculus.scalar import Scalar, conjuncts
from ..errors import UnsupportedSQL, ViewletError
from .checks import reject_unsupported, position_of
from . import setops
from .ctes import inline_ctes
from .collects import collect_aggregate, explicit_separators
from .filters import rewrite_aggregate_filters
from .grouping import grouping_call, grouping_sets, has_grouping_sets
from .multisets import ViewMultisets, multiset_aggregate
from .names import as_written, qualify_columns
from .aliases import inline_lateral_aliases
from .joins import (OUTER, VAR_QUALIFIER, Join, from_atoms, padded_sources, record_join,
                    star_columns)
from .lateral import check_grouped, correlation, is_lateral, lateral_subquery, not_null_guards
from .ordering import split_order, resolve as resolve_order
from .quantified import rewrite_quantified
from .suggest import did_you_mean
from .syntax import sqlglot_error
from .windows import split_windows, resolve as resolve_windows
from .select_subqueries import (SubqueryValues, has_in_subquery, is_subquery_node,
                                push_not, subquery_nodes)
from .spec import COUNT_COLUMN, AggregateSpec, OutputColumn, ViewSpec
from .nodes import has_subquery, outer_columns, outer_nodes
from .sources import Derived, TableInstance, safe_name
from .subqueries import SubqueryTranslator
from .tables import ResolvedOnce, TableInfo, TableResolver


class _Translator:
    """The translation of one query scope (the view's query, a subquery, a FROM subquery or a
    set operation's branch). Nested scopes share one variable namespace (the union-find
    `parent`, `var_columns`, `nullable`, ...) with the view's query.

    Used by the other front-end modules (each receives the translator as a parameter):
      names        column_var, find, fresh, fail, var_type, is_nullable, is_padded, null_of
      FROM items   nested_scope, read_from, add_source, add_derived, add_derived_instance,
                   output_items, expand_star, bind_columns, instances, joins, using
      atoms        unify, base_atoms, source_atoms, instance_vars, predicate_atoms, to_scalar
    """

    def __init__(self, sql: str, resolver: TableResolver, outer: "Optional[_Translator]" = None,
                 in_filters: bool = True):
        self.sql = sql
        self.resolver = resolver
        self.outer = outer                          # enclosing query of a subquery
        # an IN (subquery) conjunct of a WHERE is its match count > 0 (False: the three-valued
        # form with global counts, for views created before this rule)
        self.in_filters = outer.in_filters if outer is not None else in_filters
        self.instances: List = []                  # TableInstance | Derived, in FROM order
        self.grouping = None                        # GROUPING SETS / ROLLUP / CUBE (grouping.py)
        self.joins: List[Join] = []                 # the joins after the first FROM item
        self.using: Dict[str, str] = {}             # USING column (lower) -> its variable
        self._joins_unified = False
        if outer is None:
            self.relation_names: Dict[str, str] = {}    # table id -> relation name
            self.tables: Dict[str, TableInfo] = {}
            self.parent: Dict[str, str] = {}            # union-find over variables (equalities)
            self.var_columns: Dict[str, Tuple[str, str]] = {}
            self.nullable: Dict[str, bool] = {}
            self.group_keys: set = set()               # GROUP BY keys of FROM subqueries
            self.assigned: set = set()                 # variables bound by an assignment
            self.var_types: Dict[str, str] = {}         # known types of non-column variables
        else:                                       # one variable namespace for all scopes
            self.relation_names, self.tables = outer.relation_names, outer.tables
            self.parent, self.var_columns = outer.parent, outer.var_columns
            self.nullable = outer.nullable
            self.group_keys = outer.group_keys
            self.assigned = outer.assigned
            self.var_types = outer.var_types

    def nested_scope(self, reads: "Optional[_Translator]") -> "_Translator":
        """A translator for a query nested in this one, sharing its variables; names it does
        not resolve itself are looked up in `reads` (the scope it may correlate with), or
        nowhere (None)."""
        child = _Translator(self.sql, self.resolver, outer=self)
        child.outer = reads
        return child

    def read_from(self, select: exp.Select,
                  refuse_aggregate: Optional[Tuple[str, str]] = None) -> List[exp.Expression]:
        """Read a SELECT's FROM items and joins into this scope; returns its WHERE as
        conditions (after unification). `refuse_aggregate`: (construct, hint) reported for an
        aggregate in WHERE (None: not checked here). A join's ON conditions stay with it
        (frontend/joins.py): an outer join needs them apart from WHERE."""
        from_ = select.args.get("from_") or select.args.get("from")
        if from_ is not None:                   # without FROM: one row (no relation atoms)
            self.add_source(from_.this)
        for join in select.args.get("joins") or []:
            record_join(self, join)
        where = select.args.get("where")
        predicates = [where.this] if where is not None else []
        if refuse_aggregate is not None:
            for pred in predicates:
                agg = next((n for n in outer_nodes(pred) if isinstance(n, exp.AggFunc)), None)
                if agg is not None:
                    self.fail(refuse_aggregate[0], agg, refuse_aggregate[1])
        return self.unify(predicates)

    def bind_columns(self, nodes):
        """Make every column the nodes mention (outside their subqueries) a variable of its
        table's atom (before atoms are built: an atom lists the columns read)."""
        for node in nodes:
            for col in outer_columns(node):
                if not isinstance(col.this, exp.Star):
                    self.column_var(col)

    def outer_vars(self) -> set:
        """Variables of the enclosing queries' tables (a subquery's possible inputs)."""
        out = set()
        scope = self.outer
        while scope is not None:
            for inst in scope.instances:
                out |= {self.find(v) for v in inst.vars.values()}
            scope = scope.outer
        return out

    # -- names ---------------------------------------------------------------------------
    def fail(self, construct: str, node: Optional[exp.Expression] = None, detail: str = ""):
        raise UnsupportedSQL(construct, detail, position_of(node) if node is not None else None,
                             self.sql)

    def add_table(self, table: exp.Table):
        parts = [p.name for p in table.parts]
        info = self.resolver.resolve(parts)
        if info.id not in self.relation_names:
            base = safe_name(info.display.rstrip("/").split("/")[-1].split(".")[-1]) or "t"
            name = base
            while name in self.tables:
                name = f"{base}_{len(self.tables)}"
            self.relation_names[info.id] = name
            self.tables[name] = info
        alias = table.alias_or_name
        if any(i.alias.lower() == alias.lower() for i in self.instances):
            self.fail(f"duplicate table alias '{alias}'", table, "Give each table its own alias.")
        self.instances.append(TableInstance(alias, info, self.relation_names[info.id]))

    def column_var(self, col: exp.Column) -> str:
        """The variable of a column. The query's names arrive qualified as Spark resolves
        them (frontend/names.py); an unqualified one here is a USING column, or a name no
        FROM item has once (reported with the candidates), or one in a query the front
        end built itself."""
        name, qual = col.name, col.table
        if qual == VAR_QUALIFIER:
            return self.find(name)
        if not qual and name.lower() in self.using:
            return self.find(self.using[name.lower()])
        if qual:
            matches = [i for i in self.instances if i.alias.lower() == qual.lower()]
            if not matches and self.outer is not None:
                return self.outer.column_var(col)      # a correlated reference
            if not matches:
                raise ViewletError(f"Unknown table or alias '{qual}' in column '{col.sql()}'."
                                   + did_you_mean(qual, [i.alias for i in self._scopes()]),
                                   position_of(col))
            inst = matches[0]
            if inst.table.column(name) is None:
                raise ViewletError(f"Column '{name}' does not exist in {inst.table.display} "
                                   f"(alias '{inst.alias}')."
                                   + did_you_mean(name, [f"{inst.alias}.{c.name}"
                                                         for c in inst.table.columns]),
                                   position_of(col))
        else:
            matches = [i for i in self.instances if i.table.column(name) is not None]
            if not matches and self.outer is not None:
                return self.outer.column_var(col)
            if not matches:
                raise ViewletError(f"Column '{name}' does not exist in any table of the query."
                                   + did_you_mean(name, self._visible_columns()),
                                   position_of(col))
            if len(matches) > 1:
                raise ViewletError(f"Column '{name}' is ambiguous: it exists in "
                                   f"{', '.join(i.alias for i in matches)}. Qualify it.",
                                   position_of(col))
            inst = matches[0]
        info = inst.table.column(name)
        key = info.name.lower()
        if isinstance(inst, Derived):
            return self.find(inst.vars[key])
        if key not in inst.vars:
            var = f"{safe_name(inst.alias)}_{safe_name(info.name)}".lower()
            while var in self.var_columns:
                var = fresh_var(f"{safe_name(inst.alias)}_{safe_name(info.name)}".lower())
            inst.vars[key] = var
            self.parent[var] = var
            self.var_columns[var] = (inst.relation, info.name)
            self.nullable[var] = info.nullable
        return self.find(inst.vars[key])

    def _scopes(self):
        """Table instances visible here: this query's, then the enclosing queries'."""
        scope = self
        while scope is not None:
            yield from scope.instances
            scope = scope.outer

    def _visible_columns(self) -> List[str]:
        """Columns a reference could mean, qualified by their alias when the query reads
        several tables (candidates for a misspelled name)."""
        instances = list(self._scopes())
        several = len(instances) > 1
        return [f"{i.alias}.{c.name}" if several else c.name
                for i in instances for c in i.table.columns]

    def find(self, v: str) -> str:
        while self.parent[v] != v:
            self.parent[v] = self.parent[self.parent[v]]
            v = self.parent[v]
        return v

    def fresh(self, prefix: str) -> str:
        # One numbering with the compiler's renames (calculus.normalize.fresh_var): no clashes.
        return fresh_var(prefix)

    def to_scalar(self, node: exp.Expression) -> Scalar:
        """Replace column references by (unified) variables."""
        if has_subquery(node):
            raise ViewletError("internal: subquery reached to_scalar", position_of(node))

        def swap(n):
            if isinstance(n, exp.Column) and not isinstance(n.this, exp.Star):
                return exp.column(self.column_var(n), quoted=True)
            return n
        return Scalar(node.copy().transform(swap))

    def is_nullable(self, node: exp.Expression) -> bool:
        """Conservative: only arithmetic over non-NULL columns and literals is non-NULL
        (a column an outer join pads is nullable)."""
        safe = (exp.Column, exp.Literal, exp.Add, exp.Sub, exp.Mul, exp.Neg, exp.Paren,
                exp.Identifier, exp.Cast)
        for n in node.walk():
            if not isinstance(n, safe):
                return True
            if isinstance(n, exp.Column) and (self.nullable.get(self.column_var(n), True)
                                              or self.is_padded(self.column_var(n))):
                return True
            if isinstance(n, exp.Literal) and n.this is None:
                return True
        return False

    # -- the query -----------------------------------------------------------------------
    def translate(self) -> ViewSpec:
        try:
            tree = sqlglot.parse_one(self.sql, read="spark")
        except (ParseError, TokenError) as e:   # TokenError: an unterminated string or name
            raise sqlglot_error(self.sql, e) from None
        tree, _ = inline_ctes(tree, self.fail)
        tree, order = split_order(tree, self.fail)
        tree, windowed = split_windows(tree, self.fail)
        tree = rewrite_aggregate_filters(explicit_separators(tree), self.fail)
        spec = self._translate_select(setops.as_select(tree, self.fail))
        spec.window = resolve_windows(windowed, spec.outputs, self.fail)
        if spec.window is not None and order is not None:
            self.fail("ORDER BY ... LIMIT with window functions", order.order or tree,
                      "Filter on a rank instead: WHERE rk <= n over RANK() OVER (ORDER BY ...).")
        spec.top_n = resolve_order(order, [o.name for o in spec.outputs], self.fail)
        return spec

    def _translate_select(self, tree: exp.Expression) -> ViewSpec:
        if not isinstance(tree, exp.Select):
            self.fail(f"a top-level {tree.key.upper()} (only SELECT is supported)", tree)
        tree = qualify_columns(tree, self._table_columns)      # frontend/names.py
        tree = rewrite_quantified(tree, self.sql, self._table_columns)
        reject_unsupported(tree, self.sql)
        distinct = tree.args.get("distinct") is not None

        conds = self.read_from(tree, ("an aggregate in WHERE or ON",
                                      "Filter on aggregates with HAVING."))
        group_items = self._group_items(tree)
        selects = inline_lateral_aliases(self.expand_star(tree.expressions), self._has_column)
        # Every column the query mentions becomes a variable of its table's atom.
        having = tree.args.get("having")
        self.bind_columns(conds + group_items + selects
                          + ([having.this] if having is not None else []))
        has_aggs = any(isinstance(n, exp.AggFunc) for s in selects for n in outer_nodes(s)) \
            or tree.args.get("having") is not None
        if group_items or has_aggs:
            spec = self._aggregate_view(tree, selects, group_items, conds)
            keys_out = {next(iter(o.expr.vars)) for o in spec.outputs if o.expr.is_var()}
            if distinct and not set(spec.group) <= keys_out:
                # groups may repeat an output row: DISTINCT over the aggregate as a subquery
                return _Translator(self.sql, self.resolver,
                                   in_filters=self.in_filters)._translate_select(
                    setops.distinct_as_subquery(tree))
            return spec
        return self._spj_view(tree, selects, conds, distinct)

    def _has_column(self, name: str) -> bool:
        """Whether a FROM item of this query (or an enclosing one) has a column `name`."""
        scope = self
        while scope is not None:
            if name.lower() in scope.using or any(i.table.column(name) is not None
                                                  for i in scope.instances):
                return True
            scope = scope.outer
        return False

    def _table_columns(self, table: exp.Table) -> List[str]:
        return [c.name for c in self.resolver.resolve([p.name for p in table.parts]).columns]

    def add_source(self, node):
        if isinstance(node, exp.Table):
            self.add_table(node)
        elif isinstance(node, exp.Subquery) and isinstance(node.this, exp.Select):
            self.add_derived(node)
        elif isinstance(node, exp.Subquery) and isinstance(node.this, (exp.Intersect, exp.Except)):
            setops.add_set_operation(self, node)
        elif isinstance(node, exp.Subquery) and isinstance(node.this, (exp.Union, exp.Subquery)):
            setops.add_union(self, node)
        elif is_lateral(node):                         # frontend/lateral.py
            self.add_derived(lateral_subquery(node, self.fail), lateral=True)
        else:
            self.fail(f"a {node.key.upper()} in FROM", node,
                      "Only base tables and subqueries are supported in FROM so far.")

    def add_derived(self, node: exp.Subquery, lateral: bool = False):
        """A subquery in FROM without aggregation is inlined: its tables and conditions join
        the enclosing query, its output columns are its expressions' variables. `lateral`:
        it may read the columns of the FROM items before it (frontend/lateral.py)."""
        select = node.this
        alias = node.alias_or_name
        if not alias:
            self.fail("a subquery in FROM without an alias", node)
        aggregating = select.args.get("group") is not None or any(
            isinstance(n, exp.AggFunc) for s in select.expressions for n in outer_nodes(s)) \
            or select.args.get("having") is not None
        distinct = select.args.get("distinct") is not None
        if distinct and aggregating and not _distinct_is_noop(select):
            return self.add_derived(exp.Subquery(this=setops.distinct_as_subquery(select),
                                                  alias=node.args.get("alias")))
        reject_unsupported(select, self.sql)
        # not the FROM items beside it (unless LATERAL); inside a subquery, the enclosing
        # queries' columns (as Spark allows): such a subquery is correlated like a LATERAL one
        child = self.nested_scope(self if lateral else self.outer)
        correlated = lateral or self.outer is not None
        conds = child.read_from(select)
        child.bind_columns(conds)
        derived = Derived(alias, child, conds)
        derived.lateral = correlated
        if distinct and not aggregating:
            setops.distinct_derived(self, select, child, conds, derived)
            aggregating = True
        elif aggregating:
            self._aggregating_derived(node, select, child, conds, derived)
        if correlated and not aggregating:     # the FROM items' columns it reads
            derived.lateral_inputs = correlation(self, child.base_atoms(conds))
        if aggregating:
            self.add_derived_instance(derived, node)
            return
        for name, inner, var in child.output_items(select):
            if var is None:
                for col in outer_columns(inner):
                    child.column_var(col)
                var = self.fresh(f"{safe_name(alias)}_{safe_name(name)}".lower() or "d")
                self.parent[var] = var
                self.nullable[var] = True
                derived.lifts.append((var, inner))
                self.assigned.add(var)
            derived.add(name, var, self.nullable.get(var, True))
        self.add_derived_instance(derived, node)

    def output_items(self, select: exp.Select):
        """A FROM subquery's outputs, read in its own scope (this one): (name, expression,
        the variable of a plain column, or None for an expression the caller assigns)."""
        for item in self.expand_star(select.expressions):
            inner = item.this if isinstance(item, exp.Alias) else item
            if has_subquery(inner):
                self.fail("a subquery in the select list of a FROM subquery", inner)
            plain = isinstance(inner, exp.Column) and not isinstance(inner.this, exp.Star)
            yield item.alias_or_name, inner, (self.column_var(inner) if plain else None)

    def add_derived_instance(self, derived: Derived, node: exp.Subquery):
        """Add a derived table to FROM, its columns renamed by the alias's column list."""
        self._apply_column_aliases(derived, node)
        if any(i.alias.lower() == derived.alias.lower() for i in self.instances):
            self.fail(f"duplicate table alias '{derived.alias}'", node,
                      "Give each table its own alias.")
        self.instances.append(derived)

    def _apply_column_aliases(self, derived, node: exp.Subquery):
        """`(subquery) AS x (c1, c2, ...)`: the subquery's columns renamed in order."""
        alias = node.args.get("alias")
        names = [c.name for c in (alias.args.get("columns") or [])] if alias is not None else []
        if not names:
            return
        old = derived.table.columns
        if len(names) != len(old):
            self.fail(f"{len(names)} column aliases for the {len(old)} columns of subquery "
                      f"'{derived.alias}'", alias)
        pairs = [(n, derived.vars[c.name.lower()], c.nullable) for n, c in zip(names, old)]
        derived.table.columns, derived.vars = [], {}
        for name, var, nullable in pairs:
            derived.add(name, var, nullable)

    def _grouping_set_rows(self, rows: List, lifts: List[Lift], position: str,
                           group_map: Dict[str, str]) -> List:
        """The rows of a GROUP BY with grouping sets: per set, the rows with the grouping
        expressions outside the set assigned NULL (of the expression's type) and `position`
        the set's position (grouping.py)."""
        var_of = [group_map[self.to_scalar(e).key] for e in self.grouping.exprs]
        terms = []
        for k, chosen in enumerate(self.grouping.sets):
            chosen_vars = {var_of[i] for i in chosen}
            assign = []
            for lift in lifts:
                if lift.var in chosen_vars:
                    assign.append(lift)
                    continue
                typ = self.var_type(next(iter(lift.expr.vars))) \
                    if lift.expr.is_var() else None
                null = exp.cast(exp.Null(), exp.DataType.build(typ, dialect="spark")) if typ \
                    else exp.Case(ifs=[exp.If(this=exp.false(), true=lift.expr.ast)])
                assign.append(Lift(lift.var, Scalar(null)))
            terms.append(product(rows + assign + [Lift(position, Scalar(exp.Literal.number(k)))]))
        return [Add(tuple(terms))] if len(terms) > 1 else list(
            terms[0].factors if isinstance(terms[0], Mul) else terms)

    def _aggregating_derived(self, node, select, child, conds, derived):
        """An aggregating FROM subquery: its groups are a Groups atom over the GROUP BY
        variables (NULL keys are a group, as in SQL), each aggregate a nested aggregate
        per group; the enclosing query joins them like a table."""
        group = select.args.get("group")
        keys = []
        for g in (group.expressions if group is not None else []):
            if not isinstance(g, exp.Column):
                self.fail("a GROUP BY expression in a subquery in FROM", g,
                          "Group by plain columns there.")
            keys.append(child.column_var(g))
        having = select.args.get("having")
        child.bind_columns(select.expressions + ([having.this] if having is not None else []))
        base = child.base_atoms(conds)
        group_vars = tuple(dict.fromkeys(child.find(k) for k in keys))
        self.group_keys.update(group_vars)
        atoms = []
        corr = correlation(self, base) if getattr(derived, "lateral", False) else []
        derived.lateral_inputs = corr
        if group_vars:
            check_grouped(self, base, corr, node)
            atoms.append(Groups(normalize(Mul(tuple(base)) if len(base) > 1 else base[0],
                                          group=group_vars + tuple(corr))))
            atoms += not_null_guards(base, corr)
        # a global aggregate is one row per correlation value: SQL's `=` on its inputs
        sub = SubqueryTranslator(self, inputs=group_vars + tuple(corr),
                                 null_safe=bool(group_vars))
        for item in select.expressions:
            name = item.alias_or_name
            inner = item.this if isinstance(item, exp.Alias) else item
            if isinstance(inner, exp.Column) and child.column_var(inner) in group_vars:
                derived.add(name, child.column_var(inner), True)
                continue
            if not any(isinstance(n, exp.AggFunc) for n in inner.walk()):
                self.fail(f"column '{name}' of a subquery in FROM: neither a GROUP BY column "
                          "nor an aggregate", inner)
            value = sub.aggregates(child, base, inner)
            var = self.fresh(f"{safe_name(derived.alias)}_{safe_name(name)}".lower() or "d")
            self.parent[var] = var
            self.nullable[var] = True
            sub.atoms.append(Lift(var, Scalar(value)))
            self.assigned.add(var)
            derived.add(name, var, True)
        if select.args.get("having") is not None:
            sub.atoms.append(Cond(Scalar(self._group_filter(select.args["having"].this, child, base,
                                                            group_vars, sub))))
        derived.fixed_atoms = atoms + sub.atoms

    def _group_filter(self, node, child, base, group_vars, sub) -> exp.Expression:
        """A FROM subquery's HAVING over its groups' nested aggregates and keys."""
        if isinstance(node, exp.AggFunc):
            return sub.aggregates(child, base, node)
        if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
            var = child.column_var(node)
            if var not in group_vars:
                child.fail(f"column '{as_written(node)}' in HAVING: neither a GROUP BY column nor "
                           "inside an aggregate", node)
            return exp.column(var, quoted=True)
        if isinstance(node, (exp.Subquery, exp.Select, exp.Exists)):
            child.fail("a subquery in the HAVING of a subquery in FROM", node)
        new = node.copy()
        for k, v in node.args.items():
            if isinstance(v, exp.Expression):
                new.set(k, self._group_filter(v, child, base, group_vars, sub))
            elif isinstance(v, list):
                new.set(k, [self._group_filter(x, child, base, group_vars, sub)
                            if isinstance(x, exp.Expression) else x for x in v])
        return new

    def var_type(self, var: str) -> Optional[str]:
        """The Spark type of a variable when the front end knows it (a column's)."""
        var = self.find(var)
        if var in self.var_types:
            return self.var_types[var]
        if var in self.var_columns:
            rel, col = self.var_columns[var]
            info = self.tables[rel].column(col) if rel in self.tables else None
            return info.type.lower() if info is not None and info.type else None
        return None

    def _unify_joins(self):
        """The joins' ON conditions, unified like WHERE's (once, before anything reads a
        variable's name)."""
        if self._joins_unified:
            return
        self._joins_unified = True
        for j in self.joins:
            if j.on is None:
                continue
            agg = next((n for n in outer_nodes(j.on) if isinstance(n, exp.AggFunc)), None)
            if agg is not None:
                self.fail("an aggregate in ON", agg, "Filter on aggregates with HAVING.")
            if j.kind in OUTER and has_subquery(j.on):
                self.fail(f"a subquery in the ON condition of a {j.kind.upper()} JOIN",
                          next(n for n in j.on.walk() if isinstance(n, (exp.Subquery, exp.Select,
                                                                       exp.Exists))),
                          "Move it to WHERE or into a subquery in FROM.")
            j.conds = self.unify([j.on])

    def is_padded(self, var: str) -> bool:
        """Whether an outer join of this query (or an enclosing one) may pad the variable."""
        var = self.find(var)
        scope = self
        while scope is not None:
            if scope.joins and scope.instances:
                for src in padded_sources(scope.joins, scope.instances[0]):
                    if var in scope.instance_vars(src):
                        return True
                for k, j in enumerate(scope.joins):       # FULL ... USING columns
                    if any(scope.find(v) == var for v, _ in j.merged):
                        return any(later.kind in ("right", "full") for later in scope.joins[k + 1:])
            scope = scope.outer
        return False

    def instance_vars(self, inst) -> List[str]:
        """The variables a FROM item binds for its columns (an outer join pads these)."""
        return list(dict.fromkeys(self.find(v) for v in inst.vars.values()))

    def null_of(self, var: str) -> Scalar:
        """A NULL of the variable's column type (the padding of an outer join)."""
        typ = self.var_type(var)
        if typ is None:
            return Scalar(exp.Null())
        return Scalar(exp.cast(exp.Null(), exp.DataType.build(typ, dialect="spark")))

    def unify(self, predicates) -> List[exp.Expression]:
        """Equalities between two columns unify their variables; the rest stay conditions.
        Columns an outer join pads keep their own variables (the equality stays a condition):
        a padded NULL must never equal a column."""
        self._unify_joins()
        rest = []
        for pred in predicates:
            for c in conjuncts(pred):
                if isinstance(c, exp.EQ) and isinstance(c.left, exp.Column) \
                        and isinstance(c.right, exp.Column):
                    a, b = self.column_var(c.left), self.column_var(c.right)
                    if a != b and (a in self.group_keys or b in self.group_keys):
                        # a FROM subquery's NULL group exists, but `=` never joins NULL
                        rest.append(exp.Not(this=exp.Is(this=c.left.copy(), expression=exp.Null())))
                    if a != b and (self.is_padded(a) or self.is_padded(b)
                                   or a in self.assigned or b in self.assigned):
                        rest.append(c)          # see calculus.normalize._unifier
                        continue
                    if a != b and self.outer is not None:
                        outer = self.outer_vars()
                        if a in outer and b in outer:
                            rest.append(c)         # not this subquery's to decide
                            continue
                        if b in outer:
                            a, b = b, a            # outer variables keep their names
                    if a != b:
                        self.parent[b] = a
                        self.nullable[a] = self.nullable[a] and self.nullable[b]
                    continue
                rest.append(c)
        return rest

    def expand_star(self, selects):
        out = []
        for s in selects:
            if isinstance(s, exp.Star):
                out += star_columns(self)
            elif isinstance(s, exp.Column) and isinstance(s.this, exp.Star):
                out += star_columns(self, s.table)
            else:
                out.append(s)
        return out

    def _group_items(self, tree) -> List[exp.Expression]:
        group = tree.args.get("group")
        if group is None:
            return []
        aliases = {s.alias.lower(): s.this for s in tree.expressions if isinstance(s, exp.Alias)}

        def resolve(g):
            if isinstance(g, exp.Literal) and g.is_int:
                idx = int(g.this) - 1
                if not 0 <= idx < len(tree.expressions):
                    raise ViewletError(f"GROUP BY position {g.this} is not in the select list.",
                                       position_of(g))
                g = tree.expressions[idx]
                return g.this if isinstance(g, exp.Alias) else g
            if isinstance(g, exp.Column) and not g.table and g.name.lower() in aliases \
                    and not any(i.table.column(g.name) for i in self.instances):
                return aliases[g.name.lower()]
            return g
        if has_grouping_sets(group):
            self.grouping = grouping_sets(group, resolve, self.fail)
            return list(self.grouping.exprs)
        return [resolve(g) for g in group.expressions]

    def base_atoms(self, conds) -> List:
        """The query's FROM and WHERE as factors (see frontend/joins.py for outer joins); a
        SELECT without FROM has no FROM factors (one row)."""
        self._unify_joins()
        # Predicates first: a subquery's correlated references add columns to our tables.
        preds: List = []
        for c in conds:
            preds += self.predicate_atoms(c)
        join_atoms = []
        for j in self.joins:
            atoms: List = []
            for c in j.conds:
                atoms += self.predicate_atoms(c)
            join_atoms.append(atoms)
        return (from_atoms(self, join_atoms) if self.instances else []) + preds

    def source_atoms(self, inst) -> List:
        """The atoms of one FROM item."""
        if isinstance(inst, Derived) and inst.fixed_atoms is not None:
            return [_rename(a, {v: self.find(v) for v in a.free_vars() if v in self.parent})
                    for a in inst.fixed_atoms]
        if isinstance(inst, Derived):
            return inst.child.base_atoms(inst.conds) + \
                [Lift(self.find(v), inst.child.to_scalar(e)) for v, e in inst.lifts]
        cols = tuple(sorted(inst.vars))
        return [Rel(inst.relation, tuple(inst.table.column(c).name for c in cols),
                    tuple(self.find(inst.vars[c]) for c in cols))]

    def predicate_atoms(self, pred: exp.Expression) -> List:
        if not has_subquery(pred):
            return [Cond(self.to_scalar(pred))]
        return SubqueryTranslator(self).predicate(pred)

    def _aggregate_view(self, tree, selects, group_items, conds) -> ViewSpec:
        # Group keys: a plain column is its variable; any other expression is assigned.
        group_vars: List[str] = []
        lifts: List[Lift] = []
        group_map: Dict[str, str] = {}          # scalar key of the group expression -> var
        having = tree.args.get("having")
        values = SubqueryValues(self)
        # Subqueries first: their correlated columns join the tables' atoms.
        grouped_subqueries = set()             # GROUP BY items with subqueries: not keys
        for node in selects + group_items:
            for sub in subquery_nodes(node):
                if not _inside_aggregate(sub, node):
                    values.placeholder(sub)
                else:                     # a per-row value (_aggregate): translated first too
                    self._row_subquery(sub)
        for sub in subquery_nodes(having.this) if having is not None else []:
            values.placeholder(sub, value=False)
        for g in group_items:
            if has_subquery(g):
                if self.grouping is not None:
                    self.fail("a subquery in GROUP BY with GROUPING SETS / ROLLUP / CUBE", g)
                grouped_subqueries.add(g.sql(dialect="spark"))
                continue
            if any(isinstance(n, exp.AggFunc) for n in outer_nodes(g)):
                self.fail("an aggregate in GROUP BY", g)
            s = self.to_scalar(g)
            if s.key in group_map:
                continue
            if s.is_var() and self.grouping is None:
                var = next(iter(s.vars))
            else:
                var = self.fresh("g")
                lifts.append(Lift(var, s))
            group_map[s.key] = var
            if var not in group_vars:
                group_vars.append(var)

        rows = self.base_atoms(conds)
        base = rows + lifts
        position = None                         # the grouping set's position (grouping.py)
        if self.grouping is not None:
            position = self.fresh("gset")
            base = self._grouping_set_rows(rows, lifts, position, group_map)
            group_vars.append(position)
        state = _StateColumns(self, group_vars)
        self._rows = COUNT_COLUMN
        if values.values and not group_vars:
            # a global aggregate's one state row must exist over no rows too: it holds the
            # subqueries' values (the row count column carries a constant 1, `__rows` counts)
            state.columns[COUNT_COLUMN] = normalize(Add((product(base), ONE)), group=())
            self._rows = state.add("__rows", base, [])
        else:
            state.add(COUNT_COLUMN, base, [])
        multisets = ViewMultisets(self, group_vars, base)
        aggregates: List[AggregateSpec] = []
        agg_by_sql: Dict[str, AggregateSpec] = {}

        def replace(node: exp.Expression, select: bool = True) -> exp.Expression:
            """Output expression: aggregates -> placeholders, group expressions -> keys,
            subqueries -> placeholders (`select`: in the SELECT list, else in HAVING)."""
            if has_subquery(node) and node.sql(dialect="spark") in grouped_subqueries:
                return values.expression(node)
            if select and isinstance(node, exp.Not) and has_in_subquery(node) \
                    and not is_subquery_node(node):
                node = push_not(node)
            if is_subquery_node(node):
                value = values.placeholder(node, value=select)
                if select and isinstance(node, (exp.Subquery, exp.Select)) \
                        and values.outer_vars(value):
                    self.fail("a correlated scalar subquery in the SELECT list of an aggregate "
                              "query", node, "As in Spark: add it to GROUP BY (by position, e.g. "
                              "GROUP BY g, 2) or use it inside an aggregate.")
                return exp.column(value.placeholder, quoted=True)
            if isinstance(node, (exp.Grouping, exp.GroupingId)):
                if self.grouping is None:
                    self.fail(f"{node.key.upper()}() without GROUPING SETS / ROLLUP / CUBE", node)
                return grouping_call(node, self.grouping, position,
                                     lambda e: self.to_scalar(e).key, self.fail)
            if isinstance(node, exp.AggFunc):
                spec = self._aggregate(node, base, state, agg_by_sql, aggregates, multisets)
                return exp.column(spec.placeholder, quoted=True)
            if isinstance(node, (exp.Column, exp.Expression)) and not isinstance(
                    node, (exp.Literal, exp.Identifier, exp.Star)):
                try:
                    key = self.to_scalar(node).key
                except ViewletError:
                    key = None
                if key in group_map:
                    return exp.column(group_map[key], quoted=True)
            if isinstance(node, exp.Column):
                raise ViewletError(
                    f"Column '{as_written(node)}' must be in GROUP BY or inside an aggregate.",
                    position_of(node))
            new = node.copy()
            for k, v in list(new.args.items()):
                if isinstance(v, exp.Expression):
                    new.set(k, replace(node.args[k], select))
                elif isinstance(v, list):
                    new.set(k, [replace(x, select) if isinstance(x, exp.Expression) else x
                                for x in node.args[k]])
            return new

        outputs = []
        for s in selects:
            name = s.alias_or_name if isinstance(s, (exp.Alias, exp.Column)) else as_written(s)
            inner = s.this if isinstance(s, exp.Alias) else s
            outputs.append(OutputColumn(name, Scalar(replace(inner))))
        having_expr = None
        if having is not None:
            having_expr = Scalar(replace(having.this, select=False))
        outside = sorted(values.outer_vars() - set(group_vars))
        if outside:
            rel, col = self.var_columns.get(outside[0], ("", outside[0]))
            self.fail(f"a subquery correlated on column {col}, which is not a GROUP BY key",
                      None, "In an aggregate query a subquery may refer to GROUP BY keys only.")
        values.add_columns(state, base, group_vars, multisets)
        return ViewSpec(self.sql, dict(self.tables), tuple(group_vars), state.columns, aggregates,
                        outputs, having_expr, True, _from_sql(tree, group_items=group_items),
                        dict(self.var_columns), subqueries=values.values,
                        value_columns=values.columns, subquery_probe=_subquery_probe(tree, values),
                        multisets=multisets.by_name, value_multisets=values.multisets)

    def _aggregate(self, node, base, state, agg_by_sql, aggregates, multisets) -> AggregateSpec:
        key = node.sql(dialect="spark")
        if key in agg_by_sql:
            return agg_by_sql[key]
        if any(isinstance(n, exp.AggFunc) for n in outer_nodes(node) if n is not node):
            self.fail("an aggregate nested in another aggregate", node)
        if has_subquery(node):
            # a subquery in the argument is a value per row: nested aggregates bound next to
            # the rows of this aggregate's state columns, the argument reads their variables
            node, extra = self._row_subqueries(node)
            base = base + extra
            multisets = multisets.with_rows(extra)
        idx = len(aggregates)
        placeholder = f"__agg_{idx}"
        collected = collect_aggregate(node, self.fail)
        kept = multiset_aggregate(node, self.fail) if collected is None else None
        if collected is not None:
            how, arg = collected
            spec = AggregateSpec(how.kind, key, placeholder, None, None, multisets.add(arg),
                                 collect=how)
        elif kept is not None:
            kind, arg = kept
            spec = AggregateSpec(kind, key, placeholder, None, None, multisets.add(arg))
        elif node.find(exp.Distinct):
            self.fail(f"{node.key.upper()}(DISTINCT ...)", node)
        elif isinstance(node, exp.Count):
            arg = node.this
            if arg is None or isinstance(arg, exp.Star) or (isinstance(arg, exp.Literal) and arg.this is not None):
                spec = AggregateSpec("count_star", key, placeholder, None, self._rows)
            else:
                cnt = state.add(f"n{idx}", base, [Cond(self.to_scalar(exp.Not(this=exp.Is(
                    this=arg.copy(), expression=exp.Null()))))]) if self.is_nullable(arg) else self._rows
                spec = AggregateSpec("count", key, placeholder, None, cnt)
        elif isinstance(node, (exp.Sum, exp.Avg)):
            arg = node.this
            factors = _product_factors(arg)
            values = [Value(self.to_scalar(f)) for f in factors]
            not_null = [Cond(self.to_scalar(exp.Not(this=exp.Is(this=f.copy(), expression=exp.Null()))))
                        for f in factors if self.is_nullable(f)]
            if not not_null and _linear_terms(arg) is not None and len(_linear_terms(arg)) > 1:
                # Polynomial expansion ([J] rule 2): SUM(a - b) over non-NULL inputs is
                # SUM(a) - SUM(b), so each term's factors can go to the maps of their tables.
                values = [Add(tuple(Mul((Const(c),) + tuple(Value(self.to_scalar(f)) for f in fs))
                                    for c, fs in _linear_terms(arg)))]
            total = state.add(f"s{idx}", base, values)
            cnt = state.add(f"n{idx}", base, not_null) if not_null else self._rows
            spec = AggregateSpec("sum" if isinstance(node, exp.Sum) else "avg", key, placeholder,
                                 total, cnt)
        else:
            self.fail(f"the aggregate {node.sql(dialect='spark').split('(')[0].upper()}", node,
                      "Supported aggregates: SUM, COUNT, COUNT(*), AVG, MIN, MAX, "
                      "COUNT / SUM / AVG (DISTINCT ...), collect_list / array_agg, collect_set "
                      "and string_agg / listagg.")
        agg_by_sql[key] = spec
        aggregates.append(spec)
        return spec

    def _row_subqueries(self, node: exp.Expression):
        """An aggregate whose argument has subqueries, each replaced by a variable bound per
        row to its value (`x := value over nested aggregates`), and the atoms binding them."""
        node = node.copy()
        atoms: List = []
        for sub in list(subquery_nodes(node)):
            var, bound = self._row_subquery(sub)
            atoms += [a for a in bound if a not in atoms]
            sub.replace(exp.column(var, table=VAR_QUALIFIER))
        return node, atoms

    def _row_subquery(self, sub: exp.Expression):
        """(variable, atoms binding it) of a subquery whose value is taken per row, one per
        subquery text; translated before the query's tables become atoms, so that its
        correlated columns are variables of theirs."""
        cache = self.__dict__.setdefault("_row_values", {})
        key = sub.sql(dialect="spark")
        if key not in cache:
            translator = SubqueryTranslator(self)
            value = translator.value(sub)
            var = self.fresh("sqv")
            self.parent[var] = var
            self.nullable[var] = True
            self.assigned.add(var)
            cache[key] = (var, translator.atoms + [Lift(var, Scalar(value))])
        return cache[key]

    def _spj_view(self, tree, selects, conds, distinct: bool = False) -> ViewSpec:
        """A view without aggregates is a bag: state keys are the output values, the state
        counts each distinct output row, and the result holds that many copies (one with
        DISTINCT)."""
        group_vars: List[str] = []
        lifts = []
        outputs = []
        read_beside: List[str] = []
        values = SubqueryValues(self)
        for s in selects:
            inner = s.this if isinstance(s, exp.Alias) else s
            name = s.alias_or_name if isinstance(s, (exp.Alias, exp.Column)) else as_written(s)
            if has_subquery(inner):
                outputs.append(OutputColumn(name, Scalar(values.expression(inner))))
                # columns read beside the subquery (`r.b = (SELECT ...)`): hidden state keys
                read_beside += [self.column_var(c) for c in outer_columns(inner)
                                if not isinstance(c.this, exp.Star)]
                continue
            sc = self.to_scalar(inner)
            if sc.is_var():
                var = next(iter(sc.vars))
            else:
                var = self.fresh("o")
                lifts.append(Lift(var, sc))
            if var not in group_vars:
                group_vars.append(var)
            outputs.append(OutputColumn(name, Scalar.var(var)))
        # the subqueries' inputs are (hidden) keys: their values are functions of the key
        group_vars += [v for v in sorted(values.outer_vars()) if v not in group_vars]
        group_vars += [v for v in dict.fromkeys(read_beside) if v not in group_vars]
        state = _StateColumns(self, group_vars)
        base = self.base_atoms(conds) + lifts
        state.add(COUNT_COLUMN, base, [])
        multisets = ViewMultisets(self, group_vars, base)
        values.add_columns(state, base, group_vars, multisets)
        return ViewSpec(self.sql, dict(self.tables), tuple(group_vars), state.columns, [], outputs,
                        None, False, _from_sql(tree), dict(self.var_columns), distinct,
                        subqueries=values.values, value_columns=values.columns,
                        subquery_probe=_subquery_probe(tree, values),
                        multisets=multisets.by_name, value_multisets=values.multisets)


class _StateColumns:
    """View state columns, one calculus query each; equal queries share a column."""

    def __init__(self, tr: _Translator, group_vars: Sequence[str]):
        self.tr = tr
        self.group = tuple(group_vars)
        self.columns: Dict[str, Query] = {}

    def add(self, name: str, base: List, extra: List) -> str:
        atoms = base + extra
        q = normalize(product(atoms) if atoms else ONE, group=self.group)
        for existing, eq in self.columns.items():
            if eq == q:
                return existing
        self.columns[name] = q
        return name


def _distinct_is_noop(select: exp.Select) -> bool:
    """SELECT DISTINCT over groups whose keys are all output columns (or one global row)."""
    group = select.args.get("group")
    if group is None:
        return True
    items = {(e.this if isinstance(e, exp.Alias) else e).sql(dialect="spark").lower()
             for e in select.expressions}
    aliases = {e.alias.lower() for e in select.expressions if isinstance(e, exp.Alias)}
    for g in group.expressions:
        text = g.sql(dialect="spark").lower()
        position = isinstance(g, exp.Literal) and g.is_int
        if text not in items and text not in aliases and not position:
            return False
    return True


def _rename(expr, mapping):
    """rename_atom over sums and products of atoms too."""
    from ..calculus.normalize import rename_atom
    if isinstance(expr, Add):
        return Add(tuple(_rename(t, mapping) for t in expr.terms))
    if isinstance(expr, Mul):
        return Mul(tuple(_rename(f, mapping) for f in expr.factors))
    return rename_atom(expr, mapping)


def _inside_aggregate(node: exp.Expression, root: exp.Expression) -> bool:
    """Whether `node` (within `root`) is an aggregate function's argument."""
    node = node.parent
    while node is not None and node is not root.parent:
        if isinstance(node, exp.AggFunc):
            return True
        node = node.parent
    return False


def _linear_terms(node: exp.Expression):
    """node as a sum of signed products [(coefficient, [factors])], or None when it is not
    built from +, -, * and parentheses alone."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, (exp.Add, exp.Sub)):
        left, right = _linear_terms(node.left), _linear_terms(node.right)
        if left is None or right is None:
            return None
        sign = 1 if isinstance(node, exp.Add) else -1
        return left + [(sign * c, f) for c, f in right]
    if isinstance(node, exp.Neg):
        inner = _linear_terms(node.this)
        return None if inner is None else [(-c, f) for c, f in inner]
    if isinstance(node, exp.Mul):
        left, right = _linear_terms(node.left), _linear_terms(node.right)
        if left is None or right is None:
            return None
        return [(a * b, fa + fb) for a, fa in left for b, fb in right]
    return [(1, [node])]


def _product_factors(node: exp.Expression) -> List[exp.Expression]:
    """a * (b * c) -> [a, b, c], so each factor can be pushed into the map of its table."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Mul):
        return _product_factors(node.left) + _product_factors(node.right)
    return [node]


def _subquery_probe(tree: exp.Select, values: SubqueryValues) -> Optional[str]:
    """A query whose columns are the view's output subqueries, for Spark's types of them
    (without GROUP BY: a correlated one refers to GROUP BY keys, as it may per row)."""
    if not values.values:
        return None
    items = ", ".join(f"{v.sql} AS `{v.placeholder}`" for v in values.values)
    return f"SELECT {items} {_from_sql(tree, grouped=False)}"


def _from_sql(tree: exp.Select, grouped: bool = True, group_items=None) -> str:
    """FROM ... WHERE ... [GROUP BY ...] of the query; GROUP BY positions and aliases are
    written out (`group_items`), since the text gets another select list."""
    if (tree.args.get("from_") or tree.args.get("from")) is None:
        return ""                                # a SELECT without FROM: one row
    t = tree.copy()
    t.set("expressions", [exp.Literal.number(1)])
    t.set("having", None)
    t.set("distinct", None)
    t.set("hint", None)             # `SELECT /*+ ... */`: optimizer hints, no part of the rows
    if not grouped:
        t.set("group", None)
    elif group_items is not None and t.args.get("group") is not None:
        # a subquery item is a function of the other keys: the same groups without it
        keys = [g.copy() for g in group_items if not has_subquery(g)]
        if keys:
            t.args["group"].set("expressions", keys)
        else:
            t.set("group", None)
    text = t.sql(dialect="spark", comments=False)
    if not text.startswith("SELECT 1 "):
        raise UnsupportedSQL("this form of SELECT", "Write SELECT <columns> FROM ...",
                             position_of(tree), None)
    return text[len("SELECT 1 "):]


def translate(sql: str, resolver: TableResolver, in_filters: bool = True) -> ViewSpec:
    """`in_filters`: see _Translator (False for views created before that rule)."""
    return _Translator(sql, ResolvedOnce(resolver), in_filters=in_filters).translate()
