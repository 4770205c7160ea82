"""What the KIP-848 group coordinator hands its server-side assignors, rebuilt from plain data.

Kafka's `TargetAssignmentBuilder` gives an assignor a `GroupSpec` (the members, their subscribed topic ids,
their previous *target* assignments, and the group's subscription type) and a `SubscribedTopicDescriber`
(partition counts from the metadata image). The assignors iterate Java hash maps and sets of those inputs,
and some of their choices (which partitions a member keeps, the order of its topics) depend on that
iteration order. This module reproduces each input with the Java collection Kafka 4.4 builds for it:

* member order: `GroupSpec.memberIds()` is the key set of a default `HashMap` into which the coordinator
  puts the members in the order given here (in a live coordinator: `group.members()`'s iteration order,
  then the updated members);
* a member's subscription: `ConsumerGroupMember` keeps its subscribed topic *names* as
  `new HashSet<>(list)`; the assignor sees `TopicIds`, a view that walks those names in set order, resolves
  each through the metadata image and skips names without a topic, but whose `size()` still counts them;
* a member's previous target assignment: `Assignment.fromRecord` of its ConsumerGroupTargetAssignmentMember
  record, i.e. `Collectors.toMap` (a default HashMap filled in record order) of `new HashSet<>(partitions)`,
  wrapped unmodifiable; the assignors copy such a map (`AssignorHelpers.deepCopyAssignment`) before
  changing it, and the copy has a different table size, hence maybe another order;
* the subscription type: `ConsumerGroup.subscriptionType` (no regular expressions): HOMOGENEOUS iff every
  subscribed topic name is subscribed by every member (also when nobody subscribes to anything).

The inverted target assignment ("is this partition assigned?") is the union of the members' assignments.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from coordinator_core.assignors._model import AssignorError
from coordinator_core.javaisms import (
    JavaHashMap,
    hash_set_capacity_from_collection,
    integer_hash,
    java_string_hash,
    uuid_bits,
    uuid_hash,
)

HOMOGENEOUS = "HOMOGENEOUS"
HETEROGENEOUS = "HETEROGENEOUS"

TargetAssignment = dict[str, dict[str, list[int]]]
"""member id -> topic id -> partitions, each level in the iteration order of Kafka's result maps and sets
(the order the coordinator writes them into the member's ConsumerGroupTargetAssignmentMember record)."""


@dataclass(frozen=True)
class ConsumerGroupMemberSpec:
    """A member of a KIP-848 consumer group as the target assignment builder sees it.

    Attributes:
        member_id: the member id.
        subscribed_topic_names: the topic names the member subscribed to, in the order it sent them.
        target_assignment: its previous target assignment, topic id -> partitions, in the order of its
            ConsumerGroupTargetAssignmentMember record (a member without one: empty).
        instance_id: `group.instance.id` of a static member, else None (orders members in `range`).
        rack_id: `client.rack`, else None (Kafka 3.8+ server assignors ignore racks).
    """

    member_id: str
    subscribed_topic_names: Sequence[str]
    target_assignment: Mapping[str, Sequence[int]] = field(default_factory=dict)
    instance_id: str | None = None
    rack_id: str | None = None


@dataclass(frozen=True)
class TopicMetadata:
    """A topic of the cluster's metadata image.

    Attributes:
        topic_id: the topic's Kafka Uuid in its 22-character base64url form.
        num_partitions: its partition count.
        partition_racks: the racks of each partition's replicas; kept for completeness, since the server
            assignors have not used racks since Kafka 3.8 (KAFKA-16694).
    """

    topic_id: str
    num_partitions: int
    partition_racks: Sequence[Collection[str]] | None = None


class JavaPartitionsMap:
    """A `Map<Uuid, Set<Integer>>` of Kafka's assignors: keys and each set in Java iteration order.

    `immutable` marks the maps Kafka wraps with `Collections.unmodifiableMap` (the assignors' inputs), which
    an assignor copies before its first change.
    """

    __slots__ = ("immutable", "sets", "topics")

    def __init__(self, topics: JavaHashMap, sets: dict[str, JavaHashMap], immutable: bool) -> None:
        self.topics = topics
        self.sets = sets
        self.immutable = immutable

    @classmethod
    def empty(cls, initial_capacity: int = 16) -> JavaPartitionsMap:
        """`new HashMap<>(initial_capacity)`."""
        return cls(JavaHashMap(uuid_hash, initial_capacity), {}, immutable=False)

    @classmethod
    def from_record(cls, record: Mapping[str, Sequence[int]]) -> JavaPartitionsMap:
        """`Assignment.fromRecord`: a default HashMap filled in record order, each `new HashSet<>(list)`."""
        topics = JavaHashMap(uuid_hash)
        sets: dict[str, JavaHashMap] = {}
        for topic_id, partitions in record.items():
            uuid_bits(topic_id)  # a malformed id fails here, as Uuid.fromString would
            topics.add(topic_id)
            sets[topic_id] = _hash_set_of(partitions)
        return cls(topics, sets, immutable=True)

    def deep_copy(self) -> JavaPartitionsMap:
        """`AssignorHelpers.deepCopyAssignment`: `new HashMap<>(size)`, each set `new HashSet<>(set)`."""
        topics = JavaHashMap(uuid_hash, len(self.topics))
        sets: dict[str, JavaHashMap] = {}
        for topic_id in self.topics.order():
            topics.add(topic_id)
            sets[topic_id] = _hash_set_of(self.sets[topic_id].order())
        return JavaPartitionsMap(topics, sets, immutable=False)

    def __len__(self) -> int:
        return len(self.topics)

    def topic_ids(self) -> list[str]:
        return self.topics.order()

    def partitions(self, topic_id: str) -> list[int]:
        return self.sets[topic_id].order()

    def size_of(self, topic_id: str) -> int:
        return len(self.sets[topic_id])

    def get(self, topic_id: str) -> JavaHashMap | None:
        return self.sets.get(topic_id)

    def put(self, topic_id: str, partitions: JavaHashMap) -> None:
        """`put` of a new key (appended to its bucket)."""
        self.topics.add(topic_id)
        self.sets[topic_id] = partitions

    def compute_if_absent(self, topic_id: str, initial_capacity: int = 16) -> JavaHashMap:
        """`computeIfAbsent(topicId, __ -> new HashSet<>(initial_capacity))` (see
        `JavaHashMap.compute_if_absent`: it may resize even when the topic is already there)."""
        if not self.topics.compute_if_absent(topic_id):
            return self.sets[topic_id]
        created = JavaHashMap(integer_hash, initial_capacity)
        self.sets[topic_id] = created
        return created

    def remove_topic(self, topic_id: str) -> None:
        if self.topics.discard(topic_id):
            del self.sets[topic_id]

    def to_dict(self) -> dict[str, list[int]]:
        return {t: self.sets[t].order() for t in self.topics.order()}


def _hash_set_of(partitions: Iterable[int]) -> JavaHashMap:
    """`new HashSet<>(collection)` (capacity from the collection's size, duplicates included)."""
    items = list(partitions)
    table = JavaHashMap(integer_hash, table_capacity=hash_set_capacity_from_collection(len(items)))
    for p in items:
        table.add(int(p))
    return table


@dataclass
class GroupSpec:
    """`GroupSpecImpl` plus `SubscribedTopicDescriber` over plain data (see the module docstring).

    Attributes:
        member_ids: `memberIds()` in Java iteration order.
        subscribed_topic_ids: member -> its `TopicIds` in iteration order (resolvable names only).
        subscribed_topic_count: member -> `TopicIds.size()` (its distinct names, resolvable or not).
        subscription_type: HOMOGENEOUS or HETEROGENEOUS.
        assignments: member -> previous target assignment (immutable JavaPartitionsMap).
        instance_ids: member -> `group.instance.id` or None.
        partition_counts: topic id -> partition count, for the topics of the metadata image.
        assigned: (topic id, partition) pairs of every member's previous target assignment.
    """

    member_ids: list[str]
    subscribed_topic_ids: dict[str, list[str]]
    subscribed_topic_count: dict[str, int]
    subscription_type: str
    assignments: dict[str, JavaPartitionsMap]
    instance_ids: dict[str, str | None]
    partition_counts: dict[str, int]
    assigned: set[tuple[str, int]]

    def num_partitions(self, topic_id: str) -> int:
        """`SubscribedTopicDescriber.numPartitions`: -1 for a topic missing from the metadata image."""
        return self.partition_counts.get(topic_id, -1)

    def is_partition_assigned(self, topic_id: str, partition: int) -> bool:
        return (topic_id, partition) in self.assigned


def build_group_spec(
    members: Sequence[ConsumerGroupMemberSpec],
    topics: Mapping[str, TopicMetadata],
    *,
    subscription_type: str | None = None,
) -> GroupSpec:
    """The GroupSpec Kafka's `TargetAssignmentBuilder` builds for these members over this metadata.

    Args:
        members: the group's members, in the order the coordinator puts them into its member spec map.
        topics: topic name -> metadata for every topic of the metadata image (at least the subscribed ones).
        subscription_type: override the group's subscription type (HOMOGENEOUS/HETEROGENEOUS), e.g. for a
            group with regular-expression subscriptions; by default computed from the topic names.
    """
    seen: set[str] = set()
    for member in members:
        if member.member_id in seen:
            raise ValueError(f"member id {member.member_id!r} appears twice")
        seen.add(member.member_id)
    topic_id_of: dict[str, str] = {}
    partition_counts: dict[str, int] = {}
    for name, metadata in topics.items():
        uuid_bits(metadata.topic_id)
        if metadata.topic_id in partition_counts:
            raise ValueError(f"topic id {metadata.topic_id} names two topics")
        topic_id_of[name] = metadata.topic_id
        partition_counts[metadata.topic_id] = metadata.num_partitions

    member_table = JavaHashMap(java_string_hash)
    subscribed_topic_ids: dict[str, list[str]] = {}
    subscribed_topic_count: dict[str, int] = {}
    assignments: dict[str, JavaPartitionsMap] = {}
    instance_ids: dict[str, str | None] = {}
    assigned: set[tuple[str, int]] = set()
    names_by_member: list[list[str]] = []
    for member in members:
        member_table.add(member.member_id)
        names = JavaHashMap(
            java_string_hash, table_capacity=hash_set_capacity_from_collection(len(member.subscribed_topic_names))
        )
        for name in member.subscribed_topic_names:
            names.add(name)
        name_order = names.order()
        names_by_member.append(name_order)
        subscribed_topic_ids[member.member_id] = [topic_id_of[n] for n in name_order if n in topic_id_of]
        subscribed_topic_count[member.member_id] = len(name_order)
        assignment = JavaPartitionsMap.from_record(member.target_assignment)
        assignments[member.member_id] = assignment
        instance_ids[member.member_id] = member.instance_id
        for topic_id in assignment.topic_ids():
            assigned.update((topic_id, p) for p in assignment.partitions(topic_id))

    if subscription_type is None:
        subscription_type = group_subscription_type(names_by_member)
    elif subscription_type not in (HOMOGENEOUS, HETEROGENEOUS):
        raise ValueError(f"subscription_type must be {HOMOGENEOUS} or {HETEROGENEOUS}, got {subscription_type!r}")
    return GroupSpec(
        member_ids=member_table.order(),
        subscribed_topic_ids=subscribed_topic_ids,
        subscribed_topic_count=subscribed_topic_count,
        subscription_type=subscription_type,
        assignments=assignments,
        instance_ids=instance_ids,
        partition_counts=partition_counts,
        assigned=assigned,
    )


def group_subscription_type(subscribed_names_per_member: Sequence[Collection[str]]) -> str:
    """`ConsumerGroup.subscriptionType` without regular expressions: HOMOGENEOUS iff every subscribed topic
    name is subscribed by every member (names, resolvable or not, not topic ids)."""
    counts: dict[str, int] = {}
    for names in subscribed_names_per_member:
        for name in set(names):
            counts[name] = counts.get(name, 0) + 1
    members = len(subscribed_names_per_member)
    return HOMOGENEOUS if all(c == members for c in counts.values()) else HETEROGENEOUS


def check_partition_index(topic_id: str, partition: int, num_partitions: int) -> None:
    """Java indexes a per-topic owner array with the partition: out of range is an
    ArrayIndexOutOfBoundsException, which fails the assignment."""
    if not 0 <= partition < num_partitions:
        raise AssignorError(
            f"partition {partition} of topic {topic_id} is outside its {num_partitions} partitions "
            "(ArrayIndexOutOfBoundsException in Kafka)"
        )


__all__ = [
    "HETEROGENEOUS",
    "HOMOGENEOUS",
    "ConsumerGroupMemberSpec",
    "GroupSpec",
    "JavaPartitionsMap",
    "TargetAssignment",
    "TopicMetadata",
    "build_group_spec",
    "check_partition_index",
    "group_subscription_type",
]
