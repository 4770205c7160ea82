"""The generation history's inputs: what is new in a run (`RunRange`), the new group-level records as the
decode stage stored them, the new coordinator events that name a group, with the member-scoped lines
attributed to their group, and the topic names KIP-848 records need."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from coordinator_core.history.decoded import GROUP_METADATA_TYPE
from jobs.common.delta_io import Tables
from schemas import CONSUMER_GROUP_RECORDS, GROUP_METADATA, OFFSET_COMMITS
from schemas.gold import TableSpec
from schemas.logs import COORDINATOR_EVENTS


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
               F.to_json(F.struct("protocol_type", "generation", "protocol", "leader", "members",
                                  F.unix_millis("current_state_timestamp").alias("current_state_timestamp")),
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
                          reopen_hours: float = 48.0, new_events: DataFrame | None = None) -> tuple[DataFrame, int]:
    """The run's new coordinator events that name a group, and the member-scoped lines attributed to the group
    their member id belongs to in the same cluster; also how many of the run's new member-scoped lines no
    group claims (they stay group-less in coordinator_events, counted here, not dropped).

    Done here, where log events meet groups, not in the logs stage: the member id of a line can be known
    from an earlier night or only from a later one (its GroupMetadata record archived late, or the line
    read before the record), and a broker-logs-only run has no records, only other lines naming the member
    with its group. So each run looks the member ids up in everything archived so far, and also gives the
    fold the older member-scoped lines that a member id new in this run now claims: whichever run brings
    the line or its member id, the line reaches its group once, as one full run would give it.

    `new_records` and `new_events` (the run's new coordinator_events rows) are read here when not given; a
    caller that reads them again passes them kept (persisted)."""
    new = run.new_rows(tables, COORDINATOR_EVENTS) if new_events is None else new_events
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

    KIP-848 records name partitions by topic id; each group's fold state keeps the names it has learnt, in
    the order given here: sorted, so that a state's bytes do not depend on how many partitions the distinct
    rows came from (a state of 1 task slot and one of 2 pickled the same names in other orders)."""
    rows = (run.new_rows(tables, OFFSET_COMMITS).where(F.col("topic_id").isNotNull())
            .select("cluster", "topic_id", "topic").distinct().collect())
    names: dict[str, dict[str, str]] = {}
    for r in sorted(rows, key=lambda r: (r["cluster"], r["topic_id"], r["topic"])):
        names.setdefault(r["cluster"], {})[r["topic_id"]] = r["topic"]
    return names
