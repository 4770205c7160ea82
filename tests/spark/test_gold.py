"""Gold stages on the real Kafka 4.3.1 sample (samples/kafka-4.3.1), as the embedded default's night (the
shared sample warehouse: conf/local.toml's inputs and storm thresholds, every stage) leaves its cluster:
generation history, offset events, assignment replay, what-if replay, storms and the report. Expected values
come from the scenarios' own record of what they did (scenarios.json) and from the storm thresholds."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs.common.delta_io import Tables
from jobs.report import write_report
from jobs.views import create_views
from schemas import GROUP_METADATA, TableSpec
from schemas.gold import ASSIGNMENT_REPLAY, ASSIGNOR_WHATIF, GROUP_GENERATIONS, REBALANCE_STORMS
from tests.report.cost_expected import assert_cost_shown, expected_cost
from tests.report.page import group_sections, text
from tests.spark.sample_warehouse import SampleWarehouse

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = "kafka-4.3.1"
SAMPLE = ROOT / "samples" / CLUSTER


@pytest.fixture(scope="module")
def scenarios() -> dict[str, dict[str, Any]]:
    doc = json.loads((SAMPLE / "scenarios.json").read_text())
    return dict(doc["scenarios"])


@pytest.fixture(scope="module")
def gold(spark: SparkSession, sample_warehouse: SampleWarehouse) -> Tables:
    """The sample warehouse (the embedded default's whole nightly pipeline: tests/spark/sample_warehouse.py),
    of which these tests read the 4.3.1 sample's cluster (`_read`)."""
    return sample_warehouse.tables(spark)


def _read(gold: Tables, spec: TableSpec) -> DataFrame:
    return gold.read(spec).where(F.col("cluster") == CLUSTER)


def test_every_classic_scenario_has_its_generations(gold: Tables, scenarios: dict[str, dict[str, Any]]) -> None:
    rows = _read(gold, GROUP_GENERATIONS).where(F.col("group_protocol") == "classic").select(
        "group_id", "generation", "member_count").collect()
    got: dict[str, set[int]] = {}
    for r in rows:
        got.setdefault(r["group_id"], set()).add(r["generation"])
    for s in scenarios.values():
        if s["group_protocol"] != "classic" or not s["generations"]:
            continue
        expected = {g["generation"] for g in s["generations"]}
        assert expected <= got.get(s["group_id"], set()), s["name"]


def test_kip848_epochs_have_the_scenario_assignments_with_topic_names(
        gold: Tables, scenarios: dict[str, dict[str, Any]]) -> None:
    """KIP-848 records name partitions by topic id only; the stage names them from the cluster's commits."""
    s = scenarios["consumer-protocol"]
    rows = (_read(gold, GROUP_GENERATIONS).where(F.col("group_id") == s["group_id"])
            .orderBy("generation").select("group_protocol", "members").collect())
    assert [r["group_protocol"] for r in rows] == ["consumer"] * len(s["consumer_group_steps"])
    for row, step in zip(rows, s["consumer_group_steps"], strict=True):
        got = {m["member_id"]: sorted([p["topic"], p["partition"]] for p in m["assigned_partitions"])
               for m in row["members"]}
        assert got == {i: sorted(step["assignment"][c]) for c, i in step["member_ids"].items()}


def test_record_built_classic_generations_stabilized_when_their_first_record_says(gold: Tables) -> None:
    """stabilized_at of every classic generation built from records is its first GroupMetadata record's
    current_state_timestamp (value v3 here), read back from group_metadata through the history stage's inputs;
    the broker's "Stabilized group" line gives the same instant or a millisecond later
    (tests/unit/test_history_stabilized.py)."""
    generations = (_read(gold, GROUP_GENERATIONS)
                   .where((F.col("group_protocol") == "classic") & F.col("from_records") & (F.col("generation") > 0))
                   .select("group_id", "generation", F.col("record_offset").alias("offset"), "stabilized_at"))
    records = _read(gold, GROUP_METADATA).select("group_id", "offset", "current_state_timestamp")
    rows = generations.join(records, ["group_id", "offset"], "left").collect()
    assert len(rows) == 61  # 50 generations with members, 11 empty ones
    assert [(r["group_id"], r["generation"], r["stabilized_at"], r["current_state_timestamp"]) for r in rows
            if r["stabilized_at"] is None or r["stabilized_at"] != r["current_state_timestamp"]] == []


def test_storm_scenarios_are_flagged_and_quiet_ones_are_not(gold: Tables) -> None:
    storms = {r["group_id"]: r for r in _read(gold, REBALANCE_STORMS).collect()}
    assert set(storms) == {"cgh-storm-crash-loop", "cgh-storm-poll-timeout"}
    crash = storms["cgh-storm-crash-loop"]
    assert crash["flapping_members"] == ["storm-crash-loop-b@127.0.0.1"]
    # the restarted member's joins are the symptom; the dead member's session timeouts are the cause
    assert crash["dominant_cause"] == "session_timeout"
    poll = storms["cgh-storm-poll-timeout"]
    assert poll["flapping_members"] == ["storm-poll-timeout-b@127.0.0.1"]
    assert poll["dominant_cause"] == "poll_timeout"  # from kafka-python's own log line
    assert poll["rebalances"] >= 8 and 0 < poll["severity"] <= 100


def test_java_client_generations_replay_exactly(gold: Tables) -> None:
    # The Java consumer (kafka-clients 4.3.1) leads the cooperative-sticky and static-members groups: its
    # stored assignments must be what our replay of Kafka's assignor computes.
    replay = _read(gold, ASSIGNMENT_REPLAY).where(
        F.col("group_id").isin("cgh-cooperative-sticky", "cgh-static-members")).collect()
    assert replay, "no generation replayed"
    assert {(r["group_id"], r["status"]) for r in replay} == {
        ("cgh-cooperative-sticky", "match"), ("cgh-static-members", "match")}


def test_each_leader_is_replayed_with_its_own_library_and_nothing_is_unexplained(
        gold: Tables, scenarios: dict[str, dict[str, Any]]) -> None:
    # scenarios.json says which client each scenario ran: Java for the cooperative-sticky and static-members
    # groups, kafka-python 2.2.15 for the rest. kafka-python's sticky (its own port of an older Java
    # algorithm) reproduces the sticky group only as kafka-python's own code; generations 2-4 carry the same
    # sticky user data in every member (kafka-python < 3.0 keeps the assignor's state on the class).
    rows = _read(gold, ASSIGNMENT_REPLAY).where(F.col("member_id") != "").collect()
    assert rows and all(r["reason"] != "unexplained" for r in rows)
    client = {s["group_id"]: s["client"] for s in scenarios.values()}
    assert {client[r["group_id"]] for r in rows} == {"kafka-python 2.2.15", next(c for c in client.values()
                                                                                  if "Java consumer" in c)}
    for r in rows:
        library, engine = (("kafka-python", "kafka-python 2.2.15") if client[r["group_id"]] == "kafka-python 2.2.15"
                           else ("java", "java"))
        assert (r["group_id"], r["leader_client"], r["engine"], r["status"]) == (
            r["group_id"], library, engine, "match"), r["generation"]
    sticky = {r["generation"]: r["findings"] for r in rows if r["group_id"] == "cgh-sticky-group"}
    assert sorted(sticky) == [1, 2, 3, 4, 5]
    assert {g for g, f in sticky.items() if "shared_sticky_state" in f} == {2, 3, 4}


def test_whatif_covers_every_assignor_with_and_without_static_membership(gold: Tables) -> None:
    rows = _read(gold, ASSIGNOR_WHATIF).where(F.col("group_id") == "cgh-storm-crash-loop").collect()
    combos = {(r["assignor"], r["static_membership"]) for r in rows}
    assert combos == {(a, s) for a in ("range", "roundrobin", "sticky", "cooperative-sticky") for s in (False, True)}
    steps = {s: sum(1 for r in rows if r["assignor"] == "range" and r["static_membership"] == s)
             for s in (False, True)}
    assert steps[True] < steps[False]  # static membership absorbs the crash-loop restarts
    assert all(r["error"] is None for r in rows)


def test_audit_views_answer_their_questions(spark: SparkSession, gold: Tables) -> None:
    views = create_views(spark, gold.database)
    counts = {v: spark.table(f"{gold.database}.{v}").where(F.col("cluster") == CLUSTER).count() for v in views}
    assert all(counts[v] > 0 for v in ("v_rebalance_summary", "v_rebalance_causes", "v_storms", "v_flapping_members",
                                       "v_member_changes", "v_latest_offsets", "v_whatif"))
    # every sample generation is what its leader's own library computes: no mismatch to list
    assert counts["v_assignment_mismatches"] == 0
    whatif_clients = {(r["group_id"], tuple(r["leader_clients"] or ())) for r in spark.table(
        f"{gold.database}.v_whatif").where(F.col("cluster") == CLUSTER).collect()}
    assert ("cgh-sticky-group", ("kafka-python",)) in whatif_clients
    assert ("cgh-cooperative-sticky", ()) in whatif_clients  # a Java leader: nothing to say
    flapping = {(r["group_id"], r["member"]) for r in spark.table(f"{gold.database}.v_flapping_members")
                .where(F.col("cluster") == CLUSTER).collect()}
    assert flapping == {("cgh-storm-crash-loop", "storm-crash-loop-b@127.0.0.1"),
                        ("cgh-storm-poll-timeout", "storm-poll-timeout-b@127.0.0.1")}


def test_report_is_written(gold: Tables, tmp_path: Path) -> None:
    out = write_report(gold, tmp_path / "rebalance-audit.html", groups_shown=4, source="samples/kafka-4.3.1")
    page = out.read_text()
    assert "Group cgh-storm-poll-timeout" in page and "Group cgh-storm-crash-loop" in page
    assert 'id="storm-table"' in page and 'id="whatif-moved"' in page
    # what the rebalances cost, as the test's own queries of rebalance_cost say (tests/report/cost_expected.py)
    headings = [text(s.split("</h2>")[0]) for s in group_sections(page).values()]
    shown = {f"{g} ({c})": (c, g) for g, c in (re.match(r"Group (\S+) \(([^,)]+)", h).groups()  # type: ignore[union-attr]
                                               for h in headings)}
    assert len(shown) == 4 and 'id="fleet-cost"' in page
    assert_cost_shown(page, expected_cost(gold.spark, gold.database), shown)
