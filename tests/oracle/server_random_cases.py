"""Randomized KIP-848 group states for the server assignors: members with equal or differing subscriptions
(some naming topics the cluster lacks), static members, previous target assignments with churn (members
gone or new, topics unsubscribed or deleted, partitions listed in any order so that Java's HashSet buckets
collide), and topics with up to a few hundred partitions."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

from coordinator_core.assignors import ConsumerGroupMemberSpec, TopicMetadata
from coordinator_core.javaisms import uuid_bits

TOPIC_NAMES = ["topic", "topic1", "topic2", "t0", "t1", "t10", "orders", "payments", "Zeta", "é-topic",
               "\U0001f600x", "\uff5ey", "clicks", "audit"]
_B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def random_uuid(rng: random.Random) -> str:
    """A Kafka Uuid in canonical `Uuid.toString()` form (as `Uuid.randomUuid()` makes: not starting with
    '-', not one of the reserved ids)."""
    while True:
        n = rng.getrandbits(128) << 4  # 132 bits, the last 4 zero
        text = "".join(_B64URL[(n >> (6 * (21 - i))) & 63] for i in range(22))
        if not text.startswith("-") and uuid_bits(text) not in ((0, 0), (0, 1)):
            return text


@dataclass
class ServerCase:
    assignor: str  # "uniform" or "range"
    topics: dict[str, TopicMetadata]
    members: list[ConsumerGroupMemberSpec]

    def to_json(self, case_id: int) -> str:
        return json.dumps({
            "id": case_id,
            "assignor": self.assignor,
            "topics": {n: {"id": t.topic_id, "partitions": t.num_partitions} for n, t in self.topics.items()},
            "members": [
                {
                    "id": m.member_id,
                    "topics": list(m.subscribed_topic_names),
                    "instance": m.instance_id,
                    "rack": m.rack_id,
                    "assignment": [[t, list(ps)] for t, ps in m.target_assignment.items()],
                }
                for m in self.members
            ],
        })


def _member_id(rng: random.Random, i: int) -> str:
    style = rng.random()
    if style < 0.5:
        return random_uuid(rng)  # what KIP-848 consumers send
    if style < 0.8:
        return f"member-{i}"
    return rng.choice(["A", "B", "c", "consumer-", "x"]) + str(rng.randrange(1000))


def random_server_case(rng: random.Random, assignor: str, *, max_members: int = 10, max_topics: int = 6,  # noqa: C901, PLR0912 - draws each feature of a case in turn
                       max_partitions: int = 24) -> ServerCase:
    names = rng.sample(TOPIC_NAMES, rng.randint(1, max_topics))
    topics = {n: TopicMetadata(random_uuid(rng), rng.randint(1, max_partitions)) for n in names}
    if rng.random() < 0.05:
        topics[names[0]] = TopicMetadata(topics[names[0]].topic_id, 0)  # a topic without partitions
    missing = [n for n in TOPIC_NAMES if n not in topics]
    unknown = rng.sample(missing, min(len(missing), 2)) if rng.random() < 0.15 else []  # not in the image
    deleted_topic_id = random_uuid(rng)  # in old target assignments only

    n_members = rng.randint(1, max_members)
    ids: list[str] = []
    while len(ids) < n_members:
        mid = _member_id(rng, len(ids))
        if mid not in ids:
            ids.append(mid)
    pool = names + unknown
    homogeneous = rng.random() < 0.5
    subscriptions: dict[str, list[str]] = {}
    for mid in ids:
        if homogeneous:
            subscriptions[mid] = rng.sample(pool, len(pool))
        else:
            subscriptions[mid] = rng.sample(pool, rng.randint(0 if rng.random() < 0.05 else 1, len(pool)))
        if subscriptions[mid] and rng.random() < 0.05:
            subscriptions[mid].append(subscriptions[mid][0])  # a name sent twice
    static = rng.random() < 0.3
    instance = {mid: (f"instance-{rng.randrange(50)}-{k}" if static and rng.random() < 0.6 else None)
                for k, mid in enumerate(ids)}

    # the previous target assignment: what an earlier computation (over an earlier member set) left
    previous: dict[str, dict[str, list[int]]] = {mid: {} for mid in ids}
    if rng.random() < 0.8:
        holders = [mid for mid in ids if rng.random() < 0.8]
        all_partitions = [(t.topic_id, p) for t in topics.values() for p in range(t.num_partitions)]
        if rng.random() < 0.2:
            all_partitions += [(deleted_topic_id, p) for p in range(rng.randint(1, 4))]
        rng.shuffle(all_partitions)
        chunky = rng.random() < 0.5
        for k, (topic_id, p) in enumerate(all_partitions):
            if not holders or rng.random() < 0.1:
                continue
            owner = holders[(k * len(holders)) // len(all_partitions)] if chunky else rng.choice(holders)
            previous[owner].setdefault(topic_id, []).append(p)
        claimant = rng.choice(ids)
        if previous[claimant] and rng.random() < 0.05:  # a claim Kafka never writes: doubled or out of range
            topic_id = rng.choice(list(previous[claimant]))
            previous[claimant][topic_id] = list(dict.fromkeys(
                previous[claimant][topic_id] + [rng.randrange(max_partitions + 2)]))
        for mid in ids:
            if rng.random() < 0.5:
                for ps in previous[mid].values():
                    ps.sort(reverse=rng.random() < 0.5)
            if rng.random() < 0.5:
                items = list(previous[mid].items())
                rng.shuffle(items)
                previous[mid] = dict(items)
    members = [
        ConsumerGroupMemberSpec(mid, subscriptions[mid], previous[mid], instance[mid],
                                rng.choice([None, "rack-a", "rack-b"]))
        for mid in ids
    ]
    return ServerCase(assignor, topics, members)
