"""Share (KIP-932) and streams (KIP-1071) groups on a real Kafka 4.3.1 broker: the records their coordinator
writes to `__consumer_offsets` (types 10-15, 17 and 19-23) decode field for field as Kafka's own
DumpLogSegments prints them, and re-encode to the broker's bytes.

Kafka's console share consumer (`kafka-console-share-consumer.sh`) joins share group `share-g`, is assigned
the topic's partitions, times out and leaves: member metadata, the group epoch, the target assignment, the
member's current assignment, the share-state partition metadata (initializing, then initialized), and the
leaving member's tombstones. A streams-group member (jvm/streams-group-member: Kafka's own
StreamsGroupHeartbeat request classes over a socket, as Kafka Streams would send them) joins `streams-g`
with a topology, reconciles its tasks and leaves. This broker is the test's own, so the shared broker's
scenarios and their histories are not touched.
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
from jvm_oracle.harness import ROOT, run_java
from tests.kafka_testbed.broker import KafkaBroker, java_command
from tests.kafka_testbed.compare import compare_segment
from tests.kafka_testbed.dumplog import dump_segments

pytestmark = pytest.mark.integration

SHARE_GROUP = "share-g"
TOPIC = "shared-topic"
STREAMS_GROUP = "streams-g"
SOURCE = "words"
CHANGELOG = "streams-g-store-changelog"
STREAMS_MEMBER = ROOT / "jvm" / "streams-group-member" / "src" / "main" / "java"


@dataclass
class GroupsRun:
    segments: list[Path]
    records: list[cc.Record]  # every decoded record of the snapshot, in log order per partition

    def of(self, group: str) -> list[cc.Record]:
        return [r for r in self.records if r.record_type >= 3 and r.key.group_id == group]


def _tool(broker: KafkaBroker, main_class: str, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(java_command(main_class, "--bootstrap-server", broker.bootstrap_servers, *args),
                          check=False, input=stdin, capture_output=True, text=True, timeout=180)
    if done.returncode != 0:
        raise RuntimeError(f"{main_class} {args} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


@pytest.fixture(scope="module")
def groups_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GroupsRun]:
    # No initial rebalance delay for streams groups (3 s by default): the member is assigned at once.
    broker = KafkaBroker(overrides={"group.streams.initial.rebalance.delay.ms": "0"})
    try:
        broker.start()
        for topic in (TOPIC, SOURCE, CHANGELOG):
            _tool(broker, "org.apache.kafka.tools.TopicCommand", "--create", "--topic", topic, "--partitions", "2")
        _tool(broker, "org.apache.kafka.tools.ConsoleProducer", "--topic", TOPIC,
              stdin="".join(f"m{i}\n" for i in range(10)))
        # share.auto.offset.reset is "latest": the consumer gets no message and leaves after its timeout,
        # which is the whole group lifecycle this test needs.
        _tool(broker, "org.apache.kafka.tools.consumer.ConsoleShareConsumer", "--topic", TOPIC,
              "--group", SHARE_GROUP, "--max-messages", "1", "--timeout-ms", "15000")
        run_java(STREAMS_MEMBER, "kafka", "cgh.oracle.StreamsGroupMember", "127.0.0.1", str(broker.port),
                 STREAMS_GROUP, SOURCE, CHANGELOG, "6", timeout=180)
        snapshot = tmp_path_factory.mktemp("group_segments")
        segments = []
        for segment in broker.consumer_offsets_segments(with_data_only=True):
            target = snapshot / segment.parent.name / segment.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(segment, target)
            segments.append(target)
        records = [cc.decode_record(e.key, e.value) for s in segments for e in cc.read_segment(str(s))
                   if not e.is_control and e.key is not None]
        yield GroupsRun(segments, records)
    finally:
        broker.cleanup()


def test_every_record_matches_kafkas_dump_log_segments(groups_run: GroupsRun) -> None:
    dumped = dump_segments(groups_run.segments)
    compared, problems = 0, []
    for path in groups_run.segments:
        n, p = compare_segment(str(path), dumped[path.resolve()].records)
        compared, problems = compared + n, problems + p
    assert problems == []
    assert {r.record_type for r in groups_run.of(SHARE_GROUP) if r.value is not None} == {10, 11, 12, 13, 14, 15}
    assert {r.record_type for r in groups_run.of(STREAMS_GROUP) if r.value is not None} == {17, 19, 20, 21, 22, 23}
    assert compared >= len(groups_run.records)


def test_the_share_groups_lifecycle_field_by_field(groups_run: GroupsRun) -> None:
    mine = groups_run.of(SHARE_GROUP)
    members = {r.key.member_id for r in mine if r.record_type == 10}
    assert len(members) == 1
    (member,) = members
    joined = next(r.value for r in mine if r.record_type == 10 and r.value is not None)
    assert isinstance(joined, m.ShareGroupMemberMetadataValue)
    assert (joined.client_id, joined.subscribed_topic_names) == ("console-share-consumer", (TOPIC,))
    state = [r.value for r in mine if r.record_type == 15]
    topic_id = state[0].initializing_topics[0].topic_id
    assert [(tuple(s.initializing_topics), tuple(s.initialized_topics)) for s in state][:2] == [
        ((m.TopicPartitionsInfo(topic_id, TOPIC, (0, 1)),), ()),
        ((), (m.TopicPartitionsInfo(topic_id, TOPIC, (0, 1)),))]
    assigned = [r.value for r in mine if r.record_type == 14 and r.value is not None]
    assert assigned[-1].assigned_partitions == (m.TopicIdPartitions(topic_id, (0, 1)),)
    epochs = [r.value.epoch for r in mine if r.record_type == 11]
    targets = [r.value.assignment_epoch for r in mine if r.record_type == 12]
    assert epochs == sorted(epochs) and set(targets) <= set(epochs)
    # The member leaves: its current assignment, target assignment and metadata are deleted.
    assert [r.record_type for r in mine if r.value is None] == [14, 13, 10]
    assert all(r.key.member_id == member for r in mine if r.record_type in (10, 13, 14))


def test_the_streams_groups_lifecycle_field_by_field(groups_run: GroupsRun) -> None:
    mine = groups_run.of(STREAMS_GROUP)
    joined = next(r.value for r in mine if r.record_type == 19 and r.value is not None)
    assert isinstance(joined, m.StreamsGroupMemberMetadataValue)
    assert (joined.client_id, joined.topology_epoch, joined.user_endpoint, joined.client_tags) == (
        "cgh-streams-member", 1, m.Endpoint("localhost", 8080), (m.KeyValue("zone", "z1"),))
    (topology,) = [r.value for r in mine if r.record_type == 23]
    assert topology.epoch == 1
    (sub,) = topology.subtopologies
    assert (sub.subtopology_id, sub.source_topics, sub.repartition_sink_topics) == ("0", (SOURCE,), ())
    (changelog,) = sub.state_changelog_topics
    assert (changelog.name, changelog.topic_configs) == (CHANGELOG, (m.KeyValue("cleanup.policy", "compact"),))
    group = [r.value for r in mine if r.record_type == 17]
    assert {g.validated_topology_epoch for g in group} == {1}  # tagged field 0
    assert [r.value.active_tasks for r in mine if r.record_type == 21 and r.value is not None][-1] == (
        m.TaskIds("0", (0, 1)),)
    current = [r.value for r in mine if r.record_type == 22 and r.value is not None][-1]
    assert [(t.subtopology_id, t.partitions) for t in current.active_tasks] == [("0", (0, 1))]
    assert current.active_tasks[0].assignment_epochs == (current.member_epoch,) * 2  # tagged field 0
    assert [r.record_type for r in mine if r.value is None] == [22, 21, 19]


def test_encoding_gives_back_the_brokers_bytes(groups_run: GroupsRun) -> None:
    checked = 0
    for segment in groups_run.segments:
        for e in cc.read_segment(str(segment)):
            if e.is_control or e.key is None or not 9 <= int.from_bytes(e.key[:2], "big") <= 23:
                continue
            assert cc.encode_record(cc.decode_record(e.key, e.value)) == (e.key, e.value)
            checked += 1
    assert checked >= 20
