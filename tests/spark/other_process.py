"""Another Python process that runs statements on the test run's warehouse: a view created in
the test process is refreshed there, as after a notebook kernel restart or by a scheduled
job. The process has its own Spark session (Spark's default driver memory), its own
PYTHONHASHSEED and no memory of the views: it loads each one from the catalog the first time
a statement names it. One process serves the whole test run (started on first use).

    from tests.spark.other_process import other_process
    rows = other_process(spark).sql("REFRESH INCREMENTAL VIEW v")

Run as a program, it is that process: it reads one JSON statement per line on stdin and
answers one JSON line on stdout ({"rows": [...]} or {"error": type, "message": ...}).
"""
from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import tempfile
import threading
from typing import Dict, List, Optional

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
#: the hash seed of the other process: never the test process's own
DEFAULT_SEED = 7919


class OtherProcessError(AssertionError):
    """A statement failed in the other process (its error type and message), or the process
    died (its last stderr lines)."""


class OtherProcess:
    def __init__(self, warehouse: str, engine: str, seed: int):
        self.seed = seed
        self.log = tempfile.NamedTemporaryFile("w+", prefix="viewlet-other-", suffix=".log",
                                               delete=False)
        env = dict(os.environ, PYTHONHASHSEED=str(seed))
        self.proc = subprocess.Popen([sys.executable, __file__, warehouse, engine],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, text=True, env=env, cwd=ROOT)
        self.lock = threading.Lock()
        self._answer()                                 # "ready", once its session is up

    def sql(self, statement: str) -> List[Dict]:
        """Run `statement` there; its rows as dicts. OtherProcessError if it failed."""
        with self.lock:
            self.proc.stdin.write(json.dumps({"sql": statement}) + "\n")
            self.proc.stdin.flush()
            answer = self._answer()
        if "error" in answer:
            raise OtherProcessError(f"{answer['error']} in the other process (PYTHONHASHSEED="
                                    f"{self.seed}) running {statement!r}: {answer['message']}")
        return answer["rows"]

    def _answer(self) -> Dict:
        line = self.proc.stdout.readline()
        if not line:
            self.log.flush()
            with open(self.log.name, errors="replace") as f:
                tail = f.read()[-4000:]
            raise OtherProcessError(f"the other process exited ({self.proc.poll()}):\n{tail}")
        return json.loads(line)

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        os.unlink(self.log.name)


_OTHER: Optional[OtherProcess] = None


def other_process(spark) -> OtherProcess:
    """The test run's other process, on `spark`'s warehouse and test engine."""
    global _OTHER
    if _OTHER is None:
        import viewlet
        from .oracle import ENGINE
        own = os.environ.get("PYTHONHASHSEED", "")
        seed = DEFAULT_SEED + (int(own) if own.isdigit() else 0)
        _OTHER = OtherProcess(viewlet.context(spark).warehouse, ENGINE, seed)
        atexit.register(_OTHER.close)
    return _OTHER


# ------------------------------------------------------------------------------- the process
def _serve(warehouse: str, engine: str) -> None:
    sys.path[:0] = [os.path.join(ROOT, "python"), ROOT]
    answers = sys.stdout
    sys.stdout = sys.stderr                    # anything else printed goes to the log
    import viewlet
    from pyspark.sql import SparkSession
    builder = SparkSession.builder.master("local[1]").appName("viewlet-other-process") \
        .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2") \
        .config("spark.viewlet.engine", engine)
    spark = viewlet.configure_spark(builder, warehouse=warehouse).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    viewlet.enable(spark)

    def answer(value):
        answers.write(json.dumps(value, default=str) + "\n")
        answers.flush()

    answer({"ready": True})
    for line in sys.stdin:
        statement = json.loads(line)["sql"]
        try:
            rows = [r.asDict() for r in spark.sql(statement).collect()]
        except Exception as e:                 # noqa: BLE001 - reported to the test
            answer({"error": type(e).__name__, "message": str(e)})
            continue
        answer({"rows": rows})
    spark.stop()


if __name__ == "__main__":
    _serve(sys.argv[1], sys.argv[2])
