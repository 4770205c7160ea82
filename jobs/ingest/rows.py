"""Rows: read records -> raw_offsets rows, history_gaps rows (records removed before they were archived),
and the per-partition read summary of the run result."""

from __future__ import annotations

import datetime as dt

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from schemas import RAW_OFFSETS

POSITION = ["cluster", "partition"]


def history_gap_rows(first_available: DataFrame, watermarks: DataFrame, run_id: str) -> DataFrame:
    """Partitions whose earliest available offset is past last_archived_offset + 1.

    `first_available`: (cluster, partition, earliest_available_offset, source).
    """
    joined = first_available.join(watermarks, on=POSITION, how="inner")
    gaps = joined.where(F.col("earliest_available_offset") > F.col("last_archived_offset") + 1)
    return gaps.select(
        F.lit(run_id).alias("run_id"),
        "cluster",
        "partition",
        "last_archived_offset",
        "earliest_available_offset",
        (F.col("earliest_available_offset") - F.col("last_archived_offset") - 1).alias("missing_offsets"),
        "source",
    )


def raw_offsets_rows(records: DataFrame, run_id: str, ingested_at: dt.datetime) -> DataFrame:
    """Read records -> raw_offsets rows stamped with the run."""
    stamps = {"ingest_run_id": F.lit(run_id), "ingested_at": F.lit(ingested_at).cast("timestamp")}
    return records.select(*[stamps[c].alias(c) if c in stamps else F.col(c) for c in RAW_OFFSETS.column_names])


def partition_read_summary(records: DataFrame, archived: DataFrame) -> DataFrame:
    """Per partition: records read, records newly archived, first and last offset read."""
    read = records.groupBy(*POSITION).agg(
        F.count(F.lit(1)).alias("records_read"),
        F.min("offset").alias("first_offset"),
        F.max("offset").alias("last_offset"),
    )
    new = archived.groupBy(*POSITION).agg(F.count(F.lit(1)).alias("records_archived"))
    return read.join(new, on=POSITION, how="left").select(
        *POSITION,
        "records_read",
        F.coalesce(F.col("records_archived"), F.lit(0)).cast("long").alias("records_archived"),
        "first_offset",
        "last_offset",
    )
