"""Kafka's client-side `RoundRobinAssignor` (protocol name ``roundrobin``), 2.4 onwards."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from coordinator_core.assignors._model import Assignment, MemberSubscription, member_sort_key
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
    assignment: Assignment = {m.member_id: [] for m in subscriptions}
    members = sorted(subscriptions, key=member_sort_key)
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
