"""Share and streams records through the nightly job up to its history stage leave every consumer group's
history as it was.

The 4.3.1 sample (a real broker's capture, with the KIP-848 group `cgh-consumer-protocol` in
`__consumer_offsets-34`) as captured is the shared sample warehouse's cluster `kafka-4.3.1` (one run of the
embedded default, tests/spark/sample_warehouse.py). Here it runs once more, into a warehouse of its own, with
a segment appended to partition 34 holding share-group and streams-group records (every decoded kind,
tombstones included) of that same group id and of a share-only group, with epochs that would be new
generations if they were read as KIP-848 records. group_generations must be the captured sample's;
consumer_group_records holds the new rows, decoded, with their family.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import coordinator_core as cc
from coordinator_core import messages as m
from coordinator_core.records import RECORD_TYPES, Record
from jobs.common.config import Config, ReportConfig, SegmentSource, SourcesConfig, TablesConfig
from jobs.common.delta_io import Tables
from jobs.nightly import run_nightly
from jobs.stages import STAGES
from schemas import CONSUMER_GROUP_RECORDS, DECODE_ERRORS
from schemas.gold import GROUP_GENERATIONS
from tests.spark.sample_warehouse import SampleWarehouse
from tests.spark.segment_files import Batch, write_segment

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "kafka-4.3.1"
CLUSTER = "kafka-4.3.1"  # the shared sample warehouse's name for it (conf/local.toml)
KIP848_GROUP = "cgh-consumer-protocol"
PARTITION = 34
SHARE_ONLY = "cgh-share-only"


def _records(group: str) -> list[tuple[bytes, bytes | None]]:
    tp = (m.TopicIdPartitions("AQEBAQEBAQEBAQEBAQEBAQ", (0, 1)),)
    member_key = m.GroupMemberKey(group, f"{group}-member")
    values: list[tuple[int, Any, Any]] = [
        (10, member_key, m.ShareGroupMemberMetadataValue(None, "share-client", "/127.0.0.1", ("orders",))),
        (11, m.GroupIdKey(group), m.ShareGroupMetadataValue(77, 1)),
        (13, member_key, m.ShareGroupTargetAssignmentMemberValue(tp)),
        (12, m.GroupIdKey(group), m.ShareGroupTargetAssignmentMetadataValue(77, 0)),
        (14, member_key, m.ShareGroupCurrentMemberAssignmentValue(77, 76, 0, tp)),
        (15, m.GroupIdKey(group), m.ShareGroupStatePartitionMetadataValue(
            (), (m.TopicPartitionsInfo("AQEBAQEBAQEBAQEBAQEBAQ", "orders", (0, 1)),), ())),
        (23, m.GroupIdKey(group), m.StreamsGroupTopologyValue(1, (m.Subtopology(
            "0", ("words",), (), (), (), (), ()),))),
        (19, member_key, m.StreamsGroupMemberMetadataValue(
            None, None, "streams-client", "/127.0.0.1", 30000, 1, "p", m.Endpoint("localhost", 8080), ())),
        (17, m.GroupIdKey(group), m.StreamsGroupMetadataValue(78, 1, 1, (), -1, -1)),
        (21, member_key, m.StreamsGroupTargetAssignmentMemberValue((m.TaskIds("0", (0, 1)),), (), ())),
        (20, m.GroupIdKey(group), m.StreamsGroupTargetAssignmentMetadataValue(78, 0)),
        (22, member_key, m.StreamsGroupCurrentMemberAssignmentValue(
            78, 77, 0, (m.AssignedTaskIds("0", (0, 1), (78, 78)),), (), (), (), (), ())),
        (22, member_key, None),
        (14, member_key, None),
    ]
    return [cc.encode_record(Record(rt, key, None if value is None else 0, value)) for rt, key, value in values]


def _config(root: Path, segments: Path, database: str, shared: Config) -> Config:
    """The shared warehouse's configuration for the cluster, its segments read from `segments` (a copy that
    can be appended to); its log files are the samples' own, so the evidence names the same paths."""
    return dataclasses.replace(
        shared,
        sources=SourcesConfig(mode="segments", segments=(SegmentSource(CLUSTER, str(segments)),),
                              logs=tuple(s for s in shared.sources.logs if s.cluster == CLUSTER)),
        tables=TablesConfig(database=database, location=str(root / database)),
        report=ReportConfig(path=str(root / f"{database}.html"), groups_shown=4),
    )


def _last_record(sample: Path) -> tuple[int, int]:
    """(offset, timestamp) of partition 34's last record."""
    entries = [e for s in sorted((sample / f"__consumer_offsets-{PARTITION}").glob("*.log"))
               for e in cc.read_segment(str(s))]
    return entries[-1].offset, entries[-1].timestamp


@pytest.fixture(scope="module")
def warehouses(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory, sample_warehouse: SampleWarehouse
               ) -> tuple[DataFrame, Tables, int]:
    """(the captured sample's group_generations, the warehouse of the sample with the appended segment, the
    first appended offset)."""
    root = tmp_path_factory.mktemp("share_streams_history")
    stages = tuple(s for s in STAGES if s.name in ("ingest", "decode", "logs", "history"))
    sample = root / "sample"
    shutil.copytree(SAMPLE, sample)
    last_offset, last_ts = _last_record(sample)
    records = _records(KIP848_GROUP) + _records(SHARE_ONLY)
    write_segment(sample, PARTITION, [Batch(last_offset + 1, records, timestamp_ms=last_ts + 1000)])
    shared = sample_warehouse.config
    # its segments: one cluster per directory under samples/, named after it
    assert [(s.cluster, Path(s.path)) for s in shared.sources.segments] == [("*", SAMPLE.parent)]
    assert SAMPLE.name == CLUSTER
    mixed = _config(root, sample, "cgh_share_streams_mixed", shared)
    run_nightly(spark, mixed, stages=stages)
    captured = (sample_warehouse.tables(spark).read(GROUP_GENERATIONS).where(F.col("cluster") == CLUSTER)
                .select(*GROUP_GENERATIONS.column_names))
    return captured, Tables(spark, mixed.tables.database, mixed.tables.location), last_offset + 1


def test_consumer_group_histories_are_unchanged(warehouses: tuple[DataFrame, Tables, int]) -> None:
    captured, mixed, _ = warehouses
    assert captured.where(F.col("group_id") == KIP848_GROUP).count() > 0
    assert_df_equality(mixed.read(GROUP_GENERATIONS), captured, ignore_row_order=True, ignore_nullable=True)
    assert mixed.read(GROUP_GENERATIONS).where(F.col("group_id") == SHARE_ONLY).count() == 0


def test_the_new_records_are_consumer_group_records_rows(warehouses: tuple[DataFrame, Tables, int]) -> None:
    _, mixed, first = warehouses
    assert mixed.read(DECODE_ERRORS).where(F.col("offset") >= first).count() == 0
    rows = (mixed.read(CONSUMER_GROUP_RECORDS)
            .where((F.col("partition") == PARTITION) & (F.col("offset") >= first)).orderBy("offset").collect())
    want = [(group, cc.decode_record(k, v)) for group in (KIP848_GROUP, SHARE_ONLY) for k, v in _records(group)]
    assert [(r["offset"], r["record_type"], r["record_kind"], r["group_family"], r["group_id"], r["is_tombstone"])
            for r in rows] == [
        (first + i, rec.record_type, RECORD_TYPES[rec.record_type].name,
         "share" if rec.record_type <= 15 else "streams", group, rec.value is None)
        for i, (group, rec) in enumerate(want)]
    topology = json.loads(rows[6]["record_json"])
    assert topology["value"]["subtopologies"][0]["source_topics"] == ["words"]
