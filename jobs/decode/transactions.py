"""Transactions across runs: the state one run hands the next, and the commits left open by earlier runs
that a run's markers decide (Delta updates of offset_commits).

A run normally follows everything archived before it (`RunTransactions.follows`); its own markers then
decide all it can, and the producers left open before it are set with one UPDATE. A backfill of older
offsets is resolved by offset order against the tables instead (`update_previously_open`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from jobs.common.delta_io import Tables
from jobs.common.session import session_setting
from jobs.decode.outcomes import (
    PER_PARTITION_FILTER_LIMIT,
    AwaitingPartition,
    awaiting_commits,
    awaits_marker,
    is_marker,
    per_partition_condition,
    resolve_previously_open,
    sql_string,
)
from schemas import OFFSET_COMMITS, RAW_OFFSETS
from schemas.columns import CLUSTER, OFFSET, PARTITION, PRODUCER_ID, TXN_ABORTED, TXN_COMMITTED, TXN_OPEN


def _position_filter(rows: list[Any]) -> Column | None:
    """A target filter on (cluster, partition, offset range) per partition of `rows`: lets Delta skip
    offset_commits files by statistics. None when there are too many partitions to spell out."""
    ranges: dict[tuple[str, int], tuple[int, int]] = {}
    for r in rows:
        key = (r[CLUSTER], r[PARTITION])
        lo, hi = ranges.get(key, (r[OFFSET], r[OFFSET]))
        ranges[key] = (min(lo, r[OFFSET]), max(hi, r[OFFSET]))
    if not ranges or len(ranges) > PER_PARTITION_FILTER_LIMIT:
        return None
    return per_partition_condition(
        {key: f"t.offset BETWEEN {int(lo)} AND {int(hi)}" for key, (lo, hi) in ranges.items()}, alias="t"
    )


def update_previously_open(tables: Tables, run_markers: DataFrame) -> int:
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

    Carried from run to run in the commit note (`jobs.run_commit.commit_note`), it spares a run the two
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
    awaiting = ~F.col("is_control") & awaits_marker()
    marker = is_marker()
    return new_raw.groupBy(
        CLUSTER, PARTITION, F.when(awaiting | marker, F.col(PRODUCER_ID)).alias("producer")
    ).agg(
        F.min(OFFSET).alias("first_offset"),
        F.max(OFFSET).alias("last_offset"),
        F.count(F.when(awaiting, True)).alias("awaiting"),
        F.min(F.when(awaiting, F.col(OFFSET))).alias("first_awaiting"),
        F.max(F.when(awaiting, F.col(OFFSET))).alias("last_awaiting"),
        F.min(F.when(marker, F.struct(OFFSET, "control_type"))).alias("first_marker"),
        F.max(F.when(marker, F.col(OFFSET))).alias("last_marker"),
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
        key = (r[CLUSTER], int(r[PARTITION]))
        first[key] = min(int(r["first_offset"]), first.get(key, int(r["first_offset"])))
        last[key] = max(int(r["last_offset"]), last.get(key, int(r["last_offset"])))
        if r["producer"] is None:
            continue
        producer = (*key, int(r["producer"]))
        if r["awaiting"]:
            lo, count = starts.get(key, (int(r["first_awaiting"]), 0))
            starts[key] = (min(lo, int(r["first_awaiting"])), count + int(r["awaiting"]))
        if r["first_marker"] is not None:
            first_markers[producer] = (int(r["first_marker"][OFFSET]), r["first_marker"]["control_type"])
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
        for r in (tables.read(RAW_OFFSETS, version=raw_version).groupBy(CLUSTER, PARTITION)
                  .agg(F.max(OFFSET).alias("last")).collect()):
            last[(r[CLUSTER], int(r[PARTITION]))] = int(r["last"])
    open_producers: dict[Producer, tuple[int, int]] = {}
    if tables.version(OFFSET_COMMITS) > 0:
        open_commits = awaiting_commits(tables.read(OFFSET_COMMITS).where(F.col("transaction_outcome") == TXN_OPEN))
        for r in (open_commits.groupBy(CLUSTER, PARTITION, PRODUCER_ID)
                  .agg(F.min(OFFSET).alias("lo"), F.max(OFFSET).alias("hi")).collect()):
            open_producers[(r[CLUSTER], int(r[PARTITION]), int(r[PRODUCER_ID]))] = (int(r["lo"]), int(r["hi"]))
    return TransactionState(last, open_producers)


#: Decided producers set with one UPDATE naming each (its condition and CASE grow with them); past this, a MERGE.
DECIDED_BY_UPDATE_LIMIT = 200


def update_decided_producers(
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
            return (f"cluster = {sql_string(cluster)} AND partition = {int(partition)}"
                    f" AND producer_id = {int(producer_id)}")

        ranges = {key: before.open_producers[key] for key in decided}
        where = f"transaction_outcome = '{TXN_OPEN}' AND (" + " OR ".join(
            f"({producer(*key)} AND offset BETWEEN {int(lo)} AND {int(hi)})" for key, (lo, hi) in ranges.items()
        ) + ")"
        outcome = " ".join(f"WHEN {producer(*key)} THEN {sql_string(o)}" for key, (o, _) in decided.items())
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
    if len(partitions) <= PER_PARTITION_FILTER_LIMIT:
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
            on=(CLUSTER, PARTITION, PRODUCER_ID),
        )
