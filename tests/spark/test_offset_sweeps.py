"""Offset retention expiry in the Spark offset-events stage, against the oracle (coordinator_core's
offset_history) and the three-broker sample.

1. Parity: `classify_tombstones` over hand-built tombstones and coordinator_events rows (read through the
   job's own `evidence_events` / `sweep_events`) gives what offset_history gives for the same case
   (tests/unit/test_history_offsets_sweep.py's CASES), and a sweep line of another cluster counts for nothing.
2. End to end: the nightly job's ingest, logs and decode stages and the offset-events stage over
   samples/kafka-4.3.1-3brokers (its segments and its three brokers' logs, archived in two nights in either
   order) call the 6 offsets of the `offset-expiry` scenario `expired`, with the 4.x
   sweep line ("Generated 7 tombstone records while cleaning up group metadata") as evidence; expected values
   from the sample's scenarios.json (`expired_offsets`, written by the scenario's client).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from coordinator_core.history import DELETED, EXPIRED, GROUP_DELETED
from coordinator_core.history.offsets import EXPLAIN_GROUP_SWEPT
from coordinator_core.logs import CoordinatorEvent
from jobs.common.config import Config, LogSource, SegmentSource, SourcesConfig, TablesConfig
from jobs.common.delta_io import Tables
from jobs.nightly import run_nightly
from jobs.offset_events.inputs import evidence_events, sweep_events
from jobs.offset_events.rows import classify_tombstones
from jobs.offset_events.stage import run_offset_events
from jobs.stages import STAGES
from schemas import CONSUMER_GROUP_RECORDS, GROUP_METADATA, OFFSET_COMMITS
from schemas.gold import OFFSET_EVENTS
from schemas.logs import COORDINATOR_EVENTS
from tests.unit.test_history_builders import GROUP, ms
from tests.unit.test_history_offsets_sweep import CASES, outcome, sweep

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "kafka-4.3.1-3brokers"
CLUSTER = "c1"

#: The tombstones of test_history_offsets_sweep.records() as the fold hands them over: the two offsets'
#: (the commit before each, generation 2 with no members) and the group's (the generation it ended).
TOMBSTONES = [
    (CLUSTER, GROUP, "orders", 0, 5, ms(100.0), 5, None, 2, 0),
    (CLUSTER, GROUP, "orders", 1, 6, ms(100.0), 7, None, 2, 0),
    (CLUSTER, GROUP, None, None, 7, ms(100.0), None, None, 2, None),
]
TOMBSTONE_DDL = ("cluster string, group_id string, topic string, partition long, record_offset long, "
                 "timestamp_ms long, previous_offset long, previous_expire_ms long, generation long, "
                 "group_members long")


def _lines(spark: SparkSession, events: list[tuple[str, CoordinatorEvent]]) -> DataFrame:
    """coordinator_events rows of (cluster, event)."""
    rows = []
    for cluster, e in events:
        rows.append({**dict.fromkeys(COORDINATOR_EVENTS.column_names), "cluster": cluster, "file_id": "broker-1",
                     "line_number": e.line_number, "log_source": "broker-1", "path": f"{cluster}/server.log",
                     "event_type": e.event_type, "line_kind": e.line_kind, "group_id": e.group_id,
                     "offsets_removed": e.offsets_removed, "cause_class": e.cause_class,
                     "timestamp": e.timestamp.replace(tzinfo=None), "message": e.message, "ingest_run_id": "hand"})
    return spark.createDataFrame(rows, COORDINATOR_EVENTS.schema)


def _classified(spark: SparkSession, events: list[tuple[str, CoordinatorEvent]]) -> list[tuple[Any, ...]]:
    tombstones = spark.createDataFrame(TOMBSTONES, TOMBSTONE_DDL)
    lines = _lines(spark, events)
    group_tombstones = spark.createDataFrame([(CLUSTER, GROUP, ms(100.0))],
                                             "cluster string, group_id string, timestamp_ms long")
    rows = classify_tombstones(tombstones, evidence_events(lines), group_tombstones, sweep_events(lines)).collect()
    return sorted((r["record_offset"], r["_kind"], r["_inferred"], r["_explanation"],
                   [e["line_number"] for e in r["_evidence"]]) for r in rows)


def test_spark_classifies_as_the_oracle(spark: SparkSession) -> None:
    for name, (events, expected) in sorted(CASES.items()):
        spark_rows = _classified(spark, [(CLUSTER, e) for e in events])
        assert spark_rows == outcome(events) == expected, name


def test_a_sweep_line_of_another_cluster_does_not_count(spark: SparkSession) -> None:
    _, no_logs = CASES["no_logs_is_still_deleted_with_the_group"]
    assert _classified(spark, [("c2", sweep(100.4))]) == no_logs
    _, swept = CASES["sweep_with_the_group_tombstone_is_expiry"]
    assert _classified(spark, [("c2", sweep(100.4, line=2)), (CLUSTER, sweep(100.4))]) == swept


def _at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text)


def _offset_rows(tables: Tables, group: str) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in tables.read(OFFSET_EVENTS)
            .where((F.col("cluster") == SAMPLE.name) & (F.col("group_id") == group)).collect()]


def _since(tables: Tables) -> dict[str, int]:
    return {spec.name: tables.version(spec) for spec in (OFFSET_COMMITS, GROUP_METADATA, CONSUMER_GROUP_RECORDS,
                                                           COORDINATOR_EVENTS)}


@pytest.mark.parametrize("first", ["segments", "logs"])
def test_the_sample_expiry_is_expired_with_the_sweep_line(spark: SparkSession, tmp_path: Path, first: str) -> None:
    """The sample's segments and its brokers' logs archived in two nights, either first; the offset-events
    stage runs after each (on its own: the rest of the history stage is not under test). The night that
    brings the second half settles the tombstones with the sweep line."""
    cluster = SAMPLE.name
    logs = tuple(LogSource(cluster, f"broker-{n}", (str(SAMPLE / f"broker-{n}" / "server.log*"),), "UTC", n)
                 for n in (1, 2, 3))
    config = Config(sources=SourcesConfig(mode="segments", logs=logs, segments=(SegmentSource(cluster, str(SAMPLE)),)),
                    tables=TablesConfig(database=f"cgh_offset_sweeps_{first}", location=str(tmp_path / "tables")))
    tables = Tables(spark, config.tables.database, config.tables.location)
    scenario = json.loads((SAMPLE / "scenarios.json").read_text(encoding="utf-8"))["scenarios"]["offset-expiry"]
    group = scenario["group_id"]
    stages = {"segments": [s for s in STAGES if s.name in ("ingest", "decode")],
              "logs": [s for s in STAGES if s.name == "logs"]}
    run_nightly(spark, config, stages=stages[first])
    run_offset_events(tables, "first", None)
    if first == "segments":   # no log line yet: the group's tombstone is all there is
        assert {(r["kind"], r["inferred"]) for r in _offset_rows(tables, group) if r["topic"]} == {(DELETED, True)}
    since = _since(tables)
    run_nightly(spark, config, stages=stages["logs" if first == "segments" else "segments"])
    run_offset_events(tables, "second", since)

    (expiry,) = scenario["expired_offsets"]
    rows = _offset_rows(tables, group)
    offsets = {f"{r['topic']}-{r['partition']}": r for r in rows if r["topic"] is not None}
    assert {tp: r["previous_offset"] for tp, r in offsets.items()} == expiry["offsets"]
    empty_at, gone_at = _at(expiry["group_empty_at"]), _at(expiry["observed_expired_at"])
    for tp, r in sorted(offsets.items()):
        at = r["at"].replace(tzinfo=dt.timezone.utc)
        assert (r["kind"], r["inferred"]) == (EXPIRED, False), (tp, r["kind"], r["explanation"])
        assert empty_at + dt.timedelta(minutes=1) - dt.timedelta(seconds=1) <= at <= gone_at, (tp, at)
        (line,) = r["evidence"]
        assert line["event_type"] == "OFFSETS_EXPIRED"
        assert "Generated 7 tombstone records while cleaning up group metadata" in line["message"], line["message"]
        assert line["source"].startswith(str(SAMPLE)), line["source"]
    (group_row,) = [r for r in rows if r["topic"] is None]
    assert (group_row["kind"], group_row["explanation"]) == (GROUP_DELETED, EXPLAIN_GROUP_SWEPT)
    assert [e["event_type"] for e in group_row["evidence"]] == ["OFFSETS_EXPIRED"]
