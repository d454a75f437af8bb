"""Refresh leases: of several refreshers of one view, one computes a batch, the others wait.

Correctness never rests on a lease. The manifest's Delta transactions decide which refresher
plans a batch (manifest.py), and every map's transaction id makes a re-run of a batch
apply nothing twice. A lease only keeps a second refresher from computing a batch that another
one is computing: it waits for that batch to commit instead (or takes it over when its
refresher stopped).

A refresher that plans, or takes over, batch n first writes the file
`<view>/_leases/<n>-<token>.json` (so a planned row is never visible without its lease),
rewrites it every `leaseSeconds / 6` seconds from a heartbeat thread while it works, and
removes it when the batch commits or fails. A lease is live unless:

- its heartbeat is older than `spark.viewlet.refresh.leaseSeconds` (default 60) by the
  reader's clock (hosts are assumed to keep their clocks within that of each other);
- its owner is a process of this host that no longer runs (a killed refresher is taken over
  at once, without waiting out the lease);
- its owner is this process and no longer holds it.

Two refreshers that find an abandoned batch at the same moment each write a lease, then list
the batch's leases: the one whose token sorts first goes on, the other waits for it. This
needs a store whose listings show a completed write (local disks; S3, GCS and ADLS are
strongly consistent). Where that fails, both re-run the batch, which is still applied once.
"""
from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from typing import List, Optional, Set

from ..runtime import cancel
from .warehouse import join

log = logging.getLogger("viewlet")
COMMITTED, ABANDONED = "committed", "abandoned"
HOST = socket.gethostname()
_active: Set[str] = set()          # tokens this process holds
_active_lock = threading.Lock()


@dataclass
class Holder:
    batch: int
    token: str
    host: str
    pid: int
    at: float              # the last heartbeat, seconds since the epoch (the writer's clock)
    seconds: float

    @property
    def owner(self) -> str:
        return f"process {self.pid} on {self.host}"

    def live(self, now: Optional[float] = None) -> bool:
        if self.host == HOST:
            if self.pid == os.getpid():
                with _active_lock:
                    return self.token in _active
            if not _process_runs(self.pid):
                return False
        return (now if now is not None else time.time()) - self.at <= self.seconds


def _process_runs(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:            # another user's process: it runs
        return True
    return True


def _name(batch: int, token: str) -> str:
    return f"{batch}-{token}.json"


def holders(view, batch: int) -> List[Holder]:
    """The live leases of `batch`, in token order."""
    store, directory = view.ctx.store, view.ctx.layout.lease_dir(view.id)
    out = []
    now = time.time()
    for name in store.list_names(directory):
        head = name.split("-", 1)[0]
        if head.isdigit() and int(head) < batch:     # left by a refresher killed after its
            store.remove_file(join(directory, name))  # commit: that batch is done
            continue
        if not (name.startswith(f"{batch}-") and name.endswith(".json")):
            continue
        text = store.get_text(join(directory, name))
        try:
            h = Holder(**json.loads(text)) if text else None
        except (TypeError, ValueError):
            h = None                   # a file being replaced or foreign: not a lease
        if h is not None and h.batch == batch and h.live(now):
            out.append(h)
    return sorted(out, key=lambda h: h.token)


def clear(view, batch: int) -> None:
    """Remove every lease file of `batch` (after it committed: its holders are done)."""
    store, directory = view.ctx.store, view.ctx.layout.lease_dir(view.id)
    for name in store.list_names(directory):
        if name.startswith(f"{batch}-"):
            store.remove_file(join(directory, name))


class Lease:
    """`with Lease(view, n) as lease:` holds batch n's lease while the block runs."""

    def __init__(self, view, batch: int):
        self.view, self.batch = view, batch
        self.token = uuid.uuid4().hex[:16]
        self.seconds = view.settings.lease_seconds
        self.path = join(view.ctx.layout.lease_dir(view.id), _name(batch, self.token))
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def _write(self) -> None:
        self.view.ctx.store.put_text(self.path, json.dumps({
            "batch": self.batch, "token": self.token, "host": HOST, "pid": os.getpid(),
            "at": time.time(), "seconds": self.seconds}))

    def __enter__(self) -> "Lease":
        return self.acquire()

    def acquire(self) -> "Lease":
        """Write the lease file and start its heartbeat (`with` does it on entering; a batch
        whose lease outlives the statement calls it, then `release`)."""
        with _active_lock:
            _active.add(self.token)
        self._write()
        self._thread = threading.Thread(target=self._beat, daemon=True,
                                        name=f"viewlet-lease-{self.view.name}-{self.batch}")
        self._thread.start()
        return self

    def _beat(self) -> None:
        while not self._stop.wait(self.seconds / 6):
            try:
                self._write()
            except Exception as e:     # a missed beat is retried; the lease lasts 6 of them
                log.warning("View %s: lease heartbeat of batch %d failed: %s",
                            self.view.name, self.batch, e)

    def first(self) -> bool:
        """Whether this lease comes first among the batch's live leases (a takeover goes on
        only then)."""
        live = holders(self.view, self.batch)
        return not live or live[0].token == self.token

    def __exit__(self, *exc) -> None:
        self.release()

    def release(self) -> None:
        """Stop the heartbeat and remove the lease file (`with` does it on leaving; a batch
        whose committed row is appended after REFRESH returns, once that row is committed)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with _active_lock:
            _active.discard(self.token)
        try:
            self.view.ctx.store.remove_file(self.path)
        except Exception as e:         # left behind, it expires
            log.warning("View %s: lease of batch %d not removed: %s", self.view.name,
                        self.batch, e)


def wait_for_batch(view, batch: int, progress=None, poll: float = 0.25) -> str:
    """Wait while some live lease holds `batch`: COMMITTED when the batch committed meanwhile,
    ABANDONED when it is planned and nobody holds it (the caller takes it over)."""
    shown = None
    while True:
        live = holders(view, batch)       # before the manifest: holders commit, then release
        if any(r.batch == batch and r.phase == "committed" for r in view.manifest.records()):
            return COMMITTED
        if not live:
            return ABANDONED
        if progress is not None and live[0].token != shown:
            shown = live[0].token
            progress.step(f"waiting for a concurrent refresh of batch {batch} "
                          f"({live[0].owner})")
        cancel.check()
        time.sleep(poll)
