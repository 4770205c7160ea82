"""Capture a sample dataset from a real broker: `python -m tests.kafka_testbed.capture --out samples/kafka-<v>`.

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
    for key in ("offsets.topic.num.partitions", "offsets.topic.replication.factor", "offsets.topic.segment.bytes",
                "group.initial.rebalance.delay.ms", "group.min.session.timeout.ms",
                "group.consumer.session.timeout.ms", "group.consumer.heartbeat.interval.ms",
                "log.cleaner.min.compaction.lag.ms"):
        lines.append(f"| `{key}` | `{broker.settings[key]}` |")
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=None, help="default: samples/kafka-<version>")
    parser.add_argument("--scenario", action="append", choices=sorted(SCENARIOS), help="default: all")
    parser.add_argument("--jar-set", default=DEFAULT_JAR_SET, help="jvm/<jar set>/pom.xml: kafka (4.x), kafka-3")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(threadName)s %(message)s")
    logging.getLogger("kafka").propagate = False  # kafka-python goes to the client log file only
    # A SIGTERM (CI time-out, kill) must still run the finally blocks that stop the broker.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    out = (args.out or ROOT / "samples" / f"kafka-{kafka_version(args.jar_set)}").resolve()
    capture(out, args.scenario, args.jar_set)
    return 0


if __name__ == "__main__":
    sys.exit(main())
