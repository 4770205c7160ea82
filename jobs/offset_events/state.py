"""The offset-event fold's carried state (group_state.offsets, typed `OFFSETS_STATE`): each touched group's
fold up to its checkpoint (context, KIP-848 members, look-back times, each partition's last commit and open
stall run, what stays open to late evidence) and the records from the checkpoint on (the tail), with the
provisional rows they produced."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from coordinator_core.history.model import STALLED
from jobs.common.per_group import GROUP_KEY
from jobs.offset_events.kinds import (
    _BEFORE_ALL,
    _EVENT_COLUMNS,
    _LONG_MIN,
    _RECORD_COLUMNS,
    CLASSIC_LIVE,
    COMMIT,
    CONSUMER_LIVE,
    LOG_MATCH_MS,
    MEMBER_JOINED,
    MEMBER_LEFT,
    PARTITION_KEY,
    TOMBSTONE_MATCH_MS,
)
from jobs.offset_events.sequence import _horizon_kept
from schemas.state import (
    OFFSETS_EVENT,
    OFFSETS_PARTITION,
    OFFSETS_RECORD,
    OFFSETS_ROW_KEY,
    OFFSETS_STATE,
    OFFSETS_TOMBSTONE,
)

STATE_VERSION = 1


def _held_records(held: DataFrame) -> DataFrame:
    return held.select(*GROUP_KEY, F.explode("offsets.tail").alias("r")).select(*GROUP_KEY, "r.*")


def _key(kind: Column, topic: Column, partition: Column, record_offset: Column) -> Column:
    return F.struct(kind.alias("kind"), topic.alias("topic"), partition.cast("long").alias("partition"),
                    record_offset.cast("long").alias("record_offset"))


def _collect(rows: DataFrame, name: str, value: Column, element: T.DataType, order: Column | None = None) -> DataFrame:
    """(cluster, group_id, name): the rows' values per group as an array (sorted by `order` when given)."""
    if order is None:
        collected = F.collect_list(value)
    else:
        collected = F.transform(F.array_sort(F.collect_list(F.struct(order.alias("k"), value.alias("v")))),
                                lambda x: x["v"])
    return rows.groupBy(*GROUP_KEY).agg(collected.cast(T.ArrayType(element)).alias(name))


def _before_cut() -> Column:
    """A row before its group's checkpoint (`_cut`: the checkpoint, or Long.MAX when all is settled)."""
    return F.col("record_offset") < F.col("_cut")


def _groups_at_checkpoint(held: DataFrame, context: DataFrame, cut: DataFrame) -> DataFrame:
    """Per group: checkpoint, watermark, the context in force at the checkpoint (its last context record
    before it, else the carried context), its segment, and the carried look-back times (`_lc`, `_lk`)."""
    last_context = (context.join(cut, on=GROUP_KEY, how="inner").where(_before_cut())
                    .groupBy(*GROUP_KEY).agg(F.max_by(F.struct("generation", "members", "has_generations", "segment"),
                                                      "record_offset").alias("_c")))
    carried = held.select(*GROUP_KEY, F.col("offsets.generation").alias("_g"), F.col("offsets.members").alias("_m"),
                          F.col("offsets.has_generations").alias("_h"),
                          F.col("offsets.lookback_classic_ms").alias("_lc"),
                          F.col("offsets.lookback_consumer_ms").alias("_lk"))
    found = F.col("_c").isNotNull()
    return (cut.join(last_context, on=GROUP_KEY, how="left").join(carried, on=GROUP_KEY, how="left")
            .select(*GROUP_KEY, "_cut", "checkpoint", "watermark_ms",
                    F.when(found, F.col("_c.generation")).otherwise(F.col("_g")).alias("generation"),
                    F.when(found, F.col("_c.members")).otherwise(F.col("_m")).alias("members"),
                    F.coalesce(F.when(found, F.col("_c.has_generations")).otherwise(F.col("_h")),
                               F.lit(False)).alias("has_generations"),
                    F.coalesce(F.col("_c.segment"), F.lit(0)).alias("_segment"), "_lc", "_lk"))


def _consumer_members(held: DataFrame, group_records: DataFrame, cut: DataFrame) -> DataFrame:
    """KIP-848 members at the checkpoint: each member's last join or leave before it, else carried."""
    member_changes = (group_records.where(F.col("kind").isin(MEMBER_JOINED, MEMBER_LEFT))
                      .join(cut, on=GROUP_KEY, how="inner").where(_before_cut())
                      .select(*GROUP_KEY, "member_id", "record_offset", (F.col("kind") == MEMBER_JOINED).alias("_in")))
    carried_members = held.select(*GROUP_KEY, F.explode("offsets.consumer_members").alias("member_id"),
                                  F.lit(_BEFORE_ALL).cast("long").alias("record_offset"), F.lit(True).alias("_in"))
    members = (member_changes.unionByName(carried_members).groupBy(*GROUP_KEY, "member_id")
               .agg(F.max_by("_in", "record_offset").alias("_in")).where(F.col("_in")))
    return _collect(members, "consumer_members", F.col("member_id"), T.StringType(), F.col("member_id"))


def _lookback(contextual: DataFrame) -> DataFrame:
    """For the look-back of a later group tombstone: per protocol, the greatest "oldest time from a live record
    of it to the checkpoint" (a walk back from a tombstone at t reaches such a record iff that time is at
    least t - 1 s), and the oldest time of the records since the carried state (which caps its value).
    (`contextual` carries each group's `_cut`.)"""
    return contextual.where(_before_cut()).groupBy(*GROUP_KEY).agg(
        F.max(F.when(F.col("kind").isin(*CONSUMER_LIVE), F.col("_suffix_min"))).alias("_nc"),
        F.max(F.when(F.col("kind").isin(*CLASSIC_LIVE), F.col("_suffix_min"))).alias("_nk"),
        F.min_by("_suffix_min", "record_offset").alias("_oldest"))


def _partitions_at_checkpoint(sequence: DataFrame, runs: DataFrame, groups: DataFrame) -> DataFrame:
    """Partitions at the checkpoint: each one's last commit or tombstone before it (`p`, an OFFSETS_PARTITION
    with its open stall run), and `_open_run_first`: the first record of that open run."""
    last = (sequence.where(_before_cut()).groupBy(*PARTITION_KEY)
            .agg(F.max_by(F.struct("kind", "after_offset", "after_expire", "in_run", "segment", "run"),
                          "record_offset").alias("_last")))
    open_runs = runs.select(*PARTITION_KEY, "run", "first", "last_ms_before", "count_before")
    return (last.where(F.col("_last.kind") == COMMIT)
            .join(groups.select(*GROUP_KEY, "_segment"), on=GROUP_KEY, how="inner")
            .withColumn("_open", F.col("_last.in_run") & (F.col("_last.segment") == F.col("_segment")))
            .withColumn("run", F.col("_last.run"))
            .join(open_runs, on=[*PARTITION_KEY, "run"], how="left")
            .select(*GROUP_KEY, F.struct(
                "topic", "partition", F.col("_last.after_offset").alias("last_offset"),
                F.col("_last.after_expire").alias("last_expire_ms"),
                F.when(F.col("_open"), F.col("first.run_first_record_offset")).alias("run_first_record_offset"),
                F.when(F.col("_open"), F.col("first.run_first_ms")).alias("run_first_ms"),
                F.when(F.col("_open"), F.col("last_ms_before")).alias("run_last_ms"),
                F.when(F.col("_open"), F.col("count_before")).alias("run_count"),
                F.when(F.col("_open"), F.col("first.run_metadata")).alias("run_metadata")).alias("p"),
                    F.when(F.col("_open"), F.col("first.run_first_record_offset")).alias("_open_run_first")))


def _open_to_late_evidence(held: DataFrame, context: DataFrame, classified: DataFrame, events: DataFrame,
                           cut: DataFrame, horizon_ms: int) -> list[DataFrame]:
    """Settled tombstones open to late evidence, group tombstone times, log lines: those within the horizon,
    each as a per-group list."""
    def kept(column: Column, margin: int = 0) -> Column:
        return _horizon_kept(column, F.col("watermark_ms"), horizon_ms, margin)

    before = _before_cut()
    tombstones = (classified.join(cut, on=GROUP_KEY, how="inner")
                  .where(before & F.col("timestamp_ms").isNotNull() & kept(F.col("timestamp_ms"))))
    tombstone_list = _collect(tombstones, "tombstones", F.struct(
        "topic", "partition", "record_offset", "timestamp_ms", "previous_offset", "previous_expire_ms", "generation",
        "group_members", F.col("_kind").alias("kind"), F.col("_explanation").alias("explanation"),
        F.size("_evidence").alias("evidence_count")), OFFSETS_TOMBSTONE, F.col("record_offset"))
    deletions = (held.select(*GROUP_KEY, F.explode("offsets.group_tombstones_ms").alias("timestamp_ms"),
                             F.lit(_BEFORE_ALL).cast("long").alias("record_offset"))
                 .unionByName(context.where(~F.col("has_generations") & F.col("timestamp_ms").isNotNull())
                              .select(*GROUP_KEY, "timestamp_ms", "record_offset"))
                 .join(cut, on=GROUP_KEY, how="inner")
                 .where(before & kept(F.col("timestamp_ms"), TOMBSTONE_MATCH_MS)))
    deletion_list = _collect(deletions, "group_tombstones_ms", F.col("timestamp_ms"), T.LongType(),
                             F.col("timestamp_ms"))
    event_list = _collect(events.join(cut, on=GROUP_KEY, how="inner")
                          .where(kept(F.unix_millis("at"), LOG_MATCH_MS)),
                          "events", F.struct(*_EVENT_COLUMNS), OFFSETS_EVENT,
                          F.struct("at", "file_id", "line_number"))
    return [tombstone_list, deletion_list, event_list]


def _tail_and_provisional(records: DataFrame, emitted: DataFrame, partitions: DataFrame,
                          cut: DataFrame) -> list[DataFrame]:
    """The tail (the records from the checkpoint on) and the rows it produced (provisional: replaced or
    withdrawn by the next run), open stall runs of a group with a checkpoint among them, as per-group lists."""
    tail = records.join(cut, on=GROUP_KEY, how="inner").where(~_before_cut())
    tail_list = _collect(tail, "tail", F.struct(*_RECORD_COLUMNS), OFFSETS_RECORD,
                         F.struct("record_offset", "record_partition"))
    provisional_rows = (emitted.join(cut, on=GROUP_KEY, how="inner")
                        .where(F.col("checkpoint").isNotNull() & (F.col("record_offset") >= F.col("checkpoint")))
                        .select(*GROUP_KEY, "kind", "topic", "partition", "record_offset"))
    open_stalls = (partitions.where(F.col("_open_run_first").isNotNull())
                   .join(cut.where(F.col("checkpoint").isNotNull()), on=GROUP_KEY, how="left_semi")
                   .select(*GROUP_KEY, F.lit(STALLED).alias("kind"), F.col("p.topic").alias("topic"),
                           F.col("p.partition").alias("partition"), F.col("_open_run_first").alias("record_offset"))
                   .join(emitted.where(F.col("kind") == STALLED),
                         on=[*GROUP_KEY, "topic", "partition", "record_offset"], how="left_semi"))
    provisional_list = _collect(provisional_rows.unionByName(open_stalls).distinct(), "provisional",
                                _key(F.col("kind"), F.col("topic"), F.col("partition"), F.col("record_offset")),
                                OFFSETS_ROW_KEY, F.struct("record_offset", "kind", "topic", "partition"))
    return [tail_list, provisional_list]


def _new_state(held: DataFrame, records: DataFrame, group_records: DataFrame, context: DataFrame,
               checkpoints: DataFrame, contextual: DataFrame, sequence: DataFrame,
               runs: DataFrame, classified: DataFrame, events: DataFrame, emitted: DataFrame,
               horizon_ms: int) -> DataFrame:
    """(cluster, group_id, offsets) of every touched group: the fold up to its checkpoint, and the records
    from it on."""
    cut = checkpoints.select(*GROUP_KEY, "_cut", "checkpoint", "watermark_ms")
    groups = _groups_at_checkpoint(held, context, cut)
    partitions = _partitions_at_checkpoint(sequence, runs, groups)
    partition_list = _collect(partitions, "partitions", F.col("p"), OFFSETS_PARTITION,
                              F.struct(F.col("p.topic"), F.col("p.partition")))
    lists = [_consumer_members(held, group_records, cut), partition_list,
             *_open_to_late_evidence(held, context, classified, events, cut, horizon_ms),
             *_tail_and_provisional(records, emitted, partitions, cut)]

    def empty_if_null(name: str, element: T.DataType) -> Column:
        return F.coalesce(F.col(name), F.array().cast(T.ArrayType(element))).alias(name)

    # The carried look-back counts too, capped by the oldest time of the records since.
    lookback_classic = F.greatest(F.col("_nc"), F.least(F.coalesce("_lc", F.lit(_LONG_MIN)), F.col("_oldest")))
    lookback_consumer = F.greatest(F.col("_nk"), F.least(F.coalesce("_lk", F.lit(_LONG_MIN)), F.col("_oldest")))
    state = groups.join(_lookback(contextual), on=GROUP_KEY, how="left")
    for per_group in lists:
        state = state.join(per_group, on=GROUP_KEY, how="left")
    state = (state
             .withColumn("_lb_classic", F.when(F.col("_oldest").isNull(), F.col("_lc")).otherwise(lookback_classic))
             .withColumn("_lb_consumer", F.when(F.col("_oldest").isNull(), F.col("_lk")).otherwise(lookback_consumer)))
    sentinel = lambda name: F.when(F.col(name) > F.lit(_LONG_MIN), F.col(name))  # noqa: E731
    offsets = F.struct(
        F.lit(STATE_VERSION).alias("version"), F.col("watermark_ms"), "generation", "members", "has_generations",
        empty_if_null("consumer_members", T.StringType()),
        sentinel("_lb_classic").alias("lookback_classic_ms"), sentinel("_lb_consumer").alias("lookback_consumer_ms"),
        empty_if_null("partitions", OFFSETS_PARTITION), empty_if_null("group_tombstones_ms", T.LongType()),
        empty_if_null("tombstones", OFFSETS_TOMBSTONE), empty_if_null("events", OFFSETS_EVENT),
        empty_if_null("tail", OFFSETS_RECORD), empty_if_null("provisional", OFFSETS_ROW_KEY))
    return state.select(*GROUP_KEY, offsets.cast(OFFSETS_STATE).alias("offsets"))
