"""Kafka's client-side `RoundRobinAssignor` (protocol name ``roundrobin``), 0.9 onwards."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from coordinator_core.assignors._model import Assignment, AssignorError, MemberSubscription, member_sort_key
from coordinator_core.javaisms import java_string_sort_key


def assign_roundrobin(
    partitions_per_topic: Mapping[str, int], subscriptions: Sequence[MemberSubscription]
) -> Assignment:
    """RoundRobin: all partitions, topics in name order, dealt to the members in member order.

    Members are sorted as in Range (static first by `group.instance.id`, then member id) and used as a
    circular cursor that carries over from one partition to the next; a member not subscribed to the
    partition's topic is skipped. Example (Kafka's RoundRobinAssignorTest.testMultipleConsumersMixedTopics):

    >>> from coordinator_core.assignors import MemberSubscription
    >>> assign_roundrobin({"topic1": 3, "topic2": 2}, [
    ...     MemberSubscription("consumer1", ["topic1"]),
    ...     MemberSubscription("consumer2", ["topic1", "topic2"]),
    ...     MemberSubscription("consumer3", ["topic1"])])
    {'consumer1': [('topic1', 0)], 'consumer2': [('topic1', 1), ('topic2', 0), ('topic2', 1)], \
'consumer3': [('topic1', 2)]}
    """
    return _deal(partitions_per_topic, subscriptions, member_sort_key)


def assign_roundrobin_before_2_4(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Sequence[MemberSubscription],
    *,
    missing_topic_fails: bool = False,
) -> Assignment:
    """RoundRobin as Kafka 0.9.0-2.3.x computed it: members sorted by member id alone (a group instance id
    in the input is ignored; KIP-345 reached the assignors in 2.4).

    Args:
        missing_topic_fails: Kafka 0.9.x looked up every subscribed topic's partition count without a
            null check, so a subscribed topic without metadata failed the assignment with a
            NullPointerException (KAFKA-3661, fixed in 0.10.0.0); this raises `AssignorError` then.

    >>> from coordinator_core.assignors import MemberSubscription
    >>> assign_roundrobin_before_2_4({"t": 3},
    ...     [MemberSubscription("C1", ["t"], group_instance_id="i"), MemberSubscription("C0", ["t"])])
    {'C1': [('t', 1)], 'C0': [('t', 0), ('t', 2)]}
    """
    if missing_topic_fails:
        for topic in sorted({t for m in subscriptions for t in m.topics}, key=java_string_sort_key):
            if partitions_per_topic.get(topic, 0) <= 0:
                raise AssignorError(f"NullPointerException: no partition count for the subscribed topic {topic}")
    return _deal(partitions_per_topic, subscriptions, lambda m: java_string_sort_key(m.member_id))


def _deal(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Sequence[MemberSubscription],
    member_order: Callable[[MemberSubscription], Any],
) -> Assignment:
    if not subscriptions:
        raise AssignorError("IllegalArgumentException: CircularIterator can only be used on non-empty lists")
    assignment: Assignment = {m.member_id: [] for m in subscriptions}
    members = sorted(subscriptions, key=member_order)
    topic_sets = {m.member_id: frozenset(m.topics) for m in members}
    all_topics = sorted({t for m in members for t in m.topics}, key=java_string_sort_key)
    cursor = 0
    n = len(members)
    for topic in all_topics:
        count = partitions_per_topic.get(topic)
        if count is None:
            continue
        for p in range(count):
            while topic not in topic_sets[members[cursor].member_id]:
                cursor = (cursor + 1) % n
            assignment[members[cursor].member_id].append((topic, p))
            cursor = (cursor + 1) % n
    return assignment
