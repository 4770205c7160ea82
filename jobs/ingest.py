"""Ingest stage: copy `__consumer_offsets` records not archived yet into raw_offsets.

Two sources, one output:
- segments: copied `__consumer_offsets-N/*.log` directories; the files are listed by Spark and read by
  coordinator_core's segment reader inside executor tasks, many files in parallel;
- kafka: Spark's Kafka source in batch mode, per partition from the last archived offset + 1 to the
  last stable offset (see `kafka_offset_bounds` and `read_kafka` for transactions).

Re-ingesting the same data adds nothing: records above a partition's archive watermark are appended,
records at or below it only when their (cluster, partition, offset) is absent (a backfill from an older
copy). When the earliest offset a source still has is past the watermark + 1, the records in between
were removed (retention, compaction) before they were archived: a history_gaps row says so.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.window import Window

from jobs.common.boundary import READ_ERROR, READ_ERROR_POSITION, read_segment_files
from jobs.common.config import KafkaSource, SegmentSource
from jobs.common.delta_io import Tables
from jobs.common.progress import log, step
from schemas import HISTORY_GAPS, RAW_OFFSETS

SEGMENT_PATH_PATTERN = r"__consumer_offsets-(\d+)/[^/]+\.log$"
#: Kafka names a segment file by its base offset in 20 digits (LogFileUtils.filenamePrefixFromOffset).
SEGMENT_BASE_OFFSET_PATTERN = r"/(\d{20})\.log$"
POSITION = ["cluster", "partition"]


# -- extract ------------------------------------------------------------------------------------------


def list_segment_files(spark: SparkSession, sources: Sequence[SegmentSource]) -> DataFrame:
    """(cluster, partition, path) of every `__consumer_offsets-N/*.log` under the configured roots.

    Listed through Hadoop's FileSystem API (so object-store roots work). Spark's file sources cannot be
    used for this: they skip every path component starting with "_" as hidden, and Kafka's partition
    directories are called `__consumer_offsets-N`. Listing is metadata only (one row per segment file);
    the contents are read by the executors.
    """
    jvm = spark.sparkContext._jvm  # type: ignore[attr-defined]
    hadoop_conf = spark.sparkContext._jsc.hadoopConfiguration()  # type: ignore[attr-defined]
    pattern = re.compile(SEGMENT_PATH_PATTERN)
    rows: list[tuple[str, int, str]] = []
    for source in sources:
        root = jvm.org.apache.hadoop.fs.Path(source.path)
        fs = root.getFileSystem(hadoop_conf)
        if not fs.exists(root):
            raise FileNotFoundError(f"segment source {source.path} (cluster {source.cluster}) does not exist")
        files = fs.listFiles(root, True)
        while files.hasNext():
            path = files.next().getPath()
            # coordinator_core reads local (or mounted) files: a file: URI becomes a plain path.
            uri = path.toUri().getPath() if fs.getScheme() == "file" else path.toString()
            match = pattern.search(uri)
            if match:
                rows.append((_cluster_of(source, root.toUri().getPath(), uri), int(match.group(1)), uri))
    return spark.createDataFrame(sorted(rows), "cluster string, partition int, path string")


def next_segment_base_offsets(segment_files: DataFrame) -> DataFrame:
    """(cluster, partition, path) -> the same with `next_base_offset`: the base offset of the next segment
    file of the same partition directory, null for its last (or a file not named by its base offset).

    Every offset in a segment is below the next segment's base offset; the segment reader quarantines a
    batch that claims otherwise (its baseOffset is not covered by the CRC). Two copies of one partition
    (two roots, or two directories under one root) are separate sequences: the window is per directory.
    """
    base = F.regexp_extract("path", SEGMENT_BASE_OFFSET_PATTERN, 1)
    # lead() takes no frame of its own: it reads the next row of the ordered partition.
    next_in_directory = Window.partitionBy("cluster", "partition", "directory").orderBy("base_offset")
    return (
        segment_files.withColumn("directory", F.regexp_extract("path", r"^(.*)/[^/]*$", 1))
        .withColumn("base_offset", F.when(base != "", base.cast("long")))
        .withColumn(
            "next_base_offset",
            F.when(F.col("base_offset").isNotNull(), F.lead("base_offset").over(next_in_directory)),
        )
        .select("cluster", "partition", "path", "next_base_offset")
    )


def _cluster_of(source: SegmentSource, root_path: str, file_path: str) -> str:
    """The source's cluster name; with cluster = "*", the first directory below the root (one cluster per
    captured broker, e.g. samples/kafka-4.1.0/... -> "kafka-4.1.0")."""
    if source.cluster != "*":
        return source.cluster
    relative = file_path.split(root_path.rstrip("/") + "/", 1)[-1]
    first = relative.split("/", 1)[0]
    return first if not first.startswith("__consumer_offsets-") else "default"


def kafka_options(source: KafkaSource, environ: dict[str, str] | None = None) -> dict[str, str]:
    """Spark Kafka source options: bootstrap servers plus every `<prefix>NAME` environment variable as
    `kafka.name` (e.g. CGH_KAFKA_SASL_JAAS_CONFIG -> kafka.sasl.jaas.config). Never logged."""
    env = os.environ if environ is None else environ
    options = {"kafka.bootstrap.servers": source.bootstrap_servers}
    for name, value in env.items():
        if name.startswith(source.options_env_prefix) and len(name) > len(source.options_env_prefix):
            option = name[len(source.options_env_prefix) :].lower().replace("_", ".")
            options[f"kafka.{option}"] = value
    return options


def kafka_offset_bounds(source: KafkaSource, options: dict[str, str]) -> list[tuple[int, int, int]]:
    """(partition, earliest offset, last stable offset) of every partition of the topic, from the broker.

    The end is the last stable offset (LSO), not the high watermark: records past it belong to
    transactions not decided yet, and Spark's Kafka source cannot tell later whether they were committed
    or aborted. The next run archives them once decided; nothing is lost meanwhile, since the log cleaner
    does not clean past the LSO either. Driver-side metadata only (one row per partition), read with
    kafka-python using the same bootstrap servers and the security options that kafka-python understands.
    """
    from kafka import KafkaConsumer, TopicPartition

    client_options: dict[str, Any] = {"bootstrap_servers": source.bootstrap_servers.split(",")}
    passthrough = {
        "kafka.security.protocol": "security_protocol",
        "kafka.sasl.mechanism": "sasl_mechanism",
        "kafka.sasl.plain.username": "sasl_plain_username",
        "kafka.sasl.plain.password": "sasl_plain_password",
        "kafka.ssl.cafile": "ssl_cafile",
    }
    for spark_name, python_name in passthrough.items():
        if spark_name in options:
            client_options[python_name] = options[spark_name]
    # read_committed: end_offsets() answers the LSO.
    consumer = KafkaConsumer(enable_auto_commit=False, isolation_level="read_committed", **client_options)
    try:
        partitions = sorted(consumer.partitions_for_topic(source.topic) or ())
        tps = [TopicPartition(source.topic, p) for p in partitions]
        earliest = consumer.beginning_offsets(tps)
        stable = consumer.end_offsets(tps)
        return [(tp.partition, int(earliest[tp]), int(stable[tp])) for tp in tps]
    finally:
        consumer.close()


def read_kafka(
    spark: SparkSession,
    source: KafkaSource,
    options: dict[str, str],
    ranges: Sequence[tuple[int, int, int]],
) -> DataFrame:
    """Records of the given (partition, start, end) ranges as segment-reader-shaped rows.

    Spark's Kafka source exposes neither producer ids nor control records. Transaction outcomes are read
    another way: the ranges (which end at the last stable offset, so every transaction in them is
    decided) are read twice, read_uncommitted for the records and read_committed for the offsets a
    transactional reader sees. A record missing from the second read belongs to an aborted transaction:
    it is archived with is_transactional = true (and no producer id), which the decode stage resolves to
    "aborted". Committed transactional records cannot be told from plain ones this way: is_transactional
    stays null for them, as for every other record read from Kafka.
    """
    wanted = [(p, start, end) for p, start, end in ranges if end > start]
    empty_schema = _kafka_record_schema()
    if not wanted:
        return spark.createDataFrame([], empty_schema)

    def load(isolation_level: str) -> DataFrame:
        reader = spark.read.format("kafka")
        for key, value in options.items():
            reader = reader.option(key, value)
        return (
            reader.option("kafka.isolation.level", isolation_level)
            .option("assign", json.dumps({source.topic: [p for p, _, _ in wanted]}))
            .option("startingOffsets", json.dumps({source.topic: {str(p): s for p, s, _ in wanted}}))
            .option("endingOffsets", json.dumps({source.topic: {str(p): e for p, _, e in wanted}}))
            .option("failOnDataLoss", "false")
            .load()
        )

    visible = load("read_committed").select("partition", "offset", F.lit(True).alias("_visible"))
    kafka_rows = load("read_uncommitted").join(visible, on=["partition", "offset"], how="left")
    return kafka_rows.select(
        F.lit(source.cluster).alias("cluster"),
        F.col("partition").cast("int").alias("partition"),
        F.col("offset").cast("long").alias("offset"),
        F.col("timestamp").alias("timestamp"),
        F.when(F.col("timestampType") == 0, F.lit("CreateTime"))
        .when(F.col("timestampType") == 1, F.lit("LogAppendTime"))
        .alias("timestamp_type"),
        "key",
        "value",
        F.lit(None).cast("long").alias("producer_id"),
        F.lit(None).cast("short").alias("producer_epoch"),
        F.when(F.col("_visible").isNull(), F.lit(True)).cast("boolean").alias("is_transactional"),
        F.lit(False).alias("is_control"),
        F.lit(None).cast("string").alias("control_type"),
        F.lit(None).cast("long").alias("batch_base_offset"),
        F.lit(None).cast("long").alias("batch_last_offset"),
        F.lit(f"kafka:{source.bootstrap_servers}").alias("source"),
        F.lit(None).cast("string").alias(READ_ERROR),
        F.lit(None).cast("long").alias(READ_ERROR_POSITION),
    )


def _kafka_record_schema() -> T.StructType:
    from jobs.common.boundary import segment_records_schema

    return segment_records_schema()


# -- transforms ---------------------------------------------------------------------------------------


def archive_watermarks(raw_offsets: DataFrame) -> DataFrame:
    """(cluster, partition, last_archived_offset): the highest offset archived per partition."""
    return raw_offsets.groupBy(*POSITION).agg(F.max("offset").alias("last_archived_offset"))


def records_to_archive(records: DataFrame, watermarks: DataFrame, archived_keys: DataFrame) -> DataFrame:
    """Records whose (cluster, partition, offset) is not archived yet, each once.

    Above the watermark a record is new by construction; at or below it (an older copy being
    backfilled) it is checked against the archive's keys.
    """
    columns = records.columns
    with_watermark = records.join(watermarks, on=POSITION, how="left")
    above = with_watermark.where(
        F.col("last_archived_offset").isNull() | (F.col("offset") > F.col("last_archived_offset"))
    ).select(*columns)
    at_or_below = with_watermark.where(F.col("offset") <= F.col("last_archived_offset")).select(*columns)
    backfill = at_or_below.join(archived_keys.select(*POSITION, "offset"), on=[*POSITION, "offset"], how="left_anti")
    return above.unionByName(backfill).dropDuplicates([*POSITION, "offset"])


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
    return records.select(
        *[c for c in RAW_OFFSETS.column_names if c not in ("ingest_run_id", "ingested_at")],
        F.lit(run_id).alias("ingest_run_id"),
        F.lit(ingested_at).cast("timestamp").alias("ingested_at"),
    )


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


# -- the stage ----------------------------------------------------------------------------------------

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


def _archive(
    tables: Tables, records: DataFrame, first_available: DataFrame, run_id: str, started_at: dt.datetime
) -> IngestResult:
    # Pinned snapshot: the records to archive are computed against the archive as it was before this
    # append, whenever Spark evaluates them.
    raw = tables.read(RAW_OFFSETS, version=tables.version(RAW_OFFSETS))
    watermarks = archive_watermarks(raw).persist()
    result = IngestResult(source_mode="")
    gaps = history_gap_rows(first_available, watermarks, run_id)
    result.history_gaps = [r.asDict() for r in gaps.collect()]  # at most one row per partition
    if result.history_gaps:
        tables.insert_if_absent(HISTORY_GAPS, gaps.select(*HISTORY_GAPS.column_names))
    new_records = records_to_archive(records, watermarks, raw).persist(StorageLevel.MEMORY_AND_DISK)
    tables.append(RAW_OFFSETS, raw_offsets_rows(new_records, run_id, started_at))
    result.partitions = [r.asDict() for r in partition_read_summary(records, new_records).orderBy(*POSITION).collect()]
    result.records_read = sum(p["records_read"] for p in result.partitions)
    result.records_archived = sum(p["records_archived"] for p in result.partitions)
    new_records.unpersist()
    watermarks.unpersist()
    return result


def run_ingest_segments(
    tables: Tables, sources: Sequence[SegmentSource], run_id: str, started_at: dt.datetime, batch_size: int
) -> IngestResult:
    spark = tables.spark
    files = list_segment_files(spark, sources).transform(next_segment_base_offsets)
    file_count = files.count()
    log(f"  {file_count} segment files under {', '.join(s.path for s in sources)}")
    files = files.repartition(max(1, min(file_count, 4 * spark.sparkContext.defaultParallelism)))
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
            result = _archive(tables, records, first_available, run_id, started_at)
    finally:
        read.unpersist()
    result.source_mode = "segments"
    result.sources = [s.path for s in sources]
    result.segment_errors = segment_errors
    return result


def run_ingest_kafka(
    tables: Tables, sources: Sequence[KafkaSource], run_id: str, started_at: dt.datetime
) -> IngestResult:
    spark = tables.spark
    raw = tables.read(RAW_OFFSETS, version=tables.version(RAW_OFFSETS))
    total = IngestResult(source_mode="kafka")
    for source in sources:
        options = kafka_options(source)
        bounds = kafka_offset_bounds(source, options)
        archived_to = {
            r["partition"]: r["last_archived_offset"]
            for r in archive_watermarks(raw.where(F.col("cluster") == source.cluster)).collect()
        }  # one row per partition
        ranges = []
        for partition, earliest, end in bounds:
            start = max(earliest, archived_to.get(partition, -1) + 1)
            if source.max_records_per_partition > 0:
                end = min(end, start + source.max_records_per_partition)
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
            result = _archive(tables, records, first_available, run_id, started_at)
        records.unpersist()
        total.sources.append(f"kafka:{source.bootstrap_servers}")
        total.records_read += result.records_read
        total.records_archived += result.records_archived
        total.partitions += result.partitions
        total.history_gaps += result.history_gaps
    return total
