"""Where a warm nightly run's CPU goes: per process (driver JVM, driver Python, Python workers), per JVM thread
group, and, from a Java Flight Recorder profile of the last run, per kind of driver work (Delta's file listing
in the optimizer, analysis, Delta commits, closure cleaning, executor tasks, ...).

    .venv/bin/python -m benchmarks.driver_profile                # 3 runs, the last one profiled
    .venv/bin/python -m benchmarks.driver_profile --runs 4 --keep-jfr /tmp/night.jfr

Each run is the samples' night (conf/local.toml's inputs) into a fresh warehouse of its own, in one Spark
session set up as a test process's (local[1], in-memory catalog, one shuffle partition): the first runs warm
the JVM, the last is recorded (`jcmd JFR.start settings=profile`; recording costs CPU itself, so compare its
shares, not its seconds). benchmarks/run_overhead.py counts jobs, queries and commits per stage; this tells
what the JVM spends them on. Needs the JDK's `jcmd` and `jfr` on PATH.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

_TICKS = os.sysconf("SC_CLK_TCK")

#: Kinds of driver work, by a frame their samples hold (checked in this order: a listing job's tasks are
#: executor tasks, a listing's closure cleaning is the listing's).
KINDS = (
    ("executor tasks", ("Executor$TaskRunner.run",)),
    ("Delta file listing in the optimizer (PrepareDeltaScan)", ("PrepareDeltaScan",)),
    ("Delta commits", ("OptimisticTransactionImpl",)),
    ("closure cleaning and its serialization check", ("ClosureCleaner",)),
    ("scheduling and task serialization", ("DAGScheduler", "TaskSetManager", "TaskSchedulerImpl")),
    ("analysis", ("assertAnalyzed", "Analyzer")),
    ("other optimizer rules", ("optimizedPlan", "Optimizer")),
    ("physical planning", ("sparkPlan", "executedPlan", "QueryPlanner")),
    ("Delta snapshots and log", ("SnapshotManagement", "DeltaLog")),
    ("py4j", ("py4j",)),
)


def _stat(path: str) -> list[str]:
    return Path(path).read_text().rsplit(")", 1)[1].split()


def _cpu_seconds(path: str) -> float:
    fields = _stat(path)
    return (int(fields[11]) + int(fields[12])) / _TICKS


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = collections.defaultdict(list)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError):
                children[int(_stat(f"/proc/{entry}/stat")[1])].append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children[pid]
    return found


def _processes() -> dict[int, tuple[str, float]]:
    """This process and its descendants: (kind, CPU seconds so far)."""
    out = {}
    for pid in _descendants(os.getpid()):
        try:
            argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
            kind = ("driver python" if pid == os.getpid() else
                    "driver JVM" if argv0.endswith("java") else "python workers")
            out[pid] = (kind, _cpu_seconds(f"/proc/{pid}/stat"))
        except OSError:
            pass
    return out


def _jvm_pid() -> int:
    return next(pid for pid, (kind, _) in _processes().items() if kind == "driver JVM")


def _threads(jvm: int) -> dict[tuple[str, str], float]:
    out = {}
    for tid in os.listdir(f"/proc/{jvm}/task"):
        try:
            name = Path(f"/proc/{jvm}/task/{tid}/comm").read_text().strip()
            out[(tid, name)] = _cpu_seconds(f"/proc/{jvm}/task/{tid}/stat")
        except OSError:
            pass
    return out


def _kinds(jfr_file: Path) -> tuple[int, collections.Counter[str]]:
    """Execution samples of the recording by kind of work (KINDS)."""
    text = subprocess.run(["jfr", "print", "--stack-depth", "300", "--events", "jdk.ExecutionSample", str(jfr_file)],
                          check=True, capture_output=True, text=True).stdout
    samples = text.split("jdk.ExecutionSample {")[1:]
    kinds: collections.Counter[str] = collections.Counter()
    for sample in samples:
        frames = "\n".join(re.findall(r"^\s+([\w$.<>/]+)\(", sample, re.M))
        kinds[next((name for name, marks in KINDS if any(m in frames for m in marks)), "other")] += 1
    return len(samples), kinds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="fresh runs in one session, the last profiled (default 3)")
    parser.add_argument("--keep-jfr", default=None, help="where to keep the recording (default: a temp file)")
    args = parser.parse_args(argv)

    from jobs.common.config import load_job_config
    from jobs.common.session import LOCAL_GC_OPTION, LOCAL_JIT_OPTIONS, build_session, log4j2_option
    from jobs.nightly import run_nightly

    os.chdir(ROOT)
    work = Path(tempfile.mkdtemp(prefix="driver-profile-"))
    base = load_job_config(str(ROOT / "conf" / "local.toml"))
    spark_config = dataclasses.replace(
        base.spark, master="local[1]", catalog="in-memory", metastore_dir="", shuffle_partitions=1,
        warehouse_dir=str(work / "spark-warehouse"), show_progress=False,
        extra={**base.spark.extra, "spark.ui.enabled": "false", "spark.databricks.delta.snapshotPartitions": "1",
               "spark.default.parallelism": "1",
               # the session's own driver options, and stacks deep enough to reach the frame that names the
               # work (JFR keeps 64 frames by default: Catalyst's and Delta's nest deeper than that)
               "spark.driver.extraJavaOptions": " ".join([
                   LOCAL_GC_OPTION, *LOCAL_JIT_OPTIONS, *log4j2_option(), "-XX:FlightRecorderOptions:stackdepth=400"])})

    def config(n: int) -> object:
        return dataclasses.replace(
            base, spark=spark_config,
            tables=dataclasses.replace(base.tables, database=f"driver_profile_{n}", location=str(work / f"tables_{n}")),
            report=dataclasses.replace(base.report, path=str(work / f"report_{n}.html")))

    spark = build_session(config(0))  # type: ignore[arg-type]
    jvm = _jvm_pid()
    recording = Path(args.keep_jfr) if args.keep_jfr else work / "last-run.jfr"
    for n in range(args.runs):
        last = n == args.runs - 1
        if last:
            subprocess.run(["jcmd", str(jvm), "JFR.start", "name=driver_profile", "settings=profile"],
                           check=True, capture_output=True)
        before, threads_before, t0 = _processes(), _threads(jvm), time.monotonic()
        run_nightly(spark, config(n))  # type: ignore[arg-type]
        seconds = time.monotonic() - t0
        after, threads_after = _processes(), _threads(jvm)
        if last:
            subprocess.run(["jcmd", str(jvm), "JFR.dump", "name=driver_profile", f"filename={recording}"],
                           check=True, capture_output=True)
        by_kind: dict[str, float] = collections.defaultdict(float)
        for pid, (kind, cpu) in after.items():
            by_kind[kind] += cpu - before.get(pid, (kind, 0.0))[1]
        groups: dict[str, float] = collections.defaultdict(float)
        for key, cpu in threads_after.items():
            groups[re.sub(r"[-#]?\d+", "#", key[1])] += cpu - threads_before.get(key, 0.0)
        label = "profiled (recording costs CPU)" if last else ("cold" if n == 0 else "warm")
        print(f"run {n + 1} ({label}): {seconds:.1f} s wall; CPU "
              + ", ".join(f"{k} {v:.1f} s" for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1])))
        busiest = sorted(groups.items(), key=lambda kv: -kv[1])[:8]
        print("  JVM threads: " + ", ".join(f"{k} {v:.1f} s" for k, v in busiest if v >= 0.1))
    spark.stop()
    total, kinds = _kinds(recording)
    print(f"\nthe last run's JVM execution samples ({total}), by kind of work ({recording}):")
    for name, count in kinds.most_common():
        print(f"  {100 * count / max(total, 1):5.1f} %  {name}")
    print(f"\nload average (1 min): {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
