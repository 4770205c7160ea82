"""Kafka's client-side sticky assignors as kafka-clients 0.11.0-2.8.x computed them.

Before 3.0 the algorithm worked partition by partition (`partition2AllPotentialConsumers`) and the
equal-subscription fast path, when there was one, was a different one from 3.0's:

* 0.11.0-2.2.x: `StickyAssignor` as KIP-54 first shipped it (the same algorithm in every release of that
  range; only comments, log calls and the user data writer's grouping helper changed). The user data is
  V0, the previous assignment without a generation, and each member's list is taken as sent: a partition
  two members claim stays in both lists (the last claimant in the leader's HashMap order is its
  "current consumer"), so the result can assign it twice; there are no previous owners. A member whose
  user data holds an empty list still makes the assignment a reassignment. Unreadable user data, a
  subscribed topic without partition metadata, or a reassignment with no partition at all (every member
  subscribed to nothing; both KAFKA-7962, fixed in 2.3.0) fails the assignment.
* 2.3.x: `StickyAssignor` alone (KIP-54 with KIP-341's generation in the user data): each partition goes
  to the claimant of the highest generation, the runner-up is remembered as its previous owner; then the
  general balancing (`isBalanced` / `performReassignments` over sorted partitions, reverted when it does
  not improve the balance score). When every member can take every partition and something is owned,
  the partitions are pre-sorted round robin over the members' current assignments.
* 2.4.0-2.5.0: the same in `AbstractStickyAssignor`, plus `cooperative-sticky` (KIP-429, owned partitions
  without generations) and a first balancing pass over the newly assigned partitions only, unless a
  member lost a topic it no longer subscribes to (`revocationRequired`).
* 2.5.1-2.8.0 (KAFKA-9987): when all members subscribe to the same topics, a constrained assignment:
  only the members of the highest generation keep what they own, up to ceil(T/N) each, the rest is dealt
  to the members below floor(T/N) in member id order, taken from full members if it runs out, and the
  leftovers go one each to the members at floor(T/N). Otherwise the general path, without the pre-sort.
* 2.8.1-2.8.x (KAFKA-12984 backport): a partition claimed by two members of the highest generation is
  owned by neither, and `cooperative-sticky` reads its generation from its user data.

Where Java iterates a `HashMap`/`HashSet` (partitions keyed by TopicPartition, members by member id) the
same order is reproduced with `javaisms.JavaHashMap`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from coordinator_core.assignors._common import topics_in_java_order
from coordinator_core.assignors._model import (
    Assignment,
    AssignorError,
    MemberSubscription,
    TopicPartition,
    subscriptions_in_hash_order,
    topic_partition_sort_key,
)
from coordinator_core.assignors.sticky import (
    _GeneralBalancing,
    _member_assignments,
    _PartitionMovements,
    _remove_first,
    _SortedMembers,
)
from coordinator_core.assignors.userdata import (
    DEFAULT_GENERATION,
    cooperative_user_data_left_after_read,
    decode_cooperative_user_data,
    decode_sticky_user_data,
    decode_sticky_user_data_v0,
    sticky_user_data_left_after_read,
)
from coordinator_core.javaisms import JavaHashMap, java_string_hash, java_string_sort_key, topic_partition_key_hash

MemberData = tuple[list[TopicPartition], int | None]


@dataclass(frozen=True)
class StickyRevisionBefore3_0:
    """Which pre-3.0 revision of the sticky assignors ran (the group leader's kafka-clients version).

    Attributes:
        revocation_pass: KIP-429 (2.4.0): balance the newly assigned partitions first, unless a member
            must give up a partition of a topic it no longer subscribes to.
        constrained: KAFKA-9987 (2.5.1/2.6.0): the constrained path for equal subscriptions, and no
            round-robin pre-sort of the partitions on the general path.
        invalidate_multiple_previous_owners: KAFKA-12984 (2.8.1): on the constrained path a partition
            claimed by two members of the highest generation is kept by neither.
        cooperative_generation_from_user_data: KAFKA-12984 (2.8.1): cooperative-sticky reads the
            generation its members put in their user data; before, it had no generations at all.
        generations: KIP-341 (2.3.0): the user data carries the generation, a partition claimed by
            several members goes to the claimant of the highest generation and the runner-up is its
            previous owner, and topics without metadata are skipped. False for the original
            `StickyAssignor` of 0.11.0-2.2.x (see the module docstring).
    """

    revocation_pass: bool
    constrained: bool
    invalidate_multiple_previous_owners: bool
    cooperative_generation_from_user_data: bool
    generations: bool = True


def _member_data(
    member: MemberSubscription, cooperative: bool, revision: StickyRevisionBefore3_0, *, read_before: bool = False
) -> MemberData:
    """`memberData(subscription)`. `read_before`: the user data was already read once from the same
    ByteBuffer, whose position that read moved (see `_general_path_member_data`)."""
    user_data = member.user_data
    if cooperative:
        if not revision.cooperative_generation_from_user_data:
            return list(member.owned_partitions), None
        if read_before:
            user_data = cooperative_user_data_left_after_read(user_data)
        return list(member.owned_partitions), decode_cooperative_user_data(user_data)
    if read_before:
        user_data = sticky_user_data_left_after_read(user_data)
    return decode_sticky_user_data(user_data)


def _general_path_member_data(
    members: Sequence[MemberSubscription],
    member_data: dict[str, MemberData],
    members_read: int,
    cooperative: bool,
    revision: StickyRevisionBefore3_0,
) -> dict[str, MemberData]:
    """The member data the general path of 2.5.1-2.8.x sees. `allSubscriptionsEqual` already called
    `memberData` for the members before the first one whose subscription differs, and reading the user
    data moved its ByteBuffer's position; the general path reads it again and, for ``sticky``, finds
    nothing left (no previous assignment, no generation); ``cooperative-sticky`` (2.8.1+) keeps its owned
    partitions but reads generation -1. A Kafka bug, reproduced: the replay must do what the leader did.
    """
    result = dict(member_data)
    for m in members[:members_read]:
        result[m.member_id] = _member_data(m, cooperative, revision, read_before=True)
    return result


# --------------------------------------------------------------------------------------------------------
# Equal subscriptions, 2.5.1-2.8.x: `allSubscriptionsEqual` and `constrainedAssign`
# --------------------------------------------------------------------------------------------------------


def _owned_if_all_subscriptions_equal(
    all_topics: frozenset[str],
    members: Sequence[MemberSubscription],
    member_data: Mapping[str, MemberData],
    revision: StickyRevisionBefore3_0,
) -> tuple[dict[str, list[TopicPartition]], set[TopicPartition]] | int:
    """Each member's kept owned partitions (only members of the highest generation keep any) and the
    partitions claimed twice within that generation (2.8.1+); or, if the subscriptions differ, the number
    of members whose member data was read before the first one that differs."""
    subscribed: set[str] = set()
    owned: dict[str, list[TopicPartition]] = {}
    multiply_claimed: set[TopicPartition] = set()
    owner_of: dict[TopicPartition, str] = {}
    highest: list[str] = []
    max_generation = DEFAULT_GENERATION
    for index, m in enumerate(members):
        if not subscribed:
            subscribed.update(m.topics)
        elif not (len(m.topics) == len(subscribed) and subscribed.issuperset(m.topics)):
            return index
        partitions, generation = member_data[m.member_id]
        mine: list[TopicPartition] = []
        owned[m.member_id] = mine
        if generation is None and max_generation != DEFAULT_GENERATION:
            continue
        if generation is not None and generation < max_generation:
            continue
        if generation is not None and generation > max_generation:
            for other in highest:
                owned[other].clear()
            highest.clear()
            owner_of.clear()
            multiply_claimed.clear()
            max_generation = generation
        highest.append(m.member_id)
        for tp in partitions:
            if tp[0] not in all_topics:
                continue
            if not revision.invalidate_multiple_previous_owners:
                mine.append(tp)
                continue
            claimant = owner_of.get(tp)
            if claimant is None:
                owner_of[tp] = m.member_id
                mine.append(tp)
            else:
                _remove_first(owned[claimant], tp)
                multiply_claimed.add(tp)
    return owned, multiply_claimed


def _constrained_assign(  # noqa: C901, PLR0912 - Kafka 2.x's constrainedAssign, kept in its order for the oracle
    partitions_per_topic: Mapping[str, int],
    owned: dict[str, list[TopicPartition]],
    multiply_claimed: set[TopicPartition],
) -> tuple[Assignment, dict[TopicPartition, str]]:
    """`constrainedAssign` of 2.5.1-2.8.x; returns the assignment and `partitionsTransferringOwnership`."""
    all_partitions = sorted(
        ((t, p) for t, n in partitions_per_topic.items() for p in range(n)), key=topic_partition_sort_key
    )
    unassigned = dict.fromkeys(all_partitions)  # a TreeSet: iterated in (topic, partition) order
    revoked: set[TopicPartition] = set()
    transferring: dict[TopicPartition, str] = {}
    unfilled: list[str] = []
    max_capacity: deque[str] = deque()
    min_capacity: deque[str] = deque()
    total, members = len(all_partitions), len(owned)
    if members == 0:
        # a group without members (so without subscribed topics): Kafka divides as doubles, no exception
        return {}, {}
    min_quota, max_quota = total // members, -(-total // members)
    assignment: Assignment = {c: [] for c in owned}

    for consumer, partitions in owned.items():
        for tp in multiply_claimed:
            _remove_first(partitions, tp)
        target = assignment[consumer]
        for i, tp in enumerate(partitions):
            if i < max_quota:
                target.append(tp)  # kept even when the partition no longer exists, as Kafka does
                unassigned.pop(tp, None)
            else:
                revoked.add(tp)
        if len(partitions) < min_quota:
            unfilled.append(consumer)
        else:
            if len(target) == min_quota:
                min_capacity.append(consumer)
            if len(target) == max_quota:
                max_capacity.append(consumer)

    def moved(tp: TopicPartition) -> bool:
        return tp in revoked or tp in multiply_claimed

    unfilled.sort(key=java_string_sort_key)
    remaining = list(unassigned)
    next_partition = 0
    while unfilled and next_partition < len(remaining):
        still_unfilled: list[str] = []
        for k, consumer in enumerate(unfilled):
            if next_partition == len(remaining):
                still_unfilled.extend(unfilled[k:])
                break
            tp = remaining[next_partition]
            next_partition += 1
            assignment[consumer].append(tp)
            if moved(tp):
                transferring[tp] = consumer
            if len(assignment[consumer]) == min_quota:
                min_capacity.append(consumer)
            else:
                still_unfilled.append(consumer)
        unfilled = still_unfilled

    for consumer in unfilled:
        target = assignment[consumer]
        for _ in range(min_quota - len(target)):
            if not max_capacity:
                raise AssignorError(
                    "IllegalStateException: Some consumers are under capacity but all partitions have been assigned"
                )
            swapped = assignment[max_capacity.popleft()].pop(0)
            target.append(swapped)
            transferring[swapped] = consumer
        min_capacity.append(consumer)

    for tp in remaining[next_partition:]:
        if not min_capacity:
            raise AssignorError(
                "IllegalStateException: Some partitions are unassigned but all consumers are at maximum capacity"
            )
        consumer = min_capacity.popleft()
        assignment[consumer].append(tp)
        if moved(tp):
            transferring[tp] = consumer
    return assignment, transferring


# --------------------------------------------------------------------------------------------------------
# The general algorithm, 2.3.0-2.8.x (`generalAssign`; all of `assign` before 2.5.1)
# --------------------------------------------------------------------------------------------------------


class _GeneralAssignment(_GeneralBalancing):
    """`AbstractStickyAssignor.generalAssign` (2.4-2.8) / `StickyAssignor.assign` (2.3), partition level."""

    def __init__(
        self,
        partitions_per_topic: Mapping[str, int],
        topics: Sequence[str],
        members: Sequence[MemberSubscription],
        member_data: Mapping[str, MemberData],
        revision: StickyRevisionBefore3_0,
    ) -> None:
        self.revision = revision
        self.current: dict[str, list[TopicPartition]] = {}
        self.previous: dict[TopicPartition, str] = {}
        self.previous_order: list[TopicPartition] = []
        self._prepopulate(members, member_data)
        self.fresh = not self.current

        # partition2AllPotentialConsumers: a HashMap filled topic by topic, in partitionsPerTopic order
        partition_table = JavaHashMap(topic_partition_key_hash)
        self.partition_consumers: dict[TopicPartition, list[str]] = {}
        for t in topics:
            for p in range(partitions_per_topic[t]):
                partition_table.add((t, p))
                self.partition_consumers[(t, p)] = []
        self.partition_order: list[TopicPartition] = partition_table.order()
        self.consumer_partitions: dict[str, list[TopicPartition]] = {}
        self.consumer_topics: dict[str, frozenset[str]] = {}
        for m in members:
            mine: list[TopicPartition] = []
            for t in m.topics:
                if t in partitions_per_topic:
                    for p in range(partitions_per_topic[t]):
                        mine.append((t, p))
                        self.partition_consumers[(t, p)].append(m.member_id)
            self.consumer_partitions[m.member_id] = mine
            self.consumer_topics[m.member_id] = frozenset(t for t in m.topics if t in partitions_per_topic)
            self.current.setdefault(m.member_id, [])
        self.subscribed = {m.member_id: frozenset(m.topics) for m in members}
        self.owner: dict[TopicPartition, str] = {tp: c for c, tps in self.current.items() for tp in tps}
        self.sorted_members = _SortedMembers()
        self.movements = _PartitionMovements()

    def _prepopulate(self, members: Sequence[MemberSubscription], member_data: Mapping[str, MemberData]) -> None:
        """Per partition, the claimant of the highest generation owns it and the next highest generation's
        claimant is its previous owner. A second claim in the same generation is ignored; without a
        generation (-1), a later claim replaces the earlier one."""
        claims: dict[TopicPartition, dict[int, str]] = {}
        claim_order = JavaHashMap(topic_partition_key_hash)
        for m in members:
            partitions, generation = member_data[m.member_id]
            for tp in partitions:
                by_generation = claims.get(tp)
                if by_generation is None:
                    claims[tp] = {generation if generation is not None else DEFAULT_GENERATION: m.member_id}
                    claim_order.add(tp)
                elif generation is None or generation not in by_generation:
                    by_generation[generation if generation is not None else DEFAULT_GENERATION] = m.member_id
        previous_table = JavaHashMap(topic_partition_key_hash)
        for tp in claim_order.order():
            by_generation = claims[tp]
            generations = sorted(by_generation, reverse=True)
            self.current.setdefault(by_generation[generations[0]], []).append(tp)
            if len(generations) > 1:
                self.previous[tp] = by_generation[generations[1]]
                previous_table.add(tp)
        self.previous_order = previous_table.order()

    def build(self) -> Assignment:
        sorted_partitions = self._sorted_partitions()
        unassigned = list(sorted_partitions)
        revocation_required = False
        for consumer, partitions in self.current.items():
            kept: list[TopicPartition] = []
            for tp in partitions:
                if tp not in self.partition_consumers:
                    self.owner.pop(tp, None)
                elif tp[0] not in self.subscribed[consumer]:
                    revocation_required = True  # the stale owner entry stays until the partition is assigned
                else:
                    kept.append(tp)
                    _remove_first(unassigned, tp)
            partitions[:] = kept
        for consumer, partitions in self.current.items():
            self.sorted_members.add(len(partitions), consumer)
        self._balance(sorted_partitions, unassigned, revocation_required)
        return self.current

    def _sorted_partitions(self) -> list[TopicPartition]:
        if not self.revision.constrained and not self.fresh and self._subscriptions_identical():
            return self._round_robin_over_current()
        consumers = self.partition_consumers
        return sorted(self.partition_order, key=lambda tp: (len(consumers[tp]), java_string_sort_key(tp[0]), tp[1]))

    def _subscriptions_identical(self) -> bool:
        def same_sets(lists: list[list[str]] | list[list[TopicPartition]]) -> bool:
            sets = [frozenset(x) for x in lists]
            return all(s == sets[0] for s in sets)

        return same_sets(list(self.partition_consumers.values())) and same_sets(list(self.consumer_partitions.values()))

    def _round_robin_over_current(self) -> list[TopicPartition]:
        """2.3-2.5.0 `sortPartitions` when every member can take every partition: repeatedly take one
        partition from the member holding the most (previously moved partitions first), then the rest."""
        remaining = {c: [tp for tp in tps if tp in self.partition_consumers] for c, tps in self.current.items()}
        in_play = {c for c in remaining}
        result: list[TopicPartition] = []
        taken: set[TopicPartition] = set()
        while in_play:
            consumer = max(in_play, key=lambda c: (len(remaining[c]), java_string_sort_key(c)))
            in_play.discard(consumer)
            mine = remaining[consumer]
            moved = [tp for tp in self.previous_order if tp in mine]
            if moved:
                mine.remove(moved[0])
                result.append(moved[0])
                taken.add(moved[0])
                in_play.add(consumer)
            elif mine:
                tp = mine.pop(0)
                result.append(tp)
                taken.add(tp)
                in_play.add(consumer)
        result.extend(tp for tp in self.partition_order if tp not in taken)
        return result

    def _balance(
        self, sorted_partitions: list[TopicPartition], unassigned: list[TopicPartition], revocation_required: bool
    ) -> None:
        initializing = not self.current[self.sorted_members.last()]
        for tp in unassigned:
            if self.partition_consumers[tp]:
                self._assign_to_least_loaded(tp)
        fixed_partitions = {tp for tp, cs in self.partition_consumers.items() if len(cs) < 2}
        if fixed_partitions:
            sorted_partitions = [tp for tp in sorted_partitions if tp not in fixed_partitions]
            if self.revision.revocation_pass:
                unassigned = [tp for tp in unassigned if tp not in fixed_partitions]
        first_pass = unassigned if self.revision.revocation_pass and not revocation_required else None
        self._reassign_participants(self.consumer_partitions, initializing, first_pass, sorted_partitions)

    def _can_participate(self, consumer: str) -> bool:
        partitions = self.current[consumer]
        if len(partitions) < len(self.consumer_partitions[consumer]):
            return True
        return any(len(self.partition_consumers[tp]) >= 2 for tp in partitions)

    def _assign_to_least_loaded(self, tp: TopicPartition) -> None:
        for consumer in self.sorted_members.members():
            if tp[0] in self.consumer_topics[consumer]:
                self._assign_to(tp, consumer)
                return

    def _is_balanced(self) -> bool:
        current = self.current
        min_size = len(current[self.sorted_members.first()])
        max_size = len(current[self.sorted_members.last()])
        if min_size >= max_size - 1:
            return True
        for consumer in self.sorted_members.members():
            size = len(current[consumer])
            potential = self.consumer_partitions[consumer]
            if size == len(potential):
                continue
            for tp in potential:
                other = self.owner[tp]
                if other != consumer and size < len(current[other]):
                    return False
        return True

    def _reassign_step(self, tp: TopicPartition) -> bool:
        size = len(self.current[self.owner[tp]])
        previous = self.previous.get(tp)
        if previous is not None:
            if previous not in self.current:
                # Kafka dereferences currentAssignment.get(previous owner), null for a member set
                # aside as unable to participate: the assignment fails
                raise AssignorError(f"NullPointerException: previous owner {previous} of {tp} is set aside")
            if size > len(self.current[previous]) + 1:
                self._reassign(tp, previous)
                return True
        if any(size > len(self.current[other]) + 1 for other in self.partition_consumers[tp]):
            self._reassign(tp, self._least_loaded_subscriber(tp))
            return True
        return False

    def _least_loaded_subscriber(self, tp: TopicPartition) -> str:
        for member in self.sorted_members.members():
            if tp[0] in self.consumer_topics[member]:
                return member
        raise AssignorError(f"no member can take {tp}")


# --------------------------------------------------------------------------------------------------------
# The original StickyAssignor, 0.11.0-2.2.x (KIP-54 before KIP-341)
# --------------------------------------------------------------------------------------------------------


def _claims_before_2_3(
    members: Sequence[MemberSubscription], partitions_per_topic: Mapping[str, int]
) -> dict[str, MemberData]:
    """`prepopulateCurrentAssignments` of 0.11.0-2.2.x: each member with user data (not null, not empty)
    claims the partitions it lists, in its order, repeats included; no generations.

    Raises:
        AssignorError: user data that is not V0 (SchemaException), or a subscribed topic missing from
            the leader's metadata: `partitionsPerTopic.get(topic)` is unboxed (NullPointerException;
            KAFKA-7962 filtered such topics out in 2.3.0).
    """
    claims: dict[str, MemberData] = {
        m.member_id: (decode_sticky_user_data_v0(m.user_data), None) for m in members if m.user_data
    }
    for m in members:
        for topic in m.topics:
            if topic not in partitions_per_topic:
                raise AssignorError(
                    f"NullPointerException: {m.member_id} subscribes to {topic!r}, which has no partition "
                    "metadata (the sticky assignor before 2.3.0 cannot skip it)"
                )
    return claims


class _GeneralAssignmentBefore2_3(_GeneralAssignment):
    """`StickyAssignor.assign` of 0.11.0-2.2.x: the general algorithm over the members' raw claims.

    What differs from the 2.3 port it extends: a partition can sit in several members' lists, so which
    member Kafka takes for its holder depends on the iteration order of the `currentAssignment` HashMap
    (claimants first, in the leader's subscription order, then the other members): the last one listing
    it wins, both in `currentPartitionConsumer` and in `isBalanced`'s own partition-to-consumer map,
    which is rebuilt from the lists at every call. A holder that no longer lists the partition (a
    duplicate moved by the other claimant, or a claim on a topic it left) is still looked up; when it
    was set aside as unable to participate, Kafka's lookup is null and the assignment fails.
    """

    def __init__(
        self,
        partitions_per_topic: Mapping[str, int],
        topics: Sequence[str],
        members: Sequence[MemberSubscription],
        claims: Mapping[str, MemberData],
        revision: StickyRevisionBefore3_0,
    ) -> None:
        super().__init__(partitions_per_topic, topics, members, claims, revision)
        self.assignment_order = JavaHashMap(java_string_hash)  # currentAssignment's keys, put in this order
        for consumer in self.current:
            self.assignment_order.add(consumer)
        self.owner = self._holders()

    def _prepopulate(self, members: Sequence[MemberSubscription], member_data: Mapping[str, MemberData]) -> None:
        for m in members:
            claimed = member_data.get(m.member_id)
            if claimed is not None:
                self.current[m.member_id] = list(claimed[0])

    def _subscriptions_identical(self) -> bool:
        """`areSubscriptionsIdentical` before 2.3.0: its `hasIdenticalListElements` took the first list
        with `next()` without asking `hasNext()`, so a reassignment (some member sent user data) with no
        partition to assign (every member subscribes to nothing, or only to topics without partitions)
        fails (NoSuchElementException; KAFKA-7962 added the check in 2.3.0)."""
        if not self.partition_consumers:
            raise AssignorError("NoSuchElementException: a reassignment with no partition to assign")
        return super()._subscriptions_identical()

    def _holders(self) -> dict[TopicPartition, str]:
        """Partition -> the member listing it last in `currentAssignment` order (set-aside members are
        not in the map while the reassignments run)."""
        holders: dict[TopicPartition, str] = {}
        for consumer in self.assignment_order.order():
            for tp in self.current.get(consumer, ()):
                holders[tp] = consumer
        return holders

    def _assigned(self, consumer: str | None) -> list[TopicPartition]:
        """`currentAssignment.get(consumer)`, dereferenced."""
        partitions = self.current.get(consumer) if consumer is not None else None
        if partitions is None:
            raise AssignorError(f"NullPointerException: no current assignment for member {consumer}")
        return partitions

    def _is_balanced(self) -> bool:
        members = self.sorted_members.members()
        if not members:
            raise AssignorError("NoSuchElementException: every member was set aside")
        current = self.current
        if len(current[members[0]]) >= len(current[members[-1]]) - 1:
            return True
        holders = self._holders()
        for consumer in members:
            mine = current[consumer]
            size = len(mine)
            potential = self.consumer_partitions[consumer]
            if size == len(potential):
                continue
            held = set(mine)
            for tp in potential:
                if tp not in held and size < len(self._assigned(holders.get(tp))):
                    return False
        return True

    def _reassign_step(self, tp: TopicPartition) -> bool:
        size = len(self._assigned(self.owner.get(tp)))
        for other in self.partition_consumers[tp]:
            if size > len(self._assigned(other)) + 1:
                self._reassign(tp, self._least_loaded_subscriber(tp))
                return True
        return False

    def _reassign(self, tp: TopicPartition, new: str) -> None:
        actual = self.movements.actual_partition_to_move(tp, self._holder(tp), new)
        old = self._holder(actual)
        old_partitions, new_partitions = self._assigned(old), self._assigned(new)
        self.sorted_members.remove(len(old_partitions), old)
        self.sorted_members.remove(len(new_partitions), new)
        self.movements.move(actual, old, new)
        _remove_first(old_partitions, actual)  # a holder by a stale claim does not list it: no-op
        new_partitions.append(actual)
        self.owner[actual] = new
        self.sorted_members.add(len(new_partitions), new)
        if old != new:
            self.sorted_members.add(len(old_partitions), old)

    def _holder(self, tp: TopicPartition) -> str:
        holder = self.owner.get(tp)
        if holder is None:
            raise AssignorError(f"NullPointerException: {tp} has no current consumer")
        return holder


def assign_sticky_before_3_0(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Sequence[MemberSubscription],
    *,
    revision: StickyRevisionBefore3_0,
    cooperative: bool = False,
) -> Assignment:
    """Sticky / CooperativeSticky as kafka-clients 0.11.0-2.8.x computed them (see the module docstring).

    No static members, racks or subscription generations existed for these assignors yet: only the
    members' user data (``sticky``) or owned partitions (``cooperative-sticky``) carry previous ownership.
    The user data is read the way the revision's own reader did (V0 only before 2.3).

    Example (Kafka's StickyAssignor javadoc, "C1 leaves": C0, C1, C2 had t0..t3 round robin in generation
    1; C1 is gone). 2.3 still finds the javadoc's answer; the 2.5.1 constrained path keeps C0 and C2 at
    their partitions and deals t0-1, t2-0, t3-1 in order (each list in the order Kafka's HashMap of
    TopicPartition gave back the claims):

    >>> from coordinator_core.assignors import MemberSubscription, encode_sticky_user_data
    >>> topics = ["t0", "t1", "t2", "t3"]
    >>> members = [MemberSubscription("C0", topics, encode_sticky_user_data([("t0", 0), ("t1", 1), ("t3", 0)], 1)),
    ...            MemberSubscription("C2", topics, encode_sticky_user_data([("t1", 0), ("t2", 1)], 1))]
    >>> v2_3 = StickyRevisionBefore3_0(False, False, False, False)
    >>> assign_sticky_before_3_0(dict.fromkeys(topics, 2), members, revision=v2_3)
    {'C0': [('t3', 0), ('t0', 0), ('t1', 1), ('t2', 0)], 'C2': [('t1', 0), ('t2', 1), ('t0', 1), ('t3', 1)]}
    """
    members = subscriptions_in_hash_order(subscriptions)
    topics = topics_in_java_order(partitions_per_topic, members)
    counts = {t: partitions_per_topic[t] for t in topics}
    if not revision.generations:
        if cooperative:
            raise ValueError("cooperative-sticky (2.4.0+) has no revision without generations")
        claims = _claims_before_2_3(members, counts)
        result = _GeneralAssignmentBefore2_3(counts, topics, members, claims, revision).build()
        return _member_assignments(subscriptions, result, False, None)
    member_data = {m.member_id: _member_data(m, cooperative, revision) for m in members}
    transferring: dict[TopicPartition, str] | None = None
    equal: tuple[dict[str, list[TopicPartition]], set[TopicPartition]] | int = 0
    if revision.constrained:
        equal = _owned_if_all_subscriptions_equal(frozenset(topics), members, member_data, revision)
    if not isinstance(equal, int):
        result, transferring = _constrained_assign(counts, *equal)
    else:
        general_data = _general_path_member_data(members, member_data, equal, cooperative, revision)
        result = _GeneralAssignment(counts, topics, members, general_data, revision).build()
    return _member_assignments(subscriptions, result, cooperative, transferring)


__all__ = ["StickyRevisionBefore3_0", "assign_sticky_before_3_0"]
