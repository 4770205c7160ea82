"""The nightly job's history of the three-broker sample's fenced static member and coordinator failover.

Expected values come from the sample's scenarios.json (`fenced_members`, `coordinator_failovers`, the
generations), written by the scenarios' clients and the cluster's metadata while they ran, never from the
code under test.

The job runs twice into one warehouse: first with every segment copy, the clients' logs and brokers 2 and
3's logs; then with broker 1's log added (the coordinator of the fenced group, whose log holds the fencing
line). So the fencing line, which names no group, arrives a night after the records and lines that name
its member id, and must still reach the group's history; the result must also be what the core's one-shot
`group_history` gives over the same inputs.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

import coordinator_core as cc
from coordinator_core.history import GroupRecord, group_history
from coordinator_core.history.inputs import attribute_to_groups, member_groups
from coordinator_core.logs import events as ev
from coordinator_core.logs import parse_log_line
from jobs.common.config import Config, LogSource, SegmentSource, SourcesConfig, TablesConfig
from jobs.common.delta_io import Tables
from jobs.nightly import run_nightly
from jobs.stages import STAGES
from schemas import CONSUMER_GROUP_RECORDS, GROUP_GENERATIONS, GROUP_METADATA, OFFSET_COMMITS
from schemas.logs import COORDINATOR_EVENTS

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "kafka-4.3.1-3brokers"
CLUSTER = "kafka-4.3.1-3brokers"
STAGE_NAMES = ("ingest", "decode", "logs", "history")
LOG_SOURCES = {
    "broker-1": LogSource(CLUSTER, "broker-1", (str(SAMPLE / "broker-1" / "server.log*"),), "UTC", 1),
    "broker-2": LogSource(CLUSTER, "broker-2", (str(SAMPLE / "broker-2" / "server.log*"),), "UTC", 2),
    "broker-3": LogSource(CLUSTER, "broker-3", (str(SAMPLE / "broker-3" / "server.log*"),), "UTC", 3),
    "clients": LogSource(CLUSTER, "clients", (str(SAMPLE / "clients" / "*.log"),)),
}


def _config(root: Path, logs: tuple[LogSource, ...]) -> Config:
    return Config(
        sources=SourcesConfig(mode="segments", segments=(SegmentSource(CLUSTER, str(SAMPLE)),), logs=logs),
        tables=TablesConfig(database="cgh_fenced_failover", location=str(root / "warehouse")),
    )


def _scenarios() -> dict[str, Any]:
    return json.loads((SAMPLE / "scenarios.json").read_text(encoding="utf-8"))["scenarios"]  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def tables(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Tables:
    root = tmp_path_factory.mktemp("fenced_failover")
    stages = tuple(s for s in STAGES if s.name in STAGE_NAMES)
    without_broker_1 = tuple(s for name, s in LOG_SOURCES.items() if name != "broker-1")
    run_nightly(spark, _config(root, without_broker_1), stages=stages)
    run_nightly(spark, _config(root, tuple(LOG_SOURCES.values())), stages=stages)
    config = _config(root, ())
    return Tables(spark, config.tables.database, config.tables.location)


def _rows(tables: Tables, group: str) -> dict[int, dict[str, Any]]:
    rows = tables.read(GROUP_GENERATIONS).where((F.col("cluster") == CLUSTER) & (F.col("group_id") == group))
    out = {}
    for row in rows.collect():
        assert int(row["generation"]) not in out, f"two rows for generation {row['generation']} of {group}"
        out[int(row["generation"])] = row.asDict(recursive=True)
    return out


def _core_rows(tables: Tables, group: str) -> dict[int, Any]:
    """The core's one-shot history of the group over the same inputs: one broker's copy of the records (the
    copies agree, test_multibroker checks it) and the log lines the logs stage stored (every group's, and
    the group-less ones: the core attributes them itself; the logs stage holds back a file's last entry
    until the file grows, so the files themselves are not the same input)."""
    from jobs.history.fold import _events

    node = 1
    records = []
    for segment in sorted((SAMPLE / f"broker-{node}").glob("__consumer_offsets-*/*.log")):
        for entry in cc.read_segment(str(segment)):
            if entry.is_control:
                continue
            record = cc.decode_record(entry.key, entry.value)
            if (getattr(record.key, "group", None) or getattr(record.key, "group_id", None)) == group:
                records.append(GroupRecord(entry.offset, entry.timestamp, record, None))
    events = _events(tables.read(COORDINATOR_EVENTS).where(F.col("cluster") == CLUSTER).toPandas())
    # As the nightly job passes them: lines naming a group, after attribution (no partition-wide lines).
    pairs = [(m.member_id, group) for r in records if r.record.kind == "group_metadata" and r.record.value
             is not None for m in r.record.value.members]
    attributed, _ = attribute_to_groups(events, member_groups(events, pairs))
    return {r.generation: r for r in group_history(records, [e for e in attributed if e.group_id is not None],
                                                   group_id=group)}


def _compared(row: Any) -> tuple[Any, ...]:
    """What must agree between the Spark path and the core, from a Spark row (dict) or a core row."""
    get = row.get if isinstance(row, dict) else lambda k: getattr(row, k)
    evidence = get("evidence")
    loads = get("coordinator_loads") or ()
    value = (lambda x, k: x[k]) if isinstance(row, dict) else getattr
    return (get("cause"), tuple(get("causes")), sorted((value(e, "event_type"), value(e, "line_number") or 0)
                                                       for e in evidence),
            [(value(x, "broker_id"), value(x, "at").replace(tzinfo=dt.timezone.utc)) for x in loads])


def test_the_fenced_static_member_is_in_its_groups_history(tables: Tables) -> None:
    scenario = _scenarios()["static-member-fenced"]
    (fenced,) = scenario["fenced_members"]
    group = scenario["group_id"]
    # The fencing line stays as the broker wrote it: no group in coordinator_events.
    lines = tables.read(COORDINATOR_EVENTS).where(
        (F.col("event_type") == ev.STATIC_MEMBER_FENCED) & (F.col("member_id") == fenced["fenced_member_id"])).collect()
    assert [(r["group_id"], r["related_member_id"]) for r in lines] == [(None, fenced["by_member_id"])]

    rows = _rows(tables, group)
    assert sorted(rows) == [g["generation"] for g in scenario["generations"]], "a generation invented or lost"
    # The fencing changed no generation (the coordinator swapped the member id in place); the next rebalance,
    # the one that emptied the group, has it among its causes, with the fencing line as evidence.
    next_round = rows[fenced["generation"] + 1]
    assert ev.STATIC_MEMBER_FENCED_CAUSE in next_round["causes"], next_round["causes"]
    assert any(e["event_type"] == ev.STATIC_MEMBER_FENCED and e["member_id"] == fenced["fenced_member_id"]
               for e in next_round["evidence"]), next_round["evidence"]
    assert not any(ev.STATIC_MEMBER_FENCED_CAUSE in r["causes"] for g, r in rows.items()
                   if g != fenced["generation"] + 1)
    # No other group of the cluster got the line.
    elsewhere = tables.read(GROUP_GENERATIONS).where((F.col("cluster") == CLUSTER) & (F.col("group_id") != group)
                                                     & F.array_contains("causes", ev.STATIC_MEMBER_FENCED_CAUSE))
    assert elsewhere.count() == 0

    core = _core_rows(tables, group)
    assert {g: _compared(r) for g, r in rows.items()} == {g: _compared(r) for g, r in core.items()}


def test_the_failover_is_named_in_the_generation_it_happened_in(tables: Tables) -> None:
    scenario = _scenarios()["coordinator-failover"]
    (failover,) = scenario["coordinator_failovers"]
    group = scenario["group_id"]
    stopped_at = dt.datetime.fromisoformat(failover["stopped_at"])
    rows = _rows(tables, group)
    assert sorted(rows) == [g["generation"] for g in scenario["generations"]], "a generation invented or lost"
    assert not failover["rebalanced"]

    during = rows[failover["generation_before"]]
    (load,) = during["coordinator_loads"]
    assert load["broker_id"] == failover["new_coordinator"]
    assert load["offsets_partition"] == failover["partition"]
    assert load["cause_class"] == ev.COORDINATOR_FAILOVER
    assert stopped_at <= load["at"].replace(tzinfo=dt.timezone.utc) < stopped_at + dt.timedelta(seconds=30)
    # Its cause is still the join that started it; no other generation holds the load.
    cause_of = {g["generation"]: g["cause"] for g in scenario["generations"]}
    assert cause_of[failover["generation_before"]] == "join" and during["cause"] == ev.NEW_MEMBER
    assert [g for g, r in rows.items() if r["coordinator_loads"]] == [failover["generation_before"]]
    # The next rebalance, a third member joining under the new coordinator: a new member, with the load
    # among its causes and evidence (causes.py's window rule).
    first_after = rows[failover["first_generation_after"]]
    assert cause_of[failover["first_generation_after"]] == "join" and first_after["cause"] == ev.NEW_MEMBER
    assert ev.COORDINATOR_FAILOVER in first_after["causes"]
    assert any(e["event_type"] == ev.GROUP_LOADED for e in first_after["evidence"])

    core = _core_rows(tables, group)
    assert {g: _compared(r) for g, r in rows.items()} == {g: _compared(r) for g, r in core.items()}


def test_a_warehouse_from_before_the_columns_gains_them(spark: SparkSession, tmp_path: Path) -> None:
    """group_generations written without coordinator_loads and partition_handovers (older warehouses) loads:
    the columns are added, null in the old rows, and the nightly job's MERGE writes them."""
    names = GROUP_GENERATIONS.column_names
    old_spec = dataclasses.replace(GROUP_GENERATIONS, schema=T.StructType(
        GROUP_GENERATIONS.schema.fields[:names.index("coordinator_loads")]))
    assert names[len(old_spec.schema.fields):] == ["coordinator_loads", "partition_handovers"]
    old = Tables(spark, "cgh_before_loads", str(tmp_path / "warehouse"))
    old.ensure_database()
    old.ensure(old_spec)
    row = {f.name: None for f in old_spec.schema.fields}
    row.update(cluster="c", group_id="g", group_protocol="classic", generation=1, record_offset=7, members=[],
               members_joined=[], members_left=[], members_kept=[], member_id_changes=[], partitions_moved=[],
               partitions_revoked_then_assigned=[], causes=[], evidence=[], static_restarts=0, partitions_kept=0,
               cause_inferred=False, from_records=True, from_logs=False, record_count=1)
    old.append(old_spec, spark.createDataFrame([row], old_spec.schema))

    new = Tables(spark, "cgh_before_loads", str(tmp_path / "warehouse"))
    new.ensure(GROUP_GENERATIONS)
    got = new.read(GROUP_GENERATIONS)
    assert got.columns == GROUP_GENERATIONS.column_names
    assert [(r["coordinator_loads"], r["partition_handovers"]) for r in got.collect()] == [(None, None)]
    load = {"broker_id": 3, "at": dt.datetime(2026, 11, 27, 2, 33, 52), "offsets_partition": 2,
            "coordinator_epoch": None, "cause_class": ev.COORDINATOR_FAILOVER, "source": "broker-3",
            "line_number": 637}
    handover = {"topic": "t", "partition": 0, "from_member": "a", "to_member": "b",
                "revocation_requested_at": dt.datetime(2026, 11, 27, 2, 33, 50), "released_at": None,
                "assigned_at": dt.datetime(2026, 11, 27, 2, 33, 51)}
    amended = spark.createDataFrame([{**row, "coordinator_loads": [load], "partition_handovers": [handover],
                                      "_deleted": False}], T.StructType(
        [*GROUP_GENERATIONS.schema.fields, T.StructField("_deleted", T.BooleanType())]))
    new.upsert(GROUP_GENERATIONS, amended, delete_flag="_deleted")
    (stored,) = new.read(GROUP_GENERATIONS).collect()
    assert [x["broker_id"] for x in stored["coordinator_loads"]] == [3]
    assert [h.asDict() for h in stored["partition_handovers"]] == [handover]


def _event_row(line: str, number: int) -> dict[str, Any]:
    """A coordinator_events row for one of broker 1's lines, parsed as the logs stage parses it."""
    event = parse_log_line(line, broker_id=1)
    assert event is not None, line
    row: dict[str, Any] = {f.name: None for f in COORDINATOR_EVENTS.schema.fields}
    row.update({k: v for k, v in dataclasses.asdict(event).items() if k in row and k != "source"})
    row.update(cluster=CLUSTER, file_id="broker-1-server-log", line_number=number, log_source="broker-1",
               path=str(SAMPLE / "broker-1" / "server.log"), ingest_run_id="test")
    if row["timestamp"] is not None:
        row["timestamp"] = row["timestamp"].replace(tzinfo=None)
    return row


def test_a_line_whose_member_id_a_later_night_names_reaches_the_group_then(spark: SparkSession,
                                                                           tmp_path: Path) -> None:
    """Night 1 has the fencing line alone (no group); night 2 the line naming its member with the group:
    night 2 gives the fold night 1's line, with the group; a night with nothing new gives nothing twice."""
    from jobs.history.inputs import RunRange, new_attributed_events

    (fenced,) = _scenarios()["static-member-fenced"]["fenced_members"]
    group = _scenarios()["static-member-fenced"]["group_id"]
    server_log = (SAMPLE / "broker-1" / "server.log").read_text(encoding="utf-8").splitlines()
    number_of = {i + 1: text for i, text in enumerate(server_log)}
    fence_at = next(n for n, t in number_of.items() if "is fenced by existing memberId=" + fenced["by_member_id"] in t)
    replaced_at = next(n for n, t in number_of.items() if "Replacing previously mapped member "
                       + fenced["fenced_member_id"] in t)
    tables = Tables(spark, "cgh_late_member", str(tmp_path / "warehouse"))
    tables.ensure_database()
    for spec in (COORDINATOR_EVENTS, GROUP_METADATA, CONSUMER_GROUP_RECORDS, OFFSET_COMMITS):
        tables.ensure(spec)
    since = {spec.name: tables.version(spec) for spec in (COORDINATOR_EVENTS, GROUP_METADATA)}

    def night(lines: list[int]) -> tuple[list[tuple[str | None, int]], int]:
        nonlocal since
        if lines:
            rows = [_event_row(number_of[n], n) for n in lines]
            tables.append(COORDINATOR_EVENTS, spark.createDataFrame(rows, COORDINATOR_EVENTS.schema))
        events, unattributed = new_attributed_events(tables, RunRange(since))
        since = {spec.name: tables.version(spec) for spec in (COORDINATOR_EVENTS, GROUP_METADATA)}
        return sorted((r["group_id"], r["line_number"]) for r in events.collect()), unattributed

    assert night([fence_at]) == ([], 1)                       # nobody names the member yet: counted
    assert night([replaced_at]) == (sorted([(group, fence_at), (group, replaced_at)]), 0)
    assert night([]) == ([], 0)
