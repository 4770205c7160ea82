"""A kafka-python group member in its own process, so a scenario can SIGKILL it.

A member killed in-process would still close its sockets; a real crash (OOM kill, pod eviction) does
not, and the coordinator only notices when the session times out. The scenario driver therefore starts
this module with `python -m tests.kafka_testbed.member ...` and kills it with SIGKILL.

The member polls forever, commits automatically, logs kafka-python's INFO lines to `--log-file`, and
prints one JSON line on stdout each time its view of the group changes:
`{"generation": 3, "member_id": "...", "protocol": "range", "stable": true, "assignment": [["t", 0]]}`.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time

from kafka import KafkaConsumer
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka.coordinator.base import MemberState

ASSIGNORS = {
    "range": RangePartitionAssignor,
    "roundrobin": RoundRobinPartitionAssignor,
    "sticky": StickyPartitionAssignor,
}

PYTHON_LOG_FORMAT = "[%(asctime)s] %(levelname)s [%(threadName)s] %(message)s (%(name)s)"


def member_view(consumer: KafkaConsumer) -> dict[str, object]:
    """What this member believes about its group right now (kafka-python keeps it on the coordinator)."""
    coordinator = consumer._coordinator  # kafka-python has no public accessor for the generation
    generation = coordinator._generation
    stable = coordinator.state == MemberState.STABLE and not coordinator.need_rejoin()
    return {
        "generation": generation.generation_id,
        "member_id": generation.member_id,
        "protocol": generation.protocol,
        "stable": bool(stable),
        "assignment": sorted([tp.topic, tp.partition] for tp in consumer.assignment()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bootstrap-servers", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--client-id", required=True)
    parser.add_argument("--topic", action="append", required=True)
    parser.add_argument("--assignor", default="range", choices=sorted(ASSIGNORS))
    parser.add_argument("--session-timeout-ms", type=int, default=6000)
    parser.add_argument("--heartbeat-interval-ms", type=int, default=1000)
    parser.add_argument("--max-poll-interval-ms", type=int, default=60000)
    parser.add_argument("--log-file", required=True)
    args = parser.parse_args(argv)

    handler = logging.FileHandler(args.log_file)
    handler.setFormatter(logging.Formatter(PYTHON_LOG_FORMAT))
    logging.getLogger("kafka").addHandler(handler)
    logging.getLogger("kafka").setLevel(logging.INFO)

    consumer = KafkaConsumer(
        *args.topic,
        bootstrap_servers=args.bootstrap_servers,
        group_id=args.group,
        client_id=args.client_id,
        partition_assignment_strategy=[ASSIGNORS[args.assignor]],
        session_timeout_ms=args.session_timeout_ms,
        heartbeat_interval_ms=args.heartbeat_interval_ms,
        max_poll_interval_ms=args.max_poll_interval_ms,
        auto_offset_reset="earliest",
        enable_auto_commit=True,
        auto_commit_interval_ms=2000,
    )
    last: dict[str, object] | None = None
    while True:  # runs until killed: that is the point of this process
        consumer.poll(timeout_ms=200)
        view = member_view(consumer)
        if view != last:
            print(json.dumps(view), flush=True)
            last = view
        time.sleep(0.05)


if __name__ == "__main__":
    sys.exit(main())
