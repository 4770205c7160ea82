"""Decode stage: raw_offsets rows -> offset_commits, group_metadata, group_members,
consumer_group_records, decode_errors and decode_coverage.

Every function taking and returning DataFrames here is a pure transform (no I/O) ending in a select onto
its table's schema; `run_decode` is the only function that reads or writes tables.

Incremental: the stage decodes only the raw_offsets rows appended since the last committed run (Delta
change data feed of the append-only archive). Rows keyed by record position are appended; the only
state that spans records is recomputed for the groups/partitions the new records touch: transaction
outcomes (a COMMIT/ABORT marker resolves earlier commits of its producer in its partition) and
group_members (a later GroupMetadata record of the same generation supersedes the earlier one).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from jobs.common.boundary import decode_records
from jobs.common.delta_io import Tables
from jobs.common.progress import step
from schemas import (
    CONSUMER_GROUP_RECORDS,
    DECODE_COVERAGE,
    DECODE_ERRORS,
    GROUP_MEMBERS,
    GROUP_METADATA,
    OFFSET_COMMITS,
    RAW_OFFSETS,
)
from schemas.columns import TXN_ABORTED, TXN_COMMITTED, TXN_OPEN

OFFSET_COMMIT_TYPES = (0, 1)
GROUP_METADATA_TYPE = 2
TRANSACTION_MARKERS = ("COMMIT", "ABORT")


def _select_onto(rows: DataFrame, spec_columns: list[str]) -> DataFrame:
    return rows.select(*spec_columns)


def _millis_to_timestamp(column: str) -> Column:
    return F.timestamp_millis(F.col(column))


def _decoded_ok(decoded: DataFrame) -> DataFrame:
    return decoded.where(F.col("error").isNull())


# -- record-keyed tables ------------------------------------------------------------------------------


def offset_commit_rows(decoded: DataFrame) -> DataFrame:
    """Decoded offset-commit records -> offset_commits rows, transaction outcome not yet resolved."""
    commits = _decoded_ok(decoded).where(F.col("record_type").isin(*OFFSET_COMMIT_TYPES))
    return commits.select(
        "cluster",
        "partition",
        "offset",
        F.col("timestamp").alias("record_timestamp"),
        "group_id",
        "topic",
        "topic_partition",
        "committed_offset",
        "leader_epoch",
        "metadata",
        _millis_to_timestamp("commit_timestamp").alias("commit_timestamp"),
        _millis_to_timestamp("expire_timestamp").alias("expire_timestamp"),
        "topic_id",
        "record_type",
        "value_version",
        "is_tombstone",
        "producer_id",
        "is_transactional",
        F.lit(None).cast("string").alias("transaction_outcome"),
        F.lit(None).cast("long").alias("transaction_marker_offset"),
    )


def transaction_markers(raw_offsets: DataFrame) -> DataFrame:
    """COMMIT/ABORT control records: (cluster, partition, producer_id, offset, control_type)."""
    return raw_offsets.where(
        F.col("is_control") & F.col("control_type").isin(*TRANSACTION_MARKERS)
    ).select("cluster", "partition", "producer_id", "offset", "control_type")


def markers_for(offset_commits: DataFrame, markers: DataFrame) -> DataFrame:
    """Only the markers of producers that wrote transactional commits in the same partition.

    (`run_decode` also prunes `markers` to offsets past the earliest transactional commit, so that the
    archive's older files are skipped by their statistics.)"""
    producers = (
        offset_commits.where(F.col("is_transactional"))
        .select("cluster", "partition", "producer_id")
        .distinct()
    )
    return markers.join(producers, on=["cluster", "partition", "producer_id"], how="left_semi")


def resolve_transactions(offset_commits: DataFrame, markers: DataFrame) -> DataFrame:
    """Set transaction_outcome/transaction_marker_offset of transactional commits from the markers.

    Kafka's loader (§5.6): offsets written in a transaction are pending until a control marker of the
    same producer id follows them in the partition; COMMIT applies them, ABORT discards them. So the
    outcome of a transactional record is the first COMMIT/ABORT marker of its producer at a higher
    offset in its partition; with none archived yet it is still open. Non-transactional commits keep a
    null outcome.

    A transactional commit with no producer id was read from Kafka, where only the records of aborted
    transactions are flagged transactional (see `jobs.ingest.read_kafka`): its outcome is "aborted".
    """
    columns = OFFSET_COMMITS.column_names
    read_live_aborted = offset_commits.where(F.col("is_transactional") & F.col("producer_id").isNull()).withColumn(
        "transaction_outcome", F.lit(TXN_ABORTED)
    )
    transactional = offset_commits.where(F.col("is_transactional") & F.col("producer_id").isNotNull())
    others = offset_commits.where(~F.col("is_transactional") | F.col("is_transactional").isNull())
    marker_rows = markers.select(
        *[
            F.col(c) if c in ("cluster", "partition", "producer_id", "offset") else F.lit(None).alias(c)
            for c in columns
        ],
        F.col("control_type").alias("_marker"),
    )
    events = transactional.select(*columns, F.lit(None).cast("string").alias("_marker")).unionByName(
        marker_rows, allowMissingColumns=False
    )
    following = (
        Window.partitionBy("cluster", "partition", "producer_id")
        .orderBy("offset")
        .rowsBetween(1, Window.unboundedFollowing)
    )
    next_marker = F.first(F.col("_marker"), ignorenulls=True).over(following)
    next_marker_offset = F.first(
        F.when(F.col("_marker").isNotNull(), F.col("offset")), ignorenulls=True
    ).over(following)
    resolved = (
        events.withColumn("_next_marker", next_marker)
        .withColumn("_next_marker_offset", next_marker_offset)
        .where(F.col("_marker").isNull())
        .withColumn(
            "transaction_outcome",
            F.when(F.col("_next_marker") == "COMMIT", F.lit(TXN_COMMITTED))
            .when(F.col("_next_marker") == "ABORT", F.lit(TXN_ABORTED))
            .otherwise(F.lit(TXN_OPEN)),
        )
        .withColumn("transaction_marker_offset", F.col("_next_marker_offset"))
        .select(*columns)
    )
    return resolved.unionByName(others.select(*columns)).unionByName(read_live_aborted.select(*columns)).select(
        *columns
    )


def group_metadata_rows(decoded: DataFrame) -> DataFrame:
    """Decoded GroupMetadata records -> group_metadata rows."""
    records = _decoded_ok(decoded).where(F.col("record_type") == GROUP_METADATA_TYPE)
    members = F.col("group_metadata.members")
    return records.select(
        "cluster",
        "partition",
        "offset",
        F.col("timestamp").alias("record_timestamp"),
        "group_id",
        "value_version",
        "is_tombstone",
        F.col("group_metadata.protocol_type").alias("protocol_type"),
        F.col("group_metadata.generation").alias("generation"),
        F.col("group_metadata.protocol").alias("protocol"),
        F.col("group_metadata.leader").alias("leader"),
        _millis_to_timestamp("group_metadata.current_state_timestamp").alias("current_state_timestamp"),
        F.when(members.isNotNull(), F.size(members)).cast("int").alias("member_count"),
        F.when(members.isNotNull(), F.array_sort(F.transform(members, lambda m: m["member_id"]))).alias(
            "member_ids"
        ),
    )


def group_member_rows(decoded: DataFrame) -> DataFrame:
    """Decoded GroupMetadata records -> one group_members row per (group, generation, member).

    A generation can be written more than once: Kafka rewrites GroupMetadata when a static member is
    replaced (same generation, new member id) or a member's metadata changes. The members of a
    generation are those of its latest record (all records of a group share one partition, so the
    offset orders them); members only in an earlier record of the same generation are not kept.
    """
    records = _decoded_ok(decoded).where(
        (F.col("record_type") == GROUP_METADATA_TYPE)
        & ~F.col("is_tombstone")
        & F.col("group_metadata").isNotNull()
    )
    latest_first = Window.partitionBy("cluster", "group_id", F.col("group_metadata.generation")).orderBy(
        F.col("partition").desc(), F.col("offset").desc()
    )
    latest_records = records.withColumn("_rank", F.row_number().over(latest_first)).where(F.col("_rank") == 1)
    latest = latest_records.select(
        "cluster",
        "group_id",
        F.col("group_metadata.generation").alias("generation"),
        F.col("group_metadata.protocol_type").alias("protocol_type"),
        F.col("group_metadata.protocol").alias("protocol"),
        F.col("group_metadata.leader").alias("leader"),
        F.col("partition").alias("source_partition"),
        F.col("offset").alias("source_offset"),
        F.col("timestamp").alias("record_timestamp"),
        F.explode("group_metadata.members").alias("m"),
    )
    return latest.select(
        "cluster",
        "group_id",
        "generation",
        F.col("m.member_id").alias("member_id"),
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
        "record_timestamp",
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
        F.col("record_type").isNull() | ~F.col("record_type").isin(*OFFSET_COMMIT_TYPES, GROUP_METADATA_TYPE)
    )
    return records.select(
        "cluster",
        "partition",
        "offset",
        F.col("timestamp").alias("record_timestamp"),
        "record_type",
        "record_kind",
        _group_family(F.col("record_kind")).alias("group_family"),
        "group_id",
        "member_id",
        "value_version",
        "is_tombstone",
        "record_json",
        "key",
        "value",
    )


def decode_error_rows(decoded: DataFrame) -> DataFrame:
    """Records that did not decode -> decode_errors rows (bytes kept)."""
    return decoded.where(F.col("error").isNotNull()).select(
        "cluster",
        "partition",
        "offset",
        F.col("timestamp").alias("record_timestamp"),
        "record_type",
        "record_kind",
        "group_id",
        "error",
        "error_field_path",
        "error_position",
        "key",
        "value",
    )


def decode_coverage_rows(decoded: DataFrame, control_records: DataFrame, run_id: str) -> DataFrame:
    """Counts per (cluster, record type, kind, value version, status) of what this run decoded."""
    status = (
        F.when(F.col("error").isNotNull(), F.lit("error"))
        .when(F.col("record_kind") == "unknown", F.lit("unknown_type"))
        .when(F.col("is_tombstone"), F.lit("tombstone"))
        .otherwise(F.lit("decoded"))
    )
    data = decoded.select("cluster", "record_type", "record_kind", "value_version", status.alias("status"))
    controls = control_records.select(
        "cluster",
        F.lit(None).cast("short").alias("record_type"),
        F.lit("control").alias("record_kind"),
        F.lit(None).cast("short").alias("value_version"),
        F.lit("control").alias("status"),
    )
    counts = (
        data.unionByName(controls)
        .groupBy("cluster", "record_type", "record_kind", "value_version", "status")
        .agg(F.count(F.lit(1)).alias("records"))
    )
    return counts.select(
        F.lit(run_id).alias("run_id"), "cluster", "record_type", "record_kind", "value_version", "status", "records"
    )


# -- the stage ----------------------------------------------------------------------------------------


def _earliest_transactional(offset_commits: DataFrame) -> int:
    """Lowest offset of a transactional commit (one small aggregate); markers before it are irrelevant."""
    row = offset_commits.where(F.col("is_transactional")).agg(F.min("offset").alias("m")).first()
    return int(row["m"]) if row is not None and row["m"] is not None else (1 << 62)


@dataclass(frozen=True)
class DecodeResult:
    raw_version_decoded: int
    records_decoded: int
    decode_errors: int
    coverage: list[tuple[str, int | None, str | None, int | None, str, int]]


def run_decode(
    tables: Tables, run_id: str, after_raw_version: int, batch_size: int
) -> DecodeResult:
    """Decode the raw_offsets rows appended after `after_raw_version` and write the silver tables."""
    up_to = tables.version(RAW_OFFSETS)
    if up_to <= after_raw_version:
        return DecodeResult(after_raw_version, 0, 0, [])
    new_raw = tables.changes(RAW_OFFSETS, after_raw_version, up_to)
    data_records = new_raw.where(~F.col("is_control"))
    control_records = new_raw.where(F.col("is_control"))

    decoded = decode_records(data_records, batch_size).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        coverage = decode_coverage_rows(decoded, control_records, run_id).persist(StorageLevel.MEMORY_AND_DISK)
        # One small action: the coverage counts drive the run summary and tell which tables have work.
        with step("decode new raw_offsets rows (coordinator_core.decode_batch)"):
            coverage_rows = [
                (r["cluster"], r["record_type"], r["record_kind"], r["value_version"], r["status"], r["records"])
                for r in coverage.collect()
            ]
        records_decoded = sum(r[5] for r in coverage_rows if r[4] != "control")
        errors = sum(r[5] for r in coverage_rows if r[4] == "error")

        # A table with no new rows gets no commit (each Delta commit costs seconds on a small run).
        present = {(r[1], r[4]) for r in coverage_rows}
        has_commits = any(t in OFFSET_COMMIT_TYPES and s != "error" for t, s in present)
        has_group_metadata = any(t == GROUP_METADATA_TYPE and s != "error" for t, s in present)
        has_other = any(
            s in ("decoded", "tombstone", "unknown_type") and (t is None or t > GROUP_METADATA_TYPE)
            for t, s in present
        )
        has_controls = any(s == "control" for _, s in present)

        # Transactions: new commits resolved against every archived marker of their partitions, and
        # commits still open from earlier runs re-resolved now that new markers may have arrived.
        archive = tables.read(RAW_OFFSETS, version=up_to)
        commits_before = tables.version(OFFSET_COMMITS)
        if has_commits:
            new_commits = offset_commit_rows(decoded)
            markers = transaction_markers(archive.where(F.col("offset") > _earliest_transactional(new_commits)))
            with step("offset_commits"):
                tables.append(OFFSET_COMMITS, resolve_transactions(new_commits, markers_for(new_commits, markers)))
        # Only commits left open by earlier runs can be resolved by this run's markers (this run's own
        # commits were resolved above against every marker up to now).
        previously_open = tables.read(OFFSET_COMMITS, version=commits_before).where(
            F.col("transaction_outcome") == TXN_OPEN
        )
        if has_controls and previously_open.limit(1).count() > 0:
            with step("re-resolve open transactions"):
                still_open = previously_open
                markers = transaction_markers(archive.where(F.col("offset") > _earliest_transactional(still_open)))
                now_resolved = resolve_transactions(still_open, markers_for(still_open, markers)).where(
                    F.col("transaction_outcome") != TXN_OPEN
                )
                tables.update_columns(
                    OFFSET_COMMITS,
                    now_resolved,
                    ["transaction_outcome", "transaction_marker_offset"],
                    only_if=f"t.transaction_outcome = '{TXN_OPEN}'",
                    target_filter=f"t.transaction_outcome = '{TXN_OPEN}'",
                )
        if has_group_metadata:
            with step("group_metadata, group_members"):
                tables.append(GROUP_METADATA, group_metadata_rows(decoded))
                tables.replace_generations(GROUP_MEMBERS, group_member_rows(decoded))
        if has_other:
            with step("consumer_group_records"):
                tables.append(CONSUMER_GROUP_RECORDS, consumer_group_record_rows(decoded))
        if errors:
            with step("decode_errors"):
                tables.append(DECODE_ERRORS, decode_error_rows(decoded))
        tables.append(DECODE_COVERAGE, coverage)
        coverage.unpersist()
    finally:
        decoded.unpersist()
    return DecodeResult(up_to, records_decoded, errors, coverage_rows)
