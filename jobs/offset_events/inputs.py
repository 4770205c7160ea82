"""The offset-event fold's inputs: a run's new silver rows as fold records (OFFSETS_RECORD), the deletion
and expiry log lines that name a group, and the cluster's group-less expiry sweep lines."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from coordinator_core.history.consumer import CONSUMER_GROUP_KINDS
from coordinator_core.logs import events as ev
from jobs.common.delta_io import Tables
from jobs.offset_events.kinds import (
    _RECORD_COLUMNS,
    CLASSIC_TOMBSTONE,
    COMMIT,
    CONSUMER_RECORD,
    CONSUMER_RECORD_TOMBSTONE,
    CONSUMER_TOMBSTONE,
    EPOCH,
    EVIDENCE_TYPES,
    GENERATION,
    LOG_MATCH_MS,
    MEMBER_JOINED,
    MEMBER_LEFT,
    OFFSET_TOMBSTONE,
    OTHER,
    PLACEHOLDER,
)
from schemas import CONSUMER_GROUP_RECORDS, GROUP_METADATA, OFFSET_COMMITS
from schemas.gold import TableSpec
from schemas.logs import COORDINATOR_EVENTS
from schemas.state import OFFSETS_EVENT, OFFSETS_RECORD


def _millis(ts: Column) -> Column:
    """Epoch milliseconds of a record timestamp; null when unknown (the oracle's `record_time` is None for
    a missing or negative timestamp)."""
    millis = F.unix_millis(ts)
    return F.when(millis >= 0, millis)


def _record(cluster: Column | str = "cluster", group_id: Column | str = "group_id", **fields: Column) -> list[Column]:
    """The columns of a fold record (cluster, group_id, OFFSETS_RECORD), null where `fields` gives none."""
    types = {f.name: f.dataType for f in OFFSETS_RECORD.fields}
    return [F.col(cluster) if isinstance(cluster, str) else cluster.alias("cluster"),
            F.col(group_id) if isinstance(group_id, str) else group_id.alias("group_id"),
            *[fields.get(name, F.lit(None)).cast(types[name]).alias(name) for name in _RECORD_COLUMNS]]


def commit_records(offset_commits: DataFrame) -> DataFrame:
    """offset_commits rows -> fold records."""
    return offset_commits.where(F.col("group_id").isNotNull()).select(*_record(
        record_partition=F.col("partition"), record_offset=F.col("offset"),
        timestamp_ms=_millis(F.col("record_timestamp")),
        kind=F.when(F.col("is_tombstone"), F.lit(OFFSET_TOMBSTONE)).otherwise(F.lit(COMMIT)),
        transaction_outcome=F.col("transaction_outcome"), topic=F.col("topic"),
        partition=F.col("topic_partition"), offset=F.col("committed_offset"),
        expire_ms=F.unix_millis("expire_timestamp"), metadata=F.col("metadata")))


def group_metadata_records(group_metadata: DataFrame) -> DataFrame:
    """group_metadata rows -> fold records (a placeholder is the 3.7+ record of a group just created)."""
    placeholder = ((F.col("generation") == 0) & (F.coalesce(F.col("protocol_type"), F.lit("")) == "")
                   & (F.coalesce(F.col("member_count"), F.lit(0)) == 0))
    kind = (F.when(F.col("is_tombstone"), F.lit(CLASSIC_TOMBSTONE)).when(placeholder, F.lit(PLACEHOLDER))
            .otherwise(F.lit(GENERATION)))
    return group_metadata.where(F.col("group_id").isNotNull()).select(*_record(
        record_partition=F.col("partition"), record_offset=F.col("offset"),
        timestamp_ms=_millis(F.col("record_timestamp")), kind=kind, generation=F.col("generation"),
        member_count=F.col("member_count")))


def consumer_group_fold_records(consumer_group_records: DataFrame) -> DataFrame:
    """consumer_group_records rows (those with a group) -> fold records; the group epoch is read from the
    ConsumerGroupMetadata value."""
    record_kind, tombstone = F.col("record_kind"), F.col("is_tombstone")
    others = sorted(CONSUMER_GROUP_KINDS - {"consumer_group_metadata", "consumer_group_member_metadata"})
    kind = (F.when(record_kind == "consumer_group_metadata",
                   F.when(tombstone, F.lit(CONSUMER_TOMBSTONE)).otherwise(F.lit(EPOCH)))
            .when(record_kind == "consumer_group_member_metadata",
                  F.when(tombstone, F.lit(MEMBER_LEFT)).otherwise(F.lit(MEMBER_JOINED)))
            .when(record_kind.isin(*others),
                  F.when(tombstone, F.lit(CONSUMER_RECORD_TOMBSTONE)).otherwise(F.lit(CONSUMER_RECORD)))
            .otherwise(F.lit(OTHER)))
    epoch = F.when((record_kind == "consumer_group_metadata") & ~tombstone,
                   F.get_json_object("record_json", "$.value.epoch"))
    return consumer_group_records.where(F.col("group_id").isNotNull()).select(*_record(
        record_partition=F.col("partition"), record_offset=F.col("offset"),
        timestamp_ms=_millis(F.col("record_timestamp")), kind=kind, generation=epoch,
        member_id=F.when(record_kind == "consumer_group_member_metadata", F.col("member_id"))))


def _evidence_columns() -> list[Column | str]:
    source = F.coalesce(F.when(F.length("path") > 0, F.col("path")), F.col("log_source"))
    return ["file_id", "line_number", "event_type", F.col("timestamp").alias("at"), "member_id", "cause_class",
            "reason", source.alias("source"), "message"]


def evidence_events(coordinator_events: DataFrame) -> DataFrame:
    """The deletion and expiry log lines that name a group. The job gives each group the events whose
    group_id is the group's; the source is the file path, else the log source."""
    return (coordinator_events
            .where(F.col("group_id").isNotNull() & F.col("timestamp").isNotNull()
                   & F.col("event_type").isin(*EVIDENCE_TYPES))
            .select("cluster", "group_id", *_evidence_columns()))


def sweep_events(coordinator_events: DataFrame) -> DataFrame:
    """The coordinator's group-less offset-expiry sweep lines that removed something (3.x "Removed N expired
    offsets", 4.x "Generated N tombstone records while cleaning up group metadata", logged after every check,
    N = 0 too): evidence for any tombstone of the cluster within 5 s (`offsets._is_sweep`)."""
    return (coordinator_events
            .where(F.col("group_id").isNull() & F.col("timestamp").isNotNull()
                   & (F.col("event_type") == ev.OFFSETS_EXPIRED) & (F.col("offsets_removed") > 0))
            .select("cluster", *_evidence_columns()))


@dataclass(frozen=True)
class RunInputs:
    """The run's new rows: fold records (new ones, and commits of carried tails whose transaction was
    decided since), deletion/expiry log lines naming a group, and group-less expiry sweep lines."""

    records: DataFrame
    outcome_updates: DataFrame
    events: DataFrame
    sweeps: DataFrame


def _empty(tables: Tables, schema: T.StructType) -> DataFrame:
    return tables.spark.createDataFrame([], schema)


def _appended(tables: Tables, spec: TableSpec, after: int, up_to: int) -> DataFrame | None:
    """Rows appended in versions (after, up_to]; None when there are none."""
    if up_to <= max(after, 0):
        return None
    return tables.changes(spec, after, up_to)


def read_run_inputs(tables: Tables, since: Mapping[str, int] | None, versions: Mapping[str, int]) -> RunInputs:
    """The run's new rows up to `versions` (table name -> version): everything when `since` is None.

    offset_commits is updated in place when a transaction's marker arrives: its change feed also gives
    update postimages. A commit inserted and decided in the same range keeps its last outcome; a decided
    commit inserted by an earlier run is an outcome update (it matters only in a carried tail)."""
    def after(spec: TableSpec) -> int:
        return 0 if since is None else int(since.get(spec.name, 0))

    record_schema = T.StructType([T.StructField("cluster", T.StringType()),
                                  T.StructField("group_id", T.StringType()), *OFFSETS_RECORD.fields])
    parts: list[DataFrame] = []
    updates = _empty(tables, T.StructType([T.StructField(n, t) for n, t in (
        ("cluster", T.StringType()), ("record_partition", T.IntegerType()), ("record_offset", T.LongType()),
        ("transaction_outcome", T.StringType()))]))
    start, end = after(OFFSET_COMMITS), versions[OFFSET_COMMITS.name]
    if end > max(start, 0):
        if start <= 0:
            parts.append(commit_records(tables.read(OFFSET_COMMITS, version=end)))
        else:
            feed = (tables.spark.read.format("delta").option("readChangeFeed", "true")
                    .option("startingVersion", start + 1).option("endingVersion", end)
                    .load(tables.path(OFFSET_COMMITS)))
            inserted = feed.where(F.col("_change_type") == "insert").drop("_change_type", "_commit_timestamp")
            decided = (feed.where(F.col("_change_type") == "update_postimage")
                       .groupBy("cluster", "partition", "offset")
                       .agg(F.max_by("transaction_outcome", "_commit_version").alias("_decided"),
                            F.max("_commit_version").alias("_decided_version")))
            # Decided after it was inserted (in this range): the decision wins. (No broadcast hint: a night
            # of transactional producers decides as many commits as it writes.)
            latest = (inserted.join(decided, on=["cluster", "partition", "offset"], how="left")
                      .withColumn("transaction_outcome", F.when(
                          F.col("_decided_version") > F.col("_commit_version"), F.col("_decided"))
                          .otherwise(F.col("transaction_outcome"))))
            parts.append(commit_records(latest))
            updates = (decided.join(inserted.select("cluster", "partition", "offset"),
                                    on=["cluster", "partition", "offset"], how="left_anti")
                       .select("cluster", F.col("partition").alias("record_partition"),
                               F.col("offset").alias("record_offset"),
                               F.col("_decided").alias("transaction_outcome")))
    metadata = _appended(tables, GROUP_METADATA, after(GROUP_METADATA), versions[GROUP_METADATA.name])
    if metadata is not None:
        parts.append(group_metadata_records(metadata))
    consumer = _appended(tables, CONSUMER_GROUP_RECORDS, after(CONSUMER_GROUP_RECORDS),
                         versions[CONSUMER_GROUP_RECORDS.name])
    if consumer is not None:
        parts.append(consumer_group_fold_records(consumer))
    records = _empty(tables, record_schema)
    for part in parts:
        records = records.unionByName(part)
    events = _appended(tables, COORDINATOR_EVENTS, after(COORDINATOR_EVENTS), versions[COORDINATOR_EVENTS.name])
    event_schema = T.StructType([T.StructField("cluster", T.StringType()),
                                 T.StructField("group_id", T.StringType()), *OFFSETS_EVENT.fields])
    sweep_schema = T.StructType([T.StructField("cluster", T.StringType()), *OFFSETS_EVENT.fields])
    return RunInputs(records, updates,
                     evidence_events(events) if events is not None else _empty(tables, event_schema),
                     sweep_events(events) if events is not None else _empty(tables, sweep_schema))


def sweeps_near(tables: Tables, version: int, tombstones: DataFrame) -> DataFrame:
    """The sweep lines (`sweep_events`) of coordinator_events at `version` that may lie within 5 s of
    `tombstones`: read by cluster (the table's partitions) and by each cluster's time span (file
    statistics), as a sweep line may be archived before, with or after its tombstones."""
    spans = (tombstones.where(F.col("timestamp_ms").isNotNull()).groupBy("cluster")
             .agg(F.min("timestamp_ms").alias("lo"), F.max("timestamp_ms").alias("hi")).collect())
    schema = T.StructType([T.StructField("cluster", T.StringType()), *OFFSETS_EVENT.fields])
    if not spans or version < 0:
        return _empty(tables, schema)
    condition = None
    for span in spans:
        term = ((F.col("cluster") == span["cluster"])
                & (F.col("timestamp") >= F.timestamp_millis(F.lit(span["lo"] - LOG_MATCH_MS)))
                & (F.col("timestamp") <= F.timestamp_millis(F.lit(span["hi"] + LOG_MATCH_MS))))
        condition = term if condition is None else condition | term
    return sweep_events(tables.read(COORDINATOR_EVENTS, version=version).where(condition))
