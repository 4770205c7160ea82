"""Randomized assignor inputs shaped like real groups: equal and differing subscriptions, previous
ownership with churn, generation conflicts, static members, racks, user data; and multi-round histories
where each round's assignment is the next round's previous ownership.

`Features` switches off what an old kafka-clients version does not have, so that a case never relies on
an input that version could not receive (static members before 2.4, racks before 3.5, ...)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from coordinator_core.assignors import MemberSubscription, TopicPartition
from coordinator_core.assignors.userdata import encode_cooperative_user_data, encode_sticky_user_data

TOPIC_POOL = ["topic", "topic1", "topic2", "t0", "t1", "t10", "t2", "orders", "payments", "Zeta", "é-topic",
              "\U0001f600x", "\uff5ey", *(f"events.{i}" for i in range(12))]
RACKS = ["rack-a", "rack-b", "rack-c", "rack-d"]


@dataclass
class Case:
    assignor: str
    partitions_per_topic: dict[str, int]
    members: list[MemberSubscription]
    brokers: list[tuple[int, str | None]] = field(default_factory=list)
    replicas: dict[str, list[list[int]]] | None = None

    def partition_racks(self) -> dict[TopicPartition, list[str]] | None:
        if self.replicas is None:
            return None
        rack_of = dict(self.brokers)
        return {
            (t, p): [r for b in ids if (r := rack_of.get(b)) is not None]
            for t, per in self.replicas.items()
            for p, ids in enumerate(per)
        }


@dataclass(frozen=True)
class Features:
    """Which inputs the leader's kafka-clients version can receive.

    Attributes:
        static_members: group instance ids in the Subscription (2.4+, KIP-345).
        racks: consumer racks (3.5+, KIP-881).
        subscription_generation: the generation of ConsumerProtocol Subscription v2 (3.4+).
        sticky_generation: `sticky` user data V1 with a generation (2.3+, KIP-341); else V0.
        cooperative_user_data: `cooperative-sticky` members send their generation as user data (2.8.1+).
    """

    static_members: bool = True
    racks: bool = True
    subscription_generation: bool = True
    sticky_generation: bool = True
    cooperative_user_data: bool = True


ALL_FEATURES = Features()


def features_of(version: tuple[int, int, int]) -> Features:
    return Features(
        static_members=version >= (2, 4, 0),
        racks=version >= (3, 5, 0),
        subscription_generation=version >= (3, 4, 0),
        sticky_generation=version >= (2, 3, 0),
        cooperative_user_data=version >= (2, 8, 1),
    )


def _member_id(rng: random.Random, i: int) -> str:
    style = rng.random()
    if style < 0.4:
        return f"consumer{i}"
    if style < 0.8:
        return f"consumer-grp-{i}-{rng.getrandbits(64):016x}"
    return rng.choice(["c", "C", "m", "member-", "x"]) + str(rng.randrange(1000))


def random_case(rng: random.Random, assignor: str, *, max_members: int = 10, max_topics: int = 5,  # noqa: C901, PLR0912 - draws each feature of a case in turn
                max_partitions: int = 12, racks: bool = True, features: Features = ALL_FEATURES) -> Case:
    n_topics = rng.randint(1, max_topics)
    topics = rng.sample(TOPIC_POOL, n_topics)
    counts = {t: rng.randint(1, max_partitions) for t in topics}
    if rng.random() < 0.1:
        counts[topics[0]] = 0  # subscribed but without partitions / metadata
    if rng.random() < 0.1:
        del counts[topics[-1]]  # subscribed but unknown to the cluster
    n_members = rng.randint(1, max_members)
    ids: list[str] = []
    while len(ids) < n_members:
        mid = _member_id(rng, len(ids))
        if mid not in ids:
            ids.append(mid)
    equal = rng.random() < 0.55
    subs: dict[str, list[str]] = {}
    for mid in ids:
        if equal:
            subs[mid] = rng.sample(topics, len(topics))
        else:
            # Now and then a member subscribed to nothing (a pattern subscription matching no topic yet).
            subs[mid] = [] if rng.random() < 0.05 else rng.sample(topics, rng.randint(1, len(topics)))
    static = features.static_members and rng.random() < 0.3
    racks = racks and features.racks
    instance: dict[str, str | None] = {
        mid: (f"instance-{rng.randrange(100)}-{k}" if static and rng.random() < 0.6 else None)
        for k, mid in enumerate(ids)
    }
    brokers: list[tuple[int, str | None]] = []
    replicas: dict[str, list[list[int]]] | None = None
    member_rack: dict[str, str | None] = dict.fromkeys(ids)
    if racks and rng.random() < 0.35:
        n_racks = rng.randint(1, 3)
        n_brokers = rng.randint(1, 5)
        brokers = [(b, RACKS[b % n_racks] if rng.random() < 0.9 else None) for b in range(n_brokers)]
        rf = rng.randint(1, n_brokers)
        replicas = {
            t: [rng.sample(range(n_brokers), rf) for _ in range(c)] for t, c in counts.items()
        }
        for mid in ids:
            if rng.random() < 0.8:
                member_rack[mid] = rng.choice(RACKS[: n_racks + 1])
    all_partitions = [(t, p) for t, c in counts.items() for p in range(c)]
    owned: dict[str, list[TopicPartition]] = {mid: [] for mid in ids}
    generation: dict[str, int | None] = dict.fromkeys(ids)
    if rng.random() < 0.75 and all_partitions:
        base_generation = rng.randint(1, 20)
        shuffled = all_partitions[:]
        rng.shuffle(shuffled)
        previous_members = [mid for mid in ids if rng.random() < 0.85]
        for k, tp in enumerate(shuffled):
            if previous_members and rng.random() < 0.9:
                owned[previous_members[k % len(previous_members)]].append(tp)
        for mid in ids:
            roll = rng.random()
            if roll < 0.1 and owned[mid]:
                generation[mid] = base_generation - rng.randint(1, 3)
            elif roll < 0.15:
                generation[mid] = None
            else:
                generation[mid] = base_generation
            if rng.random() < 0.08 and all_partitions:  # a stale or conflicting claim
                extra = rng.choice(all_partitions)
                if extra not in owned[mid]:
                    owned[mid].append(extra)
            if rng.random() < 0.05:
                owned[mid].append((rng.choice(TOPIC_POOL), rng.randrange(4)))  # topic not subscribed / gone
            if rng.random() < 0.5:
                rng.shuffle(owned[mid])
    members = [
        _member(rng, assignor, features, mid, subs[mid], owned[mid], generation[mid], instance[mid], member_rack[mid])
        for mid in ids
    ]
    return Case(assignor, counts, members, brokers, replicas)


def _member(rng: random.Random, assignor: str, features: Features, member_id: str, topics: list[str],
            owned: list[TopicPartition], gen: int | None, instance: str | None = None,
            rack: str | None = None) -> MemberSubscription:
    """The subscription a member of `assignor` sends, having owned `owned` in generation `gen`."""
    if assignor == "sticky":
        user_data = None
        if owned or rng.random() < 0.5:
            user_data = encode_sticky_user_data(owned, gen if features.sticky_generation else None)
        sub_gen = gen if features.subscription_generation else None
        return MemberSubscription(member_id, topics, user_data, (), sub_gen, instance, rack)
    if assignor == "cooperative-sticky":
        user_data = None
        if features.cooperative_user_data and gen is not None and rng.random() < 0.7:
            user_data = encode_cooperative_user_data(gen)
        sub_gen = gen if features.subscription_generation and rng.random() < 0.8 else None
        return MemberSubscription(member_id, topics, user_data, tuple(owned), sub_gen, instance, rack)
    sub_gen = gen if features.subscription_generation else None
    return MemberSubscription(member_id, topics, None, tuple(owned), sub_gen, instance, rack)


def rebalance_history(rng: random.Random, assignor: str, rounds: int,
                      assign: Callable[[Case], dict[str, list[TopicPartition]] | None], *,
                      features: Features = ALL_FEATURES, **shape: int) -> list[Case]:
    """A group's successive rebalances: round 1 is a `random_case`; every later round feeds the previous
    round's assignment back (as `sticky` user data with the next generation, or as `cooperative-sticky`
    owned partitions) while members leave and join, subscriptions change and topics grow.

    `assign` computes a round's assignment (ours; the oracle test asserts it equals Kafka's, so the
    history is the one Kafka would have produced); None (the assignor failed) ends the history.
    """
    case = random_case(rng, assignor, racks=False, features=features, **shape)
    history = [case]
    generation = rng.randint(1, 20)
    for _ in range(rounds - 1):
        result = assign(case)
        if result is None:
            break
        generation += 1
        counts = dict(case.partitions_per_topic)
        if rng.random() < 0.15 and counts:
            grown = rng.choice(list(counts))
            counts[grown] += rng.randint(1, 4)
        # when every member subscribes to nothing, a changed subscription picks from the cluster's topics
        # (a pattern subscription starting to match)
        all_topics = sorted({t for m in case.members for t in m.topics}) or sorted(case.partitions_per_topic)
        members: list[MemberSubscription] = []
        for m in case.members:
            if rng.random() < 0.15:
                continue  # left the group
            topics = list(m.topics)
            if rng.random() < 0.1 and all_topics:
                topics = rng.sample(all_topics, rng.randint(1, len(all_topics)))
            members.append(_member(rng, assignor, features, m.member_id, topics, result[m.member_id],
                                   generation, m.group_instance_id))
        for k in range(rng.choice([0, 0, 0, 1, 2])):
            topics = members[0].topics if members and rng.random() < 0.7 else all_topics
            member_id = f"joined-{generation}-{k}-{rng.getrandbits(32):08x}"
            members.append(_member(rng, assignor, features, member_id, list(topics), [], None))
        if not members:
            break
        rng.shuffle(members)  # the JoinGroup order of a new generation is not the previous one's
        case = replace(case, partitions_per_topic=counts, members=members)
        history.append(case)
    return history
