"""Segment listing: the `__consumer_offsets-N` segment files and `leader-epoch-checkpoint` files under the
configured roots, and each segment's next base offset (which bounds its offsets).

Metadata only, on the driver (one row per file); the executors read the segments' contents
(`jobs.common.boundary.read_segment_files`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from jobs.common.config import SegmentSource

SEGMENT_PATH_PATTERN = r"__consumer_offsets-(\d+)/[^/]+\.log$"
CHECKPOINT_PATH_PATTERN = r"__consumer_offsets-(\d+)/leader-epoch-checkpoint$"
#: Kafka names a segment file by its base offset in 20 digits (LogFileUtils.filenamePrefixFromOffset).
SEGMENT_BASE_OFFSET_PATTERN = r"/(\d{20})\.log$"


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
        local = fs.getScheme() == "file"
        for path in _files_below(fs, root):
            # coordinator_core reads local (or mounted) files: a file: URI becomes a plain path.
            uri = path.toUri().getPath() if local else path.toString()
            for pattern, found in ((segment_pattern, segments), (checkpoint_pattern, checkpoints)):
                match = pattern.search(uri)
                if match:
                    found.append((_cluster_of(source, root.toUri().getPath(), uri), int(match.group(1)), uri))
    return sorted(segments), sorted(checkpoints)


def _files_below(fs: Any, root: Any) -> Iterator[Any]:
    """The Hadoop paths of the files below `root`, directory by directory with `listStatus`.

    Not `FileSystem.listFiles(root, recursive)`: its LocatedFileStatus reads each file's permission, owner
    and group, which Hadoop's local file system without its native library (a pip-installed Spark has
    none) gets by running `ls -ld` in a new process per file: 5 ms each, 0.55 s of the samples' 121 files,
    50 s of a broker's log directory of 10,000. A plain FileStatus reads them only if asked.
    """
    directories = [root]
    while directories:
        for status in fs.listStatus(directories.pop()):
            if status.isDirectory():
                directories.append(status.getPath())
            else:
                yield status.getPath()


def source_bytes(spark: SparkSession, path: str) -> int:
    """Bytes of the files under a segment source (0 when it is not there: the ingest says so), from the file
    system's summary of the directory tree rather than a listing of our own."""
    jvm = spark.sparkContext._jvm  # type: ignore[attr-defined]
    root = jvm.org.apache.hadoop.fs.Path(path)
    fs = root.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())  # type: ignore[attr-defined]
    return int(fs.getContentSummary(root).getLength()) if fs.exists(root) else 0


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
