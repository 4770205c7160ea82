"""Every record layout of `__consumer_offsets` and of the embedded ConsumerProtocol, declared as data.

Sources (facts transcribed, field by field): Kafka's message JSON under
``group-coordinator/src/main/resources/common/message`` and
``clients/src/main/resources/common/message/ConsumerProtocol*.json``, and the ``SCHEMAS`` of the generated
classes in the kafka-group-coordinator 4.4.0 jar (which also give the tagged fields added after 4.0).
Keys are never flexible; values are flexible from OffsetCommitValue/GroupMetadataValue v4 and in every
version of the KIP-848, share-group (9-15) and streams-group (17, 19-23) records. Types 18 and 24 (in no
released broker up to 4.4) keep their values as bytes.

Each dataclass below is what a decoded struct looks like; each ``Struct`` declaration lists its wire
fields in order. ``schema.Struct`` checks that the two agree when this module is imported.
"""

from __future__ import annotations

from dataclasses import dataclass

from coordinator_core._frozen import fast_init
from coordinator_core.schema import (
    BYTES,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    UINT16,
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
    """A committed offset. ``leader_epoch`` (v3+) and ``expire_timestamp`` (v1 only) are None in versions
    that do not have them, and -1 where written means "none"; ``topic_id`` is Kafka's Uuid text (tagged
    field 0 of v4, written by 4.1+) or None."""

    offset: int
    leader_epoch: int | None
    metadata: str
    commit_timestamp: int
    expire_timestamp: int | None
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
    ``rebalance_timeout`` is None in v0 records, which predate it (Kafka's loader uses the session timeout).
    """

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int | None
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
    """A classic group at the end of a rebalance (one record per generation), or an empty group.
    ``current_state_timestamp`` (v2+) is None in v0/v1 records; -1 where written means "none"."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int | None
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
# KIP-932 share-group values (types 9-15): every version flexible. Layouts of the kafka-group-coordinator
# 4.1-4.4 jars' generated classes (``SCHEMAS``); type 9 is the 4.0 early-access layout (4.1 removed the
# type). 4.1 also changed version 0 of types 11 (``metadata_hash`` added) and 15 (``initializing_topics``
# added first), so 4.0's records of those two are decode errors here, as they are for Kafka 4.1+.
# The share coordinator's own records (ShareSnapshot, ShareUpdate: types 0 and 1 of its CoordinatorRecordType)
# are written to ``__share_group_state``, never to ``__consumer_offsets``.


@fast_init
@dataclass(frozen=True, slots=True)
class ShareGroupPartitionMetadataValue:
    """Type 9 (Kafka 4.0 only): the subscribed topics' metadata, as ConsumerGroupPartitionMetadataValue."""

    topics: tuple[TopicMetadata, ...]


SHARE_GROUP_PARTITION_METADATA_VALUE = Struct(
    "ShareGroupPartitionMetadataValue",
    ShareGroupPartitionMetadataValue,
    # The same TopicMetadata / PartitionMetadata structs, field for field.
    (Field("topics", CONSUMER_GROUP_PARTITION_METADATA_VALUE.fields[0].type),),
    flexible_versions="0+",
)


@fast_init
@dataclass(frozen=True, slots=True)
class ShareGroupMemberMetadataValue:
    """Type 10: a share-group member's identity and subscription."""

    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]


SHARE_GROUP_MEMBER_METADATA_VALUE = Struct(
    "ShareGroupMemberMetadataValue",
    ShareGroupMemberMetadataValue,
    (
        Field("rack_id", STRING, nullable_versions="0+"),
        Field("client_id", STRING),
        Field("client_host", STRING),
        Field("subscribed_topic_names", ArrayOf(STRING)),
    ),
    flexible_versions="0+",
)


@fast_init
@dataclass(frozen=True, slots=True)
class ShareGroupMetadataValue:
    """Type 11: the share group's epoch and the hash of its subscribed topics' metadata."""

    epoch: int
    metadata_hash: int


SHARE_GROUP_METADATA_VALUE = Struct(
    "ShareGroupMetadataValue",
    ShareGroupMetadataValue,
    (Field("epoch", INT32), Field("metadata_hash", INT64)),
    flexible_versions="0+",
)


@fast_init
@dataclass(frozen=True, slots=True)
class ShareGroupTargetAssignmentMetadataValue:
    """Type 12: the epoch of the share group's target assignment (``assignment_timestamp``: tag 0, 4.3+)."""

    assignment_epoch: int
    assignment_timestamp: int


SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = Struct(
    "ShareGroupTargetAssignmentMetadataValue",
    ShareGroupTargetAssignmentMetadataValue,
    (Field("assignment_epoch", INT32), Field("assignment_timestamp", INT64, tag=0)),
    flexible_versions="0+",
)


@fast_init
@dataclass(frozen=True, slots=True)
class ShareGroupTargetAssignmentMemberValue:
    """Type 13: the partitions the target assignment gives one share-group member."""

    topic_partitions: tuple[TopicIdPartitions, ...]


SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = Struct(
    "ShareGroupTargetAssignmentMemberValue",
    ShareGroupTargetAssignmentMemberValue,
    (
        Field(
            "topic_partitions",
            ArrayOf(
                Struct(
                    "TopicPartition",
                    TopicIdPartitions,
                    (Field("topic_id", UUID), Field("partitions", ArrayOf(INT32))),
                    flexible_versions="0+",
                )
            ),
        ),
    ),
    flexible_versions="0+",
)


@fast_init
@dataclass(frozen=True, slots=True)
class ShareGroupCurrentMemberAssignmentValue:
    """Type 14: a share-group member's epoch, state (:data:`MEMBER_STATES`) and assigned partitions."""

    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned_partitions: tuple[TopicIdPartitions, ...]


SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = Struct(
    "ShareGroupCurrentMemberAssignmentValue",
    ShareGroupCurrentMemberAssignmentValue,
    (
        Field("member_epoch", INT32),
        Field("previous_member_epoch", INT32),
        Field("state", INT8),
        Field("assigned_partitions", ArrayOf(TOPIC_ID_PARTITIONS)),
    ),
    flexible_versions="0+",
)


@fast_init
@dataclass(frozen=True, slots=True)
class TopicPartitionsInfo:
    topic_id: str | None
    topic_name: str
    partitions: tuple[int, ...]


@fast_init
@dataclass(frozen=True, slots=True)
class ShareTopicInfo:
    """``TopicInfo`` of ShareGroupStatePartitionMetadataValue: a topic whose share state is being deleted."""

    topic_id: str | None
    topic_name: str


@fast_init
@dataclass(frozen=True, slots=True)
class ShareGroupStatePartitionMetadataValue:
    """Type 15: the topic partitions whose share-group state (in the share coordinator) is being
    initialized, is initialized, or is being deleted."""

    initializing_topics: tuple[TopicPartitionsInfo, ...]
    initialized_topics: tuple[TopicPartitionsInfo, ...]
    deleting_topics: tuple[ShareTopicInfo, ...]


TOPIC_PARTITIONS_INFO = Struct(
    "TopicPartitionsInfo",
    TopicPartitionsInfo,
    (Field("topic_id", UUID), Field("topic_name", STRING), Field("partitions", ArrayOf(INT32))),
    flexible_versions="0+",
)

SHARE_GROUP_STATE_PARTITION_METADATA_VALUE = Struct(
    "ShareGroupStatePartitionMetadataValue",
    ShareGroupStatePartitionMetadataValue,
    (
        Field("initializing_topics", ArrayOf(TOPIC_PARTITIONS_INFO)),
        Field("initialized_topics", ArrayOf(TOPIC_PARTITIONS_INFO)),
        Field(
            "deleting_topics",
            ArrayOf(
                Struct(
                    "TopicInfo",
                    ShareTopicInfo,
                    (Field("topic_id", UUID), Field("topic_name", STRING)),
                    flexible_versions="0+",
                )
            ),
        ),
    ),
    flexible_versions="0+",
)

# ================================================================================================
# KIP-1071 streams-group values (types 17, 19-23): every version flexible. Layouts of the 4.1-4.4 jars'
# generated classes; tagged fields added by later releases are listed with the release that added them.
# Types 18 (StreamsGroupPartitionMetadata) and 24 (StreamsGroupTargetAssignmentResolvedTopicIds) are in
# no released broker up to 4.4 and stay opaque.


@fast_init
@dataclass(frozen=True, slots=True)
class KeyValue:
    """A string key and value: ``LastAssignmentConfig``, ``KeyValue`` (client tags) and ``TopicConfig``."""

    key: str
    value: str


def _key_value(name: str) -> Struct:
    return Struct(name, KeyValue, (Field("key", STRING), Field("value", STRING)), flexible_versions="0+")


@fast_init
@dataclass(frozen=True, slots=True)
class StreamsGroupMetadataValue:
    """Type 17: the streams group's epoch, metadata hash, and (tagged) the topology epoch validated against
    the metadata and the assignment configs last used (tags 0-1, 4.2+), and the topology epochs of stored or
    failed topology descriptions (tags 2-3, 4.4+); -1 means none."""

    epoch: int
    metadata_hash: int
    validated_topology_epoch: int
    last_assignment_configs: tuple[KeyValue, ...] | None
    stored_description_topology_epoch: int
    failed_description_topology_epoch: int


STREAMS_GROUP_METADATA_VALUE = Struct(
    "StreamsGroupMetadataValue",
    StreamsGroupMetadataValue,
    (
        Field("epoch", INT32),
        Field("metadata_hash", INT64),
        Field("validated_topology_epoch", INT32, tag=0, default=-1),
        Field("last_assignment_configs", ArrayOf(_key_value("LastAssignmentConfig")), nullable_versions="0+",
              tag=1, default=()),
        Field("stored_description_topology_epoch", INT32, tag=2, default=-1),
        Field("failed_description_topology_epoch", INT32, tag=3, default=-1),
    ),
    flexible_versions="0+",
)


@fast_init
@dataclass(frozen=True, slots=True)
class Endpoint:
    """A Kafka Streams instance's endpoint for interactive queries (``application.server``)."""

    host: str
    port: int


@fast_init
@dataclass(frozen=True, slots=True)
class StreamsGroupMemberMetadataValue:
    """Type 19: a streams-group member's identity, process, topology epoch, endpoint and client tags."""

    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    topology_epoch: int
    process_id: str
    user_endpoint: Endpoint | None
    client_tags: tuple[KeyValue, ...]


STREAMS_GROUP_MEMBER_METADATA_VALUE = Struct(
    "StreamsGroupMemberMetadataValue",
    StreamsGroupMemberMetadataValue,
    (
        Field("instance_id", STRING, nullable_versions="0+"),
        Field("rack_id", STRING, nullable_versions="0+"),
        Field("client_id", STRING),
        Field("client_host", STRING),
        Field("rebalance_timeout_ms", INT32, default=-1),
        Field("topology_epoch", INT32),
        Field("process_id", STRING),
        Field(
            "user_endpoint",
            Struct(
                "Endpoint",
                Endpoint,
                (Field("host", STRING), Field("port", UINT16)),
                flexible_versions="0+",
            ),
            nullable_versions="0+",
        ),
        Field("client_tags", ArrayOf(_key_value("KeyValue"))),
    ),
    flexible_versions="0+",
)


@fast_init
@dataclass(frozen=True, slots=True)
class StreamsGroupTargetAssignmentMetadataValue:
    """Type 20: the epoch of the streams group's target assignment (``assignment_timestamp``: tag 0, 4.3+)."""

    assignment_epoch: int
    assignment_timestamp: int


STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = Struct(
    "StreamsGroupTargetAssignmentMetadataValue",
    StreamsGroupTargetAssignmentMetadataValue,
    (Field("assignment_epoch", INT32), Field("assignment_timestamp", INT64, tag=0)),
    flexible_versions="0+",
)


@fast_init
@dataclass(frozen=True, slots=True)
class TaskIds:
    """The tasks of one subtopology: its id and the partition numbers (task ids ``<subtopology>_<p>``)."""

    subtopology_id: str
    partitions: tuple[int, ...]


TASK_IDS = Struct(
    "TaskIds",
    TaskIds,
    (Field("subtopology_id", STRING), Field("partitions", ArrayOf(INT32))),
    flexible_versions="0+",
)


@fast_init
@dataclass(frozen=True, slots=True)
class StreamsGroupTargetAssignmentMemberValue:
    """Type 21: the active, standby and warm-up tasks the target assignment gives one member."""

    active_tasks: tuple[TaskIds, ...]
    standby_tasks: tuple[TaskIds, ...]
    warmup_tasks: tuple[TaskIds, ...]


STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = Struct(
    "StreamsGroupTargetAssignmentMemberValue",
    StreamsGroupTargetAssignmentMemberValue,
    (
        Field("active_tasks", ArrayOf(TASK_IDS)),
        Field("standby_tasks", ArrayOf(TASK_IDS)),
        Field("warmup_tasks", ArrayOf(TASK_IDS)),
    ),
    flexible_versions="0+",
)


@fast_init
@dataclass(frozen=True, slots=True)
class AssignedTaskIds:
    """``TaskIds`` of a member's current assignment; ``assignment_epochs`` (tag 0, 4.2+) per partition."""

    subtopology_id: str
    partitions: tuple[int, ...]
    assignment_epochs: tuple[int, ...] | None


ASSIGNED_TASK_IDS = Struct(
    "TaskIds",
    AssignedTaskIds,
    (
        Field("subtopology_id", STRING),
        Field("partitions", ArrayOf(INT32)),
        Field("assignment_epochs", ArrayOf(INT32), nullable_versions="0+", tag=0, default=()),
    ),
    flexible_versions="0+",
)


@fast_init
@dataclass(frozen=True, slots=True)
class StreamsGroupCurrentMemberAssignmentValue:
    """Type 22: a streams-group member's epoch, state (:data:`MEMBER_STATES`), its tasks and the tasks it
    must still revoke."""

    member_epoch: int
    previous_member_epoch: int
    state: int
    active_tasks: tuple[AssignedTaskIds, ...]
    standby_tasks: tuple[AssignedTaskIds, ...]
    warmup_tasks: tuple[AssignedTaskIds, ...]
    active_tasks_pending_revocation: tuple[AssignedTaskIds, ...]
    standby_tasks_pending_revocation: tuple[AssignedTaskIds, ...]
    warmup_tasks_pending_revocation: tuple[AssignedTaskIds, ...]


STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = Struct(
    "StreamsGroupCurrentMemberAssignmentValue",
    StreamsGroupCurrentMemberAssignmentValue,
    (
        Field("member_epoch", INT32),
        Field("previous_member_epoch", INT32),
        Field("state", INT8),
        Field("active_tasks", ArrayOf(ASSIGNED_TASK_IDS)),
        Field("standby_tasks", ArrayOf(ASSIGNED_TASK_IDS)),
        Field("warmup_tasks", ArrayOf(ASSIGNED_TASK_IDS)),
        Field("active_tasks_pending_revocation", ArrayOf(ASSIGNED_TASK_IDS)),
        Field("standby_tasks_pending_revocation", ArrayOf(ASSIGNED_TASK_IDS)),
        Field("warmup_tasks_pending_revocation", ArrayOf(ASSIGNED_TASK_IDS)),
    ),
    flexible_versions="0+",
)


@fast_init
@dataclass(frozen=True, slots=True)
class StreamsTopicInfo:
    """``TopicInfo`` of StreamsGroupTopologyValue: an internal topic the topology needs."""

    name: str
    partitions: int
    replication_factor: int
    topic_configs: tuple[KeyValue, ...]


@fast_init
@dataclass(frozen=True, slots=True)
class CopartitionGroup:
    """Topics that must be co-partitioned, as indexes into the subtopology's topic lists."""

    source_topics: tuple[int, ...]
    source_topic_regex: tuple[int, ...]
    repartition_source_topics: tuple[int, ...]


@fast_init
@dataclass(frozen=True, slots=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...]
    source_topic_regex: tuple[str, ...]
    state_changelog_topics: tuple[StreamsTopicInfo, ...]
    repartition_sink_topics: tuple[str, ...]
    repartition_source_topics: tuple[StreamsTopicInfo, ...]
    copartition_groups: tuple[CopartitionGroup, ...]


@fast_init
@dataclass(frozen=True, slots=True)
class StreamsGroupTopologyValue:
    """Type 23: the streams group's topology (its subtopologies and their topics) at a topology epoch."""

    epoch: int
    subtopologies: tuple[Subtopology, ...]


STREAMS_TOPIC_INFO = Struct(
    "TopicInfo",
    StreamsTopicInfo,
    (
        Field("name", STRING),
        Field("partitions", INT32),
        Field("replication_factor", INT16),
        Field("topic_configs", ArrayOf(_key_value("TopicConfig"))),
    ),
    flexible_versions="0+",
)

STREAMS_GROUP_TOPOLOGY_VALUE = Struct(
    "StreamsGroupTopologyValue",
    StreamsGroupTopologyValue,
    (
        Field("epoch", INT32),
        Field(
            "subtopologies",
            ArrayOf(
                Struct(
                    "Subtopology",
                    Subtopology,
                    (
                        Field("subtopology_id", STRING),
                        Field("source_topics", ArrayOf(STRING)),
                        Field("source_topic_regex", ArrayOf(STRING)),
                        Field("state_changelog_topics", ArrayOf(STREAMS_TOPIC_INFO)),
                        Field("repartition_sink_topics", ArrayOf(STRING)),
                        Field("repartition_source_topics", ArrayOf(STREAMS_TOPIC_INFO)),
                        Field(
                            "copartition_groups",
                            ArrayOf(
                                Struct(
                                    "CopartitionGroup",
                                    CopartitionGroup,
                                    (
                                        Field("source_topics", ArrayOf(INT16)),
                                        Field("source_topic_regex", ArrayOf(INT16)),
                                        Field("repartition_source_topics", ArrayOf(INT16)),
                                    ),
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
    owned_partitions: tuple[TopicPartitionsEntry, ...] | None
    generation_id: int | None
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
    generation: int | None


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
