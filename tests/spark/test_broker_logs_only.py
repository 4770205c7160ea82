"""What the generation history says when an operator has only the broker logs, not the clients'.

The nightly job's history on the samples, twice, each in a warehouse of its own: once with conf/local.toml's
sources as they are (segments, broker and client logs: the shared sample warehouse), once with the client
logs left out (only the `[[sources.logs]]` entries with a broker id). Generations are
joined on (cluster, group_id, generation).

The expected causes do not come from the code under test: each generation's true cause is what the
sample's scenario provoked (its scenarios.json, written by the clients while the scenario ran), and what a
broker log can say about it is set down below from what the brokers print (see their server.log and
/work/shared/reference): the "Preparing to rebalance group ... (reason: ...)" line names the new member, the
LeaveGroup, the heartbeat expiration and (KIP-800, Kafka 3.2+) echoes the client's own reason; a poll timeout
is named only by the client, unless the client sends it as its KIP-800 reason (kafka-python sends none:
"client reason: not provided"), so the broker sees a LeaveGroup.

`pytest -s` prints the per-cause table (all logs -> broker logs only) that the README shows.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from jobs.common.config import Config, LogSource, TablesConfig, load_config
from jobs.common.delta_io import Tables
from jobs.nightly import run_nightly
from jobs.stages import STAGES
from schemas import GROUP_GENERATIONS
from tests.spark.sample_warehouse import SampleWarehouse

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
LOCAL_CONF = ROOT / "conf" / "local.toml"
SAMPLES = {"kafka-3.9.1": ROOT / "samples" / "kafka-3.9.1", "kafka-4.3.1": ROOT / "samples" / "kafka-4.3.1",
           "kafka-4.3.1-3brokers": ROOT / "samples" / "kafka-4.3.1-3brokers"}

#: The stages that build group_generations (storms, maintenance and the report read it; they add nothing here).
HISTORY_STAGES = tuple(STAGES[:[s.name for s in STAGES].index("history") + 1])

#: A scenario's cause (tests/kafka_testbed/scenarios.py's vocabulary) -> the cause class it is (events.py).
#: A crash-looping member's new incarnation joins while the dead one is still in the group: the join starts
#: the round, the session timeout only ends it.
TRUE_CAUSE = {
    "group_created": "group_created",
    "join": "new_member",
    "rejoin": "new_member",
    "join+session_timeout": "new_member",
    "leave_group": "member_left",
    "session_timeout": "session_timeout",
    "max_poll_interval_exceeded": "poll_timeout",
    "cooperative_follow_up": "cooperative_second_round",
}

#: The true cause -> (cause, cause_inferred) with broker logs only, from what the broker prints:
EXPECTED_BROKER_ONLY = {
    # the group's first record (generation 0, Kafka 4.x): from the records, no log line needed
    "group_created": ("group_created", False),
    # "Preparing to rebalance group G ... (reason: Adding new member M with group instance id ...)" (3.x and
    # 4.x); KIP-848: "[GroupId G] Member M joins the consumer group using the consumer protocol."
    "new_member": ("new_member", False),
    # "(reason: Removing member M on LeaveGroup ...)" + "Member ... has left group G through explicit
    # `LeaveGroup`" (3.x), "(reason: explicit `LeaveGroup` request for (M) members.)" (4.x); KIP-848:
    # "[GroupId G] Member M left the consumer group."
    "member_left": ("member_left", False),
    # "(reason: removing member M on heartbeat expiration)" + "Member M in group G has failed, removing it
    # from the group"
    "session_timeout": ("session_timeout", False),
    # "Leader M re-joining group during Stable; client reason: need to revoke partitions and re-join" (the
    # Java client's KIP-800 reason, echoed by the broker)
    "cooperative_second_round": ("cooperative_second_round", False),
    # The broker sees a LeaveGroup with "client reason: not provided" (kafka-python): a member that left.
    # A Java client (3.2+) would send "consumer poll timeout has expired." and the broker line would say it.
    "poll_timeout": ("member_left", False),
}

#: A definite cause that is a correct generalisation of a finer one: a poll timeout's member leaves with a
#: LeaveGroup (the heartbeat thread sends it, KIP-62), so "member_left" is true of it, only less precise.
GENERALISATIONS = {"poll_timeout": {"member_left"}}

Key = tuple[str, str, int]


def _scenario_causes() -> dict[Key, str]:
    """(cluster, group, generation) -> the true cause class, from the samples' scenarios.json."""
    truth: dict[Key, str] = {}
    for cluster, sample in SAMPLES.items():
        scenarios = json.loads((sample / "scenarios.json").read_text(encoding="utf-8"))["scenarios"]
        for scenario in scenarios.values():
            group = scenario["group_id"]
            for g in scenario["generations"]:
                truth[(cluster, group, int(g["generation"]))] = TRUE_CAUSE[g["cause"]]
            # KIP-848 groups: one group epoch per step, in order, after the epoch that created the group.
            for epoch, step in enumerate(scenario.get("consumer_group_steps", []), start=2):
                action = step["after"].split()[0]
                truth[(cluster, group, epoch)] = {"join": "new_member", "leave": "member_left"}[action]
    return truth


def _configs(root: Path) -> tuple[Config, Config]:
    """conf/local.toml as it is, and the same without the client logs, each with a warehouse of its own."""
    local = load_config(LOCAL_CONF)
    broker_logs = tuple(s for s in local.sources.logs if s.broker_id >= 0)
    assert {s.cluster for s in broker_logs} == set(SAMPLES), f"conf/local.toml's broker logs: {broker_logs}"
    assert len(broker_logs) < len(local.sources.logs), "conf/local.toml has no client logs to leave out"

    def config(name: str, logs: tuple[LogSource, ...]) -> Config:
        return dataclasses.replace(
            local,
            sources=dataclasses.replace(local.sources, logs=logs),
            tables=TablesConfig(database=name, location=str(root / name)),
        )

    return config("cgh_all_logs", local.sources.logs), config("cgh_broker_logs_only", broker_logs)


def _generations(spark: SparkSession, config: Config) -> dict[Key, dict[str, Any]]:
    rows = Tables(spark, config.tables.database, config.tables.location).read(GROUP_GENERATIONS).select(
        "cluster", "group_id", "generation", "cause", "cause_inferred", "trigger_member_id", "evidence").collect()
    by_key: dict[Key, dict[str, Any]] = {}
    for row in rows:
        key = (row["cluster"], row["group_id"], int(row["generation"]))
        assert key not in by_key, f"two rows for generation {key} in {config.tables.database}"
        by_key[key] = row.asDict(recursive=True)
    return by_key


@pytest.fixture(scope="module")
def runs(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory, sample_warehouse: SampleWarehouse
         ) -> Iterator[tuple[dict[Key, dict[str, Any]], dict[Key, dict[str, Any]], Config]]:
    """All logs: the shared sample warehouse (conf/local.toml as it is, tests/spark/sample_warehouse.py);
    broker logs only: a run of its own."""
    all_logs, broker_only = _configs(tmp_path_factory.mktemp("broker_logs_only"))
    assert all_logs.sources == sample_warehouse.config.sources and all_logs.history == sample_warehouse.config.history
    run_nightly(spark, broker_only, stages=HISTORY_STAGES)
    yield _generations(spark, sample_warehouse.config), _generations(spark, broker_only), broker_only


def _is_broker_file(source: str | None, config: Config) -> bool:
    return source is not None and any(fnmatch.fnmatch(source, pattern)
                                      for s in config.sources.logs for pattern in s.paths)


def _justifies(evidence: dict[str, Any], cause: str, config: Config) -> bool:
    """Whether one evidence line (a broker line or a record, never a client line) says `cause`.

    The second round of a cooperative rebalance is named on the broker by the client's KIP-800 reason
    ("need to revoke partitions"), on a line whose own class is the leader's or member's rejoin.
    """
    from_record = evidence["source"] is None and evidence["event_type"].startswith("record:")
    if not (from_record or _is_broker_file(evidence["source"], config)):
        return False
    if evidence["cause_class"] == cause:
        return True
    return cause == "cooperative_second_round" and "need to revoke partitions" in (evidence["reason"] or "")


def _cause_table(all_logs: dict[Key, dict[str, Any]], broker_only: dict[Key, dict[str, Any]]) -> str:
    counts: Counter[tuple[str, str, bool, str]] = Counter()
    for key, a in all_logs.items():
        b = broker_only[key]
        counts[(a["cause"], b["cause"], b["cause_inferred"], key[0])] += 1
    transitions = sorted({k[:3] for k in counts}, key=lambda t: (t[0] != t[1], t))
    clusters = sorted(SAMPLES)
    lines = ["| cause with all logs | cause with broker logs only | inferred | "
             + " | ".join(clusters) + " | total |",
             "|---|---|---|" + "---:|" * (len(clusters) + 1)]
    for a, b, inferred in transitions:
        per_cluster = [counts[(a, b, inferred, c)] for c in clusters]
        lines.append(f"| {a} | {b} | {'yes' if inferred else 'no'} | "
                     + " | ".join(str(n) for n in per_cluster) + f" | {sum(per_cluster)} |")
    return "\n".join(lines)


def test_the_causes_broker_logs_can_tell(runs: tuple[dict[Key, dict[str, Any]], dict[Key, dict[str, Any]], Config]
                                         ) -> None:
    """Every generation's cause, with all logs and with broker logs only, is the one its scenario provoked
    as far as each set of logs can tell it; the table is printed for the README."""
    all_logs, broker_only, _ = runs
    print("\nCauses with all logs -> with broker logs only (generations of both samples):\n"
          + _cause_table(all_logs, broker_only))
    truth = _scenario_causes()
    assert set(all_logs) == set(broker_only) == set(truth), (
        f"generations differ: only with all logs {sorted(set(all_logs) - set(broker_only))}, "
        f"only with broker logs {sorted(set(broker_only) - set(all_logs))}, "
        f"not in scenarios.json {sorted(set(all_logs) - set(truth))}, "
        f"missing {sorted(set(truth) - set(all_logs))}")
    wrong_all = {k: (all_logs[k]["cause"], all_logs[k]["cause_inferred"], truth[k]) for k in truth
                 if (all_logs[k]["cause"], all_logs[k]["cause_inferred"]) != (truth[k], False)}
    assert not wrong_all, f"with all logs, (cause, inferred, true cause) differ: {wrong_all}"
    wrong_broker = {k: (broker_only[k]["cause"], broker_only[k]["cause_inferred"], truth[k]) for k in truth
                    if (broker_only[k]["cause"], broker_only[k]["cause_inferred"]) != EXPECTED_BROKER_ONLY[truth[k]]}
    assert not wrong_broker, f"with broker logs only, (cause, inferred, true cause) not as expected: {wrong_broker}"
    # Both outcomes occur in the samples: causes that stay, and a cause a broker cannot name.
    assert {truth[k] for k in truth} == set(EXPECTED_BROKER_ONLY), "a cause of EXPECTED_BROKER_ONLY is not tested"


def test_nothing_is_misattributed_with_broker_logs_only(
        runs: tuple[dict[Key, dict[str, Any]], dict[Key, dict[str, Any]], Config]) -> None:
    """A cause that changes without the client logs becomes inferred or a correct generalisation, never
    another definite cause; every definite cause rests on broker lines (or records) that say it."""
    all_logs, broker_only, broker_config = runs
    misattributed = {}
    unbacked = {}
    client_lines = {}
    other_trigger = {}
    for key, a in all_logs.items():
        b = broker_only[key]
        if b["cause"] != a["cause"] and not b["cause_inferred"] and b["cause"] not in GENERALISATIONS.get(
                a["cause"], set()):
            misattributed[key] = (a["cause"], b["cause"])
        if b["cause_inferred"]:
            continue
        outside = [e["source"] for e in b["evidence"]
                   if e["source"] is not None and not _is_broker_file(e["source"], broker_config)]
        if outside:
            client_lines[key] = outside
        if not any(_justifies(e, b["cause"], broker_config) for e in b["evidence"]):
            unbacked[key] = (b["cause"], [(e["event_type"], e["cause_class"], e["source"]) for e in b["evidence"]])
        if b["trigger_member_id"] != a["trigger_member_id"]:
            other_trigger[key] = (a["trigger_member_id"], b["trigger_member_id"])
    assert not misattributed, f"definite causes that contradict the all-logs cause: {misattributed}"
    assert not client_lines, f"evidence from outside the broker logs in the broker-only run: {client_lines}"
    assert not unbacked, f"definite causes with no broker line or record that says them: {unbacked}"
    assert not other_trigger, f"definite causes that name another trigger member: {other_trigger}"
