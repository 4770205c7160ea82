"""Bronze: the raw archive of `__consumer_offsets`, exactly as read, append-only."""

from __future__ import annotations

from pyspark.sql import types as T

from schemas._spec import TableSpec, column

RAW_OFFSETS = TableSpec(
    name="raw_offsets",
    comment=(
        "One row per record read from __consumer_offsets (Kafka source or copied segment files), kept "
        "byte for byte. Append-only: the archive that log compaction cannot erase."
    ),
    grain=("cluster", "partition", "offset"),
    partition_columns=("cluster",),
    # Change data feed lets the decode stage read exactly the rows appended since it last ran (for an
    # append-only table it costs nothing: inserts are read from the data files themselves).
    # File statistics only on the columns readers filter by: the default (the first 32 columns) makes every
    # write compute min/max/null counts over the record bytes too, which no query can use.
    properties={"delta.enableChangeDataFeed": "true", "delta.appendOnly": "true",
                "delta.dataSkippingStatsColumns": "partition,offset,timestamp,ingest_run_id"},
    schema=T.StructType(
        [
            column("cluster", T.StringType(), "Kafka cluster name from the configuration.", False),
            column("partition", T.IntegerType(), "__consumer_offsets partition of the record.", False),
            column("offset", T.LongType(), "Offset of the record in its partition.", False),
            column("timestamp", T.TimestampType(), "Record timestamp (UTC)."),
            column("timestamp_type", T.StringType(), "CreateTime or LogAppendTime."),
            column("key", T.BinaryType(), "Record key bytes (null for control records read from Kafka)."),
            column("value", T.BinaryType(), "Record value bytes; null for a tombstone."),
            column("producer_id", T.LongType(), "Producer id of the batch; -1 when none; null when unknown."),
            column("producer_epoch", T.ShortType(), "Producer epoch of the batch; null when unknown."),
            column(
                "is_transactional",
                T.BooleanType(),
                "Batch is transactional (TxnOffsetCommit). Read from Kafka: true only for records of aborted "
                "transactions (absent from a read_committed read), null for every other record.",
            ),
            column("is_control", T.BooleanType(), "Control record (transaction marker, ...).", False),
            column("control_type", T.StringType(), "COMMIT / ABORT / ... for a control record, else null."),
            column("batch_base_offset", T.LongType(), "Base offset of the record's batch; null when unknown."),
            column("batch_last_offset", T.LongType(), "Last offset of the record's batch; null when unknown."),
            column("source", T.StringType(), "Where the record was read: kafka:<servers>, a segment file, ..."),
            column("ingest_run_id", T.StringType(), "Run that archived the record.", False),
            column("ingested_at", T.TimestampType(), "When the run that archived the record started (UTC).", False),
        ]
    ),
)
