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
from jobs.decode import per_partition_condition
from schemas import HISTORY_GAPS, RAW_OFFSETS, REPLICA_CONFLICTS

SEGMENT_PATH_PATTERN = r"__consumer_offsets-(\d+)/[^/]+\.log$"
CHECKPOINT_PATH_PATTERN = r"__consumer_offsets-(\d+)/leader-epoch-checkpoint$"
#: Kafka names a segment file by its base offset in 20 digits (LogFileUtils.filenamePrefixFromOffset).
SEGMENT_BASE_OFFSET_PATTERN = r"/(\d{20})\.log$"
POSITION = ["cluster", "partition"]


# -- extract ------------------------------------------------------------------------------------------


def list_partition_files(
    spark: SparkSession, sources: Sequence[SegmentSource]
) -> tuple[list[tuple[str, int, str]], list[tuple[str, int, str]]]:
    """(cluster, partition, path) of every `__consumer_offsets-N/*.log` segment file and of every
    `__consumer_offsets-N/leader-epoch-checkpoint` file under the configured roots, in one listing.

    Listed through Hadoop's FileSystem API (so object-store roots work). Spark's file sources cannot be
    used for this: they skip every path component starting with "_" as hidden, and Kafka's partition
    directories are called `__consumer_offsets-N`. Listing is metadata only (one row per file); segment
    contents are read by the executors. Copies of one partition from several brokers (one directory per
    broker below the cluster's: `<cluster>/<broker-dir>/__consumer_offsets-N/`) are all listed.
    """
    jvm = spark.sparkContext._jvm  # type: ignore[attr-defined]
    hadoop_conf = spark.sparkContext._jsc.hadoopConfiguration()  # type: ignore[attr-defined]
    segment_pattern = re.compile(SEGMENT_PATH_PATTERN)
    checkpoint_pattern = re.compile(CHECKPOINT_PATH_PATTERN)
    segments: list[tuple[str, int, str]] = []
    checkpoints: list[tuple[str, int, str]] = []
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
            for pattern, found in ((segment_pattern, segments), (checkpoint_pattern, checkpoints)):
                match = pattern.search(uri)
                if match:
                    found.append((_cluster_of(source, root.toUri().getPath(), uri), int(match.group(1)), uri))
    return sorted(segments), sorted(checkpoints)


def list_segment_files(spark: SparkSession, sources: Sequence[SegmentSource]) -> DataFrame:
    """(cluster, partition, path) of every `__consumer_offsets-N/*.log` under the configured roots
    (`list_partition_files`)."""
    segments, _ = list_partition_files(spark, sources)
    return spark.createDataFrame(segments, "cluster string, partition int, path string")


def read_leader_epoch_checkpoints(
    spark: SparkSession, checkpoints: Sequence[tuple[str, int, str]]
) -> tuple[list[tuple[str, int, int, int, str]], list[dict[str, Any]]]:
    """The entries of `leader-epoch-checkpoint` files, as (cluster, partition, epoch, start offset, path),
    and the files Kafka itself would refuse (as segment errors: their evidence is not used).

    Read on the driver through Hadoop's FileSystem API: one small text file per partition copy.
    """
    from coordinator_core.leader_epochs import CheckpointError, read_leader_epoch_checkpoint

    jvm = spark.sparkContext._jvm  # type: ignore[attr-defined]
    hadoop_conf = spark.sparkContext._jsc.hadoopConfiguration()  # type: ignore[attr-defined]
    entries: list[tuple[str, int, int, int, str]] = []
    errors: list[dict[str, Any]] = []
    for cluster, partition, path in checkpoints:
        hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
        stream = hadoop_path.getFileSystem(hadoop_conf).open(hadoop_path)
        try:
            text = str(jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
        finally:
            stream.close()
        try:
            for epoch, start in read_leader_epoch_checkpoint(text, path):
                entries.append((cluster, partition, epoch, start, path))
        except CheckpointError as e:
            errors.append({"file": path, "position": 0, "error": f"leader_epoch_checkpoint: {e}"})
    return entries, errors


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
        F.lit(None).cast("int").alias("partition_leader_epoch"),
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
    #: copies this run quarantined in replica_conflicts, per (cluster, partition, reason): `records` each
    replica_conflicts: list[dict[str, Any]] = field(default_factory=list)

    @property
    def replica_conflicts_total(self) -> int:
        return sum(int(c["records"]) for c in self.replica_conflicts)


def archive_epochs(raw_offsets: DataFrame) -> DataFrame:
    """(cluster, partition, epoch, start, last_offset) of the archive: per batch leader epoch (null for rows
    without one), its first batch's base offset and its last offset. One scan gives the watermarks and the
    archive's leader epoch evidence."""
    return raw_offsets.groupBy(*POSITION, F.col("partition_leader_epoch").alias("epoch")).agg(
        F.min(F.coalesce("batch_base_offset", "offset")).alias("start"), F.max("offset").alias("last_offset"))


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


def _archive(
    tables: Tables, records: DataFrame, first_available: DataFrame, run_id: str, started_at: dt.datetime,
    checkpoints: Sequence[tuple[str, int, int, int, str]] = (),
) -> IngestResult:
    # Pinned snapshots: what to archive and quarantine is computed against the archive as it was before
    # this run's appends, whenever Spark evaluates it.
    raw = tables.read(RAW_OFFSETS, version=tables.version(RAW_OFFSETS))
    held_conflicts = tables.read(REPLICA_CONFLICTS, version=tables.version(REPLICA_CONFLICTS))
    epochs = archive_epochs(raw).persist()
    watermarks = epochs.groupBy(*POSITION).agg(F.max("last_offset").alias("last_archived_offset")).persist()
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
    decided.unpersist()
    watermarks.unpersist()
    epochs.unpersist()
    return result


def run_ingest_segments(
    tables: Tables, sources: Sequence[SegmentSource], run_id: str, started_at: dt.datetime, batch_size: int
) -> IngestResult:
    spark = tables.spark
    segments, checkpoint_files = list_partition_files(spark, sources)
    files = spark.createDataFrame(segments, "cluster string, partition int, path string").transform(
        next_segment_base_offsets)
    file_count = len(segments)
    checkpoints, checkpoint_errors = read_leader_epoch_checkpoints(spark, checkpoint_files)
    log(f"  {file_count} segment files, {len(checkpoint_files)} leader-epoch-checkpoint files under "
        f"{', '.join(s.path for s in sources)}")
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
            result = _archive(tables, records, first_available, run_id, started_at, checkpoints)
    finally:
        read.unpersist()
    result.source_mode = "segments"
    result.sources = [s.path for s in sources]
    result.segment_errors = checkpoint_errors + segment_errors
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
        total.replica_conflicts += result.replica_conflicts
    return total
