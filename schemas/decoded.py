"""The columns `coordinator_core.decode_batch` returns, as a Spark type (not a table).

This mirrors the decoder's Arrow contract one to one (same names, same types). The Arrow boundary in
`jobs.common.boundary` casts the decoder's output to it, so a drift between the decoder and this module
fails loudly in the boundary's tests instead of producing silently wrong columns.
"""

from __future__ import annotations

from pyspark.sql import types as T

TOPIC_PARTITION_STRUCT = T.StructType(
    [T.StructField("topic", T.StringType()), T.StructField("partition", T.IntegerType())]
)

MEMBER_STRUCT = T.StructType(
    [
        T.StructField("member_id", T.StringType()),
        T.StructField("group_instance_id", T.StringType()),
        T.StructField("client_id", T.StringType()),
        T.StructField("client_host", T.StringType()),
        T.StructField("rebalance_timeout", T.IntegerType()),
        T.StructField("session_timeout", T.IntegerType()),
        T.StructField("subscription", T.BinaryType()),
        T.StructField("assignment", T.BinaryType()),
        T.StructField("subscription_version", T.ShortType()),
        T.StructField("subscribed_topics", T.ArrayType(T.StringType())),
        T.StructField("subscription_user_data", T.BinaryType()),
        T.StructField("owned_partitions", T.ArrayType(TOPIC_PARTITION_STRUCT)),
        T.StructField("subscription_generation", T.IntegerType()),
        T.StructField("rack_id", T.StringType()),
        T.StructField("assignment_version", T.ShortType()),
        T.StructField("assigned_partitions", T.ArrayType(TOPIC_PARTITION_STRUCT)),
        T.StructField("assignment_user_data", T.BinaryType()),
        T.StructField("protocol_error", T.StringType()),
    ]
)

GROUP_METADATA_STRUCT = T.StructType(
    [
        T.StructField("protocol_type", T.StringType()),
        T.StructField("generation", T.IntegerType()),
        T.StructField("protocol", T.StringType()),
        T.StructField("leader", T.StringType()),
        T.StructField("current_state_timestamp", T.LongType()),
        T.StructField("members", T.ArrayType(MEMBER_STRUCT)),
    ]
)

DECODED_RECORD = T.StructType(
    [
        T.StructField("record_type", T.ShortType()),
        T.StructField("record_kind", T.StringType()),
        T.StructField("group_id", T.StringType()),
        T.StructField("topic", T.StringType()),
        T.StructField("partition", T.IntegerType()),
        T.StructField("member_id", T.StringType()),
        T.StructField("value_version", T.ShortType()),
        T.StructField("is_tombstone", T.BooleanType()),
        T.StructField("committed_offset", T.LongType()),
        T.StructField("leader_epoch", T.IntegerType()),
        T.StructField("metadata", T.StringType()),
        T.StructField("commit_timestamp", T.LongType()),
        T.StructField("expire_timestamp", T.LongType()),
        T.StructField("topic_id", T.StringType()),
        T.StructField("group_metadata", GROUP_METADATA_STRUCT),
        T.StructField("record_json", T.StringType()),
        T.StructField("trailing_bytes", T.IntegerType()),
        T.StructField("error", T.StringType()),
        T.StructField("error_field_path", T.StringType()),
        T.StructField("error_position", T.IntegerType()),
    ]
)

# In the boundary's output the decoder's `partition` (the consumed topic's partition of an offset commit)
# is renamed so it cannot be confused with the `__consumer_offsets` partition of the record itself.
DECODED_RENAMES = {"partition": "topic_partition"}
