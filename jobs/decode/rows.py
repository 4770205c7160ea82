"""Decoded records -> silver rows: offset_commits (outcome not yet resolved), group_metadata, group_members,
consumer_group_records, decode_errors and decode_coverage.

Each function is a pure transform (no I/O) from the columns `jobs.common.boundary.decode_records` gives
(the raw record's columns beside `schemas.decoded.DECODED_RECORD`) ending in a select onto its table's
columns.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from jobs.common.keys import GROUP_METADATA_TYPE, OFFSET_COMMIT_TYPES
from schemas.columns import (
    CLUSTER,
    GENERATION,
    GROUP_ID,
    IS_TOMBSTONE,
    IS_TRANSACTIONAL,
    KEY,
    MEMBER_ID,
    OFFSET,
    PARTITION,
    PRODUCER_ID,
    RECORD_KIND,
    RECORD_TIMESTAMP,
    RECORD_TYPE,
    RUN_ID,
    TOPIC,
    TOPIC_PARTITION,
    VALUE,
    VALUE_VERSION,
)
from schemas.silver import GROUP_METADATA_MEMBER


def _millis_to_timestamp(column: str) -> Column:
    return F.timestamp_millis(F.col(column))


def _decoded_ok(decoded: DataFrame) -> DataFrame:
    return decoded.where(F.col("error").isNull())


def offset_commit_rows(decoded: DataFrame) -> DataFrame:
    """Decoded offset-commit records -> offset_commits rows, transaction outcome not yet resolved."""
    commits = _decoded_ok(decoded).where(F.col(RECORD_TYPE).isin(*OFFSET_COMMIT_TYPES))
    return commits.select(
        CLUSTER,
        PARTITION,
        OFFSET,
        F.col("timestamp").alias(RECORD_TIMESTAMP),
        GROUP_ID,
        TOPIC,
        TOPIC_PARTITION,
        "committed_offset",
        "leader_epoch",
        "metadata",
        _millis_to_timestamp("commit_timestamp").alias("commit_timestamp"),
        _millis_to_timestamp("expire_timestamp").alias("expire_timestamp"),
        "topic_id",
        RECORD_TYPE,
        VALUE_VERSION,
        IS_TOMBSTONE,
        PRODUCER_ID,
        IS_TRANSACTIONAL,
        F.lit(None).cast("string").alias("transaction_outcome"),
        F.lit(None).cast("long").alias("transaction_marker_offset"),
    )


def group_metadata_rows(decoded: DataFrame) -> DataFrame:
    """Decoded GroupMetadata records -> group_metadata rows."""
    records = _decoded_ok(decoded).where(F.col(RECORD_TYPE) == GROUP_METADATA_TYPE)
    members = F.col("group_metadata.members")
    return records.select(
        CLUSTER,
        PARTITION,
        OFFSET,
        F.col("timestamp").alias(RECORD_TIMESTAMP),
        GROUP_ID,
        VALUE_VERSION,
        IS_TOMBSTONE,
        F.col("group_metadata.protocol_type").alias("protocol_type"),
        F.col("group_metadata.generation").alias(GENERATION),
        F.col("group_metadata.protocol").alias("protocol"),
        F.col("group_metadata.leader").alias("leader"),
        _millis_to_timestamp("group_metadata.current_state_timestamp").alias("current_state_timestamp"),
        F.when(members.isNotNull(), F.size(members)).cast("int").alias("member_count"),
        F.when(members.isNotNull(), F.array_sort(F.transform(members, lambda m: m[MEMBER_ID]))).alias(
            "member_ids"
        ),
        F.transform(members, lambda m: F.struct(*[m[f].alias(f) for f in GROUP_METADATA_MEMBER.fieldNames()]))
        .alias("members"),
    )


def group_member_rows(decoded: DataFrame) -> DataFrame:
    """Decoded GroupMetadata records -> one group_members row per (group, generation, member).

    A generation can be written more than once: Kafka rewrites GroupMetadata when a static member is
    replaced (same generation, new member id) or a member's metadata changes. The members of a
    generation are those of its latest record (all records of a group share one partition, so the
    offset orders them); members only in an earlier record of the same generation are not kept.
    """
    records = _decoded_ok(decoded).where(
        (F.col(RECORD_TYPE) == GROUP_METADATA_TYPE)
        & ~F.col(IS_TOMBSTONE)
        & F.col("group_metadata").isNotNull()
    )
    latest_first = Window.partitionBy(CLUSTER, GROUP_ID, F.col("group_metadata.generation")).orderBy(
        F.col(PARTITION).desc(), F.col(OFFSET).desc()
    )
    latest_records = records.withColumn("_rank", F.row_number().over(latest_first)).where(F.col("_rank") == 1)
    latest = latest_records.select(
        CLUSTER,
        GROUP_ID,
        F.col("group_metadata.generation").alias(GENERATION),
        F.col("group_metadata.protocol_type").alias("protocol_type"),
        F.col("group_metadata.protocol").alias("protocol"),
        F.col("group_metadata.leader").alias("leader"),
        F.col(PARTITION).alias("source_partition"),
        F.col(OFFSET).alias("source_offset"),
        F.col("timestamp").alias(RECORD_TIMESTAMP),
        F.explode("group_metadata.members").alias("m"),
    )
    return latest.select(
        CLUSTER,
        GROUP_ID,
        GENERATION,
        F.col("m.member_id").alias(MEMBER_ID),
        F.col("m.group_instance_id").alias("group_instance_id"),
        F.col("m.client_id").alias("client_id"),
        F.col("m.client_host").alias("client_host"),
        F.col("m.rebalance_timeout").alias("rebalance_timeout"),
        F.col("m.session_timeout").alias("session_timeout"),
        "protocol_type",
        "protocol",
        (F.col("m.member_id") == F.col("leader")).alias("is_leader"),
        F.col("m.subscription_version").alias("subscription_version"),
        F.col("m.subscribed_topics").alias("subscribed_topics"),
        F.col("m.owned_partitions").alias("owned_partitions"),
        F.col("m.subscription_generation").alias("subscription_generation"),
        F.col("m.rack_id").alias("rack_id"),
        F.col("m.subscription_user_data").alias("subscription_user_data"),
        F.col("m.assignment_version").alias("assignment_version"),
        F.col("m.assigned_partitions").alias("assigned_partitions"),
        F.col("m.assignment_user_data").alias("assignment_user_data"),
        F.col("m.protocol_error").alias("protocol_error"),
        "source_partition",
        "source_offset",
        RECORD_TIMESTAMP,
    )


def _group_family(record_kind: Column) -> Column:
    return (
        F.when(record_kind.startswith("share_group"), F.lit("share"))
        .when(record_kind.startswith("streams_group"), F.lit("streams"))
        .when(record_kind.startswith("consumer_group"), F.lit("consumer"))
        .otherwise(F.lit("unknown"))
    )


def consumer_group_record_rows(decoded: DataFrame) -> DataFrame:
    """Decoded records of key type 3+ (and unknown types) -> consumer_group_records rows."""
    records = _decoded_ok(decoded).where(
        F.col(RECORD_TYPE).isNull() | ~F.col(RECORD_TYPE).isin(*OFFSET_COMMIT_TYPES, GROUP_METADATA_TYPE)
    )
    return records.select(
        CLUSTER,
        PARTITION,
        OFFSET,
        F.col("timestamp").alias(RECORD_TIMESTAMP),
        RECORD_TYPE,
        RECORD_KIND,
        _group_family(F.col(RECORD_KIND)).alias("group_family"),
        GROUP_ID,
        MEMBER_ID,
        VALUE_VERSION,
        IS_TOMBSTONE,
        "record_json",
        KEY,
        VALUE,
    )


def decode_error_rows(decoded: DataFrame) -> DataFrame:
    """Records that did not decode -> decode_errors rows (bytes kept)."""
    return decoded.where(F.col("error").isNotNull()).select(
        CLUSTER,
        PARTITION,
        OFFSET,
        F.col("timestamp").alias(RECORD_TIMESTAMP),
        RECORD_TYPE,
        RECORD_KIND,
        GROUP_ID,
        "error",
        "error_field_path",
        "error_position",
        KEY,
        VALUE,
    )


def decode_coverage_rows(decoded: DataFrame, control_records: DataFrame | None, run_id: str) -> DataFrame:
    """Counts per (cluster, record type, kind, value version, status) of what this run decoded (and of its
    control records, when given). `jobs.common.boundary.coverage_status` is the same status rule in Arrow."""
    status = (
        F.when(F.col("error").isNotNull(), F.lit("error"))
        .when(F.col(RECORD_KIND) == "unknown", F.lit("unknown_type"))
        .when(F.col("trailing_bytes") > 0, F.lit("decoded_trailing_bytes"))
        .when(F.col(IS_TOMBSTONE), F.lit("tombstone"))
        .otherwise(F.lit("decoded"))
    )
    data = decoded.select(CLUSTER, RECORD_TYPE, RECORD_KIND, VALUE_VERSION, status.alias("status"))
    if control_records is not None:
        data = data.unionByName(control_records.select(
            CLUSTER,
            F.lit(None).cast("short").alias(RECORD_TYPE),
            F.lit("control").alias(RECORD_KIND),
            F.lit(None).cast("short").alias(VALUE_VERSION),
            F.lit("control").alias("status"),
        ))
    counts = (
        data
        .groupBy(CLUSTER, RECORD_TYPE, RECORD_KIND, VALUE_VERSION, "status")
        .agg(F.count(F.lit(1)).alias("records"))
    )
    return counts.select(
        F.lit(run_id).alias(RUN_ID), CLUSTER, RECORD_TYPE, RECORD_KIND, VALUE_VERSION, "status", "records"
    )
