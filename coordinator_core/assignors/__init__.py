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
from coordinator_core.assignors.range import assign_range, assign_range_before_3_5
from coordinator_core.assignors.roundrobin import assign_roundrobin
from coordinator_core.assignors.sticky import StickyRevision, assign_sticky
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
    """"3.5.1" (or "3.5", "3.5.1-rc0", (3, 5, 1)) -> (3, 5, 1)."""
    if isinstance(version, str):
        core = version.split("-", 1)[0]
        parts = [int(x) for x in core.split(".") if x != ""]
    else:
        parts = [int(x) for x in version]
    if not 1 <= len(parts) <= 4:
        raise ValueError(f"not a Kafka version: {version!r}")
    parts = (parts + [0, 0, 0])[:3]
    return (parts[0], parts[1], parts[2])


def sticky_revision(kafka_version: str | Sequence[int]) -> StickyRevision:
    """The `AbstractStickyAssignor` revision shipped in a kafka-clients version (3.0.0 and later)."""
    v = parse_kafka_version(kafka_version)
    if v < (3, 0, 0):
        raise UnsupportedKafkaVersion(
            f"sticky assignors before Kafka 3.0.0 (got {kafka_version}) use the 2.5.1-2.8 constrained or the "
            "pre-2.6 general algorithm, which are not implemented"
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


def _require_client_version(name: str, v: KafkaVersion) -> None:
    if v < (2, 4, 0):
        raise UnsupportedKafkaVersion(
            f"{name} before Kafka 2.4.0 (ordered members by member id only, no static members) is not implemented"
        )


def _range(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Sequence[MemberSubscription],
    v: KafkaVersion,
    partition_racks: PartitionRacks | None,
    context: Mapping[str, Any],
) -> Assignment:
    _require_client_version("range", v)
    if v < (3, 5, 0):
        return assign_range_before_3_5(partitions_per_topic, subscriptions)
    return assign_range(
        partitions_per_topic, subscriptions, partition_racks=partition_racks, rack_aware=v >= (3, 5, 0)
    )


def _roundrobin(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Sequence[MemberSubscription],
    v: KafkaVersion,
    partition_racks: PartitionRacks | None,
    context: Mapping[str, Any],
) -> Assignment:
    _require_client_version("roundrobin", v)
    return assign_roundrobin(partitions_per_topic, subscriptions)


def _sticky(cooperative: bool) -> _Impl:
    def run(
        partitions_per_topic: Mapping[str, int],
        subscriptions: Sequence[MemberSubscription],
        v: KafkaVersion,
        partition_racks: PartitionRacks | None,
        context: Mapping[str, Any],
    ) -> Assignment:
        return assign_sticky(
            partitions_per_topic,
            subscriptions,
            cooperative=cooperative,
            partition_racks=partition_racks,
            revision=sticky_revision(v),
        )

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
        context: extra inputs some assignors need (``topic_ids`` for the server assignors).

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
    "NEWEST_KAFKA_VERSION",
    "Assignment",
    "AssignorError",
    "MemberSubscription",
    "PartitionRacks",
    "StickyRevision",
    "TopicPartition",
    "UnsupportedKafkaVersion",
    "assign",
    "assign_range",
    "assign_range_before_3_5",
    "assign_roundrobin",
    "assign_sticky",
    "decode_cooperative_user_data",
    "decode_sticky_user_data",
    "encode_cooperative_user_data",
    "encode_sticky_user_data",
    "parse_kafka_version",
    "sticky_revision",
]
