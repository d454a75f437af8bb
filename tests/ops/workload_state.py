"""The randomized workload of tests/spark, resumable across processes: tables are created
once under a directory, and each process continues with its own seed."""
from __future__ import annotations

import os
import random

from tests.spark.workload import BASIC, NULLABLE, Workload


def attach_workload(root: str, seed: int, rows: int = 12) -> Workload:
    if not os.path.exists(os.path.join(root, "r")):
        return Workload(root, seed, rows)
    work = Workload.__new__(Workload)      # existing tables: no initial write
    work.rng = random.Random(seed)
    work.nullable, work.null_rate, work.updates = NULLABLE, 0.15, 0    # Workload's defaults
    work.paths = {name: os.path.join(root, name) for name in BASIC}
    return work
