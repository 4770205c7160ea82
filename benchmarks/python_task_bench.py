"""What a Python task costs beyond its work: an empty `mapInArrow` over one-row partitions on local[1], once
with PySpark's own worker daemon and once with the project's (jobs.common.python_daemon), each in a process
of its own (the daemon is chosen when the Spark context starts), side by side in one run.

    .venv/bin/python -m benchmarks.python_task_bench              # 32 tasks, 5 rounds each
    .venv/bin/python -m benchmarks.python_task_bench --tasks 64 --rounds 3

Printed per daemon: milliseconds per Python task (median of the rounds after the first, which starts the
workers), the same plan without Python per task, and the 1-minute load average at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DAEMONS = ("pyspark.daemon", "jobs.common.python_daemon")


def measure(daemon: str, tasks: int, rounds: int) -> dict[str, float]:
    """In this process: a local[1] session whose workers start from `daemon`; seconds per task, median."""
    sys.path.insert(0, str(ROOT))
    from jobs.common.config import parse_config
    from jobs.common.session import build_session

    config = parse_config({"sources": {"mode": "none"}, "spark": {
        "master": "local[1]", "catalog": "in-memory", "show_progress": False,
        "extra": {"spark.ui.enabled": "false", "spark.python.daemon.module": daemon}}})
    spark = build_session(config)

    def same(batches):  # type: ignore[no-untyped-def]
        yield from batches

    python, jvm = [], []
    for _ in range(rounds):
        started = time.perf_counter()
        spark.range(0, tasks, 1, tasks).mapInArrow(same, "id long").count()
        python.append((time.perf_counter() - started) / tasks)
        started = time.perf_counter()
        spark.range(0, tasks, 1, tasks).selectExpr("id + 1 AS id").count()
        jvm.append((time.perf_counter() - started) / tasks)
    spark.stop()
    return {"python_ms": 1000 * statistics.median(python[1:] or python),
            "jvm_ms": 1000 * statistics.median(jvm[1:] or jvm)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)  # the child process: one daemon
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(measure(args.one, args.tasks, args.rounds)))
        return 0
    results = {}
    for daemon in DAEMONS:
        child = subprocess.run(
            [sys.executable, "-m", "benchmarks.python_task_bench", "--one", daemon, "--tasks", str(args.tasks),
             "--rounds", str(args.rounds)], cwd=ROOT, capture_output=True, text=True, check=True)
        results[daemon] = json.loads(child.stdout.strip().splitlines()[-1])
    print(f"{'worker daemon':<28} {'ms per Python task':>19} {'ms per task without Python':>27}")
    for daemon, figures in results.items():
        print(f"{daemon:<28} {figures['python_ms']:>19.1f} {figures['jvm_ms']:>27.1f}")
    print(f"({args.tasks} one-row tasks a round, local[1], median of rounds 2-{args.rounds}; "
          f"load average (1 min): {os.getloadavg()[0]:.2f})")
    print(json.dumps({"tasks": args.tasks, "rounds": args.rounds, "results": results, "load1": os.getloadavg()[0]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
