"""Kafka's partition assignors as pure functions, one implementation per revision that changed results.

`assign(name, partitions_per_topic, subscriptions, kafka_version=...)` replays what Kafka's own assignor
of that version computes from the same inputs: for the classic protocol the group leader's client
version decides (the leader runs the assignor), for KIP-848 groups the coordinator's broker version.

Registered names: the client protocol names ``range``, ``roundrobin``, ``sticky``,
``cooperative-sticky``; and ``server-uniform``, ``server-range`` for the KIP-848 server-side ``uniform``
and ``range`` assignors.

Example:

>>> from coordinator_core.assignors import MemberSubscription, assign
>>> members = [MemberSubscription("C0", ["t0", "t1"]), MemberSubscription("C1", ["t0", "t1"])]
>>> assign("roundrobin", {"t0": 3, "t1": 3}, members)
{'C0': [('t0', 0), ('t0', 2), ('t1', 1)], 'C1': [('t0', 1), ('t1', 0), ('t1', 2)]}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from coordinator_core.assignors._model import (
    Assignment,
    AssignorError,
    MemberSubscription,
    PartitionRacks,
    TopicPartition,
    check_unique_members,
)
from coordinator_core.assignors._server_spec import (
    HETEROGENEOUS,
    HOMOGENEOUS,
    ConsumerGroupMemberSpec,
    TargetAssignment,
    TopicMetadata,
)
from coordinator_core.assignors.range import assign_range, assign_range_before_2_4, assign_range_before_3_5
from coordinator_core.assignors.roundrobin import assign_roundrobin, assign_roundrobin_before_2_4
from coordinator_core.assignors.server_range import assign_server_range
from coordinator_core.assignors.server_uniform import assign_server_uniform
from coordinator_core.assignors.sticky import StickyRevision, assign_sticky
from coordinator_core.assignors.sticky_before_3_0 import StickyRevisionBefore3_0, assign_sticky_before_3_0
from coordinator_core.assignors.userdata import (
    decode_cooperative_user_data,
    decode_sticky_user_data,
    encode_cooperative_user_data,
    encode_sticky_user_data,
)

NEWEST_KAFKA_VERSION = "4.4.0"
"""The newest Kafka release the replays are verified against (the oracle tests' kafka-clients)."""

KafkaVersion = tuple[int, int, int]


class UnsupportedKafkaVersion(ValueError):
    """No implementation of this assignor for that Kafka version (yet): refusing beats a wrong replay."""


def parse_kafka_version(version: str | Sequence[int]) -> KafkaVersion:
    """ "3.5.1" (or "3.5", "3.5.1-rc0", (3, 5, 1)) -> (3, 5, 1)."""
    if isinstance(version, str):
        core = version.split("-", 1)[0]
        parts = [int(x) for x in core.split(".") if x != ""]
    else:
        parts = [int(x) for x in version]
    if not 1 <= len(parts) <= 4:
        raise ValueError(f"not a Kafka version: {version!r}")
    parts = [*parts, 0, 0, 0][:3]
    return (parts[0], parts[1], parts[2])


def sticky_revision(kafka_version: str | Sequence[int]) -> StickyRevision | StickyRevisionBefore3_0:
    """The sticky assignors' revision shipped in a kafka-clients version (0.11.0 and later).

    3.0.0 and later: an `AbstractStickyAssignor` revision of the quota/topic-level algorithm
    (`StickyRevision`). 0.11.0-2.8.x: the partition-level algorithm (`StickyRevisionBefore3_0`), checked
    against the release tags: KIP-54's `StickyAssignor` in 0.11.0.0, unchanged in effect through 2.2.x
    (1.0-2.2 changed only comments, log calls and the user data writer's grouping helper); KIP-341
    generations and KAFKA-7962 (subscribed topics without metadata skipped, a reassignment without
    partitions no longer failing) in 2.3.0;
    `AbstractStickyAssignor`, cooperative-sticky and the revocation-aware first balancing pass in 2.4.0;
    the first constrained fast path for equal subscriptions (KAFKA-9987) in 2.5.1 and 2.6.0 (2.5.0 does
    not have it; 2.7.0-2.8.0 only changed comments); invalidation of partitions claimed twice in one
    generation and cooperative-sticky's generation from its user data (KAFKA-12984) in 2.8.1.

    Raises:
        UnsupportedKafkaVersion: before 0.11.0, which introduced the sticky assignor (KIP-54).
    """
    v = parse_kafka_version(kafka_version)
    if v < (0, 11, 0):
        raise UnsupportedKafkaVersion(
            f"sticky does not exist before Kafka 0.11.0 (KIP-54; got {'.'.join(map(str, v))})"
        )
    if v < (2, 3, 0):
        return StickyRevisionBefore3_0(
            revocation_pass=False,
            constrained=False,
            invalidate_multiple_previous_owners=False,
            cooperative_generation_from_user_data=False,
            generations=False,
        )
    if v < (3, 0, 0):
        return StickyRevisionBefore3_0(
            revocation_pass=v >= (2, 4, 0),
            constrained=v >= (2, 5, 1),
            invalidate_multiple_previous_owners=v >= (2, 8, 1),
            cooperative_generation_from_user_data=v >= (2, 8, 1),
        )
    return StickyRevision(
        per_partition_generations=v >= (3, 4, 1),
        winner_only_bookkeeping=v >= (3, 5, 2),
        rack_aware=v >= (3, 5, 0),
        balanced_off_by_one_fixed=v >= (3, 5, 2),
        sort_owned_by_partition=v >= (3, 7, 1),
        rack_revocation_tracked=v >= (3, 7, 1),
        cooperative_generation_from_user_data=True,
        subscription_generation=v >= (3, 4, 0),
    )


OLDEST_CONSUMER_PROTOCOL = (0, 9, 0)
"""Kafka 0.9.0 introduced the consumer group protocol and, with it, the client-side Range and RoundRobin."""


def _require_client_version(name: str, v: KafkaVersion) -> None:
    """Range and RoundRobin exist in every client that speaks the consumer protocol (0.9.0+)."""
    if v < OLDEST_CONSUMER_PROTOCOL:
        raise UnsupportedKafkaVersion(
            f"{name} before Kafka 0.9.0 (got {'.'.join(map(str, v))}): there was no consumer group protocol"
        )


def _range(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Sequence[MemberSubscription],
    v: KafkaVersion,
    partition_racks: PartitionRacks | None,
    context: Mapping[str, Any],
) -> Assignment:
    _require_client_version("range", v)
    if v < (2, 4, 0):
        return assign_range_before_2_4(partitions_per_topic, subscriptions, topic_map_compute_if_absent=v >= (2, 1, 0))
    if v < (3, 5, 0):
        return assign_range_before_3_5(partitions_per_topic, subscriptions)
    return assign_range(partitions_per_topic, subscriptions, partition_racks=partition_racks, rack_aware=v >= (3, 5, 0))


def _roundrobin(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Sequence[MemberSubscription],
    v: KafkaVersion,
    partition_racks: PartitionRacks | None,
    context: Mapping[str, Any],
) -> Assignment:
    _require_client_version("roundrobin", v)
    if v < (2, 4, 0):
        return assign_roundrobin_before_2_4(partitions_per_topic, subscriptions, missing_topic_fails=v < (0, 10, 0))
    return assign_roundrobin(partitions_per_topic, subscriptions)


def _sticky(cooperative: bool) -> _Impl:
    def run(
        partitions_per_topic: Mapping[str, int],
        subscriptions: Sequence[MemberSubscription],
        v: KafkaVersion,
        partition_racks: PartitionRacks | None,
        context: Mapping[str, Any],
    ) -> Assignment:
        if cooperative and v < (2, 4, 0):
            raise UnsupportedKafkaVersion(
                f"cooperative-sticky does not exist before Kafka 2.4.0 (KIP-429; got {'.'.join(map(str, v))})"
            )
        revision = sticky_revision(v)
        if isinstance(revision, StickyRevisionBefore3_0):
            return assign_sticky_before_3_0(
                partitions_per_topic, subscriptions, cooperative=cooperative, revision=revision
            )
        return assign_sticky(
            partitions_per_topic,
            subscriptions,
            cooperative=cooperative,
            partition_racks=partition_racks,
            revision=revision,
        )

    return run


SERVER_ASSIGNOR_MINIMUM_VERSIONS: dict[str, KafkaVersion] = {
    "server-uniform": (4, 0, 0),
    "server-range": (4, 0, 0),
}
"""The oldest coordinator version whose server assignor the replay reproduces (4.0.0, the first GA release
of KIP-848; each revision checked against the classes of kafka-group-coordinator 4.0.0, 4.0.1, 4.1.0,
4.2.0, 4.3.0 and 4.4.0 by tests/oracle/test_server_assignor_oracle.py).

`uniform`: two revisions since 4.0.0 (`server_assignor_options`): 4.0.0 hands the extra slots of a
homogeneous group to the first members in order; 4.0.1 and 4.1.0+ have KAFKA-18688 (extra slots kept by
members that already hold them). The heterogeneous builder is the KAFKA-17710 rework in all of them;
3.8/3.9 ran a port of the client sticky algorithm for heterogeneous groups. `range`: the same results from
4.0.0 to 4.4.0 (4.1.0 only changed `RangeSet`'s equals/hashCode, which no result order depends on);
3.9.x is not verified, and 3.6-3.8 was a sticky range.
"""


def server_assignor_options(name: str, kafka_version: str | Sequence[int]) -> dict[str, Any]:
    """The keyword arguments that select the revision of `assign_server_uniform`/`assign_server_range`
    a coordinator of `kafka_version` runs (empty for the newest).

    Raises:
        UnsupportedKafkaVersion: before SERVER_ASSIGNOR_MINIMUM_VERSIONS[name].
    """
    v = parse_kafka_version(kafka_version)
    minimum = SERVER_ASSIGNOR_MINIMUM_VERSIONS[name]
    if v < minimum:
        raise UnsupportedKafkaVersion(
            f"{name} before Kafka {'.'.join(map(str, minimum))} (got {'.'.join(map(str, v))}) is a different "
            "revision (pre-GA KIP-848), not implemented (see SERVER_ASSIGNOR_MINIMUM_VERSIONS)"
        )
    if name == "server-uniform" and v < (4, 0, 1):
        return {"extra_slots_to_holders": False}
    return {}


def server_inputs(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Sequence[MemberSubscription],
    topic_ids: Mapping[str, str],
    partition_racks: PartitionRacks | None = None,
) -> tuple[list[ConsumerGroupMemberSpec], dict[str, TopicMetadata]]:
    """The KIP-848 inputs behind the name-based `assign` arguments.

    A subscribed topic missing from `partitions_per_topic` is absent from the metadata image (the
    coordinator drops it); one with 0 partitions exists and has none. `owned_partitions` is the member's
    previous *target* assignment, grouped by topic in the order the topics first appear (the order of its
    ConsumerGroupTargetAssignmentMember record), partitions in the order given.
    """
    subscribed = {t for m in subscriptions for t in m.topics}
    topics: dict[str, TopicMetadata] = {}
    for name, count in partitions_per_topic.items():
        if name not in topic_ids:
            if name in subscribed:
                raise ValueError(f"topic_ids has no id for the subscribed topic {name!r}")
            continue
        racks = None
        if partition_racks is not None:
            racks = [tuple(partition_racks.get((name, p), ())) for p in range(count)]
        topics[name] = TopicMetadata(topic_ids[name], count, racks)
    members: list[ConsumerGroupMemberSpec] = []
    for m in subscriptions:
        record: dict[str, list[int]] = {}
        for topic, partition in m.owned_partitions:
            if topic not in topic_ids:
                raise ValueError(f"topic_ids has no id for topic {topic!r} of {m.member_id}'s target assignment")
            record.setdefault(topic_ids[topic], []).append(partition)
        members.append(ConsumerGroupMemberSpec(m.member_id, list(m.topics), record, m.group_instance_id, m.rack))
    return members, topics


def _server(name: str, run_assignor: Callable[..., TargetAssignment]) -> _Impl:
    def run(
        partitions_per_topic: Mapping[str, int],
        subscriptions: Sequence[MemberSubscription],
        v: KafkaVersion,
        partition_racks: PartitionRacks | None,
        context: Mapping[str, Any],
    ) -> Assignment:
        options = server_assignor_options(name, v)
        topic_ids = context.get("topic_ids")
        if topic_ids is None:
            raise ValueError(f"{name} needs topic_ids= (topic name -> Kafka Uuid): topic ids decide its results")
        members, topics = server_inputs(partitions_per_topic, subscriptions, topic_ids, partition_racks)
        result = run_assignor(members, topics, subscription_type=context.get("subscription_type"), **options)
        names = {metadata.topic_id: topic for topic, metadata in topics.items()}
        names.update((topic_id, topic) for topic, topic_id in topic_ids.items() if topic_id not in names)
        return {m: [(names[t], p) for t, ps in tps.items() for p in ps] for m, tps in result.items()}

    return run


_Impl = Callable[
    [Mapping[str, int], Sequence[MemberSubscription], KafkaVersion, "PartitionRacks | None", Mapping[str, Any]],
    Assignment,
]

ASSIGNORS: dict[str, _Impl] = {
    "range": _range,
    "roundrobin": _roundrobin,
    "sticky": _sticky(cooperative=False),
    "cooperative-sticky": _sticky(cooperative=True),
    "server-uniform": _server("server-uniform", assign_server_uniform),
    "server-range": _server("server-range", assign_server_range),
}


def assign(
    assignor_name: str,
    partitions_per_topic: Mapping[str, int],
    subscriptions: Sequence[MemberSubscription],
    *,
    kafka_version: str | Sequence[int] = NEWEST_KAFKA_VERSION,
    partition_racks: PartitionRacks | None = None,
    **context: Any,
) -> Assignment:
    """Replay Kafka's assignor `assignor_name` as shipped in `kafka_version`.

    Args:
        assignor_name: a protocol name (``range``, ``roundrobin``, ``sticky``, ``cooperative-sticky``) or
            a KIP-848 server assignor (``server-uniform``, ``server-range``).
        partitions_per_topic: topic -> partition count, as the leader's metadata had it; subscribed topics
            missing here (or with 0 partitions) are ignored, as Kafka ignores them.
        subscriptions: the members in JoinGroup order (the order of the GroupMetadata record's members).
        kafka_version: the leader client's (classic) or the coordinator's (KIP-848) Kafka version.
        partition_racks: (topic, partition) -> racks of its replicas, for rack-aware assignment (3.5+).
        context: extra inputs some assignors need: the server assignors need ``topic_ids`` (topic name ->
            Uuid string) and accept ``subscription_type`` (HOMOGENEOUS/HETEROGENEOUS) to override the one
            computed from the topic names; for them ``owned_partitions`` is the previous target assignment
            and ``subscriptions`` are in the coordinator's member insertion order.

    Returns:
        member id -> assigned partitions, for every member, in the order Kafka lists them.
    """
    try:
        impl = ASSIGNORS[assignor_name]
    except KeyError:
        raise ValueError(f"unknown assignor {assignor_name!r}; known: {sorted(ASSIGNORS)}") from None
    check_unique_members(subscriptions)
    return impl(partitions_per_topic, subscriptions, parse_kafka_version(kafka_version), partition_racks, context)


__all__ = [
    "ASSIGNORS",
    "HETEROGENEOUS",
    "HOMOGENEOUS",
    "NEWEST_KAFKA_VERSION",
    "OLDEST_CONSUMER_PROTOCOL",
    "SERVER_ASSIGNOR_MINIMUM_VERSIONS",
    "Assignment",
    "AssignorError",
    "ConsumerGroupMemberSpec",
    "MemberSubscription",
    "PartitionRacks",
    "StickyRevision",
    "StickyRevisionBefore3_0",
    "TargetAssignment",
    "TopicMetadata",
    "TopicPartition",
    "UnsupportedKafkaVersion",
    "assign",
    "assign_range",
    "assign_range_before_2_4",
    "assign_range_before_3_5",
    "assign_roundrobin",
    "assign_roundrobin_before_2_4",
    "assign_server_range",
    "assign_server_uniform",
    "assign_sticky",
    "assign_sticky_before_3_0",
    "decode_cooperative_user_data",
    "decode_sticky_user_data",
    "encode_cooperative_user_data",
    "encode_sticky_user_data",
    "parse_kafka_version",
    "server_assignor_options",
    "server_inputs",
    "sticky_revision",
]
