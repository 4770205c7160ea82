"""Gold stage group_generations, and the per-group plumbing the Python folds share.

Every group's records live in one `__consumer_offsets` partition, so (partition, offset) orders them
totally. The generation history is a fold (coordinator_core.history.generations.fold_generations): each run
reads the group-level records that are new since the last committed run, as the decode stage stored them in
silver (nothing is decoded twice), and the new log events (change data feed ranges), the carried state of
the groups they touch (group_state.generations), and writes the rows that changed (MERGE) and the new
states. `per_bucket` runs a per-group Python function over groups bucketed by hash, one pandas call per
bucket (storms, replay and what-if use it too). offset_events is computed column-wise in
jobs/offset_events.py.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from coordinator_core.history.decoded import GROUP_METADATA_TYPE
from jobs.common.delta_io import Tables
from jobs.common.group_state import merge_state
from schemas import CONSUMER_GROUP_RECORDS, GROUP_METADATA, OFFSET_COMMITS
from schemas.gold import GROUP_GENERATIONS, TableSpec
from schemas.logs import COORDINATOR_EVENTS
from schemas.state import GROUP_STATE

GROUP_KEY = ["cluster", "group_id"]


# ----------------------------------------------------------------------------------------------
# Inputs


# ----------------------------------------------------------------------------------------------
# The generation history as a fold over each run's new inputs


@dataclass(frozen=True)
class RunRange:
    """What is new in this run: for every table, the rows after the version the last committed run left
    (`since`); `since` None is a rebuild: everything is new, no state. The gold stages read silver and
    log tables only: the archived bytes were decoded once, by the decode stage."""

    since: Mapping[str, int] | None

    def new_rows(self, tables: Tables, spec: TableSpec) -> DataFrame:
        if self.since is None:
            return tables.read(spec, version=tables.version(spec))
        return tables.changes(spec, self.since.get(spec.name, 0), tables.version(spec))


#: The fold's record input: one row per new group-level record, as the decode stage stored it (the decoded
#: row form `coordinator_core.history.decoded.group_record_from_row` reads), or one carried state row per
#: touched group (`offset` null, `state` set).
FOLD_RECORD_COLUMNS = ("cluster", "group_id", "partition", "offset", "timestamp_ms", "record_type",
                       "value_version", "group_metadata", "record_json", "state")


def new_group_records(tables: Tables, run: RunRange) -> DataFrame:
    """The run's new group-level records (GroupMetadata, KIP-848 and later types; not offset commits) as the
    decode stage stored them: GroupMetadata from group_metadata (members decoded once, there), the other
    types from consumer_group_records (key and value as record_json). Read as the silver tables' change
    feeds, so bounded by the run's new rows; the archived bytes are not decoded again."""
    gm = run.new_rows(tables, GROUP_METADATA)
    classic = gm.select(
        "cluster", "group_id", "partition", "offset", F.unix_millis("record_timestamp").alias("timestamp_ms"),
        F.lit(GROUP_METADATA_TYPE).cast("short").alias("record_type"), "value_version",
        # As JSON text: a nested struct this deep (members, then their partitions) crashes the Arrow to
        # pandas conversion of pyarrow as Spark's pandas UDFs call it (a segfault in the Python worker).
        F.when(~F.col("is_tombstone"),
               F.to_json(F.struct("protocol_type", "generation", "protocol", "leader", "members"),
                         {"ignoreNullFields": "false"}))
        .alias("group_metadata"),
        F.lit(None).cast("string").alias("record_json"))
    others = (run.new_rows(tables, CONSUMER_GROUP_RECORDS).where(F.col("group_id").isNotNull())
              .select("cluster", "group_id", "partition", "offset",
                      F.unix_millis("record_timestamp").alias("timestamp_ms"), "record_type", "value_version",
                      F.lit(None).cast("string").alias("group_metadata"),
                      "record_json"))
    return classic.unionByName(others)


def new_group_events(tables: Tables, run: RunRange) -> DataFrame:
    """The run's new coordinator events that name a group, with the member-scoped lines attributed (see
    `attributed_events`)."""
    return new_attributed_events(tables, run)[0]


def _member_scoped(events: DataFrame) -> DataFrame:
    """Lines about one member that name no group (coordinator_core.history.inputs.member_scoped), e.g. the
    classic coordinator's "Request memberId=... for static member ... is fenced by ..."."""
    return events.where(F.col("group_id").isNull() & F.col("member_id").isNotNull())


def _member_groups(tables: Tables, versions: Mapping[str, int] | None, members: DataFrame,
                   near: _Near) -> DataFrame:
    """(cluster, member_id, group_id) for the member ids in `members` (cluster, member_id), from the tables as
    they stood at `versions` (None: now): GroupMetadata members, and lines that name a group with a member
    or related member, read `near` the run's news. Member ids are unique per cluster; the smallest group
    id wins should one not be (coordinator_core.history.inputs.member_groups does the same)."""
    def at(spec: TableSpec, time_column: str) -> DataFrame:
        rows = tables.read(spec, version=versions.get(spec.name, 0) if versions is not None else None)
        return rows.where(near.condition(time_column))

    from_records = (at(GROUP_METADATA, "record_timestamp")
                    .where(~F.col("is_tombstone") & F.col("member_ids").isNotNull())
                    .select("cluster", "group_id", F.explode("member_ids").alias("member_id")))
    from_lines = (at(COORDINATOR_EVENTS, "timestamp").where(F.col("group_id").isNotNull())
                  .select("cluster", "group_id",
                          F.explode(F.array("member_id", "related_member_id")).alias("member_id"))
                  .where(F.col("member_id").isNotNull()))
    return (from_records.unionByName(from_lines).join(F.broadcast(members), on=["cluster", "member_id"],
                                                       how="left_semi")
            .groupBy("cluster", "member_id").agg(F.min("group_id").alias("group_id")))


def _attribute(scoped: DataFrame, groups: DataFrame) -> DataFrame:
    """`scoped` with group_id from `groups` by member id, else by related member id (null when neither is
    known)."""
    by_member = groups.select(F.col("cluster").alias("_c1"), F.col("member_id").alias("_m"),
                              F.col("group_id").alias("_g1"))
    by_related = groups.select(F.col("cluster").alias("_c2"), F.col("member_id").alias("_r"),
                               F.col("group_id").alias("_g2"))
    columns = scoped.columns
    return (scoped.join(by_member, (F.col("cluster") == F.col("_c1")) & (F.col("member_id") == F.col("_m")), "left")
            .join(by_related, (F.col("cluster") == F.col("_c2")) & (F.col("related_member_id") == F.col("_r")),
                  "left")
            .withColumn("group_id", F.coalesce("_g1", "_g2")).select(*columns))


@dataclass(frozen=True)
class _Near:
    """Where a run's member lookups read: the clusters with news (the tables' partition column) and, within
    them, rows no older than `reopen_hours` twice over before the run's oldest new row (file statistics on the
    time columns skip older files). A line older than that could not amend a generation anyway (the reopen
    horizon), so what a night reads follows its new rows, not the archive's age."""

    clusters: tuple[str, ...]
    since: dt.datetime | None

    def condition(self, time_column: str) -> Column:
        in_clusters = F.col("cluster").isin(*self.clusters)
        if self.since is None:
            return in_clusters
        return in_clusters & (F.col(time_column).isNull() | (F.col(time_column) >= F.lit(self.since)))


def _near(new_events: DataFrame, new_records: DataFrame, reopen_hours: float) -> _Near:
    rows = (new_events.select("cluster", F.col("timestamp").alias("at"))
            .unionByName(new_records.select("cluster", F.timestamp_millis("timestamp_ms").alias("at")))
            .groupBy("cluster").agg(F.min("at").alias("oldest")).collect())
    oldest = [r["oldest"] for r in rows if r["oldest"] is not None]
    since = min(oldest) - dt.timedelta(hours=2 * reopen_hours) if oldest else None
    return _Near(tuple(sorted(r["cluster"] for r in rows)), since)


def new_attributed_events(tables: Tables, run: RunRange, new_records: DataFrame | None = None,
                          reopen_hours: float = 48.0) -> tuple[DataFrame, int]:
    """The run's new coordinator events that name a group, and the member-scoped lines attributed to the group
    their member id belongs to in the same cluster; also how many of the run's new member-scoped lines no
    group claims (they stay group-less in coordinator_events, counted here, not dropped).

    Done here, where log events meet groups, not in the logs stage: the member id of a line can be known
    from an earlier night or only from a later one (its GroupMetadata record archived late, or the line
    read before the record), and a broker-logs-only run has no records, only other lines naming the member
    with its group. So each run looks the member ids up in everything archived so far, and also gives the
    fold the older member-scoped lines that a member id new in this run now claims: whichever run brings
    the line or its member id, the line reaches its group once, as one full run would give it."""
    new = run.new_rows(tables, COORDINATOR_EVENTS)
    named = new.where(F.col("group_id").isNotNull())
    near = _near(new, new_records if new_records is not None else new_group_records(tables, run), reopen_hours)
    if not near.clusters:
        return named, 0
    now_scoped = _member_scoped(tables.read(COORDINATOR_EVENTS, version=tables.version(COORDINATOR_EVENTS))
                                .where(near.condition("timestamp")))
    if now_scoped.limit(1).count() == 0:
        return named, 0
    new_scoped = _member_scoped(new)
    ids = (now_scoped.select("cluster", F.explode(F.array("member_id", "related_member_id")).alias("member_id"))
           .where(F.col("member_id").isNotNull()).distinct())
    now_groups = _member_groups(tables, None, ids, near).persist()
    try:
        fresh = _attribute(new_scoped, now_groups)
        unattributed = fresh.where(F.col("group_id").isNull()).count()
        claimed = fresh.where(F.col("group_id").isNotNull())
        if run.since is not None:
            # Lines of earlier runs whose member id this run made known (or moved to another group).
            since = run.since
            old_scoped = _member_scoped(tables.read(COORDINATOR_EVENTS, version=since.get(COORDINATOR_EVENTS.name, 0))
                                        .where(near.condition("timestamp")))
            old_groups = _member_groups(tables, since, ids, near)
            then = _attribute(old_scoped, old_groups).where(F.col("group_id").isNotNull())
            newly = (_attribute(old_scoped, now_groups).where(F.col("group_id").isNotNull())
                     .join(then.select("cluster", "file_id", "line_number", "group_id"),
                           on=["cluster", "file_id", "line_number", "group_id"], how="left_anti"))
            claimed = claimed.unionByName(newly)
        # Materialised before the lookup is released: the fold reads it after this returns.
        claimed = claimed.localCheckpoint()
    finally:
        now_groups.unpersist()
    return named.unionByName(claimed), int(unattributed)


def new_topic_names(tables: Tables, run: RunRange) -> dict[str, dict[str, str]]:
    """cluster -> topic id -> name from the run's new offset commits that carry a topic id (value v4+).

    KIP-848 records name partitions by topic id; each group's fold state keeps the names it has learnt."""
    rows = (run.new_rows(tables, OFFSET_COMMITS).where(F.col("topic_id").isNotNull())
            .select("cluster", "topic_id", "topic").distinct().collect())
    names: dict[str, dict[str, str]] = {}
    for r in rows:
        names.setdefault(r["cluster"], {})[r["topic_id"]] = r["topic"]
    return names


#: The fold's output: generation rows (new or amended; `_deleted` for rows that went away) and one state
#: row per group (`_kind` = "state") with its serialized fold state, watermark and late log lines.
FOLD_OUTPUT = TableSpec(
    name="_generation_fold_output",
    comment="internal: rows and states out of the generation fold",
    grain=(),
    schema=T.StructType([
        *GROUP_GENERATIONS.schema.fields,
        T.StructField("_deleted", T.BooleanType()),
        T.StructField("_kind", T.StringType()),
        T.StructField("_state", T.BinaryType()),
        T.StructField("_watermark", T.TimestampType()),
        T.StructField("_late", T.LongType()),
        T.StructField("_unreadable", T.LongType()),
    ]),
)


def _fold_fn(topic_names: Mapping[str, Mapping[str, str]], reopen_hours: float
             ) -> Callable[[pd.DataFrame, pd.DataFrame], GroupRows]:
    def run(records: pd.DataFrame, events: pd.DataFrame) -> GroupRows:
        from coordinator_core.history.generations import fold_generations
        from coordinator_core.history.state import dump_state, load_state

        if records.empty and events.empty:
            return []
        first = records if not records.empty else events
        cluster, group = first["cluster"].iloc[0], first["group_id"].iloc[0]
        is_state = records["offset"].isna() if not records.empty else pd.Series([], dtype=bool)
        held = records.loc[is_state, "state"].tolist() if not records.empty else []
        state = load_state(held[0]) if held and held[0] is not None else None
        new = records.loc[~is_state] if not records.empty else records
        records_in, unreadable = _records(new) if not new.empty else ([], 0)
        result = fold_generations(state, records_in, _events(events), group_id=group,
                                  topic_names=topic_names.get(cluster), reopen=dt.timedelta(hours=reopen_hours))
        out: GroupRows = [{**r.to_dict(), "cluster": cluster, "_deleted": False, "_kind": "row"}
                          for r in result.rows]
        # Rows without a value for every column (pandas would fill NaN, which Arrow refuses for arrays).
        empty = dict.fromkeys(FOLD_OUTPUT.column_names)
        out += [{**empty, "cluster": cluster, "group_id": group, "group_protocol": protocol, "generation": generation,
                 "record_offset": offset, "_deleted": True, "_kind": "row"}
                for protocol, generation, offset in result.removed]
        watermark = result.state.watermark
        out.append({**empty, "cluster": cluster, "group_id": group, "_kind": "state", "_deleted": False,
                    "_state": dump_state(result.state), "_late": result.late_events, "_unreadable": unreadable,
                    "_watermark": watermark.replace(tzinfo=None) if watermark is not None else None})
        return out

    return run


@dataclass(frozen=True)
class GenerationsResult:
    groups: int
    rows_written: int
    rows_deleted: int
    late_events: int
    #: group-level rows whose stored record_json did not read back as a record (a layout this code does not
    #: know): left out of the history and counted here; the rows stay in consumer_group_records
    records_unreadable: int
    #: the generation rows the run inserted or amended (group_generations columns + `_deleted`), persisted:
    #: the caller unpersists it when the later stages are done with it
    changed: DataFrame
    #: the run's new member-scoped log lines without a group (e.g. a static member fenced) whose member id no
    #: group's records or lines name: kept group-less in coordinator_events, not in any history
    events_unattributed: int = 0


def run_generations(tables: Tables, run_id: str, run: RunRange, reopen_hours: float) -> GenerationsResult:
    """Continue every touched group's generation history with the run's new records and log events."""
    records = new_group_records(tables, run)
    events, unattributed = new_attributed_events(tables, run, records, reopen_hours)
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
    # The changed rows outlive this stage (storms, replay and what-if start from them): held in a cache of
    # their own, filled before the fold's output is released; the run releases it at its end.
    rows = out.where(F.col("_kind") == "row").select(*GROUP_GENERATIONS.column_names, "_deleted").persist()
    try:
        rows.count()
        if summary is not None and (summary["written"] or summary["deleted"]):
            tables.upsert(GROUP_GENERATIONS, rows, delete_flag="_deleted")
        if summary is not None and summary["groups"]:
            merge_state(tables, out.where(F.col("_kind") == "state").select(
                *GROUP_KEY, F.col("_state").alias("generations"),
                F.col("_watermark").alias("generations_watermark")),
                ["generations", "generations_watermark"], run_id)
    except BaseException:
        rows.unpersist()
        raise
    finally:
        out.unpersist()
    def count(name: str) -> int:
        return int(summary[name] or 0) if summary is not None else 0

    return GenerationsResult(count("groups"), count("written"), count("deleted"), count("late"), count("unreadable"),
                             rows, unattributed)


# ----------------------------------------------------------------------------------------------
# Per-group functions (run on the executors, one pandas frame per group)


def _int_or_none(v: Any) -> int | None:
    return None if v is None or v != v else int(v)  # nulls of integer columns arrive as None or NaN


def _records(pdf: pd.DataFrame) -> tuple[list[Any], int]:
    """The group's new records as history inputs, from the decoded rows (no bytes decoded here), and how
    many rows could not be read back."""
    from coordinator_core import DecodeError
    from coordinator_core.history import group_record_from_row

    pdf = pdf.sort_values("offset")
    out = []
    unreadable = 0
    # Column lists, not itertuples: this runs once per new group-level record.
    for offset, ts, record_type, version, group, value, record_json in zip(
        pdf["offset"].tolist(), pdf["timestamp_ms"].tolist(), pdf["record_type"].tolist(),
        pdf["value_version"].tolist(), pdf["group_id"].tolist(), pdf["group_metadata"].tolist(),
        pdf["record_json"].tolist(), strict=True,
    ):
        row = {"offset": int(offset), "timestamp": _int_or_none(ts), "record_type": int(record_type),
               "value_version": _int_or_none(version), "group_id": group,
               "group_metadata": json.loads(value) if isinstance(value, str) else None,
               "record_json": record_json}
        try:
            out.append(group_record_from_row(row))
        except DecodeError:
            unreadable += 1  # a record_json of another layout: the row stays in consumer_group_records as it is
    return out, unreadable


_EVENT_FIELDS: tuple[str, ...] = ()


def _events(pdf: pd.DataFrame) -> list[Any]:
    from coordinator_core import CoordinatorEvent

    if pdf.empty:
        return []
    global _EVENT_FIELDS
    if not _EVENT_FIELDS:
        _EVENT_FIELDS = tuple(f.name for f in dataclasses.fields(CoordinatorEvent))
    out = []
    for row in pdf.to_dict("records"):
        values = {k: (None if _isna(v) else v) for k, v in row.items() if k in _EVENT_FIELDS}
        ts = values.get("timestamp")
        if ts is not None:
            values["timestamp"] = pd.Timestamp(ts).to_pydatetime().replace(tzinfo=dt.timezone.utc)
        values["source"] = row.get("path") or row.get("log_source")
        for k, v in list(values.items()):
            if isinstance(v, float) and k not in ("timestamp",):
                values[k] = int(v)
        out.append(CoordinatorEvent(**values))
    return out


def _isna(v: Any) -> bool:
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def _frame(rows: Sequence[dict[str, Any]], spec: TableSpec) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=[f.name for f in spec.schema.fields])


GroupRows = list[dict[str, Any]]


def _bucketed(per_group: Callable[..., GroupRows], spec: TableSpec, cogrouped: bool) -> Callable[..., pd.DataFrame]:
    """Run a per-group function over every group of one bucket (a hash slice of the groups).

    applyInPandas per group costs milliseconds of Arrow and pandas set-up per group, more than the work
    itself for most groups; one call per bucket pays it once. The inputs are split by (cluster, group_id)
    here, each group's frames are passed to `per_group`, and all rows come back as one frame.
    """
    def run(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
        parts = [dict(iter(f.groupby(GROUP_KEY, sort=False))) if not f.empty else {} for f in frames]
        keys = list(dict.fromkeys(k for p in parts for k in p))
        rows: GroupRows = []
        for key in keys:
            rows.extend(per_group(*(p.get(key, f.iloc[0:0]) for p, f in zip(parts, frames, strict=True))))
        return _frame(rows, spec)

    # Spark checks the arity: one frame for applyInPandas, two for a cogroup.
    if cogrouped:
        return lambda left, right: run((left, right))
    return lambda frame: run((frame,))


# ----------------------------------------------------------------------------------------------
# Transforms (DataFrame -> DataFrame) and the stage


BUCKET = "_bucket"
DEFAULT_BUCKETS = 16


def _with_bucket(df: DataFrame, buckets: int) -> DataFrame:
    return df.withColumn(BUCKET, F.pmod(F.xxhash64(*GROUP_KEY), F.lit(buckets)))


def per_bucket(records: DataFrame, spec: TableSpec, per_group: Callable[..., GroupRows], buckets: int = DEFAULT_BUCKETS,
                events: DataFrame | None = None) -> DataFrame:
    """`per_group` applied to every group, with one Python call per bucket of groups (see `_bucketed`)."""
    run = _bucketed(per_group, spec, cogrouped=events is not None)
    by_bucket = _with_bucket(records, buckets).groupBy("cluster", BUCKET)
    if events is None:
        out = by_bucket.applyInPandas(run, schema=spec.schema)
    else:
        out = by_bucket.cogroup(_with_bucket(events, buckets).groupBy("cluster", BUCKET)).applyInPandas(
            run, schema=spec.schema)
    return out.select(*spec.column_names)
