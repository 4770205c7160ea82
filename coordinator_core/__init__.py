"""coordinator_core: decode Kafka's `__consumer_offsets`, read its log segments, and (in sibling modules)
parse coordinator logs, rebuild generation histories and replay assignors. Pure Python; never imports Spark.

Public API (a contract; see the project's ARCHITECTURE.md):

    decode_record(key, value) -> Record          encode_record(record) -> (key, value)
    decode_subscription(bytes) -> Subscription   decode_assignment(bytes) -> Assignment
    partition_for(group_id, num_partitions=50)   read_segment(path_or_bytes) -> iterator of entries
    decode_batch(keys, values) -> pyarrow.Table  (imported lazily: pyarrow is needed only there)
    parse_log_line(line) -> CoordinatorEvent | None, read_log_lines(...)
    assign(assignor_name, partitions_per_topic, subscriptions, **context) -> {member_id: [(topic, partition)]}
    group_history(records, events) -> [GenerationRow], offset_history(records, events) -> [OffsetEventRow]
    DecodeError
"""

from __future__ import annotations

from typing import Any

from coordinator_core.assignors import (
    NEWEST_KAFKA_VERSION,
    AssignorError,
    MemberSubscription,
    UnsupportedKafkaVersion,
    assign,
)
from coordinator_core.consumer_protocol import (
    Assignment,
    MemberProtocol,
    StickyUserData,
    Subscription,
    TopicPartition,
    decode_assignment,
    decode_cooperative_sticky_user_data,
    decode_member_protocol,
    decode_sticky_user_data,
    decode_subscription,
    encode_assignment,
    encode_cooperative_sticky_user_data,
    encode_sticky_user_data,
    encode_subscription,
)
from coordinator_core.errors import DecodeError
from coordinator_core.history import (
    Evidence,
    GenerationMember,
    GenerationRow,
    GroupRecord,
    MemberIdChange,
    OffsetEventRow,
    PartitionMove,
    group_history,
    offset_history,
    schema_ddl,
)
from coordinator_core.javaisms import java_string_hash, partition_for
from coordinator_core.logs import (
    CoordinatorEvent,
    LogReadStats,
    classify_log_entry,
    iter_log_entries,
    parse_log_line,
    read_log_lines,
)
from coordinator_core.messages import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
)
from coordinator_core.records import RECORD_TYPES, Record, decode_record, encode_record, record_type_name

__all__ = [
    "NEWEST_KAFKA_VERSION",
    "RECORD_TYPES",
    "Assignment",
    "AssignorError",
    "CoordinatorEvent",
    "DecodeError",
    "Evidence",
    "GenerationMember",
    "GenerationRow",
    "GroupMetadataKey",
    "GroupMetadataValue",
    "GroupRecord",
    "LogReadStats",
    "MemberIdChange",
    "MemberMetadata",
    "MemberProtocol",
    "MemberSubscription",
    "OffsetCommitKey",
    "OffsetCommitValue",
    "OffsetEventRow",
    "PartitionMove",
    "Record",
    "StickyUserData",
    "Subscription",
    "TopicPartition",
    "UnsupportedKafkaVersion",
    "assign",
    "classify_log_entry",
    "decode_assignment",
    "decode_batch",
    "decode_cooperative_sticky_user_data",
    "decode_member_protocol",
    "decode_record",
    "decode_sticky_user_data",
    "decode_subscription",
    "encode_assignment",
    "encode_cooperative_sticky_user_data",
    "encode_record",
    "encode_sticky_user_data",
    "encode_subscription",
    "group_history",
    "iter_log_entries",
    "java_string_hash",
    "offset_history",
    "parse_log_line",
    "partition_for",
    "read_log_lines",
    "read_segment",
    "record_type_name",
    "schema_ddl",
]


def __getattr__(name: str) -> Any:
    # read_segment and decode_batch pull in codecs / pyarrow; load them on first use only.
    if name == "decode_batch":
        from coordinator_core.batch import decode_batch

        return decode_batch
    if name == "read_segment":
        from coordinator_core.segment import read_segment

        return read_segment
    raise AttributeError(f"module 'coordinator_core' has no attribute {name!r}")
