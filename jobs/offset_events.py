"""Gold table `offset_events` as an incremental fold over each run's new rows, computed column-wise.

`coordinator_core.history.offsets.offset_history` walks one group's whole archive commit by commit: it is
the oracle, and this stage must leave exactly its rows, however the archive was cut into runs. Here a run
reads only what is new (the silver tables' and coordinator_events' version ranges since the last run) and
the carried state of the groups that it touches (group_state column `offsets`, typed: `OFFSETS_STATE`), and
the walk becomes window functions over the night's rows:

* The group's *context* at a commit (generation in force, member count, whether it ever stored one) is the
  last context record before it: GroupMetadata, a KIP-848 epoch (its member count is a running sum of
  member joins and leaves), or a group tombstone that deletes the group. A context record that changes
  (generation, members), or deletes the group, ends every stall run: counting them gives each commit a
  *segment* number.
* Per partition, in log order, the previous commit (`lag`) gives rewinds and the delta of commits by
  non-members; a stall run is a stretch of commits of one offset inside one segment, numbered by a running
  sum of run starts and aggregated per run.
* Tombstones are classified by joining the deletion/expiry log lines within 5 s and the group's own
  tombstones within 1 s.
* The carried state enters as rows before the night's: one per partition (its last commit, the open run),
  and the group's context at the checkpoint.

What a later record or log line can still change is kept open: a stall run still going on (its row is
replaced when the run grows), a tombstone whose deleting log line or group tombstone may come later (its
inputs are carried and the row re-classified, within `reopen_hours` of the group's newest record or line),
and records whose meaning is not settled yet: a commit of an open transaction (an abort makes it vanish)
and a group tombstone no later record has shown to be a protocol conversion or a deletion. The group's
*checkpoint* is the first unsettled record: the state is the fold up to it, the records from it on are
carried as the tail and read again by the next run, and the rows they produced are provisional (replaced,
or withdrawn when the next run no longer produces them).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from coordinator_core.history.consumer import CONSUMER_GROUP_KINDS
from coordinator_core.history.inputs import ABORTED
from coordinator_core.history.model import DELETED, EXPIRED, GROUP_DELETED, NON_MEMBER_COMMIT, REWIND, STALLED
from coordinator_core.history.offsets import EXPLAIN_GROUP_SWEPT
from coordinator_core.logs import events as ev
from jobs.common.delta_io import Tables
from jobs.common.group_state import clear_state, merge_state
from jobs.common.progress import log
from schemas import CONSUMER_GROUP_RECORDS, GROUP_METADATA, OFFSET_COMMITS
from schemas.gold import OFFSET_EVENTS, TableSpec
from schemas.logs import COORDINATOR_EVENTS
from schemas.state import (
    GROUP_STATE,
    OFFSETS_EVENT,
    OFFSETS_PARTITION,
    OFFSETS_RECORD,
    OFFSETS_ROW_KEY,
    OFFSETS_STATE,
    OFFSETS_TOMBSTONE,
)

GROUP_KEY = ["cluster", "group_id"]
PARTITION_KEY = [*GROUP_KEY, "topic", "partition"]
STATE_VERSION = 1
TRANSACTION_OPEN = "open"

#: Matching windows of the oracle (`coordinator_core.history.offsets`): a deletion/expiry log line within
#: 5 s of a tombstone explains it, the group's own tombstone within 1 s means "deleted with the group".
LOG_MATCH_MS = 5_000
TOMBSTONE_MATCH_MS = 1_000

# Record kinds, as the fold reads them (OFFSETS_RECORD.kind).
COMMIT = "commit"
OFFSET_TOMBSTONE = "offset_tombstone"
GENERATION = "generation"                # GroupMetadata of a generation
PLACEHOLDER = "placeholder"              # 3.7+ GroupMetadata of a newly created group: no generation
CLASSIC_TOMBSTONE = "classic_tombstone"  # GroupMetadata tombstone
EPOCH = "epoch"                          # KIP-848 ConsumerGroupMetadata (group epoch)
CONSUMER_TOMBSTONE = "consumer_tombstone"
MEMBER_JOINED = "member_joined"          # KIP-848 member metadata
MEMBER_LEFT = "member_left"
CONSUMER_RECORD = "consumer_record"      # any other KIP-848 record
CONSUMER_RECORD_TOMBSTONE = "consumer_record_tombstone"
OTHER = "other"                          # share/streams/unknown records of the group

COMMIT_KINDS = (COMMIT, OFFSET_TOMBSTONE)
GROUP_TOMBSTONES = (CLASSIC_TOMBSTONE, CONSUMER_TOMBSTONE)
CONTEXT_KINDS = (GENERATION, EPOCH)
#: The other protocol's live records, which make a classic / KIP-848 group tombstone a protocol conversion.
CONSUMER_LIVE = (EPOCH, MEMBER_JOINED, CONSUMER_RECORD)
CLASSIC_LIVE = (GENERATION, PLACEHOLDER)
GROUP_LEVEL = (GENERATION, PLACEHOLDER, CLASSIC_TOMBSTONE, EPOCH, CONSUMER_TOMBSTONE, MEMBER_JOINED, MEMBER_LEFT,
               CONSUMER_RECORD, CONSUMER_RECORD_TOMBSTONE)

EVIDENCE_TYPES = (ev.OFFSETS_DELETED, ev.GROUPS_DELETED, ev.GROUP_DEAD, ev.OFFSETS_EXPIRED)

#: CGH_TRACE_OFFSET_EVENTS=1 logs each step's rows and seconds.
_TRACE = os.environ.get("CGH_TRACE_OFFSET_EVENTS") == "1"

_LONG_MIN = -(2**63)
_LONG_MAX = 2**63 - 1
_BEFORE_ALL = -1  # record offset of the carried rows: before every record

_RECORD_COLUMNS = [f.name for f in OFFSETS_RECORD.fields]
_EVENT_COLUMNS = [f.name for f in OFFSETS_EVENT.fields]
_EVIDENCE = OFFSET_EVENTS.schema["evidence"].dataType


@dataclass(frozen=True)
class OffsetEventsResult:
    """What a run did: groups continued, offset_events rows written (inserted or replaced) and withdrawn,
    and what it read: the run's new silver rows and log lines, the state rows of the groups it touched,
    and the carried records it read again (the tails)."""

    groups: int
    rows_written: int
    rows_deleted: int
    new_records: int
    new_events: int
    state_rows: int
    tail_records: int


# ----------------------------------------------------------------------------------------------
# Inputs: the run's new rows, in the fold's shape


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


# ----------------------------------------------------------------------------------------------
# The fold, column-wise


def _by_position(*extra: str) -> Window:
    return Window.partitionBy(*GROUP_KEY, *extra).orderBy("record_offset", "record_partition")


def _running(window: Window) -> Window:
    return window.rowsBetween(Window.unboundedPreceding, Window.currentRow)


def _horizon_kept(ts: Column, watermark: Column, horizon_ms: int, margin_ms: int = 0) -> Column:
    """Still within the reopen horizon of the group's newest time (a time unknown is kept only when the
    caller says so)."""
    return watermark.isNull() | (ts >= watermark - F.lit(horizon_ms + margin_ms))


def _conversions(records: DataFrame, group_records: DataFrame, held: DataFrame) -> DataFrame:
    """Each group tombstone of `group_records`: converted (a protocol conversion, not a deletion) and
    resolved (whether a later record settled the look-ahead).

    The oracle (`offsets._converted`) calls a classic tombstone a conversion when the first later record
    that is GroupMetadata or a live KIP-848 record is the latter (and vice versa for a KIP-848 tombstone),
    or when a live record of the other protocol lies just before it: walking back over every record of the
    group while each is at most 1 s older. That walk may reach past the checkpoint: there the carried
    `lookback_*_ms` (the newest "oldest time on the way back" of such a record) answers it.
    """
    kind = F.col("kind")
    ahead = _by_position().rowsBetween(1, Window.unboundedFollowing)
    classic_next = (F.when(kind.isin(GENERATION, PLACEHOLDER, CLASSIC_TOMBSTONE), F.lit("same"))
                    .when(kind.isin(*CONSUMER_LIVE), F.lit("other")))
    consumer_next = (F.when(kind.isin(EPOCH, CONSUMER_TOMBSTONE), F.lit("same"))
                     .when(kind.isin(*CLASSIC_LIVE), F.lit("other")))
    tombstones = (group_records
                  .withColumn("_classic_next", F.first(classic_next, ignorenulls=True).over(ahead))
                  .withColumn("_consumer_next", F.first(consumer_next, ignorenulls=True).over(ahead))
                  .where(kind.isin(*GROUP_TOMBSTONES))
                  .withColumn("_next", F.when(kind == CLASSIC_TOMBSTONE, F.col("_classic_next"))
                              .otherwise(F.col("_consumer_next")))
                  .select(*GROUP_KEY, "record_partition", "record_offset", "timestamp_ms", "kind", "_next"))
    # The walk back: the nearest earlier record older than 1 s (or without a time) stops it.
    earlier = records.select(*GROUP_KEY, F.col("record_offset").alias("_at"),
                             F.col("timestamp_ms").alias("_ts"), F.col("kind").alias("_kind"))
    walk = (tombstones.where(F.col("timestamp_ms").isNotNull()).alias("t")
            .join(earlier.alias("e"), on=GROUP_KEY, how="inner")
            .where(F.col("_at") < F.col("record_offset")))
    stops = walk.where(F.col("_ts").isNull() | (F.col("_ts") < F.col("timestamp_ms") - TOMBSTONE_MATCH_MS))
    stop = stops.groupBy(*GROUP_KEY, "record_offset").agg(F.max("_at").alias("_stop"))
    other_live = F.when(F.col("kind") == CLASSIC_TOMBSTONE, F.col("_kind").isin(*CONSUMER_LIVE)).otherwise(
        F.col("_kind").isin(*CLASSIC_LIVE))
    seen = (walk.join(stop, on=[*GROUP_KEY, "record_offset"], how="left")
            .where((F.col("_stop").isNull() | (F.col("_at") > F.col("_stop"))) & other_live)
            .select(*GROUP_KEY, "record_offset").distinct().withColumn("_seen", F.lit(True)))
    carried = held.select(*GROUP_KEY, F.col("offsets.lookback_classic_ms").alias("_lb_classic"),
                          F.col("offsets.lookback_consumer_ms").alias("_lb_consumer"))
    carried_seen = (F.col("_stop").isNull() & F.col("timestamp_ms").isNotNull()
                    & (F.when(F.col("kind") == CLASSIC_TOMBSTONE, F.col("_lb_classic"))
                       .otherwise(F.col("_lb_consumer")) >= F.col("timestamp_ms") - TOMBSTONE_MATCH_MS))
    return (tombstones
            .join(stop, on=[*GROUP_KEY, "record_offset"], how="left")
            .join(seen, on=[*GROUP_KEY, "record_offset"], how="left")
            .join(carried, on=GROUP_KEY, how="left")
            .select(*GROUP_KEY, "record_partition", "record_offset",
                    (F.coalesce(F.col("_next") == "other", F.lit(False)) | F.coalesce(F.col("_seen"), F.lit(False))
                     | F.coalesce(carried_seen, F.lit(False))).alias("converted"),
                    F.col("_next").isNotNull().alias("resolved")))


def _context_records(group_records: DataFrame, conversions: DataFrame, held: DataFrame) -> DataFrame:
    """The records that set the group's context, in log order, with the context they set and its segment.

    GroupMetadata sets (generation, member count); a KIP-848 epoch sets (epoch, members), the members being
    the carried member set plus the running sum of joins and leaves; a group tombstone that is not a
    conversion deletes the group (no generation, no members). A record that changes (generation, members)
    or deletes the group closes every stall run: `segment` counts them (0 at the checkpoint).
    """
    carried = held.select(*GROUP_KEY, F.col("offsets.consumer_members").alias("_carried_members"),
                          F.col("offsets.generation").alias("_carried_generation"),
                          F.col("offsets.members").alias("_carried_members_count"))
    members = group_records.where(F.col("kind").isin(MEMBER_JOINED, MEMBER_LEFT)).join(carried, on=GROUP_KEY,
                                                                                         how="left")
    joined = (F.col("kind") == MEMBER_JOINED).cast("int")
    was_in = F.coalesce(F.lag(joined).over(_by_position("member_id")),
                        F.coalesce(F.array_contains("_carried_members", F.col("member_id")), F.lit(False))
                        .cast("int"))
    deltas = members.select(*GROUP_KEY, "record_partition", "record_offset", (joined - was_in).alias("_delta"))
    ordered = (group_records
               .join(deltas, on=[*GROUP_KEY, "record_partition", "record_offset"], how="left")
               .join(conversions.select(*GROUP_KEY, "record_partition", "record_offset", "converted"),
                     on=[*GROUP_KEY, "record_partition", "record_offset"], how="left")
               .join(carried, on=GROUP_KEY, how="left")
               .withColumn("_count", F.when(F.col("_carried_members").isNull(), F.lit(0))
                           .otherwise(F.size("_carried_members")).cast("long")
                           + F.sum(F.coalesce(F.col("_delta"), F.lit(0))).over(_running(_by_position()))))
    deleting = F.col("kind").isin(*GROUP_TOMBSTONES) & ~F.coalesce(F.col("converted"), F.lit(False))
    context = ordered.where(F.col("kind").isin(*CONTEXT_KINDS) | deleting).select(
        *GROUP_KEY, "record_partition", "record_offset", "timestamp_ms", "kind",
        F.when(F.col("kind").isin(*CONTEXT_KINDS), F.col("generation")).alias("generation"),
        F.when(F.col("kind") == GENERATION, F.col("member_count"))
        .when(F.col("kind") == EPOCH, F.col("_count")).alias("members"),
        F.col("kind").isin(*CONTEXT_KINDS).alias("has_generations"),
        "_carried_generation", "_carried_members_count")
    first = F.row_number().over(_by_position()) == 1
    previous_generation = F.when(first, F.col("_carried_generation")).otherwise(
        F.lag("generation").over(_by_position()))
    previous_members = F.when(first, F.col("_carried_members_count")).otherwise(F.lag("members").over(_by_position()))
    context = (context.withColumn("previous_generation", previous_generation)
               .withColumn("_closes", ~F.col("has_generations")
                           | ~(F.col("generation").eqNullSafe(F.col("previous_generation"))
                               & F.col("members").eqNullSafe(previous_members))))
    return (context.withColumn("segment", F.sum(F.col("_closes").cast("long")).over(_running(_by_position())))
            .drop("_carried_generation", "_carried_members_count", "_closes"))


def _checkpoints(records: DataFrame, conversions: DataFrame, held: DataFrame, new_events: DataFrame,
                 horizon_ms: int) -> DataFrame:
    """Per group: the new watermark and the checkpoint (the first record not settled: a commit of a
    transaction still open, or a group tombstone nothing has resolved yet; null when all are settled).
    Records older than the reopen horizon count as settled: the open transaction as committed, the
    tombstone as a deletion."""
    watermark = (records.select(*GROUP_KEY, F.col("timestamp_ms").alias("_t"))
                 .unionByName(new_events.select(*GROUP_KEY, F.unix_millis("at").alias("_t")))
                 .unionByName(held.select(*GROUP_KEY, F.col("offsets.watermark_ms").alias("_t")))
                 .groupBy(*GROUP_KEY).agg(F.max("_t").alias("watermark_ms")))
    open_commits = records.where(F.col("kind").isin(*COMMIT_KINDS)
                                 & (F.col("transaction_outcome") == TRANSACTION_OPEN))
    unresolved = conversions.where(~F.col("converted") & ~F.col("resolved")).join(
        records.select(*GROUP_KEY, "record_partition", "record_offset", "timestamp_ms"),
        on=[*GROUP_KEY, "record_partition", "record_offset"], how="inner")
    unsettled = (open_commits.select(*GROUP_KEY, "record_offset", "timestamp_ms")
                 .unionByName(unresolved.select(*GROUP_KEY, "record_offset", "timestamp_ms"))
                 .join(watermark, on=GROUP_KEY, how="inner")
                 .where(F.col("timestamp_ms").isNull() | _horizon_kept(F.col("timestamp_ms"), F.col("watermark_ms"),
                                                                       horizon_ms))
                 .groupBy(*GROUP_KEY).agg(F.min("record_offset").alias("checkpoint")))
    return watermark.join(unsettled, on=GROUP_KEY, how="left").withColumn(
        "_cut", F.coalesce(F.col("checkpoint"), F.lit(_LONG_MAX)))


def _with_context(records: DataFrame, context: DataFrame, held: DataFrame, checkpoints: DataFrame) -> DataFrame:
    """Every record with the context in force at it (the last context record before it, else the carried
    context), and `_suffix_min`: the oldest time from it to the checkpoint (Long.MIN past a record
    without a time), for the carried look-back."""
    carried = held.select(*GROUP_KEY, F.lit(_BEFORE_ALL).cast("long").alias("record_offset"),
                          F.lit(-1).cast("int").alias("record_partition"),
                          F.struct(F.col("offsets.generation").alias("generation"),
                                   F.col("offsets.members").alias("members"),
                                   F.col("offsets.has_generations").alias("has_generations"),
                                   F.lit(0).cast("long").alias("segment")).alias("_context"),
                          F.lit(True).alias("_marker"))
    setters = context.select(*GROUP_KEY, "record_offset", "record_partition",
                             F.struct("generation", "members", "has_generations", "segment").alias("_context"),
                             F.lit(True).alias("_marker"))
    rows = (records.withColumn("_context", F.lit(None).cast(setters.schema["_context"].dataType))
            .withColumn("_marker", F.lit(False))
            .unionByName(carried, allowMissingColumns=True)
            .unionByName(setters, allowMissingColumns=True)
            .join(checkpoints.select(*GROUP_KEY, "_cut"), on=GROUP_KEY, how="left"))
    # A setter sorts after its own record (same position): the record is before the context it sets.
    window = Window.partitionBy(*GROUP_KEY).orderBy("record_offset", "record_partition", "_marker")
    time_to_cut = F.when(~F.col("_marker") & (F.col("record_offset") < F.col("_cut")),
                         F.coalesce(F.col("timestamp_ms"), F.lit(_LONG_MIN).cast("long")))
    return (rows
            .withColumn("_in_force", F.last("_context", ignorenulls=True).over(
                window.rowsBetween(Window.unboundedPreceding, -1)))
            .withColumn("_suffix_min", F.min(time_to_cut).over(
                window.rowsBetween(Window.currentRow, Window.unboundedFollowing)))
            .where(~F.col("_marker"))
            .drop("_marker", "_context"))


def _partition_sequences(contextual: DataFrame, held: DataFrame, checkpoints: DataFrame) -> DataFrame:
    """Each partition's commits and tombstones (aborted ones skipped) after its carried row, in log order,
    with the previous commit and the stall run each commit belongs to (`run`: a running count of run
    starts; a run is a stretch of one offset inside one segment of a group with members)."""
    carried = (held.select(*GROUP_KEY, F.explode("offsets.partitions").alias("p"),
                           F.col("offsets.generation").alias("generation"),
                           F.col("offsets.members").alias("members"))
               .select(*GROUP_KEY, "p.topic", "p.partition",
                       F.lit(_BEFORE_ALL).cast("long").alias("record_offset"),
                       F.lit(-1).cast("int").alias("record_partition"),
                       F.lit(True).alias("carried"), F.lit(COMMIT).alias("kind"),
                       F.col("p.last_offset").alias("after_offset"), F.col("p.last_expire_ms").alias("after_expire"),
                       F.col("p.run_count").isNotNull().alias("in_run"), F.lit(0).cast("long").alias("segment"),
                       F.col("p.run_first_record_offset").alias("run_first_record_offset"),
                       F.col("p.run_first_ms").alias("run_first_ms"), F.col("p.run_last_ms").alias("run_last_ms"),
                       F.col("p.run_count").alias("run_count"), F.col("p.run_metadata").alias("run_metadata"),
                       "generation", "members"))
    context = F.col("_in_force")
    commits = (contextual
               .where(F.col("kind").isin(*COMMIT_KINDS)
                      & ~F.coalesce(F.col("transaction_outcome") == ABORTED, F.lit(False)))
               .select(*GROUP_KEY, "topic", "partition", "record_offset", "record_partition",
                       F.lit(False).alias("carried"), "kind", "timestamp_ms", "offset", "metadata",
                       F.when(F.col("kind") == COMMIT, F.col("offset")).alias("after_offset"),
                       F.when(F.col("kind") == COMMIT, F.col("expire_ms")).alias("after_expire"),
                       context["generation"].alias("generation"), context["members"].alias("members"),
                       F.coalesce(context["has_generations"], F.lit(False)).alias("has_generations"),
                       F.coalesce(context["segment"], F.lit(0)).alias("segment")))
    in_context = F.col("has_generations") & (F.col("members") > 0)
    commits = (commits.withColumn("in_run", (F.col("kind") == COMMIT) & F.coalesce(in_context, F.lit(False)))
               .withColumn("run_first_record_offset", F.col("record_offset"))
               .withColumn("run_first_ms", F.col("timestamp_ms")).withColumn("run_last_ms", F.col("timestamp_ms"))
               .withColumn("run_count", F.lit(1).cast("long")).withColumn("run_metadata", F.col("metadata")))
    window = Window.partitionBy(*PARTITION_KEY).orderBy("record_offset", "record_partition")
    previous = F.lag("after_offset").over(window)
    sequence = (commits.unionByName(carried, allowMissingColumns=True)
                .join(checkpoints.select(*GROUP_KEY, "_cut"), on=GROUP_KEY, how="left")
                .withColumn("previous_offset", previous)
                .withColumn("previous_expire", F.lag("after_expire").over(window))
                .withColumn("_continues", F.col("in_run") & ~F.col("carried")
                            & F.coalesce(F.lag("in_run").over(window), F.lit(False))
                            & (F.lag("segment").over(window) == F.col("segment"))
                            & (previous == F.col("offset")))
                .withColumn("run", F.sum((F.col("in_run") & ~F.col("_continues")).cast("long"))
                            .over(_running(window)))
                .drop("_continues"))
    return sequence


def _runs(sequence: DataFrame) -> DataFrame:
    """Each stall run: first commit (record offset, time, metadata), last time, commit count, generation and
    members, for the whole run and for its part before the checkpoint (`*_before` columns, for the state)."""
    members = sequence.where(F.col("in_run"))
    before = F.col("record_offset") < F.col("_cut")
    first = F.struct("run_first_record_offset", "run_first_ms", "run_metadata", "generation", "members", "after_offset")
    return members.groupBy(*PARTITION_KEY, "run").agg(
        F.min_by(first, "record_offset").alias("first"),
        F.max_by("run_last_ms", "record_offset").alias("last_ms"),
        F.sum("run_count").alias("count"),
        F.max_by(F.when(before, F.col("run_last_ms")), F.when(before, F.col("record_offset"))).alias("last_ms_before"),
        F.sum(F.when(before, F.col("run_count"))).alias("count_before"),
    )


# ----------------------------------------------------------------------------------------------
# Rows


def _null(name: str) -> Column:
    return F.lit(None).cast(OFFSET_EVENTS.schema[name].dataType).alias(name)


def _event_row(**values: Column) -> list[Column]:
    """An offset_events row: the given columns, null elsewhere (empty evidence, inferred as the oracle's
    default)."""
    defaults = {"inferred": F.lit(True), "evidence": F.array().cast(_EVIDENCE)}
    out = []
    for field in OFFSET_EVENTS.schema.fields:
        value = values.get(field.name, defaults.get(field.name))
        out.append(value.cast(field.dataType).alias(field.name) if value is not None else _null(field.name))
    return out


def _timestamp(millis: Column) -> Column:
    return F.timestamp_millis(millis)


def commit_rows(sequence: DataFrame) -> DataFrame:
    """Rewinds and commits by non-members (admin resets, assign()-based clients), from the night's commits."""
    commits = sequence.where(~F.col("carried") & (F.col("kind") == COMMIT))
    delta = F.col("offset") - F.col("previous_offset")
    non_member = F.col("has_generations") & (F.col("members") == 0)
    rewind = ~non_member & F.col("previous_offset").isNotNull() & (delta < 0)
    common = dict(cluster=F.col("cluster"), group_id=F.col("group_id"), topic=F.col("topic"),
                  partition=F.col("partition"), at=_timestamp(F.col("timestamp_ms")),
                  record_offset=F.col("record_offset"), offset=F.col("offset"),
                  previous_offset=F.col("previous_offset"), delta=delta, generation=F.col("generation"),
                  metadata=F.col("metadata"))
    non_members = commits.where(non_member).select(*_event_row(
        **common, kind=F.lit(NON_MEMBER_COMMIT), group_members=F.lit(0), explanation=F.concat(
            F.lit("committed while generation "), F.col("generation").cast("string"),
            F.lit(" had no members: only a client outside the group (admin reset, assign()-based consumer) can "
                  "commit then"),
            F.when(delta < 0, F.lit("; it moved the offset backwards")).otherwise(F.lit("")))))
    rewinds = commits.where(rewind).select(*_event_row(
        **common, kind=F.lit(REWIND), group_members=F.col("members"), inferred=F.lit(False),
        explanation=F.concat(
            F.lit("committed offset went back by "), (-delta).cast("string"),
            F.when(F.col("has_generations"), F.concat(
                F.lit(" in generation "), F.col("generation").cast("string"), F.lit(" with "),
                F.col("members").cast("string"), F.lit(" member(s)"))).otherwise(F.lit("")))))
    return non_members.unionByName(rewinds)


def stall_rows(runs: DataFrame, stall_min_commits: int, stall_min_ms: int) -> DataFrame:
    """Runs of at least `stall_min_commits` commits of one offset over at least `stall_min_ms`."""
    duration = F.col("last_ms") - F.col("first.run_first_ms")
    stalled = runs.where((F.col("count") >= stall_min_commits) & duration.isNotNull() & (duration >= stall_min_ms))
    return stalled.select(*_event_row(
        cluster=F.col("cluster"), group_id=F.col("group_id"), kind=F.lit(STALLED), topic=F.col("topic"),
        partition=F.col("partition"), at=_timestamp(F.col("first.run_first_ms")),
        ended_at=_timestamp(F.col("last_ms")), record_offset=F.col("first.run_first_record_offset"),
        offset=F.col("first.after_offset"), commit_count=F.col("count"), duration_ms=duration,
        generation=F.col("first.generation"), group_members=F.col("first.members"),
        metadata=F.col("first.run_metadata"), inferred=F.lit(False),
        explanation=F.concat(
            F.col("count").cast("string"), F.lit(" commits of offset "), F.col("first.after_offset").cast("string"),
            F.lit(" over "), duration.cast("string"), F.lit(" ms in generation "),
            F.col("first.generation").cast("string"), F.lit(" while the group had "),
            F.col("first.members").cast("string"), F.lit(" member(s)"))))


def _tombstone_inputs(sequence: DataFrame, context: DataFrame) -> DataFrame:
    """The night's tombstones in OFFSETS_TOMBSTONE's shape (no classification yet): offset tombstones with
    the commit before them, and group deletions with the generation they ended."""
    offsets = sequence.where(~F.col("carried") & (F.col("kind") == OFFSET_TOMBSTONE)).select(
        *GROUP_KEY, "topic", "partition", "record_offset", "timestamp_ms", "previous_offset",
        F.col("previous_expire").alias("previous_expire_ms"), "generation",
        F.col("members").alias("group_members"))
    groups = context.where(~F.col("has_generations")).select(
        *GROUP_KEY, F.lit(None).cast("string").alias("topic"), F.lit(None).cast("long").alias("partition"),
        "record_offset", "timestamp_ms", F.lit(None).cast("long").alias("previous_offset"),
        F.lit(None).cast("long").alias("previous_expire_ms"),
        F.col("previous_generation").alias("generation"), F.lit(None).cast("long").alias("group_members"))
    return offsets.unionByName(groups)


_EXPLAIN_WITH_GROUP = "deleted with the group (the group's tombstone is written with it)"
_EXPLAIN_EXPIRE_TIMESTAMP = "expired: the commit's expire timestamp had passed"
_EXPLAIN_SWEEP = "expired: an offset-expiry sweep logged at the same time"
_EXPLAIN_NO_DELETION = ("tombstone with no deletion seen: retention expiry is the usual source (a topic deletion "
                        "looks the same without its log line)")
_EXPLAIN_GROUP_DELETED = "the group's own tombstone: the group was deleted"


def classify_tombstones(tombstones: DataFrame, events: DataFrame, group_tombstones: DataFrame,
                        sweeps: DataFrame | None = None) -> DataFrame:
    """Tombstones (OFFSETS_TOMBSTONE inputs) with kind, inferred, explanation and evidence, as the oracle's
    `_tombstone_row` and `_group_tombstone_row` give them: log lines within 5 s (offset/group deletions naming
    the group, then expiry sweeps: lines naming the group, and the cluster's group-less `sweeps`), the
    group's own tombstone within 1 s, the v1 expire timestamp."""
    timed = tombstones.where(F.col("timestamp_ms").isNotNull()).alias("t")
    within = F.abs(F.unix_micros("e.at") - F.col("t.timestamp_ms") * 1000) <= LOG_MATCH_MS * 1000
    near = timed.join(events.alias("e"), on=GROUP_KEY, how="inner").where(within)
    if sweeps is not None:
        swept = (timed.join(sweeps.alias("e"), on="cluster", how="inner").where(within)
                 .select(*near.columns))
        near = near.unionByName(swept)
    # (unqualified names from here: the union has no t/e aliases, and the sides share no column name)
    evidence = F.struct("event_type", "at", "member_id", "cause_class", "reason", "source",
                        "line_number", "message")
    is_group = F.col("topic").isNull()
    deleting = F.when(is_group, F.col("event_type").isin(ev.GROUPS_DELETED, ev.GROUP_DEAD)).otherwise(
        F.col("event_type").isin(ev.OFFSETS_DELETED, ev.GROUPS_DELETED))
    expiring = F.col("event_type") == ev.OFFSETS_EXPIRED
    order = F.struct(F.col("at"), F.col("file_id"), F.col("line_number"))
    by_tombstone = [*GROUP_KEY, "record_offset"]

    def in_time_order(condition: Column) -> Column:
        items = F.collect_list(F.when(condition, F.struct(order.alias("k"), evidence.alias("v"))))
        return F.transform(F.array_sort(items), lambda x: x["v"])

    found = near.groupBy(*by_tombstone).agg(in_time_order(deleting).alias("_deleting"),
                                           in_time_order(expiring).alias("_expiring"))
    with_group = (tombstones.where(F.col("timestamp_ms").isNotNull() & F.col("topic").isNotNull()).alias("t")
                  .join(group_tombstones.alias("g"), on=GROUP_KEY, how="inner")
                  .where(F.abs(F.col("g.timestamp_ms") - F.col("t.timestamp_ms")) <= TOMBSTONE_MATCH_MS)
                  .select(*GROUP_KEY, F.col("t.record_offset").alias("record_offset"))
                  .distinct().withColumn("_with_group", F.lit(True)))
    key = [*GROUP_KEY, "record_offset"]
    joined = (tombstones.join(found, on=key, how="left").join(with_group, on=key, how="left")
              .withColumn("_deleting", F.coalesce("_deleting", F.array().cast(_EVIDENCE)))
              .withColumn("_expiring", F.coalesce("_expiring", F.array().cast(_EVIDENCE))))
    has_deleting = F.size("_deleting") > 0
    has_expiring = F.size("_expiring") > 0
    timed_out = F.coalesce((F.col("previous_expire_ms") > 0) & (F.col("timestamp_ms") >= F.col("previous_expire_ms")),
                           F.lit(False))
    group = F.col("topic").isNull()
    with_group = F.coalesce("_with_group", F.lit(False))
    # An expiry sweep comes before the group's tombstone: the sweep writes the group's tombstone with the
    # last offsets' when it empties the group.
    kind = (F.when(group, F.lit(GROUP_DELETED)).when(has_deleting, F.lit(DELETED))
            .when(has_expiring, F.lit(EXPIRED)).when(with_group, F.lit(DELETED)).otherwise(F.lit(EXPIRED)))
    explanation = (F.when(group, F.when(~has_deleting & has_expiring, F.lit(EXPLAIN_GROUP_SWEPT))
                          .otherwise(F.lit(_EXPLAIN_GROUP_DELETED)))
                   .when(has_deleting, F.concat(F.lit("deleted: "), F.col("_deleting")[0]["event_type"],
                                                F.lit(" names the group")))
                   .when(has_expiring, F.when(timed_out, F.lit(_EXPLAIN_EXPIRE_TIMESTAMP))
                         .otherwise(F.lit(_EXPLAIN_SWEEP)))
                   .when(with_group, F.lit(_EXPLAIN_WITH_GROUP))
                   .when(timed_out, F.lit(_EXPLAIN_EXPIRE_TIMESTAMP))
                   .otherwise(F.lit(_EXPLAIN_NO_DELETION)))
    evidence_out = (F.when(has_deleting, F.col("_deleting")).when(has_expiring, F.col("_expiring"))
                    .otherwise(F.array().cast(_EVIDENCE)))
    inferred = ~group & ~has_deleting & ~has_expiring & (with_group | ~timed_out)
    return (joined.withColumn("_kind", kind).withColumn("_explanation", explanation)
            .withColumn("_evidence", evidence_out).withColumn("_inferred", inferred)
            .drop("_deleting", "_expiring", "_with_group"))


def tombstone_rows(classified: DataFrame) -> DataFrame:
    return classified.select(*_event_row(
        cluster=F.col("cluster"), group_id=F.col("group_id"), kind=F.col("_kind"), topic=F.col("topic"),
        partition=F.col("partition"), at=_timestamp(F.col("timestamp_ms")), record_offset=F.col("record_offset"),
        previous_offset=F.col("previous_offset"), generation=F.col("generation"),
        group_members=F.col("group_members"), inferred=F.col("_inferred"), explanation=F.col("_explanation"),
        evidence=F.col("_evidence")))


# ----------------------------------------------------------------------------------------------
# The stage


def _without(rows: DataFrame, others: DataFrame, columns: list[str]) -> DataFrame:
    """`rows` whose `columns` match no row of `others`, nulls matching nulls (a group row has no topic)."""
    condition = None
    for c in columns:
        term = rows[c].eqNullSafe(others[c])
        condition = term if condition is None else condition & term
    return rows.join(others, on=condition, how="left_anti")


def _held_records(held: DataFrame) -> DataFrame:
    return held.select(*GROUP_KEY, F.explode("offsets.tail").alias("r")).select(*GROUP_KEY, "r.*")


def _key(kind: Column, topic: Column, partition: Column, record_offset: Column) -> Column:
    return F.struct(kind.alias("kind"), topic.alias("topic"), partition.cast("long").alias("partition"),
                    record_offset.cast("long").alias("record_offset"))


def _collect(rows: DataFrame, name: str, value: Column, element: T.DataType, order: Column | None = None) -> DataFrame:
    """(cluster, group_id, name): the rows' values per group as an array (sorted by `order` when given)."""
    if order is None:
        collected = F.collect_list(value)
    else:
        collected = F.transform(F.array_sort(F.collect_list(F.struct(order.alias("k"), value.alias("v")))),
                                lambda x: x["v"])
    return rows.groupBy(*GROUP_KEY).agg(collected.cast(T.ArrayType(element)).alias(name))


def _kept(frame: DataFrame) -> tuple[DataFrame, Callable[[], None]]:
    """`frame` computed now and kept, and how to let it go.

    In local mode as a local checkpoint: later plans start at its rows (a cached frame keeps its whole plan,
    and the fold's later plans, which reuse several intermediates, would carry every one of them again).
    Its blocks live in the driver's own block manager, so nothing can lose them. On a cluster an executor
    can be lost with the blocks of a local checkpoint, which has no lineage to recompute them from: there
    the frame is cached instead (lost blocks are recomputed) and materialized at once, and the caller gets
    a frame over the cached rows (a LogicalRDD), not the cached frame: a cached frame keeps its plan, each
    later plan nested every earlier one, and the driver spent minutes and its heap rendering those plans
    as text (OutOfMemoryError in QueryExecution.explainString on a standalone cluster, where local runs
    take 40 s; tests/cluster).
    """
    if (frame.sparkSession.sparkContext.master or "").startswith("local"):
        kept = frame.localCheckpoint(eager=True)

        def release() -> None:
            # The checkpoint's blocks belong to the RDD under its plan, not to Spark's cache manager.
            kept._jdf.queryExecution().analyzed().rdd().unpersist(False)

        return kept, release
    cached = frame.persist(StorageLevel.MEMORY_AND_DISK)
    cached.count()
    spark = frame.sparkSession
    over_cached_rows = DataFrame(spark._jsparkSession.createDataFrame(cached._jdf.rdd(), cached._jdf.schema()), spark)
    return over_cached_rows, cached.unpersist


def run_offset_events(
    tables: Tables,
    run_id: str,
    since: Mapping[str, int] | None,
    *,
    stall_min_commits: int = 3,
    stall_min_ms: int = 60_000,
    reopen_hours: float = 48.0,
) -> OffsetEventsResult:
    """Continue the offset history of every group the run touched (new records, decided transactions of
    carried commits, or new deletion/expiry log lines): write offset_events and group_state.offsets.

    Args:
        tables: the warehouse.
        run_id: written to group_state.updated_run_id.
        since: table name -> the version the last committed run left (offset_commits, group_metadata,
            consumer_group_records, coordinator_events); the run reads what came after. None: rebuild
            (offset_events and every group's offsets state are emptied, every row is new).
        stall_min_commits / stall_min_ms: what makes a stall (as `offset_history`).
        reopen_hours: how long a tombstone stays open to late log lines (and a record to being re-read),
            counted back from the group's newest record or log line.
    """
    if since is None:
        tables.delete_where(OFFSET_EVENTS, "true")
        clear_state(tables, ["offsets"])
    changes = fold_offset_events(tables, since, stall_min_commits=stall_min_commits, stall_min_ms=stall_min_ms,
                                 reopen_hours=reopen_hours)
    try:
        write_offset_events(tables, changes, run_id)
    finally:
        changes.release()
    return changes.result


@dataclass(frozen=True)
class OffsetEventChanges:
    """A run's fold, computed (its rows held on the executors) and not written yet: offset_events rows to
    upsert (`_deleted`: withdraw the row), and the new `offsets` state of every touched group."""

    rows: DataFrame
    state: DataFrame
    result: OffsetEventsResult
    #: lets go of the intermediate rows the fold keeps (call it once the rows and state are written)
    release: Callable[[], None] = lambda: None


def write_offset_events(tables: Tables, changes: OffsetEventChanges, run_id: str) -> None:
    """offset_events first, then the state that produced it (the nightly run rolls both back together)."""
    if changes.result.rows_written or changes.result.rows_deleted:
        tables.upsert(OFFSET_EVENTS, changes.rows, delete_flag="_deleted")
    if changes.result.groups:
        merge_state(tables, changes.state, ["offsets"], run_id)


def fold_offset_events(
    tables: Tables,
    since: Mapping[str, int] | None,
    *,
    stall_min_commits: int = 3,
    stall_min_ms: int = 60_000,
    reopen_hours: float = 48.0,
) -> OffsetEventChanges:
    """The fold of `run_offset_events` over the run's new rows and the touched groups' state, computed
    but not written (`since` None: every row is new and no state is read)."""
    horizon_ms = int(reopen_hours * 3_600_000)
    inputs_read = (OFFSET_COMMITS, GROUP_METADATA, CONSUMER_GROUP_RECORDS, COORDINATOR_EVENTS)
    versions = {spec.name: tables.version(spec) for spec in inputs_read}
    sizes: dict[str, int] = {}

    releases: list[Callable[[], None]] = []

    def release() -> None:
        for let_go in releases:
            let_go()
        releases.clear()

    def nothing() -> OffsetEventChanges:
        no_rows = T.StructType([*OFFSET_EVENTS.schema.fields, T.StructField("_deleted", T.BooleanType())])
        no_state = _empty(tables, GROUP_STATE.schema).select(*GROUP_KEY, "offsets")
        return OffsetEventChanges(_empty(tables, no_rows), no_state, OffsetEventsResult(0, 0, 0, 0, 0, 0, 0),
                                  release)

    # No row of the inputs changed (their commit files say so): nothing to read.
    if since is not None and not any(tables.data_changed_since(spec, int(since.get(spec.name, 0)))
                                     for spec in inputs_read):
        return nothing()
    inputs = read_run_inputs(tables, since, versions)

    def keep(frame: DataFrame, name: str, count: bool = False) -> DataFrame:
        """Compute an intermediate now and keep its rows: later steps read them instead of recomputing
        (see `_kept`)."""
        t0 = time.monotonic()
        kept, let_go = _kept(frame)
        releases.append(let_go)
        if count or _TRACE:
            sizes[name] = kept.count()
        if _TRACE:
            log(f"  offset_events {name}: {sizes[name]} rows, {time.monotonic() - t0:.2f}s")
        return kept

    new_records = keep(inputs.records, "new_records", count=True)
    new_events = keep(inputs.events, "new_events", count=True)
    new_sweeps = keep(inputs.sweeps, "new_sweeps", count=True)
    updates = keep(inputs.outcome_updates, "outcome_updates", count=True)
    if not (sizes["new_records"] or sizes["new_events"] or sizes["new_sweeps"] or sizes["outcome_updates"]):
        return nothing()

    # The state of the groups touched: new records or log lines, or a decided transaction in a carried
    # tail. group_state holds a row per group of the fleet: only the clusters with news are read.
    clusters = [r["cluster"] for r in new_records.select("cluster").unionByName(new_events.select("cluster"))
                .unionByName(new_sweeps.select("cluster")).unionByName(updates.select("cluster")).distinct()
                .collect()]
    if _TRACE:
        log(f"  offset_events: state read for clusters {sorted(clusters)}")
    if since is None:   # a rebuild: every group starts from an empty state
        state = _empty(tables, GROUP_STATE.schema).select(*GROUP_KEY, "offsets")
    else:
        state = keep(tables.read(GROUP_STATE, version=tables.version(GROUP_STATE))
                     .where(F.col("cluster").isin(*clusters) & F.col("offsets").isNotNull())
                     .select(*GROUP_KEY, "offsets"), "state")
    decided_tails = (state.where(F.size("offsets.tail") > 0)
                     .select(*GROUP_KEY, F.explode("offsets.tail").alias("r"))
                     .select(*GROUP_KEY, "r.record_partition", "r.record_offset")
                     .join(updates.drop("transaction_outcome"),
                           on=["cluster", "record_partition", "record_offset"], how="left_semi")
                     .select(*GROUP_KEY))
    # A new group-less sweep line is late evidence for the settled tombstones of its cluster near it.
    swept = (state.select(*GROUP_KEY, F.explode("offsets.tombstones.timestamp_ms").alias("timestamp_ms"))
             .join(new_sweeps.select("cluster", "at"), on="cluster", how="inner")
             .where(F.abs(F.unix_micros("at") - F.col("timestamp_ms") * 1000) <= LOG_MATCH_MS * 1000)
             .select(*GROUP_KEY))
    touched = (new_records.select(*GROUP_KEY).unionByName(new_events.select(*GROUP_KEY))
               .unionByName(decided_tails).unionByName(swept).distinct())
    held = keep(state.join(touched, on=GROUP_KEY, how="left_semi"), "held",
                count=True)
    tail = (_held_records(held)
            .join(updates.withColumnRenamed("transaction_outcome", "_decided"),
                  on=["cluster", "record_partition", "record_offset"], how="left")
            .withColumn("transaction_outcome", F.coalesce("_decided", "transaction_outcome")).drop("_decided"))
    records = keep(new_records.unionByName(tail.select(*new_records.columns)), "records")

    # The fold: group context, checkpoints, each partition's sequence and stall runs.
    group_records = records.where(F.col("kind").isin(*GROUP_LEVEL))
    conversions = keep(_conversions(records, group_records, held), "conversions")
    context = keep(_context_records(group_records, conversions, held), "context")
    checkpoints = keep(_checkpoints(records, conversions, held, new_events, horizon_ms), "checkpoints")
    contextual = keep(_with_context(records, context, held, checkpoints), "contextual")
    sequence = keep(_partition_sequences(contextual, held, checkpoints), "sequence")
    runs = keep(_runs(sequence), "runs")

    # Tombstones: the night's, and the settled ones still open to late evidence.
    events = (held.select(*GROUP_KEY, F.explode("offsets.events").alias("e")).select(*GROUP_KEY, "e.*")
              .unionByName(new_events).dropDuplicates(["cluster", "group_id", "file_id", "line_number"]))
    deletions = context.where(~F.col("has_generations")).select(*GROUP_KEY, "timestamp_ms")
    group_tombstones = (held.select(*GROUP_KEY, F.explode("offsets.group_tombstones_ms").alias("timestamp_ms"))
                        .unionByName(deletions).where(F.col("timestamp_ms").isNotNull()))
    settled = (held.select(*GROUP_KEY, F.explode("offsets.tombstones").alias("s")).select(*GROUP_KEY, "s.*")
               .withColumnRenamed("kind", "_was_kind").withColumnRenamed("explanation", "_was_explanation")
               .withColumnRenamed("evidence_count", "_was_evidence").withColumn("_settled", F.lit(True)))
    tombstones = _tombstone_inputs(sequence, context).withColumn("_settled", F.lit(False)).unionByName(
        settled, allowMissingColumns=True)
    tombstones = keep(tombstones, "tombstones")
    sweeps = keep(sweeps_near(tables, versions[COORDINATOR_EVENTS.name], tombstones), "sweeps")
    classified = keep(classify_tombstones(tombstones, events, group_tombstones, sweeps), "classified")
    changed_settled = classified.where(F.col("_settled") & ~(
        (F.col("_kind") == F.col("_was_kind")) & (F.col("_explanation") == F.col("_was_explanation"))
        & (F.size("_evidence") == F.col("_was_evidence"))))

    # Rows: written (new or replaced), and withdrawn (provisional rows the run no longer gives; a settled
    # tombstone's row under its former kind).
    emitted = keep(commit_rows(sequence)
                   .unionByName(stall_rows(runs, stall_min_commits, stall_min_ms))
                   .unionByName(tombstone_rows(classified.where(~F.col("_settled"))))
                   .unionByName(tombstone_rows(changed_settled))
                   .withColumn("_deleted", F.lit(False)), "emitted")
    grain = list(OFFSET_EVENTS.grain)
    provisional = (held.select(*GROUP_KEY, F.explode("offsets.provisional").alias("k"))
                   .select(*GROUP_KEY, "k.kind", "k.topic", "k.partition", "k.record_offset"))
    reclassified = changed_settled.where(F.col("_kind") != F.col("_was_kind")).select(
        *GROUP_KEY, F.col("_was_kind").alias("kind"), "topic", "partition", "record_offset")
    withdrawn = _without(provisional.unionByName(reclassified).distinct(), emitted.select(*grain), grain)
    changes = keep(emitted.unionByName(
        withdrawn.select(*_event_row(**{c: F.col(c) for c in grain})).withColumn("_deleted", F.lit(True))),
        "changes")
    new_state = keep(_new_state(held, records, group_records, context, checkpoints, contextual, sequence, runs,
                                classified, events, emitted, horizon_ms), "new_state", count=True)

    counts = changes.groupBy().agg(F.count(F.lit(1)).alias("n"),
                                   F.sum(F.col("_deleted").cast("int")).alias("deleted")).first()
    changed, deleted = (int(counts["n"]), int(counts["deleted"] or 0)) if counts else (0, 0)
    tail_records = held.select(F.sum(F.size("offsets.tail"))).first()
    return OffsetEventChanges(changes, new_state, OffsetEventsResult(
        groups=sizes["new_state"], rows_written=changed - deleted, rows_deleted=deleted,
        new_records=sizes["new_records"], new_events=sizes["new_events"], state_rows=sizes["held"],
        tail_records=int(tail_records[0] or 0) if tail_records else 0), release)


def _new_state(held: DataFrame, records: DataFrame, group_records: DataFrame, context: DataFrame,
               checkpoints: DataFrame, contextual: DataFrame, sequence: DataFrame,
               runs: DataFrame, classified: DataFrame, events: DataFrame, emitted: DataFrame,
               horizon_ms: int) -> DataFrame:
    """(cluster, group_id, offsets) of every touched group: the fold up to its checkpoint, and the records
    from it on."""
    cut = checkpoints.select(*GROUP_KEY, "_cut", "checkpoint", "watermark_ms")
    before = F.col("record_offset") < F.col("_cut")

    # Context at the checkpoint.
    last_context = (context.join(cut, on=GROUP_KEY, how="inner").where(before)
                    .groupBy(*GROUP_KEY).agg(F.max_by(F.struct("generation", "members", "has_generations", "segment"),
                                                      "record_offset").alias("_c")))
    carried = held.select(*GROUP_KEY, F.col("offsets.generation").alias("_g"), F.col("offsets.members").alias("_m"),
                          F.col("offsets.has_generations").alias("_h"),
                          F.col("offsets.lookback_classic_ms").alias("_lc"),
                          F.col("offsets.lookback_consumer_ms").alias("_lk"))
    found = F.col("_c").isNotNull()
    groups = (cut.join(last_context, on=GROUP_KEY, how="left").join(carried, on=GROUP_KEY, how="left")
              .select(*GROUP_KEY, "_cut", "checkpoint", "watermark_ms",
                      F.when(found, F.col("_c.generation")).otherwise(F.col("_g")).alias("generation"),
                      F.when(found, F.col("_c.members")).otherwise(F.col("_m")).alias("members"),
                      F.coalesce(F.when(found, F.col("_c.has_generations")).otherwise(F.col("_h")),
                                 F.lit(False)).alias("has_generations"),
                      F.coalesce(F.col("_c.segment"), F.lit(0)).alias("_segment"), "_lc", "_lk"))

    # KIP-848 members at the checkpoint: each member's last join or leave before it, else carried.
    member_changes = (group_records.where(F.col("kind").isin(MEMBER_JOINED, MEMBER_LEFT))
                      .join(cut, on=GROUP_KEY, how="inner").where(before)
                      .select(*GROUP_KEY, "member_id", "record_offset", (F.col("kind") == MEMBER_JOINED).alias("_in")))
    carried_members = held.select(*GROUP_KEY, F.explode("offsets.consumer_members").alias("member_id"),
                                  F.lit(_BEFORE_ALL).cast("long").alias("record_offset"), F.lit(True).alias("_in"))
    members = (member_changes.unionByName(carried_members).groupBy(*GROUP_KEY, "member_id")
               .agg(F.max_by("_in", "record_offset").alias("_in")).where(F.col("_in")))
    members = _collect(members, "consumer_members", F.col("member_id"), T.StringType(), F.col("member_id"))

    # For the look-back of a later group tombstone: per protocol, the greatest "oldest time from a live record
    # of it to the checkpoint" (a walk back from a tombstone at t reaches such a record iff that time is at
    # least t - 1 s). The carried value counts too, capped by the oldest time of the records since.
    timed = contextual.where(before)
    lookback = timed.groupBy(*GROUP_KEY).agg(
        F.max(F.when(F.col("kind").isin(*CONSUMER_LIVE), F.col("_suffix_min"))).alias("_nc"),
        F.max(F.when(F.col("kind").isin(*CLASSIC_LIVE), F.col("_suffix_min"))).alias("_nk"),
        F.min_by("_suffix_min", "record_offset").alias("_oldest"))

    # Partitions at the checkpoint: each one's last commit or tombstone before it.
    last = (sequence.where(before).groupBy(*PARTITION_KEY)
            .agg(F.max_by(F.struct("kind", "after_offset", "after_expire", "in_run", "segment", "run"),
                          "record_offset").alias("_last")))
    open_runs = runs.select(*PARTITION_KEY, "run", "first", "last_ms_before", "count_before")
    partitions = (last.where(F.col("_last.kind") == COMMIT)
                  .join(groups.select(*GROUP_KEY, "_segment"), on=GROUP_KEY, how="inner")
                  .withColumn("_open", F.col("_last.in_run") & (F.col("_last.segment") == F.col("_segment")))
                  .withColumn("run", F.col("_last.run"))
                  .join(open_runs, on=[*PARTITION_KEY, "run"], how="left")
                  .select(*GROUP_KEY, F.struct(
                      "topic", "partition", F.col("_last.after_offset").alias("last_offset"),
                      F.col("_last.after_expire").alias("last_expire_ms"),
                      F.when(F.col("_open"), F.col("first.run_first_record_offset")).alias("run_first_record_offset"),
                      F.when(F.col("_open"), F.col("first.run_first_ms")).alias("run_first_ms"),
                      F.when(F.col("_open"), F.col("last_ms_before")).alias("run_last_ms"),
                      F.when(F.col("_open"), F.col("count_before")).alias("run_count"),
                      F.when(F.col("_open"), F.col("first.run_metadata")).alias("run_metadata")).alias("p"),
                          F.when(F.col("_open"), F.col("first.run_first_record_offset")).alias("_open_run_first")))
    partition_list = _collect(partitions, "partitions", F.col("p"), OFFSETS_PARTITION,
                              F.struct(F.col("p.topic"), F.col("p.partition")))

    # Settled tombstones open to late evidence, group tombstone times, log lines: within the horizon.
    kept = lambda column, margin=0: _horizon_kept(column, F.col("watermark_ms"), horizon_ms, margin)  # noqa: E731
    tombstones = (classified.join(cut, on=GROUP_KEY, how="inner")
                  .where(before & F.col("timestamp_ms").isNotNull() & kept(F.col("timestamp_ms"))))
    tombstone_list = _collect(tombstones, "tombstones", F.struct(
        "topic", "partition", "record_offset", "timestamp_ms", "previous_offset", "previous_expire_ms", "generation",
        "group_members", F.col("_kind").alias("kind"), F.col("_explanation").alias("explanation"),
        F.size("_evidence").alias("evidence_count")), OFFSETS_TOMBSTONE, F.col("record_offset"))
    deletions = (held.select(*GROUP_KEY, F.explode("offsets.group_tombstones_ms").alias("timestamp_ms"),
                             F.lit(_BEFORE_ALL).cast("long").alias("record_offset"))
                 .unionByName(context.where(~F.col("has_generations") & F.col("timestamp_ms").isNotNull())
                              .select(*GROUP_KEY, "timestamp_ms", "record_offset"))
                 .join(cut, on=GROUP_KEY, how="inner")
                 .where(before & kept(F.col("timestamp_ms"), TOMBSTONE_MATCH_MS)))
    deletion_list = _collect(deletions, "group_tombstones_ms", F.col("timestamp_ms"), T.LongType(),
                             F.col("timestamp_ms"))
    event_list = _collect(events.join(cut, on=GROUP_KEY, how="inner")
                          .where(kept(F.unix_millis("at"), LOG_MATCH_MS)),
                          "events", F.struct(*_EVENT_COLUMNS), OFFSETS_EVENT,
                          F.struct("at", "file_id", "line_number"))

    # The tail and the rows it produced.
    tail = records.join(cut, on=GROUP_KEY, how="inner").where(~before)
    tail_list = _collect(tail, "tail", F.struct(*_RECORD_COLUMNS), OFFSETS_RECORD,
                         F.struct("record_offset", "record_partition"))
    provisional_rows = (emitted.join(cut, on=GROUP_KEY, how="inner")
                        .where(F.col("checkpoint").isNotNull() & (F.col("record_offset") >= F.col("checkpoint")))
                        .select(*GROUP_KEY, "kind", "topic", "partition", "record_offset"))
    open_stalls = (partitions.where(F.col("_open_run_first").isNotNull())
                   .join(cut.where(F.col("checkpoint").isNotNull()), on=GROUP_KEY, how="left_semi")
                   .select(*GROUP_KEY, F.lit(STALLED).alias("kind"), F.col("p.topic").alias("topic"),
                           F.col("p.partition").alias("partition"), F.col("_open_run_first").alias("record_offset"))
                   .join(emitted.where(F.col("kind") == STALLED),
                         on=[*GROUP_KEY, "topic", "partition", "record_offset"], how="left_semi"))
    provisional_list = _collect(provisional_rows.unionByName(open_stalls).distinct(), "provisional",
                                _key(F.col("kind"), F.col("topic"), F.col("partition"), F.col("record_offset")),
                                OFFSETS_ROW_KEY, F.struct("record_offset", "kind", "topic", "partition"))

    def empty_if_null(name: str, element: T.DataType) -> Column:
        return F.coalesce(F.col(name), F.array().cast(T.ArrayType(element))).alias(name)

    lookback_classic = F.greatest(F.col("_nc"), F.least(F.coalesce("_lc", F.lit(_LONG_MIN)), F.col("_oldest")))
    lookback_consumer = F.greatest(F.col("_nk"), F.least(F.coalesce("_lk", F.lit(_LONG_MIN)), F.col("_oldest")))
    state = (groups
             .join(lookback, on=GROUP_KEY, how="left")
             .join(members, on=GROUP_KEY, how="left").join(partition_list, on=GROUP_KEY, how="left")
             .join(tombstone_list, on=GROUP_KEY, how="left").join(deletion_list, on=GROUP_KEY, how="left")
             .join(event_list, on=GROUP_KEY, how="left").join(tail_list, on=GROUP_KEY, how="left")
             .join(provisional_list, on=GROUP_KEY, how="left")
             .withColumn("_lb_classic", F.when(F.col("_oldest").isNull(), F.col("_lc")).otherwise(lookback_classic))
             .withColumn("_lb_consumer", F.when(F.col("_oldest").isNull(), F.col("_lk")).otherwise(lookback_consumer)))
    sentinel = lambda name: F.when(F.col(name) > F.lit(_LONG_MIN), F.col(name))  # noqa: E731
    offsets = F.struct(
        F.lit(STATE_VERSION).alias("version"), F.col("watermark_ms"), "generation", "members", "has_generations",
        empty_if_null("consumer_members", T.StringType()),
        sentinel("_lb_classic").alias("lookback_classic_ms"), sentinel("_lb_consumer").alias("lookback_consumer_ms"),
        empty_if_null("partitions", OFFSETS_PARTITION), empty_if_null("group_tombstones_ms", T.LongType()),
        empty_if_null("tombstones", OFFSETS_TOMBSTONE), empty_if_null("events", OFFSETS_EVENT),
        empty_if_null("tail", OFFSETS_RECORD), empty_if_null("provisional", OFFSETS_ROW_KEY))
    return state.select(*GROUP_KEY, offsets.cast(OFFSETS_STATE).alias("offsets"))
