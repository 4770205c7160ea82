"""The fold's walk as window functions over the night's records and the carried state: which group
tombstones are protocol conversions, the context records and their segments, each group's checkpoint and
watermark, every record with the context in force at it, each partition's commit sequence and its stall
runs."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from coordinator_core.history.inputs import ABORTED
from jobs.common.per_group import GROUP_KEY
from jobs.offset_events.kinds import (
    _BEFORE_ALL,
    _LONG_MAX,
    _LONG_MIN,
    CLASSIC_LIVE,
    CLASSIC_TOMBSTONE,
    COMMIT,
    COMMIT_KINDS,
    CONSUMER_LIVE,
    CONSUMER_TOMBSTONE,
    CONTEXT_KINDS,
    EPOCH,
    GENERATION,
    GROUP_TOMBSTONES,
    MEMBER_JOINED,
    MEMBER_LEFT,
    PARTITION_KEY,
    PLACEHOLDER,
    TOMBSTONE_MATCH_MS,
    TRANSACTION_OPEN,
)


def _by_position(*extra: str) -> Window:
    return Window.partitionBy(*GROUP_KEY, *extra).orderBy("record_offset", "record_partition")


def _running(window: Window) -> Window:
    return window.rowsBetween(Window.unboundedPreceding, Window.currentRow)


def _horizon_kept(ts: Column, watermark: Column, horizon_ms: int, margin_ms: int = 0) -> Column:
    """Still within the reopen horizon of the group's newest time (a time unknown is kept only when the
    caller says so)."""
    return watermark.isNull() | (ts >= watermark - F.lit(horizon_ms + margin_ms))


def _conversions(records: DataFrame, group_records: DataFrame, held: DataFrame) -> DataFrame:
    """Each group tombstone of `group_records`: converted (a protocol conversion, not a deletion) and
    resolved (whether a later record settled the look-ahead).

    The oracle (`offsets._converted`) calls a classic tombstone a conversion when the first later record
    that is GroupMetadata or a live KIP-848 record is the latter (and vice versa for a KIP-848 tombstone),
    or when a live record of the other protocol lies just before it: walking back over every record of the
    group while each is at most 1 s older. That walk may reach past the checkpoint: there the carried
    `lookback_*_ms` (the newest "oldest time on the way back" of such a record) answers it.
    """
    kind = F.col("kind")
    ahead = _by_position().rowsBetween(1, Window.unboundedFollowing)
    classic_next = (F.when(kind.isin(GENERATION, PLACEHOLDER, CLASSIC_TOMBSTONE), F.lit("same"))
                    .when(kind.isin(*CONSUMER_LIVE), F.lit("other")))
    consumer_next = (F.when(kind.isin(EPOCH, CONSUMER_TOMBSTONE), F.lit("same"))
                     .when(kind.isin(*CLASSIC_LIVE), F.lit("other")))
    tombstones = (group_records
                  .withColumn("_classic_next", F.first(classic_next, ignorenulls=True).over(ahead))
                  .withColumn("_consumer_next", F.first(consumer_next, ignorenulls=True).over(ahead))
                  .where(kind.isin(*GROUP_TOMBSTONES))
                  .withColumn("_next", F.when(kind == CLASSIC_TOMBSTONE, F.col("_classic_next"))
                              .otherwise(F.col("_consumer_next")))
                  .select(*GROUP_KEY, "record_partition", "record_offset", "timestamp_ms", "kind", "_next"))
    # The walk back: the nearest earlier record older than 1 s (or without a time) stops it.
    earlier = records.select(*GROUP_KEY, F.col("record_offset").alias("_at"),
                             F.col("timestamp_ms").alias("_ts"), F.col("kind").alias("_kind"))
    walk = (tombstones.where(F.col("timestamp_ms").isNotNull()).alias("t")
            .join(earlier.alias("e"), on=GROUP_KEY, how="inner")
            .where(F.col("_at") < F.col("record_offset")))
    stops = walk.where(F.col("_ts").isNull() | (F.col("_ts") < F.col("timestamp_ms") - TOMBSTONE_MATCH_MS))
    stop = stops.groupBy(*GROUP_KEY, "record_offset").agg(F.max("_at").alias("_stop"))
    other_live = F.when(F.col("kind") == CLASSIC_TOMBSTONE, F.col("_kind").isin(*CONSUMER_LIVE)).otherwise(
        F.col("_kind").isin(*CLASSIC_LIVE))
    seen = (walk.join(stop, on=[*GROUP_KEY, "record_offset"], how="left")
            .where((F.col("_stop").isNull() | (F.col("_at") > F.col("_stop"))) & other_live)
            .select(*GROUP_KEY, "record_offset").distinct().withColumn("_seen", F.lit(True)))
    carried = held.select(*GROUP_KEY, F.col("offsets.lookback_classic_ms").alias("_lb_classic"),
                          F.col("offsets.lookback_consumer_ms").alias("_lb_consumer"))
    carried_seen = (F.col("_stop").isNull() & F.col("timestamp_ms").isNotNull()
                    & (F.when(F.col("kind") == CLASSIC_TOMBSTONE, F.col("_lb_classic"))
                       .otherwise(F.col("_lb_consumer")) >= F.col("timestamp_ms") - TOMBSTONE_MATCH_MS))
    return (tombstones
            .join(stop, on=[*GROUP_KEY, "record_offset"], how="left")
            .join(seen, on=[*GROUP_KEY, "record_offset"], how="left")
            .join(carried, on=GROUP_KEY, how="left")
            .select(*GROUP_KEY, "record_partition", "record_offset",
                    (F.coalesce(F.col("_next") == "other", F.lit(False)) | F.coalesce(F.col("_seen"), F.lit(False))
                     | F.coalesce(carried_seen, F.lit(False))).alias("converted"),
                    F.col("_next").isNotNull().alias("resolved")))


def _context_records(group_records: DataFrame, conversions: DataFrame, held: DataFrame) -> DataFrame:
    """The records that set the group's context, in log order, with the context they set and its segment.

    GroupMetadata sets (generation, member count); a KIP-848 epoch sets (epoch, members), the members being
    the carried member set plus the running sum of joins and leaves; a group tombstone that is not a
    conversion deletes the group (no generation, no members). A record that changes (generation, members)
    or deletes the group closes every stall run: `segment` counts them (0 at the checkpoint).
    """
    carried = held.select(*GROUP_KEY, F.col("offsets.consumer_members").alias("_carried_members"),
                          F.col("offsets.generation").alias("_carried_generation"),
                          F.col("offsets.members").alias("_carried_members_count"))
    members = group_records.where(F.col("kind").isin(MEMBER_JOINED, MEMBER_LEFT)).join(carried, on=GROUP_KEY,
                                                                                         how="left")
    joined = (F.col("kind") == MEMBER_JOINED).cast("int")
    was_in = F.coalesce(F.lag(joined).over(_by_position("member_id")),
                        F.coalesce(F.array_contains("_carried_members", F.col("member_id")), F.lit(False))
                        .cast("int"))
    deltas = members.select(*GROUP_KEY, "record_partition", "record_offset", (joined - was_in).alias("_delta"))
    ordered = (group_records
               .join(deltas, on=[*GROUP_KEY, "record_partition", "record_offset"], how="left")
               .join(conversions.select(*GROUP_KEY, "record_partition", "record_offset", "converted"),
                     on=[*GROUP_KEY, "record_partition", "record_offset"], how="left")
               .join(carried, on=GROUP_KEY, how="left")
               .withColumn("_count", F.when(F.col("_carried_members").isNull(), F.lit(0))
                           .otherwise(F.size("_carried_members")).cast("long")
                           + F.sum(F.coalesce(F.col("_delta"), F.lit(0))).over(_running(_by_position()))))
    deleting = F.col("kind").isin(*GROUP_TOMBSTONES) & ~F.coalesce(F.col("converted"), F.lit(False))
    context = ordered.where(F.col("kind").isin(*CONTEXT_KINDS) | deleting).select(
        *GROUP_KEY, "record_partition", "record_offset", "timestamp_ms", "kind",
        F.when(F.col("kind").isin(*CONTEXT_KINDS), F.col("generation")).alias("generation"),
        F.when(F.col("kind") == GENERATION, F.col("member_count"))
        .when(F.col("kind") == EPOCH, F.col("_count")).alias("members"),
        F.col("kind").isin(*CONTEXT_KINDS).alias("has_generations"),
        "_carried_generation", "_carried_members_count")
    first = F.row_number().over(_by_position()) == 1
    previous_generation = F.when(first, F.col("_carried_generation")).otherwise(
        F.lag("generation").over(_by_position()))
    previous_members = F.when(first, F.col("_carried_members_count")).otherwise(F.lag("members").over(_by_position()))
    context = (context.withColumn("previous_generation", previous_generation)
               .withColumn("_closes", ~F.col("has_generations")
                           | ~(F.col("generation").eqNullSafe(F.col("previous_generation"))
                               & F.col("members").eqNullSafe(previous_members))))
    return (context.withColumn("segment", F.sum(F.col("_closes").cast("long")).over(_running(_by_position())))
            .drop("_carried_generation", "_carried_members_count", "_closes"))


def _checkpoints(records: DataFrame, conversions: DataFrame, held: DataFrame, new_events: DataFrame,
                 horizon_ms: int) -> DataFrame:
    """Per group: the new watermark and the checkpoint (the first record not settled: a commit of a
    transaction still open, or a group tombstone nothing has resolved yet; null when all are settled).
    Records older than the reopen horizon count as settled: the open transaction as committed, the
    tombstone as a deletion."""
    watermark = (records.select(*GROUP_KEY, F.col("timestamp_ms").alias("_t"))
                 .unionByName(new_events.select(*GROUP_KEY, F.unix_millis("at").alias("_t")))
                 .unionByName(held.select(*GROUP_KEY, F.col("offsets.watermark_ms").alias("_t")))
                 .groupBy(*GROUP_KEY).agg(F.max("_t").alias("watermark_ms")))
    open_commits = records.where(F.col("kind").isin(*COMMIT_KINDS)
                                 & (F.col("transaction_outcome") == TRANSACTION_OPEN))
    unresolved = conversions.where(~F.col("converted") & ~F.col("resolved")).join(
        records.select(*GROUP_KEY, "record_partition", "record_offset", "timestamp_ms"),
        on=[*GROUP_KEY, "record_partition", "record_offset"], how="inner")
    unsettled = (open_commits.select(*GROUP_KEY, "record_offset", "timestamp_ms")
                 .unionByName(unresolved.select(*GROUP_KEY, "record_offset", "timestamp_ms"))
                 .join(watermark, on=GROUP_KEY, how="inner")
                 .where(F.col("timestamp_ms").isNull() | _horizon_kept(F.col("timestamp_ms"), F.col("watermark_ms"),
                                                                       horizon_ms))
                 .groupBy(*GROUP_KEY).agg(F.min("record_offset").alias("checkpoint")))
    return watermark.join(unsettled, on=GROUP_KEY, how="left").withColumn(
        "_cut", F.coalesce(F.col("checkpoint"), F.lit(_LONG_MAX)))


def _with_context(records: DataFrame, context: DataFrame, held: DataFrame, checkpoints: DataFrame) -> DataFrame:
    """Every record with the context in force at it (the last context record before it, else the carried
    context), and `_suffix_min`: the oldest time from it to the checkpoint (Long.MIN past a record
    without a time), for the carried look-back."""
    carried = held.select(*GROUP_KEY, F.lit(_BEFORE_ALL).cast("long").alias("record_offset"),
                          F.lit(-1).cast("int").alias("record_partition"),
                          F.struct(F.col("offsets.generation").alias("generation"),
                                   F.col("offsets.members").alias("members"),
                                   F.col("offsets.has_generations").alias("has_generations"),
                                   F.lit(0).cast("long").alias("segment")).alias("_context"),
                          F.lit(True).alias("_marker"))
    setters = context.select(*GROUP_KEY, "record_offset", "record_partition",
                             F.struct("generation", "members", "has_generations", "segment").alias("_context"),
                             F.lit(True).alias("_marker"))
    rows = (records.withColumn("_context", F.lit(None).cast(setters.schema["_context"].dataType))
            .withColumn("_marker", F.lit(False))
            .unionByName(carried, allowMissingColumns=True)
            .unionByName(setters, allowMissingColumns=True)
            .join(checkpoints.select(*GROUP_KEY, "_cut"), on=GROUP_KEY, how="left"))
    # A setter sorts after its own record (same position): the record is before the context it sets.
    window = Window.partitionBy(*GROUP_KEY).orderBy("record_offset", "record_partition", "_marker")
    time_to_cut = F.when(~F.col("_marker") & (F.col("record_offset") < F.col("_cut")),
                         F.coalesce(F.col("timestamp_ms"), F.lit(_LONG_MIN).cast("long")))
    return (rows
            .withColumn("_in_force", F.last("_context", ignorenulls=True).over(
                window.rowsBetween(Window.unboundedPreceding, -1)))
            .withColumn("_suffix_min", F.min(time_to_cut).over(
                window.rowsBetween(Window.currentRow, Window.unboundedFollowing)))
            .where(~F.col("_marker"))
            .drop("_marker", "_context"))


def _partition_sequences(contextual: DataFrame, held: DataFrame, checkpoints: DataFrame) -> DataFrame:
    """Each partition's commits and tombstones (aborted ones skipped) after its carried row, in log order,
    with the previous commit and the stall run each commit belongs to (`run`: a running count of run
    starts; a run is a stretch of one offset inside one segment of a group with members)."""
    carried = (held.select(*GROUP_KEY, F.explode("offsets.partitions").alias("p"),
                           F.col("offsets.generation").alias("generation"),
                           F.col("offsets.members").alias("members"))
               .select(*GROUP_KEY, "p.topic", "p.partition",
                       F.lit(_BEFORE_ALL).cast("long").alias("record_offset"),
                       F.lit(-1).cast("int").alias("record_partition"),
                       F.lit(True).alias("carried"), F.lit(COMMIT).alias("kind"),
                       F.col("p.last_offset").alias("after_offset"), F.col("p.last_expire_ms").alias("after_expire"),
                       F.col("p.run_count").isNotNull().alias("in_run"), F.lit(0).cast("long").alias("segment"),
                       F.col("p.run_first_record_offset").alias("run_first_record_offset"),
                       F.col("p.run_first_ms").alias("run_first_ms"), F.col("p.run_last_ms").alias("run_last_ms"),
                       F.col("p.run_count").alias("run_count"), F.col("p.run_metadata").alias("run_metadata"),
                       "generation", "members"))
    context = F.col("_in_force")
    commits = (contextual
               .where(F.col("kind").isin(*COMMIT_KINDS)
                      & ~F.coalesce(F.col("transaction_outcome") == ABORTED, F.lit(False)))
               .select(*GROUP_KEY, "topic", "partition", "record_offset", "record_partition",
                       F.lit(False).alias("carried"), "kind", "timestamp_ms", "offset", "metadata",
                       F.when(F.col("kind") == COMMIT, F.col("offset")).alias("after_offset"),
                       F.when(F.col("kind") == COMMIT, F.col("expire_ms")).alias("after_expire"),
                       context["generation"].alias("generation"), context["members"].alias("members"),
                       F.coalesce(context["has_generations"], F.lit(False)).alias("has_generations"),
                       F.coalesce(context["segment"], F.lit(0)).alias("segment")))
    in_context = F.col("has_generations") & (F.col("members") > 0)
    commits = (commits.withColumn("in_run", (F.col("kind") == COMMIT) & F.coalesce(in_context, F.lit(False)))
               .withColumn("run_first_record_offset", F.col("record_offset"))
               .withColumn("run_first_ms", F.col("timestamp_ms")).withColumn("run_last_ms", F.col("timestamp_ms"))
               .withColumn("run_count", F.lit(1).cast("long")).withColumn("run_metadata", F.col("metadata")))
    window = Window.partitionBy(*PARTITION_KEY).orderBy("record_offset", "record_partition")
    previous = F.lag("after_offset").over(window)
    sequence = (commits.unionByName(carried, allowMissingColumns=True)
                .join(checkpoints.select(*GROUP_KEY, "_cut"), on=GROUP_KEY, how="left")
                .withColumn("previous_offset", previous)
                .withColumn("previous_expire", F.lag("after_expire").over(window))
                .withColumn("_continues", F.col("in_run") & ~F.col("carried")
                            & F.coalesce(F.lag("in_run").over(window), F.lit(False))
                            & (F.lag("segment").over(window) == F.col("segment"))
                            & (previous == F.col("offset")))
                .withColumn("run", F.sum((F.col("in_run") & ~F.col("_continues")).cast("long"))
                            .over(_running(window)))
                .drop("_continues"))
    return sequence


def _runs(sequence: DataFrame) -> DataFrame:
    """Each stall run: first commit (record offset, time, metadata), last time, commit count, generation and
    members, for the whole run and for its part before the checkpoint (`*_before` columns, for the state)."""
    members = sequence.where(F.col("in_run"))
    before = F.col("record_offset") < F.col("_cut")
    first = F.struct("run_first_record_offset", "run_first_ms", "run_metadata", "generation", "members", "after_offset")
    return members.groupBy(*PARTITION_KEY, "run").agg(
        F.min_by(first, "record_offset").alias("first"),
        F.max_by("run_last_ms", "record_offset").alias("last_ms"),
        F.sum("run_count").alias("count"),
        F.max_by(F.when(before, F.col("run_last_ms")), F.when(before, F.col("record_offset"))).alias("last_ms_before"),
        F.sum(F.when(before, F.col("run_count"))).alias("count_before"),
    )
