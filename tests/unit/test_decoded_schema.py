"""schemas.decoded derives the decoder's Spark type from its Arrow contract (coordinator_core.batch): the
derived type must be exactly the one written out by hand before (names, order, short/int/long widths,
nullability of fields and array elements), which is copied here as the expected value."""

from __future__ import annotations

from pyspark.sql import types as T

from schemas import decoded

# -- the hand-written declaration schemas/decoded.py held before the Spark type was derived --------------

EXPECTED_TOPIC_PARTITION_STRUCT = T.StructType(
    [T.StructField("topic", T.StringType()), T.StructField("partition", T.IntegerType())]
)

EXPECTED_MEMBER_STRUCT = T.StructType(
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
        T.StructField("owned_partitions", T.ArrayType(EXPECTED_TOPIC_PARTITION_STRUCT)),
        T.StructField("subscription_generation", T.IntegerType()),
        T.StructField("rack_id", T.StringType()),
        T.StructField("assignment_version", T.ShortType()),
        T.StructField("assigned_partitions", T.ArrayType(EXPECTED_TOPIC_PARTITION_STRUCT)),
        T.StructField("assignment_user_data", T.BinaryType()),
        T.StructField("protocol_error", T.StringType()),
    ]
)

EXPECTED_GROUP_METADATA_STRUCT = T.StructType(
    [
        T.StructField("protocol_type", T.StringType()),
        T.StructField("generation", T.IntegerType()),
        T.StructField("protocol", T.StringType()),
        T.StructField("leader", T.StringType()),
        T.StructField("current_state_timestamp", T.LongType()),
        T.StructField("members", T.ArrayType(EXPECTED_MEMBER_STRUCT)),
    ]
)

EXPECTED_DECODED_RECORD = T.StructType(
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
        T.StructField("group_metadata", EXPECTED_GROUP_METADATA_STRUCT),
        T.StructField("record_json", T.StringType()),
        T.StructField("trailing_bytes", T.IntegerType()),
        T.StructField("error", T.StringType()),
        T.StructField("error_field_path", T.StringType()),
        T.StructField("error_position", T.IntegerType()),
    ]
)



def test_the_derived_decoded_record_is_the_hand_written_one() -> None:
    assert decoded.DECODED_RECORD == EXPECTED_DECODED_RECORD
    # StructType equality already compares nullability; spelled out so that a failure names the field.
    assert decoded.DECODED_RECORD.jsonValue() == EXPECTED_DECODED_RECORD.jsonValue()


def test_the_nested_structs_are_the_hand_written_ones() -> None:
    assert decoded.TOPIC_PARTITION_STRUCT == EXPECTED_TOPIC_PARTITION_STRUCT
    assert decoded.MEMBER_STRUCT == EXPECTED_MEMBER_STRUCT
    assert decoded.GROUP_METADATA_STRUCT == EXPECTED_GROUP_METADATA_STRUCT


def test_short_and_nullable_fields_survive_the_derivation() -> None:
    """The two things a derivation most easily loses: int16 as ShortType (not IntegerType), and nullability."""
    fields = {f.name: f for f in decoded.DECODED_RECORD.fields}
    assert fields["record_type"].dataType == T.ShortType()
    assert fields["value_version"].dataType == T.ShortType()
    assert fields["partition"].dataType == T.IntegerType()
    assert fields["committed_offset"].dataType == T.LongType()
    assert all(f.nullable for f in decoded.DECODED_RECORD.fields)
    members = fields["group_metadata"].dataType["members"].dataType
    assert isinstance(members, T.ArrayType) and members.containsNull
    assert members.elementType["subscription_version"].dataType == T.ShortType()
