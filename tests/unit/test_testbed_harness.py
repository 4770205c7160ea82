"""The scenario harness's own bookkeeping: a cooperative round a joiner never synced into.

The live scenarios record each generation as the members saw it. A joiner can miss the first round of a
cooperative rebalance (its SyncGroup arrives after the leader already revoked and rejoined); the harness
then takes that member's part of the round from the leader's "Finished assignment" log line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kafka_testbed.scenarios import (
    GroupTracker,
    JavaConsoleMember,
    MemberView,
    ScenarioError,
    ScenarioRecord,
)

LEADER = "cooperative-sticky-a-5bc7503b-6059-4c30-b124-4e7e056cedc3"
JOINER = "cooperative-sticky-b-8a130c4a-2c6f-4235-8781-2ae16be2d712"
PREFIX = "[2026-11-21 05:32:15,859] INFO [Consumer clientId=cooperative-sticky-a, groupId=g] "
SUFFIX = " (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)"


def _leader_line(generation: int, assignment: dict[str, str]) -> str:
    body = ", ".join(f"{m}=Assignment(partitions=[{ps}])" for m, ps in assignment.items())
    return f"{PREFIX}Finished assignment for group at generation {generation}: {{{body}}}{SUFFIX}\n"


class _LoggedJavaMember(JavaConsoleMember):
    """A JavaConsoleMember reading a prepared log, with a fixed current view and history."""

    def __init__(self, client_id: str, log_file: Path, view: MemberView, history: dict[int, MemberView]) -> None:
        self.client_id = client_id
        self.log_file = log_file
        self._offset = 0
        self._view = view
        self._history = history

    def view(self) -> MemberView | None:
        return self._view

    def history(self) -> dict[int, MemberView]:
        return dict(self._history)


def _tracker(members: list[JavaConsoleMember]) -> GroupTracker:
    record = ScenarioRecord(
        name="coop",
        group_id="g",
        description="",
        client="java",
        group_protocol="classic",
        protocol_type="consumer",
        assignor="cooperative-sticky",
        topics={"t": 6},
    )
    tracker = GroupTracker.__new__(GroupTracker)
    tracker.ctx = None  # type: ignore[assignment]
    tracker.record = record
    tracker.members = {m.client_id: m for m in members}
    tracker.retired = []
    tracker.last_generation = 1
    return tracker


def test_leader_assignments_parse_a_real_leader_log() -> None:
    log = Path("samples/kafka-4.3.1/clients/java-cooperative-sticky-a.log")
    member = _LoggedJavaMember("cooperative-sticky-a", log, MemberView(7, LEADER, "cooperative-sticky", True, []), {})
    rounds = member.leader_assignments()
    assert rounds[2] == {JOINER: [], LEADER: [["cgh.cooperative-sticky", p] for p in (0, 1, 2)]}
    assert rounds[3][JOINER] == [["cgh.cooperative-sticky", p] for p in (3, 4, 5)]
    assert sorted(rounds) == [1, 2, 3, 4, 5, 6, 7]


def test_a_joiner_that_missed_the_revoke_round_is_taken_from_the_leader(tmp_path: Path) -> None:
    log_a = tmp_path / "a.log"
    log_a.write_text(
        _leader_line(2, {JOINER: "", LEADER: "t-0, t-1, t-2"})
        + _leader_line(3, {JOINER: "t-3, t-4, t-5", LEADER: "t-0, t-1, t-2"})
    )
    (tmp_path / "b.log").write_text("")
    leader_round = MemberView(2, LEADER, "cooperative-sticky", True, [["t", 0], ["t", 1], ["t", 2]])
    leader = _LoggedJavaMember("a", log_a, MemberView(3, LEADER, "cooperative-sticky", True, []), {2: leader_round})
    joiner = _LoggedJavaMember("b", tmp_path / "b.log", MemberView(3, JOINER, "cooperative-sticky", True, []), {})
    tracker = _tracker([leader, joiner])

    tracker._record(2, "join", "b", from_history=True)

    (generation,) = tracker.record.generations
    assert generation.generation == 2
    assert generation.member_ids == {"a": LEADER, "b": JOINER}
    assert generation.assignment == {"a": [["t", 0], ["t", 1], ["t", 2]], "b": []}
    assert generation.protocol == "cooperative-sticky"


def test_a_member_the_leader_did_not_list_still_fails(tmp_path: Path) -> None:
    log_a = tmp_path / "a.log"
    log_a.write_text(_leader_line(2, {LEADER: "t-0"}))
    (tmp_path / "b.log").write_text("")
    leader = _LoggedJavaMember(
        "a",
        log_a,
        MemberView(3, LEADER, "cooperative-sticky", True, []),
        {2: MemberView(2, LEADER, "cooperative-sticky", True, [["t", 0]])},
    )
    joiner = _LoggedJavaMember("b", tmp_path / "b.log", MemberView(3, JOINER, "cooperative-sticky", True, []), {})
    with pytest.raises(ScenarioError, match="b did not report generation 2"):
        _tracker([leader, joiner])._record(2, "join", "b", from_history=True)
