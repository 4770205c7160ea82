"""Transaction markers -> the outcome of the commits written in transactions (pure transforms).

Kafka's loader (§5.6): offsets written in a transaction are pending until a COMMIT/ABORT control record
(a marker) of the same producer follows them in the partition. Only positions, producer ids and markers
are needed, so the outcomes are computed from raw columns, before the commits are decoded
(`jobs.decode.stage`). `jobs.decode.transactions` carries what stays open from run to run.
"""

from __future__ import annotations

from typing import NamedTuple

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from schemas import OFFSET_COMMITS
from schemas.columns import (
    CLUSTER,
    IS_TRANSACTIONAL,
    OFFSET,
    PARTITION,
    PRODUCER_ID,
    TXN_ABORTED,
    TXN_COMMITTED,
    TXN_OPEN,
)

TRANSACTION_MARKERS = ("COMMIT", "ABORT")

#: Above this many partitions the marker filter is one lowest offset for all (a shorter plan, less skipping).
PER_PARTITION_FILTER_LIMIT = 200


def is_marker() -> Column:
    """A raw record that is a COMMIT/ABORT control record (a transaction marker)."""
    return F.col("is_control") & F.col("control_type").isin(*TRANSACTION_MARKERS)


def awaits_marker() -> Column:
    """A data record (offset_commits row or raw record that is not a control record) that a marker decides."""
    return F.col(IS_TRANSACTIONAL) & F.col(PRODUCER_ID).isNotNull()


def transaction_markers(raw_offsets: DataFrame) -> DataFrame:
    """COMMIT/ABORT control records: (cluster, partition, producer_id, offset, control_type)."""
    return raw_offsets.where(is_marker()).select(CLUSTER, PARTITION, PRODUCER_ID, OFFSET, "control_type")


def awaiting_commits(records: DataFrame) -> DataFrame:
    """(cluster, partition, producer_id, offset) of the records whose outcome a transaction marker decides:
    transactional ones with a producer id. Takes offset_commits rows or raw data records (not control
    records): in `__consumer_offsets` only TxnOffsetCommit records are written in transactions, so the raw
    columns say which commits await a marker before anything is decoded."""
    return records.where(awaits_marker()).select(CLUSTER, PARTITION, PRODUCER_ID, OFFSET)


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
        .groupBy(CLUSTER, PARTITION)
        .agg(F.min(OFFSET).alias("first_offset"), F.count(F.lit(1)).alias("commits"))
        .collect()
    )
    return [AwaitingPartition(r[CLUSTER], int(r[PARTITION]), int(r["first_offset"]), int(r["commits"]))
            for r in rows]


def sql_string(value: str) -> str:
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
        f"({prefix}cluster = {sql_string(cluster)} AND {prefix}partition = {int(partition)} AND ({condition}))"
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
    if len(starts) > PER_PARTITION_FILTER_LIMIT:
        condition = F.col(OFFSET) > min(s.first_offset for s in starts)
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
    key = [CLUSTER, PARTITION, PRODUCER_ID, OFFSET]
    events = awaiting.select(*key, F.lit(None).cast("string").alias("_marker")).unionByName(
        markers.select(*key, F.col("control_type").alias("_marker"))
    )
    # The next marker, as the latest one among the rows before in descending offset order: a growing frame
    # that Spark updates row by row (a frame up to unbounded following is recomputed for every row:
    # quadratic in a producer's commits in a partition).
    later_first = (
        Window.partitionBy(CLUSTER, PARTITION, PRODUCER_ID)
        .orderBy(F.col(OFFSET).desc())
        .rowsBetween(Window.unboundedPreceding, -1)
    )
    next_marker = F.last(F.col("_marker"), ignorenulls=True).over(later_first)
    next_marker_offset = F.last(F.when(F.col("_marker").isNotNull(), F.col(OFFSET)), ignorenulls=True).over(
        later_first
    )
    return (
        events.withColumn("_next_marker", next_marker)
        .withColumn("_next_marker_offset", next_marker_offset)
        .where(F.col("_marker").isNull())
        .select(
            CLUSTER,
            PARTITION,
            OFFSET,
            F.when(F.col("_next_marker") == "COMMIT", F.lit(TXN_COMMITTED))
            .when(F.col("_next_marker") == "ABORT", F.lit(TXN_ABORTED))
            .otherwise(F.lit(TXN_OPEN))
            .alias("transaction_outcome"),
            F.col("_next_marker_offset").alias("transaction_marker_offset"),
        )
    )


def _live_aborted_outcome() -> Column:
    """A transactional commit with no producer id was read from Kafka, where only the records of aborted
    transactions are flagged transactional (see `jobs.ingest.kafka_source.read_kafka`): its outcome is "aborted"."""
    return F.when(F.col(IS_TRANSACTIONAL) & F.col(PRODUCER_ID).isNull(), F.lit(TXN_ABORTED)).otherwise(
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
        "_awaiting_offset", F.when(awaits_marker(), F.col(OFFSET))
    )
    found = outcomes.select(
        F.col(CLUSTER).alias("_outcome_cluster"),
        F.col(PARTITION).alias("_outcome_partition"),
        F.col(OFFSET).alias("_outcome_offset"),
        "transaction_outcome",
        "transaction_marker_offset",
    )
    position = (
        (commits[CLUSTER] == found["_outcome_cluster"])
        & (commits[PARTITION] == found["_outcome_partition"])
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


def resolvable_open_commits(offset_commits: DataFrame, run_markers: DataFrame) -> DataFrame:
    """The open commits (`awaiting_commits` with outcome open) of the producers that wrote a marker in the
    same partition in this run: the only ones this run can decide."""
    open_commits = awaiting_commits(offset_commits.where(F.col("transaction_outcome") == TXN_OPEN))
    producers = [CLUSTER, PARTITION, PRODUCER_ID]
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
