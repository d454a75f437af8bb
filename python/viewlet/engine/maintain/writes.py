"""A batch's map writes, committed side by side.

Every map's delta goes to a Delta table of its own, each commit carrying the batch's
transaction id, so they need no order among themselves: a crash leaves some of them
committed and the re-run of the batch commits the rest. A commit is mostly file and log I/O
in delta-rs, which runs without the GIL, so commits on a few threads overlap. The result
table's MERGE still comes after every map's write: readers see the view change only once the
maps hold the batch. CREATE writes the maps it computed in the driver the same way.

The threads are kept for the process: each keeps its own table handles
(storage/deltars.py), so the next batch finds them open, and a map is always committed on
the same thread (`_lane`), whose handle of it follows its own commits. Only the commits run
there: fault points, progress, cancellation checks and the hot maps' bookkeeping stay on
the statement's thread, in the order the writes were submitted, and every write has ended
before the batch goes on (or raises), so a cancelled statement never leaves a write running.
"""
from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Callable, Dict, Iterator, List, Sequence, TypeVar

T = TypeVar("T")

#: threads committing map writes (each map always on the same one); each commit is mostly
#: waiting on files, so more than the cores
WRITERS = 4

_pools: Dict[str, ThreadPoolExecutor] = {}    # thread name prefix -> its pool
_lock = threading.Lock()


def _executor(name: str, threads: int) -> ThreadPoolExecutor:
    """The process's pool of `threads` threads named `name` (made on first use)."""
    with _lock:
        if name not in _pools:
            _pools[name] = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=name)
        return _pools[name]


_lanes: Dict[str, int] = {}         # table path -> the writer thread that commits to it


def _lane(table: str) -> ThreadPoolExecutor:
    """The one thread that commits every write of the process to `table` (tables get
    threads in turn as they are first written, so a view's maps spread over them): its
    handle of the table follows its own commits. A map committed from whichever thread was
    free had each thread bring a stale handle up to date (a log read from the table's last
    checkpoint) at about every other batch."""
    with _lock:
        lane = _lanes.setdefault(table, len(_lanes) % WRITERS)
    return _executor(f"viewlet-commit-{lane}", 1)


class SideBySide:
    """Run `writes` at once, each on the thread of the table it commits to (`tables`, in the
    same order; `_lane`), even a write alone; iterate over their results in the order given
    (each as it is ready). Leaving the block waits for every write, whatever happened
    meanwhile."""

    def __init__(self, writes: Sequence[Callable[[], T]], tables: Sequence[str]):
        self._writes = list(writes)
        self._tables = list(tables)
        self._futures: List[Future] = []

    def __enter__(self) -> Iterator[T]:
        self._futures = [_lane(table).submit(w) for table, w in zip(self._tables, self._writes)]
        return self._results()

    def _results(self) -> Iterator[T]:
        for future in self._futures:
            yield future.result()

    def __exit__(self, *exc) -> None:
        wait(self._futures)


def on_manifest_thread(work: Callable[[], T]) -> Future:
    """Run a commit of a view's manifest on the one thread that commits every manifest row
    of the process (a batch's planned row while it computes: ops/planning.py; its committed
    row after). That thread's handle of a manifest follows its own commits; rows committed
    from two threads made each bring its handle up to date at every batch (about 3 ms of log
    reading each). The caller waits for it before it goes on."""
    return _executor("viewlet-manifest", 1).submit(work)


def on_manifest_thread_now(work: Callable[[], T]) -> T:
    """`work` on the manifest's thread, waited for; it has ended before anything is raised
    here (an interrupted wait does not leave the commit running)."""
    future = on_manifest_thread(work)
    try:
        return future.result()
    except BaseException:
        wait([future])
        raise
