"""Gold stage: rebalance_cost, what each rebalance cost (coordinator_core.cost), for the rebalances near the
run's changes.

A rebalance's cost is a pure function of its generation row and the one before it, its members' client
lines and its partitions' commits around it: nothing accumulates over a group's history, so the stage
carries no state. Each night it takes the groups with a changed generation row or a new client
revoke/assign/position line (a position line logged without a group: the groups with an assign line in its
file; and the groups whose recent rows still wait for a partition's first commit after its pause), and per
group the earliest time a change touches (``lo``); it reads, for those groups only, the
generation rows still in force at ``lo`` or later (the one before the first change included), their client
lines from ``reopen_hours`` before ``lo`` (a member's identity line can be that old) and their commits
from ``commit_horizon + rate_lookback`` before ``lo`` (what coordinator_core.cost reads), all by cluster
and time (file statistics skip the older files), then replaces the group's cost rows from ``lo`` on with
one MERGE. A rebalance whose client lines arrive a night later is amended then (the new lines make the
group touched).
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from coordinator_core.cost import (
    CLIENT_EVENT_TYPES,
    PAUSE_EVENT_TYPES,
    POSITION_EVENT_TYPES,
    RESUME_EVENT_TYPES,
    CommitSeries,
    CostSettings,
)
from coordinator_core.history.model import Partition
from jobs.common.delta_io import Tables
from jobs.common.kept import kept
from jobs.common.per_group import DEFAULT_BUCKETS, GROUP_KEY, GroupRows, per_bucket
from jobs.history.inputs import RunRange
from jobs.storms import fold_output_spec, plain_records
from schemas.gold import GROUP_GENERATIONS, REBALANCE_COST
from schemas.logs import COORDINATOR_EVENTS
from schemas.silver import OFFSET_COMMITS

_OUTPUT = fold_output_spec("_cost_output", REBALANCE_COST, T.StructField("_deleted", T.BooleanType()))

#: What the per-group function reads of each fact: a client line or a commit.
_FACTS = T.StructType([
    T.StructField("cluster", T.StringType()), T.StructField("group_id", T.StringType()),
    T.StructField("kind", T.StringType()), T.StructField("timestamp", T.TimestampType()),
    T.StructField("event_type", T.StringType()), T.StructField("member_id", T.StringType()),
    T.StructField("generation", T.LongType()), T.StructField("partitions", T.StringType()),
    T.StructField("source", T.StringType()), T.StructField("client_id", T.StringType()),
    T.StructField("thread", T.StringType()), T.StructField("line_number", T.LongType()),
    T.StructField("file_id", T.StringType()),
    T.StructField("topic", T.StringType()), T.StructField("partition", T.LongType()),
    T.StructField("offset", T.LongType()),
])


@dataclass(frozen=True)
class CostResult:
    groups: int
    rows_written: int
    rows_withdrawn: int
    #: paused partition-hours of the rows written (point figures, else low bounds)
    paused_partition_hours: float
    records_delayed: int


#: A position line ends the pause of a rebalance whose assignment was stored before the assign line it
#: follows; a late one (its assign line read by an earlier run) reopens the group's rows from this long
#: before that assign line.
POSITION_REACH = dt.timedelta(minutes=1)


def _touched(tables: Tables, changed: DataFrame, new_lines: DataFrame, reopen: dt.timedelta) -> DataFrame:
    """(cluster, group_id, lo): the groups with a changed generation row, a new pause or position line, or a
    new position line without a group in a file where they had an assign line, and the earliest time a
    change touches."""
    at = F.coalesce("rebalance_started_at", "stabilized_at", "assignment_stored_at", "ended_at")
    rows = changed.select(*GROUP_KEY, at.alias("lo")).where(F.col("lo").isNotNull())
    lines = new_lines.where(F.col("group_id").isNotNull()
                            & F.col("event_type").isin(*PAUSE_EVENT_TYPES, *POSITION_EVENT_TYPES)
                            ).select(*GROUP_KEY, F.col("timestamp").alias("lo"))
    touched = rows.unionByName(lines)
    owners = _position_owners(tables, new_lines, reopen)
    if owners is not None:
        touched = touched.unionByName(owners)
    return touched.groupBy(*GROUP_KEY).agg(F.min("lo").alias("lo"))


def _position_owners(tables: Tables, new_lines: DataFrame, reopen: dt.timedelta) -> DataFrame | None:
    """The new position lines without a group (Java 3.7+): the groups whose assign or reconcile lines in the
    same file, within `reopen` before them, they may end a pause of (lo: the assign line, less
    POSITION_REACH). None when there is no such line (one small Spark job to know)."""
    files = (new_lines.where(F.col("group_id").isNull() & F.col("event_type").isin(*POSITION_EVENT_TYPES))
             .groupBy("cluster", "file_id").agg(F.min("timestamp").alias("first"), F.max("timestamp").alias("last"))
             .collect())
    if not files:
        return None
    earliest = min(r["first"] for r in files) - reopen
    spans = F.broadcast(tables.spark.createDataFrame(files, "cluster string, file_id string, first timestamp, "
                                                            "last timestamp"))
    reach = F.expr(f"INTERVAL {int(reopen.total_seconds())} SECONDS")
    back = F.expr(f"INTERVAL {int(POSITION_REACH.total_seconds())} SECONDS")
    return (tables.read(COORDINATOR_EVENTS)
            .where((F.col("timestamp") >= earliest) & F.col("group_id").isNotNull()
                   & F.col("event_type").isin(*RESUME_EVENT_TYPES))
            .join(spans, on=["cluster", "file_id"])
            .where((F.col("timestamp") <= F.col("last")) & (F.col("timestamp") >= F.col("first") - reach))
            .select(*GROUP_KEY, (F.col("timestamp") - back).alias("lo")))


def _bounds(touched: DataFrame) -> dict[str, dt.datetime]:
    """Per cluster, the earliest time a change touches (one row per cluster)."""
    return {r["cluster"]: r["lo"] for r in touched.groupBy("cluster").agg(F.min("lo").alias("lo")).collect()}


def _with_incomplete(tables: Tables, touched: DataFrame, bounds: dict[str, dt.datetime], reopen: dt.timedelta
                     ) -> DataFrame:
    """The touched groups, and the groups of the clusters with news whose cost rows within `reopen` of it
    still wait for a partition's first commit after the pause (no high bound yet): their commits may have
    come since."""
    in_time = F.lit(False)
    for cluster, lo in bounds.items():
        in_time = in_time | ((F.col("cluster") == cluster) & (F.col("rebalance_at") >= lo - reopen))
    waiting = (tables.read(REBALANCE_COST)
               .where(F.col("cluster").isin(*bounds) & in_time & F.col("pause_high_ms").isNull()
                      & (F.col("partitions_paused") > 0))
               .select(*GROUP_KEY, F.col("rebalance_at").alias("lo")))
    return touched.unionByName(waiting).groupBy(*GROUP_KEY).agg(F.min("lo").alias("lo"))


def _generations(tables: Tables, touched: DataFrame, bounds: dict[str, dt.datetime], context: dt.timedelta
                 ) -> DataFrame:
    """The touched groups' generation rows in force at their `lo` or later, and those that ended within
    `context` before it (a cooperative second round needs the owners before its first round; members and
    changes and KIP-848 hand-overs as JSON: deeply nested structs do not cross into pandas reliably)."""
    in_time = F.lit(False)
    for cluster, lo in bounds.items():
        in_time = in_time | ((F.col("cluster") == cluster)
                             & (F.col("ended_at").isNull() | (F.col("ended_at") >= lo - context)))
    rows = (tables.read(GROUP_GENERATIONS).where(F.col("cluster").isin(*bounds) & in_time)
            .join(F.broadcast(touched), on=GROUP_KEY))
    ended, back = F.col("ended_at"), F.expr(f"INTERVAL {int(context.total_seconds())} SECONDS")
    return rows.where(ended.isNull() | (ended >= F.col("lo") - back)).select(
        *GROUP_KEY, "group_protocol", "generation", "record_offset", "outcome", "protocol", "rebalance_started_at",
        "stabilized_at", "assignment_stored_at", "ended_at", F.to_json("members").alias("members"),
        F.to_json("member_id_changes").alias("member_id_changes"),
        F.to_json("partition_handovers").alias("partition_handovers"), "lo")


def _facts(tables: Tables, touched: DataFrame, bounds: dict[str, dt.datetime], line_lookback: dt.timedelta,
           commit_lookback: dt.timedelta) -> DataFrame:
    """The touched groups' client lines and commits near their changes, as one frame of `_FACTS`."""
    def near(column: str, back: dt.timedelta) -> Any:
        condition = F.lit(False)
        for cluster, lo in bounds.items():
            condition = condition | ((F.col("cluster") == cluster) & (F.col(column) >= lo - back))
        return F.col("cluster").isin(*bounds) & condition

    groups = F.broadcast(touched.select(*GROUP_KEY))
    events = tables.read(COORDINATOR_EVENTS).where(near("timestamp", line_lookback)
                                                   & F.col("event_type").isin(*CLIENT_EVENT_TYPES))
    named = events.where(F.col("group_id").isNotNull()).join(groups, on=GROUP_KEY, how="left_semi")
    # Java 3.7+ logs a partition's fetch position without the client prefix, so without a group: such lines
    # go to every touched group with lines in the same file (coordinator_core.cost takes each for the member
    # whose assign line there last named its partition).
    files = F.broadcast(named.select("cluster", "file_id", "group_id").distinct())
    unnamed = (events.where(F.col("group_id").isNull() & F.col("event_type").isin(*POSITION_EVENT_TYPES))
               .drop("group_id").join(files, on=["cluster", "file_id"]))
    lines = (named.unionByName(unnamed)
             .select(*GROUP_KEY, F.lit("line").alias("kind"), "timestamp", "event_type", "member_id",
                     F.col("generation").cast("long"), "partitions", F.col("log_source").alias("source"),
                     "client_id", "thread", "line_number", "file_id", F.lit(None).cast("string").alias("topic"),
                     F.lit(None).cast("long").alias("partition"), F.lit(None).cast("long").alias("offset")))
    commits = (tables.read(OFFSET_COMMITS)
               .where(near("record_timestamp", commit_lookback) & ~F.col("is_tombstone"))
               .join(groups, on=GROUP_KEY, how="left_semi")
               .select(*GROUP_KEY, F.lit("commit").alias("kind"), F.col("record_timestamp").alias("timestamp"),
                       *[F.lit(None).cast(f.dataType).alias(f.name) for f in _FACTS.fields[4:13]],
                       "topic", F.col("topic_partition").cast("long").alias("partition"),
                       F.col("committed_offset").alias("offset")))
    return lines.unionByName(commits)


def _commit_series(commits: pd.DataFrame) -> dict[Partition, CommitSeries]:
    """A group's commit facts per partition, in time order, as `CommitSeries` (integer columns): a night
    brings every commit of a touched group, and a dict per commit cost more than the cost itself."""
    commits = commits[commits["timestamp"].notna().to_numpy() & commits["offset"].notna().to_numpy()]
    if commits.empty:
        return {}
    at = commits["timestamp"].to_numpy().astype("datetime64[us]").view(np.int64)
    offset = commits["offset"].to_numpy().astype(np.int64)
    partition = commits["partition"].to_numpy().astype(np.int64)
    codes, topics = pd.factorize(commits["topic"], use_na_sentinel=False)
    order = np.lexsort((offset, at, partition, codes))
    at, offset, partition, codes = at[order], offset[order], partition[order], codes[order]
    starts = np.flatnonzero(np.r_[True, (codes[1:] != codes[:-1]) | (partition[1:] != partition[:-1])])
    stops = np.append(starts[1:], len(order))
    at_list, offset_list = at.tolist(), offset.tolist()
    return {Partition(str(topics[codes[a]]), int(partition[a])): CommitSeries(at_list, offset_list, a, b)
            for a, b in zip(starts.tolist(), stops.tolist(), strict=True)}


def _cost_fn(settings: CostSettings) -> Callable[[pd.DataFrame, pd.DataFrame], GroupRows]:
    def run(generations: pd.DataFrame, facts: pd.DataFrame) -> GroupRows:
        import json

        from coordinator_core.cost import cost_generation, rebalance_costs

        if generations.empty:
            return []
        rows = plain_records(generations)
        cluster, lo = rows[0]["cluster"], rows[0]["lo"]
        for r in rows:
            r["members"] = json.loads(r["members"]) if r["members"] else []
            r["member_id_changes"] = json.loads(r["member_id_changes"]) if r["member_id_changes"] else []
            for change in r["member_id_changes"]:  # JSON text times back to datetimes
                change["at"] = dt.datetime.fromisoformat(change["at"]) if change.get("at") else None
            r["partition_handovers"] = json.loads(r["partition_handovers"]) if r["partition_handovers"] else []
            for h in r["partition_handovers"]:
                for name in ("revocation_requested_at", "released_at", "assigned_at"):
                    h[name] = dt.datetime.fromisoformat(h[name]) if h.get(name) else None
        is_line = (facts["kind"] == "line").to_numpy(dtype=bool)
        lines = plain_records(facts[is_line])
        commits = _commit_series(facts[~is_line])
        wanted = [cost_generation(r) for r in rows]
        only = {g.generation for g in wanted if g.order_time is not None and g.order_time >= lo}
        costs = rebalance_costs(rows, lines, commits, settings, only=only)
        return [{**r.to_dict(), "cluster": cluster, "_deleted": False} for r in costs
                if r.rebalance_at is not None and r.rebalance_at >= lo]

    return run


def run_cost(tables: Tables, changed_generations: DataFrame | None, run: RunRange, rebuild: bool, *,
             reopen_hours: float, settings: CostSettings | None = None) -> CostResult:
    """Replace the cost rows of the rebalances near the run's changes (see the module docstring)."""
    settings = settings or CostSettings()
    since = run.since.get(COORDINATOR_EVENTS.name, 0) if run.since is not None else None
    if since is None or tables.data_changed_since(COORDINATOR_EVENTS, int(since)):
        new_lines = run.new_rows(tables, COORDINATOR_EVENTS)
    else:  # no new line (read from the table's commit files): no change-feed query
        new_lines = tables.spark.createDataFrame([], COORDINATOR_EVENTS.schema)
    changed = (changed_generations if changed_generations is not None
               else tables.spark.createDataFrame([], GROUP_GENERATIONS.schema))
    # (A rebuild starts from an empty rebalance_cost: jobs.nightly empties every gold table first.)
    touched = _touched(tables, changed, new_lines, dt.timedelta(hours=reopen_hours))
    bounds = _bounds(touched)
    if not bounds:
        return CostResult(0, 0, 0, 0.0, 0)
    empty = rebuild or tables.holds_no_rows(REBALANCE_COST)
    if not empty:  # (a table with no row has no row waiting for commits, and none to withdraw)
        touched = _with_incomplete(tables, touched, bounds, dt.timedelta(hours=reopen_hours))
    # Both kept as rows (jobs.common.kept), not as cached plans: their plans read rebalance_cost, and the
    # MERGE into it would plan them again.
    touched, release_touched = kept(touched)
    try:
        if not empty:
            bounds = _bounds(touched)
        generations = _generations(tables, touched, bounds, dt.timedelta(hours=reopen_hours))
        facts = _facts(tables, touched, bounds, dt.timedelta(hours=reopen_hours),
                       settings.commit_horizon + settings.rate_lookback)
        computed, release_computed = kept(per_bucket(generations, _OUTPUT, _cost_fn(settings), DEFAULT_BUCKETS,
                                                     facts))
        try:
            return _write(tables, touched, bounds, computed, empty)
        finally:
            release_computed()
    finally:
        release_touched()


def _write(tables: Tables, touched: DataFrame, bounds: dict[str, dt.datetime], computed: DataFrame,
           empty: bool) -> CostResult:
    """One MERGE: the computed rows, and the deletion of the touched groups' rows from their `lo` on that the
    computation no longer gives (a generation withdrawn, a partition that no longer paused). Into an `empty`
    table, the rows are appended."""
    if empty:
        return _upsert(tables, computed, kept_already=True)
    key = list(REBALANCE_COST.grain)
    in_time = F.lit(False)
    for cluster, lo in bounds.items():
        in_time = in_time | ((F.col("cluster") == cluster) & (F.col("rebalance_at") >= lo))
    existing = (tables.read(REBALANCE_COST).where(F.col("cluster").isin(*bounds) & in_time)
                .join(F.broadcast(touched), on=GROUP_KEY).where(F.col("rebalance_at") >= F.col("lo")).select(*key))
    # Null-safe: a generation change's restarted_member_id (and a logs-only generation's offset) is null.
    fresh = computed.select(*[F.col(c).alias(f"_n_{c}") for c in key])
    same = [existing[c].eqNullSafe(fresh[f"_n_{c}"]) for c in key]
    stale = existing.join(fresh, on=functools.reduce(lambda a, b: a & b, same), how="left_anti")
    deletions = stale.select(*[F.col(c) if c in key else F.lit(None).cast(_OUTPUT.schema[c].dataType).alias(c)
                               for c in _OUTPUT.column_names if c != "_deleted"]).withColumn("_deleted", F.lit(True))
    return _upsert(tables, computed.unionByName(deletions))


def _upsert(tables: Tables, changes: DataFrame, kept_already: bool = False) -> CostResult:
    # Kept as rows (jobs.common.kept): a cached plan that reads rebalance_cost would be planned again after the
    # MERGE into it.
    changes, release = (changes, lambda: None) if kept_already else kept(changes)
    try:
        figures = changes.groupBy().agg(
            F.countDistinct(*GROUP_KEY).alias("groups"), F.sum((~F.col("_deleted")).cast("int")).alias("written"),
            F.sum(F.col("_deleted").cast("int")).alias("withdrawn"),
            F.sum(F.coalesce("partition_seconds", "partition_seconds_low")).alias("seconds"),
            F.sum("records_delayed").alias("delayed")).collect()[0]
        if figures["written"] or figures["withdrawn"]:
            tables.upsert(REBALANCE_COST, changes.select(*REBALANCE_COST.column_names, "_deleted"),
                          delete_flag="_deleted")
        return CostResult(int(figures["groups"] or 0), int(figures["written"] or 0), int(figures["withdrawn"] or 0),
                          float(figures["seconds"] or 0.0) / 3600.0, int(figures["delayed"] or 0))
    finally:
        release()
