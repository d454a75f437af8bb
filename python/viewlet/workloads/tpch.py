"""TPC-H base tables as Delta tables, and a TPC-H update stream.

``generate(scale, out_dir)`` runs ``tpchgen-cli`` and writes the eight TPC-H
tables as Delta tables (change data feed on) under ``out_dir/<table>``; run
again, it reuses the tables it wrote there at the same scale.

``UpdateStream(tables, seed)`` produces batches of changes in the style of the
DBToaster / Hot Dog TPC-H streams: inserts into every dynamic relation in
TPC-H proportions with foreign keys preserved, deletes of the oldest orders
(with all their lineitems) that keep ``orders``/``lineitem`` near their
initial size, and a few in-place updates so that the change feed carries
``update_preimage``/``update_postimage`` rows.  ``nation`` and ``region``
never change.

Typical use::

    from viewlet.workloads import tpch
    paths = tpch.generate(1, "/data/tpch1")
    stream = tpch.UpdateStream(paths, seed=42)
    for _ in range(10):
        batch = stream.next_batch(10_000)
        batch.apply()
        print(batch.summary())

Column names and types follow the TPC-H spec as produced by tpchgen-cli:
keys are ``bigint`` (``l_linenumber``, ``p_size``, ``ps_availqty`` and
``o_shippriority`` are ``int``), money/quantities are ``decimal(15,2)``,
dates are ``date`` and text is ``string``.  All columns are written as
nullable (the TPC-H NOT NULL constraints are not declared in Delta, which
keeps the tables plain protocol (1, 4) tables any Delta reader accepts).
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ._batch import Batch
from ._util import (
    TextPool,
    concat_str,
    date32,
    days,
    decimal_from_units,
    int_array,
    pick,
    run_chains as _run_chains,
    scan,
    zero_pad,
)

__all__ = [
    "ALL",
    "DYNAMIC",
    "SCHEMAS",
    "CDF_CONFIGURATION",
    "Batch",
    "UpdateStream",
    "find_tpchgen",
    "generate",
    "table_paths",
]

ALL: tuple[str, ...] = (
    "region",
    "nation",
    "supplier",
    "customer",
    "part",
    "partsupp",
    "orders",
    "lineitem",
)
#: Tables the update stream changes (nation and region are static).
DYNAMIC: tuple[str, ...] = ("customer", "supplier", "part", "partsupp", "orders", "lineitem")

CDF_CONFIGURATION = {"delta.enableChangeDataFeed": "true"}

#: Default target size of the data files ``generate`` writes.  Small files
#: keep the stream's deletes and updates cheap (delta-rs rewrites every
#: file that holds a deleted/updated row, and there are no deletion
#: vectors); 2 MiB gives ~200 lineitem files of ~32k rows at SF1, and a
#: 10k-tuple batch then applies in ~0.3 s (8 MiB: ~1 s; 1 MiB: ~0.25 s).
DEFAULT_TARGET_FILE_SIZE = 2 * 1024 * 1024

_DEC = pa.decimal128(15, 2)
_S = pa.string()
_I64 = pa.int64()
_I32 = pa.int32()
_D = pa.date32()


def _schema(*cols: tuple[str, pa.DataType]) -> pa.Schema:
    return pa.schema([pa.field(n, t, nullable=True) for n, t in cols])


SCHEMAS: dict[str, pa.Schema] = {
    "region": _schema(("r_regionkey", _I64), ("r_name", _S), ("r_comment", _S)),
    "nation": _schema(("n_nationkey", _I64), ("n_name", _S), ("n_regionkey", _I64), ("n_comment", _S)),
    "supplier": _schema(
        ("s_suppkey", _I64), ("s_name", _S), ("s_address", _S), ("s_nationkey", _I64),
        ("s_phone", _S), ("s_acctbal", _DEC), ("s_comment", _S),
    ),
    "customer": _schema(
        ("c_custkey", _I64), ("c_name", _S), ("c_address", _S), ("c_nationkey", _I64),
        ("c_phone", _S), ("c_acctbal", _DEC), ("c_mktsegment", _S), ("c_comment", _S),
    ),
    "part": _schema(
        ("p_partkey", _I64), ("p_name", _S), ("p_mfgr", _S), ("p_brand", _S), ("p_type", _S),
        ("p_size", _I32), ("p_container", _S), ("p_retailprice", _DEC), ("p_comment", _S),
    ),
    "partsupp": _schema(
        ("ps_partkey", _I64), ("ps_suppkey", _I64), ("ps_availqty", _I32),
        ("ps_supplycost", _DEC), ("ps_comment", _S),
    ),
    "orders": _schema(
        ("o_orderkey", _I64), ("o_custkey", _I64), ("o_orderstatus", _S), ("o_totalprice", _DEC),
        ("o_orderdate", _D), ("o_orderpriority", _S), ("o_clerk", _S), ("o_shippriority", _I32),
        ("o_comment", _S),
    ),
    "lineitem": _schema(
        ("l_orderkey", _I64), ("l_partkey", _I64), ("l_suppkey", _I64), ("l_linenumber", _I32),
        ("l_quantity", _DEC), ("l_extendedprice", _DEC), ("l_discount", _DEC), ("l_tax", _DEC),
        ("l_returnflag", _S), ("l_linestatus", _S), ("l_shipdate", _D), ("l_commitdate", _D),
        ("l_receiptdate", _D), ("l_shipinstruct", _S), ("l_shipmode", _S), ("l_comment", _S),
    ),
}


# --------------------------------------------------------------------------
# Base data
# --------------------------------------------------------------------------


def find_tpchgen() -> str:
    """Path of the ``tpchgen-cli`` binary: next to ``sys.executable`` first
    (the active virtualenv's bin/), then on ``PATH``."""
    exe = "tpchgen-cli.exe" if os.name == "nt" else "tpchgen-cli"
    candidates = [os.path.join(os.path.dirname(sys.executable), exe)]
    found = shutil.which("tpchgen-cli")
    if found:
        candidates.append(found)
    for c in candidates:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    raise FileNotFoundError(
        "tpchgen-cli not found next to the Python interpreter or on PATH; "
        "install it with `pip install tpchgen-cli` (or `pip install viewlet[demo]`)"
    )


def table_paths(out_dir: str, tables: Iterable[str] = ALL) -> dict[str, str]:
    """``{table: out_dir/table}`` for tables already generated in ``out_dir``."""
    return {t: os.path.join(os.path.abspath(out_dir), t) for t in _check_tables(tables)}


def _check_tables(tables: Iterable[str]) -> list[str]:
    if isinstance(tables, str):
        tables = [tables]
    tables = list(tables)
    unknown = [t for t in tables if t not in SCHEMAS]
    if unknown:
        raise ValueError(f"unknown TPC-H tables {unknown}; expected some of {list(ALL)}")
    return [t for t in ALL if t in tables]  # canonical order, no duplicates


#: the Delta description ``generate`` gives each table: what it reuses when run again (a
#: table's own metadata, so it travels with a copy and no other table carries it)
_DESCRIPTION = "TPC-H {table} at scale {scale}, written by viewlet.workloads.tpch.generate"
_DESCRIBED = re.compile(r"TPC-H (\w+) at scale (\S+), written by viewlet\.workloads\.tpch\.generate")


def _generated(path: str) -> tuple[str, float] | None:
    """(table, scale) ``generate`` wrote the Delta table at ``path`` as; None for a table it
    did not write (or no Delta table)."""
    from deltalake import DeltaTable

    if not os.path.isdir(os.path.join(path, "_delta_log")):
        return None
    try:
        description = DeltaTable(path).metadata().description or ""
    except Exception:  # an unreadable log: not a table generate() wrote
        return None
    m = _DESCRIBED.fullmatch(description)
    if m is None:
        return None
    try:
        return m.group(1), float(m.group(2))
    except ValueError:
        return None


def _check_existing(paths: Mapping[str, str], scale: float, overwrite: bool) -> list[str]:
    """The tables of ``paths`` already generated at ``scale`` (reused); refuses any other
    existing path unless ``overwrite`` (then only a Delta table, which is replaced)."""
    reused = []
    for t, p in paths.items():
        if not os.path.exists(p):
            continue
        if overwrite:
            if not os.path.isdir(os.path.join(p, "_delta_log")):
                raise FileExistsError(
                    f"{p} exists and is not a Delta table; not removing it: remove it "
                    "yourself or generate into another folder"
                )
            continue
        found = _generated(p)
        if found == (t, float(scale)):
            reused.append(t)
            continue
        if found is not None:
            holds = f"TPC-H {found[0]} at scale {found[1]:g}"
        elif os.path.isdir(os.path.join(p, "_delta_log")):
            holds = "a Delta table generate() did not write"
        else:
            holds = "something that is not a Delta table"
        raise FileExistsError(
            f"{p} holds {holds}, not TPC-H {t} at scale {float(scale):g}: pass "
            "overwrite=True to replace it (a Delta table only), or generate into another folder"
        )
    return reused


def _arrow_schema_for_delta(schema: pa.Schema) -> pa.Schema:
    # string_view / large_string -> string, drop Parquet field ids, nullable.
    fields = []
    for f in schema:
        t = f.type
        if t in (pa.string_view(), pa.large_string()):
            t = pa.string()
        fields.append(pa.field(f.name, t, nullable=True))
    return pa.schema(fields)


def generate(
    scale: float,
    out_dir: str,
    tables: Iterable[str] = ALL,
    *,
    overwrite: bool = False,
    target_file_size: int | None = DEFAULT_TARGET_FILE_SIZE,
    threads: int | None = None,
) -> dict[str, str]:
    """Generate TPC-H at ``scale`` and write each table as a Delta table.

    Runs ``tpchgen-cli parquet`` into a temporary directory inside
    ``out_dir`` (removed afterwards), then writes ``out_dir/<table>`` as a
    Delta table with ``delta.enableChangeDataFeed=true`` (written aside and
    moved into place, so an interrupted run leaves no partial table).
    Returns ``{table: absolute path}`` in TPC-H order.

    ``overwrite=False`` reuses an existing ``out_dir/<table>`` that this
    function wrote at the same ``scale`` (its Delta description says so;
    changes applied to it since, such as an update stream's, are kept) and
    refuses any other existing path; ``overwrite=True`` replaces it (only if
    it is a Delta table directory).  ``target_file_size`` (bytes) is passed to delta-rs; see
    :data:`DEFAULT_TARGET_FILE_SIZE`.  ``threads`` is tpchgen-cli's ``-n``.
    """
    from deltalake import write_deltalake

    names = _check_tables(tables)
    if scale <= 0:
        raise ValueError("scale must be positive")
    out_dir = os.path.abspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    paths = table_paths(out_dir, names)
    reused = _check_existing(paths, scale, overwrite)
    names = [t for t in names if t not in reused]
    if not names:
        return paths

    binary = find_tpchgen()
    tmp = tempfile.mkdtemp(prefix=".tpchgen-", dir=out_dir)
    try:
        cmd = [
            binary, "parquet",
            "--scale-factor", repr(float(scale)),
            "--output-dir", tmp,
            "--tables", ",".join(names),
            "--no-progress", "--quiet",
        ]
        if threads:
            cmd += ["--num-threads", str(int(threads))]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(
                f"tpchgen-cli failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr.strip()}"
            )
        def load(t: str) -> None:
            src = os.path.join(tmp, f"{t}.parquet")
            if not os.path.exists(src):
                raise RuntimeError(f"tpchgen-cli produced no {src}")
            pf = pq.ParquetFile(src)
            schema = _arrow_schema_for_delta(pf.schema_arrow)
            expected = SCHEMAS[t]
            if schema.names != expected.names:
                raise RuntimeError(f"unexpected columns from tpchgen-cli for {t}: {schema.names}")
            schema = expected  # also normalises int widths should tpchgen change them
            reader = pa.RecordBatchReader.from_batches(
                schema, (b.cast(schema) for b in pf.iter_batches(batch_size=128 * 1024))
            )
            dest, aside = paths[t], os.path.join(tmp, f"{t}.delta")
            write_deltalake(
                aside,
                reader,
                mode="error",
                description=_DESCRIPTION.format(table=t, scale=repr(float(scale))),
                configuration=CDF_CONFIGURATION,
                target_file_size=target_file_size,
            )
            pf.close()
            os.remove(src)
            if os.path.exists(dest):
                shutil.rmtree(dest)
            os.rename(aside, dest)  # Delta logs hold relative paths: the table moves whole

        for t in names:  # sequentially: delta-rs already uses every core when writing
            load(t)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return paths


# --------------------------------------------------------------------------
# Domains (TPC-H spec, clause 4.2.2.13 and 4.2.3)
# --------------------------------------------------------------------------

_COLORS = (
    "almond antique aquamarine azure beige bisque black blanched blue blush brown burlywood "
    "burnished chartreuse chiffon chocolate coral cornflower cornsilk cream cyan dark deep dim "
    "dodger drab firebrick floral forest frosted gainsboro ghost goldenrod green grey honeydew "
    "hot indian ivory khaki lace lavender lawn lemon light lime linen magenta maroon medium "
    "metallic midnight mint misty moccasin navajo navy olive orange orchid pale papaya peach "
    "peru pink plum powder puff purple red rose rosy royal saddle salmon sandy seashell sienna "
    "sky slate smoke snow spring steel tan thistle tomato turquoise violet wheat white yellow"
).split()
_TYPE_S1 = ["STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"]
_TYPE_S2 = ["ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"]
_TYPE_S3 = ["TIN", "NICKEL", "BRASS", "STEEL", "COPPER"]
_CONTAINER_S1 = ["SM", "LG", "MED", "JUMBO", "WRAP"]
_CONTAINER_S2 = ["CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"]
SEGMENTS = ["AUTOMOBILE", "BUILDING", "FURNITURE", "MACHINERY", "HOUSEHOLD"]
PRIORITIES = ["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"]
SHIP_INSTRUCTIONS = ["DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"]
SHIP_MODES = ["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"]

_NOUNS = (
    "foxes ideas theodolites pinto beans instructions dependencies excuses platelets asymptotes "
    "courts dolphins multipliers sauternes warthogs frets dinos attainments somas Tiresias "
    "patterns forges braids hockey players frays warhorses dugouts notornis epitaphs pearls "
    "tithes waters orbits gifts sheaves depths sentiments decoys realms pains grouches escapades "
    "requests accounts deposits packages"
).split()
_VERBS = (
    "sleep wake are cajole haggle nag use boost affix detect integrate maintain nod was lose "
    "sublate solve thrash promise engage hinder print x-ray breach eat grow impress mold poach "
    "serve run dazzle snooze doze unwind kindle play hang believe doubt"
).split()
_ADJECTIVES = (
    "special pending unusual express furious sly careful blithe quick fluffy slow quiet ruthless "
    "thin close dogged daring brave stealthy permanent enticing idle busy regular final ironic "
    "even bold silent"
).split()
_ADVERBS = (
    "sometimes always never furiously slyly carefully blithely quickly fluffily slowly quietly "
    "ruthlessly thinly closely doggedly daringly bravely stealthily permanently enticingly idly "
    "busily regularly finally ironically evenly boldly silently"
).split()
_PREPOSITIONS = (
    "about above across after against along among around at atop before behind beneath beside "
    "besides between beyond by despite during except for from inside into near of on outside "
    "over past since through throughout to toward under until up upon without with within"
).split()

STARTDATE = _dt.date(1992, 1, 1)
ENDDATE = _dt.date(1998, 12, 31)
CURRENTDATE = _dt.date(1995, 6, 17)
_START = days(STARTDATE)
_LAST_ORDERDATE = days(ENDDATE) - 151
_CURRENT = days(CURRENTDATE)

# Cardinalities at SF1: the stream inserts into each relation in these proportions.
_SF1_ROWS = {
    "customer": 150_000,
    "supplier": 10_000,
    "part": 200_000,
    "partsupp": 800_000,
    "orders": 1_500_000,
    "lineitem": 6_001_215,
}
_SF1_TOTAL = sum(_SF1_ROWS.values())
_P_CUSTOMER = _SF1_ROWS["customer"] / _SF1_TOTAL
_P_SUPPLIER = _SF1_ROWS["supplier"] / _SF1_TOTAL
#: a new part always comes with 4 partsupp rows: 5 tuples per "part group"
_P_PART_GROUP = (_SF1_ROWS["part"] + _SF1_ROWS["partsupp"]) / _SF1_TOTAL / 5
_SUPPLIERS_PER_PART = 4
#: share of the update budget spent on lineitem (the rest updates orders)
_LINEITEM_UPDATE_SHARE = 0.8


def retail_price_cents(partkey: np.ndarray) -> np.ndarray:
    """TPC-H P_RETAILPRICE (in cents) as a function of the part key."""
    p = np.asarray(partkey, dtype=np.int64)
    return 90000 + (p // 10) % 20001 + 100 * (p % 1000)


# --------------------------------------------------------------------------
# Update stream
# --------------------------------------------------------------------------


@dataclass
class _InsertPlan:
    customers: int = 0
    suppliers: int = 0
    parts: int = 0
    lines: list[np.ndarray] = field(default_factory=list)  # per new order: line count

    @property
    def tuples(self) -> int:
        return (
            self.customers
            + self.suppliers
            + self.parts * (1 + _SUPPLIERS_PER_PART)
            + sum(int(l.size + l.sum()) for l in self.lines)
        )


class UpdateStream:
    """Deterministic TPC-H change stream over Delta tables made by :func:`generate`.

    ``tables`` maps table names to Delta table paths and must contain the
    six dynamic tables (``customer, supplier, part, partsupp, orders,
    lineitem``); ``nation`` is read for its keys if present.  The constructor
    reads only key columns to initialise its in-memory state (next keys,
    live orders with their line counts, partsupp pairs, orderable
    customers); afterwards the stream assumes it is the only writer of
    these tables.

    Each :meth:`next_batch` of ``size`` tuples consists of

    * ``round(size * update_fraction)`` in-place updates: 80% lineitem rows
      (new ``l_quantity`` 1..50 and ``l_discount`` 0.00..0.10,
      ``l_extendedprice`` rescaled), 20% orders (new ``o_orderpriority``).
      Targets are a contiguous run of live orders taken among the newest
      ``update_window`` live orders (so an update touches one or two data
      files);
    * of the rest, a share ``insert_fraction`` of inserts, spread over the
      dynamic relations in TPC-H proportions: new orders (keys above the
      current maximum, 1..7 lineitems each, customer with
      ``c_custkey % 3 != 0`` as in TPC-H, lineitem (part, supplier) pairs
      drawn from partsupp), and occasionally new customers, suppliers and
      parts (each with 4 partsupp rows referencing existing suppliers);
    * and deletes: the oldest live orders together with all their
      lineitems, but never so many that fewer than ``min_live_orders``
      (default: the initial number of orders) remain.  Unused delete budget
      becomes inserts, so a batch always changes exactly ``size`` rows and
      orders/lineitem hover around their initial size.

    ``insert_fraction=1`` gives an insert-only stream.  Batches must be
    applied in the order they were generated (the generator's state moves
    on when a batch is generated).  Everything is a function of ``seed``
    and the initial table contents.
    """

    def __init__(
        self,
        tables: Mapping[str, str],
        seed: int = 0,
        *,
        insert_fraction: float = 0.5,
        update_fraction: float = 0.05,
        min_live_orders: int | None = None,
        update_window: int | None = None,
        storage_options: dict[str, str] | None = None,
    ):
        from deltalake import DeltaTable

        missing = [t for t in DYNAMIC if t not in tables]
        if missing:
            raise ValueError(f"UpdateStream needs tables {missing}")
        if not 0.0 <= insert_fraction <= 1.0:
            raise ValueError("insert_fraction must be within [0, 1]")
        if not 0.0 <= update_fraction <= 1.0:
            raise ValueError("update_fraction must be within [0, 1]")
        self.paths = {t: str(tables[t]) for t in DYNAMIC}
        self.seed = seed
        self.insert_fraction = float(insert_fraction)
        self.update_fraction = float(update_fraction)
        self._storage_options = storage_options
        self._dt = {t: DeltaTable(p, storage_options=storage_options) for t, p in self.paths.items()}

        def col(table: str, name: str) -> np.ndarray:
            arr = scan(self._dt[table], [name]).column(name)
            return arr.to_numpy().astype(np.int64, copy=False)

        cust = np.sort(col("customer", "c_custkey"))
        supp = np.sort(col("supplier", "s_suppkey"))
        part_max = int(pc.max(scan(self._dt["part"], ["p_partkey"]).column(0)).as_py() or 0)
        ps = scan(self._dt["partsupp"], ["ps_partkey", "ps_suppkey"])
        ps_part = ps.column(0).to_numpy().astype(np.int64)
        ps_supp = ps.column(1).to_numpy().astype(np.int64)
        order = np.lexsort((ps_supp, ps_part))
        okeys = np.sort(col("orders", "o_orderkey"))
        lkeys = scan(self._dt["lineitem"], ["l_orderkey"]).column(0)
        vc = pc.value_counts(lkeys.combine_chunks() if lkeys.num_chunks != 1 else lkeys.chunk(0))
        lk = vc.field("values").to_numpy().astype(np.int64)
        ln = vc.field("counts").to_numpy()
        lines = np.zeros(len(okeys), dtype=np.int32)
        if len(okeys) and len(lk):
            pos = np.clip(np.searchsorted(okeys, lk), 0, len(okeys) - 1)
            hit = okeys[pos] == lk
            lines[pos[hit]] = ln[hit]
        if "nation" in tables:
            nat = DeltaTable(str(tables["nation"]), storage_options=storage_options)
            self._nations = np.sort(scan(nat, ["n_nationkey"]).column(0).to_numpy()).astype(np.int64)
        else:
            self._nations = np.arange(25, dtype=np.int64)
        if len(self._nations) == 0:
            self._nations = np.arange(25, dtype=np.int64)
        if len(supp) == 0 or len(ps_part) == 0:
            raise ValueError("supplier and partsupp must not be empty")

        self._orderable = cust[cust % 3 != 0] if np.any(cust % 3 != 0) else cust
        self._supp_keys = supp
        self._ps_part = ps_part[order]
        self._ps_supp = ps_supp[order]
        self._live_keys = okeys
        self._live_lines = lines
        self._next = {
            "customer": int(cust.max()) + 1 if len(cust) else 1,
            "supplier": int(supp.max()) + 1,
            "part": part_max + 1,
            "orders": int(max(okeys.max() if len(okeys) else 0, lk.max() if len(lk) else 0)) + 1,
        }
        self.initial_orders = len(okeys)
        self.initial_lineitems = int(lines.sum())
        self.min_live_orders = self.initial_orders if min_live_orders is None else int(min_live_orders)
        self.update_window = (
            max(1, self.min_live_orders // 20) if update_window is None else max(1, int(update_window))
        )
        scale = max(len(okeys) / _SF1_ROWS["orders"], 1e-6)
        self._clerks = max(1, int(round(scale * 1000)))

        self._rng = np.random.default_rng(seed)
        text_rng = np.random.default_rng([seed, 1])
        self._text = TextPool.from_words(
            text_rng, [_NOUNS, _VERBS, _ADJECTIVES, _ADVERBS, _PREPOSITIONS], size=1 << 18
        )
        self._alnum = TextPool.from_alphabet(
            text_rng, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789,. ", size=1 << 16
        )
        self._generated = 0
        self._applied = 0

    # -- state ---------------------------------------------------------------

    @property
    def live_orders(self) -> int:
        """Orders live once every generated batch is applied."""
        return len(self._live_keys)

    @property
    def live_lineitems(self) -> int:
        return int(self._live_lines.sum())

    # -- generation ----------------------------------------------------------

    def _plan_inserts(self, budget: int, plan: _InsertPlan | None = None) -> _InsertPlan:
        plan = plan or _InsertPlan()
        if budget <= 0:
            return plan
        rng = self._rng
        n_p = min(int(rng.binomial(budget, _P_PART_GROUP)), budget // (1 + _SUPPLIERS_PER_PART))
        rest = budget - n_p * (1 + _SUPPLIERS_PER_PART)
        n_c = min(int(rng.binomial(budget, _P_CUSTOMER)), rest)
        rest -= n_c
        n_s = min(int(rng.binomial(budget, _P_SUPPLIER)), rest)
        rest -= n_s
        if rest > 0:
            lines = rng.integers(1, 8, size=rest // 2 + 1).astype(np.int32)
            cost = np.cumsum(lines.astype(np.int64) + 1)
            k = int(np.searchsorted(cost, rest, side="right"))
            lines = lines[:k]
            left = rest - (int(cost[k - 1]) if k else 0)
            if left >= 2:
                lines = np.append(lines, np.int32(left - 1))  # left - 1 <= 6: a short order
            elif left == 1:
                n_c += 1  # a single tuple left over: one more customer
            plan.lines.append(lines)
        plan.customers += n_c
        plan.suppliers += n_s
        plan.parts += n_p
        return plan

    def next_batch(self, size: int) -> Batch:
        """Generate the next batch of ``size`` changed tuples (not yet applied)."""
        size = int(size)
        if size < 0:
            raise ValueError("size must be >= 0")
        rng = self._rng
        n_upd = int(round(size * self.update_fraction))
        rest = size - n_upd
        n_ins = int(round(rest * self.insert_fraction))
        del_budget = rest - n_ins

        plan = self._plan_inserts(n_ins)
        new_orders = sum(len(l) for l in plan.lines)

        # deletes: the oldest live orders, with all their lineitems
        allowed = max(0, len(self._live_keys) + new_orders - self.min_live_orders)
        k = min(allowed, del_budget, len(self._live_keys))
        k_del, del_tuples = 0, 0
        if k > 0:
            cost = np.cumsum(self._live_lines[:k].astype(np.int64) + 1)
            k_del = int(np.searchsorted(cost, del_budget, side="right"))
            del_tuples = int(cost[k_del - 1]) if k_del else 0
        del_keys = self._live_keys[:k_del]
        del_lines = int(self._live_lines[:k_del].sum())
        cand_keys = self._live_keys[k_del:]
        cand_lines = self._live_lines[k_del:]

        # updates: a contiguous run among the newest live (surviving) orders
        n_upd_l = int(round(n_upd * _LINEITEM_UPDATE_SHARE))
        n_upd_o = n_upd - n_upd_l
        upd_l_keys = upd_l_lines = upd_o_keys = np.empty(0, dtype=np.int64)
        m = len(cand_keys)
        if n_upd > 0 and m > 0:
            window = min(m, self.update_window)
            end = m - int(rng.integers(0, window))  # exclusive end of the run
            need_lines = 2 * n_upd_l
            need_orders = 2 * n_upd_o
            lo_idx = max(0, end - max(need_lines, need_orders) - 1)
            rev = np.cumsum(cand_lines[lo_idx:end][::-1].astype(np.int64))
            run = int(np.searchsorted(rev, need_lines)) + 1 if need_lines else 0
            run = min(end - lo_idx, max(run, need_orders, 1))
            start = end - run
            run_keys = cand_keys[start:end]
            run_lines = cand_lines[start:end].astype(np.int64)
            n_upd_o = min(n_upd_o, len(run_keys))
            if n_upd_o:
                upd_o_keys = np.sort(rng.choice(run_keys, size=n_upd_o, replace=False))
            total_lines = int(run_lines.sum())
            n_upd_l = min(n_upd_l, total_lines)
            if n_upd_l:
                pick_idx = np.sort(rng.choice(total_lines, size=n_upd_l, replace=False))
                line_order = np.repeat(np.arange(len(run_keys)), run_lines)
                first = np.repeat(np.cumsum(run_lines) - run_lines, run_lines)
                line_no = np.arange(total_lines) - first + 1
                upd_l_keys = run_keys[line_order[pick_idx]]
                upd_l_lines = line_no[pick_idx]
        else:
            n_upd_l = n_upd_o = 0

        # unused delete/update budget becomes inserts, so the batch has `size` tuples
        leftover = (del_budget - del_tuples) + (n_upd - n_upd_l - n_upd_o)
        self._plan_inserts(leftover, plan)

        batch = self._materialize(plan, size)
        if k_del:
            lo, hi = int(del_keys[0]), int(del_keys[-1])
            batch.deletes = {"lineitem": (lo, hi), "orders": (lo, hi)}
            batch.counts["orders"]["deleted"] = k_del
            batch.counts["lineitem"]["deleted"] = del_lines
        if n_upd_o:
            batch.updates["orders"] = pa.table(
                {
                    "o_orderkey": int_array(upd_o_keys, _I64),
                    "o_orderpriority": pick(rng, PRIORITIES, n_upd_o),
                }
            )
            batch.counts["orders"]["updated"] = n_upd_o
        if n_upd_l:
            batch.updates["lineitem"] = pa.table(
                {
                    "l_orderkey": int_array(upd_l_keys, _I64),
                    "l_linenumber": int_array(upd_l_lines, _I32),
                    "l_quantity": decimal_from_units(rng.integers(1, 51, size=n_upd_l) * 100, 15, 2),
                    "l_discount": decimal_from_units(rng.integers(0, 11, size=n_upd_l), 15, 2),
                }
            )
            batch.counts["lineitem"]["updated"] = n_upd_l

        # move the live-order window: drop the deleted head, append the new orders
        new = batch.inserts["orders"]
        if k_del or new.num_rows:
            new_keys = new.column("o_orderkey").to_numpy()
            new_lines = np.concatenate(plan.lines).astype(np.int32) if plan.lines else np.empty(0, np.int32)
            self._live_keys = np.concatenate([cand_keys, new_keys])
            self._live_lines = np.concatenate([cand_lines, new_lines])
        self._generated += 1
        assert batch.rows_changed == size, (batch.rows_changed, size)
        return batch

    def _materialize(self, plan: _InsertPlan, size: int) -> Batch:
        rng = self._rng
        counts = {t: {"inserted": 0, "deleted": 0, "updated": 0} for t in DYNAMIC}
        inserts: dict[str, pa.Table] = {}

        # customers
        n = plan.customers
        keys = np.arange(self._next["customer"], self._next["customer"] + n, dtype=np.int64)
        self._next["customer"] += n
        nation = self._nations[rng.integers(0, len(self._nations), size=n)]
        inserts["customer"] = pa.Table.from_arrays(
            [
                int_array(keys, _I64),
                concat_str("Customer#", zero_pad(keys, 9)),
                self._alnum.strings(rng, n, 10, 40),
                int_array(nation, _I64),
                self._phones(nation),
                decimal_from_units(rng.integers(-99999, 1000000, size=n), 15, 2),
                pick(rng, SEGMENTS, n),
                self._text.strings(rng, n, 29, 116),
            ],
            schema=SCHEMAS["customer"],
        )
        new_orderable = keys[keys % 3 != 0]
        if len(new_orderable):
            self._orderable = np.concatenate([self._orderable, new_orderable])

        # suppliers
        n = plan.suppliers
        keys = np.arange(self._next["supplier"], self._next["supplier"] + n, dtype=np.int64)
        self._next["supplier"] += n
        nation = self._nations[rng.integers(0, len(self._nations), size=n)]
        inserts["supplier"] = pa.Table.from_arrays(
            [
                int_array(keys, _I64),
                concat_str("Supplier#", zero_pad(keys, 9)),
                self._alnum.strings(rng, n, 10, 40),
                int_array(nation, _I64),
                self._phones(nation),
                decimal_from_units(rng.integers(-99999, 1000000, size=n), 15, 2),
                self._text.strings(rng, n, 25, 100),
            ],
            schema=SCHEMAS["supplier"],
        )
        if n:
            self._supp_keys = np.concatenate([self._supp_keys, keys])

        # parts, each with 4 partsupp rows
        n = plan.parts
        keys = np.arange(self._next["part"], self._next["part"] + n, dtype=np.int64)
        self._next["part"] += n
        colors = pa.array(_COLORS, _S)
        name_words = [colors.take(pa.array(rng.integers(0, len(_COLORS), size=n))) for _ in range(5)]
        m = rng.integers(1, 6, size=n)
        inserts["part"] = pa.Table.from_arrays(
            [
                int_array(keys, _I64),
                pc.binary_join_element_wise(*name_words, " "),
                concat_str("Manufacturer#", pa.array(m).cast(_S)),
                concat_str("Brand#", pa.array(m).cast(_S), pa.array(rng.integers(1, 6, size=n)).cast(_S)),
                pc.binary_join_element_wise(
                    pick(rng, _TYPE_S1, n), pick(rng, _TYPE_S2, n), pick(rng, _TYPE_S3, n), " "
                ),
                int_array(rng.integers(1, 51, size=n), _I32),
                pc.binary_join_element_wise(pick(rng, _CONTAINER_S1, n), pick(rng, _CONTAINER_S2, n), " "),
                decimal_from_units(retail_price_cents(keys), 15, 2),
                self._text.strings(rng, n, 5, 22),
            ],
            schema=SCHEMAS["part"],
        )
        s = len(self._supp_keys)
        base = rng.integers(0, s, size=n)
        step = max(1, s // _SUPPLIERS_PER_PART)
        ps_idx = (base[:, None] + step * np.arange(_SUPPLIERS_PER_PART)[None, :]) % s
        if s < _SUPPLIERS_PER_PART:  # tiny tables: fewer distinct suppliers per part
            ps_idx = np.repeat(np.arange(s)[None, :], n, axis=0)
        ps_part = np.repeat(keys, ps_idx.shape[1])
        ps_supp = self._supp_keys[ps_idx.ravel()]
        np_ = len(ps_part)
        inserts["partsupp"] = pa.Table.from_arrays(
            [
                int_array(ps_part, _I64),
                int_array(ps_supp, _I64),
                int_array(rng.integers(1, 10000, size=np_), _I32),
                decimal_from_units(rng.integers(100, 100001, size=np_), 15, 2),
                self._text.strings(rng, np_, 49, 198),
            ],
            schema=SCHEMAS["partsupp"],
        )
        if np_:
            self._ps_part = np.concatenate([self._ps_part, ps_part])
            self._ps_supp = np.concatenate([self._ps_supp, ps_supp])

        # orders and their lineitems
        lines = np.concatenate(plan.lines).astype(np.int64) if plan.lines else np.empty(0, np.int64)
        n = len(lines)
        okeys = np.arange(self._next["orders"], self._next["orders"] + n, dtype=np.int64)
        self._next["orders"] += n
        odate = rng.integers(_START, _LAST_ORDERDATE + 1, size=n)
        nl = int(lines.sum())
        oidx = np.repeat(np.arange(n), lines)
        starts = np.cumsum(lines) - lines
        linenumber = np.arange(nl) - np.repeat(starts, lines) + 1
        ps = rng.integers(0, len(self._ps_part), size=nl)
        l_part = self._ps_part[ps]
        l_supp = self._ps_supp[ps]
        qty = rng.integers(1, 51, size=nl)
        ext = qty * retail_price_cents(l_part)
        disc = rng.integers(0, 11, size=nl)
        tax = rng.integers(0, 9, size=nl)
        l_odate = odate[oidx]
        ship = l_odate + rng.integers(1, 122, size=nl)
        commit = l_odate + rng.integers(30, 91, size=nl)
        receipt = ship + rng.integers(1, 31, size=nl)
        returned = receipt <= _CURRENT
        ra = np.where(rng.integers(0, 2, size=nl) == 0, "R", "A")
        returnflag = np.where(returned, ra, "N")
        shipped = ship <= _CURRENT  # linestatus F
        linestatus = np.where(shipped, "F", "O")
        line_total = np.rint(ext * (100 + tax) * (100 - disc) / 10000.0).astype(np.int64)
        if n:
            total = np.add.reduceat(line_total, starts)
            n_f = np.add.reduceat(shipped.astype(np.int64), starts)
        else:
            total = n_f = np.empty(0, np.int64)
        status = np.where(n_f == lines, "F", np.where(n_f == 0, "O", "P"))

        inserts["orders"] = pa.Table.from_arrays(
            [
                int_array(okeys, _I64),
                int_array(self._orderable[rng.integers(0, len(self._orderable), size=n)], _I64),
                pa.array(status, _S),
                decimal_from_units(total, 15, 2),
                date32(odate),
                pick(rng, PRIORITIES, n),
                concat_str("Clerk#", zero_pad(rng.integers(1, self._clerks + 1, size=n), 9)),
                int_array(np.zeros(n, dtype=np.int32), _I32),
                self._text.strings(rng, n, 19, 78),
            ],
            schema=SCHEMAS["orders"],
        )
        inserts["lineitem"] = pa.Table.from_arrays(
            [
                int_array(okeys[oidx], _I64),
                int_array(l_part, _I64),
                int_array(l_supp, _I64),
                int_array(linenumber, _I32),
                decimal_from_units(qty * 100, 15, 2),
                decimal_from_units(ext, 15, 2),
                decimal_from_units(disc, 15, 2),
                decimal_from_units(tax, 15, 2),
                pa.array(returnflag, _S),
                pa.array(linestatus, _S),
                date32(ship),
                date32(commit),
                date32(receipt),
                pick(rng, SHIP_INSTRUCTIONS, nl),
                pick(rng, SHIP_MODES, nl),
                self._text.strings(rng, nl, 10, 43),
            ],
            schema=SCHEMAS["lineitem"],
        )
        for t, tbl in inserts.items():
            counts[t]["inserted"] = tbl.num_rows
        return Batch(
            seq=self._generated + 1,
            size=size,
            inserts=inserts,
            updates={},
            deletes={},
            counts=counts,
            _stream=self,
        )

    def _phones(self, nation: np.ndarray) -> pa.Array:
        rng = self._rng
        n = len(nation)
        return concat_str(
            pa.array((nation % 90) + 10).cast(_S),
            "-",
            pa.array(rng.integers(100, 1000, size=n)).cast(_S),
            "-",
            pa.array(rng.integers(100, 1000, size=n)).cast(_S),
            "-",
            pa.array(rng.integers(1000, 10000, size=n)).cast(_S),
        )

    # -- application ---------------------------------------------------------

    def apply(self, batch: Batch, *, check: bool = True, parallel: bool = True) -> Batch:
        """Write ``batch`` to the Delta tables.

        Per table, in this order and only where there is something to do: an
        append, a MERGE update (orders, lineitem), a delete (orders,
        lineitem) -- so at most one commit per (table, operation), at most 10
        per batch.  Across tables, parents are appended before children
        (customer, supplier, part -> partsupp, orders -> lineitem) and
        children deleted before parents (lineitem -> orders), so every
        intermediate version of the tables keeps the foreign keys intact.
        With ``parallel`` independent tables are written from concurrent
        threads (delta-rs releases the GIL), which roughly halves the wall
        time; the commits of each table and so its versions are the same
        either way.

        With ``check`` the row counts reported by delta-rs are compared with
        ``batch.counts`` and a mismatch raises ``RuntimeError`` (which means
        the tables were changed behind the stream's back).
        """
        from deltalake import CommitProperties, write_deltalake

        if batch._stream is not self:
            raise ValueError("batch was generated by another stream")
        if batch.applied:
            raise RuntimeError(f"batch {batch.seq} was already applied")
        if batch.seq != self._applied + 1:
            raise RuntimeError(
                f"batches must be applied in order: next is {self._applied + 1}, got {batch.seq}"
            )
        props = CommitProperties(
            custom_metadata={"viewlet.workload": "tpch", "viewlet.batch": str(batch.seq)}
        )
        before = {t: self._dt[t].version() for t in DYNAMIC}
        problems: list[str] = []

        def timed(label: str, fn):
            t0 = time.perf_counter()
            out = fn()
            batch.timings[label] = time.perf_counter() - t0
            return out

        def append(t: str) -> None:
            rows = batch.inserts.get(t)
            if rows is not None and rows.num_rows:
                timed(
                    f"append {t}",
                    lambda: write_deltalake(self._dt[t], rows, mode="append", commit_properties=props),
                )

        def update(t: str, key_cols: list[str], set_: dict[str, str]) -> None:
            src = batch.updates.get(t)
            if src is None or not src.num_rows:
                return
            lo, hi = _key_range(src, key_cols[0])
            pred = f"t.{key_cols[0]} >= {lo} AND t.{key_cols[0]} <= {hi} AND " + " AND ".join(
                f"t.{c} = s.{c}" for c in key_cols
            )
            res = timed(
                f"update {t}",
                lambda: self._dt[t]
                .merge(src, predicate=pred, source_alias="s", target_alias="t", commit_properties=props)
                .when_matched_update(set_)
                .execute(),
            )
            if res.get("num_target_rows_updated") != src.num_rows:
                problems.append(f"{t}: updated {res.get('num_target_rows_updated')} != {src.num_rows}")

        def delete(t: str, col: str) -> None:
            rng_ = batch.deletes.get(t)
            if rng_ is None:
                return
            lo, hi = rng_
            res = timed(
                f"delete {t}",
                lambda: self._dt[t].delete(f"{col} >= {lo} AND {col} <= {hi}", commit_properties=props),
            )
            if res.get("num_deleted_rows") != batch.counts[t]["deleted"]:
                problems.append(f"{t}: deleted {res.get('num_deleted_rows')} != {batch.counts[t]['deleted']}")

        # (step, waits for) per table; a step runs once the named steps are done
        chains: dict[str, list[tuple[str, Callable[[], None], tuple[str, ...]]]] = {
            "customer": [("append customer", lambda: append("customer"), ())],
            "supplier": [("append supplier", lambda: append("supplier"), ())],
            "part": [("append part", lambda: append("part"), ())],
            "partsupp": [("append partsupp", lambda: append("partsupp"), ("append part", "append supplier"))],
            "orders": [
                ("append orders", lambda: append("orders"), ("append customer",)),
                ("update orders", lambda: update("orders", ["o_orderkey"], {"o_orderpriority": "s.o_orderpriority"}), ()),
                ("delete orders", lambda: delete("orders", "o_orderkey"), ("delete lineitem",)),
            ],
            "lineitem": [
                ("append lineitem", lambda: append("lineitem"), ("append orders", "append partsupp")),
                (
                    "update lineitem",
                    lambda: update(
                        "lineitem",
                        ["l_orderkey", "l_linenumber"],
                        {
                            "l_quantity": "s.l_quantity",
                            "l_discount": "s.l_discount",
                            "l_extendedprice": (
                                "CASE WHEN t.l_quantity = 0 THEN t.l_extendedprice ELSE "
                                "CAST(t.l_extendedprice / t.l_quantity * s.l_quantity AS DECIMAL(15,2)) END"
                            ),
                        },
                    ),
                    (),
                ),
                ("delete lineitem", lambda: delete("lineitem", "l_orderkey"), ()),
            ],
        }
        _run_chains(chains, parallel)

        batch.versions = {
            t: (before[t], v) for t in DYNAMIC if (v := self._dt[t].version()) != before[t]
        }
        batch.applied = True
        self._applied = batch.seq
        if check and problems:
            raise RuntimeError(f"batch {batch.seq} applied with unexpected row counts: " + "; ".join(problems))
        return batch

    def run(self, batches: int, size: int) -> list[Batch]:
        """Generate and apply ``batches`` batches of ``size``; returns them."""
        return [self.apply(self.next_batch(size)) for _ in range(batches)]


def _key_range(table: pa.Table, column: str) -> tuple[int, int]:
    mm = pc.min_max(table.column(column))
    return int(mm["min"].as_py()), int(mm["max"].as_py())
