"""Capture a sample dataset from a real broker: `python -m tests.kafka_testbed.capture --out samples/kafka-<v>`.

With `--cluster`, from a three-node cluster instead (tests/kafka_testbed/cluster.py): each node's copy of
`__consumer_offsets` and its server.log under `broker-<id>/` (see `cluster_readme`).

Starts a fresh single-node broker (tests/kafka_testbed/broker.py), runs every scenario
(tests/kafka_testbed/scenarios.py), stops the broker cleanly, and copies into the output directory:

* `__consumer_offsets-<N>/<base offset>.log` for every partition that holds data (non-empty segments
  only; index files are not needed to read a segment);
* `broker/server.log` (the group coordinator's lines, stock layout, UTC);
* `clients/*.log`: the Java consumers' own INFO logs (stock layout) and kafka-python's log;
* `scenarios.json`: what each scenario did and the history it expects (the tests' expected values);
* `README.md`: Kafka version, clients, scenarios, when, and how to re-capture.

This sample is the project's embedded default input and the oracle tests' fixed data set, so the
command refuses to write more than MAX_SAMPLE_BYTES.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any

from .broker import DEFAULT_JAR_SET, ROOT, KafkaBroker, kafka_version
from .cluster import CLUSTER_JVM_OPTIONS, KafkaCluster
from .scenarios import SCENARIOS, run_scenarios

MAX_SAMPLE_BYTES = 5 * 1024 * 1024


def copy_segments(broker: KafkaBroker, out: Path) -> list[Path]:
    """Copy the non-empty `__consumer_offsets` segments, keeping the `__consumer_offsets-N/` layout."""
    copied = []
    for segment in broker.consumer_offsets_segments(with_data_only=True):
        target = out / segment.parent.name / segment.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(segment, target)
        copied.append(target)
    return copied


def copy_logs(broker: KafkaBroker, client_log_dir: Path, out: Path) -> list[Path]:
    copied = []
    (out / "broker").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(broker.server_log, out / "broker" / "server.log")
    copied.append(out / "broker" / "server.log")
    (out / "clients").mkdir(parents=True, exist_ok=True)
    for log_file in sorted(client_log_dir.glob("*.log")):
        shutil.copyfile(log_file, out / "clients" / log_file.name)
        copied.append(out / "clients" / log_file.name)
    return copied


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def readme(document: dict[str, Any], segments: list[Path], out: Path, captured_at: str,
           broker: KafkaBroker) -> str:
    scenarios = document["scenarios"]
    lines = [
        f"# Sample: Apache Kafka {document['kafka_version']} `__consumer_offsets` and coordinator logs",
        "",
        f"Captured {captured_at} by `python -m tests.kafka_testbed.capture --out {_shown(out)}` "
        "from a single-node KRaft broker (combined broker + controller, loopback only) assembled from the "
        f"Maven Central jars of Apache Kafka {document['kafka_version']} (`jvm/{broker.jar_set}/pom.xml`). Every byte "
        "here was written by that broker or its clients; nothing is synthesized.",
        "",
        "## Contents",
        "",
        f"* `__consumer_offsets-N/*.log`: {len(segments)} non-empty segments of "
        f"{len({p.parent.name for p in segments})} partitions (50 partitions in the topic; the others held "
        "no data). Segments were rolled every 8 KiB and never compacted "
        "(`log.cleaner.min.compaction.lag.ms` one day), so the full history of every group is here.",
        f"* `broker/server.log`: the broker's {'log4j2' if broker.major >= 4 else 'log4j (reload4j)'} output in "
        "the stock layout `[%d] %p %m (%c)%n`, UTC. Its group coordinator is "
        + ("the Java one (`org.apache.kafka.coordinator.group`, 4.x default)." if broker.major >= 4 else
           "the old Scala one (`kafka.coordinator.group.GroupCoordinator`, 3.x default)."),
        "* `clients/java-*.log`: Kafka's Java consumer (console consumer) at INFO for its "
        "`org.apache.kafka.clients.consumer` loggers, stock layout, UTC. `clients/kafka-python*.log`: "
        "kafka-python's log (`[time] LEVEL [thread = client id] message (logger)`).",
        "* `scenarios.json`: what each scenario did and the history it expects, as its clients reported it "
        "(see the docstring of `tests/kafka_testbed/scenarios.py` for the cause vocabulary). Tests take "
        "their expected values from here.",
        "",
        "## Broker settings that differ from the defaults",
        "",
        "| setting | value |",
        "|---|---|",
    ]
    settings_shown = ("offsets.topic.num.partitions", "offsets.topic.replication.factor", "offsets.topic.segment.bytes",
                      "group.initial.rebalance.delay.ms", "group.min.session.timeout.ms",
                      "group.consumer.session.timeout.ms", "group.consumer.heartbeat.interval.ms",
                      "log.cleaner.min.compaction.lag.ms")
    lines.extend(f"| `{key}` | `{broker.settings[key]}` |" for key in settings_shown)
    if broker.major >= 4:
        lines.append("| `internal.segment.bytes` (topic config of `__consumer_offsets`; 4.x refuses "
                     "`segment.bytes` below 1 MiB) | `8192` |")
    lines += [
        "",
        "## Scenarios",
        "",
        "| scenario | group id | client | protocol | generations | what happened |",
        "|---|---|---|---|---:|---|",
    ]
    for name, record in scenarios.items():
        protocol = record["assignor"] or ("KIP-848 consumer" if record["group_protocol"] == "consumer" else "-")
        if record["group_protocol"] == "consumer":
            protocol = "KIP-848 (`group.protocol=consumer`)"
        lines.append(f"| {name} | `{record['group_id']}` | {record['client']} | {protocol} | "
                     f"{len(record['generations'])} | {record['description']} |")
    lines += [
        "",
        f"Clients: {', '.join(document['clients'])}. Scenarios ran concurrently, each on its own group and "
        f"topic, in {document['run_seconds']} s.",
        "",
        "## Re-capturing",
        "",
        "`scripts/bootstrap --kafka && .venv/bin/python -m tests.kafka_testbed.capture --out "
        f"{_shown(out)}` replaces this directory (member ids, timestamps and offsets change; the "
        "histories do not). The oracle test `tests/integration/test_decoder_oracle.py` checks the sample "
        "against Kafka's own DumpLogSegments.",
        "",
    ]
    return "\n".join(lines)


def capture(out: Path, names: list[str] | None = None, jar_set: str = DEFAULT_JAR_SET) -> Path:
    captured_at = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    broker = KafkaBroker(jar_set=jar_set)
    client_log_dir = broker.work_dir / "clients"
    try:
        broker.start()
        document = run_scenarios(broker.bootstrap_servers, client_log_dir, names=names, jar_set=jar_set)
        time.sleep(1.0)  # let the last auto-commits and heartbeats land before the controlled shutdown
    finally:
        broker.stop()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    segments = copy_segments(broker, out)
    copy_logs(broker, client_log_dir, out)
    (out / "scenarios.json").write_text(json.dumps(document, indent=2, sort_keys=False) + "\n")
    (out / "README.md").write_text(readme(document, segments, out, captured_at, broker))
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    broker.cleanup()
    if size > MAX_SAMPLE_BYTES:
        raise SystemExit(f"capture: sample is {size} bytes, more than {MAX_SAMPLE_BYTES}; shorten the scenarios")
    print(f"capture: wrote {out} ({size} bytes, {len(segments)} segments)")
    return out


def copy_cluster(cluster: KafkaCluster, client_log_dir: Path, out: Path) -> dict[int, list[Path]]:
    """Each node's copy of `__consumer_offsets` (non-empty segments and the partition's
    `leader-epoch-checkpoint`) under `broker-<id>/`, each node's `server.log`, and the clients' logs."""
    copied: dict[int, list[Path]] = {}
    for node_id, broker in cluster.brokers.items():
        node_out = out / f"broker-{node_id}"
        copied[node_id] = []
        for segment in broker.consumer_offsets_segments(with_data_only=True):
            target = node_out / segment.parent.name / segment.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(segment, target)
            copied[node_id].append(target)
            checkpoint = segment.parent / "leader-epoch-checkpoint"
            if checkpoint.is_file() and not (target.parent / checkpoint.name).exists():
                shutil.copyfile(checkpoint, target.parent / checkpoint.name)
        node_out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(broker.server_log, node_out / "server.log")
    (out / "clients").mkdir(parents=True, exist_ok=True)
    for log_file in sorted(client_log_dir.glob("*.log")):
        shutil.copyfile(log_file, out / "clients" / log_file.name)
    return copied


def cluster_readme(document: dict[str, Any], copied: dict[int, list[Path]], out: Path, captured_at: str,
                   cluster: KafkaCluster) -> str:
    scenarios = document["scenarios"]
    partitions = sorted({p.parent.name for paths in copied.values() for p in paths},
                        key=lambda n: int(n.rsplit("-", 1)[1]))
    lines = [
        f"# Sample: Apache Kafka {document['kafka_version']} three-broker cluster, each broker's copy of "
        "`__consumer_offsets` and its coordinator log",
        "",
        f"Captured {captured_at} by `python -m tests.kafka_testbed.capture --cluster --out {_shown(out)}` from "
        "a three-node KRaft cluster (`tests/kafka_testbed/cluster.py`: nodes 1-3, each a combined broker + "
        "controller, one controller quorum, loopback only) assembled from the Maven Central jars of Apache Kafka "
        f"{document['kafka_version']} (`jvm/{cluster.jar_set}/pom.xml`). `__consumer_offsets` has replication "
        "factor 3, so every partition is here three times, once per broker. Every byte here was written by those "
        "brokers or their clients; nothing is synthesized.",
        "",
        "## Contents",
        "",
        f"* `broker-<id>/__consumer_offsets-N/*.log`: each broker's own copy of the {len(partitions)} partitions "
        "that hold data (" + ", ".join(f"broker {n}: {len(paths)} non-empty segments"
                                       for n, paths in copied.items()) + "), with the partition's "
        "`leader-epoch-checkpoint` (the leader epochs and their start offsets, as that broker saw them). "
        "Segments were rolled every 8 KiB and never compacted.",
        "* `broker-<id>/server.log`: each broker's log4j2 output in the stock layout `[%d] %p %m (%c)%n`, UTC "
        "(the group coordinators' loads of moved partitions, expiry sweeps, fencing); the configuration dump and "
        "per-segment housekeeping loggers are at WARN (`cluster.QUIET_LOGGERS`) to keep the files small.",
        "* `clients/java-*.log`, `clients/kafka-python*.log`: the clients' logs, as in the single-broker samples.",
        "* `scenarios.json`: what each scenario did and the history it expects, as its clients and the cluster's "
        "metadata reported it (`coordinator_failovers`, `expired_offsets`, `fenced_members` for the scenarios "
        "below). Tests take their expected values from here.",
        "",
        "## Cluster settings that differ from the defaults",
        "",
        "| setting | value |",
        "|---|---|",
    ]
    settings_shown = ("offsets.topic.num.partitions", "offsets.topic.replication.factor", "default.replication.factor",
                      "min.insync.replicas", "offsets.retention.minutes", "offsets.retention.check.interval.ms",
                      "broker.session.timeout.ms", "auto.leader.rebalance.enable", "group.initial.rebalance.delay.ms",
                      "group.min.session.timeout.ms", "log.cleaner.min.compaction.lag.ms")
    lines.extend(f"| `{key}` | `{cluster.settings[key]}` |" for key in settings_shown)
    lines.append("| `internal.segment.bytes` (topic config of `__consumer_offsets`) | `8192` |")
    lines += ["", "JVMs: " + " ".join(f"`{o}`" for o in CLUSTER_JVM_OPTIONS) + ".", "",
              "## Scenarios", "",
              "| scenario | group id | client | generations | what happened |", "|---|---|---|---:|---|"]
    for name, record in scenarios.items():
        lines.append(f"| {name} | `{record['group_id']}` | {record['client']} | {len(record['generations'])} | "
                     f"{record['description']} |")
    for name, record in scenarios.items():
        for failover in record.get("coordinator_failovers", []):
            lines += ["", f"Failover ({name}): node {failover['old_coordinator']} led "
                      f"`__consumer_offsets-{failover['partition']}` and was stopped at {failover['stopped_at']}; "
                      f"node {failover['new_coordinator']} became the group's coordinator; the group was at "
                      f"generation {failover['generation_before']} and "
                      + ("rebalanced because of the move." if failover["rebalanced"] else
                         "kept it (Kafka loads a stable classic group as it was), and its next rebalance, "
                         f"generation {failover['first_generation_after']}, ran under the new coordinator.")]
    lines += [
        "",
        f"Clients: {', '.join(document['clients'])}. Scenarios ran concurrently, each on its own group and "
        f"topic, in {document['run_seconds']} s.",
        "",
        "## Re-capturing",
        "",
        f"`scripts/bootstrap --kafka && .venv/bin/python -m tests.kafka_testbed.capture --cluster --out {_shown(out)}` "
        "replaces this directory (member ids, timestamps, offsets and which node leads which partition change; "
        "the histories do not). `tests/integration/test_multibroker.py` runs the multi-broker scenarios live.",
        "",
    ]
    return "\n".join(lines)


def capture_cluster(out: Path, names: list[str] | None = None, jar_set: str = DEFAULT_JAR_SET) -> Path:
    """Capture a sample from a fresh three-node cluster (see cluster_readme for the layout)."""
    captured_at = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    cluster = KafkaCluster(jar_set=jar_set)
    client_log_dir = cluster.work_dir / "clients"
    try:
        cluster.start()
        document = run_scenarios(cluster.bootstrap_servers, client_log_dir, names=names, jar_set=jar_set,
                                 cluster=cluster, workers=6)
        time.sleep(1.0)
        cluster.wait_replicated("__consumer_offsets")
        time.sleep(2.0)  # followers fetch the last records before the shutdown
    finally:
        cluster.stop()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    copied = copy_cluster(cluster, client_log_dir, out)
    (out / "scenarios.json").write_text(json.dumps(document, indent=2, sort_keys=False) + "\n")
    (out / "README.md").write_text(cluster_readme(document, copied, out, captured_at, cluster))
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    cluster.cleanup()
    if size > MAX_SAMPLE_BYTES:
        raise SystemExit(f"capture: sample is {size} bytes, more than {MAX_SAMPLE_BYTES}; shorten the scenarios")
    print(f"capture: wrote {out} ({size} bytes, {sum(map(len, copied.values()))} segments)")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=None, help="default: samples/kafka-<version>")
    parser.add_argument("--scenario", action="append", choices=sorted(SCENARIOS), help="default: all")
    parser.add_argument("--jar-set", default=DEFAULT_JAR_SET, help="jvm/<jar set>/pom.xml: kafka (4.x), kafka-3")
    parser.add_argument("--cluster", action="store_true",
                        help="a three-node cluster and its scenarios (default out: samples/kafka-<version>-3brokers)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(threadName)s %(message)s")
    logging.getLogger("kafka").propagate = False  # kafka-python goes to the client log file only
    # A SIGTERM (CI time-out, kill) must still run the finally blocks that stop the broker.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    suffix = "-3brokers" if args.cluster else ""
    out = (args.out or ROOT / "samples" / f"kafka-{kafka_version(args.jar_set)}{suffix}").resolve()
    if args.cluster:
        capture_cluster(out, args.scenario, args.jar_set)
    else:
        capture(out, args.scenario, args.jar_set)
    return 0


if __name__ == "__main__":
    sys.exit(main())
