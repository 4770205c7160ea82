"""Replay a recorded rebalance with Kafka's assignor, and ask "what if another assignor had been used".

:func:`replay_generation` takes one GroupMetadata record (the members' subscriptions and the assignment
the leader stored), feeds the same inputs to the recorded protocol's assignor and compares. A mismatch
is explained where it can be: the protocol is not one of Kafka's (a custom assignor), another client
version's revision of the assignor reproduces it (the leader ran another kafka-clients), or the inputs are
incomplete (undecodable subscriptions, partition counts unknown).

:func:`whatif_history` replays a group's whole history under a candidate assignor, feeding each step's
replayed output back as the next step's owned partitions and user data, and measures per rebalance the
partitions moved, the balance, and the pause exposure (an eager protocol revokes everything, a
cooperative one only what moves).

Partition counts are not in `__consumer_offsets`. Callers pass them when they know them (from offset
commits or the cluster); otherwise they are inferred as (highest assigned or owned partition + 1) per
subscribed topic, which is exact whenever every partition of a subscribed topic was assigned or still
owned, as Kafka's assignors ensure, and the result says it was inferred.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from coordinator_core._frozen import fast_init
from coordinator_core.assignors import (
    ASSIGNORS,
    NEWEST_KAFKA_VERSION,
    AssignorError,
    MemberSubscription,
    UnsupportedKafkaVersion,
    assign,
    encode_cooperative_user_data,
    encode_sticky_user_data,
)
from coordinator_core.consumer_protocol import CONSUMER_PROTOCOL_TYPE, decode_member_protocol
from coordinator_core.messages import GroupMetadataValue

TopicPartition = tuple[str, int]

#: Client versions whose assignor revisions differ in results, newest first: tried in turn to explain a
#: mismatch with the newest one (see coordinator_core.assignors.sticky_revision and range.py).
EXPLAINING_VERSIONS: tuple[str, ...] = (
    "4.4.0", "3.7.0", "3.5.1", "3.5.0", "3.4.1", "3.4.0", "3.3.2",  # sticky 3.x revisions, rack-aware range
    "2.8.2", "2.6.3", "2.5.0", "2.3.1", "2.2.2", "2.0.1",  # sticky before 3.0; range/roundrobin before 2.4
)

#: Protocols whose rebalances revoke only the partitions that move (KIP-429); the rest revoke everything.
COOPERATIVE_PROTOCOLS = frozenset({"cooperative-sticky"})


@fast_init
@dataclass(frozen=True, slots=True)
class MemberReplay:
    """One member's recorded and replayed partitions; ``missing`` = recorded but not replayed, ``extra``
    = replayed but not recorded."""

    member_id: str
    recorded: tuple[TopicPartition, ...]
    replayed: tuple[TopicPartition, ...]
    missing: tuple[TopicPartition, ...]
    extra: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class GenerationReplay:
    """The replay of one generation.

    ``status`` is ``match``, ``mismatch`` or ``not_replayable``; ``reason`` says why it did not match or
    could not be replayed (``custom_assignor``, ``other_client_version``, ``inputs_missing``,
    ``not_consumer_protocol``, ``unexplained``); ``matching_version`` names the kafka-clients version
    whose assignor reproduces the record when the requested one does not.
    """

    generation: int
    protocol: str | None
    kafka_version: str
    status: str
    reason: str | None
    detail: str | None
    matching_version: str | None
    partition_counts: Mapping[str, int]
    partition_counts_inferred: bool
    members: tuple[MemberReplay, ...]


def member_subscriptions(
    value: GroupMetadataValue,
) -> tuple[list[MemberSubscription], dict[str, tuple[TopicPartition, ...]]]:
    """The assignor inputs (in the record's member order, which is the JoinGroup order the leader saw)
    and the recorded assignment of a consumer-protocol GroupMetadata record.

    Raises:
        ValueError: a member's subscription or assignment bytes do not decode.
    """
    subs: list[MemberSubscription] = []
    recorded: dict[str, tuple[TopicPartition, ...]] = {}
    for member in value.members:
        proto = decode_member_protocol(value.protocol_type, member)
        if proto.error is not None or proto.subscription is None:
            raise ValueError(f"member {member.member_id}: {proto.error or 'no subscription stored'}")
        s = proto.subscription
        subs.append(MemberSubscription(
            member_id=member.member_id,
            topics=s.topics,
            user_data=s.user_data,
            owned_partitions=tuple((t, p) for t, p in s.owned_partitions),
            generation=s.generation_id if s.version >= 2 else None,
            group_instance_id=member.group_instance_id,
            rack_id=s.rack_id,
        ))
        recorded[member.member_id] = tuple((t, p) for t, p in proto.assignment.partitions) if proto.assignment else ()
    return subs, recorded


def infer_partition_counts(subscriptions: Iterable[MemberSubscription],
                           assignments: Iterable[Iterable[TopicPartition]]) -> dict[str, int]:
    """Highest assigned partition + 1 for every subscribed topic (0 for a topic nobody was given)."""
    counts = {t: 0 for s in subscriptions for t in s.topics}
    for partitions in assignments:
        for t, p in partitions:
            counts[t] = max(counts.get(t, 0), p + 1)
    return counts


def _compare(subs: Sequence[MemberSubscription], recorded: Mapping[str, tuple[TopicPartition, ...]],
             replayed: Mapping[str, Sequence[TopicPartition]]) -> tuple[MemberReplay, ...]:
    out = []
    for s in subs:
        rec = recorded.get(s.member_id, ())
        rep = tuple(replayed.get(s.member_id, ()))
        rec_set, rep_set = set(rec), set(rep)
        out.append(MemberReplay(s.member_id, rec, rep, tuple(tp for tp in rec if tp not in rep_set),
                                tuple(tp for tp in rep if tp not in rec_set)))
    return tuple(out)


def _matches(members: Sequence[MemberReplay]) -> bool:
    return all(not m.missing and not m.extra for m in members)


def replay_generation(value: GroupMetadataValue, *, kafka_version: str = NEWEST_KAFKA_VERSION,
                      partition_counts: Mapping[str, int] | None = None,
                      explaining_versions: Sequence[str] = EXPLAINING_VERSIONS) -> GenerationReplay:
    """Replay one generation's recorded protocol and compare with the assignment the leader stored.

    >>> from coordinator_core import messages as m, encode_subscription, encode_assignment, Subscription, Assignment
    >>> def member(mid, parts):
    ...     sub = encode_subscription(Subscription(3, ("t",), None, (), -1, None))
    ...     return m.MemberMetadata(mid, None, "c", "h", 1, 1, sub, encode_assignment(Assignment(3, parts, None)))
    >>> g = m.GroupMetadataValue("consumer", 1, "range", "a", -1,
    ...                          (member("a", (("t", 0), ("t", 1))), member("b", (("t", 2),))))
    >>> r = replay_generation(g)
    >>> r.status, r.partition_counts, [x.replayed for x in r.members]
    ('match', {'t': 3}, [(('t', 0), ('t', 1)), (('t', 2),)])
    """
    def result(status: str, reason: str | None, detail: str | None, members: tuple[MemberReplay, ...] = (),
               counts: Mapping[str, int] | None = None, inferred: bool = False,
               matching: str | None = None) -> GenerationReplay:
        return GenerationReplay(value.generation, value.protocol, kafka_version, status, reason, detail, matching,
                                dict(counts or {}), inferred, members)

    if value.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return result("not_replayable", "not_consumer_protocol", f"protocol type {value.protocol_type!r}")
    if not value.members or value.protocol is None:
        return result("not_replayable", "inputs_missing", "no members (an empty-group record)")
    if value.protocol not in ASSIGNORS:
        return result("not_replayable", "custom_assignor",
                      f"protocol {value.protocol!r} is not one of Kafka's assignors {sorted(ASSIGNORS)}")
    try:
        subs, recorded = member_subscriptions(value)
    except ValueError as e:
        return result("not_replayable", "inputs_missing", str(e))
    inferred = partition_counts is None
    # Owned partitions count too: in the first round of a cooperative rebalance the partitions that move
    # are withheld from the stored assignment but are still owned by their previous members.
    counts = (infer_partition_counts(subs, [*recorded.values(), *(s.owned_partitions for s in subs)])
              if partition_counts is None else dict(partition_counts))

    def run(version: str) -> tuple[MemberReplay, ...] | str:
        try:
            return _compare(subs, recorded, assign(value.protocol or "", counts, subs, kafka_version=version))
        except (AssignorError, UnsupportedKafkaVersion) as e:
            return f"{type(e).__name__}: {e}"

    first = run(kafka_version)
    if isinstance(first, tuple) and _matches(first):
        return result("match", None, None, first, counts, inferred)
    for version in explaining_versions:
        if version == kafka_version:
            continue
        other = run(version)
        if isinstance(other, tuple) and _matches(other):
            return result("mismatch", "other_client_version",
                          f"the {value.protocol} assignor of kafka-clients {version} reproduces the record",
                          first if isinstance(first, tuple) else other, counts, inferred, version)
    if isinstance(first, str):
        return result("not_replayable", "inputs_missing", first, (), counts, inferred)
    detail = "partition counts were inferred from the assignment" if inferred else None
    return result("mismatch", "unexplained", detail, first, counts, inferred)


# ----------------------------------------------------------------------------------------------
# What if: a group's history under another assignor


@dataclass(frozen=True)
class GenerationMembers:
    """What a rebalance's leader knows of one generation: members in JoinGroup order with their topics,
    static identity and rack. (Owned partitions and user data are what the what-if replay feeds back.)"""

    generation: int
    members: tuple[MemberSubscription, ...]
    partition_counts: Mapping[str, int]


@dataclass(frozen=True)
class WhatIfStep:
    """One rebalance of a group's history replayed under ``assignor``.

    ``partitions_moved``: partitions whose owner changed from the previous step (a partition of a member
    that left counts as moved when it lands elsewhere). ``balance``: max - min partitions per member.
    ``paused_partitions``: partitions that stop being consumed during the rebalance - every owned
    partition for an eager protocol, only the moved ones for a cooperative one.
    """

    generation: int
    assignor: str
    members: int
    partitions: int
    partitions_moved: int
    balance: int
    paused_partitions: int
    assignment: Mapping[str, tuple[TopicPartition, ...]]
    error: str | None


def whatif_history(history: Sequence[GenerationMembers], assignor: str, *,
                   kafka_version: str = NEWEST_KAFKA_VERSION) -> list[WhatIfStep]:
    """Replay every generation in order under `assignor`, each step seeing the previous step's output as
    its members' owned partitions, sticky user data (previous assignment + generation) or cooperative
    generation, as real members would have sent them.

    >>> from coordinator_core.assignors import MemberSubscription as M
    >>> h = [GenerationMembers(1, (M("a", ("t",)),), {"t": 4}),
    ...      GenerationMembers(2, (M("a", ("t",)), M("b", ("t",))), {"t": 4})]
    >>> [(s.partitions_moved, s.balance, s.paused_partitions) for s in whatif_history(h, "range")]
    [(0, 0, 0), (2, 0, 4)]
    >>> [(s.partitions_moved, s.paused_partitions) for s in whatif_history(h, "cooperative-sticky")]
    [(0, 0), (2, 2)]
    """
    steps: list[WhatIfStep] = []
    previous: dict[str, tuple[TopicPartition, ...]] = {}
    previous_generation = -1
    cooperative = assignor in COOPERATIVE_PROTOCOLS
    for gen in history:
        try:
            out = assign(assignor, gen.partition_counts, _fed_back(gen, assignor, previous, previous_generation),
                         kafka_version=kafka_version)
            if cooperative:
                # Round one withholds partitions that change owner (their owners revoke them); the
                # follow-up rebalance hands them out. Replay that second round for the settled state.
                round_one = {mid: tuple(ps) for mid, ps in out.items()}
                out = assign(assignor, gen.partition_counts, _fed_back(gen, assignor, round_one, gen.generation),
                             kafka_version=kafka_version)
        except (AssignorError, UnsupportedKafkaVersion, ValueError) as e:
            steps.append(WhatIfStep(gen.generation, assignor, len(gen.members), 0, 0, 0, 0, {},
                                    f"{type(e).__name__}: {e}"))
            continue
        assignment = {mid: tuple(ps) for mid, ps in out.items()}
        owner_before = {tp: mid for mid, ps in previous.items() for tp in ps}
        moved = sum(1 for mid, ps in assignment.items() for tp in ps if owner_before.get(tp, mid) != mid)
        sizes = [len(ps) for ps in assignment.values()] or [0]
        # Eager: every member still in the group revokes all it owns when the rebalance starts.
        owned_by_staying = sum(len(previous.get(m.member_id, ())) for m in gen.members)
        paused = moved if cooperative else owned_by_staying
        steps.append(WhatIfStep(gen.generation, assignor, len(gen.members), sum(sizes), moved,
                                max(sizes) - min(sizes), paused, assignment, None))
        previous = assignment
        previous_generation = gen.generation
    return steps


def _fed_back(gen: GenerationMembers, assignor: str, owned_by: Mapping[str, tuple[TopicPartition, ...]],
              owned_generation: int) -> list[MemberSubscription]:
    """The members' subscriptions as they would have sent them after owning `owned_by`."""
    subs = []
    for m in gen.members:
        owned = owned_by.get(m.member_id, ())
        user_data: bytes | None = None
        if owned and assignor == "sticky":
            user_data = encode_sticky_user_data(list(owned), owned_generation)
        elif owned and assignor == "cooperative-sticky":
            user_data = encode_cooperative_user_data(owned_generation)
        subs.append(MemberSubscription(m.member_id, tuple(m.topics), user_data, owned,
                                       owned_generation if owned else None, m.group_instance_id, m.rack_id))
    return subs


# ----------------------------------------------------------------------------------------------
# From a reconstructed history (coordinator_core.history rows) to what-if inputs


def _identity(member: Any) -> str:
    """A member's identity across member ids: its static instance id, else client id @ host."""
    if member.group_instance_id:
        return f"instance {member.group_instance_id}"
    return f"{member.client_id or '?'}@{member.client_host or '?'}"


def history_members(generations: Sequence[Any]) -> list[GenerationMembers]:
    """What-if inputs from a group's classic generation rows (``coordinator_core.history.GenerationRow``):
    members in their recorded order with subscribed topics; partition counts taken as the highest partition
    ever assigned + 1 per topic (the history's own evidence of each topic's size)."""
    counts: dict[str, int] = {}
    for g in generations:
        for m in g.members:
            for t in m.subscribed_topics:
                counts.setdefault(t, 0)
            for p in m.assigned_partitions:
                counts[p.topic] = max(counts.get(p.topic, 0), p.partition + 1)
    return [
        GenerationMembers(g.generation, tuple(MemberSubscription(m.member_id, tuple(m.subscribed_topics),
                                                                 group_instance_id=m.group_instance_id)
                                              for m in g.members), dict(counts))
        for g in generations
    ]


def static_membership_counterfactual(generations: Sequence[Any],
                                     history: Sequence[GenerationMembers]) -> list[GenerationMembers]:
    """The history as it would have been with static membership (``group.instance.id`` = the member's
    client id @ host): a restart of the same client and host that is back within its session timeout
    does not rebalance, so a generation that only changed member ids is absorbed, and so is a
    "member gone" generation followed, within the session timeout, by the same members coming back.

    >>> from types import SimpleNamespace as N
    >>> from datetime import datetime, timedelta
    >>> def gen(n, minute, hosts):
    ...     ms = [N(member_id=f"{h}-{n}", group_instance_id=None, client_id="c", client_host=h,
    ...             subscribed_topics=("t",), assigned_partitions=(), session_timeout_ms=45000) for h in hosts]
    ...     return N(generation=n, members=ms, rebalance_started_at=datetime(2026, 1, 1) + timedelta(minutes=minute))
    >>> gens = [gen(1, 0, "ab"), gen(2, 10, "a"), gen(3, 10.5, "ab"), gen(4, 30, "ab"), gen(5, 40, "abc")]
    >>> [g.generation for g in static_membership_counterfactual(gens, history_members(gens))]
    [1, 5]
    """
    def ids(g: Any) -> frozenset[str]:
        return frozenset(_identity(m) for m in g.members)

    def timeout_ms(g: Any) -> int:
        return max((m.session_timeout_ms or 0) for m in g.members) if g.members else 0

    def within(a: Any, b: Any, limit_ms: int) -> bool:
        if a.rebalance_started_at is None or b.rebalance_started_at is None:
            return False
        return bool((b.rebalance_started_at - a.rebalance_started_at).total_seconds() * 1000 <= limit_ms)

    kept: list[int] = []
    i = 0
    while i < len(generations):
        g = generations[i]
        if kept:
            previous = generations[kept[-1]]
            if ids(g) == ids(previous):
                i += 1  # same clients and hosts, new member ids only: absorbed by static membership
                continue
            nxt = generations[i + 1] if i + 1 < len(generations) else None
            if (nxt is not None and ids(g) < ids(previous) and ids(nxt) == ids(previous)
                    and within(g, nxt, timeout_ms(previous))):
                i += 2  # members gone and back within the session timeout: no rebalance at all
                continue
        kept.append(i)
        i += 1
    out = []
    for index in kept:
        g, h = generations[index], history[index]
        members = tuple(MemberSubscription(_identity(m), s.topics, group_instance_id=_identity(m))
                        for m, s in zip(g.members, h.members, strict=True))
        out.append(GenerationMembers(h.generation, members, h.partition_counts))
    return out
