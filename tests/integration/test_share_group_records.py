"""A share group (KIP-932) on a real Kafka 4.3.1 broker: the records its coordinator writes to
`__consumer_offsets` (types 10-15) decode field for field as Kafka's own DumpLogSegments prints them.

Kafka's console share consumer (`kafka-console-share-consumer.sh`) joins group `share-g`, is assigned the
topic's partitions, times out and leaves: member metadata, the group epoch, the target assignment, the
member's current assignment, the share-state partition metadata (initializing, then initialized), and the
tombstones of the leaving member. This broker is the test's own, so the shared broker's scenarios and their
histories are not touched.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import coordinator_core as cc
from coordinator_core import messages as m
from tests.kafka_testbed.broker import KafkaBroker, java_command
from tests.kafka_testbed.compare import compare_segment
from tests.kafka_testbed.dumplog import dump_segments

pytestmark = pytest.mark.integration

GROUP = "share-g"
TOPIC = "shared-topic"


@dataclass
class ShareRun:
    segments: list[Path]
    records: list[cc.Record]  # every decoded record of the snapshot, in log order per partition


def _tool(broker: KafkaBroker, main_class: str, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(java_command(main_class, "--bootstrap-server", broker.bootstrap_servers, *args),
                          input=stdin, capture_output=True, text=True, timeout=180)
    if done.returncode != 0:
        raise RuntimeError(f"{main_class} {args} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


@pytest.fixture(scope="module")
def share_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ShareRun]:
    broker = KafkaBroker()
    try:
        broker.start()
        _tool(broker, "org.apache.kafka.tools.TopicCommand", "--create", "--topic", TOPIC, "--partitions", "2")
        _tool(broker, "org.apache.kafka.tools.ConsoleProducer", "--topic", TOPIC,
              stdin="".join(f"m{i}\n" for i in range(10)))
        # share.auto.offset.reset is "latest": the consumer gets no message and leaves after its timeout,
        # which is the whole group lifecycle this test needs.
        _tool(broker, "org.apache.kafka.tools.consumer.ConsoleShareConsumer", "--topic", TOPIC, "--group", GROUP,
              "--max-messages", "1", "--timeout-ms", "15000")
        snapshot = tmp_path_factory.mktemp("share_segments")
        segments = []
        for segment in broker.consumer_offsets_segments(with_data_only=True):
            target = snapshot / segment.parent.name / segment.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(segment, target)
            segments.append(target)
        records = [cc.decode_record(e.key, e.value) for s in segments for e in cc.read_segment(str(s))
                   if not e.is_control and e.key is not None]
        yield ShareRun(segments, records)
    finally:
        broker.cleanup()


def test_every_record_matches_kafkas_dump_log_segments(share_run: ShareRun) -> None:
    dumped = dump_segments(share_run.segments)
    compared, problems = 0, []
    for path in share_run.segments:
        n, p = compare_segment(str(path), dumped[path.resolve()].records)
        compared, problems = compared + n, problems + p
    assert problems == []
    kinds = {r.record_type for r in share_run.records if r.value is not None and r.key.group_id == GROUP}
    assert kinds == {10, 11, 12, 13, 14, 15}
    assert compared >= len(share_run.records)


def test_the_share_groups_lifecycle_field_by_field(share_run: ShareRun) -> None:
    mine = [r for r in share_run.records if 10 <= r.record_type <= 15 and r.key.group_id == GROUP]
    members = {r.key.member_id for r in mine if r.record_type == 10}
    assert len(members) == 1
    (member,) = members
    joined = next(r.value for r in mine if r.record_type == 10 and r.value is not None)
    assert isinstance(joined, m.ShareGroupMemberMetadataValue)
    assert (joined.client_id, joined.subscribed_topic_names) == ("console-share-consumer", (TOPIC,))
    state = [r.value for r in mine if r.record_type == 15]
    topic_id = state[0].initializing_topics[0].topic_id
    assert [(tuple(state.initializing_topics), tuple(state.initialized_topics)) for state in state][:2] == [
        ((m.TopicPartitionsInfo(topic_id, TOPIC, (0, 1)),), ()),
        ((), (m.TopicPartitionsInfo(topic_id, TOPIC, (0, 1)),))]
    assigned = [r.value for r in mine if r.record_type == 14 and r.value is not None]
    assert assigned[-1].assigned_partitions == (m.TopicIdPartitions(topic_id, (0, 1)),)
    epochs = [r.value.epoch for r in mine if r.record_type == 11]
    targets = [r.value.assignment_epoch for r in mine if r.record_type == 12]
    assert epochs == sorted(epochs) and set(targets) <= set(epochs)
    # The member leaves: its current assignment, target assignment and metadata are deleted.
    tombstones = [r.record_type for r in mine if r.value is None]
    assert tombstones == [14, 13, 10]
    assert all(r.key.member_id == member for r in mine if r.record_type in (10, 13, 14))


def test_encoding_gives_back_the_brokers_bytes(share_run: ShareRun) -> None:
    checked = 0
    for segment in share_run.segments:
        for e in cc.read_segment(str(segment)):
            if e.is_control or e.key is None or not 9 <= int.from_bytes(e.key[:2], "big") <= 15:
                continue
            assert cc.encode_record(cc.decode_record(e.key, e.value)) == (e.key, e.value)
            checked += 1
    assert checked >= 9
