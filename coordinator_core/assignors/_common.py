"""Steps shared by the client-side assignors (`AbstractPartitionAssignor`)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from coordinator_core.assignors._model import MemberSubscription, PartitionRacks, TopicPartition
from coordinator_core.javaisms import JavaHashMap, java_string_hash


def topics_in_java_order(
    partitions_per_topic: Mapping[str, int], members_in_hash_order: Sequence[MemberSubscription]
) -> list[str]:
    """Keys of the leader's `partitionsPerTopic` HashMap, in iteration order.

    `AbstractPartitionAssignor.assign(Cluster, GroupSubscription)` collects every subscribed topic into a
    HashSet (members in map order, topics in list order), then puts, in that set's order, each topic that
    has metadata with at least one partition into a new HashMap. Topics nobody subscribes to, and topics
    with no partitions (deleted or not yet created), are never seen by the assignor.
    """
    subscribed = JavaHashMap(java_string_hash)
    for member in members_in_hash_order:
        for topic in member.topics:
            subscribed.add(topic)
    existing = JavaHashMap(java_string_hash)
    for topic in subscribed.order():
        if partitions_per_topic.get(topic, 0) > 0:
            existing.add(topic)
    return existing.order()


def use_rack_aware_assignment(
    consumer_racks: Collection[str],
    partition_racks: Collection[str],
    racks_per_partition: Mapping[TopicPartition, frozenset[str]],
) -> bool:
    """`AbstractPartitionAssignor.useRackAwareAssignment` (3.5+): racks matter only if some consumer has a
    rack that some replica is on, and not every partition has replicas on the same set of racks."""
    if not consumer_racks or not set(consumer_racks) & set(partition_racks):
        return False
    all_racks = frozenset(partition_racks)
    return any(racks != all_racks for racks in racks_per_partition.values())


def replica_racks(partition_racks: PartitionRacks | None, tp: TopicPartition) -> frozenset[str]:
    if partition_racks is None:
        return frozenset()
    racks = partition_racks.get(tp)
    return frozenset(r for r in racks if r is not None) if racks else frozenset()
