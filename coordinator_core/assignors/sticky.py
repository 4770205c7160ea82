"""Kafka's client-side sticky assignors: `StickyAssignor` (``sticky``, eager) and
`CooperativeStickyAssignor` (``cooperative-sticky``), as `AbstractStickyAssignor` computes them from
Kafka 3.0 on (constrained quota algorithm for equal subscriptions, topic-level general algorithm
otherwise), with the revisions of 3.4.1, 3.5.0, 3.5.2 and 3.7.1 selected by `StickyRevision`.

Both read the members' previous ownership ("member data"): ``sticky`` from its user data (previous
assignment + generation), ``cooperative-sticky`` from the subscription's owned partitions and generation
(or the generation in its user data). Where Kafka iterates a `HashMap` keyed by member id the same order
is reproduced (`javaisms.JavaHashMap`): it decides which members keep `maxQuota` partitions.
"""

from __future__ import annotations

import bisect
import contextlib
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from coordinator_core.assignors._common import replica_racks, topics_in_java_order, use_rack_aware_assignment
from coordinator_core.assignors._model import (
    Assignment,
    AssignorError,
    MemberSubscription,
    PartitionRacks,
    TopicPartition,
    subscriptions_in_hash_order,
    topic_partition_sort_key,
)
from coordinator_core.assignors.userdata import (
    DEFAULT_GENERATION,
    decode_cooperative_user_data,
    decode_sticky_user_data,
)
from coordinator_core.javaisms import JavaHashMap, java_string_sort_key, topic_partition_key_hash


@dataclass(frozen=True)
class StickyRevision:
    """Which revision of `AbstractStickyAssignor` ran (the group leader's kafka-clients version).

    Attributes:
        per_partition_generations: KAFKA-14639 (3.4.1/3.5.0): a doubly claimed partition goes to the
            higher generation; before, only members of the highest generation kept anything.
        winner_only_bookkeeping: KAFKA-15106 (3.5.2/3.6.0): the owner map records the winner of a
            claim conflict; before, the loser overwrote it.
        rack_aware: KIP-881 (3.5.0): rack-aware constrained and general paths.
        balanced_off_by_one_fixed: KAFKA-15106 (3.5.2/3.6.0): `isBalanced` asks for a gap of 2.
        sort_owned_by_partition: KAFKA-16277 (3.7.1/3.8.0): owned partitions are sorted by (partition,
            topic) before being trimmed to quota.
        rack_revocation_tracked: KAFKA-15170 (3.7.1/3.8.0): rack-mismatched owned partitions count as
            revoked, and the exactly-min list is cleared in the rack-aware round robin.
        cooperative_generation_from_user_data: KAFKA-12984 (2.8.1/3.0.0): cooperative-sticky reads the
            generation from its user data when the subscription has none.
        subscription_generation: KAFKA-13715 (3.4.0): the leader's client reads the generation field of
            ConsumerProtocol Subscription v2+; older clients never see it.
    """

    per_partition_generations: bool = True
    winner_only_bookkeeping: bool = True
    rack_aware: bool = True
    balanced_off_by_one_fixed: bool = True
    sort_owned_by_partition: bool = True
    rack_revocation_tracked: bool = True
    cooperative_generation_from_user_data: bool = True
    subscription_generation: bool = True


NEWEST = StickyRevision()


def _member_data(
    member: MemberSubscription, cooperative: bool, revision: StickyRevision
) -> tuple[list[TopicPartition], int | None]:
    if cooperative:
        if member.generation_id is not None and revision.subscription_generation:
            return list(member.owned_partitions), member.generation_id
        if not revision.cooperative_generation_from_user_data:
            return list(member.owned_partitions), None
        return list(member.owned_partitions), decode_cooperative_user_data(member.user_data)
    return decode_sticky_user_data(member.user_data)


class _RackInfo:
    """`AbstractStickyAssignor.RackInfo`: consumer and replica racks, when rack-aware assignment is on."""

    def __init__(
        self,
        topics: Sequence[str],
        partitions_per_topic: Mapping[str, int],
        members: Sequence[MemberSubscription],
        partition_racks: PartitionRacks | None,
        enabled: bool,
    ) -> None:
        consumers_by_rack: dict[str, list[str]] = {}
        if enabled:
            for m in members:
                if m.rack is not None:
                    consumers_by_rack.setdefault(m.rack, []).append(m.member_id)
        racks_of: dict[TopicPartition, frozenset[str]] = {}
        all_partition_racks: set[str] = set()
        if consumers_by_rack:
            for topic in topics:
                for p in range(partitions_per_topic[topic]):
                    racks = replica_racks(partition_racks, (topic, p))
                    racks_of[(topic, p)] = racks
                    all_partition_racks |= racks
        self.consumer_racks: dict[str, str] = {}
        self.partition_racks: dict[TopicPartition, frozenset[str]] = {}
        if use_rack_aware_assignment(consumers_by_rack.keys(), all_partition_racks, racks_of):
            for rack, consumers in consumers_by_rack.items():
                for c in consumers:
                    self.consumer_racks[c] = rack
            self.partition_racks = racks_of
        self.consumers_per_partition: dict[TopicPartition, int] = {
            tp: sum(len(consumers_by_rack.get(r, ())) for r in racks) for tp, racks in racks_of.items()
        }

    def racks_mismatch(self, consumer: str, tp: TopicPartition) -> bool:
        rack = self.consumer_racks.get(consumer)
        if rack is None:
            return False
        racks = self.partition_racks.get(tp)
        return racks is None or rack not in racks

    def sort_by_rack_consumers(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        if not self.consumers_per_partition:
            return partitions
        counts = self.consumers_per_partition
        return sorted(partitions, key=lambda tp: counts.get(tp, 0))

    def next_rack_consumer(self, tp: TopicPartition, consumers: list[str], first: int) -> int:
        racks = self.partition_racks.get(tp)
        if not racks:
            return -1
        n = len(consumers)
        for i in range(n):
            index = (first + i) % n
            rack = self.consumer_racks.get(consumers[index])
            if rack is not None and rack in racks:
                return index
        return -1


class _Prelude:
    """`allSubscriptionsEqual`: equal-subscription check and owned-partition claims by generation."""

    def __init__(
        self,
        all_topics: frozenset[str],
        members: Sequence[MemberSubscription],
        member_data: Mapping[str, tuple[list[TopicPartition], int | None]],
        revision: StickyRevision,
    ) -> None:
        self.all_equal = True
        self.max_generation = DEFAULT_GENERATION
        self.owned: dict[str, list[TopicPartition]] = {}
        self.multiply_claimed: set[TopicPartition] = set()
        self._highest_generation_members: list[str] = []
        subscribed: set[str] = set()
        owner_of: dict[TopicPartition, str] = {}
        subscription_generation = {
            m.member_id: (m.generation_id if m.generation_id is not None else DEFAULT_GENERATION)
            for m in members
        }
        for m in members:
            if not subscribed:
                subscribed.update(m.topics)
            elif self.all_equal and not (len(m.topics) == len(subscribed) and subscribed.issuperset(m.topics)):
                self.all_equal = False
            partitions, generation = member_data[m.member_id]
            owned: list[TopicPartition] = []
            self.owned[m.member_id] = owned
            if not revision.per_partition_generations:
                self._claim_highest_generation_only(m.member_id, partitions, generation, all_topics, owner_of)
                continue
            member_generation = generation if generation is not None else DEFAULT_GENERATION
            self.max_generation = max(self.max_generation, member_generation)
            for tp in partitions:
                if tp[0] not in all_topics:
                    continue
                other = owner_of.get(tp)
                if other is None:
                    owned.append(tp)
                    owner_of[tp] = m.member_id
                    continue
                other_generation = subscription_generation[other]
                if member_generation == other_generation:
                    self.multiply_claimed.add(tp)
                    _remove_first(self.owned[other], tp)
                    owner_of[tp] = m.member_id
                elif member_generation > other_generation:
                    owned.append(tp)
                    _remove_first(self.owned[other], tp)
                    owner_of[tp] = m.member_id
                elif not revision.winner_only_bookkeeping:
                    owner_of[tp] = m.member_id


    def _claim_highest_generation_only(
        self,
        member_id: str,
        partitions: list[TopicPartition],
        generation: int | None,
        all_topics: frozenset[str],
        owner_of: dict[TopicPartition, str],
    ) -> None:
        """3.0.0-3.4.0: only members of the highest generation seen so far keep owned partitions (a higher
        generation clears everything accepted before); a partition claimed twice within it is invalidated."""
        if generation is not None:
            if generation < self.max_generation:
                return
        elif self.max_generation != DEFAULT_GENERATION:
            return
        if generation is not None and generation > self.max_generation:
            owner_of.clear()
            self.multiply_claimed.clear()
            for other in self._highest_generation_members:
                self.owned[other].clear()
            self._highest_generation_members.clear()
            self.max_generation = generation
        self._highest_generation_members.append(member_id)
        owned = self.owned[member_id]
        for tp in partitions:
            if tp[0] not in all_topics:
                continue
            previous_owner = owner_of.get(tp)
            owner_of[tp] = member_id
            if previous_owner is None:
                owned.append(tp)
            else:
                _remove_first(self.owned[previous_owner], tp)
                self.multiply_claimed.add(tp)


def _remove_first(items: list[TopicPartition], tp: TopicPartition) -> None:
    with contextlib.suppress(ValueError):
        items.remove(tp)


class _ConstrainedBuilder:
    """`ConstrainedAssignmentBuilder`: all members subscribe to the same topics."""

    def __init__(
        self,
        partitions_per_topic: Mapping[str, int],
        topics: Sequence[str],
        rack_info: _RackInfo,
        owned: dict[str, list[TopicPartition]],
        member_order: Sequence[str],
        multiply_claimed: set[TopicPartition],
        revision: StickyRevision,
    ) -> None:
        self.partitions_per_topic = partitions_per_topic
        self.topics = topics
        self.rack_info = rack_info
        self.owned = owned
        self.member_order = member_order
        self.multiply_claimed = multiply_claimed
        self.revision = revision
        total = sum(partitions_per_topic[t] for t in topics)
        n = len(member_order)
        if n == 0:  # a group without members: Kafka's `totalPartitionsCount % numberOfConsumers` throws
            raise AssignorError("ArithmeticException: / by zero")
        self.min_quota = total // n
        self.max_quota = -(-total // n)
        self.expected_over = total % n
        self.current_over = 0
        self.maybe_revoked: dict[TopicPartition, str] = {}
        self.under_min: list[str] = []
        self.exactly_min: list[str] = []
        self.assignment: Assignment = {c: [] for c in member_order}
        self.assigned_list: list[TopicPartition] = []
        self.transferring: dict[TopicPartition, str] = {}

    def build(self) -> Assignment:
        self._assign_owned()
        unassigned = self._unassigned()
        self.under_min.sort(key=java_string_sort_key)
        self.exactly_min.sort(key=java_string_sort_key)
        unassigned = self.rack_info.sort_by_rack_consumers(unassigned)
        unassigned = self._assign_rack_aware_round_robin(unassigned)
        self._assign_round_robin(unassigned)
        self._verify_unfilled()
        return self.assignment

    def _unassigned(self) -> list[TopicPartition]:
        """All partitions (topics by name, then partition) minus the kept ones, by the same merge walk as
        Kafka: a kept partition that does not exist (an owned partition number beyond the topic's count)
        stalls the walk, so every later partition counts as unassigned too, as it does in Java."""
        all_partitions = [
            (t, p) for t in sorted(self.topics, key=java_string_sort_key) for p in range(self.partitions_per_topic[t])
        ]
        if not self.assigned_list:
            return all_partitions
        ordered = sorted(self.assigned_list, key=topic_partition_sort_key)
        result: list[TopicPartition] = []
        i, n = 0, len(ordered)
        add_directly = False
        for tp in all_partitions:
            if add_directly or ordered[i] != tp:
                result.append(tp)
            elif i + 1 < n:
                i += 1
            else:
                add_directly = True
        return result

    def _assign_owned(self) -> None:  # noqa: C901 - Kafka's AbstractStickyAssignor order of checks, kept as one piece for the oracle
        rev, rack = self.revision, self.rack_info
        for consumer in self.member_order:
            owned: list[TopicPartition] = []
            for tp in self.owned[consumer]:
                if rack.racks_mismatch(consumer, tp):
                    if rev.rack_revocation_tracked:
                        self.maybe_revoked[tp] = consumer
                else:
                    owned.append(tp)
            if rev.sort_owned_by_partition:
                owned.sort(key=lambda tp: (tp[1], java_string_sort_key(tp[0])))
            if self.multiply_claimed:
                owned = [tp for tp in owned if tp not in self.multiply_claimed]
            target = self.assignment[consumer]
            if len(owned) < self.min_quota:
                target.extend(owned)
                self.assigned_list.extend(owned)
                self.under_min.append(consumer)
            elif len(owned) >= self.max_quota and self.current_over < self.expected_over:
                self.current_over += 1
                if self.current_over == self.expected_over:
                    self.exactly_min.clear()
                keep = owned[: self.max_quota]
                target.extend(keep)
                self.assigned_list.extend(keep)
                for tp in owned[self.max_quota :]:
                    self.maybe_revoked[tp] = consumer
            else:
                keep = owned[: self.min_quota]
                target.extend(keep)
                self.assigned_list.extend(keep)
                for tp in owned[self.min_quota :]:
                    self.maybe_revoked[tp] = consumer
                if self.current_over < self.expected_over:
                    self.exactly_min.append(consumer)

    def _assign_rack_aware_round_robin(self, unassigned: list[TopicPartition]) -> list[TopicPartition]:
        rack = self.rack_info
        if not rack.consumer_racks:
            return unassigned
        remaining: list[TopicPartition] = []
        next_index = 0
        for tp in unassigned:
            consumer: str | None = None
            index = rack.next_rack_consumer(tp, self.under_min, next_index)
            if index >= 0:
                consumer = self.under_min[index]
                count = len(self.assignment[consumer]) + 1
                if count >= self.min_quota:
                    self.under_min.remove(consumer)
                    if count < self.max_quota and (
                        self.current_over < self.expected_over or not self.revision.rack_revocation_tracked
                    ):
                        self.exactly_min.append(consumer)
                else:
                    index += 1
                next_index = index % len(self.under_min) if self.under_min else 0
            elif self.exactly_min:
                first = rack.next_rack_consumer(tp, self.exactly_min, 0)
                if first >= 0:
                    consumer = self.exactly_min[first]
                    if len(self.assignment[consumer]) + 1 == self.max_quota:
                        del self.exactly_min[first]
                        if self.revision.rack_revocation_tracked:
                            self.current_over += 1
                            if self.current_over == self.expected_over:
                                self.exactly_min.clear()
            if consumer is not None:
                self._assign_new(tp, consumer)
            else:
                remaining.append(tp)
        return remaining

    def _assign_round_robin(self, unassigned: list[TopicPartition]) -> None:
        under_min, exactly_min = self.under_min, self.exactly_min
        cursor = 0  # a java.util.Iterator over under_min: index of the next element
        for tp in unassigned:
            from_iterator = True
            if cursor < len(under_min):
                consumer = under_min[cursor]
                cursor += 1
            elif not under_min and not exactly_min:
                raise AssignorError("No more unfilled consumers to be assigned.")
            elif not under_min:
                consumer = exactly_min.pop(0)
                from_iterator = False
            else:
                cursor = 1
                consumer = under_min[0]
            count = self._assign_new(tp, consumer)
            if count == self.min_quota:
                if not from_iterator:  # Java's Iterator.remove() would remove the last element it returned
                    raise AssignorError("iterator state Kafka's code does not reach")
                cursor -= 1
                del under_min[cursor]
                exactly_min.append(consumer)
            elif count == self.max_quota:
                self.current_over += 1

    def _assign_new(self, tp: TopicPartition, consumer: str) -> int:
        target = self.assignment[consumer]
        target.append(tp)
        previous = self.maybe_revoked.get(tp)
        moved = previous is not None and (previous != consumer or not self.revision.rack_revocation_tracked)
        if moved or tp in self.multiply_claimed:
            self.transferring[tp] = consumer
        return len(target)

    def _verify_unfilled(self) -> None:
        if not self.under_min:
            return
        if self.current_over != self.expected_over:
            raise AssignorError(
                "We haven't reached the expected number of members with more than the minQuota partitions, "
                "but no more partitions to be assigned"
            )
        for consumer in self.under_min:
            if len(self.assignment[consumer]) != self.min_quota:
                raise AssignorError(
                    f"Consumer: [{consumer}] doesn't reach minQuota partitions, and no more partitions to be "
                    "assigned"
                )


class _SortedMembers:
    """A `TreeSet<String>` ordered by (current assignment size, member id), kept consistent by removing
    a member before its size changes and re-adding it after, as Kafka's code does."""

    def __init__(self) -> None:
        self._keys: list[tuple[int, str, str]] = []

    def add(self, size: int, member: str) -> None:
        bisect.insort(self._keys, (size, java_string_sort_key(member), member))

    def remove(self, size: int, member: str) -> None:
        key = (size, java_string_sort_key(member), member)
        i = bisect.bisect_left(self._keys, key)
        if i < len(self._keys) and self._keys[i] == key:
            del self._keys[i]

    def members(self) -> list[str]:
        return [k[2] for k in self._keys]

    def first(self) -> str:
        if not self._keys:
            raise AssignorError("NoSuchElementException: TreeSet.first() of no members")
        return self._keys[0][2]

    def last(self) -> str:
        if not self._keys:
            raise AssignorError("NoSuchElementException: TreeSet.last() of no members")
        return self._keys[-1][2]


class _PartitionMovements:
    """`AbstractStickyAssignor.PartitionMovements`: which partitions moved between which members, to move
    a partition back instead of swapping two (the set picked from iterates in TopicPartition hash order)."""

    def __init__(self) -> None:
        self.by_topic: dict[str, dict[tuple[str, str], JavaHashMap]] = {}
        self.movements: dict[TopicPartition, tuple[str, str]] = {}

    def _remove_record(self, tp: TopicPartition) -> tuple[str, str]:
        pair = self.movements.pop(tp)
        for_topic = self.by_topic[tp[0]]
        for_topic[pair].discard(tp)
        if not len(for_topic[pair]):
            del for_topic[pair]
        if not for_topic:
            del self.by_topic[tp[0]]
        return pair

    def _add_record(self, tp: TopicPartition, pair: tuple[str, str]) -> None:
        self.movements[tp] = pair
        for_topic = self.by_topic.setdefault(tp[0], {})
        if pair not in for_topic:
            for_topic[pair] = JavaHashMap(topic_partition_key_hash)
        for_topic[pair].add(tp)

    def move(self, tp: TopicPartition, old: str, new: str) -> None:
        if tp in self.movements:
            src, _ = self._remove_record(tp)
            if src != new:
                self._add_record(tp, (src, new))
        else:
            self._add_record(tp, (old, new))

    def actual_partition_to_move(self, tp: TopicPartition, old: str, new: str) -> TopicPartition:
        for_topic = self.by_topic.get(tp[0])
        if for_topic is None:
            return tp
        if tp in self.movements:
            old = self.movements[tp][0]
        reverse = for_topic.get((new, old))
        if reverse is None:
            return tp
        first: TopicPartition = reverse.first()
        return first


class _GeneralBalancing(ABC):
    """What the general algorithm keeps doing the same in every revision (`GeneralAssignmentBuilder` from
    3.0 and the partition-level `generalAssign` of 2.3-2.8, see sticky_before_3_0): the current assignment
    with its owner map and the members sorted by load, giving a partition to a member, moving one (back
    along a recorded movement where there is one), and `balance`'s reassignment rounds, which set aside the
    members that cannot take part and are undone when they do not improve the balance score.

    A subclass sets the four attributes and says whether the assignment is balanced, whether a member can
    take part, and what `performReassignments` does with one partition.
    """

    current: dict[str, list[TopicPartition]]
    owner: dict[TopicPartition, str]
    sorted_members: _SortedMembers
    movements: _PartitionMovements

    @abstractmethod
    def _is_balanced(self) -> bool:
        """Whether no partition can move to a less loaded member that may take it."""

    @abstractmethod
    def _can_participate(self, consumer: str) -> bool:
        """Whether the member can still gain or give up partitions in the reassignment rounds."""

    @abstractmethod
    def _reassign_step(self, tp: TopicPartition) -> bool:
        """One partition's turn in `performReassignments`: moves it (at most once) when it should move;
        returns whether it did."""

    def _assign_to(self, tp: TopicPartition, consumer: str) -> None:
        self.sorted_members.remove(len(self.current[consumer]), consumer)
        self.current[consumer].append(tp)
        self.owner[tp] = consumer
        self.sorted_members.add(len(self.current[consumer]), consumer)

    def _reassign_participants(
        self,
        consumers: Iterable[str],
        initializing: bool,
        first_pass: list[TopicPartition] | None,
        partitions: list[TopicPartition],
    ) -> None:
        """The end of `balance`: members (of `consumers`) that cannot take part are set aside, then the
        reassignments run (over `first_pass` first, when given, then over `partitions`) and are undone
        when they do not lower the balance score (unless initializing); the set-aside members come back."""
        fixed: dict[str, list[TopicPartition]] = {}
        for consumer in consumers:
            if not self._can_participate(consumer):
                self.sorted_members.remove(len(self.current[consumer]), consumer)
                fixed[consumer] = self.current.pop(consumer)

        snapshot = {c: list(ps) for c, ps in self.current.items()}
        owner_snapshot = dict(self.owner)
        if first_pass is not None:
            self._perform_reassignments(first_pass)
        reassigned = self._perform_reassignments(partitions)
        if not initializing and reassigned and _balance_score(self.current) >= _balance_score(snapshot):
            self.current.clear()
            self.current.update(snapshot)
            self.owner = owner_snapshot
        for consumer, ps in fixed.items():
            self.current[consumer] = ps
            self.sorted_members.add(len(ps), consumer)

    def _perform_reassignments(self, partitions: list[TopicPartition]) -> bool:
        performed = False
        while True:
            modified = False
            for tp in partitions:
                if self._is_balanced():
                    break
                if self._reassign_step(tp):
                    performed = modified = True
            if not modified:
                return performed

    def _reassign(self, tp: TopicPartition, new: str) -> None:
        actual = self.movements.actual_partition_to_move(tp, self.owner[tp], new)
        old = self.owner[actual]
        self.sorted_members.remove(len(self.current[old]), old)
        self.sorted_members.remove(len(self.current[new]), new)
        self.movements.move(actual, old, new)
        self.current[old].remove(actual)
        self.current[new].append(actual)
        self.owner[actual] = new
        self.sorted_members.add(len(self.current[new]), new)
        self.sorted_members.add(len(self.current[old]), old)


class _GeneralBuilder(_GeneralBalancing):
    """`GeneralAssignmentBuilder` (3.0+): members subscribe to different topics."""

    def __init__(
        self,
        partitions_per_topic: Mapping[str, int],
        topics: Sequence[str],
        rack_info: _RackInfo,
        current: dict[str, list[TopicPartition]],
        members: Sequence[MemberSubscription],
        member_data: Mapping[str, tuple[list[TopicPartition], int | None]],
        max_generation: int,
        revision: StickyRevision,
    ) -> None:
        self.partitions_per_topic = partitions_per_topic
        self.rack_info = rack_info
        self.current = current
        self.members = members
        self.member_data = member_data
        self.max_generation = max_generation
        self.revision = revision
        self.total = sum(partitions_per_topic[t] for t in topics)
        self.num_topics = len(topics)
        self.topic_consumers: dict[str, list[str]] = {t: [] for t in topics}
        self.consumer_topics: dict[str, list[str]] = {}
        for m in members:
            mine: list[str] = []
            self.consumer_topics[m.member_id] = mine
            for t in m.topics:
                if t in self.topic_consumers:
                    mine.append(t)
                    self.topic_consumers[t].append(m.member_id)
            current.setdefault(m.member_id, [])
        self.subscribed = {m.member_id: frozenset(m.topics) for m in members}
        self.owner: dict[TopicPartition, str] = {}
        for c, tps in current.items():
            for tp in tps:
                self.owner[tp] = c
        sorted_topics = sorted(
            topics, key=lambda t: (len(self.topic_consumers[t]), java_string_sort_key(t))
        )
        self.all_partitions = [(t, p) for t in sorted_topics for p in range(partitions_per_topic[t])]
        self.sorted_members = _SortedMembers()
        self.movements = _PartitionMovements()
        self.revocation_required = False
        self.previous: dict[TopicPartition, tuple[str, int]] = {}

    def _partition_sort_key(self, tp: TopicPartition) -> tuple[int, str, int]:
        return (len(self.topic_consumers[tp[0]]), java_string_sort_key(tp[0]), tp[1])

    def build(self) -> Assignment:
        self.previous = self._previous_assignment()
        assigned = self._assign_owned()
        unassigned = self._unassigned(assigned)
        for c in self.current:
            self.sorted_members.add(len(self.current[c]), c)
        self._balance(unassigned)
        return self.current

    def _previous_assignment(self) -> dict[TopicPartition, tuple[str, int]]:
        previous: dict[TopicPartition, tuple[str, int]] = {}
        for m in self.members:
            partitions, generation = self.member_data[m.member_id]
            if generation is not None and generation < self.max_generation:
                record = generation
            elif generation is None and self.max_generation > DEFAULT_GENERATION:
                record = DEFAULT_GENERATION
            else:
                continue
            for tp in partitions:
                existing = previous.get(tp)
                if existing is None or record > existing[1]:
                    previous[tp] = (m.member_id, record)
        return previous

    def _assign_owned(self) -> list[TopicPartition]:
        assigned: list[TopicPartition] = []
        for consumer, partitions in self.current.items():
            kept: list[TopicPartition] = []
            for tp in partitions:
                if tp[0] not in self.topic_consumers:
                    self.owner.pop(tp, None)
                elif tp[0] not in self.subscribed[consumer] or self.rack_info.racks_mismatch(consumer, tp):
                    self.revocation_required = True
                else:
                    kept.append(tp)
                    assigned.append(tp)
            partitions[:] = kept
        return assigned

    def _unassigned(self, assigned: list[TopicPartition]) -> list[TopicPartition]:
        if not assigned:
            return self.all_partitions
        ordered = sorted(assigned, key=self._partition_sort_key)
        result: list[TopicPartition] = []
        i, n = 0, len(ordered)
        add_directly = False
        for tp in self.all_partitions:
            if add_directly or ordered[i] != tp:
                result.append(tp)
            elif i + 1 < n:
                i += 1
            else:
                add_directly = True
        return result

    def _max_size(self, consumer: str) -> int:
        topics = self.consumer_topics[consumer]
        if len(topics) == self.num_topics:
            return self.total
        return sum(self.partitions_per_topic[t] for t in topics)

    def _is_balanced(self) -> bool:
        current = self.current
        sizes = {c: len(ps) for c, ps in current.items()}
        min_size = sizes[self.sorted_members.first()]
        max_size = sizes[self.sorted_members.last()]
        if min_size >= max_size - 1:
            return True
        owner: dict[TopicPartition, str] = {}
        for c, ps in current.items():
            for tp in ps:
                owner[tp] = c
        gap = 1 if self.revision.balanced_off_by_one_fixed else 0
        for consumer in self.sorted_members.members():
            size = sizes[consumer]
            if size == self._max_size(consumer):
                continue
            mine = set(current[consumer])
            for topic in self.consumer_topics[consumer]:
                for p in range(self.partitions_per_topic[topic]):
                    tp = (topic, p)
                    if tp not in mine and size + gap < sizes[owner[tp]]:
                        return False
        return True

    def _assign_to_first_fitting(self, tp: TopicPartition, use_racks: bool) -> bool:
        for consumer in self.sorted_members.members():
            if tp[0] in self.consumer_topics[consumer] and not (
                use_racks and self.rack_info.racks_mismatch(consumer, tp)
            ):
                self._assign_to(tp, consumer)
                return True
        return False

    def _balance(self, unassigned: list[TopicPartition]) -> None:
        initializing = not self.current[self.sorted_members.last()]
        to_assign = unassigned
        if self.rack_info.consumer_racks:
            to_assign = [tp for tp in unassigned if not (
                self.topic_consumers[tp[0]] and self._assign_to_first_fitting(tp, use_racks=True)
            )]
        for tp in to_assign:
            if self.topic_consumers[tp[0]]:
                self._assign_to_first_fitting(tp, use_racks=False)

        fixed_topics = {t for t, cs in self.topic_consumers.items() if len(cs) < 2}
        if fixed_topics:
            same = unassigned is self.all_partitions
            self.all_partitions = [tp for tp in self.all_partitions if tp[0] not in fixed_topics]
            unassigned = self.all_partitions if same else [tp for tp in unassigned if tp[0] not in fixed_topics]
        first_pass = None if self.revocation_required else unassigned
        self._reassign_participants(self.consumer_topics, initializing, first_pass, self.all_partitions)

    def _can_participate(self, consumer: str) -> bool:
        partitions = self.current[consumer]
        if len(partitions) < self._max_size(consumer):
            return True
        return any(len(self.topic_consumers[tp[0]]) >= 2 for tp in partitions)

    def _reassign_step(self, tp: TopicPartition) -> bool:
        rack = self.rack_info
        consumer = self.owner[tp]
        size = len(self.current[consumer])
        prev = self.previous.get(tp)
        if prev is not None and prev[0] not in self.current:
            # Kafka dereferences currentAssignment.get(previous owner), null for a member set aside
            # as unable to participate: the assignment fails with a NullPointerException
            raise AssignorError(f"NullPointerException: previous owner {prev[0]} of {tp} is not balanced")
        if prev is not None and size > len(self.current[prev[0]]) + 1:
            self._reassign(tp, prev[0])
            return True
        consumer_rack = rack.consumer_racks.get(consumer)
        partition_racks = rack.partition_racks.get(tp, frozenset())
        if consumer_rack is not None and partition_racks and consumer_rack in partition_racks:
            for other in self.topic_consumers[tp[0]]:
                other_rack = rack.consumer_racks.get(other)
                if other_rack is None or other_rack not in partition_racks:
                    continue
                if size > len(self.current[other]) + 1:
                    self._reassign(tp, self._least_loaded_subscriber(tp[0]))
                    return True
        for other in self.topic_consumers[tp[0]]:
            if size > len(self.current[other]) + 1:
                self._reassign(tp, self._least_loaded_subscriber(tp[0]))
                return True
        return False

    def _least_loaded_subscriber(self, topic: str) -> str:
        for member in self.sorted_members.members():
            if topic in self.consumer_topics[member]:
                return member
        raise AssignorError(f"no member subscribed to {topic}")

def _balance_score(assignment: Mapping[str, list[TopicPartition]]) -> int:
    sizes = sorted(len(ps) for ps in assignment.values())
    # sum over unordered pairs of |a - b|, computed on the sorted sizes
    score, prefix = 0, 0
    for i, s in enumerate(sizes):
        score += s * i - prefix
        prefix += s
    return score


def assign_sticky(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Sequence[MemberSubscription],
    *,
    cooperative: bool = False,
    partition_racks: PartitionRacks | None = None,
    revision: StickyRevision = NEWEST,
) -> Assignment:
    """Sticky / CooperativeSticky: balanced, keeping as much of the previous ownership as possible.

    When every member subscribes to the same topics (the common case) the constrained algorithm runs:
    with T partitions over N members each member keeps up to `ceil(T/N)` (only `T % N` of them, the first
    in the leader's HashMap order) or `floor(T/N)` of its owned partitions, lowest (partition, topic) first,
    and the rest are dealt round robin (topics by name, then partition) to the members below quota sorted
    by member id. Otherwise the general algorithm keeps valid owned partitions, gives each unassigned one
    to the least loaded subscriber, then moves partitions from the most to the least loaded while that
    improves balance. `cooperative=True` then withholds every partition that moves to a new owner (it is
    assigned in the next rebalance, after its owner revoked it).

    Example (Kafka's StickyAssignor javadoc; C0, C1, C2 and t0..t3 with 2 partitions each, nobody owns
    anything):

    >>> from coordinator_core.assignors import MemberSubscription
    >>> topics = ["t0", "t1", "t2", "t3"]
    >>> assign_sticky(dict.fromkeys(topics, 2), [MemberSubscription(c, topics) for c in ["C0", "C1", "C2"]])
    {'C0': [('t0', 0), ('t1', 1), ('t3', 0)], 'C1': [('t0', 1), ('t2', 0), ('t3', 1)], \
'C2': [('t1', 0), ('t2', 1)]}
    """
    members = subscriptions_in_hash_order(subscriptions)
    topics = topics_in_java_order(partitions_per_topic, members)
    counts = {t: partitions_per_topic[t] for t in topics}
    member_data = {m.member_id: _member_data(m, cooperative, revision) for m in members}
    prelude = _Prelude(frozenset(topics), members, member_data, revision)
    rack_info = _RackInfo(topics, counts, members, partition_racks, revision.rack_aware)
    transferring: dict[TopicPartition, str] | None
    if prelude.all_equal:
        constrained = _ConstrainedBuilder(
            counts, topics, rack_info, prelude.owned, [m.member_id for m in members],
            prelude.multiply_claimed, revision,
        )
        result = constrained.build()
        transferring = constrained.transferring
    else:
        general = _GeneralBuilder(
            counts, topics, rack_info, prelude.owned, members, member_data, prelude.max_generation, revision
        )
        result = general.build()
        transferring = None
    return _member_assignments(subscriptions, result, cooperative, transferring)


def _member_assignments(
    subscriptions: Sequence[MemberSubscription],
    result: Assignment,
    cooperative: bool,
    transferring: dict[TopicPartition, str] | None,
) -> Assignment:
    """Each member's partitions, in subscription order (a member the assignment left out gets none);
    ``cooperative-sticky`` withholds the partitions transferring ownership (`transferring`, or when None
    computed from the members' owned partitions), to assign them in the next rebalance."""
    if cooperative:
        if transferring is None:
            transferring = _partitions_transferring_ownership(subscriptions, result)
        for tp, consumer in transferring.items():
            _remove_first(result[consumer], tp)
    return {m.member_id: result.get(m.member_id, []) for m in subscriptions}


def _partitions_transferring_ownership(
    subscriptions: Sequence[MemberSubscription], assignment: Assignment
) -> dict[TopicPartition, str]:
    """`CooperativeStickyAssignor.computePartitionsTransferringOwnership`: partitions newly assigned to
    one member that some member (by its raw owned partitions) gives up."""
    added: dict[TopicPartition, str] = {}
    revoked: set[TopicPartition] = set()
    owned_by = {m.member_id: m.owned_partitions for m in subscriptions}
    for consumer, assigned in assignment.items():
        owned = owned_by.get(consumer, ())
        owned_set = set(owned)
        for tp in assigned:
            if tp not in owned_set:
                added[tp] = consumer
        assigned_set = set(assigned)
        revoked.update(tp for tp in owned if tp not in assigned_set)
    return {tp: c for tp, c in added.items() if tp in revoked}


__all__ = ["NEWEST", "StickyRevision", "assign_sticky", "topic_partition_sort_key"]
