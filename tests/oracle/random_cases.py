"""Randomized assignor inputs shaped like real groups: equal and differing subscriptions, previous
ownership with churn, generation conflicts, static members, racks, user data."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

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


def _member_id(rng: random.Random, i: int) -> str:
    style = rng.random()
    if style < 0.4:
        return f"consumer{i}"
    if style < 0.8:
        return f"consumer-grp-{i}-{rng.getrandbits(64):016x}"
    return rng.choice(["c", "C", "m", "member-", "x"]) + str(rng.randrange(1000))


def random_case(rng: random.Random, assignor: str, *, max_members: int = 10, max_topics: int = 5,
                max_partitions: int = 12, racks: bool = True) -> Case:
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
            subs[mid] = rng.sample(topics, rng.randint(1, len(topics)))
    static = rng.random() < 0.3
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
    members: list[MemberSubscription] = []
    for mid in ids:
        gen = generation[mid]
        if assignor == "sticky":
            user_data = None
            if owned[mid] or rng.random() < 0.5:
                user_data = encode_sticky_user_data(owned[mid], gen if gen is not None else None)
            members.append(MemberSubscription(mid, subs[mid], user_data, (), gen, instance[mid], member_rack[mid]))
        elif assignor == "cooperative-sticky":
            user_data = encode_cooperative_user_data(gen) if gen is not None and rng.random() < 0.7 else None
            sub_gen = gen if rng.random() < 0.8 else None
            members.append(MemberSubscription(mid, subs[mid], user_data, tuple(owned[mid]), sub_gen, instance[mid],
                                              member_rack[mid]))
        else:
            members.append(MemberSubscription(mid, subs[mid], None, tuple(owned[mid]), gen, instance[mid],
                                              member_rack[mid]))
    return Case(assignor, counts, members, brokers, replicas)
