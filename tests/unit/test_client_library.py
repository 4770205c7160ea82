"""The leader's client library, and the replay with that library's own assignor.

Expected values come from outside the code under test: each captured sample's scenarios.json names the client
every scenario ran (the test bed's own account), and kafka-python's assignor classes are called here as a
kafka-python leader calls them, with kafka-python's real ClusterMetadata filled from a MetadataResponse.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.cluster import ClusterMetadata
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyAssignorUserDataV1, StickyPartitionAssignor
from kafka.coordinator.protocol import ConsumerProtocolMemberMetadata
from kafka.protocol.metadata import MetadataResponse

import coordinator_core as cc
from coordinator_core import messages as m
from coordinator_core.assignors import MemberSubscription, assign
from coordinator_core.assignors.kafka_python import KAFKA_PYTHON_VERSION, assign_kafka_python
from coordinator_core.client_library import MemberBytes, identify_leader_client, library_of_client_id
from coordinator_core.replay import member_subscriptions, replay_generation

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def _group_metadata(sample: Path) -> Iterator[tuple[str, m.GroupMetadataValue]]:
    for segment in sorted(sample.glob("**/__consumer_offsets-*/*.log")):
        for entry in cc.read_segment(str(segment)):
            if entry.is_control or entry.key is None:
                continue
            record = cc.decode_record(entry.key, entry.value)
            if isinstance(record.value, m.GroupMetadataValue) and record.value.protocol_type == "consumer":
                yield record.key.group, record.value


def _expected_library(client: str) -> str:
    """scenarios.json's client text -> the library name a replay row uses."""
    if client.startswith("kafka-python "):
        return "kafka-python"
    assert "Java consumer" in client, client
    return "java"


@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.iterdir() if (p / "scenarios.json").exists()))
def test_every_sample_leader_is_named_and_replayed_with_its_own_library(sample: str) -> None:
    scenarios = json.loads((SAMPLES / sample / "scenarios.json").read_text())["scenarios"]
    client_of = {s["group_id"]: s["client"] for s in scenarios.values()}
    sticky_shared = {(s["group_id"], g["generation"]) for s in scenarios.values()
                     if s.get("assignor") == "sticky" and s["client"].startswith("kafka-python ")
                     for g in s.get("generations", ()) if len(g["members"]) >= 2}
    replayed = shared = 0
    for group, value in _group_metadata(SAMPLES / sample):
        if not value.members or group not in client_of:
            continue
        r = replay_generation(value)
        library = _expected_library(client_of[group])
        assert (r.leader_client.library, r.status, r.reason) == (library, "match", None), (group, value.generation)
        assert r.engine == ("java" if library == "java" else f"kafka-python {KAFKA_PYTHON_VERSION}")
        assert ("shared_sticky_state" in r.findings) == ((group, value.generation) in sticky_shared)
        replayed += 1
        shared += "shared_sticky_state" in r.findings
    assert replayed > 40
    if sample != "kafka-4.3.1-3brokers":  # the single-broker samples ran the kafka-python sticky scenario
        assert shared == 3


def test_the_kafka_python_sticky_generations_are_not_javas_sticky() -> None:
    """Why the engine matters: Kafka's Java sticky over the same inputs gives another assignment."""
    differ = 0
    for group, value in _group_metadata(SAMPLES / "kafka-4.3.1"):
        if group == "cgh-sticky-group" and value.members:
            subs, recorded = member_subscriptions(value)
            counts = cc.replay.infer_partition_counts(subs, recorded.values())
            java = assign("sticky", counts, subs)
            differ += any(sorted(java[s.member_id]) != sorted(recorded[s.member_id]) for s in subs)
    assert differ >= 1


# ----------------------------------------------------------------------------------------------
# The engine wrapper against kafka-python called as its leader calls it


def _cluster(counts: dict[str, int]) -> ClusterMetadata:
    """kafka-python's own ClusterMetadata, filled the way a metadata response fills it."""
    cluster = ClusterMetadata()
    topics = [(0, topic, [(0, p, 0, [0], [0]) for p in range(n)]) for topic, n in counts.items()]
    cluster.update_metadata(MetadataResponse[0](brokers=[(0, "localhost", 9092)], topics=topics))
    return cluster


_CLASSES = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
            "sticky": StickyPartitionAssignor}


@st.composite
def _groups(draw: st.DrawFn) -> tuple[str, dict[str, int], list[MemberSubscription]]:
    protocol = draw(st.sampled_from(sorted(_CLASSES)))
    topics = {f"t{i}": draw(st.integers(1, 6)) for i in range(draw(st.integers(1, 3)))}
    ids = draw(st.lists(st.text("abcdef", min_size=1, max_size=4), min_size=1, max_size=5, unique=True))
    members = []
    owned: set[tuple[str, int]] = set()
    for member_id in ids:  # drawn order = JoinGroup order
        subscribed = draw(st.lists(st.sampled_from(sorted(topics)), min_size=1, unique=True))
        user_data = b""
        if protocol == "sticky" and draw(st.booleans()):
            mine = sorted({(t, p) for t in subscribed for p in range(topics[t])
                           if (t, p) not in owned and draw(st.booleans())})
            owned.update(mine)
            by_topic: dict[str, list[int]] = {}
            for t, p in mine:
                by_topic.setdefault(t, []).append(p)
            data = StickyAssignorUserDataV1(list(by_topic.items()), draw(st.integers(1, 9)))
            user_data = data.encode()  # kafka-python binds encode weakly: the struct must outlive the call
        members.append(MemberSubscription(member_id, tuple(subscribed), user_data))
    return protocol, topics, members


@settings(max_examples=150, deadline=None)
@given(_groups())
def test_the_engine_gives_what_kafka_python_itself_gives(group: tuple[str, dict[str, int], list[MemberSubscription]]
                                                         ) -> None:
    protocol, counts, members = group
    metadata = {s.member_id: ConsumerProtocolMemberMetadata(0, list(s.topics), s.user_data) for s in members}
    # Only the subscribed topics are in the leader's metadata (a subscription by topic names).
    subscribed = {t for s in members for t in s.topics}
    truth = _CLASSES[protocol].assign(_cluster({t: n for t, n in counts.items() if t in subscribed}), metadata)
    expected = {mid: [(t, p) for t, ps in a.assignment for p in ps] for mid, a in truth.items()}
    assert assign_kafka_python(protocol, counts, members) == expected


# ----------------------------------------------------------------------------------------------
# Identification from the bytes and the client id


@pytest.mark.parametrize(("client_id", "expected"), [
    ("consumer-orders-1", ("java", None)), ("consumer-7", ("java", None)),
    ("kafka-python-2.2.15", ("kafka-python", "2.2.15")), ("aiokafka-0.12.0", ("aiokafka", "0.12.0")),
    ("rdkafka", ("librdkafka", None)), ("kgo", ("franz-go", None)), ("sarama", ("sarama", None)),
    ("kafkajs", ("kafkajs", None)), ("billing-service", None), (None, None), ("consumer", None),
])
def test_default_client_ids(client_id: str | None, expected: tuple[str, str | None] | None) -> None:
    assert library_of_client_id(client_id) == expected


STICKY = b"\0\0\0\1\0\1t\0\0\0\1\0\0\0\0\0\0\0\3"   # [("t", [0])], generation 3: Java's StickyAssignor v1 layout


def _group(sub_v: int, sub_ud: bytes | None, asg_v: int, asg_ud: bytes | None | str, client_id: str = "svc",
           members: int = 2, member_ud: bytes | None = None) -> list[MemberBytes]:
    """Members as one library writes them (the first is the leader); `asg_ud` "echo": each member's
    assignment user data is its own subscription's."""
    out = []
    for i in range(members):
        mine = sub_ud if i == 0 or member_ud is None else member_ud
        out.append(MemberBytes(client_id if i == 0 else f"{client_id}-{i}", sub_v, mine, asg_v,
                               mine if asg_ud == "echo" else asg_ud))  # type: ignore[arg-type]
    return out


# (what each library writes, from its source: see coordinator_core/client_library.py), the protocol, and the
# library the bytes alone name, with every library they allow
WRITERS = [
    ("java 3.5+", _group(3, None, 3, None), "range", ("java",)),
    ("java 3.4", _group(2, None, 2, None), "range", ("java",)),
    ("java 2.4-3.3", _group(1, None, 1, None), "roundrobin", ("java",)),
    ("java cooperative", _group(3, b"\xff\xff\xff\xff", 3, None), "cooperative-sticky", ("java",)),
    ("java <= 2.3", _group(0, b"", 0, b""), "range", ("kafka-python", "aiokafka", "java", "librdkafka")),
    ("kafka-python range", _group(0, b"", 0, b""), "range", ("kafka-python", "aiokafka", "java", "librdkafka")),
    ("kafka-python sticky", _group(0, STICKY, 0, b""), "sticky", ("kafka-python", "aiokafka", "java")),
    ("kafka-python 3 cooperative", _group(1, b"", 1, b""), "cooperative-sticky", ("kafka-python",)),
    ("librdkafka 2.2+", _group(3, b"", 0, "echo"), "range", ("librdkafka",)),
    ("librdkafka cooperative", _group(1, STICKY, 0, "echo", member_ud=b""), "cooperative-sticky", ("librdkafka",)),
    ("franz-go", _group(3, None, 0, None), "range", ("franz-go",)),
    ("franz-go fresh sticky", _group(3, b"\0\0\0\0", 0, None), "cooperative-sticky", ("franz-go",)),
    ("franz-go < 1.14.1", _group(0, None, 0, None), "range", ("sarama", "franz-go")),
    ("sarama 1.60.1+", _group(1, None, 0, None), "range", ("sarama",)),
    ("sarama sticky", _group(0, STICKY, 0, STICKY), "sticky", ("sarama",)),
    ("kafkajs", _group(0, b"", 0, b""), "RoundRobinAssigner", ("kafkajs",)),
]


@pytest.mark.parametrize(("writer", "members", "protocol", "candidates"), WRITERS, ids=[w[0] for w in WRITERS])
def test_each_librarys_bytes_name_it_or_the_libraries_that_write_alike(
        writer: str, members: list[MemberBytes], protocol: str, candidates: tuple[str, ...]) -> None:
    c = identify_leader_client(members, members[0], protocol)
    assert (c.library, c.candidates, c.named) == (candidates[0], candidates, False), writer
    assert c.certain == (len(candidates) == 1)


def test_a_default_client_id_picks_among_the_libraries_the_bytes_allow() -> None:
    for client_id, library, version in (("aiokafka-0.12.0", "aiokafka", "0.12.0"), ("consumer-7", "java", None),
                                        ("kafka-python-2.2.15", "kafka-python", "2.2.15"),
                                        ("rdkafka", "librdkafka", None)):
        members = _group(0, b"", 0, b"", client_id)
        c = identify_leader_client(members, members[0], "range")
        assert (c.library, c.version, c.named, c.certain) == (library, version, True, True), client_id
    assert identify_leader_client(members, members[0], "range").describe() == "librdkafka"


def test_the_bytes_outweigh_a_client_id_they_rule_out() -> None:
    members = _group(3, None, 3, None, "kafka-python-2.2.15")
    c = identify_leader_client(members, members[0], "range")
    assert (c.library, c.named) == ("java", False)
    assert any("client id" in e for e in c.evidence) and any("outweigh" in e for e in c.evidence)


def test_a_default_client_id_names_a_library_whose_bytes_are_not_known() -> None:
    members = _group(5, b"x", 7, b"y", "kgo")
    c = identify_leader_client(members, members[0], "range")
    assert (c.library, c.named, c.candidates) == ("franz-go", True, ())


def test_no_leader_or_no_evidence_is_unknown() -> None:
    assert identify_leader_client([], None, "range").library == "unknown"
    odd = _group(5, b"x", 7, b"y")
    assert identify_leader_client(odd, odd[0], "range").library == "unknown"


# ----------------------------------------------------------------------------------------------
# The replay of another library's leader: named, explained, never "unexplained"


def _record(protocol: str, client_id: str, assigned: dict[str, list[int]], topics: dict[str, int]
            ) -> m.GroupMetadataValue:
    """A generation as a Sarama leader (subscription v0, null user data, assignments v0) writes it."""
    members = []
    for member_id, partitions in assigned.items():
        sub = cc.encode_subscription(cc.Subscription(0, tuple(sorted(topics)), None, (), -1, None))
        asg = cc.encode_assignment(cc.Assignment(0, tuple(cc.TopicPartition("t", p) for p in partitions), None))
        members.append(m.MemberMetadata(member_id, None, client_id, "h", 1, 1, sub, asg))
    return m.GroupMetadataValue("consumer", 4, protocol, next(iter(assigned)), -1, tuple(members))


def test_a_sarama_roundrobin_leader_is_named_and_its_string_order_explains_the_mismatch() -> None:
    # Sarama's roundrobin deals partitions sorted as strings: t-0, t-1, t-10, t-2, ... over a, b (a gets 10 and 3).
    order = sorted(range(11), key=lambda p: f"t-{p}")
    assigned = {"a": sorted(order[0::2]), "b": sorted(order[1::2])}
    r = replay_generation(_record("roundrobin", "sarama", assigned, {"t": 11}))
    assert (r.status, r.reason, r.leader_client.library, r.engine) == (
        "mismatch", "other_client_library", "sarama", "java")
    assert "sarama" in (r.detail or "") and "strings" in (r.detail or "")


def test_a_sarama_range_leader_that_follows_java_matches() -> None:
    r = replay_generation(_record("range", "sarama", {"a": [0, 1, 2], "b": [3, 4, 5]}, {"t": 6}))
    assert (r.status, r.leader_client.library, r.engine) == ("match", "sarama", "java")


def test_kafka_python_shaped_bytes_that_javas_assignor_reproduces_are_a_java_leader_before_2_4() -> None:
    """v0 with empty user data is also what Java clients before 2.4 wrote: when kafka-python's sticky does not give
    the stored assignment and Kafka's Java sticky does, the leader is read as Java (evidence says why)."""
    for group, value in _group_metadata(SAMPLES / "kafka-4.3.1"):
        if group != "cgh-sticky-group" or not value.members:
            continue
        subs, recorded = member_subscriptions(value)
        java = assign("sticky", cc.replay.infer_partition_counts(subs, recorded.values()), subs)
        if all(sorted(java[s.member_id]) == sorted(recorded[s.member_id]) for s in subs):
            continue
        # The same generation as a Java 2.3 leader would have stored it: Java's sticky result, v0 bytes.
        members = tuple(dataclasses.replace(mm, client_id="svc", assignment=cc.encode_assignment(cc.Assignment(
            0, tuple(cc.TopicPartition(t, p) for t, p in java[mm.member_id]), b""))) for mm in value.members)
        r = replay_generation(dataclasses.replace(value, members=members))
        assert (r.status, r.engine, r.leader_client.library, r.leader_client.named) == ("match", "java", "java", False)
        assert "kafka-python's does not" in r.leader_client.evidence[-1]
        return
    pytest.fail("no sample sticky generation where Java's sticky differs from kafka-python's")
