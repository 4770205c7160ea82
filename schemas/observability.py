"""Observability: what each run read, decoded and could not archive."""

from __future__ import annotations

from pyspark.sql import types as T

from schemas._spec import TableSpec, column

PARTITION_READ_STRUCT = T.StructType(
    [
        T.StructField("cluster", T.StringType()),
        T.StructField("partition", T.IntegerType()),
        T.StructField("records_read", T.LongType()),
        T.StructField("records_archived", T.LongType()),
        T.StructField("first_offset", T.LongType()),
        T.StructField("last_offset", T.LongType()),
    ]
)

SEGMENT_ERROR_STRUCT = T.StructType(
    [
        T.StructField("file", T.StringType()),
        T.StructField("position", T.LongType()),
        T.StructField("error", T.StringType()),
    ]
)

INGEST_RUNS = TableSpec(
    name="ingest_runs",
    comment=(
        "One row per successful nightly run, written last: its presence is the run's commit. The table "
        "versions it records are where a crashed later run is rolled back to."
    ),
    grain=("run_id",),
    schema=T.StructType(
        [
            column("run_id", T.StringType(), "Run id: UTC start time plus a random suffix; sorts by time.", False),
            column("started_at", T.TimestampType(), "Run start (UTC).", False),
            column("finished_at", T.TimestampType(), "Run end (UTC).", False),
            column("source_mode", T.StringType(), "kafka / segments / none.", False),
            column("sources", T.ArrayType(T.StringType()), "Sources read (servers or directories)."),
            column("records_read", T.LongType(), "Records read from the sources.", False),
            column("records_archived", T.LongType(), "Records newly appended to raw_offsets.", False),
            column("records_decoded", T.LongType(), "raw_offsets rows decoded by this run.", False),
            column("decode_errors", T.LongType(), "Rows this run sent to decode_errors.", False),
            column("history_gaps", T.LongType(), "history_gaps rows written by this run.", False),
            column("partitions", T.ArrayType(PARTITION_READ_STRUCT), "What was read, per partition."),
            column("segment_errors", T.ArrayType(SEGMENT_ERROR_STRUCT), "Corrupt segment batches skipped."),
            column("raw_version_decoded", T.LongType(), "raw_offsets version decoded through.", False),
            column(
                "table_versions",
                T.MapType(T.StringType(), T.LongType()),
                "Delta version of every table this run wrote, after its writes.",
                False,
            ),
            column("stage_seconds", T.MapType(T.StringType(), T.DoubleType()), "Wall time per stage."),
        ]
    ),
)

DECODE_COVERAGE = TableSpec(
    name="decode_coverage",
    comment="Per run: how many raw records of each type/version were decoded, quarantined or skipped.",
    grain=("run_id", "cluster", "record_type", "record_kind", "value_version", "status"),
    schema=T.StructType(
        [
            column("run_id", T.StringType(), "Run id.", False),
            column("cluster", T.StringType(), "Kafka cluster name.", False),
            column("record_type", T.ShortType(), "Key type (null when the key is shorter than 2 bytes)."),
            column("record_kind", T.StringType(), "Key schema name, unknown, or control."),
            column("value_version", T.ShortType(), "Value version (null for tombstones)."),
            column("status", T.StringType(),
                   "decoded / decoded_trailing_bytes (read as Kafka reads it, bytes after the complete struct "
                   "ignored) / tombstone / unknown_type / error / control.", False),
            column("records", T.LongType(), "Number of records.", False),
        ]
    ),
)

HISTORY_GAPS = TableSpec(
    name="history_gaps",
    comment=(
        "Where records were removed (retention, compaction) before they could be archived: the earliest "
        "offset still available was past the last archived offset + 1. A gap is recorded once, keyed by "
        "where the archive stopped, even if several runs see it."
    ),
    grain=("cluster", "partition", "last_archived_offset"),
    schema=T.StructType(
        [
            column("run_id", T.StringType(), "Run that detected the gap.", False),
            column("cluster", T.StringType(), "Kafka cluster name.", False),
            column("partition", T.IntegerType(), "__consumer_offsets partition.", False),
            column("last_archived_offset", T.LongType(), "Highest offset archived before this run.", False),
            column("earliest_available_offset", T.LongType(), "Earliest offset the source still had.", False),
            column("missing_offsets", T.LongType(), "Offsets in between that were never archived.", False),
            column("source", T.StringType(), "Source read."),
        ]
    ),
)

RUN_CLAIMS = TableSpec(
    name="run_claims",
    comment=(
        "Who held the warehouse when: one row per claim and release, appended as a Delta application "
        "transaction (txnAppId) that a second run's claim conflicts with, so two runs never write the "
        "warehouse at once (jobs/common/run_lock.py). The row with the highest seq is the current state."
    ),
    grain=("seq",),
    properties={"delta.appendOnly": "true"},
    schema=T.StructType(
        [
            column("seq", T.LongType(), "Claim sequence number, also the Delta txnVersion of its commit.", False),
            column("event", T.StringType(), "claimed / released.", False),
            column("run_id", T.StringType(), "Run that claimed or released.", False),
            column("job", T.StringType(), "Job of that run (jobs.nightly, jobs.logs).", False),
            column("at", T.TimestampType(), "When (UTC).", False),
            column("host", T.StringType(), "Host name of the run's driver.", False),
            column("pid", T.LongType(), "Process id of the run's driver.", False),
            column("pid_started", T.LongType(), "Start time of that process (Linux clock ticks since boot), "
                   "so a reused pid is not taken for the claimant; null where unknown."),
            column("took_over", T.StringType(), "The earlier claim this one took over, and why (a dead or "
                   "stale run's); null otherwise."),
        ]
    ),
)
