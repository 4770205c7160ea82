"""End to end on the sample shipped with the project (samples/kafka-*/, captured from a real broker),
checked against what its clients reported in scenarios.json: the archive and decode stages of the embedded
default's night (the shared sample warehouse; later stages have their own tests)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chispa import assert_df_equality
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

import coordinator_core as cc
from jobs.common.config import PROJECT_ROOT, SegmentSource
from jobs.common.delta_io import Tables
from schemas import GROUP_MEMBERS, OFFSET_COMMITS
from tests.spark.sample_warehouse import SampleWarehouse

pytestmark = pytest.mark.spark

SAMPLES = PROJECT_ROOT / "samples"
SAMPLE_DIRS = sorted(p for p in SAMPLES.glob("kafka-*") if (p / "scenarios.json").is_file())


@pytest.fixture(scope="module")
def sample_run(spark: SparkSession, sample_warehouse: SampleWarehouse) -> tuple[Tables, SampleWarehouse]:
    """The embedded default's night (tests/spark/sample_warehouse.py): its tables, and what its ingest and
    decode stages reported."""
    assert SAMPLE_DIRS, "the project ships a captured sample under samples/kafka-<version>/"
    assert sample_warehouse.config.sources.segments == (SegmentSource("*", str(SAMPLES)),)
    return sample_warehouse.tables(spark), sample_warehouse


def _scenarios(sample_dir: Path) -> dict:  # type: ignore[type-arg]
    return json.loads((sample_dir / "scenarios.json").read_text())["scenarios"]


def _records_in_segments() -> tuple[int, int]:
    """(records in every segment file, distinct (sample, partition, offset)), read with the core's reader: a
    multi-broker sample holds each partition once per broker (samples/<name>/broker-<id>/)."""
    copies, distinct = 0, set()
    for sample_dir in SAMPLE_DIRS:
        for segment in sample_dir.rglob("__consumer_offsets-*/*.log"):
            partition = int(segment.parent.name.rsplit("-", 1)[1])
            for entry in cc.read_segment(str(segment)):
                copies += 1
                distinct.add((sample_dir.name, partition, entry.offset))
    return copies, len(distinct)


def test_every_record_is_archived_and_decodes(sample_run: tuple[Tables, SampleWarehouse]) -> None:
    _, ctx = sample_run
    assert ctx.ingest is not None and ctx.decode is not None
    copies, distinct = _records_in_segments()
    assert ctx.ingest.records_read == copies > 0
    assert ctx.ingest.records_archived == distinct  # every record, each replica's identical copy once
    assert ctx.ingest.replica_conflicts_total == 0  # the sample's copies agree
    assert ctx.ingest.segment_errors == [] and ctx.ingest.history_gaps == []
    assert ctx.decode.decode_errors == 0  # a real broker writes nothing our decoder rejects
    controls = sum(r[5] for r in ctx.decode.coverage if r[4] == "control")
    assert ctx.decode.records_decoded + controls == ctx.ingest.records_archived
    assert {r[0] for r in ctx.decode.coverage} == {p.name for p in SAMPLE_DIRS}  # one cluster per broker


def test_members_of_every_generation_match_the_clients(
    spark: SparkSession, sample_run: tuple[Tables, SampleWarehouse],
) -> None:
    tables, _ = sample_run
    expected_rows = []
    for sample_dir in SAMPLE_DIRS:
        for scenario in _scenarios(sample_dir).values():
            if scenario["group_protocol"] != "classic":
                continue
            # A static member restarted within its session keeps the generation under a new member id; the
            # coordinator rewrites the generation's record, and group_members holds its latest state.
            renamed = {(r["generation"], r["old_member_id"]): r["new_member_id"] for r in scenario["static_restarts"]}
            for generation in scenario["generations"]:
                for client, first_member_id in generation["member_ids"].items():
                    member_id = renamed.get((generation["generation"], first_member_id), first_member_id)
                    assigned = sorted(f"{t}-{p}" for t, p in generation["assignment"].get(client, []))
                    expected_rows.append((sample_dir.name, scenario["group_id"], generation["generation"], member_id,
                                          assigned))
    assert expected_rows
    expected = spark.createDataFrame(
        expected_rows,
        T.StructType([
            T.StructField("cluster", T.StringType()),
            T.StructField("group_id", T.StringType()),
            T.StructField("generation", T.IntegerType()),
            T.StructField("member_id", T.StringType()),
            T.StructField("assigned", T.ArrayType(T.StringType(), containsNull=False)),
        ]),
    )
    actual = tables.read(GROUP_MEMBERS).select(
        "cluster", "group_id", "generation", "member_id",
        F.array_sort(F.transform("assigned_partitions", lambda p: F.concat_ws("-", p["topic"], p["partition"])))
        .alias("assigned"),
    )
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True, ignore_metadata=True)


def test_transactional_commits_count_only_when_committed(
    spark: SparkSession, sample_run: tuple[Tables, SampleWarehouse],
) -> None:
    tables, _ = sample_run
    for sample_dir in SAMPLE_DIRS:
        for scenario in _scenarios(sample_dir).values():
            if not scenario["transactions"]:
                continue
            commits = tables.read(OFFSET_COMMITS).where(
                (F.col("cluster") == sample_dir.name) & (F.col("group_id") == scenario["group_id"])
            )
            outcomes = {
                (f"{r['topic']}-{r['topic_partition']}", r["committed_offset"]): r["transaction_outcome"]
                for r in commits.collect()
            }
            expected = {
                (tp, offset): "committed" if txn["outcome"] == "commit" else "aborted"
                for txn in scenario["transactions"]
                for tp, offset in txn["offsets"].items()
            }
            assert outcomes == expected
            effective = {tp for (tp, _), outcome in outcomes.items() if outcome == "committed"}
            assert {tp: off for (tp, off), o in outcomes.items() if o == "committed"} == scenario["committed_offsets"]
            assert effective == set(scenario["committed_offsets"])
