"""Segment sanity beyond the CRC (#20), end to end: the ingest gives each segment file its partition's next
segment base offset, and a batch whose baseOffset was altered (the CRC does not cover it) is quarantined
like a batch with a bad CRC, never archived at the wrong offsets."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest
from chispa import assert_df_equality
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import coordinator_core as cc
from jobs.common.config import PROJECT_ROOT, Config, SegmentSource, SourcesConfig, TablesConfig
from jobs.common.delta_io import Tables
from jobs.ingest.segments import next_segment_base_offsets
from jobs.nightly import run_nightly
from jobs.run_outputs import format_summary
from jobs.stages import STAGES
from schemas import INGEST_RUNS, RAW_OFFSETS

pytestmark = pytest.mark.spark

SAMPLE_PARTITION = PROJECT_ROOT / "samples" / "kafka-3.9.1" / "__consumer_offsets-0"
#: (segment file, byte position of the batch altered, its true offsets): in the first segment, a batch the
#: next segment's base offset (71) gives away; in the partition's last segment, a batch the batch after it
#: gives away.
ALTERED = (("00000000000000000000.log", 434, range(1, 13)), ("00000000000000000071.log", 365, range(75, 76)))
ALTERED_BASE_OFFSET = 1_000_000


def test_next_segment_base_offset_is_the_next_file_of_the_same_directory(spark: SparkSession) -> None:
    files = spark.createDataFrame(
        [
            ("c", 0, "/a/__consumer_offsets-0/00000000000000000000.log"),
            ("c", 0, "/a/__consumer_offsets-0/00000000000000000071.log"),
            ("c", 0, "/a/__consumer_offsets-0/00000000000000000130.log"),
            ("c", 0, "/b/__consumer_offsets-0/00000000000000000000.log"),  # another copy of the partition
            ("c", 1, "/a/__consumer_offsets-1/00000000000000000040.log"),
            ("d", 0, "/d/__consumer_offsets-0/00000000000000000000.log"),
        ],
        "cluster string, partition int, path string",
    )
    expected = spark.createDataFrame(
        [
            ("c", 0, "/a/__consumer_offsets-0/00000000000000000000.log", 71),
            ("c", 0, "/a/__consumer_offsets-0/00000000000000000071.log", 130),
            ("c", 0, "/a/__consumer_offsets-0/00000000000000000130.log", None),
            ("c", 0, "/b/__consumer_offsets-0/00000000000000000000.log", None),
            ("c", 1, "/a/__consumer_offsets-1/00000000000000000040.log", None),
            ("d", 0, "/d/__consumer_offsets-0/00000000000000000000.log", None),
        ],
        "cluster string, partition int, path string, next_base_offset long",
    )
    assert_df_equality(next_segment_base_offsets(files), expected, ignore_row_order=True, ignore_nullable=True)


@pytest.fixture(scope="module")
def altered_run(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> tuple[Tables, Path, object]:
    """The ingest stage run on a copy of one sample partition with two batches' baseOffset altered."""
    root = tmp_path_factory.mktemp("segment_sanity")
    copy = root / "segments" / "kafka-3.9.1" / SAMPLE_PARTITION.name
    shutil.copytree(SAMPLE_PARTITION, copy)
    for name, position, true_offsets in ALTERED:
        data = bytearray((copy / name).read_bytes())
        assert struct.unpack_from(">q", data, position)[0] == true_offsets[0]
        struct.pack_into(">q", data, position, ALTERED_BASE_OFFSET)  # nothing recomputed: the CRC stays valid
        (copy / name).write_bytes(bytes(data))
    config = Config(
        sources=SourcesConfig(mode="segments", segments=(SegmentSource("*", str(root / "segments")),)),
        tables=TablesConfig(database="cgh_segment_sanity", location=str(root / "tables")),
    )
    ctx = run_nightly(spark, config, stages=tuple(s for s in STAGES if s.name == "ingest"))
    return Tables(spark, "cgh_segment_sanity", config.tables.location), copy, ctx


def test_altered_batches_are_not_archived(spark: SparkSession, altered_run: tuple[Tables, Path, object]) -> None:
    tables, _, _ = altered_run
    quarantined = {o for _, _, offsets in ALTERED for o in offsets}
    # What the unaltered sample holds, read file by file, less the two altered batches' true offsets.
    expected = [
        ("kafka-3.9.1", 0, e.offset, e.key, e.value)
        for segment in sorted(SAMPLE_PARTITION.glob("*.log"))
        for e in cc.read_segment(segment)
        if e.offset not in quarantined
    ]
    archived = tables.read(RAW_OFFSETS).select("cluster", "partition", "offset", "key", "value")
    assert archived.where(F.col("offset") >= ALTERED_BASE_OFFSET).count() == 0
    assert_df_equality(
        archived,
        spark.createDataFrame(expected, archived.schema),
        ignore_row_order=True,
        ignore_nullable=True,
    )


def test_altered_batches_are_reported_with_file_and_position(altered_run: tuple[Tables, Path, object]) -> None:
    tables, copy, ctx = altered_run
    expected = [(str(copy / "00000000000000000000.log"), 434, "offset_out_of_range"),
                (str(copy / "00000000000000000071.log"), 365, "offsets_not_increasing")]
    reported = sorted((e["file"], e["position"], e["error"].split(":")[0]) for e in ctx.ingest.segment_errors)  # type: ignore[attr-defined]
    assert reported == expected
    assert all(str(ALTERED_BASE_OFFSET) in e["error"] for e in ctx.ingest.segment_errors)  # type: ignore[attr-defined]
    [run] = tables.read(INGEST_RUNS).collect()
    assert sorted((e["file"], e["position"], e["error"].split(":")[0]) for e in run["segment_errors"]) == expected
    summary = format_summary(ctx)  # type: ignore[arg-type]
    for file, position, kind in expected:
        assert f"corrupt segment data skipped: {file} @ byte {position}: {kind}: " in summary
