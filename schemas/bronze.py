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
            # Added after the first release: last, nullable (a warehouse of before gains it as a null column).
            column(
                "partition_leader_epoch",
                T.IntegerType(),
                "Leader epoch of the record's batch (partitionLeaderEpoch); -1 for a legacy (magic 0/1) batch; "
                "null when unknown (read from Kafka, archived before the column existed).",
            ),
        ]
    ),
)

REPLICA_CONFLICTS = TableSpec(
    name="replica_conflicts",
    comment=(
        "Quarantine of the archive: a copy of a __consumer_offsets record (from another broker's log "
        "directory, or a later run) that differs from the copy raw_offsets holds or archives at the same "
        "offset, or that Kafka's leader epoch rule says was truncated. Never archived; one row per distinct "
        "losing copy, recorded once whichever run sees it again."
    ),
    grain=("cluster", "partition", "offset", "copy_digest"),
    partition_columns=("cluster",),
    properties={"delta.appendOnly": "true"},
    schema=T.StructType(
        [
            column("cluster", T.StringType(), "Kafka cluster name from the configuration.", False),
            column("partition", T.IntegerType(), "__consumer_offsets partition.", False),
            column("offset", T.LongType(), "Offset both copies claim.", False),
            column(
                "reason",
                T.StringType(),
                "truncated_by_later_epoch: written under a leader epoch whose successor starts at or before "
                "this offset (Kafka truncated it); archived_copy_truncated: this copy is the newer epoch's, "
                "but raw_offsets already holds the truncated one (append-only); undecided: no later epoch "
                "decides (same or unknown epoch), the kept copy was chosen by the documented tie-break.",
                False,
            ),
            column("reason_detail", T.StringType(), "The epochs and evidence behind the reason, in words.", False),
            column("copy_digest", T.StringType(), "SHA-256 of the copy's record and batch fields (the grain).", False),
            column("source", T.StringType(), "Segment file the quarantined copy was read from (the first, if several).",
                   False),
            column("copies", T.IntegerType(), "Files of this run that hold this same copy.", False),
            column("partition_leader_epoch", T.IntegerType(), "Leader epoch of the quarantined copy's batch."),
            column("truncated_by_epoch", T.IntegerType(), "The later epoch whose start offset truncated the copy."),
            column("truncated_by_start_offset", T.LongType(), "Start offset of that epoch."),
            column("truncated_by_evidence", T.StringType(), "Where that start offset was read (checkpoint or batch)."),
            column("kept_source", T.StringType(), "Source of the copy raw_offsets holds at this offset (null: none)."),
            column("kept_partition_leader_epoch", T.IntegerType(), "Leader epoch of the kept copy."),
            column("kept_archived_before", T.BooleanType(),
                   "The kept copy was archived by an earlier run (true) or by this run (false); null: none kept."),
            column("timestamp", T.TimestampType(), "Quarantined copy: record timestamp (UTC)."),
            column("timestamp_type", T.StringType(), "Quarantined copy: CreateTime or LogAppendTime."),
            column("key", T.BinaryType(), "Quarantined copy: record key bytes."),
            column("value", T.BinaryType(), "Quarantined copy: record value bytes; null for a tombstone."),
            column("producer_id", T.LongType(), "Quarantined copy: producer id of the batch."),
            column("producer_epoch", T.ShortType(), "Quarantined copy: producer epoch of the batch."),
            column("is_transactional", T.BooleanType(), "Quarantined copy: transactional batch."),
            column("is_control", T.BooleanType(), "Quarantined copy: control record.", False),
            column("control_type", T.StringType(), "Quarantined copy: COMMIT / ABORT / ... for a control record."),
            column("batch_base_offset", T.LongType(), "Quarantined copy: base offset of its batch."),
            column("batch_last_offset", T.LongType(), "Quarantined copy: last offset of its batch."),
            column("run_id", T.StringType(), "Run that quarantined the copy.", False),
            column("detected_at", T.TimestampType(), "When that run started (UTC).", False),
        ]
    ),
)
