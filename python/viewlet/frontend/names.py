"""Column names resolved with sqlglot's scope analysis, before translation.

Spark resolves a column that names no table to the one FROM item of the nearest query that
has it: the query's own FROM items first (for a name in a join's ON, those joined so far
when the name is ambiguous among all of them), then, for a correlated reference, the
enclosing queries'. This pass finds that FROM item with sqlglot's scopes
(`optimizer.scope.traverse_scope`) and resolver (`optimizer.resolver.Resolver`, over a
schema of the query's tables) and writes its alias into the column, so the translator reads
qualified names.

Left as written, for the translator to decide (frontend/translator.py `column_var`):
  - USING columns of a join: one value for both sides (COALESCE for a FULL JOIN), not a
    column of either table;
  - output aliases (GROUP BY, HAVING, ORDER BY, a lateral alias in the select list): not
    columns of any FROM item;
  - unknown and ambiguous names: the translator reports them with the candidates.

Spark's names are case-insensitive: the resolution runs on a copy with normalized
identifiers, and the original query keeps the case the user wrote (output names, messages).
Not sqlglot's `qualify`: it also lower-cases output aliases, turns USING into ON conditions
(a chained FULL JOIN ... USING would lose the rows only its middle table has) and expands
`*`, each of which changes what Spark computes or how the view's columns are named.
"""
from __future__ import annotations

from typing import Callable, Dict, Iterator, List, Optional, Sequence

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers
from sqlglot.optimizer.resolver import Resolver
from sqlglot.optimizer.scope import Scope, traverse_scope
from sqlglot.schema import MappingSchema

from ..errors import ViewletError

#: the tables of the scratch copy are renamed to these (one schema level, any name parts)
_TABLE_PREFIX = "__viewlet_names_t"
#: meta flag of a column this pass qualified (copies of the node keep it)
_ADDED = "viewlet_qualified"


def qualify_columns(tree: exp.Expression,
                    columns_of: Callable[[exp.Table], Sequence[str]]) -> exp.Expression:
    """Write into every column of `tree` that names no table the alias of the FROM item it
    refers to, as Spark resolves it (in place; returns `tree`). `columns_of(table)`: the
    column names of a base table (raises when there is no such table: then nothing is
    qualified, and the translator reports the missing table in its order).

    >>> from sqlglot import parse_one
    >>> tables = {"t": ["a", "b"], "u": ["a", "c"]}
    >>> q = parse_one("SELECT b FROM t WHERE EXISTS (SELECT 1 FROM u WHERE c = b AND u.a = t.a)")
    >>> qualify_columns(q, lambda table: tables[table.name]).sql()
    'SELECT t.b FROM t WHERE EXISTS(SELECT 1 FROM u WHERE u.c = t.b AND u.a = t.a)'"""
    scratch = tree.copy()
    originals: Dict[int, exp.Column] = {
        id(copy): column
        for column, copy in zip(tree.find_all(exp.Column), scratch.find_all(exp.Column))}
    try:
        schema = _schema_of_tables(tree, scratch, columns_of)
        normalize_identifiers(scratch, dialect="spark")
        owners = dict(_owners(scratch, schema))
    except (ViewletError, SqlglotError, LookupError):
        return tree
    written = _aliases_as_written(tree)
    for copy_id, alias in owners.items():
        # quoted: an alias such as `café` or `a b` is a name Spark reads only in backquotes
        originals[copy_id].set("table", exp.to_identifier(written.get(alias, alias), quoted=True))
        originals[copy_id].meta[_ADDED] = True
    return tree


def as_written(node: exp.Expression) -> str:
    """The node's Spark SQL without the qualifiers this pass added: the name of an
    unaliased output expression, and the text of messages, are what the user wrote."""
    node = node.copy()
    for column in node.find_all(exp.Column):
        if column.meta.get(_ADDED):
            column.set("table", None)
    return node.sql(dialect="spark")


def _aliases_as_written(tree: exp.Expression) -> Dict[str, str]:
    """Normalized alias -> the alias as written, of the query's FROM items."""
    written = {}
    for node in tree.find_all(exp.Table, exp.Subquery, exp.Lateral):
        alias = node.alias_or_name if isinstance(node, exp.Table) else node.alias
        if alias:
            written.setdefault(alias.lower(), alias)
    return written


def _schema_of_tables(tree: exp.Expression, scratch: exp.Expression,
                      columns_of) -> MappingSchema:
    """A schema of the query's base tables, each renamed in `scratch` to a one-part name of
    its own (names of any number of parts, and paths, in one schema level); a table keeps
    the alias it is referred to by."""
    mapping: Dict[str, Dict[str, str]] = {}
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    for k, (table, copy) in enumerate(zip(tree.find_all(exp.Table), scratch.find_all(exp.Table))):
        if not isinstance(table.this, exp.Identifier):
            continue                              # a table function: not a base table
        if not table.db and table.name.lower() in ctes:
            continue                              # a WITH query: its scope has its columns
        name = f"{_TABLE_PREFIX}{k}"
        mapping[name] = {column: "INT" for column in columns_of(table)}   # types: unused
        if not copy.alias:
            copy.set("alias", exp.TableAlias(this=exp.to_identifier(table.name)))
        copy.set("this", exp.to_identifier(name))
        copy.set("db", None)
        copy.set("catalog", None)
    return MappingSchema(mapping, dialect="spark")


def _owners(scratch: exp.Expression, schema: MappingSchema) -> Iterator:
    """(id of a scratch column, alias of the FROM item it refers to) for each unqualified
    column the scopes resolve."""
    resolvers: Dict[int, Resolver] = {}

    def resolver_of(scope: Scope) -> Resolver:
        if id(scope) not in resolvers:
            resolvers[id(scope)] = Resolver(scope, schema)
        return resolvers[id(scope)]

    for scope in traverse_scope(scratch):
        using = _using_names(scope.expression)
        for column in _own_columns(scope):
            if column.table or isinstance(column.this, exp.Star) or column.name in using:
                continue
            alias = _owner(column, scope, resolver_of)
            if alias is not None:
                yield id(column), alias


def _owner(column: exp.Column, scope: Scope, resolver_of) -> Optional[str]:
    """The alias of the FROM item of the nearest scope that has the column; None when no
    scope has it or the nearest that does has it twice (ambiguous)."""
    at: Optional[Scope] = scope
    while at is not None:
        resolver = resolver_of(at)
        if column.name in resolver.all_columns:
            if at is not scope and column.name in _using_names(at.expression):
                return None                       # an enclosing query's USING column
            table = resolver.get_table(column)
            return table.name if table is not None else None
        if column.name in _output_aliases(at):
            return None                           # a lateral or GROUP BY alias of that query
        at = _enclosing(at)
    return None


def _enclosing(scope: Scope) -> Optional[Scope]:
    """The scope whose FROM items a name not found in `scope` may refer to: a subquery
    expression's and a LATERAL subquery's enclosing query; a FROM subquery (or a set
    operation's branch) sees only what the query holding it sees, not its sibling FROM
    items."""
    parent = scope.parent
    if parent is None:
        return None
    if scope.is_subquery or scope.is_udtf or _is_lateral(scope):
        return parent
    return _enclosing(parent)


def _is_lateral(scope: Scope) -> bool:
    node = scope.expression.parent
    while isinstance(node, (exp.Subquery, exp.Paren)):
        node = node.parent
    return isinstance(node, exp.Lateral)


def _own_columns(scope: Scope) -> List[exp.Column]:
    """The columns written in the scope's own query, not in a nested one's."""
    own = []
    for node in scope.expression.walk(prune=lambda n: n is not scope.expression
                                      and isinstance(n, (exp.Query, exp.Subquery))):
        if isinstance(node, exp.Column):
            own.append(node)
    return own


def _using_names(query: exp.Expression) -> set:
    names = set()
    for join in query.args.get("joins") or [] if isinstance(query, exp.Select) else []:
        names |= {u.name for u in join.args.get("using") or []}
    return names


def _output_aliases(scope: Scope) -> set:
    query = scope.expression
    if not isinstance(query, exp.Select):
        return set()
    return {e.alias for e in query.expressions if isinstance(e, exp.Alias)}


__all__ = ["qualify_columns", "as_written"]
