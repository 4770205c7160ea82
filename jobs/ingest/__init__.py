"""Ingest stage: copy `__consumer_offsets` records not archived yet into raw_offsets.

Two sources, one output:
- segments: copied `__consumer_offsets-N/*.log` directories; the files are listed by Spark and read by
  coordinator_core's segment reader inside executor tasks, many files in parallel;
- kafka: Spark's Kafka source in batch mode, per partition from the last archived offset + 1 to the
  last stable offset (see `kafka_offset_bounds` and `read_kafka` for transactions).

Re-ingesting the same data adds nothing: a record is archived only when its (cluster, partition, offset)
is absent from the archive (a backfill from an older copy included). Copies of one partition from several
brokers are reconciled (`reconcile_copies`): identical copies are archived once; where copies differ at
one offset, Kafka's leader epoch rule decides, and every losing copy goes to replica_conflicts with its
reason, never silently dropped. When the earliest offset a source still has is past the archive's
watermark + 1, the records in between were removed (retention, compaction) before they were archived: a
history_gaps row says so.

The flow, one module each:

- `segments`: list the segment and leader-epoch-checkpoint files under the configured roots;
- `kafka_source`: the offset bounds of each partition and the records read through Spark's Kafka source;
- `replicas`: copies of one offset from several brokers and the archive, reconciled (Kafka's leader epoch
  rule), the losers as replica_conflicts rows; the archive's watermarks and epochs;
- `rows`: raw_offsets and history_gaps rows, the per-partition read summary;
- `stage`: `run_ingest_segments` and `run_ingest_kafka`, the only code that writes tables.
"""
