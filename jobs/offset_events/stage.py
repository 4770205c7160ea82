"""The offset_events stage: the fold over a run's new rows and the touched groups' carried state, computed
with its intermediates kept (`fold_offset_events`), then written (`write_offset_events`): offset_events
rows upserted or withdrawn, and group_state.offsets."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from jobs.common.delta_io import Tables
from jobs.common.group_state import StateWrites, clear_state, merge_state
from jobs.common.per_group import GROUP_KEY
from jobs.common.progress import log
from jobs.offset_events.inputs import _empty, read_run_inputs, sweeps_near
from jobs.offset_events.kinds import GROUP_LEVEL, LOG_MATCH_MS
from jobs.offset_events.rows import (
    _event_row,
    _tombstone_inputs,
    classify_tombstones,
    commit_rows,
    stall_rows,
    tombstone_rows,
)
from jobs.offset_events.sequence import (
    _checkpoints,
    _context_records,
    _conversions,
    _partition_sequences,
    _runs,
    _with_context,
)
from jobs.offset_events.state import _held_records, _new_state
from schemas import CONSUMER_GROUP_RECORDS, GROUP_METADATA, OFFSET_COMMITS
from schemas.gold import OFFSET_EVENTS
from schemas.logs import COORDINATOR_EVENTS
from schemas.state import GROUP_STATE

#: CGH_TRACE_OFFSET_EVENTS=1 logs each step's rows and seconds.
_TRACE = os.environ.get("CGH_TRACE_OFFSET_EVENTS") == "1"


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


def _without(rows: DataFrame, others: DataFrame, columns: list[str]) -> DataFrame:
    """`rows` whose `columns` match no row of `others`, nulls matching nulls (a group row has no topic)."""
    condition = None
    for c in columns:
        term = rows[c].eqNullSafe(others[c])
        condition = term if condition is None else condition & term
    return rows.join(others, on=condition, how="left_anti")


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


class _Keeper:
    """The intermediates one fold keeps (see `_kept`): later steps read their rows instead of recomputing
    them. Counts the ones asked for (`sizes`), and lets them all go at once (`release`)."""

    def __init__(self) -> None:
        self.sizes: dict[str, int] = {}
        self._releases: list[Callable[[], None]] = []

    def __call__(self, frame: DataFrame, name: str, count: bool = False) -> DataFrame:
        t0 = time.monotonic()
        kept, let_go = _kept(frame)
        self._releases.append(let_go)
        if count or _TRACE:
            self.sizes[name] = kept.count()
        if _TRACE:
            log(f"  offset_events {name}: {self.sizes[name]} rows, {time.monotonic() - t0:.2f}s")
        return kept

    def release(self) -> None:
        for let_go in self._releases:
            let_go()
        self._releases.clear()


def run_offset_events(
    tables: Tables,
    run_id: str,
    since: Mapping[str, int] | None,
    *,
    stall_min_commits: int = 3,
    stall_min_ms: int = 60_000,
    reopen_hours: float = 48.0,
    pending: StateWrites | None = None,
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
        pending: where the offsets states go when the stage writes its states together (None: now).
    """
    if since is None:
        tables.delete_where(OFFSET_EVENTS, "true")
        clear_state(tables, ["offsets"])
    changes = fold_offset_events(tables, since, stall_min_commits=stall_min_commits, stall_min_ms=stall_min_ms,
                                 reopen_hours=reopen_hours)
    try:
        write_offset_events(tables, changes, run_id, pending)
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


def write_offset_events(tables: Tables, changes: OffsetEventChanges, run_id: str,
                        pending: StateWrites | None = None) -> None:
    """offset_events first, then the state that produced it (the nightly run rolls both back together)."""
    if changes.result.rows_written or changes.result.rows_deleted:
        tables.upsert(OFFSET_EVENTS, changes.rows, delete_flag="_deleted")
    if changes.result.groups:
        merge_state(tables, changes.state, ["offsets"], run_id, pending)


def _nothing(tables: Tables, keep: _Keeper) -> OffsetEventChanges:
    """The fold of a run with nothing new: no rows, no state."""
    no_rows = T.StructType([*OFFSET_EVENTS.schema.fields, T.StructField("_deleted", T.BooleanType())])
    no_state = _empty(tables, GROUP_STATE.schema).select(*GROUP_KEY, "offsets")
    return OffsetEventChanges(_empty(tables, no_rows), no_state, OffsetEventsResult(0, 0, 0, 0, 0, 0, 0),
                              keep.release)


@dataclass(frozen=True)
class _New:
    """The run's new rows, kept (see `read_run_inputs`)."""

    records: DataFrame
    events: DataFrame
    sweeps: DataFrame
    updates: DataFrame


def _held_state(tables: Tables, since: Mapping[str, int] | None, new: _New, keep: _Keeper) -> DataFrame:
    """The carried state of the groups touched: new records or log lines, a decided transaction in a carried
    tail, or a new sweep line near a settled tombstone. group_state holds a row per group of the fleet: only
    the clusters with news are read."""
    clusters = [r["cluster"] for r in new.records.select("cluster").unionByName(new.events.select("cluster"))
                .unionByName(new.sweeps.select("cluster")).unionByName(new.updates.select("cluster")).distinct()
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
                     .join(new.updates.drop("transaction_outcome"),
                           on=["cluster", "record_partition", "record_offset"], how="left_semi")
                     .select(*GROUP_KEY))
    # A new group-less sweep line is late evidence for the settled tombstones of its cluster near it.
    swept = (state.select(*GROUP_KEY, F.explode("offsets.tombstones.timestamp_ms").alias("timestamp_ms"))
             .join(new.sweeps.select("cluster", "at"), on="cluster", how="inner")
             .where(F.abs(F.unix_micros("at") - F.col("timestamp_ms") * 1000) <= LOG_MATCH_MS * 1000)
             .select(*GROUP_KEY))
    touched = (new.records.select(*GROUP_KEY).unionByName(new.events.select(*GROUP_KEY))
               .unionByName(decided_tails).unionByName(swept).distinct())
    return keep(state.join(touched, on=GROUP_KEY, how="left_semi"), "held", count=True)


def _with_tails(new: _New, held: DataFrame) -> DataFrame:
    """The night's records and the carried tails, each tail commit with its transaction's outcome if it
    was decided since."""
    tail = (_held_records(held)
            .join(new.updates.withColumnRenamed("transaction_outcome", "_decided"),
                  on=["cluster", "record_partition", "record_offset"], how="left")
            .withColumn("transaction_outcome", F.coalesce("_decided", "transaction_outcome")).drop("_decided"))
    return new.records.unionByName(tail.select(*new.records.columns))


def _classified(tables: Tables, version: int, held: DataFrame, new_events: DataFrame, context: DataFrame,
                sequence: DataFrame, keep: _Keeper) -> tuple[DataFrame, DataFrame]:
    """The log lines in play (carried and new), and the tombstones classified: the night's, and the settled
    ones still open to late evidence (`_settled`, with their former `_was_*` classification)."""
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
    sweeps = keep(sweeps_near(tables, version, tombstones), "sweeps")
    return events, keep(classify_tombstones(tombstones, events, group_tombstones, sweeps), "classified")


def _row_changes(held: DataFrame, sequence: DataFrame, runs: DataFrame, classified: DataFrame,
                 stall_min_commits: int, stall_min_ms: int, keep: _Keeper) -> tuple[DataFrame, DataFrame]:
    """The rows written (new or replaced: `emitted`) and, with them, those withdrawn (provisional rows the
    run no longer gives; a settled tombstone's row under its former kind): (changes, emitted)."""
    changed_settled = classified.where(F.col("_settled") & ~(
        (F.col("_kind") == F.col("_was_kind")) & (F.col("_explanation") == F.col("_was_explanation"))
        & (F.size("_evidence") == F.col("_was_evidence"))))
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
    return changes, emitted


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
    keep = _Keeper()
    # No row of the inputs changed (their commit files say so): nothing to read.
    if since is not None and not any(tables.data_changed_since(spec, int(since.get(spec.name, 0)))
                                     for spec in inputs_read):
        return _nothing(tables, keep)
    inputs = read_run_inputs(tables, since, versions)
    new = _New(keep(inputs.records, "new_records", count=True), keep(inputs.events, "new_events", count=True),
               keep(inputs.sweeps, "new_sweeps", count=True),
               keep(inputs.outcome_updates, "outcome_updates", count=True))
    sizes = keep.sizes
    if not (sizes["new_records"] or sizes["new_events"] or sizes["new_sweeps"] or sizes["outcome_updates"]):
        return _nothing(tables, keep)
    held = _held_state(tables, since, new, keep)
    records = keep(_with_tails(new, held), "records")

    # The fold: group context, checkpoints, each partition's sequence and stall runs.
    group_records = records.where(F.col("kind").isin(*GROUP_LEVEL))
    conversions = keep(_conversions(records, group_records, held), "conversions")
    context = keep(_context_records(group_records, conversions, held), "context")
    checkpoints = keep(_checkpoints(records, conversions, held, new.events, horizon_ms), "checkpoints")
    contextual = keep(_with_context(records, context, held, checkpoints), "contextual")
    sequence = keep(_partition_sequences(contextual, held, checkpoints), "sequence")
    runs = keep(_runs(sequence), "runs")

    events, classified = _classified(tables, versions[COORDINATOR_EVENTS.name], held, new.events, context,
                                     sequence, keep)
    changes, emitted = _row_changes(held, sequence, runs, classified, stall_min_commits, stall_min_ms, keep)
    new_state = keep(_new_state(held, records, group_records, context, checkpoints, contextual, sequence, runs,
                                classified, events, emitted, horizon_ms), "new_state", count=True)

    counts = changes.groupBy().agg(F.count(F.lit(1)).alias("n"),
                                   F.sum(F.col("_deleted").cast("int")).alias("deleted")).first()
    changed, deleted = (int(counts["n"]), int(counts["deleted"] or 0)) if counts else (0, 0)
    tail_records = held.select(F.sum(F.size("offsets.tail"))).first()
    return OffsetEventChanges(changes, new_state, OffsetEventsResult(
        groups=sizes["new_state"], rows_written=changed - deleted, rows_deleted=deleted,
        new_records=sizes["new_records"], new_events=sizes["new_events"], state_rows=sizes["held"],
        tail_records=int(tail_records[0] or 0) if tail_records else 0), keep.release)
