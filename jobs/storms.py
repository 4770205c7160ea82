"""Gold stage: rebalance_storms from the run's changed group_generations rows.

Storms are a fold (coordinator_core.storms.fold_storms): each group's carried state (``group_state.storms``:
the rows from the start of its last run of rebalances and the open rows, and what the rows before left)
plus the generation rows the run inserted, amended or deleted give the storms to upsert or delete. A group
whose changes reach before its carried window is folded again from its rows in group_generations (rare:
a row amended after the reopen horizon). Lock-step waves involve groups the run did not touch, so they are
marked again for the chains of storms near the changed ones, read from rebalance_storms by cluster and time
range. The audit report is jobs.report.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from coordinator_core.storms import REBALANCE_OUTCOMES as _OUTCOMES
from coordinator_core.storms import StormThresholds
from jobs.common.delta_io import Tables
from jobs.common.group_state import StateWrites, clear_state, merge_state, read_state
from jobs.common.kept import kept
from jobs.common.per_group import DEFAULT_BUCKETS, GROUP_KEY, GroupRows, per_bucket
from jobs.common.progress import step
from schemas._spec import TableSpec
from schemas.gold import GROUP_GENERATIONS, REBALANCE_STORMS

#: Generation outcomes that are rebalances (a "created" row is the group's birth, not a rebalance).
REBALANCE_OUTCOMES = tuple(sorted(_OUTCOMES))

#: The group_state column this stage owns.
STATE_COLUMN = "storms"

#: The reopen horizon the generation history keeps rows open for amendment ([history] reopen_hours).
DEFAULT_REOPEN_HOURS = 48.0


@dataclass(frozen=True)
class StormsResult:
    #: groups whose storms were continued (every group with a changed generation row)
    groups: int
    #: storm rows inserted or replaced, lock-step re-marks included
    storms_written: int
    storms_deleted: int
    #: groups folded again from their whole history (a change before their carried window)
    groups_recomputed: int


# ----------------------------------------------------------------------------------------------
# Between pandas and coordinator_core's plain values


def plain_value(value: Any) -> Any:
    """A value out of an Arrow-backed pandas frame as plain Python: NaN/NaT -> None, Timestamp -> naive
    datetime, numpy scalars and arrays -> int/float/list, nested structs (dicts) alike."""
    if value is None or value is pd.NaT:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, pd.Timestamp):
        return value.to_pydatetime()
    if isinstance(value, np.ndarray):
        return [plain_value(v) for v in value]
    if isinstance(value, dict):
        return {k: plain_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain_value(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def plain_records(pdf: pd.DataFrame) -> list[dict[str, Any]]:
    """The frame's rows as plain values (see `plain_value`)."""
    columns = list(pdf.columns)
    return [dict(zip(columns, (plain_value(v) for v in row), strict=True))
            for row in pdf.itertuples(index=False, name=None)]


def changed_rows_and_removed_keys(pdf: pd.DataFrame) -> tuple[list[dict[str, Any]], list[tuple[str, int, int | None]]]:
    """A group's changed generation rows (plain values) and the keys of its deleted ones."""
    changed, removed = [], []
    for row in plain_records(pdf):
        if row.get("_deleted"):
            offset = row["record_offset"]
            removed.append((row["group_protocol"], int(row["generation"]), None if offset is None else int(offset)))
        else:
            changed.append(row)
    return changed, removed


def fold_output_spec(name: str, spec: TableSpec, *extra: T.StructField) -> TableSpec:
    """An internal frame: a gold table's columns (all nullable) plus the fold's own."""
    return TableSpec(name=name, comment=f"internal: {name}", grain=(), schema=T.StructType(
        [T.StructField(f.name, f.dataType, True) for f in spec.schema.fields] + list(extra)))


def with_state(changed: DataFrame, tables: Tables, column: str, rebuild: bool) -> tuple[DataFrame, DataFrame]:
    """The changed rows of the touched groups, and their carried state (cluster, group_id, `column`):
    none when rebuilding."""
    if rebuild:
        # No state: an empty frame (one derived from `changed` would make the cogroup a self-join whose
        # group columns Spark cannot tell apart).
        return changed, tables.spark.createDataFrame([], f"cluster string, group_id string, {column} binary")
    return changed, read_state(tables, changed.select(*GROUP_KEY).distinct(), [column])


def group_of(rows: pd.DataFrame, held: pd.DataFrame) -> tuple[str, str]:
    """(cluster, group_id) of one group's cogrouped frames."""
    first = rows if not rows.empty else held
    return str(first["cluster"].iloc[0]), str(first["group_id"].iloc[0])


def fold_groups(tables: Tables, changed: DataFrame, project: Callable[[DataFrame], DataFrame], output: TableSpec,
                fold_fn: Callable[[bool], Callable[[pd.DataFrame, pd.DataFrame], GroupRows]], state_column: str,
                gold: TableSpec, rebuild: bool) -> DataFrame:
    """A per-group fold over the changed generation rows of each touched group from its carried state,
    then again from scratch over the whole history of the groups that asked for it.

    `project` selects what the fold reads of generation rows (with `_deleted`); `fold_fn(from_scratch)` is
    the per-group function: (its projected rows, its state row) -> rows of `output` with `_kind` "row" (a
    row of `gold` to upsert, or with `_deleted` to delete), "state" (`_state`: the new state) or "rebuild"
    (the changes reach before the carried state: the group's rows in group_generations are folded again
    from an empty state, and its rows of `gold` that fold does not give are deleted; the marker stays in
    the result, to be counted). Returns the rows and states, persisted (the caller unpersists).
    """
    inputs, held = with_state(project(changed), tables, state_column, rebuild)
    out = per_bucket(inputs, output, fold_fn(rebuild), DEFAULT_BUCKETS, held).persist()
    again = [(r["cluster"], r["group_id"]) for r in out.where(F.col("_kind") == "rebuild").select(*GROUP_KEY).collect()]
    if not again:
        return out
    # Few groups (a row amended after it was final): their whole history, from scratch.
    groups = tables.spark.createDataFrame(again, "cluster string, group_id string")
    # Read by cluster (the tables' partitions), then by group: a fleet's history is not scanned for a few.
    clusters = sorted({cluster for cluster, _ in again})
    history = (tables.read(GROUP_GENERATIONS).where(F.col("cluster").isin(*clusters))
               .join(F.broadcast(groups), on=GROUP_KEY, how="left_semi").withColumn("_deleted", F.lit(False)))
    redone = per_bucket(project(history), output, fold_fn(True), DEFAULT_BUCKETS,
                        groups.withColumn(state_column, F.lit(None).cast("binary")))
    key = list(gold.grain)
    stale = (tables.read(gold).where(F.col("cluster").isin(*clusters))
             .join(F.broadcast(groups), on=GROUP_KEY, how="left_semi").select(*key)
             .join(redone.where(F.col("_kind") == "row").select(*key), on=key, how="left_anti"))
    deletions = stale.select(*[F.col(c) if c in key else F.lit(None).cast(output.schema[c].dataType).alias(c)
                               for c in output.column_names if c not in ("_deleted", "_kind")]).withColumns(
        {"_deleted": F.lit(True), "_kind": F.lit("row")})
    combined = out.unionByName(redone).unionByName(deletions.select(*output.column_names)).persist()
    combined.count()
    out.unpersist()
    return combined


# ----------------------------------------------------------------------------------------------
# The per-group fold

_STORM_FOLD = fold_output_spec(
    "_storm_fold_output", REBALANCE_STORMS,
    T.StructField("_deleted", T.BooleanType()), T.StructField("_kind", T.StringType()),
    T.StructField("_state", T.BinaryType()))

#: group_generations columns the storm fold reads (members reduced to their identity).
_MEMBER_IDENTITY = ("member_id", "client_id", "client_host", "group_instance_id")


def storm_inputs(generations: DataFrame) -> DataFrame:
    """Changed generation rows (with `_deleted`) -> what the storm fold reads of them."""
    return generations.select(
        *GROUP_KEY, "group_protocol", "generation", "record_offset", "outcome", "rebalance_started_at",
        "stabilized_at", "assignment_stored_at", "rebalance_ms", "sync_ms", "cause", "causes", "protocol",
        F.transform("members", lambda m: F.struct(*[m[c].alias(c) for c in _MEMBER_IDENTITY])).alias("members"),
        "members_joined", "members_left",
        F.when(F.col("partitions_revoked_then_assigned").isNotNull(), F.size("partitions_revoked_then_assigned"))
        .cast("long").alias("revoked_partitions"),
        "_deleted")


def _storm_dict(s: Any) -> dict[str, Any]:
    """A Storm as a rebalance_storms row (its columns: coordinator_core.history.model.to_dict)."""
    from coordinator_core.history.model import to_dict

    return to_dict(s)


def _fold_fn(thresholds: StormThresholds, reopen: dt.timedelta
             ) -> Callable[[bool], Callable[[pd.DataFrame, pd.DataFrame], GroupRows]]:
    def make(from_scratch: bool) -> Callable[[pd.DataFrame, pd.DataFrame], GroupRows]:
        def run(rows: pd.DataFrame, held: pd.DataFrame) -> GroupRows:
            from coordinator_core.storms import StormStateVersionError, dump_storm_state, fold_storms, load_storm_state

            if rows.empty:
                return []
            cluster, group = group_of(rows, held)
            # Every column named: pandas fills a missing one with NaN, which Arrow refuses for maps and arrays.
            marker = {**dict.fromkeys(_STORM_FOLD.column_names), "cluster": cluster, "group_id": group}
            try:
                state = (None if from_scratch or held.empty
                         else load_storm_state(plain_value(held[STATE_COLUMN].iloc[0])))
            except StormStateVersionError:
                return [{**marker, "_kind": "rebuild"}]
            changed, removed = changed_rows_and_removed_keys(rows)
            result = fold_storms(state, changed, removed, thresholds, cluster=cluster, group_id=group, reopen=reopen)
            if result.rebuild_needed or result.state is None:
                return [{**marker, "_kind": "rebuild"}]
            out: GroupRows = [{**marker, **_storm_dict(s), "_deleted": False, "_kind": "row"} for s in result.storms]
            out += [{**marker, "window_start": start, "_deleted": True, "_kind": "row"} for start in result.removed]
            out.append({**marker, "_kind": "state", "_state": dump_storm_state(result.state)})
            return out

        return run

    return make


# ----------------------------------------------------------------------------------------------
# Lock-step waves near the changed storms

_LOCKSTEP_INPUT = fold_output_spec("_lockstep_input", REBALANCE_STORMS, T.StructField("_near", T.BooleanType()))
_LOCKSTEP_OUTPUT = fold_output_spec("_lockstep_output", REBALANCE_STORMS, T.StructField("_kind", T.StringType()))


def _to_storm(row: dict[str, Any]) -> Any:
    from coordinator_core.storms import Storm

    values = {k: v for k, v in row.items() if not k.startswith("_")}
    values["flapping_members"] = tuple(values["flapping_members"] or ())
    values["causes"] = dict(values["causes"] or {})
    return Storm(**values)


def _lockstep_fn(thresholds: StormThresholds) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """One cluster's storms in a time range and the times of its changed storms (`_near`) -> the storms
    of the chains near those times, marked (`_kind` storm), and the chains' extent (`_kind` extent: the
    first and last start in window_start and window_end, how many storms in rebalances)."""
    def run(pdf: pd.DataFrame) -> pd.DataFrame:
        from coordinator_core.storms import lockstep_chains, mark_lockstep

        records = plain_records(pdf)
        # Map columns arrive as lists of (key, value) pairs.
        for r in records:
            if isinstance(r.get("causes"), list):
                r["causes"] = dict(r["causes"])
        near = [r["window_start"] for r in records if r["_near"]]
        storms = [_to_storm(r) for r in records if not r["_near"]]
        chains = lockstep_chains(storms, near, thresholds)
        rows: GroupRows = [{**_storm_dict(s), "_kind": "storm"} for s in mark_lockstep(chains, thresholds)]
        if chains:
            rows.append({**dict.fromkeys(_LOCKSTEP_OUTPUT.column_names), "cluster": chains[0].cluster,
                         "window_start": min(s.window_start for s in chains),
                         "window_end": max(s.window_start for s in chains), "rebalances": len(chains),
                         "_kind": "extent"})
        return pd.DataFrame(rows, columns=_LOCKSTEP_OUTPUT.column_names)

    return run


def _range_filter(bounds: dict[str, tuple[dt.datetime, dt.datetime]]) -> Column:
    condition = F.lit(False)
    for cluster, (lo, hi) in bounds.items():
        condition = condition | ((F.col("cluster") == F.lit(cluster))
                                 & F.col("window_start").between(F.lit(lo), F.lit(hi)))
    return condition


def _lockstep_marked(tables: Tables, changes: DataFrame, spans: dict[str, tuple[dt.datetime, dt.datetime]],
                     thresholds: StormThresholds) -> tuple[DataFrame, Callable[[], None], int]:
    """Every storm of the lock-step chains near the changed storms (`changes`: storm rows to upsert or
    delete, with `_deleted`; `spans`: per cluster, their first and last start), marked as if over all storms
    of the cluster, with the group-level changes applied: `_kind` storm rows of a kept frame, how to let go
    of it, and how many there are.

    Reads rebalance_storms only by cluster and start time: the changed storms' span widened by
    `lockstep_seconds`, and again until every chain that reaches it is whole (a chain of storms each
    within `lockstep_seconds` of the one before can reach further).
    """
    gap = dt.timedelta(seconds=thresholds.lockstep_seconds)
    bounds = {cluster: (lo - gap, hi + gap) for cluster, (lo, hi) in spans.items()}
    changed_keys = changes.select(*GROUP_KEY, "window_start")
    upserts = changes.where(~F.col("_deleted")).select(*REBALANCE_STORMS.column_names)
    near = changes.select(*[F.col(c) if c in ("cluster", "window_start") else F.lit(None).cast(
        _LOCKSTEP_INPUT.schema[c].dataType).alias(c) for c in REBALANCE_STORMS.column_names]).withColumn(
        "_near", F.lit(True))
    while True:
        stored = (tables.read(REBALANCE_STORMS).where(_range_filter(bounds))
                  .join(changed_keys, on=[*GROUP_KEY, "window_start"], how="left_anti"))
        current = stored.unionByName(upserts).withColumn("_near", F.lit(False)).unionByName(near)
        # Kept as rows (jobs.common.kept): a cached plan that reads rebalance_storms would be planned again
        # after the MERGE into it.
        marked, release = kept(current.groupBy("cluster").applyInPandas(_lockstep_fn(thresholds),
                                                                          schema=_LOCKSTEP_OUTPUT.schema))
        wider = False
        count = 0
        for r in marked.where(F.col("_kind") == "extent").collect():  # one row per cluster
            count += r["rebalances"]
            lo, hi = bounds[r["cluster"]]
            if r["window_start"] - gap < lo or r["window_end"] + gap > hi:
                bounds[r["cluster"]] = (min(lo, r["window_start"] - gap), max(hi, r["window_end"] + gap))
                wider = True
        if not wider:
            return marked, release, count
        release()


# ----------------------------------------------------------------------------------------------
# The stage


def run_storms(tables: Tables, changed_generations: DataFrame, thresholds: StormThresholds, run_id: str,
               rebuild: bool, *, reopen_hours: float = DEFAULT_REOPEN_HOURS,
               pending: StateWrites | None = None) -> StormsResult:
    """Continue the storms of every group with a changed generation row, mark the lock-step waves near the
    changed storms again, and carry each group's state in group_state.storms.

    `changed_generations`: the group_generations rows the run inserted or amended, and with `_deleted` true
    the keys of rows it deleted. `rebuild`: the rows are every group's whole history; rebalance_storms and
    the carried states are emptied first. `reopen_hours`: how long the generation history keeps a row open
    for amendment (rows within it stay in the carried window). `pending`: the states go there, written
    by its owner with the other group_state columns of the run (else now).
    """
    if rebuild:
        tables.delete_where(REBALANCE_STORMS, "true")
        clear_state(tables, [STATE_COLUMN])
    with step("storms: continue each group's storms"):
        out = fold_groups(tables, changed_generations, storm_inputs, _STORM_FOLD,
                          _fold_fn(thresholds, dt.timedelta(hours=reopen_hours)), STATE_COLUMN, REBALANCE_STORMS,
                          rebuild)
    try:
        # Per cluster and kind (a handful of rows): counts, and the span of the changed storms.
        kinds = out.groupBy("cluster", "_kind").agg(
            F.count("*").alias("n"), F.sum(F.col("_deleted").cast("int")).alias("deleted"),
            F.min("window_start").alias("lo"), F.max("window_start").alias("hi")).collect()
        groups = sum(r["n"] for r in kinds if r["_kind"] == "state")
        if groups == 0:
            return StormsResult(0, 0, 0, 0)
        spans = {r["cluster"]: (r["lo"], r["hi"]) for r in kinds if r["_kind"] == "row"}
        written = 0
        if spans:
            with step("storms: lock-step waves near the changed storms"):
                changes = out.where(F.col("_kind") == "row").select(*REBALANCE_STORMS.column_names, "_deleted")
                marked, release, written = _lockstep_marked(tables, changes, spans, thresholds)
                rows = (marked.where(F.col("_kind") == "storm").select(*REBALANCE_STORMS.column_names)
                        .withColumn("_deleted", F.lit(False)).unionByName(changes.where(F.col("_deleted"))))
                try:
                    tables.upsert(REBALANCE_STORMS, rows, delete_flag="_deleted")
                finally:
                    release()
        merge_state(tables, out.where(F.col("_kind") == "state").select(
            *GROUP_KEY, F.col("_state").alias(STATE_COLUMN)), [STATE_COLUMN], run_id, pending)
        return StormsResult(groups, written, sum(r["deleted"] or 0 for r in kinds if r["_kind"] == "row"),
                            sum(r["n"] for r in kinds if r["_kind"] == "rebuild"))
    finally:
        out.unpersist()
