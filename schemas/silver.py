"""Silver: every archived record decoded, one table per record family, and the quarantine."""

from __future__ import annotations

from pyspark.sql import types as T

from schemas._spec import TableSpec, column
from schemas.decoded import MEMBER_STRUCT, TOPIC_PARTITION_STRUCT

_POSITION = [
    column("cluster", T.StringType(), "Kafka cluster name.", False),
    column("partition", T.IntegerType(), "__consumer_offsets partition of the record.", False),
    column("offset", T.LongType(), "Offset of the record in __consumer_offsets.", False),
    column("record_timestamp", T.TimestampType(), "Timestamp of the __consumer_offsets record (UTC)."),
]

OFFSET_COMMITS = TableSpec(
    name="offset_commits",
    comment="One row per offset-commit record (key types 0 and 1), tombstones included.",
    grain=("cluster", "partition", "offset"),
    partition_columns=("cluster",),
    # Transaction outcomes are updated in place when a later marker arrives: deletion vectors make that
    # UPDATE (a MERGE past 200 producers) write only the changed rows instead of rewriting whole files.
    # Statistics on the outcome let each run's look-up of still-open commits skip every file that has none.
    # None on group_id or topic: a run's files hold the commits of every group and topic, so their min/max
    # skip nothing, while computing them (a string copy and compare per row) was about 3% of a full run.
    properties={"delta.enableDeletionVectors": "true", "delta.enableChangeDataFeed": "true",
                "delta.dataSkippingStatsColumns": "partition,offset,record_timestamp,transaction_outcome"},
    schema=T.StructType(
        [
            *_POSITION,
            column("group_id", T.StringType(), "Consumer group id."),
            column("topic", T.StringType(), "Topic the offset is committed for."),
            column("topic_partition", T.IntegerType(), "Partition of that topic."),
            column("committed_offset", T.LongType(), "The committed offset (next record to consume)."),
            column("leader_epoch", T.IntegerType(), "Leader epoch of the committed offset; null when -1/absent."),
            column("metadata", T.StringType(), "Client-supplied commit metadata."),
            column("commit_timestamp", T.TimestampType(), "Commit timestamp from the value (UTC)."),
            column("expire_timestamp", T.TimestampType(), "Explicit expiry (value v1 only); null when absent."),
            column("topic_id", T.StringType(), "Topic id (Kafka Uuid, base64) when present."),
            column("record_type", T.ShortType(), "Key type: 0 (0.8.2 format) or 1."),
            column("value_version", T.ShortType(), "Value schema version; null for a tombstone."),
            column("is_tombstone", T.BooleanType(), "Null value: the offset was deleted/expired.", False),
            column("producer_id", T.LongType(), "Producer id of the batch (transactional commits)."),
            column("is_transactional", T.BooleanType(), "Written by TxnOffsetCommit; null when unknown."),
            column(
                "transaction_outcome",
                T.StringType(),
                "committed / aborted / open (no marker archived yet); null for a non-transactional commit.",
            ),
            column(
                "transaction_marker_offset",
                T.LongType(),
                "Offset of the COMMIT/ABORT marker that resolved the transaction.",
            ),
        ]
    ),
)

#: One member of a GroupMetadata record as the history needs it: ConsumerProtocol subscription and assignment
#: decoded by the decode stage (empty for other protocol types or bytes that did not decode; why in
#: protocol_error). The decoded rows' member fields (schemas.decoded.MEMBER_STRUCT) without the raw bytes.
GROUP_METADATA_MEMBER = T.StructType([MEMBER_STRUCT[name] for name in (
    "member_id", "group_instance_id", "client_id", "client_host", "rebalance_timeout", "session_timeout",
    "subscribed_topics", "owned_partitions", "assigned_partitions", "protocol_error")])

GROUP_METADATA = TableSpec(
    name="group_metadata",
    comment="One row per GroupMetadata record (key type 2): the group's state after a rebalance, or a deletion.",
    grain=("cluster", "partition", "offset"),
    partition_columns=("cluster",),
    # Change data feed: the gold stages read each run's new rows as a version range, not the whole table.
    properties={"delta.enableChangeDataFeed": "true"},
    schema=T.StructType(
        [
            *_POSITION,
            column("group_id", T.StringType(), "Group id."),
            column("value_version", T.ShortType(), "Value schema version; null for a tombstone."),
            column("is_tombstone", T.BooleanType(), "Null value: the group was deleted.", False),
            column("protocol_type", T.StringType(), "Protocol type, e.g. consumer or connect."),
            column("generation", T.IntegerType(), "Generation id."),
            column("protocol", T.StringType(), "Selected protocol (the assignor name for consumers)."),
            column("leader", T.StringType(), "Member id of the group leader."),
            column("current_state_timestamp", T.TimestampType(), "State timestamp (value v2+, UTC)."),
            column("member_count", T.IntegerType(), "Number of members in this generation."),
            column("member_ids", T.ArrayType(T.StringType()), "Member ids, sorted."),
            column("members", T.ArrayType(GROUP_METADATA_MEMBER),
                   "Members in record order, subscription and assignment decoded (what the history reads; "
                   "group_members keeps only each generation's latest record)."),
        ]
    ),
)

GROUP_MEMBERS = TableSpec(
    name="group_members",
    comment=(
        "One row per member of each generation of a classic group, from the latest GroupMetadata record "
        "written for that generation, with its subscription and assignment decoded."
    ),
    grain=("cluster", "group_id", "generation", "member_id"),
    partition_columns=("cluster",),
    properties={"delta.enableDeletionVectors": "true", "delta.enableChangeDataFeed": "true"},
    schema=T.StructType(
        [
            column("cluster", T.StringType(), "Kafka cluster name.", False),
            column("group_id", T.StringType(), "Group id.", False),
            column("generation", T.IntegerType(), "Generation id.", False),
            column("member_id", T.StringType(), "Member id.", False),
            column("group_instance_id", T.StringType(), "Static membership id (KIP-345), if any."),
            column("client_id", T.StringType(), "Client id."),
            column("client_host", T.StringType(), "Client host as seen by the broker."),
            column("rebalance_timeout", T.IntegerType(), "Rebalance timeout (ms)."),
            column("session_timeout", T.IntegerType(), "Session timeout (ms)."),
            column("protocol_type", T.StringType(), "Protocol type of the group."),
            column("protocol", T.StringType(), "Selected protocol (assignor) of the generation."),
            column("is_leader", T.BooleanType(), "This member was the generation's leader."),
            column("subscription_version", T.ShortType(), "ConsumerProtocol subscription version."),
            column("subscribed_topics", T.ArrayType(T.StringType()), "Subscribed topics."),
            column("owned_partitions", T.ArrayType(TOPIC_PARTITION_STRUCT), "Owned partitions (v1+)."),
            column("subscription_generation", T.IntegerType(), "Generation in the subscription (v2+)."),
            column("rack_id", T.StringType(), "Client rack (v3+)."),
            column("subscription_user_data", T.BinaryType(), "Subscription user data."),
            column("assignment_version", T.ShortType(), "ConsumerProtocol assignment version."),
            column("assigned_partitions", T.ArrayType(TOPIC_PARTITION_STRUCT), "Assigned partitions."),
            column("assignment_user_data", T.BinaryType(), "Assignment user data."),
            column(
                "protocol_error",
                T.StringType(),
                "Why the subscription/assignment bytes did not decode as ConsumerProtocol, if they did not.",
            ),
            column("source_partition", T.IntegerType(), "__consumer_offsets partition of the source record.", False),
            column("source_offset", T.LongType(), "Offset of the GroupMetadata record this row comes from.", False),
            column("record_timestamp", T.TimestampType(), "Timestamp of that record (UTC)."),
        ]
    ),
)

CONSUMER_GROUP_RECORDS = TableSpec(
    name="consumer_group_records",
    comment=(
        "One row per record of key type 3 and above: KIP-848 consumer groups (3-8, 16), share groups "
        "(KIP-932, 9-15) and streams groups (KIP-1071, 17, 19-23) decoded field by field into record_json; "
        "streams types 18 and 24 (in no released broker) keep their value bytes in record_json; unknown "
        "future types kept with their bytes."
    ),
    grain=("cluster", "partition", "offset"),
    partition_columns=("cluster",),
    # Change data feed: the gold stages read each run's new rows as a version range, not the whole table.
    properties={"delta.enableChangeDataFeed": "true"},
    schema=T.StructType(
        [
            *_POSITION,
            column("record_type", T.ShortType(), "Key type (int16 key prefix)."),
            column("record_kind", T.StringType(), "Key schema name in snake_case, or unknown."),
            column("group_family", T.StringType(), "consumer / share / streams / unknown."),
            column("group_id", T.StringType(), "Group id."),
            column("member_id", T.StringType(), "Member id, for member-scoped records."),
            column("value_version", T.ShortType(), "Value schema version; null for a tombstone."),
            column("is_tombstone", T.BooleanType(), "Null value.", False),
            column("record_json", T.StringType(), "Key and value fields as a JSON object (snake_case)."),
            column("key", T.BinaryType(), "Raw key bytes, kept for unknown record types only."),
            column("value", T.BinaryType(), "Raw value bytes, kept for unknown record types only."),
        ]
    ),
)

DECODE_ERRORS = TableSpec(
    name="decode_errors",
    comment="Records that did not decode: raw bytes, reason and where. Nothing is dropped silently.",
    grain=("cluster", "partition", "offset"),
    partition_columns=("cluster",),
    schema=T.StructType(
        [
            *_POSITION,
            column("record_type", T.ShortType(), "Key type, when at least 2 key bytes were present."),
            column("record_kind", T.StringType(), "Key schema name, when known."),
            column("group_id", T.StringType(), "Group id, when the key decoded."),
            column("error", T.StringType(), "What was expected and what was found.", False),
            column("error_field_path", T.StringType(), "Dotted path of the field being decoded."),
            column("error_position", T.IntegerType(), "Byte position of the failure."),
            column("key", T.BinaryType(), "Raw key bytes."),
            column("value", T.BinaryType(), "Raw value bytes."),
        ]
    ),
)
