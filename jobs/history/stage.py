"""The group_generations stage: every touched group's history continued with the run's new records and log
events, through the per-group fold, then written (rows MERGEd, states into group_state.generations)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from jobs.common.delta_io import Tables
from jobs.common.group_state import StateWrites, merge_state
from jobs.common.kept import kept
from jobs.common.per_group import DEFAULT_BUCKETS, GROUP_KEY, per_bucket
from jobs.history.fold import FOLD_OUTPUT, FOLD_RECORD_COLUMNS, _fold_fn
from jobs.history.inputs import RunRange, new_attributed_events, new_group_records, new_topic_names
from schemas.gold import GROUP_GENERATIONS
from schemas.logs import COORDINATOR_EVENTS
from schemas.state import GROUP_STATE


@dataclass(frozen=True)
class GenerationsResult:
    groups: int
    rows_written: int
    rows_deleted: int
    late_events: int
    #: group-level rows whose stored record_json did not read back as a record (a layout this code does not
    #: know): left out of the history and counted here; the rows stay in consumer_group_records
    records_unreadable: int
    #: the generation rows the run inserted or amended (group_generations columns + `_deleted`), kept
    #: (jobs.common.kept): the caller calls `release` when the later stages are done with them
    changed: DataFrame
    #: the run's new member-scoped log lines without a group (e.g. a static member fenced) whose member id no
    #: group's records or lines name: kept group-less in coordinator_events, not in any history
    events_unattributed: int = 0
    release: Callable[[], None] = lambda: None


def run_generations(tables: Tables, run_id: str, run: RunRange, reopen_hours: float,
                    pending: StateWrites | None = None) -> GenerationsResult:
    """Continue every touched group's generation history with the run's new records and log events. The
    states go to group_state.generations now, or with `pending` when the stage writes its states together."""
    # The run's new records and lines are read by several queries (the clusters near the news, the member
    # look-ups, the touched groups, the fold): kept once, so that each query neither plans the change
    # feeds' file listings again (one Delta job per table version read) nor reads them again. (Watch the
    # storms stage's Spark jobs in benchmarks/run_overhead.py when changing this step's plans: two
    # changes that dropped a branch of the attributed lines' plan made the later stages recompute their
    # handed-over states, 29 -> 399 jobs; see 003ab4e.)
    records = new_group_records(tables, run).persist()
    new_events = run.new_rows(tables, COORDINATOR_EVENTS).persist()
    try:
        return _continue_generations(tables, run_id, run, reopen_hours, pending, records, new_events)
    finally:
        records.unpersist()
        new_events.unpersist()


def _continue_generations(tables: Tables, run_id: str, run: RunRange, reopen_hours: float,
                          pending: StateWrites | None, records: DataFrame, new_events: DataFrame
                          ) -> GenerationsResult:
    events, unattributed = new_attributed_events(tables, run, records, reopen_hours, new_events)
    touched = records.select(*GROUP_KEY).unionByName(events.select(*GROUP_KEY)).distinct()
    # group_state holds a row per group of the fleet: only the clusters with news are read (partition
    # pruning), and a night with nothing new reads nothing more.
    clusters = [r["cluster"] for r in touched.select("cluster").distinct().collect()]
    if not clusters:
        no_rows = T.StructType([*GROUP_GENERATIONS.schema.fields, T.StructField("_deleted", T.BooleanType())])
        return GenerationsResult(0, 0, 0, 0, 0, tables.spark.createDataFrame([], no_rows), unattributed)
    state_version = tables.version(GROUP_STATE)
    held = (tables.read(GROUP_STATE, version=state_version)
            .where(F.col("cluster").isin(*clusters) & F.col("generations").isNotNull())
            .select(*GROUP_KEY, F.col("generations").alias("state"))
            .join(touched, on=GROUP_KEY, how="left_semi"))
    records = records.withColumn("state", F.lit(None).cast("binary"))
    states = held.select(*[F.col(c) if c in ("cluster", "group_id", "state")
                           else F.lit(None).cast(records.schema[c].dataType).alias(c) for c in FOLD_RECORD_COLUMNS])
    inputs = records.select(*FOLD_RECORD_COLUMNS).unionByName(states)
    out = per_bucket(inputs, FOLD_OUTPUT, _fold_fn(new_topic_names(tables, run), reopen_hours),
                     DEFAULT_BUCKETS, events).persist()
    summary = out.groupBy().agg(
        F.sum(F.when(F.col("_kind") == "state", 1).otherwise(0)).alias("groups"),
        F.sum(F.when((F.col("_kind") == "row") & ~F.col("_deleted"), 1).otherwise(0)).alias("written"),
        F.sum(F.when((F.col("_kind") == "row") & F.col("_deleted"), 1).otherwise(0)).alias("deleted"),
        F.sum(F.coalesce("_late", F.lit(0))).alias("late"),
        F.sum(F.coalesce("_unreadable", F.lit(0))).alias("unreadable")).first()
    # The changed rows outlive this stage (storms, replay and what-if start from them): kept apart from the
    # fold's output (their plan names group_state, which the run MERGEs later: a cached plan would be
    # planned again after that MERGE, see jobs.common.kept), before that output is released.
    try:
        rows, release = kept(out.where(F.col("_kind") == "row").select(*GROUP_GENERATIONS.column_names, "_deleted"))
    except BaseException:
        out.unpersist()
        raise
    try:
        if summary is not None and (summary["written"] or summary["deleted"]):
            tables.upsert(GROUP_GENERATIONS, rows, delete_flag="_deleted")
        if summary is not None and summary["groups"]:
            merge_state(tables, out.where(F.col("_kind") == "state").select(
                *GROUP_KEY, F.col("_state").alias("generations"),
                F.col("_watermark").alias("generations_watermark")),
                ["generations", "generations_watermark"], run_id, pending)
    except BaseException:
        release()
        raise
    finally:
        out.unpersist()

    def count(name: str) -> int:
        return int(summary[name] or 0) if summary is not None else 0

    return GenerationsResult(count("groups"), count("written"), count("deleted"), count("late"), count("unreadable"),
                             rows, unattributed, release)
