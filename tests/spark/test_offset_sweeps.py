"""Offset retention expiry in the Spark offset-events stage, against the oracle (coordinator_core's
offset_history) and the three-broker sample.

1. Routing: the group-less sweep lines (read through the job's own `sweep_events`) reach the groups of their
   cluster with a tombstone within 5 s, each once; a sweep line of another cluster counts for nothing. (The
   rule that classifies with them is the core fold's, held to the oracle in tests/unit/test_offset_fold.py.)
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
from jobs.offset_events.inputs import sweep_events
from jobs.offset_events.stage import _buckets, _near_lines, run_offset_events
from jobs.stages import STAGES
from schemas import CONSUMER_GROUP_RECORDS, GROUP_METADATA, OFFSET_COMMITS
from schemas.gold import OFFSET_EVENTS
from schemas.logs import COORDINATOR_EVENTS
from tests.unit.test_history_builders import GROUP, ms
from tests.unit.test_history_offsets_sweep import sweep

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "kafka-4.3.1-3brokers"
CLUSTER = "c1"

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


def test_a_group_gets_the_sweep_lines_of_its_cluster_within_five_seconds(spark: SparkSession) -> None:
    """The rule is the core fold's (tests/unit/test_offset_fold.py); what the stage adds is which group-less
    sweep lines reach a group: its own cluster's, within 5 s of one of its tombstones, each once."""
    times = spark.createDataFrame([(CLUSTER, GROUP, ms(100.0)), (CLUSTER, GROUP, ms(100.0)),
                                   (CLUSTER, "other", ms(300.0))],
                                  "cluster string, group_id string, timestamp_ms long")
    lines = sweep_events(_lines(spark, [("c2", sweep(100.4, line=1)), (CLUSTER, sweep(100.4, line=2)),
                                        (CLUSTER, sweep(104.9, line=3)), (CLUSTER, sweep(105.1, line=4)),
                                        (CLUSTER, sweep(95.2, line=5)), (CLUSTER, sweep(100.2, removed=0, line=6)),
                                        (CLUSTER, sweep(296.0, line=7))]))
    got = sorted((r["cluster"], r["group_id"], r["line_number"]) for r in _near_lines(times, lines).collect())
    assert got == [(CLUSTER, GROUP, 2), (CLUSTER, GROUP, 3), (CLUSTER, GROUP, 5), (CLUSTER, "other", 7)]


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


def test_a_big_night_folds_in_more_buckets_of_groups() -> None:
    """A bucket's inputs are held at once by one Python worker: a night of 700M commits is cut into
    3,500 buckets of ~200k records, a small one keeps the usual 16."""
    assert [_buckets(n) for n in (0, 2_244, 3_200_000, 3_200_001, 700_000_000)] == [16, 16, 16, 17, 3_500]
