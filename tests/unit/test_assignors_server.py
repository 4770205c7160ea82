"""Golden cases for the KIP-848 server assignors, transcribed from Apache Kafka's own tests (inputs and
expected target assignments as facts): group-coordinator/src/test/java/org/apache/kafka/coordinator/group/
assignor/{UniformHomogeneousAssignmentBuilderTest, UniformHeterogeneousAssignmentBuilderTest,
RangeAssignorTest}.java, with their literal topic ids and members in TreeMap order (A, B, C also iterate in
that order in a HashMap). Kafka's tests compare sets; so do these, except where noted.

Not transcribed: the homogeneous tests whose expectations rely on an insertion-ordered previous assignment
(`mkOrderedAssignment`, topic1 before topic2): the coordinator only ever hands the assignor HashMaps, where
topic2's id iterates first, so those results differ in the coordinator (the oracle tests cover it).
"""

from __future__ import annotations

import doctest
import importlib
from collections.abc import Mapping, Sequence

import pytest

from coordinator_core.assignors import (
    AssignorError,
    ConsumerGroupMemberSpec,
    MemberSubscription,
    TopicMetadata,
    UnsupportedKafkaVersion,
    assign,
    assign_server_range,
    assign_server_uniform,
    server_inputs,
)

T1 = "T1-A4s3VTwiI5CTbEp6POw"
T2 = "T2-B4s3VTwiI5YHbPp6YUe"
T3 = "T3-CU8fVTLCz5YMkLoDQsa"


def _topics(**counts: int) -> dict[str, TopicMetadata]:
    ids = {"topic1": T1, "topic2": T2, "topic3": T3}
    return {name: TopicMetadata(ids[name], n) for name, n in counts.items()}


def _sets(result: Mapping[str, Mapping[str, Sequence[int]]]) -> dict[str, dict[str, set[int]]]:
    return {m: {t: set(ps) for t, ps in tps.items()} for m, tps in result.items()}


def _member(member_id: str, topics: Sequence[str], previous: Mapping[str, Sequence[int]] | None = None,
            instance_id: str | None = None) -> ConsumerGroupMemberSpec:
    return ConsumerGroupMemberSpec(member_id, list(topics), dict(previous or {}), instance_id)


# --- uniform, homogeneous -------------------------------------------------------------------------------


def test_uniform_first_assignment_two_members_two_topics() -> None:
    """testFirstAssignmentTwoMembersTwoTopicsNoMemberRacks: whole topics, topic3 first (hash order)."""
    both = ["topic1", "topic3"]
    result = assign_server_uniform([_member("A", both), _member("B", both)], _topics(topic1=3, topic3=2))
    assert result == {"A": {T3: [0, 1]}, "B": {T1: [0, 1, 2]}}


def test_uniform_more_members_than_partitions() -> None:
    """testFirstAssignmentNumMembersGreaterThanTotalNumPartitions: the first member gets nothing."""
    members = [_member(m, ["topic3"]) for m in "ABC"]
    result = assign_server_uniform(members, _topics(topic3=2))
    assert result == {"A": {}, "B": {T3: [0]}, "C": {T3: [1]}}


def test_uniform_partitions_added() -> None:
    """testReassignmentWhenPartitionsAreAddedForTwoMembersTwoTopics (KAFKA-18688: A gives its extra slot
    back, B keeps it)."""
    both = ["topic1", "topic2"]
    members = [_member("A", both, {T1: [0, 2], T2: [0]}), _member("B", both, {T1: [1], T2: [1, 2]})]
    result = assign_server_uniform(members, _topics(topic1=6, topic2=5))
    assert _sets(result) == {"A": {T1: {0, 2}, T2: {0, 3, 4}}, "B": {T1: {1, 3, 4, 5}, T2: {1, 2}}}


def test_uniform_member_removed() -> None:
    """testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersTwoTopics."""
    both = ["topic1", "topic2"]
    members = [_member("A", both, {T1: [0], T2: [0]}), _member("B", both, {T1: [1], T2: [1]})]
    result = assign_server_uniform(members, _topics(topic1=3, topic2=3))
    assert _sets(result) == {"A": {T1: {0}, T2: {0, 2}}, "B": {T1: {1, 2}, T2: {1}}}


def test_uniform_subscription_removed() -> None:
    """testReassignmentWhenOneSubscriptionRemovedAfterInitialAssignmentWithTwoMembersTwoTopics."""
    members = [_member("A", ["topic2"], {T1: [0], T2: [0]}), _member("B", ["topic2"], {T1: [1], T2: [1]})]
    result = assign_server_uniform(members, _topics(topic1=2, topic2=2))
    assert result == {"A": {T2: [0]}, "B": {T2: [1]}}


def test_uniform_already_balanced_stays_put() -> None:
    """testReassignmentStickinessWhenAlreadyBalanced (reference V14): unchanged since KAFKA-18688; 4.0.0
    moved partition 4 from C to B."""
    members = [_member("A", ["topic1"], {T1: [0, 3]}), _member("B", ["topic1"], {T1: [1]}),
               _member("C", ["topic1"], {T1: [2, 4]})]
    result = assign_server_uniform(members, _topics(topic1=5))
    assert result == {"A": {T1: [0, 3]}, "B": {T1: [1]}, "C": {T1: [2, 4]}}


def test_uniform_no_subscriptions() -> None:
    """testOneMemberNoTopicSubscription: an empty assignment."""
    assert assign_server_uniform([_member("A", [])], _topics(topic1=3)) == {"A": {}}


# --- uniform, heterogeneous -----------------------------------------------------------------------------


def test_uniform_heterogeneous_first_assignment() -> None:
    """UniformHeterogeneousAssignmentBuilderTest.testFirstAssignmentTwoMembersTwoTopics."""
    members = [_member("A", ["topic1", "topic3"]), _member("B", ["topic3"])]
    result = assign_server_uniform(members, _topics(topic1=3, topic3=6))
    assert _sets(result) == {"A": {T1: {0, 1, 2}, T3: {4}}, "B": {T3: {0, 1, 2, 3, 5}}}


def test_uniform_heterogeneous_unbalanced_previous_assignment() -> None:
    """testReassignmentForTwoMembersThreeTopicsGivenUnbalancedPrevAssignment (reference V15)."""
    members = [
        _member("A", ["topic1"], {T1: [0, 1, 2]}),
        _member("B", ["topic1", "topic2"], {T1: [3], T2: [0]}),
        _member("C", ["topic1", "topic2", "topic3"], {T1: [4, 5], T2: [1, 2, 3], T3: [0, 1, 2, 3]}),
    ]
    result = assign_server_uniform(members, _topics(topic1=6, topic2=4, topic3=4))
    assert _sets(result) == {
        "A": {T1: {0, 1, 2, 5}},
        "B": {T1: {3}, T2: {0, 1, 2, 3}},
        "C": {T1: {4}, T3: {0, 1, 2, 3}},
    }


def test_uniform_heterogeneous_partition_outside_topic_fails_like_java() -> None:
    """A previous target naming partition 7 of a 2-partition topic: Java's owner array throws."""
    members = [_member("A", ["topic1"], {T1: [7]}), _member("B", ["topic1", "topic3"])]
    with pytest.raises(AssignorError, match="ArrayIndexOutOfBounds"):
        assign_server_uniform(members, _topics(topic1=2, topic3=2))


# --- range ----------------------------------------------------------------------------------------------


def test_range_same_subscriptions() -> None:
    """RangeAssignorTest.testFirstAssignmentTwoConsumersTwoTopicsSameSubscriptions."""
    both = ["topic1", "topic3"]
    result = assign_server_range([_member("A", both), _member("B", both)], _topics(topic1=3, topic3=2))
    assert _sets(result) == {"A": {T1: {0, 1}, T3: {0}}, "B": {T1: {2}, T3: {1}}}


def test_range_different_subscriptions() -> None:
    """RangeAssignorTest.testFirstAssignmentThreeConsumersThreeTopicsDifferentSubscriptions."""
    members = [_member("A", ["topic1", "topic2"]), _member("B", ["topic3"]), _member("C", ["topic2", "topic3"])]
    result = assign_server_range(members, _topics(topic1=3, topic2=3, topic3=2))
    assert _sets(result) == {"A": {T1: {0, 1, 2}, T2: {0, 1}}, "B": {T3: {0}}, "C": {T2: {2}, T3: {1}}}


def test_range_more_members_than_partitions() -> None:
    """RangeAssignorTest.testFirstAssignmentNumConsumersGreaterThanNumPartitions."""
    both = ["topic1", "topic3"]
    result = assign_server_range([_member(m, both) for m in "ABC"], _topics(topic1=3, topic3=2))
    assert _sets(result) == {"A": {T1: {0}, T3: {0}}, "B": {T1: {1}, T3: {1}}, "C": {T1: {2}}}


def test_range_static_members_first_and_previous_assignment_ignored() -> None:
    """Static members sort first by instance id (RangeAssignor.sortMemberIds); the previous target is not
    an input (stateless since KAFKA-16944)."""
    members = [_member("A", ["topic1"], {T1: [0, 1, 2]}), _member("B", ["topic1"], instance_id="i-2"),
               _member("C", ["topic1"], instance_id="i-1")]
    result = assign_server_range(members, _topics(topic1=4))
    assert result == {"A": {T1: [3]}, "B": {T1: [2]}, "C": {T1: [0, 1]}}


# --- the name-based entry point -------------------------------------------------------------------------


def test_assign_by_name_is_the_id_based_replay_flattened() -> None:
    ids = {"topic1": T1, "topic2": T2, "gone": T3}
    members = [
        MemberSubscription("m1", ["topic1", "topic2"], owned_partitions=[("topic2", 3), ("topic1", 0), ("gone", 1)]),
        MemberSubscription("m2", ["topic2", "topic1", "nowhere"], owned_partitions=[("topic1", 1), ("topic2", 0)]),
        MemberSubscription("m3", ["topic1"], group_instance_id="i-3"),
    ]
    counts = {"topic1": 5, "topic2": 4}
    specs, topics = server_inputs(counts, members, ids)
    assert specs[0].target_assignment == {T2: [3], T1: [0], T3: [1]}
    names = {v: k for k, v in ids.items()}
    for name, runner in (("server-uniform", assign_server_uniform), ("server-range", assign_server_range)):
        flat = assign(name, counts, members, topic_ids=ids)
        by_id = runner(specs, topics)
        assert flat == {m: [(names[t], p) for t, ps in tps.items() for p in ps] for m, tps in by_id.items()}
        every = sorted((t, p) for t, n in counts.items() for p in range(n))
        assert sorted(tp for tps in flat.values() for tp in tps) == every


def test_assign_by_name_needs_topic_ids_and_a_known_version() -> None:
    members = [MemberSubscription("m1", ["topic1"])]
    with pytest.raises(ValueError, match="topic_ids"):
        assign("server-uniform", {"topic1": 1}, members)
    with pytest.raises(UnsupportedKafkaVersion):
        assign("server-uniform", {"topic1": 1}, members, kafka_version="3.9.0", topic_ids={"topic1": T1})
    with pytest.raises(UnsupportedKafkaVersion):
        assign("server-range", {"topic1": 1}, members, kafka_version="3.9.0", topic_ids={"topic1": T1})
    for version in ("4.0.0", "4.2.0", "4.3.0"):
        assert assign("server-range", {"topic1": 1}, members, kafka_version=version, topic_ids={"topic1": T1}) == {
            "m1": [("topic1", 0)]
        }
    with pytest.raises(ValueError, match="topic1"):
        assign("server-range", {"topic1": 1}, members, topic_ids={})


def test_uniform_extra_slots_before_and_after_kafka_18688() -> None:
    # A (empty), B (3 partitions), C (2) over 5 partitions: quota 1, two extra slots. 4.0.0 gives them to
    # the first members in order (A, B), so C gives one up to A; 4.0.1+ lets A hand its extra slot back
    # because B and C already hold theirs.
    members = [
        MemberSubscription("A", ["topic1"]),
        MemberSubscription("B", ["topic1"], owned_partitions=[("topic1", 0), ("topic1", 1), ("topic1", 2)]),
        MemberSubscription("C", ["topic1"], owned_partitions=[("topic1", 3), ("topic1", 4)]),
    ]
    ids = {"topic1": T1}
    kept = {"A": [("topic1", 2)], "B": [("topic1", 0), ("topic1", 1)], "C": [("topic1", 3), ("topic1", 4)]}
    first = {"A": [("topic1", 2), ("topic1", 4)], "B": [("topic1", 0), ("topic1", 1)], "C": [("topic1", 3)]}
    for version in ("4.0.1", "4.1.0", "4.4.0"):
        assert assign("server-uniform", {"topic1": 5}, members, kafka_version=version, topic_ids=ids) == kept
    assert assign("server-uniform", {"topic1": 5}, members, kafka_version="4.0.0", topic_ids=ids) == first


@pytest.mark.parametrize("name", ["coordinator_core.assignors.server_uniform",
                                  "coordinator_core.assignors.server_range"])
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0
    assert result.failed == 0
