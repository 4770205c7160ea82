"""offset_events rows out of the fold: rewinds and commits by non-members, stalls, and tombstones classified
by the log lines and group tombstones near them, as the oracle gives them."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from coordinator_core.history.model import DELETED, EXPIRED, GROUP_DELETED, NON_MEMBER_COMMIT, REWIND, STALLED
from coordinator_core.history.offsets import EXPLAIN_GROUP_SWEPT
from coordinator_core.logs import events as ev
from jobs.common.per_group import GROUP_KEY
from jobs.offset_events.kinds import _EVIDENCE, COMMIT, LOG_MATCH_MS, OFFSET_TOMBSTONE, TOMBSTONE_MATCH_MS
from schemas.gold import OFFSET_EVENTS


def _null(name: str) -> Column:
    return F.lit(None).cast(OFFSET_EVENTS.schema[name].dataType).alias(name)


def _event_row(**values: Column) -> list[Column]:
    """An offset_events row: the given columns, null elsewhere (empty evidence, inferred as the oracle's
    default)."""
    defaults = {"inferred": F.lit(True), "evidence": F.array().cast(_EVIDENCE)}
    out = []
    for field in OFFSET_EVENTS.schema.fields:
        value = values.get(field.name, defaults.get(field.name))
        out.append(value.cast(field.dataType).alias(field.name) if value is not None else _null(field.name))
    return out


def _timestamp(millis: Column) -> Column:
    return F.timestamp_millis(millis)


def commit_rows(sequence: DataFrame) -> DataFrame:
    """Rewinds and commits by non-members (admin resets, assign()-based clients), from the night's commits."""
    commits = sequence.where(~F.col("carried") & (F.col("kind") == COMMIT))
    delta = F.col("offset") - F.col("previous_offset")
    non_member = F.col("has_generations") & (F.col("members") == 0)
    rewind = ~non_member & F.col("previous_offset").isNotNull() & (delta < 0)
    common = dict(cluster=F.col("cluster"), group_id=F.col("group_id"), topic=F.col("topic"),
                  partition=F.col("partition"), at=_timestamp(F.col("timestamp_ms")),
                  record_offset=F.col("record_offset"), offset=F.col("offset"),
                  previous_offset=F.col("previous_offset"), delta=delta, generation=F.col("generation"),
                  metadata=F.col("metadata"))
    non_members = commits.where(non_member).select(*_event_row(
        **common, kind=F.lit(NON_MEMBER_COMMIT), group_members=F.lit(0), explanation=F.concat(
            F.lit("committed while generation "), F.col("generation").cast("string"),
            F.lit(" had no members: only a client outside the group (admin reset, assign()-based consumer) can "
                  "commit then"),
            F.when(delta < 0, F.lit("; it moved the offset backwards")).otherwise(F.lit("")))))
    rewinds = commits.where(rewind).select(*_event_row(
        **common, kind=F.lit(REWIND), group_members=F.col("members"), inferred=F.lit(False),
        explanation=F.concat(
            F.lit("committed offset went back by "), (-delta).cast("string"),
            F.when(F.col("has_generations"), F.concat(
                F.lit(" in generation "), F.col("generation").cast("string"), F.lit(" with "),
                F.col("members").cast("string"), F.lit(" member(s)"))).otherwise(F.lit("")))))
    return non_members.unionByName(rewinds)


def stall_rows(runs: DataFrame, stall_min_commits: int, stall_min_ms: int) -> DataFrame:
    """Runs of at least `stall_min_commits` commits of one offset over at least `stall_min_ms`."""
    duration = F.col("last_ms") - F.col("first.run_first_ms")
    stalled = runs.where((F.col("count") >= stall_min_commits) & duration.isNotNull() & (duration >= stall_min_ms))
    return stalled.select(*_event_row(
        cluster=F.col("cluster"), group_id=F.col("group_id"), kind=F.lit(STALLED), topic=F.col("topic"),
        partition=F.col("partition"), at=_timestamp(F.col("first.run_first_ms")),
        ended_at=_timestamp(F.col("last_ms")), record_offset=F.col("first.run_first_record_offset"),
        offset=F.col("first.after_offset"), commit_count=F.col("count"), duration_ms=duration,
        generation=F.col("first.generation"), group_members=F.col("first.members"),
        metadata=F.col("first.run_metadata"), inferred=F.lit(False),
        explanation=F.concat(
            F.col("count").cast("string"), F.lit(" commits of offset "), F.col("first.after_offset").cast("string"),
            F.lit(" over "), duration.cast("string"), F.lit(" ms in generation "),
            F.col("first.generation").cast("string"), F.lit(" while the group had "),
            F.col("first.members").cast("string"), F.lit(" member(s)"))))


def _tombstone_inputs(sequence: DataFrame, context: DataFrame) -> DataFrame:
    """The night's tombstones in OFFSETS_TOMBSTONE's shape (no classification yet): offset tombstones with
    the commit before them, and group deletions with the generation they ended."""
    offsets = sequence.where(~F.col("carried") & (F.col("kind") == OFFSET_TOMBSTONE)).select(
        *GROUP_KEY, "topic", "partition", "record_offset", "timestamp_ms", "previous_offset",
        F.col("previous_expire").alias("previous_expire_ms"), "generation",
        F.col("members").alias("group_members"))
    groups = context.where(~F.col("has_generations")).select(
        *GROUP_KEY, F.lit(None).cast("string").alias("topic"), F.lit(None).cast("long").alias("partition"),
        "record_offset", "timestamp_ms", F.lit(None).cast("long").alias("previous_offset"),
        F.lit(None).cast("long").alias("previous_expire_ms"),
        F.col("previous_generation").alias("generation"), F.lit(None).cast("long").alias("group_members"))
    return offsets.unionByName(groups)


_EXPLAIN_WITH_GROUP = "deleted with the group (the group's tombstone is written with it)"
_EXPLAIN_EXPIRE_TIMESTAMP = "expired: the commit's expire timestamp had passed"
_EXPLAIN_SWEEP = "expired: an offset-expiry sweep logged at the same time"
_EXPLAIN_NO_DELETION = ("tombstone with no deletion seen: retention expiry is the usual source (a topic deletion "
                        "looks the same without its log line)")
_EXPLAIN_GROUP_DELETED = "the group's own tombstone: the group was deleted"


def classify_tombstones(tombstones: DataFrame, events: DataFrame, group_tombstones: DataFrame,
                        sweeps: DataFrame | None = None) -> DataFrame:
    """Tombstones (OFFSETS_TOMBSTONE inputs) with kind, inferred, explanation and evidence, as the oracle's
    `_tombstone_row` and `_group_tombstone_row` give them: log lines within 5 s (offset/group deletions naming
    the group, then expiry sweeps: lines naming the group, and the cluster's group-less `sweeps`), the
    group's own tombstone within 1 s, the v1 expire timestamp."""
    timed = tombstones.where(F.col("timestamp_ms").isNotNull()).alias("t")
    within = F.abs(F.unix_micros("e.at") - F.col("t.timestamp_ms") * 1000) <= LOG_MATCH_MS * 1000
    near = timed.join(events.alias("e"), on=GROUP_KEY, how="inner").where(within)
    if sweeps is not None:
        swept = (timed.join(sweeps.alias("e"), on="cluster", how="inner").where(within)
                 .select(*near.columns))
        near = near.unionByName(swept)
    # (unqualified names from here: the union has no t/e aliases, and the sides share no column name)
    evidence = F.struct("event_type", "at", "member_id", "cause_class", "reason", "source",
                        "line_number", "message")
    is_group = F.col("topic").isNull()
    deleting = F.when(is_group, F.col("event_type").isin(ev.GROUPS_DELETED, ev.GROUP_DEAD)).otherwise(
        F.col("event_type").isin(ev.OFFSETS_DELETED, ev.GROUPS_DELETED))
    expiring = F.col("event_type") == ev.OFFSETS_EXPIRED
    order = F.struct(F.col("at"), F.col("file_id"), F.col("line_number"))
    by_tombstone = [*GROUP_KEY, "record_offset"]

    def in_time_order(condition: Column) -> Column:
        items = F.collect_list(F.when(condition, F.struct(order.alias("k"), evidence.alias("v"))))
        return F.transform(F.array_sort(items), lambda x: x["v"])

    found = near.groupBy(*by_tombstone).agg(in_time_order(deleting).alias("_deleting"),
                                           in_time_order(expiring).alias("_expiring"))
    with_group = (tombstones.where(F.col("timestamp_ms").isNotNull() & F.col("topic").isNotNull()).alias("t")
                  .join(group_tombstones.alias("g"), on=GROUP_KEY, how="inner")
                  .where(F.abs(F.col("g.timestamp_ms") - F.col("t.timestamp_ms")) <= TOMBSTONE_MATCH_MS)
                  .select(*GROUP_KEY, F.col("t.record_offset").alias("record_offset"))
                  .distinct().withColumn("_with_group", F.lit(True)))
    key = [*GROUP_KEY, "record_offset"]
    joined = (tombstones.join(found, on=key, how="left").join(with_group, on=key, how="left")
              .withColumn("_deleting", F.coalesce("_deleting", F.array().cast(_EVIDENCE)))
              .withColumn("_expiring", F.coalesce("_expiring", F.array().cast(_EVIDENCE))))
    has_deleting = F.size("_deleting") > 0
    has_expiring = F.size("_expiring") > 0
    timed_out = F.coalesce((F.col("previous_expire_ms") > 0) & (F.col("timestamp_ms") >= F.col("previous_expire_ms")),
                           F.lit(False))
    group = F.col("topic").isNull()
    with_group = F.coalesce("_with_group", F.lit(False))
    # An expiry sweep comes before the group's tombstone: the sweep writes the group's tombstone with the
    # last offsets' when it empties the group.
    kind = (F.when(group, F.lit(GROUP_DELETED)).when(has_deleting, F.lit(DELETED))
            .when(has_expiring, F.lit(EXPIRED)).when(with_group, F.lit(DELETED)).otherwise(F.lit(EXPIRED)))
    explanation = (F.when(group, F.when(~has_deleting & has_expiring, F.lit(EXPLAIN_GROUP_SWEPT))
                          .otherwise(F.lit(_EXPLAIN_GROUP_DELETED)))
                   .when(has_deleting, F.concat(F.lit("deleted: "), F.col("_deleting")[0]["event_type"],
                                                F.lit(" names the group")))
                   .when(has_expiring, F.when(timed_out, F.lit(_EXPLAIN_EXPIRE_TIMESTAMP))
                         .otherwise(F.lit(_EXPLAIN_SWEEP)))
                   .when(with_group, F.lit(_EXPLAIN_WITH_GROUP))
                   .when(timed_out, F.lit(_EXPLAIN_EXPIRE_TIMESTAMP))
                   .otherwise(F.lit(_EXPLAIN_NO_DELETION)))
    evidence_out = (F.when(has_deleting, F.col("_deleting")).when(has_expiring, F.col("_expiring"))
                    .otherwise(F.array().cast(_EVIDENCE)))
    inferred = ~group & ~has_deleting & ~has_expiring & (with_group | ~timed_out)
    return (joined.withColumn("_kind", kind).withColumn("_explanation", explanation)
            .withColumn("_evidence", evidence_out).withColumn("_inferred", inferred)
            .drop("_deleting", "_expiring", "_with_group"))


def tombstone_rows(classified: DataFrame) -> DataFrame:
    return classified.select(*_event_row(
        cluster=F.col("cluster"), group_id=F.col("group_id"), kind=F.col("_kind"), topic=F.col("topic"),
        partition=F.col("partition"), at=_timestamp(F.col("timestamp_ms")), record_offset=F.col("record_offset"),
        previous_offset=F.col("previous_offset"), generation=F.col("generation"),
        group_members=F.col("group_members"), inferred=F.col("_inferred"), explanation=F.col("_explanation"),
        evidence=F.col("_evidence")))
