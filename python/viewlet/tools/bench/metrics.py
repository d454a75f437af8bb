"""What the benchmark measures besides wall time: Spark input per job group (from the Spark
UI's REST API), peak memory (JVM heap pools, process peak RSS) and table sizes on disk."""
from __future__ import annotations

import json
import os
import socket
import urllib.request
from typing import Dict, Iterable, List, Optional


def free_port() -> int:
    """A free localhost TCP port for the Spark UI."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SparkInput:
    """Rows and bytes Spark read, per job group, from ``/api/v1/applications/<id>/...``.

    The benchmark tags every measured step with ``sparkContext.setJobGroup``; after a batch
    it waits for the listener bus to deliver that batch's events to the UI store and sums
    ``inputRecords``/``inputBytes`` (files Spark scanned: base tables, map snapshots) and
    ``shuffleReadBytes`` over the stages of each group's jobs."""

    def __init__(self, spark):
        self.sc = spark.sparkContext
        url = self.sc.uiWebUrl
        if not url:
            raise RuntimeError("the Spark UI is off; the benchmark session needs spark.ui.enabled")
        self.base = f"{url.rstrip('/')}/api/v1/applications/{self.sc.applicationId}"

    def tag(self, group: str, description: str):
        self.sc.setJobGroup(group, description)

    def untag(self):
        self.sc.setLocalProperty("spark.jobGroup.id", None)
        self.sc.setLocalProperty("spark.job.description", None)

    def _get(self, path: str):
        with urllib.request.urlopen(self.base + path, timeout=60) as r:
            return json.load(r)

    def _drain(self):
        # Scala's private[spark] is public bytecode: wait until every event posted so far
        # (job and stage ends included) has reached the status store the REST API reads.
        try:
            self.sc._jsc.sc().listenerBus().waitUntilEmpty(30_000)
        except Exception:      # another Spark version without this method: read what is there
            pass

    def collect(self, groups: Iterable[str]) -> Dict[str, Dict[str, int]]:
        wanted = set(groups)
        if not wanted:
            return {}
        self._drain()
        jobs = [j for j in self._get("/jobs") if j.get("jobGroup") in wanted]
        stage_ids = {s for j in jobs for s in j.get("stageIds", [])}
        stages: Dict[int, List[dict]] = {}
        if stage_ids:
            for s in self._get("/stages"):
                if s["stageId"] in stage_ids:
                    stages.setdefault(s["stageId"], []).append(s)
        out = {g: {"jobs": 0, "stages": 0, "tasks": 0, "input_records": 0, "input_bytes": 0,
                   "shuffle_read_bytes": 0} for g in wanted}
        for j in jobs:
            acc = out[j["jobGroup"]]
            acc["jobs"] += 1
            for sid in j.get("stageIds", []):
                for attempt in stages.get(sid, []):
                    if attempt.get("status") == "SKIPPED":
                        continue
                    acc["stages"] += 1
                    acc["tasks"] += int(attempt.get("numCompleteTasks", 0)) + \
                        int(attempt.get("numFailedTasks", 0))
                    acc["input_records"] += int(attempt.get("inputRecords", 0))
                    acc["input_bytes"] += int(attempt.get("inputBytes", 0))
                    acc["shuffle_read_bytes"] += int(attempt.get("shuffleReadBytes", 0))
        return out


class MemoryProbe:
    """Peak memory of one measured step: the JVM's heap (sum of the heap pools' peak usage,
    reset before the step) and the peak RSS of the JVM and the Python driver processes
    (Linux VmHWM, reset through /proc/<pid>/clear_refs; None where that is not possible)."""

    def __init__(self, spark):
        jvm = spark.sparkContext._jvm
        mf = jvm.java.lang.management.ManagementFactory
        self._pools = [p for p in mf.getMemoryPoolMXBeans()
                       if str(p.getType().toString()) == "Heap memory"]
        self._pids = {"jvm_rss_peak_bytes": int(jvm.java.lang.ProcessHandle.current().pid()),
                      "python_rss_peak_bytes": os.getpid()}

    def reset(self):
        for p in self._pools:
            p.resetPeakUsage()
        for pid in self._pids.values():
            _clear_peak_rss(pid)

    def peak(self) -> Dict[str, Optional[int]]:
        out: Dict[str, Optional[int]] = {
            "jvm_heap_peak_bytes": sum(int(p.getPeakUsage().getUsed()) for p in self._pools)}
        for key, pid in self._pids.items():
            out[key] = _peak_rss(pid)
        return out


def _clear_peak_rss(pid: int):
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def _peak_rss(pid: int) -> Optional[int]:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def delta_live_bytes(path: str) -> int:
    """Bytes of the Parquet files of a Delta table's current snapshot."""
    from deltalake import DeltaTable

    actions = DeltaTable(path).get_add_actions(flatten=True)
    sizes = actions.column("size_bytes")
    return int(sum(v.as_py() or 0 for v in sizes))


def directory_bytes(path: str) -> int:
    """Bytes under a directory: every version a table kept, logs included."""
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return total
