"""The ingest stage: read a run's records (segments or Kafka), quarantine the losing replica copies, archive
the new records, record the history gaps (`run_ingest_segments`, `run_ingest_kafka`). The only module of
the package that writes tables."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from jobs.common.boundary import READ_ERROR, READ_ERROR_POSITION, read_segment_files
from jobs.common.config import KafkaSource, SegmentSource
from jobs.common.delta_io import Tables
from jobs.common.progress import log, step
from jobs.common.tasks import python_tasks
from jobs.ingest.kafka_source import kafka_offset_bounds, kafka_options, read_kafka
from jobs.ingest.replicas import (
    ArchiveEpochs,
    archived_from,
    current_archive_epochs,
    epoch_ends,
    epoch_evidence,
    reconcile_copies,
    replica_conflict_rows,
)
from jobs.ingest.rows import POSITION, history_gap_rows, partition_read_summary, raw_offsets_rows
from jobs.ingest.segments import (
    list_partition_files,
    next_segment_base_offsets,
    read_leader_epoch_checkpoints,
    source_bytes,
)
from schemas import HISTORY_GAPS, RAW_OFFSETS, REPLICA_CONFLICTS

MAX_SEGMENT_ERRORS_KEPT = 1000


@dataclass
class IngestResult:
    source_mode: str
    sources: list[str] = field(default_factory=list)
    records_read: int = 0
    records_archived: int = 0
    partitions: list[dict[str, Any]] = field(default_factory=list)
    segment_errors: list[dict[str, Any]] = field(default_factory=list)
    history_gaps: list[dict[str, Any]] = field(default_factory=list)
    #: copies this run quarantined in replica_conflicts, per (cluster, partition, reason): `records` each
    replica_conflicts: list[dict[str, Any]] = field(default_factory=list)
    #: the archive's leader epochs after the run's appends, for the commit note (None: the stage read nothing)
    archive_epochs: ArchiveEpochs | None = None

    @property
    def replica_conflicts_total(self) -> int:
        return sum(int(c["records"]) for c in self.replica_conflicts)


def _archive(
    tables: Tables, records: DataFrame, first_available: DataFrame, run_id: str, started_at: dt.datetime,
    checkpoints: Sequence[tuple[str, int, int, int, str]] = (), carried: ArchiveEpochs | None = None,
) -> IngestResult:
    # Pinned snapshots: what to archive and quarantine is computed against the archive as it was before
    # this run's appends, whenever Spark evaluates it.
    raw = tables.read(RAW_OFFSETS, version=tables.version(RAW_OFFSETS))
    held_conflicts = tables.read(REPLICA_CONFLICTS, version=tables.version(REPLICA_CONFLICTS))
    # The archive's epochs and watermarks: the last run's summary plus what was archived since (not a
    # grouping of the whole archive, which only grows).
    before = current_archive_epochs(tables, carried)
    epochs = before.frame(tables.spark)
    watermarks = epochs.groupBy(*POSITION).agg(F.max("last_offset").alias("last_archived_offset"))
    result = IngestResult(source_mode="")
    gaps = history_gap_rows(first_available, watermarks, run_id)
    result.history_gaps = [r.asDict() for r in gaps.collect()]  # at most one row per partition
    if result.history_gaps:
        tables.insert_if_absent(HISTORY_GAPS, gaps.select(*HISTORY_GAPS.column_names))
    ends = epoch_ends(tables.spark, epoch_evidence(records, epochs, checkpoints))
    decided = reconcile_copies(records, archived_from(raw, records), ends).persist(StorageLevel.MEMORY_AND_DISK)
    # Quarantine first, then archive: a run that dies in between leaves the quarantine rows (recorded
    # once: keyed by the copy's digest) and the next run archives the winners, deciding the same way.
    conflicts = (replica_conflict_rows(decided, run_id, started_at)
                 .join(held_conflicts.select(*REPLICA_CONFLICTS.grain), on=list(REPLICA_CONFLICTS.grain),
                       how="left_anti")
                 .select(*REPLICA_CONFLICTS.column_names).persist())
    result.replica_conflicts = [
        r.asDict() for r in conflicts.groupBy(*POSITION, "reason").agg(F.count(F.lit(1)).alias("records"))
        .orderBy(*POSITION, "reason").collect()]
    if result.replica_conflicts:
        tables.append(REPLICA_CONFLICTS, conflicts)
    conflicts.unpersist()
    new_records = decided.where("_archive").select(*records.columns)
    tables.append(RAW_OFFSETS, raw_offsets_rows(new_records, run_id, started_at))
    result.partitions = [r.asDict() for r in partition_read_summary(records, new_records).orderBy(*POSITION).collect()]
    result.records_read = sum(p["records_read"] for p in result.partitions)
    result.records_archived = sum(p["records_archived"] for p in result.partitions)
    # The summary after the appends: the run's own new rows folded in (none: the same rows, a later version).
    result.archive_epochs = (current_archive_epochs(tables, before) if result.records_archived
                             else ArchiveEpochs(tables.version(RAW_OFFSETS), before.rows))
    decided.unpersist()
    return result


def run_ingest_segments(
    tables: Tables, sources: Sequence[SegmentSource], run_id: str, started_at: dt.datetime, batch_size: int,
    carried: ArchiveEpochs | None = None,
) -> IngestResult:
    """Read the segment files, archive their new records (`carried`: the last committed run's summary of the
    archive's epochs, None to group the archive)."""
    spark = tables.spark
    segments, checkpoint_files = list_partition_files(spark, sources)
    files = spark.createDataFrame(segments, "cluster string, partition int, path string").transform(
        next_segment_base_offsets)
    file_count = len(segments)
    checkpoints, checkpoint_errors = read_leader_epoch_checkpoints(spark, checkpoint_files)
    log(f"  {file_count} segment files, {len(checkpoint_files)} leader-epoch-checkpoint files under "
        f"{', '.join(s.path for s in sources)}")
    # A task reads a share of the segment files (see jobs.common.tasks: a Python task's own cost).
    total = sum(source_bytes(spark, s.path) for s in sources)
    files = files.repartition(max(1, python_tasks(total, file_count, spark.sparkContext.defaultParallelism)))
    read = read_segment_files(files, batch_size).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        problems = read.where(F.col(READ_ERROR).isNotNull())
        segment_errors = [
            {"file": r["source"], "position": r[READ_ERROR_POSITION], "error": r[READ_ERROR]}
            for r in problems.limit(MAX_SEGMENT_ERRORS_KEPT).collect()
        ]
        records = read.where(F.col(READ_ERROR).isNull()).drop(READ_ERROR, READ_ERROR_POSITION)
        first_available = records.groupBy(*POSITION).agg(
            F.min("offset").alias("earliest_available_offset"), F.min("source").alias("source")
        )
        with step("read segments on the executors, archive new records"):
            result = _archive(tables, records, first_available, run_id, started_at, checkpoints, carried)
    finally:
        read.unpersist()
    result.source_mode = "segments"
    result.sources = [s.path for s in sources]
    result.segment_errors = checkpoint_errors + segment_errors
    return result


def run_ingest_kafka(
    tables: Tables, sources: Sequence[KafkaSource], run_id: str, started_at: dt.datetime,
    carried: ArchiveEpochs | None = None,
) -> IngestResult:
    """Read each cluster from Kafka past what the archive holds, archive the new records (`carried`: as for
    `run_ingest_segments`)."""
    spark = tables.spark
    total = IngestResult(source_mode="kafka")
    for source in sources:
        options = kafka_options(source)
        bounds = kafka_offset_bounds(source, options)
        carried = current_archive_epochs(tables, carried)
        archived_to = carried.last_offsets(source.cluster)
        ranges = []
        for partition, earliest, stable in bounds:
            start = max(earliest, archived_to.get(partition, -1) + 1)
            end = stable if source.max_records_per_partition <= 0 else min(
                stable, start + source.max_records_per_partition)
            ranges.append((partition, start, end))
        records = (
            read_kafka(spark, source, options, ranges)
            .drop(READ_ERROR, READ_ERROR_POSITION)
            .persist(StorageLevel.MEMORY_AND_DISK)
        )
        first_available = spark.createDataFrame(
            [(source.cluster, p, e, f"kafka:{source.bootstrap_servers}") for p, e, _ in bounds],
            "cluster string, partition int, earliest_available_offset long, source string",
        )
        with step(f"read {source.cluster} from Kafka, archive new records"):
            result = _archive(tables, records, first_available, run_id, started_at, carried=carried)
        records.unpersist()
        carried = total.archive_epochs = result.archive_epochs
        total.sources.append(f"kafka:{source.bootstrap_servers}")
        total.records_read += result.records_read
        total.records_archived += result.records_archived
        total.partitions += result.partitions
        total.history_gaps += result.history_gaps
        total.replica_conflicts += result.replica_conflicts
    return total
