"""KIP-848 server-side `uniform` assignor, as in Kafka 4.0.0-4.4 (`org.apache.kafka.coordinator.group.assignor.
UniformAssignor` with its homogeneous and heterogeneous builders; the default server assignor). Two
revisions, checked against each release's classes: 4.0.0 (`extra_slots_to_holders=False`) and 4.0.1/4.1.0+
(KAFKA-18688, backported to the 4.0 branch), unchanged in effect up to 4.4.0.

The coordinator runs it on every group epoch bump to compute the members' new *target* assignments from
their previous target assignments. It is sticky and balanced, and Java's hash iteration order decides
several of its choices: the member order (a HashMap of member ids), the order topics are handed out in a
homogeneous group (a HashSet of topic Uuids), and which partitions a member over its quota keeps (the
first ones its HashSet<Integer> iterates). See `_server_spec` for how each input collection is rebuilt.

Homogeneous groups (every member subscribes to the same topics), KAFKA-18688 revision (4.0.1+, 4.1+):

1. Topics: the first member's subscribed topic ids, copied into a HashSet<Uuid>; a topic missing from
   the metadata fails the assignment. `unassigned` lists, topic by topic in that set's order, the
   partitions nobody has in its previous target assignment; T = all their partitions.
2. Quotas: `min = T // M`, `remaining = T % M` members may take one more.
3. Members in order, index i: the quota is `min`, plus one while `remaining > 0`. Walking the member's
   previous assignment (map order): a topic no longer subscribed is dropped; a topic's set that fits the
   quota is kept whole; otherwise the first `quota` partitions of the set are kept and the rest appended
   to `unassigned`. A member left with room that took the extra slot gives it back if more members are
   still to come (`M - i`) than extra slots remain, so that the extra slots go to members that already
   filled them. A member with room left is "unfilled"; one that kept its extra slot uses up one.
   4.0.0 (before KAFKA-18688, `extra_slots_to_holders=False`): the first `remaining` members in order take
   the extra slots, whether or not they already hold that many partitions (so a member at `min + 1` later
   in the order gives a partition up to an earlier member with room).
4. The unfilled members, in order, take their remaining quota from the front of `unassigned`; anything
   left over fails the assignment ("Partitions were left unassigned").

Heterogeneous groups (KAFKA-17710 rework, 4.0.0+):

1. Members are numbered in order (ties below break on this index). Each topic's subscribers are listed
   in index order; a subscribed topic missing from the metadata fails the assignment.
2. Each member keeps its whole previous assignment of topics it still subscribes to (no quota trimming)
   and drops the rest; the last member listing a partition owns it.
3. Topics with unowned partitions, sorted by partitions per subscriber (descending, as a double), then
   subscriber count (ascending), then topic id (`Uuid.compareTo`), hand each unowned partition (ascending)
   to the least loaded subscriber: subscribers sorted by (partitions owned in total, index) are filled
   level by level, each level round-robin in that order.
4. Balancing, over topics with at least two subscribers in the same topic order, at most 16 passes,
   ending early after a full pass without moves: while a topic's subscribers differ by more than one
   partition, the most loaded subscriber that owns partitions of the topic (walking the most loaded level
   from its end) gives its highest-sorted partition (partitions sorted by (owner index, partition)) to the
   least loaded subscriber, until the levels differ by at most one.

Example (topic ids and member order as in Kafka's own tests; members put in this order):

>>> from coordinator_core.assignors.server_uniform import assign_server_uniform
>>> from coordinator_core.assignors._server_spec import ConsumerGroupMemberSpec, TopicMetadata
>>> topics = {"topic1": TopicMetadata("T1-A4s3VTwiI5CTbEp6POw", 3),
...           "topic3": TopicMetadata("T3-CU8fVTLCz5YMkLoDQsQ", 2)}
>>> both = ["topic1", "topic3"]
>>> assign_server_uniform([ConsumerGroupMemberSpec("A", both), ConsumerGroupMemberSpec("B", both)], topics)
{'A': {'T3-CU8fVTLCz5YMkLoDQsQ': [0, 1]}, 'B': {'T1-A4s3VTwiI5CTbEp6POw': [0, 1, 2]}}

(`topic3` is handed out first: its Uuid hashes to bucket 9 of the HashSet, `topic1`'s to bucket 10.)
A heterogeneous group (`UniformHeterogeneousAssignmentBuilderTest.testFirstAssignmentTwoMembersTwoTopics`):

>>> topics = {"topic1": TopicMetadata("T1-A4s3VTwiI5CTbEp6POw", 3),
...           "topic3": TopicMetadata("T3-CU8fVTLCz5YMkLoDQsQ", 6)}
>>> members = [ConsumerGroupMemberSpec("A", ["topic1", "topic3"]), ConsumerGroupMemberSpec("B", ["topic3"])]
>>> for member_id, assignment in assign_server_uniform(members, topics).items():
...     print(member_id, assignment)
A {'T1-A4s3VTwiI5CTbEp6POw': [0, 1, 2], 'T3-CU8fVTLCz5YMkLoDQsQ': [4]}
B {'T3-CU8fVTLCz5YMkLoDQsQ': [0, 1, 2, 3, 5]}

(Both topics have 3 partitions per subscriber; topic1, with fewer subscribers, is handed out first, all to
A. topic3 then fills B up to A's 3 partitions, and its last three alternate B, A, B.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from coordinator_core.assignors._model import AssignorError
from coordinator_core.assignors._server_spec import (
    HOMOGENEOUS,
    ConsumerGroupMemberSpec,
    GroupSpec,
    JavaPartitionsMap,
    TargetAssignment,
    TopicMetadata,
    build_group_spec,
    check_partition_index,
)
from coordinator_core.javaisms import (
    JavaHashMap,
    float_presized_capacity,
    hash_set_capacity_from_collection,
    uuid_hash,
    uuid_sort_key,
)

MAX_BALANCE_ITERATIONS = 16
"""`UniformHeterogeneousAssignmentBuilder.MAX_ITERATION_COUNT`: passes over the topics when balancing."""


def assign_server_uniform(
    members: Sequence[ConsumerGroupMemberSpec],
    topics: Mapping[str, TopicMetadata],
    *,
    subscription_type: str | None = None,
    extra_slots_to_holders: bool = True,
) -> TargetAssignment:
    """The new target assignment Kafka 4.4's `uniform` server assignor computes.

    Args:
        members: the group's members in the coordinator's insertion order, each with its subscribed topic
            names and previous target assignment.
        topics: topic name -> metadata of the topics in the metadata image.
        subscription_type: HOMOGENEOUS/HETEROGENEOUS override (default: computed as the group does).
        extra_slots_to_holders: KAFKA-18688 (4.0.1+, 4.1.0+) in the homogeneous builder; False replays
            4.0.0, where the first members in order take the extra slots. Same results in 4.0.1-4.4.0
            otherwise (checked against each release's classes).

    Returns:
        member id -> topic id -> partitions, every member included, in Kafka's iteration order.

    Raises:
        AssignorError: where Kafka's assignor throws (the coordinator then fails the heartbeat).
    """
    spec = build_group_spec(members, topics, subscription_type=subscription_type)
    if not spec.member_ids:
        return {}
    if spec.subscription_type == HOMOGENEOUS:
        result = _HomogeneousBuilder(spec, extra_slots_to_holders).build()
    else:
        result = _HeterogeneousBuilder(spec).build()
    return {m: result[m].to_dict() if m in result else {} for m in spec.member_ids}


class _HomogeneousBuilder:
    def __init__(self, spec: GroupSpec, extra_slots_to_holders: bool = True) -> None:
        self.spec = spec
        self.extra_slots_to_holders = extra_slots_to_holders
        first = spec.member_ids[0]
        # new HashSet<>(TopicIds): sized from TopicIds.size(), which counts unresolvable names too
        self.subscribed = JavaHashMap(
            uuid_hash, table_capacity=hash_set_capacity_from_collection(spec.subscribed_topic_count[first])
        )
        for topic_id in spec.subscribed_topic_ids[first]:
            self.subscribed.add(topic_id)

    def build(self) -> dict[str, JavaPartitionsMap]:  # noqa: C901, PLR0912 - follows Kafka's UniformHeterogeneousAssignmentBuilder step by step; the oracle tests pin it
        spec = self.spec
        if len(self.subscribed) == 0:
            return {}
        unassigned: list[tuple[str, int]] = []
        total = 0
        for topic_id in self.subscribed.order():
            count = spec.num_partitions(topic_id)
            if count == -1:
                raise AssignorError(
                    f"Members are subscribed to topic {topic_id} which doesn't exist in the topic metadata."
                )
            unassigned.extend((topic_id, p) for p in range(count) if not spec.is_partition_assigned(topic_id, p))
            total += count

        member_count = len(spec.member_ids)
        min_quota, remaining_extra = divmod(total, member_count)
        target: dict[str, JavaPartitionsMap] = {}
        unfilled: list[tuple[str, int]] = []
        for index, member_id in enumerate(spec.member_ids):
            old = spec.assignments[member_id]
            new: JavaPartitionsMap | None = None
            quota = min_quota
            has_extra = False
            if remaining_extra > 0:
                quota += 1
                has_extra = True
            for topic_id in old.topic_ids():
                if topic_id in self.subscribed:
                    size = old.size_of(topic_id)
                    if size <= quota:
                        quota -= size
                        continue
                    for partition in old.partitions(topic_id):
                        if quota > 0:
                            quota -= 1
                            continue
                        if new is None:
                            new = old.deep_copy()
                        kept = new.sets[topic_id]
                        kept.discard(partition)
                        if len(kept) == 0:
                            new.remove_topic(topic_id)
                        unassigned.append((topic_id, partition))
                else:
                    if new is None:
                        new = old.deep_copy()
                    new.remove_topic(topic_id)
            # KAFKA-18688: an unfilled member hands its extra slot back while enough members remain to
            # take all the extra slots, so that members already holding quota + 1 partitions keep them.
            # 4.0.0 lacks this: the extra slot stays with whoever is first in the member order.
            if self.extra_slots_to_holders and quota > 0 and has_extra and member_count - index > remaining_extra:
                quota -= 1
                has_extra = False
            if quota > 0:
                unfilled.append((member_id, quota))
            if has_extra:
                remaining_extra -= 1
            target[member_id] = new if new is not None else old

        next_index = 0
        for member_id, quota in unfilled:
            assignment = target[member_id]
            if assignment.immutable:
                assignment = assignment.deep_copy()
                target[member_id] = assignment
            for _ in range(quota):
                if next_index >= len(unassigned):
                    break
                topic_id, partition = unassigned[next_index]
                next_index += 1
                assignment.compute_if_absent(topic_id).add(partition)
        if next_index < len(unassigned):
            raise AssignorError("Partitions were left unassigned")
        return target


class _Balancer:
    """`MemberAssignmentBalancer`: a topic's subscribers sorted by (total partitions, index), with a
    least loaded range growing rightwards and a most loaded range growing leftwards, each handed out
    round-robin at its current partition count (level)."""

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes  # live: the builder updates it while the balancer walks
        self.sorted_members: list[int] = []
        self.least_end = 0
        self.least_level = -1
        self.next_least = 0
        self.most_start = 0
        self.most_end = 0
        self.most_level = 1
        self.next_most = -1

    def initialize(self, members: Sequence[int]) -> int:
        if not members:
            raise AssignorError("Cannot balance an empty subscriber list.")
        sizes = self.sizes
        self.sorted_members = sorted(members, key=lambda m: (sizes[m], m))
        first, last = self.sorted_members[0], self.sorted_members[-1]
        self.least_end = 0
        self.least_level = sizes[first] - 1
        self.next_least = 0
        self.most_start = len(self.sorted_members)
        self.most_end = len(self.sorted_members)
        self.most_level = sizes[last] + 1
        self.next_most = len(self.sorted_members) - 1
        return sizes[last] - sizes[first]

    def next_least_loaded(self) -> int:
        members, sizes = self.sorted_members, self.sizes
        if self.next_least >= self.least_end:
            self.least_level += 1
            while self.least_end < len(members) and sizes[members[self.least_end]] == self.least_level:
                self.least_end += 1
            self.next_least = 0
        member = members[self.next_least]
        self.next_least += 1
        return member

    def next_most_loaded(self) -> int:
        members, sizes = self.sorted_members, self.sizes
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                # the range was emptied by exclusions: restart from the level just below it
                self.most_level = sizes[members[self.most_start - 1]]
            else:
                self.most_level -= 1
            while self.most_start > 0 and sizes[members[self.most_start - 1]] == self.most_level:
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        member = members[self.next_most]
        self.next_most -= 1
        return member

    def exclude_most_loaded(self) -> None:
        """Swap the member last returned by `next_most_loaded` to the end of the most loaded range and
        shrink the range past it."""
        members = self.sorted_members
        excluded = members[self.next_most + 1]
        members[self.next_most + 1] = members[self.most_end - 1]
        members[self.most_end - 1] = excluded
        self.most_end -= 1

    def is_balanced(self) -> bool:
        return self.most_level - self.least_level <= 1


class _HeterogeneousBuilder:
    def __init__(self, spec: GroupSpec) -> None:
        self.spec = spec
        self.member_ids = list(spec.member_ids)
        self.member_index = {m: i for i, m in enumerate(self.member_ids)}
        self.topic_subscribers: dict[str, list[int]] = {}
        self.subscribed_sets: dict[str, set[str]] = {}
        for index, member_id in enumerate(self.member_ids):
            for topic_id in spec.subscribed_topic_ids[member_id]:
                if spec.num_partitions(topic_id) == -1:
                    raise AssignorError(
                        f"Members are subscribed to topic {topic_id} which doesn't exist in the topic metadata."
                    )
                self.topic_subscribers.setdefault(topic_id, []).append(index)
            self.subscribed_sets[member_id] = set(spec.subscribed_topic_ids[member_id])
        self.sizes = [0] * len(self.member_ids)
        self.owners: dict[str, list[int]] = {t: [-1] * spec.num_partitions(t) for t in self.topic_subscribers}
        self.target: dict[str, JavaPartitionsMap] = {}

    def _topic_order_key(self, topic_id: str) -> tuple[float, int, tuple[int, int]]:
        subscribers = len(self.topic_subscribers[topic_id])
        per_subscriber = self.spec.num_partitions(topic_id) / subscribers  # Java: double division
        return (-per_subscriber, subscribers, uuid_sort_key(topic_id))

    def _sorted_topics(self, topic_ids: list[str]) -> list[str]:
        return sorted(topic_ids, key=self._topic_order_key)

    def build(self) -> dict[str, JavaPartitionsMap]:
        if not self.topic_subscribers:
            return {}
        self._revoke_unsubscribed()
        self._assign_unowned()
        balanced_topics = [t for t in self.topic_subscribers if len(self.topic_subscribers[t]) >= 2]
        if balanced_topics:
            self._balance(self._sorted_topics(balanced_topics))
        return self.target

    def _revoke_unsubscribed(self) -> None:
        spec = self.spec
        for member_id in spec.member_ids:
            index = self.member_index[member_id]
            old = spec.assignments[member_id]
            new: JavaPartitionsMap | None = None
            subscribed = self.subscribed_sets[member_id]
            for topic_id in old.topic_ids():
                if topic_id in subscribed:
                    self.sizes[index] += old.size_of(topic_id)
                    owners = self.owners[topic_id]
                    for partition in old.partitions(topic_id):
                        check_partition_index(topic_id, partition, len(owners))
                        owners[partition] = index
                else:
                    if new is None:
                        new = old.deep_copy()
                    new.remove_topic(topic_id)
            self.target[member_id] = new if new is not None else old

    def _assign_unowned(self) -> None:
        unowned: dict[str, list[int]] = {}
        for topic_id, owners in self.owners.items():
            free = [p for p, owner in enumerate(owners) if owner == -1]
            if free:
                unowned[topic_id] = free
        balancer = _Balancer(self.sizes)
        for topic_id in self._sorted_topics(list(unowned)):
            balancer.initialize(self.topic_subscribers[topic_id])
            for partition in unowned[topic_id]:
                self._assign(topic_id, partition, balancer.next_least_loaded())

    def _balance(self, sorted_topics: list[str]) -> None:
        balancer = _Balancer(self.sizes)
        last_moved_topic = -1
        for _ in range(MAX_BALANCE_ITERATIONS):
            for topic_index, topic_id in enumerate(sorted_topics):
                if topic_index == last_moved_topic:
                    return  # a whole pass since the last move
                moved = self._balance_topic(topic_id, balancer)
                if moved > 0 or last_moved_topic == -1:
                    last_moved_topic = topic_index

    def _balance_topic(self, topic_id: str, balancer: _Balancer) -> int:
        owners = self.owners[topic_id]
        if balancer.initialize(self.topic_subscribers[topic_id]) <= 1:
            return 0
        partitions = sorted(range(len(owners)), key=lambda p: (owners[p], p))
        start: dict[int, int] = {}
        end: dict[int, int] = {}  # exclusive
        for position, partition in enumerate(partitions):
            owner = owners[partition]
            start.setdefault(owner, position)
            end[owner] = position + 1
        moved = 0
        while not balancer.is_balanced():
            donor = -1
            while True:
                donor = balancer.next_most_loaded()
                if donor == -1:
                    break
                if donor not in end or end[donor] - start[donor] <= 0:
                    balancer.exclude_most_loaded()
                    continue
                break
            if donor == -1:
                break
            end[donor] -= 1
            partition = partitions[end[donor]]
            receiver = balancer.next_least_loaded()
            if balancer.is_balanced():
                break
            self._assign(topic_id, partition, receiver)
            moved += 1
        return moved

    def _mutable(self, member_id: str) -> JavaPartitionsMap:
        assignment = self.target[member_id]
        if assignment.immutable:
            assignment = assignment.deep_copy()
            self.target[member_id] = assignment
        return assignment

    def _assign(self, topic_id: str, partition: int, member_index: int) -> None:
        owners = self.owners[topic_id]
        previous = owners[partition]
        if previous != -1:
            assignment = self._mutable(self.member_ids[previous])
            partitions = assignment.get(topic_id)
            if partitions is not None:
                partitions.discard(partition)
                if len(partitions) == 0:
                    assignment.remove_topic(topic_id)
            owners[partition] = -1
            self.sizes[previous] -= 1
        subscribers = len(self.topic_subscribers[topic_id])
        estimated_per_subscriber = (len(owners) + subscribers - 1) // subscribers
        self._mutable(self.member_ids[member_index]).compute_if_absent(
            topic_id, float_presized_capacity(estimated_per_subscriber)
        ).add(partition)
        owners[partition] = member_index
        self.sizes[member_index] += 1
