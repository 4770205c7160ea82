"""Benchmark: log lines/s of the logs stage (read -> raw_log_lines -> coordinator_events) on local[2].

    python -m benchmarks.logs_bench [--lines 16000000] [--files 8] [--coordinator-share 0.05] [--archive-all]
                                    [--data DIR] [--runs 3]

Generates broker and client logs mixing coordinator lines of several Kafka versions (old Scala
coordinator 2.x/3.x, new Java coordinator 4.x, classic and KIP-848 clients) with unrelated lines and
stack traces, then times `run_logs` into fresh Delta tables, `--runs` times in one Spark session. Lines/s
counts physical lines read. The first run is cold (JIT compilation, Python workers starting, code
generation); the runs after it are what a warm JVM does, and the summary line gives the median of those.
The default log (16M lines, 3.1 GB in 8 files) is large enough that the fixed cost of a run (four Spark
jobs, three Delta commits) is a small part of it. The 1-minute load average is printed with each figure:
on a shared machine a figure means little without it. `--data` keeps the generated files in DIR and reuses
them when they are already there; `--archive-all` archives every entry in raw_log_lines instead of the
coordinator-looking ones.

Each figure also gives the CPU seconds the run used in this process tree (driver, JVM, Python workers;
read from /proc on Linux), which the other users of a shared machine change far less than the wall
time: on two cores, 1M lines/s needs the stage to use at most 2 CPU seconds per million lines.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from jobs.common.config import Config, LogSource, SparkConfig, TablesConfig, parse_config
from jobs.common.delta_io import Tables
from jobs.common.session import build_session
from jobs.logs.stage import run_logs
from schemas.logs import COORDINATOR_EVENTS, LOG_FILE_READS, RAW_LOG_LINES

GC = "(kafka.coordinator.group.GroupCoordinator)"
NGMM = "(org.apache.kafka.coordinator.group.GroupMetadataManager)"
CC = "(org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)"
CMM = "(org.apache.kafka.clients.consumer.internals.ConsumerMembershipManager)"

COORDINATOR_TEMPLATES = [
    "INFO [GroupCoordinator 1]: Preparing to rebalance group g{g} in state PreparingRebalance with old generation"
    " {n} (__consumer_offsets-{p}) (reason: Adding new member consumer-{m} with group instance id None) " + GC,
    "INFO [GroupCoordinator 1]: Stabilized group g{g} generation {n} (__consumer_offsets-{p}) with 3 members " + GC,
    "INFO [GroupCoordinator 1]: Member consumer-{m} in group g{g} has failed, removing it from the group " + GC,
    "INFO [GroupCoordinator 1]: Preparing to rebalance group g{g} with old generation {n} (__consumer_offsets-{p})"
    " " + GC,
    "INFO [GroupCoordinator id=1 topic=__consumer_offsets partition={p}] Stabilized group g{g} generation {n}"
    " with 2 members. " + NGMM,
    "INFO [GroupCoordinator id=1 topic=__consumer_offsets partition={p}] Preparing to rebalance group g{g} in state"
    " PreparingRebalance with old generation {n} (reason: explicit `LeaveGroup` request for (consumer-{m})"
    " members.). " + NGMM,
    "INFO [Consumer clientId=consumer-g{g}-1, groupId=g{g}] Request joining group due to: group is already"
    " rebalancing " + CC,
    "INFO [Consumer clientId=consumer-g{g}-1, groupId=g{g}] Member m{m} with epoch {n} transitioned from"
    " RECONCILING to ACKNOWLEDGING. " + CMM,
    "INFO [GroupCoordinator 1]: Frobnicated group g{g} " + GC,  # a coordinator line no catalogue row knows
]
UNRELATED_TEMPLATES = [
    "INFO [ReplicaFetcher replicaId=1, leaderId={g}, fetcherId=0] Truncating partition orders-{p} with"
    " TruncationState(offset={n}, completed=true) due to leader epoch and offset EpochEndOffset"
    " (kafka.server.ReplicaFetcherThread)",
    "INFO [LocalLog partition=orders-{p}, dir=/var/lib/kafka/data] Rolled new log segment at offset {n} in 3 ms."
    " (kafka.log.LocalLog)",
    "INFO [Consumer clientId=consumer-g{g}-1, groupId=g{g}] Setting offset for partition orders-{p} to the"
    " committed offset FetchPosition{{offset={n}, offsetEpoch=Optional.empty}} (org.apache.kafka.clients"
    ".consumer.internals.ConsumerUtils)",
    "INFO [Controller id=1] Processed request for node {g} in {n} ms (kafka.controller.KafkaController)",
    "WARN [SocketServer listenerType=BROKER, nodeId=1] Unexpected error from /10.0.{g}.{p} (channelId=x);"
    " closing connection (org.apache.kafka.common.network.Selector)",
]


def generate(path: Path, lines: int, coordinator_share: float, seed: int) -> int:
    rng = random.Random(seed)
    start = dt.datetime(2024, 6, 1)
    written = 0
    with open(path, "w", encoding="utf-8") as handle:
        buffer: list[str] = []
        while written < lines:
            ts = start + dt.timedelta(milliseconds=written * 7)
            stamp = f"[{ts:%Y-%m-%d %H:%M:%S},{ts.microsecond // 1000:03d}] "
            values = {"g": rng.randrange(200), "n": rng.randrange(1, 5000), "p": rng.randrange(50),
                      "m": rng.randrange(10**6)}
            if rng.random() < coordinator_share:
                buffer.append(stamp + rng.choice(COORDINATOR_TEMPLATES).format(**values))
                written += 1
            elif rng.random() < 0.002:
                buffer.append(stamp + "ERROR Error processing request (kafka.server.KafkaApis)")
                buffer.append("java.io.IOException: Connection reset by peer")
                buffer.extend(f"\tat sun.nio.ch.SocketDispatcher.read0(Native Method) #{i}" for i in range(8))
                written += 10
            else:
                buffer.append(stamp + rng.choice(UNRELATED_TEMPLATES).format(**values))
                written += 1
            if len(buffer) >= 100_000:
                handle.write("\n".join(buffer) + "\n")
                buffer.clear()
        if buffer:
            handle.write("\n".join(buffer) + "\n")
    return written


def tree_cpu_seconds() -> float | None:
    """CPU seconds (user + system, with reaped children) of this process and its descendants; None where
    /proc is missing."""
    try:
        ticks = os.sysconf("SC_CLK_TCK")
        parents: dict[int, int] = {}
        used: dict[int, int] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry)] = int(fields[1])
            used[int(entry)] = sum(int(v) for v in fields[11:15])  # utime, stime, cutime, cstime
    except (OSError, ValueError):
        return None
    tree, frontier = {os.getpid()}, [os.getpid()]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent and pid not in tree]
        tree.update(children)
        frontier.extend(children)
    return sum(used.get(pid, 0) for pid in tree) / ticks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=16_000_000, help="physical lines in all files together")
    parser.add_argument("--files", type=int, default=8, help="log files (one broker each)")
    parser.add_argument("--coordinator-share", type=float, default=0.05)
    parser.add_argument("--keep", action="store_true", help="keep the generated files and tables")
    parser.add_argument("--archive-all", action="store_true", help="archive every entry, not only coordinator ones")
    parser.add_argument("--data", default=None, help="directory for the generated files (reused when present)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs, each into fresh tables (the first is cold)")
    parser.add_argument("--driver-memory", default="2g", help="local[2] JVM heap (--archive-all caches every line)")
    args = parser.parse_args(argv)

    root = Path(tempfile.mkdtemp(prefix="logs-bench-"))
    data = Path(args.data) if args.data else root / "data"
    marker = data / f"generated-{args.lines}-{args.files}-{args.coordinator_share}"
    t0 = time.monotonic()
    if not marker.exists():
        for i in range(args.files):
            (data / f"broker-{i}").mkdir(parents=True, exist_ok=True)
            generate(data / f"broker-{i}" / "server.log.1", args.lines // args.files, args.coordinator_share, i)
        marker.touch()
    size = sum(p.stat().st_size for p in data.rglob("server.log.1"))
    print(f"{args.files} files, {size / 1e6:.0f} MB, ready in {time.monotonic() - t0:.1f}s")

    config = Config(
        tables=TablesConfig(database="logs_bench", location=str(root / "tables")),
        spark=SparkConfig(
            master="local[2]", app_name="logs-bench", catalog="in-memory", warehouse_dir=str(root / "wh"),
            metastore_dir="", shuffle_partitions=2, show_progress=False,
            jars_dir=parse_config({"sources": {"mode": "none"}}).spark.jars_dir,
            extra={"spark.ui.enabled": "false", "spark.driver.memory": args.driver_memory},
        ),
    )
    spark = build_session(config)
    try:
        sources = [LogSource("bench", f"broker-{i}", (str(data / f"broker-{i}" / "server.log*"),), "UTC", i)
                   for i in range(args.files)]
        rates: list[float] = []
        for run in range(args.runs):
            tables = Tables(spark, f"logs_bench_{run}", str(root / f"tables-{run}"))
            tables.ensure_database()
            for spec in (RAW_LOG_LINES, COORDINATOR_EVENTS, LOG_FILE_READS):
                tables.ensure(spec)  # table creation is not the stage's work
            load_before = os.getloadavg()[0]
            cpu_before = tree_cpu_seconds()
            t0 = time.monotonic()
            result = run_logs(tables, sources, f"bench-run-{run}", dt.datetime(2024, 6, 2),
                              archive_all_entries=args.archive_all)
            seconds = time.monotonic() - t0
            cpu_after = tree_cpu_seconds()
            print(result.format().splitlines()[0])
            rate = result.lines_read / seconds
            rates.append(rate)
            print(f"logs stage: {result.lines_read:,} lines in {seconds:.1f}s = {rate:,.0f} lines/s"
                  f" (local[2], {'every entry' if args.archive_all else 'coordinator entries'} archived,"
                  f" {result.events:,} events; load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after)",
                  flush=True)
            if cpu_before is not None and cpu_after is not None:
                cpu = cpu_after - cpu_before
                print(f"  CPU: {cpu:.1f} s in the driver, JVM and Python workers"
                      f" = {result.lines_read / cpu:,.0f} lines per CPU second", flush=True)
        if len(rates) > 1:
            warm = sorted(rates[1:])
            print(f"summary: cold run {rates[0]:,.0f} lines/s; warm runs median {warm[len(warm) // 2]:,.0f} lines/s"
                  f" (range {warm[0]:,.0f}-{warm[-1]:,.0f}, {len(warm)} runs)", flush=True)
    finally:
        spark.stop()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
