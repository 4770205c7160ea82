"""KIP-848 server-side `range` assignor, as in Kafka 4.0.0-4.4 (`org.apache.kafka.coordinator.group.assignor.
RangeAssignor`, the stateless rewrite of KAFKA-16944; the same results in every release from 4.0.0 to 4.4.0,
checked against each one's classes).

It ignores the previous target assignment: the members are sorted (static members first by
`group.instance.id`, then the others by member id, Java string order; a stable sort of the coordinator's
HashMap order, which only matters for equal instance ids) and each topic is cut into consecutive ranges
over its subscribers in that order: `P // S` partitions each, and one more for the first `P % S` of them.
A homogeneous group takes its topics from the first sorted member's subscription (a topic missing from the
metadata fails the assignment); a heterogeneous group counts each topic's subscribers first. The same
sets as the client-side `range` without racks; only a member's topic order (a presized HashMap of topic
Uuids) is Java's.

Example (`RangeAssignorTest`, the server one):

>>> from coordinator_core.assignors.server_range import assign_server_range
>>> from coordinator_core.assignors._server_spec import ConsumerGroupMemberSpec, TopicMetadata
>>> topics = {"topic1": TopicMetadata("T1-A4s3VTwiI5CTbEp6POw", 3),
...           "topic3": TopicMetadata("T3-CU8fVTLCz5YMkLoDQsQ", 2)}
>>> both = ["topic1", "topic3"]
>>> members = [ConsumerGroupMemberSpec("member-y", both), ConsumerGroupMemberSpec("member-x", both)]
>>> for member_id, assignment in assign_server_range(members, topics).items():
...     print(member_id, assignment)
member-y {'T3-CU8fVTLCz5YMkLoDQsQ': [1], 'T1-A4s3VTwiI5CTbEp6POw': [2]}
member-x {'T3-CU8fVTLCz5YMkLoDQsQ': [0], 'T1-A4s3VTwiI5CTbEp6POw': [0, 1]}

member-x sorts first and takes the longer ranges; topic3's Uuid comes first in both members' maps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from coordinator_core.assignors._model import AssignorError
from coordinator_core.assignors._server_spec import (
    HOMOGENEOUS,
    ConsumerGroupMemberSpec,
    GroupSpec,
    TargetAssignment,
    TopicMetadata,
    build_group_spec,
)
from coordinator_core.javaisms import JavaHashMap, float_presized_capacity, java_string_sort_key, uuid_hash


@dataclass
class _TopicRanges:
    """`RangeAssignor.TopicMetadata`: the quota is fixed when the first subscriber takes its range."""

    topic_id: str
    num_partitions: int
    num_members: int
    min_quota: int = -1
    extra_partitions: int = -1
    next_range: int = 0

    def take_range(self) -> range:
        if self.min_quota == -1:
            self.min_quota, self.extra_partitions = divmod(self.num_partitions, self.num_members)
        quota = self.min_quota
        if self.extra_partitions > 0:
            quota += 1
            self.extra_partitions -= 1
        start = self.next_range
        self.next_range = min(start + quota, self.num_partitions)
        return range(start, self.next_range)


def assign_server_range(
    members: Sequence[ConsumerGroupMemberSpec],
    topics: Mapping[str, TopicMetadata],
    *,
    subscription_type: str | None = None,
) -> TargetAssignment:
    """The new target assignment Kafka 4.4's `range` server assignor computes.

    Args:
        members: the group's members in the coordinator's insertion order.
        topics: topic name -> metadata of the topics in the metadata image.
        subscription_type: HOMOGENEOUS/HETEROGENEOUS override (default: computed as the group does).

    Returns:
        member id -> topic id -> partitions (ascending ranges), every member included, topics in Kafka's
        iteration order; members in the coordinator's member map order.

    Raises:
        AssignorError: where Kafka's assignor throws.
    """
    spec = build_group_spec(members, topics, subscription_type=subscription_type)
    if not spec.member_ids:
        return {}
    sorted_members = _sorted_member_ids(spec)
    result: dict[str, dict[str, list[int]]] = {}
    if spec.subscription_type == HOMOGENEOUS:
        member_count = len(spec.member_ids)
        ranges = []
        for topic_id in spec.subscribed_topic_ids[sorted_members[0]]:
            count = spec.num_partitions(topic_id)
            if count == -1:
                raise AssignorError("Member is subscribed to a non-existent topic")
            ranges.append(_TopicRanges(topic_id, count, member_count))
        capacity = float_presized_capacity(len(ranges))
        for member_id in sorted_members:
            result[member_id] = _member_assignment(ranges, capacity)
    else:
        by_topic: dict[str, _TopicRanges] = {}
        for member_id in sorted_members:
            for topic_id in spec.subscribed_topic_ids[member_id]:
                topic = by_topic.get(topic_id)
                if topic is None:
                    count = spec.num_partitions(topic_id)
                    if count == -1:
                        raise AssignorError("Member is subscribed to a non-existent topic")
                    topic = by_topic[topic_id] = _TopicRanges(topic_id, count, 0)
                topic.num_members += 1
        for member_id in sorted_members:
            member_topics = [by_topic[t] for t in spec.subscribed_topic_ids[member_id]]
            # presized from TopicIds.size(), which also counts names that resolve to no topic
            capacity = float_presized_capacity(spec.subscribed_topic_count[member_id])
            result[member_id] = _member_assignment(member_topics, capacity)
    return {m: result[m] for m in spec.member_ids}


def _member_assignment(topics: list[_TopicRanges], initial_capacity: int) -> dict[str, list[int]]:
    table = JavaHashMap(uuid_hash, initial_capacity)
    partitions: dict[str, list[int]] = {}
    for topic in topics:
        taken = topic.take_range()
        if len(taken) > 0:
            table.add(topic.topic_id)
            partitions[topic.topic_id] = list(taken)
    return {t: partitions[t] for t in table.order()}


def _sorted_member_ids(spec: GroupSpec) -> list[str]:
    """`RangeAssignor.sortMemberIds`: static members first by instance id, then the others by member id."""

    def key(member_id: str) -> tuple[int, str]:
        instance_id = spec.instance_ids[member_id]
        if instance_id is not None:
            return (0, java_string_sort_key(instance_id))
        return (1, java_string_sort_key(member_id))

    return sorted(spec.member_ids, key=key)
