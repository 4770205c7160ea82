"""Decode stage: raw_offsets rows -> offset_commits, group_metadata, group_members,
consumer_group_records, decode_errors and decode_coverage.

Every function taking and returning DataFrames here is a pure transform (no I/O) ending in a select onto
its table's schema; `run_decode` is the only function that reads or writes tables.

Incremental: the stage decodes only the raw_offsets rows appended since the last committed run (Delta
change data feed of the append-only archive). Rows keyed by record position are appended; the only
state that spans records is recomputed for the groups/partitions the new records touch: transaction
outcomes (a COMMIT/ABORT marker resolves earlier commits of its producer in its partition) and
group_members (a later GroupMetadata record of the same generation supersedes the earlier one).
For transactions, each run hands the next a `TransactionState` in its commit note (the last offset of
each partition, the producers with commits still open): when a run's records follow everything archived,
its own markers decide everything it can decide, so it reads neither offset_commits nor the archive to
find them (about 1.5 s of a 1% run on the 10M benchmark). A backfill of older offsets is resolved by
offset order against the tables instead.

How the records are decoded: the JVM splits them by key version. Offset commits, nearly all of them, are
decoded inside the job that appends them to offset_commits, with no cache and no second pass: their
transaction outcomes are computed beforehand from raw columns alone (positions, producer ids and markers)
and broadcast to the tasks, and the tasks report coverage counts and undecodable records through an
accumulator (`jobs.common.boundary.DecodeSideOutput`). The other records (GroupMetadata, KIP-848 and
unknown types, keys too short to tell) are decoded once into a cache read by the other tables. On 10M
synthetic records this took the stage from about 3.5x to about 2.5x the plain-copy floor.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from jobs.common.boundary import DecodeSideOutput, decode_records, side_output
from jobs.common.collect import collect_together
from jobs.common.delta_io import Tables, write_together
from jobs.common.progress import step
from jobs.common.session import session_setting
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
from schemas.silver import GROUP_METADATA_MEMBER

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


def _is_marker() -> Column:
    """A raw record that is a COMMIT/ABORT control record (a transaction marker)."""
    return F.col("is_control") & F.col("control_type").isin(*TRANSACTION_MARKERS)


def _awaits_marker() -> Column:
    """A data record (offset_commits row or raw record that is not a control record) that a marker decides."""
    return F.col("is_transactional") & F.col("producer_id").isNotNull()


def transaction_markers(raw_offsets: DataFrame) -> DataFrame:
    """COMMIT/ABORT control records: (cluster, partition, producer_id, offset, control_type)."""
    return raw_offsets.where(_is_marker()).select("cluster", "partition", "producer_id", "offset", "control_type")


def awaiting_commits(records: DataFrame) -> DataFrame:
    """(cluster, partition, producer_id, offset) of the records whose outcome a transaction marker decides:
    transactional ones with a producer id. Takes offset_commits rows or raw data records (not control
    records): in `__consumer_offsets` only TxnOffsetCommit records are written in transactions, so the raw
    columns say which commits await a marker before anything is decoded."""
    return records.where(_awaits_marker()).select("cluster", "partition", "producer_id", "offset")


class AwaitingPartition(NamedTuple):
    """A partition with commits awaiting a marker: where the first is, and how many there are."""

    cluster: str
    partition: int
    first_offset: int
    commits: int


def awaiting_markers(records: DataFrame) -> list[AwaitingPartition]:
    """The partitions of the `awaiting_commits` of `records` (one small aggregate). Empty: no marker needs
    to be looked up."""
    rows = (
        awaiting_commits(records)
        .groupBy("cluster", "partition")
        .agg(F.min("offset").alias("first_offset"), F.count(F.lit(1)).alias("commits"))
        .collect()
    )
    return [AwaitingPartition(r["cluster"], int(r["partition"]), int(r["first_offset"]), int(r["commits"]))
            for r in rows]


#: Above this many partitions the marker filter is one lowest offset for all (a shorter plan, less skipping).
_PER_PARTITION_FILTER_LIMIT = 200


def _sql_string(value: str) -> str:
    """`value` as a Spark SQL string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def per_partition_condition(offsets: dict[tuple[str, int], str], alias: str = "") -> Column:
    """One condition `(cluster = c AND partition = p AND <offset condition>) OR ...` over the
    (cluster, partition) -> offset condition pairs of `offsets`, on the columns of `alias` when given.

    Written as one SQL expression: built from Column objects it took one py4j call per operator, about
    1.5 s for the 50 partitions of `__consumer_offsets` on a busy driver.
    """
    prefix = f"{alias}." if alias else ""
    return F.expr(" OR ".join(
        f"({prefix}cluster = {_sql_string(cluster)} AND {prefix}partition = {int(partition)} AND ({condition}))"
        for (cluster, partition), condition in offsets.items()
    ))


def markers_after(raw_offsets: DataFrame, starts: list[AwaitingPartition]) -> DataFrame:
    """The transaction markers that can decide commits starting at `starts` (`awaiting_markers`): those
    past the first such commit of each partition.

    Written as one condition per partition so that Delta skips, by their statistics, the archive's files of
    other partitions and of older offsets: in a normal run only the files of the records just archived
    hold such markers, and the rest of the archive is not read.
    """
    if not starts:
        raise ValueError("markers_after: no partition awaits a marker")
    if len(starts) > _PER_PARTITION_FILTER_LIMIT:
        condition = F.col("offset") > min(s.first_offset for s in starts)
    else:
        condition = per_partition_condition({(s.cluster, s.partition): f"offset > {int(s.first_offset)}"
                                             for s in starts})
    return transaction_markers(raw_offsets.where(condition))


def transaction_outcomes(awaiting: DataFrame, markers: DataFrame) -> DataFrame:
    """(cluster, partition, offset, transaction_outcome, transaction_marker_offset) of each awaiting record.

    Kafka's loader (§5.6): offsets written in a transaction are pending until a control marker of the
    same producer id follows them in the partition; COMMIT applies them, ABORT discards them. So the
    outcome of a transactional record is the first COMMIT/ABORT marker of its producer at a higher
    offset in its partition; with none archived yet it is still open. Only positions and producer ids
    are needed: the window runs over these narrow rows, never over whole commits.
    """
    key = ["cluster", "partition", "producer_id", "offset"]
    events = awaiting.select(*key, F.lit(None).cast("string").alias("_marker")).unionByName(
        markers.select(*key, F.col("control_type").alias("_marker"))
    )
    # The next marker, as the latest one among the rows before in descending offset order: a growing frame
    # that Spark updates row by row (a frame up to unbounded following is recomputed for every row:
    # quadratic in a producer's commits in a partition).
    later_first = (
        Window.partitionBy("cluster", "partition", "producer_id")
        .orderBy(F.col("offset").desc())
        .rowsBetween(Window.unboundedPreceding, -1)
    )
    next_marker = F.last(F.col("_marker"), ignorenulls=True).over(later_first)
    next_marker_offset = F.last(F.when(F.col("_marker").isNotNull(), F.col("offset")), ignorenulls=True).over(
        later_first
    )
    return (
        events.withColumn("_next_marker", next_marker)
        .withColumn("_next_marker_offset", next_marker_offset)
        .where(F.col("_marker").isNull())
        .select(
            "cluster",
            "partition",
            "offset",
            F.when(F.col("_next_marker") == "COMMIT", F.lit(TXN_COMMITTED))
            .when(F.col("_next_marker") == "ABORT", F.lit(TXN_ABORTED))
            .otherwise(F.lit(TXN_OPEN))
            .alias("transaction_outcome"),
            F.col("_next_marker_offset").alias("transaction_marker_offset"),
        )
    )


def _live_aborted_outcome() -> Column:
    """A transactional commit with no producer id was read from Kafka, where only the records of aborted
    transactions are flagged transactional (see `jobs.ingest.read_kafka`): its outcome is "aborted"."""
    return F.when(F.col("is_transactional") & F.col("producer_id").isNull(), F.lit(TXN_ABORTED)).otherwise(
        F.col("transaction_outcome")
    )


def without_markers(offset_commits: DataFrame) -> DataFrame:
    """`resolve_transactions` for commits none of which awaits a marker (`awaiting_markers` is empty): one
    projection, no join, no shuffle."""
    return offset_commits.withColumn("transaction_outcome", _live_aborted_outcome()).select(
        *OFFSET_COMMITS.column_names
    )


def with_outcomes(offset_commits: DataFrame, outcomes: DataFrame, *, broadcast: bool) -> DataFrame:
    """offset_commits rows with the `transaction_outcomes` of the awaiting ones joined in by position.

    `broadcast` ships the outcomes to every task (they are narrow and, in a normal run, a small share of
    the commits): the commits then flow straight through to their table, with no shuffle.
    """
    # Only awaiting commits have an outcome: the others join with a null offset, which a hash join passes
    # by without a look-up (most commits are not transactional).
    commits = offset_commits.drop("transaction_outcome", "transaction_marker_offset").withColumn(
        "_awaiting_offset", F.when(_awaits_marker(), F.col("offset"))
    )
    found = outcomes.select(
        F.col("cluster").alias("_outcome_cluster"),
        F.col("partition").alias("_outcome_partition"),
        F.col("offset").alias("_outcome_offset"),
        "transaction_outcome",
        "transaction_marker_offset",
    )
    position = (
        (commits["cluster"] == found["_outcome_cluster"])
        & (commits["partition"] == found["_outcome_partition"])
        & (commits["_awaiting_offset"] == found["_outcome_offset"])
    )
    joined = commits.join(F.broadcast(found) if broadcast else found, on=position, how="left")
    return without_markers(joined)


def resolve_transactions(offset_commits: DataFrame, markers: DataFrame) -> DataFrame:
    """Set transaction_outcome/transaction_marker_offset of transactional commits from the markers
    (`transaction_outcomes`). Non-transactional commits keep a null outcome; transactional ones read from
    Kafka without a producer id are aborted (`_live_aborted_outcome`)."""
    outcomes = transaction_outcomes(awaiting_commits(offset_commits), markers)
    return with_outcomes(offset_commits, outcomes, broadcast=False)


def archived_outcomes(
    records: DataFrame,
    raw_offsets: DataFrame,
    starts: list[AwaitingPartition] | None = None,
    markers: DataFrame | None = None,
) -> tuple[int, DataFrame | None]:
    """The `transaction_outcomes` of the `awaiting_commits` among `records` (offset_commits rows or raw data
    records) against the markers archived in `raw_offsets` (`markers_after`), and how many commits await
    one. One small aggregate first (`awaiting_markers`, unless `starts` gives its result): with none
    awaiting, (0, None) and the archive is not read at all.

    `markers`, when given, are all the markers that can decide `records` (the decode stage knows when
    they are the run's own: `RunTransactions.follows`); the archive is then not read either.
    """
    starts = awaiting_markers(records) if starts is None else starts
    if not starts:
        return 0, None
    if markers is None:
        markers = markers_after(raw_offsets, starts)
    outcomes = transaction_outcomes(awaiting_commits(records), markers)
    return sum(s.commits for s in starts), outcomes


def resolved_commits(offset_commits: DataFrame, raw_offsets: DataFrame) -> DataFrame:
    """offset_commits rows with their transactions resolved against the markers archived in `raw_offsets`
    (`archived_outcomes`, as the decode stage computes them)."""
    _, outcomes = archived_outcomes(offset_commits, raw_offsets)
    if outcomes is None:
        return without_markers(offset_commits)
    return with_outcomes(offset_commits, outcomes, broadcast=False)


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


def decode_coverage_rows(decoded: DataFrame, control_records: DataFrame | None, run_id: str) -> DataFrame:
    """Counts per (cluster, record type, kind, value version, status) of what this run decoded (and of its
    control records, when given). `jobs.common.boundary.coverage_status` is the same status rule in Arrow."""
    status = (
        F.when(F.col("error").isNotNull(), F.lit("error"))
        .when(F.col("record_kind") == "unknown", F.lit("unknown_type"))
        .when(F.col("trailing_bytes") > 0, F.lit("decoded_trailing_bytes"))
        .when(F.col("is_tombstone"), F.lit("tombstone"))
        .otherwise(F.lit("decoded"))
    )
    data = decoded.select("cluster", "record_type", "record_kind", "value_version", status.alias("status"))
    if control_records is not None:
        data = data.unionByName(control_records.select(
            "cluster",
            F.lit(None).cast("short").alias("record_type"),
            F.lit("control").alias("record_kind"),
            F.lit(None).cast("short").alias("value_version"),
            F.lit("control").alias("status"),
        ))
    counts = (
        data
        .groupBy("cluster", "record_type", "record_kind", "value_version", "status")
        .agg(F.count(F.lit(1)).alias("records"))
    )
    return counts.select(
        F.lit(run_id).alias("run_id"), "cluster", "record_type", "record_kind", "value_version", "status", "records"
    )


# -- the stage ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DecodeResult:
    raw_version_decoded: int
    records_decoded: int
    decode_errors: int
    coverage: list[tuple[str, int | None, str | None, int | None, str, int]]
    #: the transaction state after the run, for the next one; None when not known
    transactions: TransactionState | None = None


#: Awaiting commits whose outcomes are broadcast to the decoding tasks; with more, the decoded commits are
#: cached and the outcomes joined with a shuffle (a fleet writing mostly transactional commits).
BROADCAST_OUTCOMES_LIMIT = 1_000_000

#: `spark.sql.execution.arrow.maxBytesPerBatch` while the offset commits go to Python: Spark measures the
#: Arrow batch it is filling after every row unless the limit is Int.MaxValue, and that measuring was about
#: 6% of the JVM's work in the job. The batches stay bounded by their row count (Arrow's maxRecordsPerBatch)
#: and an offset commit's size (group id, topic name, and metadata capped by offset.metadata.max.bytes).
_NO_BYTE_LIMIT = str(2**31 - 1)

#: Key versions 0 and 1: the offset commits, nearly every record of the topic.
_OFFSET_COMMIT_KEY_PREFIXES = (b"\x00\x00", b"\x00\x01")


def is_offset_commit_key(key: Column) -> Column:
    """Whether a raw key starts with an offset commit's key version (0 or 1): the JVM splits the records
    before anything is decoded. A key that starts so but does not decode is still caught by the decoder."""
    prefix = F.substring(key, 1, 2)
    return F.coalesce(prefix.isin(*[F.lit(bytearray(p)) for p in _OFFSET_COMMIT_KEY_PREFIXES]), F.lit(False))


@dataclass
class _CommitsWritten:
    coverage: list[tuple[Any, ...]]
    errors: DataFrame | None


def _write_offset_commits(
    tables: Tables,
    data_records: DataFrame,
    archive: DataFrame,
    batch_size: int,
    starts: list[AwaitingPartition],
    run_markers: DataFrame | None,
) -> _CommitsWritten:
    """Decode the offset-commit records among `data_records` and append them to offset_commits with their transactions
    resolved; returns their coverage counts and the records that did not decode.

    The commits are nearly all of a run's records, so they are decoded inside the job that writes them
    (no cache, no second pass): the transaction outcomes are computed first from raw columns only and
    broadcast to the tasks, and the tasks report coverage counts and undecodable records through an
    accumulator (`DecodeSideOutput`). When the outcomes are too many to broadcast, the decoded commits are
    cached instead and everything is computed from the cache.
    """
    spark = tables.spark
    commit_records = data_records.where(is_offset_commit_key(F.col("key")))
    # Raw columns say which commits await a marker (`awaiting_commits`), with no need to read the keys.
    awaiting, outcomes = archived_outcomes(data_records, archive, starts, run_markers)
    if awaiting > BROADCAST_OUTCOMES_LIMIT:  # one outcome per awaiting commit
        assert outcomes is not None
        decoded = decode_records(commit_records, batch_size).persist(StorageLevel.MEMORY_AND_DISK)
        try:
            tables.append(OFFSET_COMMITS, with_outcomes(offset_commit_rows(decoded), outcomes, broadcast=False))
            coverage = [tuple(r)[1:] for r in decode_coverage_rows(decoded, None, "").collect()]
            if not any(c[4] == "error" for c in coverage):
                return _CommitsWritten(coverage, None)
            # the error rows outlive the cache: kept, with their bytes, until the stage writes them
            return _CommitsWritten(coverage, decode_error_rows(decoded).localCheckpoint())
        finally:
            decoded.unpersist()
    side = side_output(spark)
    commits = offset_commit_rows(decode_records(commit_records, batch_size, side))
    with session_setting(spark, "spark.sql.execution.arrow.maxBytesPerBatch", _NO_BYTE_LIMIT):
        tables.append(OFFSET_COMMITS, without_markers(commits) if outcomes is None
                      else with_outcomes(commits, outcomes, broadcast=True))
    seen: DecodeSideOutput = side.value
    coverage = [(*key, count) for key, count in seen.coverage.items()]
    if seen.overflow:  # more than a task may carry back: decoded again, keeping only the errors
        return _CommitsWritten(coverage, decode_error_rows(decode_records(commit_records, batch_size)))
    if seen.errors:
        return _CommitsWritten(coverage, spark.createDataFrame(seen.errors, DECODE_ERRORS.schema))
    return _CommitsWritten(coverage, None)


def resolvable_open_commits(offset_commits: DataFrame, run_markers: DataFrame) -> DataFrame:
    """The open commits (`awaiting_commits` with outcome open) of the producers that wrote a marker in the
    same partition in this run: the only ones this run can decide."""
    open_commits = awaiting_commits(offset_commits.where(F.col("transaction_outcome") == TXN_OPEN))
    producers = ["cluster", "partition", "producer_id"]
    return open_commits.join(run_markers.select(*producers), on=producers, how="left_semi")


def resolve_previously_open(offset_commits: DataFrame, run_markers: DataFrame) -> DataFrame:
    """(cluster, partition, offset, transaction_outcome, transaction_marker_offset) of the commits left open by
    earlier runs that this run's markers decide.

    Only this run's markers are needed: a marker archived by an earlier run at a higher offset than an
    open commit would have decided it when the later of the two was decoded (the run that archives a
    commit resolves it against the whole archive), so the first marker after a still-open commit is
    among the markers archived since.
    """
    candidates = resolvable_open_commits(offset_commits, run_markers)
    return transaction_outcomes(candidates, run_markers).where(F.col("transaction_outcome") != TXN_OPEN)


def _position_filter(rows: list[Any]) -> Column | None:
    """A target filter on (cluster, partition, offset range) per partition of `rows`: lets Delta skip
    offset_commits files by statistics. None when there are too many partitions to spell out."""
    ranges: dict[tuple[str, int], tuple[int, int]] = {}
    for r in rows:
        key = (r["cluster"], r["partition"])
        lo, hi = ranges.get(key, (r["offset"], r["offset"]))
        ranges[key] = (min(lo, r["offset"]), max(hi, r["offset"]))
    if not ranges or len(ranges) > _PER_PARTITION_FILTER_LIMIT:
        return None
    return per_partition_condition(
        {key: f"t.offset BETWEEN {int(lo)} AND {int(hi)}" for key, (lo, hi) in ranges.items()}, alias="t"
    )


def _update_previously_open(tables: Tables, run_markers: DataFrame) -> int:
    """Set the outcome of the commits left open by earlier runs that this run's markers decide (a MERGE
    update of offset_commits, skipped when none is). Returns how many were resolved.

    The resolved commits are few (transactions that spanned the end of the previous run), so they are
    collected and the MERGE reads them from the driver: the MERGE neither re-reads offset_commits nor
    recomputes the outcomes to materialize its source, and its target filter narrows the files it scans
    to the partitions and offsets concerned.
    """
    resolved = resolve_previously_open(tables.read(OFFSET_COMMITS), run_markers)
    # Bounded by the transactional offset commits in flight at the end of the previous run (a `limit` would
    # make the collect scan partitions in several jobs).
    rows = resolved.collect()
    if not rows:
        return 0
    target_filter = F.col("t.transaction_outcome") == TXN_OPEN
    positions = _position_filter(rows)
    if positions is not None:
        target_filter = target_filter & positions
    tables.update_columns(
        OFFSET_COMMITS,
        tables.spark.createDataFrame(rows, resolved.schema),
        ["transaction_outcome", "transaction_marker_offset"],
        only_if=f"t.transaction_outcome = '{TXN_OPEN}'",
        target_filter=target_filter,
    )
    return len(rows)


#: Open producers kept in a run's commit note; with more, the next run finds them with a scan instead.
TRANSACTION_STATE_LIMIT = 10_000

Partition = tuple[str, int]
Producer = tuple[str, int, int]


@dataclass(frozen=True)
class TransactionState:
    """What the archive held after a run, as far as transactions go: the last offset archived in each
    `__consumer_offsets` partition and the producers with commits still open there (with the offset range
    of those commits).

    Carried from run to run in the commit note (`jobs.nightly.commit_note`), it spares a run the two
    reads that otherwise look back into the tables: the scan of offset_commits for the transactions
    left open, and the lookup of markers in the archive. Either read is done instead when the state is
    not known (`archived_transaction_state`).
    """

    last_offsets: dict[Partition, int]
    open_producers: dict[Producer, tuple[int, int]]

    def to_json(self) -> dict[str, Any] | None:
        """A JSON-ready form; None when there are too many open producers to carry."""
        if len(self.open_producers) > TRANSACTION_STATE_LIMIT:
            return None
        return {
            "last_offsets": [[c, p, o] for (c, p), o in sorted(self.last_offsets.items())],
            "open_producers": [[c, p, x, lo, hi] for (c, p, x), (lo, hi) in sorted(self.open_producers.items())],
        }

    @staticmethod
    def from_json(data: Any) -> TransactionState | None:
        """The state from `to_json`'s form; None for anything else (the tables are read instead)."""
        try:
            return TransactionState(
                {(str(c), int(p)): int(o) for c, p, o in data["last_offsets"]},
                {(str(c), int(p), int(x)): (int(lo), int(hi)) for c, p, x, lo, hi in data["open_producers"]},
            )
        except (KeyError, TypeError, ValueError):
            return None


@dataclass(frozen=True)
class RunTransactions:
    """A run's new records summed up per partition and producer (`run_transactions`, one aggregate)."""

    first_offsets: dict[Partition, int]
    last_offsets: dict[Partition, int]
    #: per partition: the first commit awaiting a marker and how many do (`awaiting_markers`'s result)
    awaiting: list[AwaitingPartition]
    #: per producer: its first marker in the run (offset, COMMIT/ABORT)
    first_markers: dict[Producer, tuple[int, str]]
    #: per producer: the offsets of its commits after its last marker in the run (still open after it)
    open_after: dict[Producer, tuple[int, int]]

    def follows(self, before: TransactionState) -> bool:
        """Whether every partition's new records come after everything archived before (`before`): then
        no marker archived earlier can follow any of them, and the run's own markers decide everything
        that this run can decide. Only a backfill of older offsets breaks this."""
        return all(first > before.last_offsets.get(key, -1) for key, first in self.first_offsets.items())

    def decided(self, before: TransactionState) -> dict[Producer, tuple[str, int]]:
        """The producers open `before` that this run decides: (outcome, marker offset) from their first
        marker in the run, which, when the run `follows` `before`, is the first marker after every one of
        their open commits."""
        outcome = {"COMMIT": TXN_COMMITTED, "ABORT": TXN_ABORTED}
        decided = {}
        for key in before.open_producers:
            if key in self.first_markers:
                offset, kind = self.first_markers[key]
                decided[key] = (outcome[kind], offset)
        return decided

    def after(self, before: TransactionState) -> TransactionState:
        """The state once this run is decoded (when it `follows` `before`)."""
        last = dict(before.last_offsets)
        for partition, offset in self.last_offsets.items():
            last[partition] = max(offset, last.get(partition, offset))
        still_open = {key: span for key, span in before.open_producers.items() if key not in self.first_markers}
        for producer, (lo, hi) in self.open_after.items():
            earlier = still_open.get(producer)
            still_open[producer] = (earlier[0], hi) if earlier else (lo, hi)
        return TransactionState(last, still_open)


def run_transaction_rows(new_raw: DataFrame) -> DataFrame:
    """The aggregate behind `RunTransactions`: per (partition, producer) of the transactional commits and
    markers of a run's new raw records (every other record in one row per partition, producer null)."""
    awaiting = ~F.col("is_control") & _awaits_marker()
    marker = _is_marker()
    return new_raw.groupBy(
        "cluster", "partition", F.when(awaiting | marker, F.col("producer_id")).alias("producer")
    ).agg(
        F.min("offset").alias("first_offset"),
        F.max("offset").alias("last_offset"),
        F.count(F.when(awaiting, True)).alias("awaiting"),
        F.min(F.when(awaiting, F.col("offset"))).alias("first_awaiting"),
        F.max(F.when(awaiting, F.col("offset"))).alias("last_awaiting"),
        F.min(F.when(marker, F.struct("offset", "control_type"))).alias("first_marker"),
        F.max(F.when(marker, F.col("offset"))).alias("last_marker"),
    )


def run_transactions(new_raw: DataFrame) -> RunTransactions:
    """`RunTransactions` of a run's new raw records (`run_transaction_rows`, collected)."""
    return summarize_run_transactions(run_transaction_rows(new_raw).collect())


def summarize_run_transactions(rows: list[Any]) -> RunTransactions:
    """`RunTransactions` from the rows of `run_transaction_rows`."""
    first: dict[Partition, int] = {}
    last: dict[Partition, int] = {}
    starts: dict[Partition, tuple[int, int]] = {}
    first_markers: dict[Producer, tuple[int, str]] = {}
    open_after: dict[Producer, tuple[int, int]] = {}
    for r in rows:
        key = (r["cluster"], int(r["partition"]))
        first[key] = min(int(r["first_offset"]), first.get(key, int(r["first_offset"])))
        last[key] = max(int(r["last_offset"]), last.get(key, int(r["last_offset"])))
        if r["producer"] is None:
            continue
        producer = (*key, int(r["producer"]))
        if r["awaiting"]:
            lo, count = starts.get(key, (int(r["first_awaiting"]), 0))
            starts[key] = (min(lo, int(r["first_awaiting"])), count + int(r["awaiting"]))
        if r["first_marker"] is not None:
            first_markers[producer] = (int(r["first_marker"]["offset"]), r["first_marker"]["control_type"])
        if r["last_awaiting"] is not None and (r["last_marker"] is None or r["last_awaiting"] > r["last_marker"]):
            lo = int(r["first_awaiting"]) if r["last_marker"] is None else int(r["last_marker"]) + 1
            open_after[producer] = (lo, int(r["last_awaiting"]))
    return RunTransactions(
        first, last, [AwaitingPartition(c, p, lo, n) for (c, p), (lo, n) in sorted(starts.items())],
        first_markers, open_after,
    )


def archived_transaction_state(tables: Tables, raw_version: int) -> TransactionState:
    """The `TransactionState` read from the tables (when no commit note carries it): the last offset of
    each partition in raw_offsets at `raw_version`, and the open commits of offset_commits."""
    last: dict[Partition, int] = {}
    if raw_version > 0:
        for r in (tables.read(RAW_OFFSETS, version=raw_version).groupBy("cluster", "partition")
                  .agg(F.max("offset").alias("last")).collect()):
            last[(r["cluster"], int(r["partition"]))] = int(r["last"])
    open_producers: dict[Producer, tuple[int, int]] = {}
    if tables.version(OFFSET_COMMITS) > 0:
        open_commits = awaiting_commits(tables.read(OFFSET_COMMITS).where(F.col("transaction_outcome") == TXN_OPEN))
        for r in (open_commits.groupBy("cluster", "partition", "producer_id")
                  .agg(F.min("offset").alias("lo"), F.max("offset").alias("hi")).collect()):
            open_producers[(r["cluster"], int(r["partition"]), int(r["producer_id"]))] = (int(r["lo"]), int(r["hi"]))
    return TransactionState(last, open_producers)


#: Decided producers set with one UPDATE naming each (its condition and CASE grow with them); past this, a MERGE.
DECIDED_BY_UPDATE_LIMIT = 200


def _update_decided_producers(
    tables: Tables, before: TransactionState, decided: dict[Producer, tuple[str, int]]
) -> None:
    """Set the outcome of the open commits of the `decided` producers.

    Up to `DECIDED_BY_UPDATE_LIMIT` producers (a normal run: the transactions that spanned the end of the
    previous one), one Delta UPDATE whose condition names each producer with the offset range of its open
    commits, so Delta reads only the files those ranges may be in: 1.2-1.7 s on the 10M benchmark's 1% runs,
    where the MERGE it replaced took 2.2-3.2 s. With more, a MERGE from rows on the driver keyed by producer.
    """
    if len(decided) <= DECIDED_BY_UPDATE_LIMIT:
        def producer(cluster: str, partition: int, producer_id: int) -> str:
            return (f"cluster = {_sql_string(cluster)} AND partition = {int(partition)}"
                    f" AND producer_id = {int(producer_id)}")

        ranges = {key: before.open_producers[key] for key in decided}
        where = f"transaction_outcome = '{TXN_OPEN}' AND (" + " OR ".join(
            f"({producer(*key)} AND offset BETWEEN {int(lo)} AND {int(hi)})" for key, (lo, hi) in ranges.items()
        ) + ")"
        outcome = " ".join(f"WHEN {producer(*key)} THEN {_sql_string(o)}" for key, (o, _) in decided.items())
        marker = " ".join(f"WHEN {producer(*key)} THEN {int(m)}" for key, (_, m) in decided.items())
        tables.update_where(OFFSET_COMMITS, where, {
            "transaction_outcome": f"CASE {outcome} END",
            "transaction_marker_offset": f"CASE {marker} END",
        })
        return
    rows = [(c, p, x, outcome, marker) for (c, p, x), (outcome, marker) in decided.items()]
    schema = "cluster string, partition int, producer_id long, transaction_outcome string, " \
             "transaction_marker_offset long"
    partitions: dict[Partition, tuple[int, int]] = {}
    for c, p, x in decided:
        lo, hi = before.open_producers[(c, p, x)]
        seen = partitions.get((c, p), (lo, hi))
        partitions[(c, p)] = (min(lo, seen[0]), max(hi, seen[1]))
    target_filter = F.col("t.transaction_outcome") == TXN_OPEN
    if len(partitions) <= _PER_PARTITION_FILTER_LIMIT:
        target_filter = target_filter & per_partition_condition(
            {key: f"t.offset BETWEEN {lo} AND {hi}" for key, (lo, hi) in partitions.items()}, alias="t"
        )
    # The source rows are held on the driver: Delta need not materialize them first (a job of its own).
    with session_setting(tables.spark, "spark.databricks.delta.merge.materializeSource", "none"):
        tables.update_columns(
            OFFSET_COMMITS,
            tables.spark.createDataFrame(rows, schema),
            ["transaction_outcome", "transaction_marker_offset"],
            only_if=f"t.transaction_outcome = '{TXN_OPEN}'",
            target_filter=target_filter,
            on=("cluster", "partition", "producer_id"),
        )


def run_decode(
    tables: Tables,
    run_id: str,
    after_raw_version: int,
    batch_size: int,
    transactions: TransactionState | None = None,
) -> DecodeResult:
    """Decode the raw_offsets rows appended after `after_raw_version` and write the silver tables.

    Two kinds of records, split in the JVM by key version: offset commits (nearly all) are decoded in the
    job that writes offset_commits (`_write_offset_commits`); the rest (GroupMetadata, KIP-848 and unknown
    types, keys too short to tell) is decoded once, cached, and written to the other tables.

    Adaptive query execution is off for the stage: its shuffles (outcome and member windows, small
    aggregates, Delta's MERGE) gain nothing from re-planning, while AQE runs every exchange as a Spark job
    of its own. On the 10M benchmark's 1% increment that was about 12% of the run (~45 small jobs); the
    full 10M run was the same either way.
    """
    with session_setting(tables.spark, "spark.sql.adaptive.enabled", "false"):
        return _decode_new_records(tables, run_id, after_raw_version, batch_size, transactions)


def _decode_new_records(
    tables: Tables, run_id: str, after_raw_version: int, batch_size: int, transactions: TransactionState | None
) -> DecodeResult:
    up_to = tables.version(RAW_OFFSETS)
    if up_to <= after_raw_version:
        return DecodeResult(after_raw_version, 0, 0, [], transactions)
    spark = tables.spark
    new_raw = tables.changes(RAW_OFFSETS, after_raw_version, up_to)
    data_records = new_raw.where(~F.col("is_control"))
    control_records = new_raw.where(F.col("is_control"))
    archive = tables.read(RAW_OFFSETS, version=up_to)

    not_commits = data_records.where(~is_offset_commit_key(F.col("key")))
    others = decode_records(not_commits, batch_size).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        with step("decode GroupMetadata and other records; sum up the new records' transactions"):
            coverage, transaction_rows = collect_together(
                decode_coverage_rows(others, control_records, run_id), run_transaction_rows(new_raw)
            )
            coverage_rows = [tuple(r)[1:] for r in coverage]
            run = summarize_run_transactions(transaction_rows)
        if transactions is not None:
            before = transactions
        else:
            with step("transactions left open by earlier runs (read from the tables)"):
                before = archived_transaction_state(tables, after_raw_version)
        # Commits left open by earlier runs that this run's markers decide. Updated before this run's commits
        # are appended: the UPDATE then reads the offset_commits snapshot the run starts from (reading each
        # new table version costs a Delta state reconstruction), and a blind append beside it would fail its
        # conflict check.
        in_order = run.follows(before)
        if in_order:
            decided = run.decided(before)
            if decided:
                with step(f"resolve {len(decided)} transactions left open by earlier runs"):
                    _update_decided_producers(tables, before, decided)
        elif run.first_markers and tables.version(OFFSET_COMMITS) > 0:
            # Older offsets backfilled: the commits' order against the markers is worked out row by row.
            with step("resolve transactions left open by earlier runs"):
                _update_previously_open(tables, transaction_markers(control_records))
        with step("decode offset commits into offset_commits"):
            commits = _write_offset_commits(
                tables, data_records, archive, batch_size, run.awaiting,
                transaction_markers(control_records) if in_order else None,
            )
        coverage_rows += commits.coverage
        records_decoded = sum(r[5] for r in coverage_rows if r[4] != "control")
        errors = sum(r[5] for r in coverage_rows if r[4] == "error")

        # A table with no new rows gets no commit (each Delta commit costs seconds on a small run).
        present = {(r[1], r[4]) for r in coverage_rows}
        has_group_metadata = any(t == GROUP_METADATA_TYPE and s != "error" for t, s in present)
        has_other = any(
            s in ("decoded", "decoded_trailing_bytes", "tombstone", "unknown_type")
            and (t is None or t > GROUP_METADATA_TYPE)
            for t, s in present
        )
        # The remaining tables are independent of each other: written at the same time (`write_together`;
        # a 1% run on the 10M benchmark tables: 2.1-2.3 s for these writes, 2.4-2.6 s one after another).
        writes: dict[str, Callable[[], None]] = {}
        if has_group_metadata:
            writes[GROUP_METADATA.name] = partial(tables.append, GROUP_METADATA, group_metadata_rows(others))
            writes[GROUP_MEMBERS.name] = partial(tables.replace_generations, GROUP_MEMBERS, group_member_rows(others))
        if has_other:
            writes[CONSUMER_GROUP_RECORDS.name] = partial(
                tables.append, CONSUMER_GROUP_RECORDS, consumer_group_record_rows(others)
            )
        if errors:
            error_rows = decode_error_rows(others)
            if commits.errors is not None:
                error_rows = error_rows.unionByName(commits.errors)
            writes[DECODE_ERRORS.name] = partial(tables.append, DECODE_ERRORS, error_rows)
        writes[DECODE_COVERAGE.name] = partial(
            tables.append, DECODE_COVERAGE,
            spark.createDataFrame([(run_id, *r) for r in coverage_rows], DECODE_COVERAGE.schema),
        )
        with step(", ".join(writes)):
            write_together(list(writes.values()))
    finally:
        others.unpersist()
    # After a backfill the next run reads the state from the tables again.
    after = run.after(before) if in_order else None
    return DecodeResult(up_to, records_decoded, errors, [tuple(r) for r in coverage_rows], after)


# ----------------------------------------------------------------------------------------------
# Upgrade of a warehouse written by an older version


def group_metadata_lacks_members(tables: Tables) -> bool:
    """Whether group_metadata was written before it kept each record's decoded members."""
    return tables.exists(GROUP_METADATA) and "members" not in tables.delta(GROUP_METADATA).toDF().columns


def add_group_metadata_members(tables: Tables, batch_size: int) -> int:
    """Give a group_metadata table of an older version its `members` column, filled from the archive.

    The history reads each record's members from group_metadata instead of decoding the archived bytes
    again, so the rows written before the column existed get theirs once: the archived GroupMetadata
    records are decoded (the one full read, at the upgrade) and matched on (cluster, partition, offset).
    Two commits (the column, then the values); a run that dies after them is rolled back to before them by
    the next run, which does the upgrade again. Returns the rows filled.
    """
    member_type = GROUP_METADATA.schema["members"].dataType.simpleString()
    tables.spark.sql(f"ALTER TABLE delta.`{tables.path(GROUP_METADATA)}` ADD COLUMNS (members {member_type})")
    archived = tables.read(RAW_OFFSETS).where(
        ~F.col("is_control") & (F.substring("key", 1, 2) == F.unhex(F.lit("0002"))))
    members = (group_metadata_rows(decode_records(archived, batch_size))
               .select("cluster", "partition", "offset", "members").where(F.col("members").isNotNull()))
    (tables.delta(GROUP_METADATA).alias("t")
     .merge(members.alias("s"), "t.cluster = s.cluster AND t.partition = s.partition AND t.offset = s.offset")
     .whenMatchedUpdate(set={"members": F.col("s.members")})
     .execute())
    return int(tables.read(GROUP_METADATA).where(F.col("members").isNotNull()).count())
