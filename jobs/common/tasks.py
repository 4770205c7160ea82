"""How many Spark tasks a pass of Python code over files is worth.

Every task that runs Python costs about 0.2 s of its own (Spark 4.0.1, warm reused workers: an empty
`mapInArrow` over 34 one-row partitions took 3.4-3.5 s on two cores, the same plan without Python 0.3 s),
as much as reading ~20 MB of input. Most of it is the worker's `importlib.invalidate_caches()` at the start
of every task (pyspark/worker_util.py), which on Python 3.11 re-reads the directory of every zip on the
workers' path, pyspark.zip's among them (py-spy on a reused worker); local runs start their workers from
`jobs.common.python_daemon`, which skips that (~0.05 s a task remains), executors elsewhere still pay it.
Tasks are worth having for the data's sake (a share of `TASK_BYTES` each) and for the cores' (one per core
while there are items to share), not for the files' sake: one task per log file made a quiet night's logs
stage on the samples (34 files, nothing new) take 9.6 s, and two tasks 2 s.
"""

from __future__ import annotations

#: The input bytes one Python task is given before another task is worth its cost.
TASK_BYTES = 64 << 20


def python_tasks(total_bytes: int, items: int, cores: int) -> int:
    """Tasks for `items` files of `total_bytes` together: as many as the bytes are worth (`TASK_BYTES`
    each), no fewer than the cores while there are items for them, no more than four per core (nor than
    items); 0 for no items."""
    cores = max(1, cores)
    worth = -(-max(0, total_bytes) // TASK_BYTES)
    return max(min(items, cores), min(items, 4 * cores, worth))
