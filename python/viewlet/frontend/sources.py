"""A query's FROM items as the translator keeps them: base table instances and derived
tables (subqueries, set operations, LATERAL), each with the variables of its columns."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from sqlglot import exp

from ..errors import ViewletError
from .tables import ColumnInfo, TableInfo


class TableInstance:
    """One use of a base table in FROM, under its alias."""

    def __init__(self, alias: str, table: TableInfo, relation: str):
        self.alias, self.table, self.relation = alias, table, relation
        self.vars: Dict[str, str] = {}      # column (lower) -> variable


class DerivedColumns:
    """The output columns of a FROM subquery, looked up like a table's."""

    def __init__(self, alias: str):
        self.display = alias
        self.columns: List[ColumnInfo] = []

    def column(self, name: str):
        low = name.lower()
        return next((c for c in self.columns if c.name.lower() == low), None)


class Derived:
    """A FROM item computed by a query: `child` is the translator of its scope and `conds`
    its conditions (None for set operations, whose atoms are fixed)."""

    def __init__(self, alias: str, child, conds):
        self.alias, self.child, self.conds = alias, child, conds
        self.table = DerivedColumns(alias)
        self.relation = None
        self.vars: Dict[str, str] = {}
        self.lifts: List[Tuple[str, exp.Expression]] = []
        self.fixed_atoms: Optional[List] = None     # an aggregating subquery's atoms
        self.lateral = False                        # LATERAL: reads earlier FROM items
        self.lateral_inputs: List[str] = []         # the variables of those it reads

    def add(self, name: str, var: str, nullable: bool):
        if self.table.column(name) is not None:
            raise ViewletError(f"Column '{name}' appears twice in FROM subquery '{self.alias}'.")
        self.table.columns.append(ColumnInfo(name, "", nullable))
        self.vars[name.lower()] = var


def safe_name(text: str) -> str:
    """text reduced to letters, digits and underscores (a part of a variable's name)."""
    return "".join(c if c.isalnum() else "_" for c in text).strip("_")
