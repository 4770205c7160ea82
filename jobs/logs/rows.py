"""Logs stage, rows: the scan output (SCAN_COLUMNS) -> the rows of the stage's three tables.

raw_log_lines keeps the coordinator-looking entries only (everything the catalogue parses, today or after
a catalogue update, is among them; every entry with `run_logs(archive_all_entries=True)`), joined over
their physical lines; coordinator_events the entries that are events; log_file_reads one row per file read
(`listing.worth_a_row`), with every line read accounted for (lines, entries, events, unparsed, damaged).
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from schemas.logs import COORDINATOR_EVENTS, LOG_FILE_READS


def raw_log_line_rows(scanned: DataFrame, run_id: str, started_at: dt.datetime) -> DataFrame:
    """Scan output -> raw_log_lines rows (the archived entries)."""
    return scanned.where(F.col("row_kind") == "entry").select(
        "cluster",
        "file_id",
        "line_number",
        "line_count",
        "text",
        "log_source",
        "path",
        F.col("source_broker_id").alias("broker_id"),
        "source_zone",
        F.lit(run_id).alias("ingest_run_id"),
        F.lit(started_at).cast("timestamp").alias("ingested_at"),
    )


def coordinator_event_rows(scanned: DataFrame, run_id: str) -> DataFrame:
    """Scan output -> coordinator_events rows (the entries that are events)."""
    return (
        scanned.where((F.col("row_kind") == "entry") & (F.col("status") == "event"))
        .withColumn("ingest_run_id", F.lit(run_id))
        .select(*COORDINATOR_EVENTS.column_names)
    )


def log_file_read_rows(file_rows: DataFrame, run_id: str, started_at: dt.datetime) -> DataFrame:
    """File rows of the scan output (those `worth_a_row`) -> log_file_reads rows."""
    return (
        file_rows.where(F.col("row_kind") == "file")
        .withColumn("lines_read", F.col("last_line") - F.col("first_line") + 1)
        .drop("status")
        .withColumnRenamed("read_status", "status")
        .withColumn("ingest_run_id", F.lit(run_id))
        .withColumn("ingested_at", F.lit(started_at).cast("timestamp"))
        .select(*LOG_FILE_READS.column_names)
    )
