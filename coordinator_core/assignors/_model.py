"""Plain-data inputs shared by every assignor, and the Java orderings they are sorted by."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from coordinator_core.javaisms import JavaHashMap, java_string_hash, java_string_sort_key

TopicPartition = tuple[str, int]
"""A partition as ``(topic, partition)``: compares equal to Kafka's TopicPartition printed as a pair."""

Assignment = dict[str, list[TopicPartition]]
"""member id -> assigned partitions, in the order Kafka's assignor lists them."""

PartitionRacks = Mapping[TopicPartition, Collection[str]]
"""(topic, partition) -> the racks of its replicas (all replicas, offline ones included; no None)."""


class AssignorError(RuntimeError):
    """The assignor failed where Kafka's would throw (the rebalance fails in real life), e.g. the
    constrained sticky path's IllegalStateException or KIP-848's "Partitions were left unassigned"."""


@dataclass(frozen=True)
class MemberSubscription:
    """One member as the group leader (or the KIP-848 coordinator) sees it when it assigns.

    Attributes:
        member_id: the member id.
        topics: subscribed topic names, in the order the member listed them.
        user_data: the assignor's opaque ConsumerProtocol user data (``sticky``: previous assignment and
            generation; ``cooperative-sticky``: the generation), or None.
        owned_partitions: ConsumerProtocol Subscription v1+ owned partitions, in the order sent. For the
            server-side (KIP-848) assignors: the member's previous *target* assignment.
        generation: ConsumerProtocol Subscription v2+ generation id; None (or negative) when absent.
        group_instance_id: ``group.instance.id`` of a static member, else None.
        rack_id: ``client.rack``; None or "" when absent.
    """

    member_id: str
    topics: Sequence[str]
    user_data: bytes | None = None
    owned_partitions: Sequence[TopicPartition] = field(default_factory=tuple)
    generation: int | None = None
    group_instance_id: str | None = None
    rack_id: str | None = None

    @property
    def generation_id(self) -> int | None:
        """`Subscription.generationId()`: negative values mean "no generation"."""
        return self.generation if self.generation is not None and self.generation >= 0 else None

    @property
    def rack(self) -> str | None:
        """`Subscription.rackId()` filtered the way the assignors do: an empty rack is no rack."""
        return self.rack_id or None


def member_sort_key(member: MemberSubscription) -> tuple[int, str]:
    """`AbstractPartitionAssignor.MemberInfo.compareTo` (Kafka 2.4+, KIP-345): static members first, by
    `group.instance.id`; then dynamic members by member id; both with Java string order."""
    if member.group_instance_id is not None:
        return (0, java_string_sort_key(member.group_instance_id))
    return (1, java_string_sort_key(member.member_id))


def subscriptions_in_hash_order(subscriptions: Sequence[MemberSubscription]) -> list[MemberSubscription]:
    """The members in the iteration order of the leader's `Map<String, Subscription>`.

    `ConsumerCoordinator.onLeaderElected` puts the JoinGroup response's members, in the order the broker
    sent them, into a default `new HashMap<>()`; the assignors walk that map. A later duplicate member id
    replaces the earlier one's value but keeps its place, as `HashMap.put` does.
    """
    by_id: dict[str, MemberSubscription] = {}
    table = JavaHashMap(java_string_hash)
    for member in subscriptions:
        by_id[member.member_id] = member
        table.add(member.member_id)
    return [by_id[m] for m in table.order()]


def check_unique_members(subscriptions: Sequence[MemberSubscription]) -> None:
    seen: set[str] = set()
    for member in subscriptions:
        if member.member_id in seen:
            raise ValueError(f"member id {member.member_id!r} appears twice in the subscriptions")
        seen.add(member.member_id)


def topic_partition_sort_key(tp: TopicPartition) -> tuple[str, int]:
    """Kafka's usual TopicPartition order: topic (Java string order), then partition."""
    return (java_string_sort_key(tp[0]), tp[1])
