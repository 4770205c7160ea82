"""Every record layout of `__consumer_offsets` and of the embedded ConsumerProtocol, declared as data.

Sources (facts transcribed, field by field): Kafka's message JSON under
``group-coordinator/src/main/resources/common/message`` and
``clients/src/main/resources/common/message/ConsumerProtocol*.json``, and the ``SCHEMAS`` of the generated
classes in the kafka-group-coordinator 4.4.0 jar (which also give the tagged fields added after 4.0).
Keys are never flexible; values are flexible from OffsetCommitValue/GroupMetadataValue v4 and in every
version of the KIP-848 records. Share-group (9-15) and streams-group (17-24) values are kept as bytes.

Each dataclass below is what a decoded struct looks like; each ``Struct`` declaration lists its wire
fields in order. ``schema.Struct`` checks that the two agree when this module is imported.
"""

from __future__ import annotations

from dataclasses import dataclass

from coordinator_core._frozen import fast_init
from coordinator_core.schema import (
    BYTES,
    INT8,
    INT32,
    INT64,
    STRING,
    UUID,
    ArrayOf,
    Field,
    Struct,
)

# ================================================================================================
# Keys (record types 0-24): int16 record type prefix, then a non-flexible struct


@fast_init
@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    """Key of record types 0 (0.8.2 era) and 1: one committed offset of a group."""

    group: str
    topic: str
    partition: int


@fast_init
@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    """Key of record type 2: a classic group's metadata."""

    group: str


@fast_init
@dataclass(frozen=True, slots=True)
class GroupIdKey:
    """Key of the KIP-848 / share / streams group-level records (types 3, 4, 6, 9, 11, 12, 15, 17, ...)."""

    group_id: str


@fast_init
@dataclass(frozen=True, slots=True)
class GroupMemberKey:
    """Key of the KIP-848 / share / streams member-level records (types 5, 7, 8, 10, 13, 14, 19, 21, 22)."""

    group_id: str
    member_id: str


@fast_init
@dataclass(frozen=True, slots=True)
class ConsumerGroupRegularExpressionKey:
    """Key of record type 16: a regular-expression subscription resolved by the coordinator."""

    group_id: str
    regular_expression: str


@fast_init
@dataclass(frozen=True, slots=True)
class UnknownKey:
    """A record type this library does not know: the key bytes after the type prefix, kept as they are."""

    data: bytes


OFFSET_COMMIT_KEY = Struct(
    "OffsetCommitKey",
    OffsetCommitKey,
    (Field("group", STRING), Field("topic", STRING), Field("partition", INT32)),
)
GROUP_METADATA_KEY = Struct("GroupMetadataKey", GroupMetadataKey, (Field("group", STRING),))


def _group_key(name: str) -> Struct:
    return Struct(name, GroupIdKey, (Field("group_id", STRING),))


def _member_key(name: str) -> Struct:
    return Struct(name, GroupMemberKey, (Field("group_id", STRING), Field("member_id", STRING)))


CONSUMER_GROUP_REGULAR_EXPRESSION_KEY = Struct(
    "ConsumerGroupRegularExpressionKey",
    ConsumerGroupRegularExpressionKey,
    (Field("group_id", STRING), Field("regular_expression", STRING)),
)

# ================================================================================================
# Classic values


@fast_init
@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    """A committed offset. ``leader_epoch`` -1 and ``expire_timestamp`` -1 mean "none"; ``topic_id`` is
    Kafka's Uuid text (tagged field 0 of v4, written by 4.1+) or None."""

    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int
    topic_id: str | None


OFFSET_COMMIT_VALUE = Struct(
    "OffsetCommitValue",
    OffsetCommitValue,
    (
        Field("offset", INT64),
        Field("leader_epoch", INT32, versions="3+", default=-1),
        # Non-nullable in Kafka's schema; accepted as null when reading, as lenient readers must.
        Field("metadata", STRING, nullable_versions="0+", default=""),
        Field("commit_timestamp", INT64),
        Field("expire_timestamp", INT64, versions="1", default=-1),
        Field("topic_id", UUID, versions="4+", tag=0),
    ),
    flexible_versions="4+",
    valid_versions="0-4",
)


@fast_init
@dataclass(frozen=True, slots=True)
class MemberMetadata:
    """One member of a classic group as stored at the end of a rebalance.

    ``subscription`` and ``assignment`` are the protocol bytes of the selected protocol; for
    ``protocol_type == "consumer"`` they are ConsumerProtocol structures (see consumer_protocol.py).
    ``rebalance_timeout`` is -1 in v0 records, which predate it (Kafka's loader uses the session timeout).
    """

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


MEMBER_METADATA = Struct(
    "MemberMetadata",
    MemberMetadata,
    (
        Field("member_id", STRING),
        Field("group_instance_id", STRING, versions="3+", nullable_versions="3+"),
        Field("client_id", STRING),
        Field("client_host", STRING),
        Field("rebalance_timeout", INT32, versions="1+", default=-1),
        Field("session_timeout", INT32),
        Field("subscription", BYTES),
        Field("assignment", BYTES),
    ),
    flexible_versions="4+",
    valid_versions="0-4",
)


@fast_init
@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    """A classic group at the end of a rebalance (one record per generation), or an empty group."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: tuple[MemberMetadata, ...]


GROUP_METADATA_VALUE = Struct(
    "GroupMetadataValue",
    GroupMetadataValue,
    (
        Field("protocol_type", STRING),
        Field("generation", INT32),
        # Declared STRING in 0.9-0.10.0 and NULLABLE_STRING since; the wire format is the same.
        Field("protocol", STRING, nullable_versions="0+"),
        Field("leader", STRING, nullable_versions="0+"),
        Field("current_state_timestamp", INT64, versions="2+", default=-1),
        Field("members", ArrayOf(MEMBER_METADATA)),
    ),
    flexible_versions="4+",
    valid_versions="0-4",
)

# ================================================================================================
# KIP-848 consumer-group values (types 3-8 and 16): every version flexible


@fast_init
@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataValue:
    """Type 3: the group epoch (bumped on every membership or subscription change)."""

    epoch: int
    metadata_hash: int


CONSUMER_GROUP_METADATA_VALUE = Struct(
    "ConsumerGroupMetadataValue",
    ConsumerGroupMetadataValue,
    (Field("epoch", INT32), Field("metadata_hash", INT64, tag=0)),
    flexible_versions="0+",
)


@fast_init
@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    partition: int
    racks: tuple[str, ...]


@fast_init
@dataclass(frozen=True, slots=True)
class TopicMetadata:
    topic_id: str | None
    topic_name: str
    num_partitions: int
    partition_metadata: tuple[PartitionMetadata, ...]


@fast_init
@dataclass(frozen=True, slots=True)
class ConsumerGroupPartitionMetadataValue:
    """Type 4: the subscribed topics' metadata the target assignment was computed from."""

    topics: tuple[TopicMetadata, ...]


CONSUMER_GROUP_PARTITION_METADATA_VALUE = Struct(
    "ConsumerGroupPartitionMetadataValue",
    ConsumerGroupPartitionMetadataValue,
    (
        Field(
            "topics",
            ArrayOf(
                Struct(
                    "TopicMetadata",
                    TopicMetadata,
                    (
                        Field("topic_id", UUID),
                        Field("topic_name", STRING),
                        Field("num_partitions", INT32),
                        Field(
                            "partition_metadata",
                            ArrayOf(
                                Struct(
                                    "PartitionMetadata",
                                    PartitionMetadata,
                                    (Field("partition", INT32), Field("racks", ArrayOf(STRING))),
                                    flexible_versions="0+",
                                )
                            ),
                        ),
                    ),
                    flexible_versions="0+",
                )
            ),
        ),
    ),
    flexible_versions="0+",
)


@fast_init
@dataclass(frozen=True, slots=True)
class ClassicProtocol:
    name: str
    metadata: bytes


@fast_init
@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """Present when a classic-protocol consumer is a member of a KIP-848 group (upgrade path)."""

    session_timeout_ms: int
    supported_protocols: tuple[ClassicProtocol, ...]


@fast_init
@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataValue:
    """Type 5: a member's identity and subscription in a KIP-848 group."""

    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None
    classic_member_metadata: ClassicMemberMetadata | None


CONSUMER_GROUP_MEMBER_METADATA_VALUE = Struct(
    "ConsumerGroupMemberMetadataValue",
    ConsumerGroupMemberMetadataValue,
    (
        Field("instance_id", STRING, nullable_versions="0+"),
        Field("rack_id", STRING, nullable_versions="0+"),
        Field("client_id", STRING),
        Field("client_host", STRING),
        Field("subscribed_topic_names", ArrayOf(STRING)),
        Field("subscribed_topic_regex", STRING, nullable_versions="0+"),
        Field("rebalance_timeout_ms", INT32, default=-1),
        Field("server_assignor", STRING, nullable_versions="0+"),
        Field(
            "classic_member_metadata",
            Struct(
                "ClassicMemberMetadata",
                ClassicMemberMetadata,
                (
                    Field("session_timeout_ms", INT32),
                    Field(
                        "supported_protocols",
                        ArrayOf(
                            Struct(
                                "ClassicProtocol",
                                ClassicProtocol,
                                (Field("name", STRING), Field("metadata", BYTES)),
                                flexible_versions="0+",
                            )
                        ),
                    ),
                ),
                flexible_versions="0+",
            ),
            nullable_versions="0+",
            tag=0,
            # Kafka's default is an empty struct, not null: a consumer-protocol member's record carries
            # the tag with an explicit null (written by 4.x brokers), and a missing tag reads as empty.
            default=ClassicMemberMetadata(0, ()),
        ),
    ),
    flexible_versions="0+",
)


@fast_init
@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataValue:
    """Type 6: the epoch of the group's current target assignment."""

    assignment_epoch: int
    assignment_timestamp: int


CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = Struct(
    "ConsumerGroupTargetAssignmentMetadataValue",
    ConsumerGroupTargetAssignmentMetadataValue,
    (Field("assignment_epoch", INT32), Field("assignment_timestamp", INT64, tag=0)),
    flexible_versions="0+",
)


@fast_init
@dataclass(frozen=True, slots=True)
class TopicIdPartitions:
    topic_id: str | None
    partitions: tuple[int, ...]


TOPIC_ID_PARTITIONS = Struct(
    "TopicPartitions",
    TopicIdPartitions,
    (Field("topic_id", UUID), Field("partitions", ArrayOf(INT32))),
    flexible_versions="0+",
)


@fast_init
@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberValue:
    """Type 7: the partitions the target assignment gives one member."""

    topic_partitions: tuple[TopicIdPartitions, ...]


CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = Struct(
    "ConsumerGroupTargetAssignmentMemberValue",
    ConsumerGroupTargetAssignmentMemberValue,
    (Field("topic_partitions", ArrayOf(TOPIC_ID_PARTITIONS)),),
    flexible_versions="0+",
)


@fast_init
@dataclass(frozen=True, slots=True)
class AssignedTopicPartitions:
    topic_id: str | None
    partitions: tuple[int, ...]
    assignment_epochs: tuple[int, ...] | None


ASSIGNED_TOPIC_PARTITIONS = Struct(
    "TopicPartitions",
    AssignedTopicPartitions,
    (
        Field("topic_id", UUID),
        Field("partitions", ArrayOf(INT32)),
        Field("assignment_epochs", ArrayOf(INT32), nullable_versions="0+", tag=0, default=()),
    ),
    flexible_versions="0+",
)

#: ``State`` of ConsumerGroupCurrentMemberAssignmentValue (``MemberState`` in the group coordinator).
MEMBER_STATES = {0: "STABLE", 1: "UNREVOKED_PARTITIONS", 2: "UNRELEASED_PARTITIONS", 3: "UNKNOWN"}


@fast_init
@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentValue:
    """Type 8: a member's current epoch, state, and the partitions it owns or must still revoke."""

    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned_partitions: tuple[AssignedTopicPartitions, ...]
    partitions_pending_revocation: tuple[AssignedTopicPartitions, ...]


CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = Struct(
    "ConsumerGroupCurrentMemberAssignmentValue",
    ConsumerGroupCurrentMemberAssignmentValue,
    (
        Field("member_epoch", INT32),
        Field("previous_member_epoch", INT32),
        Field("state", INT8),
        Field("assigned_partitions", ArrayOf(ASSIGNED_TOPIC_PARTITIONS)),
        Field("partitions_pending_revocation", ArrayOf(ASSIGNED_TOPIC_PARTITIONS)),
    ),
    flexible_versions="0+",
)


@fast_init
@dataclass(frozen=True, slots=True)
class ConsumerGroupRegularExpressionValue:
    """Type 16: the topics a subscribed regular expression resolved to, and when."""

    topics: tuple[str, ...]
    version: int
    timestamp: int


CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE = Struct(
    "ConsumerGroupRegularExpressionValue",
    ConsumerGroupRegularExpressionValue,
    (Field("topics", ArrayOf(STRING)), Field("version", INT64), Field("timestamp", INT64)),
    flexible_versions="0+",
)

# ================================================================================================
# Embedded ConsumerProtocol (GroupMetadataValue member subscription / assignment bytes): an int16
# version prefix, then a non-flexible struct. Versions above the highest known parse as the highest.


@fast_init
@dataclass(frozen=True, slots=True)
class TopicPartitionsEntry:
    """A topic and its partitions, as the ConsumerProtocol and the sticky user data group them."""

    topic: str
    partitions: tuple[int, ...]


def _topic_partitions(versions: str) -> Struct:
    return Struct(
        "TopicPartition",
        TopicPartitionsEntry,
        (Field("topic", STRING, versions=versions), Field("partitions", ArrayOf(INT32), versions=versions)),
        valid_versions="0-3",
    )


@fast_init
@dataclass(frozen=True, slots=True)
class SubscriptionWire:
    topics: tuple[str, ...]
    user_data: bytes | None
    owned_partitions: tuple[TopicPartitionsEntry, ...]
    generation_id: int
    rack_id: str | None


CONSUMER_PROTOCOL_SUBSCRIPTION = Struct(
    "ConsumerProtocolSubscription",
    SubscriptionWire,
    (
        Field("topics", ArrayOf(STRING)),
        Field("user_data", BYTES, nullable_versions="0+"),
        Field("owned_partitions", ArrayOf(_topic_partitions("1+")), versions="1+"),
        Field("generation_id", INT32, versions="2+", default=-1),
        Field("rack_id", STRING, versions="3+", nullable_versions="3+"),
    ),
    valid_versions="0-3",
)


@fast_init
@dataclass(frozen=True, slots=True)
class AssignmentWire:
    assigned_partitions: tuple[TopicPartitionsEntry, ...]
    user_data: bytes | None


CONSUMER_PROTOCOL_ASSIGNMENT = Struct(
    "ConsumerProtocolAssignment",
    AssignmentWire,
    (
        Field("assigned_partitions", ArrayOf(_topic_partitions("0+"))),
        Field("user_data", BYTES, nullable_versions="0+"),
    ),
    valid_versions="0-3",
)


@fast_init
@dataclass(frozen=True, slots=True)
class StickyAssignorUserDataWire:
    previous_assignment: tuple[TopicPartitionsEntry, ...]
    generation: int


#: StickyAssignor user data: V0 = previous assignment; V1 adds the generation. No version prefix.
STICKY_ASSIGNOR_USER_DATA = Struct(
    "StickyAssignorUserData",
    StickyAssignorUserDataWire,
    (
        Field("previous_assignment", ArrayOf(_topic_partitions("0+"))),
        Field("generation", INT32, versions="1+", default=-1),
    ),
    valid_versions="0-1",
)
