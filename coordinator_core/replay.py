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

:func:`replay_stored_generation` replays a generation from its members as the decode stage stores them
(``group_members`` rows, :class:`StoredMember`) instead of the record's bytes; :func:`fold_whatif` runs the
what-if replay as a fold over the generations each nightly run adds, from a small carried state.
"""

from __future__ import annotations

import copy
import hashlib
import pickle
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
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
from coordinator_core.assignors.kafka_python import KAFKA_PYTHON_VERSION, assign_kafka_python, kafka_python_protocols
from coordinator_core.client_library import (
    AIOKAFKA,
    FRANZ_GO,
    JAVA,
    KAFKA_PYTHON,
    KAFKAJS,
    LIBRDKAFKA,
    SARAMA,
    UNKNOWN,
    LeaderClient,
    MemberBytes,
    identify_leader_client,
)
from coordinator_core.consumer_protocol import CONSUMER_PROTOCOL_TYPE, decode_member_protocol
from coordinator_core.history.model import Partition, to_dict
from coordinator_core.messages import GroupMetadataValue
from coordinator_core.state_codec import dump_versioned, load_versioned

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


#: The leader of a generation that has none (an empty group's record).
_NO_LEADER = LeaderClient(UNKNOWN, None, ())


@dataclass(frozen=True)
class GenerationReplay:
    """The replay of one generation.

    ``status`` is ``match``, ``mismatch`` or ``not_replayable``; ``reason`` says why it did not match or
    could not be replayed (``custom_assignor``, ``other_client_version``, ``other_client_library``,
    ``inputs_missing``, ``not_consumer_protocol``, ``unexplained``); ``matching_version`` names the
    kafka-clients version whose assignor reproduces the record when the requested one does not.
    ``leader_client`` is the library the leader ran (:mod:`coordinator_core.client_library`), ``engine`` the
    code the replay ran (``java``: this package's ports of Kafka's assignors at ``kafka_version``;
    ``kafka-python <version>``: kafka-python's own classes), ``findings`` what the inputs show beyond the
    replay (``shared_sticky_state``).
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
    leader_client: LeaderClient = _NO_LEADER
    engine: str = JAVA
    findings: tuple[str, ...] = ()


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


@dataclass(frozen=True)
class StoredMember:
    """One member of a stored generation as the decode stage keeps it (a ``group_members`` row): its
    subscription and assignment already decoded from the record's ConsumerProtocol bytes.

    ``subscription_version`` is None when no subscription decoded (then ``protocol_error`` says why, or
    none was stored); ``assigned_partitions`` None when the member stored no assignment.
    """

    member_id: str
    group_instance_id: str | None
    subscription_version: int | None
    subscribed_topics: tuple[str, ...] | None
    subscription_user_data: bytes | None
    owned_partitions: tuple[TopicPartition, ...] | None
    subscription_generation: int | None
    rack_id: str | None
    assigned_partitions: tuple[TopicPartition, ...] | None
    protocol_error: str | None = None
    #: what tells the leader's library (coordinator_core.client_library): the client id, the version and
    #: user data of the assignment the leader wrote, and whether this member was the leader
    client_id: str | None = None
    assignment_version: int | None = None
    assignment_user_data: bytes | None = None
    is_leader: bool = False


def stored_member_subscriptions(
    members: Sequence[StoredMember],
) -> tuple[list[MemberSubscription], dict[str, tuple[TopicPartition, ...]]]:
    """:func:`member_subscriptions` for members the decode stage stored (in the record's member order).

    Raises:
        ValueError: a member's subscription or assignment did not decode (the same message as from the
            record's bytes).
    """
    subs: list[MemberSubscription] = []
    recorded: dict[str, tuple[TopicPartition, ...]] = {}
    for member in members:
        if member.protocol_error is not None or member.subscription_version is None:
            raise ValueError(f"member {member.member_id}: {member.protocol_error or 'no subscription stored'}")
        subs.append(MemberSubscription(
            member_id=member.member_id,
            topics=tuple(member.subscribed_topics or ()),
            user_data=member.subscription_user_data,
            owned_partitions=tuple(member.owned_partitions or ()),
            generation=member.subscription_generation if member.subscription_version >= 2 else None,
            group_instance_id=member.group_instance_id,
            rack_id=member.rack_id,
        ))
        recorded[member.member_id] = tuple(member.assigned_partitions or ())
    return subs, recorded


def leader_client_of(value: GroupMetadataValue) -> LeaderClient:
    """The library the generation's leader ran, from its record (:func:`identify_leader_client`)."""
    members, leader = [], None
    for member in value.members:
        proto = decode_member_protocol(value.protocol_type, member)
        sub, asg = proto.subscription, proto.assignment
        shape = MemberBytes(member.client_id, sub.version if sub else None, sub.user_data if sub else None,
                            asg.version if asg else None, asg.user_data if asg else None)
        members.append(shape)
        if member.member_id == value.leader:
            leader = shape
    return identify_leader_client(members, leader, value.protocol)


def stored_leader_client(members: Sequence[StoredMember], protocol: str | None) -> LeaderClient:
    """:func:`leader_client_of` for members the decode stage stored (the leader is the one with ``is_leader``)."""
    shapes = [MemberBytes(m.client_id, m.subscription_version, m.subscription_user_data, m.assignment_version,
                          m.assignment_user_data) for m in members]
    leader = next((shape for m, shape in zip(members, shapes, strict=True) if m.is_leader), None)
    return identify_leader_client(shapes, leader, protocol)


def shared_sticky_state(protocol: str | None, subscriptions: Sequence[MemberSubscription]) -> bool:
    """Two or more members of a `sticky` generation sent the same non-empty user data: each claims the same
    previous assignment, which only happens when they share the assignor's state. kafka-python before 3.0 (and
    aiokafka) keep it on the assignor class, shared by every consumer of one process; a member new to the
    group then claims partitions it never owned."""
    if protocol != "sticky":
        return False
    seen: set[bytes] = set()
    for s in subscriptions:
        if s.user_data:
            if s.user_data in seen:
                return True
            seen.add(s.user_data)
    return False


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
    >>> r.status, r.partition_counts, [x.replayed for x in r.members], r.leader_client.library, r.engine
    ('match', {'t': 3}, [(('t', 0), ('t', 1)), (('t', 2),)], 'java', 'java')
    """
    return _replay(value.generation, value.protocol_type, value.protocol, bool(value.members),
                   lambda: member_subscriptions(value), lambda: leader_client_of(value), kafka_version,
                   partition_counts, explaining_versions)


def replay_stored_generation(generation: int, protocol_type: str | None, protocol: str | None,
                             members: Sequence[StoredMember], *, kafka_version: str = NEWEST_KAFKA_VERSION,
                             partition_counts: Mapping[str, int] | None = None,
                             explaining_versions: Sequence[str] = EXPLAINING_VERSIONS) -> GenerationReplay:
    """:func:`replay_generation` from the generation's members as the decode stage stores them, in the
    record's member order (which decides the leader's HashMap order, hence some assignments).

    >>> a = StoredMember("a", None, 3, ("t",), None, (), -1, None, (("t", 0), ("t", 1)))
    >>> b = StoredMember("b", None, 3, ("t",), None, (), -1, None, (("t", 2),))
    >>> r = replay_stored_generation(1, "consumer", "range", [a, b])
    >>> r.status, r.partition_counts, [x.replayed for x in r.members]
    ('match', {'t': 3}, [(('t', 0), ('t', 1)), (('t', 2),)])
    """
    return _replay(generation, protocol_type, protocol, bool(members), lambda: stored_member_subscriptions(members),
                   lambda: stored_leader_client(members, protocol), kafka_version, partition_counts,
                   explaining_versions)


#: How each library's assignors differ from Kafka's Java ones, per protocol: the detail of an
#: `other_client_library` mismatch (from each library's source; coordinator_core/client_library.py).
LIBRARY_DIFFERENCES: dict[str, dict[str, str]] = {
    KAFKA_PYTHON: {
        "sticky": "kafka-python's sticky is its own port of an older Java algorithm (no constrained path, "
                  "JoinGroup order, Python set order)",
        "range": "kafka-python's range sorts members by member id only before 2.3 (no static members)",
        "roundrobin": "kafka-python's roundrobin sorts members by member id only before 2.3 (no static members)",
        "cooperative-sticky": "kafka-python's cooperative-sticky (3.0+) is its own port",
    },
    AIOKAFKA: {
        "sticky": "aiokafka's sticky is a copy of kafka-python's port of an older Java algorithm",
        "range": "aiokafka's range sorts members by member id only, static members too",
        "roundrobin": "aiokafka's roundrobin sorts members by member id only, static members too",
    },
    LIBRDKAFKA: {
        "cooperative-sticky": "librdkafka's cooperative-sticky is a C port of Java's AbstractStickyAssignor "
                              "before 2.6 (rack-aware since 2.2)",
        "range": "librdkafka's range compares instance ids only when both members have one",
        "roundrobin": "librdkafka's roundrobin compares instance ids only when both members have one",
    },
    FRANZ_GO: {
        "sticky": "franz-go's sticky is a different algorithm by design",
        "cooperative-sticky": "franz-go's cooperative-sticky is a different algorithm by design",
        "range": "franz-go's rack-aware range uses the partition leader's rack only",
    },
    SARAMA: {
        "roundrobin": "Sarama's roundrobin sorts partitions as 'topic-partition' strings (t-10 before t-2) and "
                      "members by member id only",
        "range": "Sarama's range sorts members by member id only (instance ids ignored)",
        "sticky": "Sarama's sticky is its own port, walking a Go map in random order",
        "cooperative-sticky": "Sarama's cooperative-sticky (1.60.1+) is its own port",
    },
    KAFKAJS: {},
}


def library_difference(library: str, protocol: str) -> str:
    """How `library`'s `protocol` assignor differs from Kafka's Java one, as far as its source tells."""
    return LIBRARY_DIFFERENCES.get(library, {}).get(
        protocol, f"{library}'s {protocol} is its own code, not Kafka's Java assignor")


def _kafka_python_engine(client: LeaderClient, protocol: str) -> bool:
    """A leader that wrote kafka-python's bytes (aiokafka's are a copy) is replayed with kafka-python's own
    classes, where the installed kafka-python has the protocol."""
    return client.library in (KAFKA_PYTHON, AIOKAFKA) and protocol in kafka_python_protocols()


def _replay(generation: int, protocol_type: str | None, protocol: str | None, has_members: bool,  # noqa: C901, PLR0912 - one early return per reason a generation cannot be replayed
            inputs: Callable[[], tuple[list[MemberSubscription], dict[str, tuple[TopicPartition, ...]]]],
            leader_client: Callable[[], LeaderClient],
            kafka_version: str, partition_counts: Mapping[str, int] | None,
            explaining_versions: Sequence[str]) -> GenerationReplay:
    client = leader_client() if has_members else _NO_LEADER
    engine = JAVA
    findings: tuple[str, ...] = ()
    kafka_python = f"{KAFKA_PYTHON} {KAFKA_PYTHON_VERSION}"

    def result(status: str, reason: str | None, detail: str | None, members: tuple[MemberReplay, ...] = (),
               counts: Mapping[str, int] | None = None, inferred: bool = False,
               matching: str | None = None) -> GenerationReplay:
        version = KAFKA_PYTHON_VERSION if engine != JAVA else kafka_version
        return GenerationReplay(generation, protocol, version, status, reason, detail, matching,
                                dict(counts or {}), inferred, members, client, engine, findings)

    if protocol_type != CONSUMER_PROTOCOL_TYPE:
        return result("not_replayable", "not_consumer_protocol", f"protocol type {protocol_type!r}")
    if not has_members or protocol is None:
        return result("not_replayable", "inputs_missing", "no members (an empty-group record)")
    if protocol not in ASSIGNORS:
        return result("not_replayable", "custom_assignor",
                      f"protocol {protocol!r} is not one of Kafka's assignors {sorted(ASSIGNORS)}"
                      + (f"; the leader ran {client.describe()}" if client.certain and client.library != JAVA
                         else ""))
    try:
        subs, recorded = inputs()
    except ValueError as e:
        return result("not_replayable", "inputs_missing", str(e))
    if shared_sticky_state(protocol, subs):
        findings = ("shared_sticky_state",)
    inferred = partition_counts is None
    # Owned partitions count too: in the first round of a cooperative rebalance the partitions that move
    # are withheld from the stored assignment but are still owned by their previous members.
    counts = (infer_partition_counts(subs, [*recorded.values(), *(s.owned_partitions for s in subs)])
              if partition_counts is None else dict(partition_counts))

    def run(version: str | None) -> tuple[MemberReplay, ...] | str:
        """The replay with the Java assignors of `version`, or with kafka-python's (None)."""
        try:
            if version is None:
                return _compare(subs, recorded, assign_kafka_python(protocol or "", counts, subs))
            return _compare(subs, recorded, assign(protocol or "", counts, subs, kafka_version=version))
        except (AssignorError, UnsupportedKafkaVersion) as e:
            return f"{type(e).__name__}: {e}"

    def java_leader(why: str) -> LeaderClient:
        """The leader re-read as a Java client: the bytes allowed it, and Java's assignor reproduces the record."""
        return LeaderClient(JAVA, None, (*client.evidence, why), client.candidates, False)

    first: tuple[MemberReplay, ...] | str
    if _kafka_python_engine(client, protocol):
        engine = kafka_python
        first = run(None)
        if isinstance(first, tuple) and _matches(first):
            return result("match", None, None, first, counts, inferred)
        if not client.certain and JAVA in client.candidates:
            # The bytes allow a Java client before 2.4 as well: Kafka's own assignor may be the leader's.
            java = run(kafka_version)
            if isinstance(java, tuple) and _matches(java):
                engine, client = JAVA, java_leader(f"Kafka's Java {protocol} reproduces the record and "
                                                   f"kafka-python's does not")
                return result("match", None, None, java, counts, inferred)
    else:
        first = run(kafka_version)
        if isinstance(first, tuple) and _matches(first):
            return result("match", None, None, first, counts, inferred)
    explained_by: str | None = None
    explained: tuple[MemberReplay, ...] = ()
    for version in explaining_versions:
        if engine == JAVA and version == kafka_version:
            continue
        other = run(version)
        if isinstance(other, tuple) and _matches(other):
            explained_by, explained = version, other
            break
    members = first if isinstance(first, tuple) else explained
    if explained_by is not None and not client.certain and JAVA in client.candidates:
        client = java_leader(f"the {protocol} assignor of kafka-clients {explained_by} reproduces the record")
    installed_kafka_python = engine != JAVA and client.version in (None, KAFKA_PYTHON_VERSION)
    if client.library not in (JAVA, UNKNOWN) and (explained_by is not None or not installed_kafka_python):
        # Another library's leader: its own algorithm (or another version of it) is why, not a fault.
        how = library_difference(client.library, protocol)
        ran = (f"replayed with kafka-python {KAFKA_PYTHON_VERSION}'s own {protocol}" if engine != JAVA
               else f"replayed with Kafka's Java {protocol} ({kafka_version})")
        also = (f"; the {protocol} assignor of kafka-clients {explained_by} reproduces the record"
                if explained_by else "")
        return result("mismatch", "other_client_library",
                      f"the leader ran {client.describe()}, {ran}: {how}{also}", members, counts, inferred,
                      explained_by)
    if explained_by is not None:
        return result("mismatch", "other_client_version",
                      f"the {protocol} assignor of kafka-clients {explained_by} reproduces the record",
                      members, counts, inferred, explained_by)
    if isinstance(first, str):
        return result("not_replayable", "inputs_missing", first, (), counts, inferred)
    detail = "partition counts were inferred from the assignment" if inferred else None
    if engine != JAVA:
        detail = (f"kafka-python {KAFKA_PYTHON_VERSION}'s own {protocol} gives another assignment (the leader's "
                  "kafka-python version is not known)" + (f"; {detail}" if detail else ""))
    return result("mismatch", "unexplained", detail, first, counts, inferred)


@dataclass(frozen=True, slots=True)
class AssignmentReplayRow:
    """One row of ``assignment_replay`` (less cluster; its columns are these fields, in this order): one
    member of a replayed generation, or one row with member id ``''`` and no partitions when the generation
    could not be replayed. ``match``: the member's recorded partitions equal the replayed ones."""

    group_id: str
    generation: int
    record_offset: int
    assignor: str
    kafka_version: str
    status: str
    reason: str | None
    detail: str | None
    matching_version: str | None
    partition_counts_inferred: bool
    member_id: str
    recorded_partitions: tuple[Partition, ...] | None
    replayed_partitions: tuple[Partition, ...] | None
    missing_partitions: tuple[Partition, ...] | None
    extra_partitions: tuple[Partition, ...] | None
    match: bool | None
    leader_client: str | None
    leader_evidence: tuple[str, ...] | None
    engine: str | None
    findings: tuple[str, ...] | None

    def to_dict(self) -> dict[str, Any]:
        return to_dict(self)


def _partitions(partitions: Iterable[TopicPartition]) -> tuple[Partition, ...]:
    return tuple(Partition(t, int(p)) for t, p in partitions)


def replay_rows(group_id: str, record_offset: int, replay: GenerationReplay) -> list[AssignmentReplayRow]:
    """The ``assignment_replay`` rows of one generation's replay (stored by the record at `record_offset`):
    one per member, or one with member id ``''`` when no member was replayed. The assignor column is the
    generation's protocol (``''`` when it had none)."""
    common = (group_id, replay.generation, record_offset, replay.protocol or "", replay.kafka_version, replay.status,
              replay.reason, replay.detail, replay.matching_version, replay.partition_counts_inferred)
    client = (replay.leader_client.describe(), replay.leader_client.evidence, replay.engine, replay.findings)
    if not replay.members:
        return [AssignmentReplayRow(*common, "", None, None, None, None, None, *client)]
    return [AssignmentReplayRow(*common, m.member_id, _partitions(m.recorded), _partitions(m.replayed),
                                _partitions(m.missing), _partitions(m.extra), not m.missing and not m.extra, *client)
            for m in replay.members]


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
    cursor = WhatIfCursor()
    for gen in history:
        step, cursor = whatif_step(cursor, gen, assignor, kafka_version=kafka_version)
        steps.append(step)
    return steps


@dataclass(frozen=True)
class WhatIfCursor:
    """Where a what-if replay stands between two steps: the assignment its members own (the previous
    step's output) and that step's generation."""

    previous: Mapping[str, tuple[TopicPartition, ...]] = field(default_factory=dict)
    previous_generation: int = -1


def whatif_step(cursor: WhatIfCursor, gen: GenerationMembers, assignor: str, *,
                kafka_version: str = NEWEST_KAFKA_VERSION) -> tuple[WhatIfStep, WhatIfCursor]:
    """One step of :func:`whatif_history`: the generation replayed from ``cursor``, and the cursor after it
    (unchanged when the step could not be replayed)."""
    cooperative = assignor in COOPERATIVE_PROTOCOLS
    try:
        out = assign(assignor, gen.partition_counts, _fed_back(gen, assignor, cursor.previous,
                                                               cursor.previous_generation),
                     kafka_version=kafka_version)
        if cooperative:
            # Round one withholds partitions that change owner (their owners revoke them); the
            # follow-up rebalance hands them out. Replay that second round for the settled state.
            round_one = {mid: tuple(ps) for mid, ps in out.items()}
            out = assign(assignor, gen.partition_counts, _fed_back(gen, assignor, round_one, gen.generation),
                         kafka_version=kafka_version)
    except (AssignorError, UnsupportedKafkaVersion, ValueError) as e:
        return WhatIfStep(gen.generation, assignor, len(gen.members), 0, 0, 0, 0, {},
                          f"{type(e).__name__}: {e}"), cursor
    assignment = {mid: tuple(ps) for mid, ps in out.items()}
    owner_before = {tp: mid for mid, ps in cursor.previous.items() for tp in ps}
    moved = sum(1 for mid, ps in assignment.items() for tp in ps if owner_before.get(tp, mid) != mid)
    sizes = [len(ps) for ps in assignment.values()] or [0]
    # Eager: every member still in the group revokes all it owns when the rebalance starts.
    owned_by_staying = sum(len(cursor.previous.get(m.member_id, ())) for m in gen.members)
    paused = moved if cooperative else owned_by_staying
    step = WhatIfStep(gen.generation, assignor, len(gen.members), sum(sizes), moved, max(sizes) - min(sizes),
                      paused, assignment, None)
    return step, WhatIfCursor(assignment, gen.generation)


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


def _grow_counts(counts: dict[str, int], generation: Any) -> None:
    """Raise ``counts`` to what one generation shows of its topics' sizes: every subscribed topic (0 when
    nothing of it was assigned), and the highest assigned partition + 1."""
    for m in generation.members:
        for t in m.subscribed_topics:
            counts.setdefault(t, 0)
        for p in m.assigned_partitions:
            counts[p.topic] = max(counts.get(p.topic, 0), p.partition + 1)


def _generation_members(generation: Any, counts: Mapping[str, int]) -> GenerationMembers:
    return GenerationMembers(generation.generation,
                             tuple(MemberSubscription(m.member_id, tuple(m.subscribed_topics),
                                                      group_instance_id=m.group_instance_id)
                                   for m in generation.members), dict(counts))


def history_members(generations: Sequence[Any]) -> list[GenerationMembers]:
    """What-if inputs from a group's classic generation rows (``coordinator_core.history.GenerationRow``):
    members in their recorded order with subscribed topics; partition counts as known up to each
    generation: per topic, the highest partition assigned in that generation or any earlier one, + 1.

    The counts used to be the highest partition of the *whole* history, so a topic that grew later was
    replayed at its final size from the start. That is a look-ahead no night-by-night replay can make (the
    next night's generations would change every earlier step), and a leader could not have known it
    either: it assigned the partitions its metadata had. Counts only ever grow, so a topic that shrank
    (deleted and created again) keeps its largest size.
    """
    counts: dict[str, int] = {}
    out = []
    for g in generations:
        _grow_counts(counts, g)
        out.append(_generation_members(g, counts))
    return out


@dataclass(frozen=True)
class StaticCursor:
    """Where the static-membership counterfactual stands: the identities and session timeout of the last
    generation it kept, and whether the next generation is the return of members that were gone (and is
    absorbed with their departure)."""

    kept_identities: frozenset[str] | None = None
    kept_timeout_ms: int = 0
    skip_next: bool = False


def _identities(g: Any) -> frozenset[str]:
    return frozenset(_identity(m) for m in g.members)


def _timeout_ms(g: Any) -> int:
    return max((m.session_timeout_ms or 0) for m in g.members) if g.members else 0


def _within(a: Any, b: Any, limit_ms: int) -> bool:
    if a.rebalance_started_at is None or b.rebalance_started_at is None:
        return False
    return bool((b.rebalance_started_at - a.rebalance_started_at).total_seconds() * 1000 <= limit_ms)


def static_keeps(cursor: StaticCursor, generations: Sequence[Any]) -> list[tuple[bool, StaticCursor]]:
    """For each generation from ``cursor`` on: whether the counterfactual keeps it, and the cursor after it.

    A generation is judged with the one after it (a departure is absorbed when the same members are back
    within the session timeout), so the last one is judged without it: a caller that gets more
    generations later judges it again.
    """
    out: list[tuple[bool, StaticCursor]] = []
    for i, g in enumerate(generations):
        if cursor.skip_next:
            cursor = StaticCursor(cursor.kept_identities, cursor.kept_timeout_ms, False)
            out.append((False, cursor))
            continue
        ids = _identities(g)
        kept = cursor.kept_identities
        if kept is not None:
            if ids == kept:
                out.append((False, cursor))  # same clients and hosts, new member ids only: absorbed
                continue
            nxt = generations[i + 1] if i + 1 < len(generations) else None
            if nxt is not None and ids < kept and _identities(nxt) == kept and _within(g, nxt, cursor.kept_timeout_ms):
                cursor = StaticCursor(kept, cursor.kept_timeout_ms, True)
                out.append((False, cursor))  # members gone and back within the session timeout: no rebalance
                continue
        cursor = StaticCursor(ids, _timeout_ms(g), False)
        out.append((True, cursor))
    return out


def _static_generation(g: Any, h: GenerationMembers) -> GenerationMembers:
    members = tuple(MemberSubscription(_identity(m), s.topics, group_instance_id=_identity(m))
                    for m, s in zip(g.members, h.members, strict=True))
    return GenerationMembers(h.generation, members, h.partition_counts)


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
    keeps = static_keeps(StaticCursor(), generations)
    return [_static_generation(g, h) for g, h, (keep, _) in zip(generations, history, keeps, strict=True) if keep]


# ----------------------------------------------------------------------------------------------
# The what-if replay of a group's history, as a fold over the generations each run adds

#: The assignors every history is replayed under.
WHATIF_ASSIGNORS: tuple[str, ...] = ("range", "roundrobin", "sticky", "cooperative-sticky")

#: A what-if row's identity within its group: (generation, assignor, static membership).
WhatIfKey = tuple[int, str, bool]

#: Bumped whenever :class:`WhatIfState` or the rules of :func:`fold_whatif` change: an older state is not
#: read, its group is replayed again from its whole history (``WhatIfFold.rebuild_needed``).
WHATIF_STATE_VERSION = 1

#: The last generations replayed stay open whatever their age (the generation history can still amend the
#: last rows; the counterfactual judges each generation with the next one).
MIN_OPEN_GENERATIONS = 4

#: At most this many of a group's last generations are held open (the generation history's own fold keeps
#: at most 256 drafts open).
MAX_OPEN_GENERATIONS = 256


@dataclass(frozen=True)
class WhatIfPartition:
    topic: str
    partition: int


@dataclass(frozen=True)
class WhatIfMember:
    """What the what-if replay reads of one member (the attribute names of ``GenerationMember``)."""

    member_id: str
    group_instance_id: str | None
    client_id: str | None
    client_host: str | None
    subscribed_topics: tuple[str, ...]
    assigned_partitions: tuple[WhatIfPartition, ...]
    session_timeout_ms: int | None


@dataclass(frozen=True)
class WhatIfGeneration:
    """What the what-if replay reads of one generation (the attribute names of ``GenerationRow``)."""

    generation: int
    record_offset: int
    rebalance_started_at: datetime | None
    settled_at: datetime | None
    members: tuple[WhatIfMember, ...]


@dataclass(frozen=True)
class WhatIfRow:
    """One row of ``assignor_whatif`` less cluster and group_id (the group's key; a fold is one group's): a
    step of the replay. The table's other columns are these fields, in this order."""

    generation: int
    assignor: str
    static_membership: bool
    members: int
    partitions: int
    partitions_moved: int
    balance: int
    paused_partitions: int
    error: str | None

    @property
    def key(self) -> WhatIfKey:
        return (self.generation, self.assignor, self.static_membership)

    def to_dict(self) -> dict[str, Any]:
        return to_dict(self)


def _naive_utc(value: datetime | None) -> datetime | None:
    if value is None or value.tzinfo is None:
        return value
    return value.astimezone(timezone.utc).replace(tzinfo=None)


def _settled_at(row: Mapping[str, Any]) -> datetime | None:
    """The last moment known to belong to the row's rebalance (the reopen horizon's clock)."""
    return _naive_utc(row.get("assignment_stored_at") or row.get("stabilized_at") or row.get("rebalance_started_at"))


def _items(value: Any) -> tuple[Any, ...]:
    return () if value is None else tuple(value)


def whatif_generation(row: Mapping[str, Any]) -> WhatIfGeneration | None:
    """The generation the what-if replays from a group_generations row given as plain values (a table row or
    ``GenerationRow.to_dict()``), or None: only classic consumer-protocol generations that completed with
    members, as a GroupMetadata record stored them (record_offset set), are replayed."""
    if (row["group_protocol"] != "classic" or row["outcome"] != "stable" or row.get("protocol_type") != "consumer"
            or row.get("record_offset") is None):
        return None
    members = tuple(
        WhatIfMember(m["member_id"], m["group_instance_id"], m["client_id"], m["client_host"],
                     tuple(_items(m["subscribed_topics"])),
                     tuple(WhatIfPartition(p["topic"], int(p["partition"])) for p in _items(m["assigned_partitions"])),
                     None if m["session_timeout_ms"] is None else int(m["session_timeout_ms"]))
        for m in _items(row.get("members")))
    return WhatIfGeneration(int(row["generation"]), int(row["record_offset"]),
                            _naive_utc(row.get("rebalance_started_at")), _settled_at(row), members)


def _whatif_row(step: WhatIfStep, static: bool) -> WhatIfRow:
    return WhatIfRow(step.generation, step.assignor, static, step.members, step.partitions, step.partitions_moved,
                     step.balance, step.paused_partitions, step.error)


def whatif_of_history(rows: Iterable[Mapping[str, Any]], assignors: Sequence[str] = WHATIF_ASSIGNORS, *,
                      kafka_version: str = NEWEST_KAFKA_VERSION) -> list[WhatIfRow]:
    """One group's whole history replayed under every assignor, with and without static membership, from
    its group_generations rows (any order; the replayed generations are taken in record order). A group
    deleted and created again reuses generation numbers: its rows then come twice for one key, the later
    generation last (the table keeps that one)."""
    generations = sorted((g for g in map(whatif_generation, rows) if g is not None), key=lambda g: g.record_offset)
    out: list[WhatIfRow] = []
    for static in (False, True):
        history = history_members(generations)
        if static:
            history = static_membership_counterfactual(generations, history)
        for assignor in assignors:
            out.extend(_whatif_row(step, static) for step in whatif_history(history, assignor,
                                                                              kafka_version=kafka_version))
    return out


@dataclass
class WhatIfCheckpoint:
    """The replay after every generation before the window: partition counts so far, each assignor's
    cursor with and without static membership, the counterfactual's cursor."""

    #: record offset of the first generation not folded in (None: none is)
    offset: int | None
    counts: dict[str, int]
    dynamic: dict[str, WhatIfCursor]
    static: dict[str, WhatIfCursor]
    static_cursor: StaticCursor
    #: what the counterfactual read of the first generation not folded in when it judged the last folded
    #: one with it: (record offset, member identities, rebalance start). Should it change, that judgement
    #: is void.
    lookahead: tuple[int, frozenset[str], datetime | None] | None = None


@dataclass
class WhatIfState:
    """One group's what-if state: the checkpoint, the open generations after it (the **window**: those
    within the reopen horizon of the newest row, the last ``MIN_OPEN_GENERATIONS``, and the final one just
    before them that the counterfactual judges with its successor), and a digest of every row written for
    the window's generations, so that a run writes only the rows that changed."""

    checkpoint: WhatIfCheckpoint
    version: int = WHATIF_STATE_VERSION
    window: dict[int, WhatIfGeneration] = field(default_factory=dict)
    emitted: dict[WhatIfKey, bytes] = field(default_factory=dict)
    watermark: datetime | None = None


@dataclass(frozen=True)
class WhatIfFold:
    """One step of the what-if fold: the state to carry, the rows that are new or changed, the keys of rows
    that no longer exist; or ``rebuild_needed`` when the changes reach a generation already folded into
    the checkpoint (the group must then be replayed again from its whole history)."""

    state: WhatIfState | None
    rows: list[WhatIfRow]
    removed: list[WhatIfKey]
    rebuild_needed: bool = False


def _empty_checkpoint(assignors: Sequence[str]) -> WhatIfCheckpoint:
    return WhatIfCheckpoint(None, {}, {a: WhatIfCursor() for a in assignors}, {a: WhatIfCursor() for a in assignors},
                            StaticCursor())


def _row_digest(row: WhatIfRow) -> bytes:
    return hashlib.blake2b(pickle.dumps(row, protocol=4), digest_size=16).digest()


def fold_whatif(  # noqa: C901 - the what-if fold: carried state, each assignor x static membership, absorbed restarts
    state: WhatIfState | None,
    changed: Iterable[Mapping[str, Any]],
    removed: Iterable[tuple[str, int, int | None]] = (),
    *,
    reopen: timedelta = timedelta(hours=48),
    min_open: int = MIN_OPEN_GENERATIONS,
    max_open: int = MAX_OPEN_GENERATIONS,
    assignors: Sequence[str] = WHATIF_ASSIGNORS,
    kafka_version: str = NEWEST_KAFKA_VERSION,
) -> WhatIfFold:
    """Continues a group's what-if replay from ``state`` with the generation rows a run inserted or amended
    (plain values, see :func:`whatif_generation`) and the keys (group_protocol, generation, record_offset)
    of rows it deleted.

    From an empty state with every row of the group this is :func:`whatif_of_history` (one row per key,
    the last); for any split of the rows over several calls, amendments included as long as they stay
    within ``reopen`` of the newest row or among the last generations, the rows written add up to the same.
    The state passed in is not changed.
    """
    st = copy.deepcopy(state) if state is not None else WhatIfState(_empty_checkpoint(assignors))
    cp = st.checkpoint
    rebuild = WhatIfFold(None, [], [], rebuild_needed=True)
    for protocol, _, offset in removed:
        if protocol != "classic" or offset is None:
            continue
        if cp.offset is not None and offset < cp.offset:
            return rebuild
        st.window.pop(offset, None)
    for row in changed:
        settled = _settled_at(row)
        if settled is not None and (st.watermark is None or settled > st.watermark):
            st.watermark = settled
        offset = row.get("record_offset")
        if offset is None or row["group_protocol"] != "classic":
            continue
        generation = whatif_generation(row)
        if cp.offset is not None and offset < cp.offset:
            if generation is not None:
                return rebuild  # a generation already folded in was amended
            continue
        if generation is None:
            st.window.pop(int(offset), None)
        else:
            st.window[generation.record_offset] = generation

    if cp.lookahead is not None and _lookahead(st.window.get(cp.lookahead[0])) != cp.lookahead:
        return rebuild  # the generation the last folded one was judged with changed
    generations = [st.window[offset] for offset in sorted(st.window)]
    n = len(generations)
    horizon = st.watermark - reopen if st.watermark is not None else None
    first_open = next((i for i, g in enumerate(generations)
                       if horizon is None or g.settled_at is None or g.settled_at >= horizon), n)
    first_open = max(min(first_open, n - min_open), n - max_open, 0)
    # Generations before `fold` are folded into the checkpoint: final, and so is the one after the last of
    # them (which the counterfactual judged it with).
    fold = max(first_open - 1, 0)

    counts = dict(cp.counts)
    history: list[GenerationMembers] = []
    folded_counts = counts if fold == 0 else {}
    for i, g in enumerate(generations):
        _grow_counts(counts, g)
        history.append(_generation_members(g, counts))
        if i == fold - 1:
            folded_counts = dict(counts)
    outputs: dict[WhatIfKey, WhatIfRow] = {}
    origin: dict[WhatIfKey, int] = {}

    def replay(steps: Sequence[tuple[int, GenerationMembers]], cursor: WhatIfCursor, assignor: str,
               static: bool) -> WhatIfCursor:
        """Replays the steps, keeps their rows; returns the cursor before the first unfolded step."""
        at_fold = None
        for i, h in steps:
            if at_fold is None and i >= fold:
                at_fold = cursor
            step, cursor = whatif_step(cursor, h, assignor, kafka_version=kafka_version)
            row = _whatif_row(step, static)
            outputs[row.key] = row
            origin[row.key] = i
        return cursor if at_fold is None else at_fold

    folded_dynamic = {a: replay(list(enumerate(history)), cp.dynamic[a], a, False) for a in assignors}
    keeps = static_keeps(cp.static_cursor, generations)
    kept = [(i, _static_generation(generations[i], history[i])) for i, (keep, _) in enumerate(keeps) if keep]
    folded_static = {a: replay(kept, cp.static[a], a, True) for a in assignors}

    digests = {key: _row_digest(row) for key, row in outputs.items()}
    changed_rows = [row for key, row in outputs.items() if st.emitted.get(key) != digests[key]]
    gone = [key for key in st.emitted if key not in outputs]
    if fold > 0:
        st.checkpoint = WhatIfCheckpoint(generations[fold].record_offset, folded_counts, folded_dynamic,
                                         folded_static, keeps[fold - 1][1], _lookahead(generations[fold]))
    st.window = {g.record_offset: g for g in generations[fold:]}
    st.emitted = {key: digests[key] for key in outputs if origin[key] >= fold}
    return WhatIfFold(st, changed_rows, gone)


def _lookahead(g: WhatIfGeneration | None) -> tuple[int, frozenset[str], datetime | None] | None:
    return None if g is None else (g.record_offset, _identities(g), g.rebalance_started_at)


class WhatIfStateVersionError(ValueError):
    """The carried state was written by another layout version (the group is replayed in full)."""


def dump_whatif_state(state: WhatIfState) -> bytes:
    """The state as bytes for the ``group_state.whatif`` column."""
    return dump_versioned(state)


def load_whatif_state(data: bytes | None) -> WhatIfState | None:
    """The state from its bytes (None for a group without one).

    Raises:
        WhatIfStateVersionError: written by another layout version.
    """
    return load_versioned(data, WhatIfState, WHATIF_STATE_VERSION, WhatIfStateVersionError, "what-if state")
