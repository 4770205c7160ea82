"""A librdkafka-led classic group on the real broker: its GroupMetadata records name the leader's library.

Two groups of two confluent-kafka (librdkafka) consumers each subscribe to one topic of six partitions: one
group with the range assignor and librdkafka's default client id (`rdkafka`), one with cooperative-sticky and a
client id of the user's own. The coordinator stores each generation's subscriptions and the assignment the
librdkafka leader computed; `replay_generation` must tell from those bytes alone (the client id only confirms
it where it is the default) that the leader ran librdkafka, and must replay each generation with Kafka's Java
assignor to a match, or to a mismatch it puts down to the other library, never an unexplained one (librdkafka
2.16's cooperative-sticky leader keeps partitions 3-5 in the first round after the second member joins, Java's
keeps 0-2). Each group's second member joins after the first settled, so the replays meet owned partitions and
sticky user data; what the settled generations recorded is checked against what the consumers themselves
reported they were assigned.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from confluent_kafka import Consumer, TopicPartition
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

import coordinator_core as cc
from coordinator_core.consumer_protocol import decode_member_protocol
from coordinator_core.messages import GroupMetadataKey, GroupMetadataValue
from coordinator_core.replay import GenerationReplay, replay_generation
from tests.kafka_testbed.broker import KafkaBroker, java_hash_partition

pytestmark = pytest.mark.integration

TOPIC = "rdkafka-orders"
PARTITIONS = 6
ALL_PARTITIONS = frozenset((TOPIC, p) for p in range(PARTITIONS))
OFFSETS_PARTITIONS = 50  # offsets.topic.num.partitions of the test bed broker


@dataclass(frozen=True)
class GroupSpec:
    group_id: str
    strategy: str
    client_id: str | None  # None: librdkafka's default, "rdkafka"
    named: bool            # whether the leader's client id is a library's default


DEFAULT_ID = GroupSpec("rdkafka-range", "range", None, True)
OVERRIDDEN_ID = GroupSpec("rdkafka-cooperative", "cooperative-sticky", "billing-worker", False)
GROUPS = (DEFAULT_ID, OVERRIDDEN_ID)


class Member:
    """One librdkafka consumer, and the partitions its rebalance callbacks report it owns."""

    def __init__(self, bootstrap_servers: str, spec: GroupSpec) -> None:
        config: dict[str, str | int | bool] = {
            "bootstrap.servers": bootstrap_servers,
            "group.id": spec.group_id,
            "partition.assignment.strategy": spec.strategy,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 300,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
        if spec.client_id is not None:
            config["client.id"] = spec.client_id
        self.spec = spec
        self.owned: set[tuple[str, int]] = set()
        self.consumer = Consumer(config)
        self.consumer.subscribe([TOPIC], on_assign=self._on_assign, on_revoke=self._on_revoke,
                                on_lost=self._on_revoke)

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if self.spec.strategy != "cooperative-sticky":  # eager: the whole new assignment
            self.owned.clear()
        self.owned |= {(tp.topic, tp.partition) for tp in partitions}

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.owned -= {(tp.topic, tp.partition) for tp in partitions}

    def reported(self) -> frozenset[tuple[str, int]]:
        """The partitions librdkafka says it holds, which must agree with its callbacks."""
        held = frozenset((tp.topic, tp.partition) for tp in self.consumer.assignment())
        assert held == self.owned, (self.spec.group_id, held, self.owned)
        return held


def _wait(condition: Callable[[], bool], what: str, timeout: float, step: Callable[[], None] = lambda: None) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        step()
        time.sleep(0.05)


def _stable(members: list[Member]) -> bool:
    """Every member holds partitions, and together they hold the topic's partitions once each."""
    owned = [m.owned for m in members]
    return all(owned) and sum(map(len, owned)) == PARTITIONS and set().union(*owned) == ALL_PARTITIONS


def _group_metadata(broker: KafkaBroker, group_id: str) -> list[GroupMetadataValue]:
    """The group's GroupMetadata values (tombstones left out), in log order, from the broker's segment files."""
    directory = broker.data_dir / f"__consumer_offsets-{java_hash_partition(group_id, OFFSETS_PARTITIONS)}"
    values = []
    for segment in sorted(directory.glob("*.log")):
        for entry in cc.read_segment(str(segment)):
            if entry.is_control or entry.key is None or entry.value is None:
                continue
            record = cc.decode_record(entry.key, entry.value)
            if isinstance(record.key, GroupMetadataKey) and record.key.group == group_id:
                values.append(record.value)
    return values


def _facts(value: GroupMetadataValue, replay: GenerationReplay) -> str:
    """What the record held of each member, and what identification and replay made of it (for a failure)."""
    lines = [f"generation {value.generation}, protocol {value.protocol!r}, leader {value.leader}"]
    for member in value.members:
        proto = decode_member_protocol(value.protocol_type, member)
        sub, asg = proto.subscription, proto.assignment
        lines.append(
            f"  {'leader ' if member.member_id == value.leader else 'member '}{member.member_id} "
            f"client_id={member.client_id!r} "
            f"subscription v{sub.version if sub else None} user_data="
            f"{sub.user_data.hex() if sub and sub.user_data is not None else None} "
            f"owned={sub.owned_partitions if sub else None} "
            f"assignment v{asg.version if asg else None} user_data="
            f"{asg.user_data.hex() if asg and asg.user_data is not None else None} "
            f"partitions={asg.partitions if asg else None} error={proto.error}")
    c = replay.leader_client
    lines.append(f"  leader_client: library={c.library} version={c.version} named={c.named} "
                 f"candidates={c.candidates} evidence={c.evidence}")
    lines.append(f"  replay: engine={replay.engine} status={replay.status} reason={replay.reason} "
                 f"detail={replay.detail} members={replay.members}")
    return "\n".join(lines)


Reported = dict[str, frozenset[tuple[str, int]]]  # member id -> the partitions its consumer reported


def _run_groups(bootstrap_servers: str) -> dict[GroupSpec, list[Reported]]:
    """Per group, what its consumers reported once settled: the first member alone, then both. Every consumer
    is closed and both groups are empty when it returns."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap_servers, client_id="cgh-rdkafka-admin")
    members: dict[GroupSpec, list[Member]] = {spec: [] for spec in GROUPS}
    reported: dict[GroupSpec, list[Reported]] = {spec: [] for spec in GROUPS}

    def poll() -> None:
        for group in members.values():
            for m in group:
                m.consumer.poll(0.02)

    try:
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
        _wait(lambda: [len(t["partitions"]) for t in admin.describe_topics([TOPIC])] == [PARTITIONS],
              f"topic {TOPIC}'s metadata", 10)
        try:
            for size in (1, 2):  # the second member joins a settled group: a rebalance with partitions owned
                for spec in GROUPS:
                    members[spec].append(Member(bootstrap_servers, spec))
                _wait(lambda: all(_stable(group) for group in members.values()), f"{size} member(s) to settle",
                      20, poll)
                for spec, group in members.items():
                    settled = {m.consumer.memberid(): m.reported() for m in group}
                    assert len(settled) == size and None not in settled, settled
                    reported[spec].append(settled)
        finally:
            for m in [m for group in members.values() for m in group]:
                m.consumer.close()
        _wait(lambda: {g.group: g.state for g in admin.describe_consumer_groups([s.group_id for s in GROUPS])}
              == dict.fromkeys((s.group_id for s in GROUPS), "Empty"), "both groups to be empty", 15)
    finally:
        admin.close()
    return reported


def test_a_librdkafka_leader_is_identified_and_replayed_from_the_records(kafka_broker: KafkaBroker) -> None:
    reported = _run_groups(kafka_broker.bootstrap_servers)
    for spec in GROUPS:
        generations = [v for v in _group_metadata(kafka_broker, spec.group_id) if v.members]
        assert generations, f"no GroupMetadata record with members for {spec.group_id}"
        for value in generations:
            replay = replay_generation(value)
            facts = _facts(value, replay)
            assert value.protocol == spec.strategy, facts
            assert {m.client_id for m in value.members} == {spec.client_id or "rdkafka"}, facts
            assert replay.leader_client.library == "librdkafka", facts
            assert replay.leader_client.named is spec.named, facts
            assert replay.engine == "java", facts
            assert replay.status == "match" or (
                replay.reason == "other_client_library" and "librdkafka" in (replay.detail or "")), facts
        # The first member settled in the first generation it was alone in; both settled in the last
        # generation they were both in (closing them may add generations after it).
        alone, both = reported[spec]
        settled = (next(v for v in generations if {m.member_id for m in v.members} == set(alone)),
                   [v for v in generations if {m.member_id for m in v.members} == set(both)][-1])
        for value, expected in zip(settled, (alone, both), strict=True):
            replay = replay_generation(value)
            facts = _facts(value, replay)
            assert {m.member_id: frozenset(m.recorded) for m in replay.members} == expected, facts
            if replay.status == "match":
                assert {m.member_id: frozenset(m.replayed) for m in replay.members} == expected, facts
