"""The real-broker sample (samples/kafka-4.3.1): every scenario's history rebuilt from its segments and logs
must match what the scenario's clients reported (scenarios.json).

Expected generations, members, member ids, assignments, static restarts and KIP-848 steps come from
scenarios.json. The scenario's cause vocabulary maps onto cause classes as below; the mapping is the
claim under test, with what each source can and cannot tell:

* ``group_created``: ``group_created`` (the 3.7+ placeholder record, generation 0; no line logs it, so the
  logs alone start at generation 1).
* ``join`` / ``rejoin``: ``new_member`` (a rejoin also shows as a ``client_rejoin`` member-id change).
* ``leave_group``: ``member_left``.
* ``max_poll_interval_exceeded``: ``poll_timeout`` with the logs, ``member_left`` from records alone.
  kafka-python's heartbeat thread sends a LeaveGroup with no client reason ("not provided"), so the broker's
  lines and the records show a plain leave; the client's own "Consumer poll timeout has expired" warning
  (logged by the thread named ``<group id>-heartbeat``, which names the group) says why. The member that
  left is the scenario's trigger, with the member id it had in the generation before.
* ``session_timeout``: ``session_timeout`` from the broker lines; ``member_left`` from records alone.
* ``join+session_timeout``: ``new_member`` first, then ``session_timeout`` (``member_left`` from records).
* ``cooperative_follow_up``: ``cooperative_second_round``.
"""

from __future__ import annotations

import functools
import json
import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import coordinator_core as cc
from coordinator_core.history import (
    CLIENT_REJOIN,
    CONSUMER,
    CREATED,
    DELETED,
    EMPTY,
    GROUP_CREATED,
    GROUP_DELETED,
    STABLE,
    STATIC_RESTART,
    GenerationRow,
    GroupRecord,
    group_history,
    offset_history,
)
from coordinator_core.logs import CoordinatorEvent, read_log_lines
from coordinator_core.logs import events as ev

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "kafka-4.3.1"

CLASSIC_SCENARIOS = ["range-grow", "member-leave", "member-killed", "max-poll-exceeded", "static-members",
                     "roundrobin-group", "sticky-group", "cooperative-sticky", "group-deleted", "storm-poll-timeout",
                     "storm-crash-loop"]

#: scenario cause -> (cause with the broker's lines, cause from records alone)
CAUSES = {
    "group_created": (GROUP_CREATED, GROUP_CREATED),
    "join": (ev.NEW_MEMBER, ev.NEW_MEMBER),
    "rejoin": (ev.NEW_MEMBER, ev.NEW_MEMBER),
    "leave_group": (ev.MEMBER_LEFT_CAUSE, ev.MEMBER_LEFT_CAUSE),
    "max_poll_interval_exceeded": (ev.POLL_TIMEOUT, ev.MEMBER_LEFT_CAUSE),
    "session_timeout": (ev.SESSION_TIMEOUT, ev.MEMBER_LEFT_CAUSE),
    "join+session_timeout": (ev.NEW_MEMBER, ev.NEW_MEMBER),
    "cooperative_follow_up": (ev.COOPERATIVE_SECOND_ROUND, ev.COOPERATIVE_SECOND_ROUND),
}
#: second causes a scenario cause implies, with lines / from records alone
ALSO = {"join+session_timeout": (ev.SESSION_TIMEOUT, ev.MEMBER_LEFT_CAUSE)}


@dataclass
class Sample:
    records: dict[str, list[GroupRecord]]
    events: dict[str | None, list[CoordinatorEvent]]
    scenarios: dict[str, Any]

    def group_events(self, group: str) -> list[CoordinatorEvent]:
        return self.events[group] + self.events[None]


def sample() -> Sample:
    return load_sample(SAMPLE)


@functools.lru_cache(maxsize=3)
def load_sample(root: Path) -> Sample:
    """Every record of every segment by group (transactional commits marked with their outcome; records the
    decoder rejects are left out, as the pipeline quarantines them), and every parsed log line by group."""
    records: dict[str, list[GroupRecord]] = defaultdict(list)
    for directory in sorted(root.glob("__consumer_offsets-*")):
        pending: dict[int, list[tuple[str, int]]] = defaultdict(list)   # producer id -> (group, index)
        for segment in sorted(directory.glob("*.log")):
            for entry in cc.read_segment(str(segment)):
                if entry.is_control:
                    marker = int.from_bytes(entry.key[2:4], "big") if entry.key else -1
                    outcome = {0: "aborted", 1: "committed"}.get(marker)
                    for group, index in pending.pop(entry.producer_id, []):
                        records[group][index] = records[group][index]._replace(transaction_outcome=outcome)
                    continue
                try:
                    record = cc.decode_record(entry.key, entry.value)
                except cc.DecodeError:
                    continue
                group = getattr(record.key, "group", None) or getattr(record.key, "group_id", None)
                records[group].append(GroupRecord(entry.offset, entry.timestamp, record,
                                                  "open" if entry.is_transactional else None))
                if entry.is_transactional:
                    pending[entry.producer_id].append((group, len(records[group]) - 1))
    events: dict[str | None, list[CoordinatorEvent]] = defaultdict(list)
    for path in [root / "broker" / "server.log", *sorted((root / "clients").glob("*.log"))]:
        for event in read_log_lines(str(path), source=os.path.basename(path)):
            events[event.group_id].append(event)
    scenarios = json.loads((root / "scenarios.json").read_text())["scenarios"]
    return Sample(records, events, scenarios)


def outcome(generation: dict[str, Any]) -> str:
    if generation["cause"] == "group_created":
        return CREATED
    return STABLE if generation["members"] else EMPTY


def clients(row: GenerationRow) -> list[str | None]:
    return sorted((m.client_id for m in row.members), key=str)


@pytest.mark.parametrize("name", CLASSIC_SCENARIOS)
def test_classic_scenario_records_and_logs(name: str) -> None:
    s = sample()
    scenario = s.scenarios[name]
    group = scenario["group_id"]
    expected = scenario["generations"]
    rows = group_history(s.records[group], s.group_events(group), group_id=group)
    assert [r.generation for r in rows] == [g["generation"] for g in expected]
    for row, g in zip(rows, expected, strict=True):
        where = f"{name} generation {g['generation']}"
        assert (row.outcome, clients(row)) == (outcome(g), g["members"]), where
        # A static member restarted inside the generation: the row shows the member id it ended with.
        renamed = {r["old_member_id"]: r["new_member_id"] for r in scenario["static_restarts"]
                   if r["generation"] == g["generation"]}
        assert {m.client_id: m.member_id for m in row.members} == {
            c: renamed.get(i, i) for c, i in g["member_ids"].items()}, where
        assigned = {m.client_id: sorted([p.topic, p.partition] for p in m.assigned_partitions) for m in row.members}
        if name == "cooperative-sticky":
            # The testbed's Java members report, in a cooperative round, the partitions *added* in it (their
            # "Adding newly assigned partitions" line), not the whole assignment: those must be in it.
            assert {c: [p for p in ps if p not in assigned[c]] for c, ps in g["assignment"].items()} == {
                c: [] for c in g["assignment"]}, where
        else:
            assert assigned == g["assignment"], where
        assert {m.client_id: m.group_instance_id for m in row.members if m.group_instance_id} == \
            {c: i for c, i in g["group_instance_ids"].items() if c in g["member_ids"]}, where
        assert row.protocol == g["protocol"], where
        assert (row.from_records, row.from_logs) == (True, row.outcome != CREATED), where
        assert row.cause == CAUSES[g["cause"]][0] and not row.cause_inferred, (where, row.cause, row.evidence)
        if g["cause"] in ALSO:
            assert ALSO[g["cause"]][0] in row.causes, where
        if g["cause"] in ("join", "join+session_timeout"):
            assert row.trigger_member_id == g["member_ids"][g["trigger"]], where
        if g["cause"] in ("leave_group", "session_timeout", "max_poll_interval_exceeded") and g["trigger"]:
            # The member that left (or was removed) is named by the previous generation.
            before = expected[expected.index(g) - 1]
            assert row.trigger_member_id == before["member_ids"][g["trigger"]], (where, row.trigger_member_id)
        if g["cause"] == "rejoin":
            assert [(c.kind, c.client_id, c.new_member_id) for c in row.member_id_changes] == [
                (CLIENT_REJOIN, g["trigger"], g["member_ids"][g["trigger"]])], where
        if g["cause"] == "cooperative_follow_up":
            assert row.cooperative_round == 2 and row.partitions_revoked_then_assigned, where
        if g["cause"] == "max_poll_interval_exceeded":
            before = expected[expected.index(g) - 1]
            assert row.members_left == (before["member_ids"][g["trigger"]],), where
            assert ev.CLIENT_POLL_TIMEOUT in {e.event_type for e in row.evidence}, where
        # Every round's times are ordered: started <= stabilized <= stored <= ended.
        times = [t for t in (row.rebalance_started_at, row.stabilized_at, row.assignment_stored_at, row.ended_at)
                 if t is not None]
        assert times == sorted(times) and (row.rebalance_started_at is not None) == (row.outcome != CREATED), where
    restarts = [(c.kind, c.old_member_id, c.new_member_id, c.group_instance_id, c.client_id, row.generation)
                for row in rows for c in row.member_id_changes if c.kind == STATIC_RESTART]
    assert restarts == [(STATIC_RESTART, r["old_member_id"], r["new_member_id"], r["group_instance_id"],
                         r["client_id"], r["generation"]) for r in scenario["static_restarts"]]
    if scenario["final_state"] == "Dead":
        assert rows[-1].ended_by == "group_deleted"


@pytest.mark.parametrize("name", CLASSIC_SCENARIOS)
def test_classic_scenario_records_only(name: str) -> None:
    s = sample()
    scenario = s.scenarios[name]
    group = scenario["group_id"]
    rows = group_history(s.records[group], group_id=group)
    assert [(r.generation, clients(r)) for r in rows] == [
        (g["generation"], g["members"]) for g in scenario["generations"]]
    for row, g in zip(rows, scenario["generations"], strict=True):
        where = f"{name} generation {g['generation']}"
        inferred = g["cause"] != "group_created"   # the placeholder record says it outright
        assert (row.cause, row.cause_inferred, row.from_logs) == (CAUSES[g["cause"]][1], inferred, False), where
        if g["cause"] in ALSO:
            assert ALSO[g["cause"]][1] in row.causes, where


@pytest.mark.parametrize("name", CLASSIC_SCENARIOS)
def test_classic_scenario_logs_only(name: str) -> None:
    s = sample()
    scenario = s.scenarios[name]
    group = scenario["group_id"]
    rows = group_history(events=s.group_events(group), group_id=group)
    logged = [g for g in scenario["generations"] if g["cause"] != "group_created"]
    assert [(r.generation, r.outcome, r.cause) for r in rows] == [
        (g["generation"], outcome(g), CAUSES[g["cause"]][0]) for g in logged]
    for row, g in zip(rows, logged, strict=True):
        if g["cause"] in ("join", "rejoin"):
            assert g["member_ids"][g["trigger"]] in row.members_joined, (name, g["generation"])
        if g["cause"] == "max_poll_interval_exceeded":
            before = scenario["generations"][scenario["generations"].index(g) - 1]
            assert row.members_left == (before["member_ids"][g["trigger"]],), (name, g["generation"])
        assert (row.from_records, row.from_logs, row.member_count) == (False, True, len(g["members"]))


def consumer_protocol_expectations() -> tuple[str, list[dict[str, Any]]]:
    scenario = sample().scenarios["consumer-protocol"]
    return scenario["group_id"], scenario["consumer_group_steps"]


def test_consumer_protocol_scenario() -> None:
    s = sample()
    group, steps = consumer_protocol_expectations()
    for rows, inferred in ((group_history(s.records[group], s.group_events(group), group_id=group), False),
                           (group_history(s.records[group], group_id=group), True),
                           (group_history(events=s.group_events(group), group_id=group), False)):
        assert [sorted(m.member_id for m in r.members) for r in rows] == [
            sorted(step["member_ids"].values()) for step in steps]
        assert {r.group_protocol for r in rows} == {CONSUMER}
        assert [r.group_epoch for r in rows] == [r.generation for r in rows]
        assert [(r.outcome, r.cause, r.cause_inferred) for r in rows] == [
            (STABLE, ev.NEW_MEMBER, inferred), (STABLE, ev.NEW_MEMBER, inferred),
            (STABLE, ev.MEMBER_LEFT_CAUSE, inferred), (EMPTY, ev.MEMBER_LEFT_CAUSE, inferred)]
    rows = group_history(s.records[group], s.group_events(group), group_id=group)
    for row, step in zip(rows, steps, strict=True):
        by_member = {m.member_id: m for m in row.members}
        # Topic names: the KIP-848 records name topics by id only; the group's v4 offset commits map them.
        assert {c: sorted([p.topic, p.partition] for p in by_member[i].assigned_partitions)
                for c, i in step["member_ids"].items()} == {
            c: sorted(step["assignment"][c]) for c in step["member_ids"]}
        assert all((m.member_epoch, m.member_state) == (row.generation, "STABLE") for m in row.members)
    # The second member got its partitions only after the first one revoked them.
    second = steps[1]["member_ids"][sorted(steps[1]["member_ids"])[1]]
    first = steps[0]["member_ids"][sorted(steps[0]["member_ids"])[0]]
    assert sorted((m.partition, m.from_member, m.to_member) for m in rows[1].partitions_revoked_then_assigned) == [
        (p, first, second) for _, p in sorted(steps[1]["assignment"][sorted(steps[1]["member_ids"])[1]])]


def test_group_deleted_offsets() -> None:
    s = sample()
    scenario = s.scenarios["group-deleted"]
    group = scenario["group_id"]
    rows = offset_history(s.records[group], s.group_events(group), group_id=group)
    deleted = {f"{r.topic}-{r.partition}": r.previous_offset for r in rows if r.kind == DELETED}
    assert deleted == scenario["committed_offsets"]
    assert [r.kind for r in rows if r.kind != DELETED] == [GROUP_DELETED]


def test_transactional_group_has_no_generations_and_no_offset_events() -> None:
    """Only TxnOffsetCommits: no GroupMetadata, so no generations; the aborted commit never counts and the
    committed ones are an offsets-only group's normal commits."""
    s = sample()
    scenario = s.scenarios["transactions"]
    group = scenario["group_id"]
    records = s.records[group]
    assert sorted((r.record.key.partition, r.record.value.offset, r.transaction_outcome) for r in records
                  if r.record.kind == "offset_commit") == sorted(
        (int(tp.rsplit("-", 1)[1]), o, "committed" if t["outcome"] == "commit" else "aborted")
        for t in scenario["transactions"] for tp, o in t["offsets"].items())
    assert group_history(records, s.group_events(group), group_id=group) == []
    assert offset_history(records, s.group_events(group), group_id=group) == []
