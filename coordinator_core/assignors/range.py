"""Kafka's client-side `RangeAssignor` (protocol name ``range``), 0.9 onwards: static members sorted first
from 2.4, rack-aware from 3.5."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from coordinator_core.assignors._common import (
    replica_racks,
    topics_in_java_order,
    use_rack_aware_assignment,
)
from coordinator_core.assignors._model import (
    Assignment,
    MemberSubscription,
    PartitionRacks,
    TopicPartition,
    member_sort_key,
    subscriptions_in_hash_order,
    topic_partition_sort_key,
)
from coordinator_core.javaisms import JavaHashMap, java_string_hash, java_string_sort_key


class _TopicState:
    """`RangeAssignor.TopicAssignmentState`: one topic's subscribers, quotas and unassigned partitions."""

    def __init__(
        self,
        topic: str,
        num_partitions: int,
        subscribers: list[MemberSubscription],
        partition_racks: PartitionRacks | None,
        rack_aware: bool,
    ) -> None:
        self.topic = topic
        members = sorted(subscribers, key=member_sort_key)
        self.consumers: dict[str, str | None] = {}
        for m in members:
            self.consumers.setdefault(m.member_id, m.rack if rack_aware else None)
        self.unassigned: dict[TopicPartition, None] = {(topic, p): None for p in range(num_partitions)}
        self.assigned_count = dict.fromkeys(self.consumers, 0)
        n = len(self.consumers)
        self.per_consumer = num_partitions // n if n else 0
        self.with_extra = num_partitions % n if n else 0
        consumer_racks = {r for r in self.consumers.values() if r is not None}
        self.partition_racks: dict[TopicPartition, frozenset[str]] = {}
        all_partition_racks: set[str] = set()
        if consumer_racks:
            for p in range(num_partitions):
                racks = replica_racks(partition_racks, (topic, p))
                self.partition_racks[(topic, p)] = racks
                all_partition_racks |= racks
        self.needs_rack_aware = use_rack_aware_assignment(consumer_racks, all_partition_racks, self.partition_racks)

    def racks_match(self, consumer: str, tp: TopicPartition) -> bool:
        rack = self.consumers[consumer]
        if rack is None:
            return True
        racks = self.partition_racks.get(tp)
        return racks is not None and rack in racks

    def max_assignable(self, consumer: str) -> int:
        extra = 1 if self.with_extra > 0 else 0
        return max(0, self.per_consumer + extra - self.assigned_count[consumer])

    def on_assigned(self, consumer: str, partitions: list[TopicPartition]) -> None:
        self.assigned_count[consumer] += len(partitions)
        if self.assigned_count[consumer] > self.per_consumer:
            self.with_extra -= 1
        for tp in partitions:
            del self.unassigned[tp]


def _assign_ranges(state: _TopicState, assignment: Assignment, rack_filter: bool) -> None:
    for consumer in state.consumers:
        if not state.unassigned:
            break
        limit = state.max_assignable(consumer)
        chosen: list[TopicPartition] = []
        if limit > 0:
            for tp in state.unassigned:
                if not rack_filter or state.racks_match(consumer, tp):
                    chosen.append(tp)
                    if len(chosen) == limit:
                        break
        if chosen:
            assignment[consumer].extend(chosen)
            state.on_assigned(consumer, chosen)


def _assign_co_partitioned(
    consumers: list[str], num_partitions: int, states: list[_TopicState], assignment: Assignment
) -> None:
    remaining = list(consumers)
    for p in range(num_partitions):
        match = next(
            (c for c in remaining if all(t.racks_match(c, (t.topic, p)) and t.max_assignable(c) > 0 for t in states)),
            None,
        )
        if match is None:
            continue
        for t in states:
            assignment[match].append((t.topic, p))
            t.on_assigned(match, [(t.topic, p)])
        if not any(t.max_assignable(match) > 0 for t in states):
            remaining.remove(match)
            if not remaining:
                break


def assign_range(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Sequence[MemberSubscription],
    *,
    partition_racks: PartitionRacks | None = None,
    rack_aware: bool = True,
) -> Assignment:
    """Range: per topic, consecutive partition ranges to the subscribers in member order.

    For each topic, the subscribers are sorted (static members first by `group.instance.id`, then by
    member id) and the i-th gets `P // C` partitions plus one of the `P % C` extras, as a contiguous run.
    With racks (Kafka 3.5+, KIP-881, `rack_aware=True`), a topic whose replicas are not on every rack
    first gives each subscriber partitions with a replica on its rack, topics with the same subscribers
    and partition count being kept co-partitioned; then the ranges are filled, and each member's list is
    sorted by (topic, partition).

    A member's list follows the leader's `partitionsPerTopic` HashMap order of topics. Example (Kafka's
    javadoc; members C0 and C1, topics t0 and t1 with 3 partitions each):

    >>> from coordinator_core.assignors import MemberSubscription
    >>> assign_range({"t0": 3, "t1": 3},
    ...              [MemberSubscription("C0", ["t0", "t1"]), MemberSubscription("C1", ["t0", "t1"])])
    {'C0': [('t0', 0), ('t0', 1), ('t1', 0), ('t1', 1)], 'C1': [('t0', 2), ('t1', 2)]}
    """
    members = subscriptions_in_hash_order(subscriptions)
    subscribers_by_topic: dict[str, list[MemberSubscription]] = {}
    for m in members:
        for topic in m.topics:
            subscribers_by_topic.setdefault(topic, []).append(m)
    states = [
        _TopicState(topic, partitions_per_topic[topic], subscribers_by_topic[topic], partition_racks, rack_aware)
        for topic in topics_in_java_order(partitions_per_topic, members)
    ]
    assignment: Assignment = {m.member_id: [] for m in subscriptions}
    use_racks = any(s.needs_rack_aware for s in states)
    if use_racks:
        groups: dict[tuple[tuple[str, str | None], ...], dict[int, list[_TopicState]]] = {}
        for s in states:
            key = tuple(s.consumers.items())
            groups.setdefault(key, {}).setdefault(len(s.partition_racks), []).append(s)
        for key, by_count in groups.items():
            for count, co_partitioned in by_count.items():
                if len(co_partitioned) > 1:
                    _assign_co_partitioned([c for c, _ in key], count, co_partitioned, assignment)
                elif co_partitioned[0].needs_rack_aware:
                    _assign_ranges(co_partitioned[0], assignment, rack_filter=True)
    for s in states:
        _assign_ranges(s, assignment, rack_filter=False)
    if use_racks:
        for partitions in assignment.values():
            partitions.sort(key=topic_partition_sort_key)
    return assignment


def assign_range_before_3_5(
    partitions_per_topic: Mapping[str, int], subscriptions: Sequence[MemberSubscription]
) -> Assignment:
    """Range as Kafka 2.4.0-3.4.x computed it: the same ranges, but topics are walked in the order of a
    HashMap topic -> subscribers (filled walking the members in map order), and no racks.

    >>> from coordinator_core.assignors import MemberSubscription
    >>> assign_range_before_3_5({"t0": 3, "t1": 3},
    ...     [MemberSubscription("C0", ["t0", "t1"]), MemberSubscription("C1", ["t0", "t1"])])
    {'C0': [('t0', 0), ('t0', 1), ('t1', 0), ('t1', 1)], 'C1': [('t0', 2), ('t1', 2)]}
    """
    return _hash_ordered_ranges(partitions_per_topic, subscriptions, member_sort_key, compute_if_absent=True)


def assign_range_before_2_4(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Sequence[MemberSubscription],
    *,
    topic_map_compute_if_absent: bool = True,
) -> Assignment:
    """Range as Kafka 0.9.0-2.3.x computed it: as in 2.4-3.4, but the subscribers of a topic are sorted by
    member id alone (there were no static members in the assignor's view before KIP-345 reached it).

    Args:
        topic_map_compute_if_absent: how the HashMap topic -> subscribers was filled, which decides the
            order a member's topics come in: `computeIfAbsent` from 2.1.0 on (new keys go to the head of
            their bucket), `get` then `put` before (new keys go to the tail).

    A group instance id in the input is ignored. Example (C1 is static, but 2.3 sorts by member id):

    >>> from coordinator_core.assignors import MemberSubscription
    >>> assign_range_before_2_4({"t": 3},
    ...     [MemberSubscription("C1", ["t"], group_instance_id="i"), MemberSubscription("C0", ["t"])])
    {'C1': [('t', 2)], 'C0': [('t', 0), ('t', 1)]}
    """
    return _hash_ordered_ranges(
        partitions_per_topic,
        subscriptions,
        lambda m: java_string_sort_key(m.member_id),
        compute_if_absent=topic_map_compute_if_absent,
    )


def _hash_ordered_ranges(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Sequence[MemberSubscription],
    member_order: Callable[[MemberSubscription], Any],
    *,
    compute_if_absent: bool,
) -> Assignment:
    members = subscriptions_in_hash_order(subscriptions)
    topic_order = JavaHashMap(java_string_hash)
    subscribers: dict[str, list[MemberSubscription]] = {}
    for m in members:
        for topic in m.topics:
            if compute_if_absent:
                topic_order.compute_if_absent(topic)  # AbstractPartitionAssignor.put (2.1+; JDK 17 semantics)
            else:
                topic_order.add(topic)  # AbstractPartitionAssignor.put before 2.1: get, then put when absent
            subscribers.setdefault(topic, []).append(m)
    assignment: Assignment = {m.member_id: [] for m in subscriptions}
    for topic in topic_order.order():
        count = partitions_per_topic.get(topic, 0)
        if count <= 0:
            continue
        consumers = sorted(subscribers[topic], key=member_order)
        n = len(consumers)
        per_consumer, with_extra = divmod(count, n)
        for i, member in enumerate(consumers):
            start = per_consumer * i + min(i, with_extra)
            length = per_consumer + (1 if i < with_extra else 0)
            assignment[member.member_id].extend((topic, p) for p in range(start, start + length))
    return assignment
