"""Replica copies: copies of one `__consumer_offsets` partition from several brokers (and the archive)
reconciled per offset. Identical copies are archived once; where copies differ, Kafka's leader epoch rule
decides (a record written under epoch e at or past the start of a later epoch was truncated), and every
losing copy becomes a replica_conflicts row with its reason (`reconcile_copies`, `replica_conflict_rows`).
The archive's side: its watermarks, its leader epochs and the rows a run's copies can meet.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from jobs.common.delta_io import Tables
from jobs.decode.outcomes import per_partition_condition
from jobs.ingest.rows import POSITION
from schemas import RAW_OFFSETS


def archive_watermarks(raw_offsets: DataFrame) -> DataFrame:
    """(cluster, partition, last_archived_offset): the highest offset archived per partition."""
    return raw_offsets.groupBy(*POSITION).agg(F.max("offset").alias("last_archived_offset"))


#: The fields that make two copies of one offset the same record. STRICT: the record itself; LENIENT: batch
#: facts a source may not know (null from Kafka's source, or in rows archived before partition_leader_epoch
#: existed), equal or unknown on either side.
STRICT_FIELDS = ("key", "value", "timestamp", "timestamp_type", "is_control", "control_type")
LENIENT_FIELDS = ("producer_id", "producer_epoch", "is_transactional", "batch_base_offset", "batch_last_offset",
                  "partition_leader_epoch")
#: Batch framing that only a v2 batch (one with a leader epoch) keeps through compaction: the log cleaner
#: keeps a v2 batch's base offset and lastOffsetDelta, but may rebuild a legacy (magic 0/1) wrapper around
#: the messages it keeps, so copies of a legacy record compacted differently are still the same record.
_V2_FRAMING = ("batch_base_offset", "batch_last_offset")
TRUNCATED = "truncated_by_later_epoch"
ARCHIVED_TRUNCATED = "archived_copy_truncated"
UNDECIDED = "undecided"
_EPOCH_ENDS_SCHEMA = ("cluster string, partition int, epoch int, end_epoch int, end_start_offset long, "
                      "end_evidence string")


def _digest(fields: Sequence[str], prefix: str = "") -> Any:
    """SHA-256 (hex) of the fields' values, null-aware (a null and an empty value differ)."""
    parts = []
    for name in fields:
        c = F.col(prefix + name)
        if name in _V2_FRAMING:
            c = F.when(F.col(prefix + "partition_leader_epoch") >= 0, c)
        text = F.hex(c) if name in ("key", "value") else (
            F.unix_micros(c).cast("string") if name == "timestamp" else c.cast("string"))
        parts.append(F.coalesce(F.concat(F.lit("="), text), F.lit("-")))
    return F.sha2(F.concat_ws("|", *parts), 256)


def epoch_evidence(records: DataFrame, archive_epochs: DataFrame | None = None,
                   checkpoints: Sequence[tuple[str, int, int, int, str]] = ()) -> list[tuple[str, int, int, int, str]]:
    """(cluster, partition, epoch, start offset, evidence) of every leader epoch the inputs show: a batch of
    epoch e at base offset b says e started at or before b (this run's copies and the archive), a
    `leader-epoch-checkpoint` entry says where it started. Small: one row per partition, epoch and source."""
    base = F.coalesce("batch_base_offset", "offset")
    read = (records.where(F.col("partition_leader_epoch") >= 0)
            .groupBy(*POSITION, F.col("partition_leader_epoch").alias("epoch"))
            .agg(F.min_by(F.struct(base.alias("start"), F.col("source")), F.struct(base, F.col("source")))
                 .alias("first"))
            .select(*POSITION, "epoch", "first.start",
                    F.concat(F.lit("batch at offset "), F.col("first.start"), F.lit(" of "), "first.source")))
    rows = [tuple(r) for r in read.collect()]
    if archive_epochs is not None:
        rows += [(r["cluster"], r["partition"], r["epoch"], r["start"], f"raw_offsets (batch at offset {r['start']})")
                 for r in archive_epochs.where(F.col("epoch") >= 0).collect()]
    rows += [(c, p, e, o, f"leader-epoch-checkpoint {path}") for c, p, e, o, path in checkpoints]
    return rows


def epoch_ends(spark: SparkSession, evidence: Sequence[tuple[str, int, int, int, str]]) -> DataFrame:
    """(cluster, partition, epoch) -> the later epoch whose start ends it (`coordinator_core.leader_epochs`):
    a record of that epoch at or past `end_start_offset` was truncated by Kafka."""
    from coordinator_core.leader_epochs import EpochStart, epoch_end_offsets, epoch_starts

    by_partition: dict[tuple[str, int], list[EpochStart]] = {}
    for cluster, partition, epoch, start, where in evidence:
        by_partition.setdefault((cluster, partition), []).append(EpochStart(int(epoch), int(start), where))
    rows = []
    for (cluster, partition), found in sorted(by_partition.items()):
        for epoch, end in sorted(epoch_end_offsets(epoch_starts(found)).items()):
            if end is not None:
                rows.append((cluster, partition, epoch, end.epoch, end.start_offset, end.source))
    return spark.createDataFrame(rows, _EPOCH_ENDS_SCHEMA)


def reconcile_copies(records: DataFrame, archived: DataFrame, ends: DataFrame | None = None) -> DataFrame:
    """Every distinct copy of each (cluster, partition, offset) this run read, decided against the other
    copies and the archive: `_archive` (archive it: the offset's winner, not archived yet) or `_reason` (a
    replica conflict to quarantine), with the columns of `records` plus `_digest`, `_copies`, `_kept_source`,
    `_kept_epoch`, `_kept_archived`, `_end_epoch`, `_end_start_offset`, `_end_evidence`. A copy equal to
    the archived record (`STRICT_FIELDS`, `LENIENT_FIELDS`) is neither.

    The rule (Kafka's): a copy written under leader epoch e at or past the start offset of a later epoch
    (`ends`) was truncated by that epoch's leader and loses. Among the rest, the archived record is kept
    (the archive is append-only); else, when the rule cannot decide (same or unknown epoch), the tie-break:
    higher batch leader epoch, then the copy more files hold, then the first source path, then the digest.
    """
    columns = records.columns
    if ends is None:
        ends = records.sparkSession.createDataFrame([], _EPOCH_ENDS_SCHEMA)
    offset_key = [*POSITION, "offset"]
    strict = _digest(STRICT_FIELDS)
    keyed = (records.withColumn("_strict", strict)
             .withColumn("_digest", _digest((*STRICT_FIELDS, *LENIENT_FIELDS)))
             .repartition(*offset_key))
    same_copy = Window.partitionBy(*offset_key, "_digest")
    variants = (keyed.withColumn("_copies", F.count(F.lit(1)).over(same_copy).cast("int"))
                .withColumn("_nth", F.row_number().over(same_copy.orderBy("source")))
                .where(F.col("_nth") == 1).drop("_nth"))
    a = archived.select(*offset_key, _digest(STRICT_FIELDS).alias("a_strict"),
                        *[F.col(c).alias(f"a_{c}") for c in LENIENT_FIELDS], F.col("source").alias("a_source"),
                        F.lit(True).alias("a_held"))
    end = F.broadcast(ends)
    joined = (
        variants.join(a, on=offset_key, how="left")
        .join(end.withColumnRenamed("epoch", "partition_leader_epoch")
              .withColumnRenamed("end_epoch", "_end_epoch")
              .withColumnRenamed("end_start_offset", "_end_start_offset")
              .withColumnRenamed("end_evidence", "_end_evidence"),
              on=[*POSITION, "partition_leader_epoch"], how="left")
        .join(end.select(*POSITION, F.col("epoch").alias("a_partition_leader_epoch"),
                         F.col("end_start_offset").alias("a_end_start_offset")),
              on=[*POSITION, "a_partition_leader_epoch"], how="left")
    )
    both_v2 = F.coalesce((F.col("partition_leader_epoch") >= 0) & (F.col("a_partition_leader_epoch") >= 0),
                         F.lit(False))
    lenient_equal = [F.col(c).isNull() | F.col(f"a_{c}").isNull() | (F.col(c) == F.col(f"a_{c}"))
                     | (~both_v2 if c in _V2_FRAMING else F.lit(False))
                     for c in LENIENT_FIELDS]
    same_as_archived = F.col("a_held") & (F.col("_strict") == F.col("a_strict"))
    for condition in lenient_equal:
        same_as_archived = same_as_archived & condition
    truncated = F.coalesce(F.col("offset") >= F.col("_end_start_offset"), F.lit(False))
    archived_truncated = F.coalesce(F.col("offset") >= F.col("a_end_start_offset"), F.lit(False))
    pending = joined.where(~F.coalesce(same_as_archived, F.lit(False))).withColumn("_truncated", truncated)
    rank = Window.partitionBy(*offset_key).orderBy(
        F.col("_truncated").asc(), F.col("partition_leader_epoch").desc_nulls_last(), F.col("_copies").desc(),
        F.col("source").asc(), F.col("_digest").asc())
    first = F.first  # the rank-1 copy's fields, over the whole offset
    whole = rank.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    ranked = (pending.withColumn("_rank", F.row_number().over(rank))
              .withColumn("_top_source", first("source").over(whole))
              .withColumn("_top_epoch", first("partition_leader_epoch").over(whole))
              .withColumn("_top_truncated", first("_truncated").over(whole)))
    held = F.coalesce(F.col("a_held"), F.lit(False))
    # the copy raw_offsets holds at this offset after the run: the archived one, else the rank-1 copy
    # unless even that one was truncated (then none)
    winner_here = ~held & (F.col("_rank") == 1) & ~F.col("_truncated")
    kept_exists = held | ~F.col("_top_truncated")
    reason = (F.when(winner_here, F.lit(None))
              .when(F.col("_truncated"), F.lit(TRUNCATED))
              .when(held & archived_truncated, F.lit(ARCHIVED_TRUNCATED))
              .otherwise(F.lit(UNDECIDED)))
    return ranked.select(
        *columns,
        "_digest",
        "_copies",
        winner_here.alias("_archive"),
        reason.alias("_reason"),
        F.when(held, F.col("a_source")).when(kept_exists, F.col("_top_source")).alias("_kept_source"),
        F.when(held, F.col("a_partition_leader_epoch")).when(kept_exists, F.col("_top_epoch")).alias("_kept_epoch"),
        F.when(held, F.lit(True)).when(kept_exists, F.lit(False)).alias("_kept_archived"),
        F.col("_end_epoch").cast("int").alias("_end_epoch"),
        "_end_start_offset",
        "_end_evidence",
    )


def records_to_archive(records: DataFrame, watermarks: DataFrame, archived: DataFrame,
                       ends: DataFrame | None = None) -> DataFrame:
    """Records whose (cluster, partition, offset) is not archived yet, each once: the winner among the
    copies at that offset (`reconcile_copies`). `watermarks` is kept for callers; the archive itself says
    which offsets it holds."""
    return reconcile_copies(records, archived, ends).where("_archive").select(*records.columns)


def replica_conflict_rows(decided: DataFrame, run_id: str, detected_at: dt.datetime) -> DataFrame:
    """The copies `reconcile_copies` quarantines -> replica_conflicts rows, the reason in words."""
    epoch = F.coalesce(F.col("partition_leader_epoch").cast("string"), F.lit("unknown"))
    kept = F.coalesce(F.concat(F.lit("the kept copy ("), F.col("_kept_source"), F.lit(", leader epoch "),
                               F.coalesce(F.col("_kept_epoch").cast("string"), F.lit("unknown")),
                               F.when(F.col("_kept_archived"), F.lit(", archived by an earlier run"))
                               .otherwise(F.lit("")), F.lit(")")),
                      F.lit("no copy (none survives the rule)"))
    truncation = F.concat(F.lit("leader epoch "), F.col("_end_epoch").cast("string"), F.lit(" starts at offset "),
                          F.col("_end_start_offset").cast("string"), F.lit(" ("), F.col("_end_evidence"), F.lit(")"))
    detail = (
        F.when(F.col("_reason") == TRUNCATED,
               F.concat(F.lit("written under leader epoch "), epoch, F.lit(" at offset "),
                        F.col("offset").cast("string"), F.lit(", but "), truncation,
                        F.lit(": Kafka truncated it; kept: "), kept))
        .when(F.col("_reason") == ARCHIVED_TRUNCATED,
              F.concat(F.lit("this copy (leader epoch "), epoch, F.lit(") is the one Kafka kept; raw_offsets "
                       "already holds "), kept, F.lit(", written before a later epoch started at or before this "
                       "offset: a truncated tail, kept because the archive is append-only")))
        .otherwise(F.concat(F.lit("copies differ under leader epoch "), epoch, F.lit(" vs "),
                            F.coalesce(F.col("_kept_epoch").cast("string"), F.lit("unknown")),
                            F.lit(" and no later epoch decides; kept "), kept,
                            F.when(F.col("_kept_archived"), F.lit(" (the archive is append-only)"))
                            .otherwise(F.lit(" by the tie-break: higher batch leader epoch, then the copy more "
                                             "files hold, then the first source path")))))
    return decided.where(F.col("_reason").isNotNull()).select(
        "cluster", "partition", "offset",
        F.col("_reason").alias("reason"),
        detail.alias("reason_detail"),
        F.col("_digest").alias("copy_digest"),
        "source",
        F.col("_copies").alias("copies"),
        "partition_leader_epoch",
        *[F.when(F.col("_reason") == TRUNCATED, F.col(c)).alias(name) for c, name in (
            ("_end_epoch", "truncated_by_epoch"), ("_end_start_offset", "truncated_by_start_offset"),
            ("_end_evidence", "truncated_by_evidence"))],
        F.col("_kept_source").alias("kept_source"),
        F.col("_kept_epoch").alias("kept_partition_leader_epoch"),
        F.col("_kept_archived").alias("kept_archived_before"),
        "timestamp", "timestamp_type", "key", "value", "producer_id", "producer_epoch", "is_transactional",
        "is_control", "control_type", "batch_base_offset", "batch_last_offset",
        F.lit(run_id).alias("run_id"),
        F.lit(detected_at).cast("timestamp").alias("detected_at"),
    )


def archive_epochs(raw_offsets: DataFrame) -> DataFrame:
    """(cluster, partition, epoch, start, last_offset) of the archive: per batch leader epoch (null for rows
    without one), its first batch's base offset and its last offset. One scan gives the watermarks and the
    archive's leader epoch evidence."""
    return raw_offsets.groupBy(*POSITION, F.col("partition_leader_epoch").alias("epoch")).agg(
        F.min(F.coalesce("batch_base_offset", "offset")).alias("start"), F.max("offset").alias("last_offset"))


ARCHIVE_EPOCHS_SCHEMA = "cluster string, partition int, epoch int, start long, last_offset long"
EpochRow = tuple[str, int, int | None, int, int]


@dataclass(frozen=True)
class ArchiveEpochs:
    """`archive_epochs` of raw_offsets as it stood at `raw_version`: a row per partition and leader epoch.

    Carried from run to run in the commit note (`jobs.run_commit.commit_note`), so that a night adds to it
    what was archived since (`current_archive_epochs`) instead of grouping the whole archive again: the
    archive only grows (a fleet archives hundreds of millions of records a day, compaction never removes
    one), its epochs do not (one per leader change of each partition). Min and max fold over any split of
    the rows, so the carried rows plus the new rows' are the whole archive's."""

    raw_version: int
    rows: tuple[EpochRow, ...]

    def frame(self, spark: SparkSession) -> DataFrame:
        return spark.createDataFrame(list(self.rows), ARCHIVE_EPOCHS_SCHEMA)

    def last_offsets(self, cluster: str) -> dict[int, int]:
        """partition -> the highest offset archived, for one cluster."""
        last: dict[int, int] = {}
        for c, partition, _, _, last_offset in self.rows:
            if c == cluster:
                last[partition] = max(last_offset, last.get(partition, last_offset))
        return last

    def to_json(self) -> dict[str, Any]:
        return {"raw_version": self.raw_version, "rows": [list(r) for r in self.rows]}

    @staticmethod
    def from_json(data: Any) -> ArchiveEpochs | None:
        """The summary from `to_json`'s form; None for anything else (then the archive is grouped again)."""
        try:
            rows = tuple((str(c), int(p), None if e is None else int(e), int(s), int(o))
                         for c, p, e, s, o in data["rows"])
            return ArchiveEpochs(int(data["raw_version"]), rows)
        except (KeyError, TypeError, ValueError):
            return None


def fold_epochs(*parts: Iterable[Sequence[Any]]) -> tuple[EpochRow, ...]:
    """`archive_epochs` rows of several parts of the archive -> those of the whole (min start, max last offset
    per cluster, partition and epoch), sorted."""
    merged: dict[tuple[str, int, int | None], tuple[int, int]] = {}
    for part in parts:
        for cluster, partition, epoch, start, last_offset in part:
            key = (str(cluster), int(partition), None if epoch is None else int(epoch))
            held = merged.get(key)
            merged[key] = ((int(start), int(last_offset)) if held is None
                           else (min(held[0], int(start)), max(held[1], int(last_offset))))
    return tuple(sorted(((c, p, e, s, o) for (c, p, e), (s, o) in merged.items()),
                        key=lambda r: (r[0], r[1], -1 if r[2] is None else r[2])))


def current_archive_epochs(tables: Tables, carried: ArchiveEpochs | None) -> ArchiveEpochs:
    """The archive's epochs at raw_offsets' current version: the carried summary plus the rows appended since
    it (a crashed run's appends included: raw_offsets is never rolled back), read as the table's change
    feed. The whole table is grouped only when nothing usable is carried: a first run, a note without the
    summary (written before it existed), or commit files of the versions since cleaned up."""
    version = tables.version(RAW_OFFSETS)
    if carried is not None and carried.raw_version == version:
        return carried
    usable = carried is not None and carried.raw_version < version and all(
        tables.commit_actions(RAW_OFFSETS, v) is not None for v in range(carried.raw_version + 1, version + 1))
    if carried is None or not usable:
        new, base = tables.read(RAW_OFFSETS, version=version), ()
    else:
        new, base = tables.changes(RAW_OFFSETS, carried.raw_version, version), carried.rows
    return ArchiveEpochs(version, fold_epochs(base, (tuple(r) for r in archive_epochs(new).collect())))


def archived_from(raw_offsets: DataFrame, records: DataFrame) -> DataFrame:
    """The archived rows a run's copies can meet: per partition read, those at or past the lowest offset read.

    Copies are compared with the archive field by field (their digests), so the comparison must not read
    the whole archive every night: what a run reads is the retained log (or, from Kafka, what follows the
    watermark), and an archived row below the lowest offset read cannot share an offset with any copy. The
    bounds are written as literals (one condition per partition), so Delta skips the files whose offset
    statistics lie below them and the archive's age does not enter a night's cost.
    """
    lowest = {(r["cluster"], r["partition"]): f"offset >= {int(r['lowest'])}"
              for r in records.groupBy(*POSITION).agg(F.min("offset").alias("lowest")).collect()}
    if not lowest:
        return raw_offsets.limit(0)
    return raw_offsets.where(per_partition_condition(lowest))
