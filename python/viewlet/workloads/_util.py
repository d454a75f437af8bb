"""Small vectorised helpers shared by the workload generators.

Everything here builds Arrow arrays straight from NumPy buffers so that a
10k-row batch costs a few milliseconds, not a Python loop per row.
"""

from __future__ import annotations

import datetime as _dt
import threading

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

EPOCH = _dt.date(1970, 1, 1)


def days(d: _dt.date) -> int:
    """Days since 1970-01-01 (the date32 representation of ``d``)."""
    return (d - EPOCH).days


def decimal_from_units(units: np.ndarray, precision: int, scale: int) -> pa.Array:
    """Decimal128 array from integers counted in units of ``10**-scale``.

    ``decimal_from_units(np.array([12345]), 15, 2)`` is ``[123.45]``.
    """
    units = np.ascontiguousarray(units, dtype=np.int64)
    raw = np.empty((len(units), 2), dtype=np.int64)
    raw[:, 0] = units
    raw[:, 1] = units >> 63  # sign extension into the high 64 bits
    if raw.dtype.byteorder == ">" or (raw.dtype.byteorder == "=" and not np.little_endian):
        raise RuntimeError("big-endian hosts are not supported")
    return pa.Array.from_buffers(
        pa.decimal128(precision, scale), len(units), [None, pa.py_buffer(raw.tobytes())]
    )


def decimal_units(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Inverse of :func:`decimal_from_units` for non-null decimal128 data."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    raw = np.frombuffer(arr.buffers()[1], dtype=np.int64)
    raw = raw[2 * arr.offset : 2 * (arr.offset + len(arr))]
    return raw[0::2].copy()


def plain_types(table: pa.Table) -> pa.Table:
    """Cast ``string_view``/``large_string`` columns to ``string`` (Spark and
    several pyarrow kernels reject view types)."""
    fields = []
    changed = False
    for f in table.schema:
        if f.type in (pa.string_view(), pa.large_string()):
            fields.append(f.with_type(pa.string()))
            changed = True
        else:
            fields.append(f)
    return table.cast(pa.schema(fields)) if changed else table


def scan(table, columns: list[str] | None = None, where: str | None = None) -> pa.Table:
    """Read a Delta table (``DeltaTable`` or path) into Arrow with delta-rs's
    own engine.

    ``DeltaTable.to_pyarrow_table`` goes through a pyarrow dataset backed by a
    Python filesystem handler, which intermittently aborts the interpreter at
    exit ("terminate called without an active exception", delta-rs #2184);
    the DataFusion-based ``QueryBuilder`` does not, and is faster.
    """
    from deltalake import DeltaTable, QueryBuilder

    if not isinstance(table, DeltaTable):
        table = DeltaTable(str(table))
    cols = ", ".join('"' + c.replace('"', '""') + '"' for c in columns) if columns else "*"
    sql = f"SELECT {cols} FROM t" + (f" WHERE {where}" if where else "")
    reader = QueryBuilder().register("t", table).execute(sql)
    return plain_types(pa.table(reader.read_all()))


def date32(day_numbers: np.ndarray) -> pa.Array:
    d = np.ascontiguousarray(day_numbers, dtype=np.int32)
    return pa.Array.from_buffers(pa.date32(), len(d), [None, pa.py_buffer(d.tobytes())])


def int_array(values: np.ndarray, type_: pa.DataType) -> pa.Array:
    return pa.array(np.ascontiguousarray(values), type=type_)


def pick(rng: np.random.Generator, choices: list[str], n: int) -> pa.Array:
    """``n`` strings drawn uniformly from ``choices``."""
    dictionary = pa.array(choices, pa.string())
    idx = rng.integers(0, len(choices), size=n)
    return dictionary.take(pa.array(idx))


def zero_pad(values: np.ndarray, width: int) -> pa.Array:
    return pc.utf8_lpad(pa.array(np.asarray(values, dtype=np.int64)).cast(pa.string()), width, "0")


def concat_str(*parts) -> pa.Array:
    """Element-wise concatenation of string arrays and/or scalar strings."""
    return pc.binary_join_element_wise(*parts, "")


class TextPool:
    """A block of pseudo-random text; strings are random substrings of it.

    This is how dbgen makes comments: pick an offset into a large text
    pool and a length.  Slicing is done with one NumPy gather, so a few
    thousand strings cost well under a millisecond.
    """

    def __init__(self, text: str):
        self.data = np.frombuffer(text.encode("ascii"), dtype=np.uint8)

    @classmethod
    def from_words(
        cls,
        rng: np.random.Generator,
        groups: list[list[str]],
        size: int = 1 << 20,
        terminators: tuple[str, ...] = (".", ";", ":", "?", "!", "--"),
    ) -> "TextPool":
        words = [w for group in groups for w in group]
        n_words = size // 6 + 1
        idx = rng.integers(0, len(words), size=n_words)
        out = []
        for i, w in enumerate(np.asarray(words, dtype=object)[idx]):
            out.append(w)
            if i % 9 == 8:
                out[-1] = w + terminators[i % len(terminators)]
        return cls(" ".join(out)[:size])

    @classmethod
    def from_alphabet(cls, rng: np.random.Generator, alphabet: str, size: int = 1 << 16) -> "TextPool":
        codes = np.frombuffer(alphabet.encode("ascii"), dtype=np.uint8)
        return cls(codes[rng.integers(0, len(codes), size=size)].tobytes().decode("ascii"))

    def strings(self, rng: np.random.Generator, n: int, min_len: int, max_len: int) -> pa.Array:
        lengths = rng.integers(min_len, max_len + 1, size=n).astype(np.int64)
        starts = rng.integers(0, len(self.data) - max_len, size=n).astype(np.int64)
        offsets = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(lengths, out=offsets[1:])
        total = int(offsets[-1])
        # index of every output byte in the pool: start of its string + position in it
        pos = np.arange(total, dtype=np.int64) - np.repeat(offsets[:-1].astype(np.int64), lengths)
        gathered = self.data[np.repeat(starts, lengths) + pos]
        return pa.Array.from_buffers(
            pa.string(), n, [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(gathered.tobytes())]
        )


def run_chains(chains, parallel: bool) -> None:
    """Run per-table step chains; a step waits for the steps it names.

    Sequentially the steps run in a topological order (chains in the given
    order, a step postponed until its prerequisites ran); in parallel each
    chain gets a thread and waits on events.  If any step fails the others
    stop at their next step and the first error is raised.
    """
    steps = [step for chain in chains.values() for step in chain]
    if not parallel:
        done: set[str] = set()
        pending = {name: list(chain) for name, chain in chains.items()}
        while any(pending.values()):
            progressed = False
            for chain in pending.values():
                while chain and all(d in done for d in chain[0][2]):
                    label, fn, _ = chain.pop(0)
                    fn()
                    done.add(label)
                    progressed = True
            if not progressed:
                raise RuntimeError("cyclic step dependencies")
        return

    events = {label: threading.Event() for label, _, _ in steps}
    failed = threading.Event()
    errors: list[BaseException] = []

    def worker(chain) -> None:
        try:
            for label, fn, deps in chain:
                for d in deps:
                    events[d].wait()
                if failed.is_set():
                    return
                fn()
                events[label].set()
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller
            errors.append(e)
            failed.set()
        finally:
            for label, _, _ in chain:  # never leave a waiter hanging
                events[label].set()

    threads = [
        threading.Thread(target=worker, args=(chain,), name=f"viewlet-apply-{name}")
        for name, chain in chains.items()
    ]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        raise errors[0]
