"""The offset_events stage: the run's new rows and the touched groups' carried state brought together per
bucket of groups, folded on the executors (`fold.fold_fn`, coordinator_core's `continue_offsets` per
group) and kept (`fold_offset_events`), then written (`write_offset_events`): offset_events rows upserted
or withdrawn, and group_state.offsets."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from jobs.common.delta_io import Tables
from jobs.common.group_state import StateWrites, clear_state, merge_state
from jobs.common.kept import kept, kept_in_memory
from jobs.common.per_group import BUCKET, DEFAULT_BUCKETS, GROUP_KEY, _with_bucket
from jobs.common.progress import log
from jobs.offset_events.fold import (
    DECIDED,
    FOLD_INPUT,
    FOLD_LINES,
    FOLD_OUTPUT,
    LINE,
    RECORD,
    ROW,
    STATE,
    SWEEP,
    fold_fn,
)
from jobs.offset_events.inputs import RunInputs, _empty, read_run_inputs, sweeps_near
from jobs.offset_events.kinds import CLASSIC_TOMBSTONE, CONSUMER_TOMBSTONE, LOG_MATCH_MS, OFFSET_TOMBSTONE
from schemas import CONSUMER_GROUP_RECORDS, GROUP_METADATA, OFFSET_COMMITS
from schemas.gold import OFFSET_EVENTS
from schemas.logs import COORDINATOR_EVENTS
from schemas.state import GROUP_STATE, OFFSETS_EVENT, OFFSETS_RECORD

#: CGH_TRACE_OFFSET_EVENTS=1 logs the clusters a run folds.
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


def _nothing(tables: Tables) -> OffsetEventChanges:
    """The fold of a run with nothing new: no rows, no state."""
    no_rows = T.StructType([*OFFSET_EVENTS.schema.fields, T.StructField("_deleted", T.BooleanType())])
    no_state = _empty(tables, GROUP_STATE.schema).select(*GROUP_KEY, "offsets")
    return OffsetEventChanges(_empty(tables, no_rows), no_state, OffsetEventsResult(0, 0, 0, 0, 0, 0, 0))


def _held_state(tables: Tables, since: Mapping[str, int] | None, inputs: RunInputs,
                clusters: list[str]) -> tuple[DataFrame, Callable[[], None]]:
    """The carried state of the groups touched: new records or log lines, a decided transaction in a carried
    tail, or a new sweep line near a settled tombstone. group_state holds a row per group of the fleet: only
    the clusters with news are read (once: kept while the touched groups are found). Kept, with how to let
    it go: the fold's input reads it three times (the state rows, the tails, the tombstones' times)."""
    if since is None:   # a rebuild: every group starts from an empty state
        return _empty(tables, GROUP_STATE.schema).select(*GROUP_KEY, "offsets"), lambda: None
    state, release = kept(tables.read(GROUP_STATE, version=tables.version(GROUP_STATE))
                           .where(F.col("cluster").isin(*clusters) & F.col("offsets").isNotNull())
                           .select(*GROUP_KEY, "offsets"))
    decided_tails = (state.where(F.size("offsets.tail") > 0)
                     .select(*GROUP_KEY, F.explode("offsets.tail").alias("r"))
                     .select(*GROUP_KEY, "r.record_partition", "r.record_offset")
                     .join(inputs.outcome_updates.drop("transaction_outcome"),
                           on=["cluster", "record_partition", "record_offset"], how="left_semi")
                     .select(*GROUP_KEY))
    # A new group-less sweep line is late evidence for the settled tombstones of its cluster near it.
    swept = _near_lines(state.select(*GROUP_KEY, F.explode("offsets.tombstones.timestamp_ms").alias("timestamp_ms")),
                        inputs.sweeps).select(*GROUP_KEY)
    touched = (inputs.records.select(*GROUP_KEY).unionByName(inputs.events.select(*GROUP_KEY))
               .unionByName(decided_tails).unionByName(swept).distinct())
    held, release_held = kept(state.join(touched, on=GROUP_KEY, how="left_semi"))
    release()
    return held, release_held


def _near_lines(times: DataFrame, lines: DataFrame) -> DataFrame:
    """(cluster, group_id, the line's columns) for each line of `lines` (cluster-wide) within 5 s of one of
    the group's `times` (cluster, group_id, timestamp_ms): an equi-join on 10 s windows (a line matches the
    windows either side of its own), then the exact distance, so a night with many tombstones and sweep
    lines compares only the neighbours."""
    window_ms = 2 * LOG_MATCH_MS
    timed = (times.where(F.col("timestamp_ms").isNotNull())
             .withColumn("_w", F.floor(F.col("timestamp_ms") / window_ms)))
    windows = F.explode(F.array(*[F.floor(F.unix_millis("at") / window_ms) + d for d in (-1, 0, 1)]))
    spread = lines.withColumn("_w", windows)
    return (timed.join(spread, on=["cluster", "_w"], how="inner")
            .where(F.abs(F.unix_micros("at") - F.col("timestamp_ms") * 1000) <= LOG_MATCH_MS * 1000)
            .drop("_w", "timestamp_ms").dropDuplicates([*GROUP_KEY, "file_id", "line_number"]))


#: New records per bucket of groups the fold aims at: a bucket's inputs are held at once by one Python worker.
RECORDS_PER_BUCKET = 200_000


def _buckets(new_records: int) -> int:
    """Buckets of groups for a run with `new_records`: the usual 16 for a small night, more for a big one, so
    a bucket's inputs stay near `RECORDS_PER_BUCKET` records (a fleet's night of 700M commits: 3,500)."""
    return max(DEFAULT_BUCKETS, -(-new_records // RECORDS_PER_BUCKET))


def _fold_inputs(tables: Tables, version: int, inputs: RunInputs, held: DataFrame,
                 buckets: int) -> tuple[DataFrame, DataFrame]:
    """The fold's two cogrouped inputs (`fold.FOLD_INPUT`, `fold.FOLD_LINES`), in `buckets` buckets of groups."""
    tail = held.select(*GROUP_KEY, F.explode("offsets.tail").alias("r")).select(*GROUP_KEY, "r.*")
    decided = (tail.select(*GROUP_KEY, "record_partition", "record_offset")
               .join(inputs.outcome_updates, on=["cluster", "record_partition", "record_offset"], how="inner"))
    record_columns = [F.col(f.name) for f in OFFSETS_RECORD.fields]
    rows = (inputs.records.select(*GROUP_KEY, F.lit(RECORD).alias("_part"), *record_columns)
            .unionByName(decided.select(*GROUP_KEY, F.lit(DECIDED).alias("_part"), "record_partition",
                                        "record_offset", "transaction_outcome"), allowMissingColumns=True))
    rows = _with_bucket(rows, buckets).select(*[F.col(f.name).cast(f.dataType) for f in FOLD_INPUT.fields])
    # The sweep lines near the group's tombstones (new, carried in its tail, or settled and still open),
    # whichever run archived them: read from the table by cluster and time span.
    tombstone_kinds = (OFFSET_TOMBSTONE, CLASSIC_TOMBSTONE, CONSUMER_TOMBSTONE)
    times = (inputs.records.unionByName(tail.select(*inputs.records.columns))
             .where(F.col("kind").isin(*tombstone_kinds)).select(*GROUP_KEY, "timestamp_ms")
             .unionByName(held.select(*GROUP_KEY, F.explode("offsets.tombstones.timestamp_ms").alias("timestamp_ms"))))
    sweeps = _near_lines(times, sweeps_near(tables, version, times))
    event_columns = [F.col(f.name) for f in OFFSETS_EVENT.fields]
    lines = (inputs.events.select(*GROUP_KEY, F.lit(LINE).alias("_part"), *event_columns)
             .unionByName(sweeps.select(*GROUP_KEY, F.lit(SWEEP).alias("_part"), *event_columns))
             .unionByName(held.select(*GROUP_KEY, F.lit(STATE).alias("_part"), "offsets"), allowMissingColumns=True))
    lines = _with_bucket(lines, buckets).select(*[F.col(f.name).cast(f.dataType) for f in FOLD_LINES.fields])
    return rows, lines


def _kept_inputs(inputs: RunInputs) -> tuple[RunInputs, Callable[[], None]]:
    """The run's new rows computed once and kept (one job): the stage reads them several times (clusters
    with news, touched groups, the fold's input, the tombstones' times), and each read is a change-feed
    scan (the new records a self-join of offset_commits' feed)."""
    parts = {"records": inputs.records, "updates": inputs.outcome_updates, "events": inputs.events,
             "sweeps": inputs.sweeps}
    named = [frame.withColumn("_input", F.lit(name)) for name, frame in parts.items()]
    marked = functools.reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), named)
    rows, release = kept(marked)

    def part(name: str) -> DataFrame:
        return rows.where(F.col("_input") == name).select(*parts[name].columns)

    return RunInputs(part("records"), part("updates"), part("events"), part("sweeps")), release


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
    # No row of the inputs changed (their commit files say so): nothing to read.
    if since is not None and not any(tables.data_changed_since(spec, int(since.get(spec.name, 0)))
                                     for spec in inputs_read):
        return _nothing(tables)
    inputs, release_inputs = read_run_inputs(tables, since, versions), (lambda: None)
    if (since is not None and int(since.get(OFFSET_COMMITS.name, 0)) > 0) or kept_in_memory(tables.spark):
        # From the change feed, the new commits are a join of the feed's inserts and its transaction decisions:
        # computed once and kept; a small night's few rows are kept too (each read of four tables again is
        # Spark jobs: the samples' first night 19 -> 38 jobs without). A large first run or rebuild reads
        # offset_commits as it stands, and reading it again (each read takes only the columns it needs) costs
        # less than setting every record aside: at 3M records 12-13 s for the step against 17-18 s.
        inputs, release_inputs = _kept_inputs(inputs)
    news = (inputs.records.select("cluster", F.lit(1).alias("_record"))
            .unionByName(inputs.events.select("cluster", F.lit(0).alias("_record")))
            .unionByName(inputs.sweeps.select("cluster", F.lit(0).alias("_record")))
            .unionByName(inputs.outcome_updates.select("cluster", F.lit(0).alias("_record")))
            .groupBy("cluster").agg(F.sum("_record").alias("records")).collect())
    clusters = sorted(r["cluster"] for r in news)
    if not clusters:
        release_inputs()
        return _nothing(tables)
    if _TRACE:
        log(f"  offset_events: clusters with news {clusters}")
    held, release_held = _held_state(tables, since, inputs, clusters)
    rows, lines = _fold_inputs(tables, versions[COORDINATOR_EVENTS.name], inputs, held,
                               _buckets(sum(int(r["records"]) for r in news)))
    folded = (rows.groupBy("cluster", BUCKET)
              .cogroup(lines.groupBy("cluster", BUCKET))
              .applyInArrow(fold_fn(stall_min_commits, stall_min_ms, horizon_ms), schema=FOLD_OUTPUT))
    out, release_out = kept(folded)
    release_inputs()
    release_held()
    is_row = F.col("_part") == ROW
    counts = out.groupBy().agg(
        F.sum((is_row & ~F.col("_deleted")).cast("long")).alias("written"),
        F.sum((is_row & F.col("_deleted")).cast("long")).alias("deleted"),
        F.sum((~is_row).cast("long")).alias("groups"),
        F.sum("_new_records").alias("new_records"), F.sum("_new_events").alias("new_events"),
        F.sum("_held").alias("held"), F.sum("_tail_records").alias("tail_records")).first()

    def count(name: str) -> int:
        return int(counts[name] or 0) if counts else 0

    changes = out.where(is_row).select(*OFFSET_EVENTS.column_names, "_deleted")
    state = out.where(~is_row).select(*GROUP_KEY, "offsets")
    return OffsetEventChanges(changes, state, OffsetEventsResult(
        groups=count("groups"), rows_written=count("written"), rows_deleted=count("deleted"),
        new_records=count("new_records"), new_events=count("new_events"), state_rows=count("held"),
        tail_records=count("tail_records")), release_out)
