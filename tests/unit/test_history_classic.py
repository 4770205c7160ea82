"""Classic-group histories from hand-built records and log events, expected rows written out by hand.

Each test tells a group's story (who joined, left, timed out, restarted) in records and/or in broker and
client lines, and checks the rows field by field: the generation timeline, the diff with the previous
generation, and the cause with its source (log line or inference).
"""

from __future__ import annotations

from typing import Any

from coordinator_core.history import (
    CLIENT_REJOIN,
    CREATED,
    EMPTY,
    GROUP_CREATED,
    NEVER_COMPLETED,
    STABLE,
    STATIC_RESTART,
    GenerationRow,
    MemberIdChange,
    PartitionMove,
    group_history,
)
from coordinator_core.logs import events as ev
from tests.unit.test_history_builders import at, commit, event, generation, member, placeholder

M1 = "consumer-orders-svc-1-5b0f5b53"
M2 = "consumer-orders-svc-2-a41d0c77"
M2B = "consumer-orders-svc-2-9f3e1c20"
C1, C2 = "consumer-orders-svc-1", "consumer-orders-svc-2"


def timeline(row: GenerationRow) -> tuple[Any, ...]:
    return (row.generation, row.outcome, row.rebalance_started_at, row.stabilized_at, row.assignment_stored_at,
            row.ended_at, row.ended_by, row.rebalance_ms, row.join_ms, row.sync_ms, row.lifetime_ms)


def diff(row: GenerationRow) -> tuple[Any, ...]:
    return (row.generation, row.members_joined, row.members_left, row.members_kept, row.partitions_moved,
            row.partitions_kept)


def cause(row: GenerationRow) -> tuple[Any, ...]:
    return (row.generation, row.cause, row.causes, row.cause_inferred, row.trigger_member_id)


def grow_and_shrink_records() -> list[Any]:
    """M1 alone (gen 1), M2 joins (gen 2), M2 goes away (gen 3), M1 goes away (gen 4, empty). Each record's
    current_state_timestamp is when its join phase ended, as the broker lines of the same story say."""
    return [
        placeholder(0, 9.0),
        generation(1, 10.0, 1, [member(M1, C1, assigned=[("orders", 0), ("orders", 1)])], stabilized=9.5),
        commit(2, 15.0, "orders", 0, 100),
        generation(3, 20.0, 2, [member(M1, C1, assigned=[("orders", 0)]),
                                member(M2, C2, assigned=[("orders", 1)], host="/10.0.0.2")], stabilized=19.5),
        generation(4, 30.0, 3, [member(M1, C1, assigned=[("orders", 0), ("orders", 1)])], stabilized=29.5),
        generation(5, 40.0, 4, [], stabilized=39.5),
    ]


def grow_and_shrink_events() -> list[Any]:
    """The broker lines of the same story: each round is Preparing, Stabilized/empty, Assignment received."""
    return [
        event(ev.REBALANCE_PREPARED, 9.0, generation=0, member_id=M1, cause_class=ev.NEW_MEMBER,
              reason=f"Adding new member {M1} with group instance id None; client reason: not provided"),
        event(ev.GROUP_STABILIZED, 9.5, generation=1, member_count=1),
        event(ev.ASSIGNMENT_RECEIVED, 9.6, generation=1, member_id=M1, member_count=1),
        event(ev.REBALANCE_PREPARED, 19.0, generation=1, member_id=M2, cause_class=ev.NEW_MEMBER,
              reason=f"Adding new member {M2} with group instance id None; client reason: not provided"),
        event(ev.GROUP_STABILIZED, 19.5, generation=2, member_count=2),
        event(ev.ASSIGNMENT_RECEIVED, 19.6, generation=2, member_id=M1, member_count=2),
        event(ev.MEMBER_FAILED_SESSION_TIMEOUT, 28.9, member_id=M2, cause_class=ev.SESSION_TIMEOUT),
        event(ev.REBALANCE_PREPARED, 29.0, generation=2, member_id=M2, cause_class=ev.SESSION_TIMEOUT,
              reason=f"removing member {M2} on heartbeat expiration"),
        event(ev.GROUP_STABILIZED, 29.5, generation=3, member_count=1),
        event(ev.ASSIGNMENT_RECEIVED, 29.6, generation=3, member_id=M1, member_count=1),
        event(ev.MEMBER_LEFT, 38.9, member_id=M1, cause_class=ev.MEMBER_LEFT_CAUSE,
              reason="the consumer is being closed", client_reason="the consumer is being closed"),
        event(ev.REBALANCE_PREPARED, 39.0, generation=3, cause_class=ev.MEMBER_LEFT_CAUSE,
              reason=f"explicit `LeaveGroup` request for ({M1}) members."),
        event(ev.GROUP_EMPTY, 39.5, generation=4),
    ]


def test_records_only_rows_diff_and_inferred_causes() -> None:
    rows = group_history(grow_and_shrink_records())
    # The join phase's end from each record's current_state_timestamp; a generation ends where the next
    # one's first known time is (its stabilization: no "Preparing" line here).
    assert [timeline(r) for r in rows] == [
        (0, CREATED, None, None, at(9), at(9.5), "next_generation", None, None, None, 500),
        (1, STABLE, None, at(9.5), at(10), at(19.5), "next_generation", None, None, 500, 9500),
        (2, STABLE, None, at(19.5), at(20), at(29.5), "next_generation", None, None, 500, 9500),
        (3, STABLE, None, at(29.5), at(30), at(39.5), "next_generation", None, None, 500, 9500),
        (4, EMPTY, None, at(39.5), at(40), None, None, None, None, 500, None),
    ]
    assert [diff(r) for r in rows] == [
        (0, (), (), (), (), 0),
        (1, (M1,), (), (), (PartitionMove("orders", 0, None, M1, None), PartitionMove("orders", 1, None, M1, None)),
         0),
        (2, (M2,), (), (M1,), (PartitionMove("orders", 1, M1, M2, None),), 1),
        (3, (), (M2,), (M1,), (PartitionMove("orders", 1, M2, M1, None),), 1),
        (4, (), (M1,), (), (PartitionMove("orders", 0, M1, None, None), PartitionMove("orders", 1, M1, None, None)),
         0),
    ]
    assert [cause(r) for r in rows] == [
        (0, GROUP_CREATED, (GROUP_CREATED,), False, None),
        (1, ev.NEW_MEMBER, (ev.NEW_MEMBER,), True, None),
        (2, ev.NEW_MEMBER, (ev.NEW_MEMBER,), True, None),
        (3, ev.MEMBER_LEFT_CAUSE, (ev.MEMBER_LEFT_CAUSE,), True, None),
        (4, ev.MEMBER_LEFT_CAUSE, (ev.MEMBER_LEFT_CAUSE,), True, None),
    ]
    assert [(e.event_type, e.at, e.cause_class) for e in rows[0].evidence] == [
        ("record:group_metadata", at(9), GROUP_CREATED)]
    assert rows[1].inference == "members ['consumer-orders-svc-1-5b0f5b53'] joined"
    assert rows[3].inference == ("members ['consumer-orders-svc-2-a41d0c77'] left (a leave, a session timeout and a "
                                 "poll timeout look the same in the records)")
    assert [(r.from_records, r.from_logs, r.record_offset, r.protocol, r.leader, r.member_count) for r in rows] == [
        (True, False, 0, None, None, 0), (True, False, 1, "range", M1, 1), (True, False, 3, "range", M1, 2),
        (True, False, 4, "range", M1, 1),
        (True, False, 5, None, None, 0)]


def test_first_row_in_full() -> None:
    """Every field of one row, so a field the history forgets to fill shows up here. Without the 3.7+
    placeholder record (an older broker), generation 1 is the group's first row."""
    first = group_history(grow_and_shrink_records()[1:])[0]
    m1 = first.members[0]
    assert (m1.member_id, m1.group_instance_id, m1.client_id, m1.client_host, m1.subscribed_topics,
            [(p.topic, p.partition) for p in m1.assigned_partitions], m1.owned_partitions, m1.target_partitions,
            m1.partitions_pending_revocation, m1.member_epoch, m1.previous_member_epoch, m1.member_state,
            m1.rebalance_timeout_ms, m1.session_timeout_ms) == (
        M1, None, C1, "10.0.0.1", ("orders",), [("orders", 0), ("orders", 1)], (), (), (), None, None, None, 300000,
        45000)
    assert first == GenerationRow(
        group_id="orders-svc", group_protocol="classic", generation=1, outcome=STABLE, protocol_type="consumer",
        protocol="range", leader=M1, group_epoch=None, target_assignment_epoch=None, member_count=1,
        members=(m1,), rebalance_started_at=None, stabilized_at=at(9.5), assignment_stored_at=at(10),
        ended_at=at(19.5), ended_by="next_generation", rebalance_ms=None, join_ms=None, sync_ms=500, lifetime_ms=9500,
        previous_generation=None, members_joined=(M1,), members_left=(), members_kept=(), member_id_changes=(),
        static_restarts=0, partitions_moved=(), partitions_kept=0, partitions_revoked_then_assigned=(),
        cooperative_round=None, cause="new_member", causes=("new_member",), cause_inferred=True,
        inference="the group's first generation: its first members joined", trigger_member_id=None, evidence=(),
        from_records=True, from_logs=False, record_offset=1, record_count=1,
    )


def test_records_and_logs_times_durations_and_causes_from_lines() -> None:
    records = grow_and_shrink_records()
    # The broker stores each assignment just after "Assignment received": move the records there.
    stored = {1: 9.7, 2: 19.7, 3: 29.7, 4: 39.6}
    records = [r if r.record.kind != "group_metadata" or r.record.value.generation == 0 else
               r._replace(timestamp=int(at(stored[r.record.value.generation]).timestamp() * 1000)) for r in records]
    created, *rows = group_history(records, grow_and_shrink_events())
    assert timeline(created) == (0, CREATED, None, None, at(9), at(9), "next_generation", None, None, None, 0)
    assert [timeline(r) for r in rows] == [
        (1, STABLE, at(9), at(9.5), at(9.7), at(19), "next_generation", 700, 500, 200, 9300),
        (2, STABLE, at(19), at(19.5), at(19.7), at(29), "next_generation", 700, 500, 200, 9300),
        (3, STABLE, at(29), at(29.5), at(29.7), at(39), "next_generation", 700, 500, 200, 9300),
        (4, EMPTY, at(39), at(39.5), at(39.6), None, None, 600, 500, 100, None),
    ]
    assert [cause(r) for r in rows] == [
        (1, ev.NEW_MEMBER, (ev.NEW_MEMBER,), False, M1),
        (2, ev.NEW_MEMBER, (ev.NEW_MEMBER,), False, M2),
        (3, ev.SESSION_TIMEOUT, (ev.SESSION_TIMEOUT,), False, M2),
        (4, ev.MEMBER_LEFT_CAUSE, (ev.MEMBER_LEFT_CAUSE,), False, M1),  # named by its own "has left group" line
    ]
    assert [e.event_type for e in rows[2].evidence] == [
        ev.MEMBER_FAILED_SESSION_TIMEOUT, ev.REBALANCE_PREPARED, ev.GROUP_STABILIZED, ev.ASSIGNMENT_RECEIVED]
    assert [(e.at, e.member_id, e.cause_class) for e in rows[2].evidence[:2]] == [
        (at(28.9), M2, ev.SESSION_TIMEOUT), (at(29), M2, ev.SESSION_TIMEOUT)]
    assert [(r.from_records, r.from_logs) for r in rows] == [(True, True)] * 4
    # The diff still comes from the records.
    assert [diff(r) for r in rows][1] == (2, (M2,), (), (M1,), (PartitionMove("orders", 1, M1, M2, None),), 1)


def test_logs_only() -> None:
    rows = group_history(events=grow_and_shrink_events())
    assert [timeline(r) for r in rows] == [
        (1, STABLE, at(9), at(9.5), at(9.6), at(19), "next_generation", 600, 500, 100, 9400),
        (2, STABLE, at(19), at(19.5), at(19.6), at(29), "next_generation", 600, 500, 100, 9400),
        (3, STABLE, at(29), at(29.5), at(29.6), at(39), "next_generation", 600, 500, 100, 9400),
        (4, EMPTY, at(39), at(39.5), at(39.5), None, None, 500, 500, 0, None),
    ]
    assert [(r.generation, r.group_id, r.leader, r.member_count, r.members, r.members_joined, r.members_left,
             r.from_records, r.from_logs, r.record_offset) for r in rows] == [
        (1, "orders-svc", M1, 1, (), (M1,), (), False, True, None),
        (2, "orders-svc", M1, 2, (), (M2,), (), False, True, None),
        (3, "orders-svc", M1, 1, (), (), (M2,), False, True, None),
        (4, "orders-svc", None, 0, (), (), (M1,), False, True, None),
    ]
    assert [cause(r) for r in rows] == [
        (1, ev.NEW_MEMBER, (ev.NEW_MEMBER,), False, M1),
        (2, ev.NEW_MEMBER, (ev.NEW_MEMBER,), False, M2),
        (3, ev.SESSION_TIMEOUT, (ev.SESSION_TIMEOUT,), False, M2),
        (4, ev.MEMBER_LEFT_CAUSE, (ev.MEMBER_LEFT_CAUSE,), False, M1),
    ]


def test_logs_only_members_from_client_lines() -> None:
    events = [
        event(ev.REBALANCE_PREPARED, 9.0, generation=0, member_id=M1, cause_class=ev.NEW_MEMBER),
        event(ev.CLIENT_JOINED, 9.5, generation=1, member_id=M1, client_id=C1, protocol="range"),
        event(ev.CLIENT_SYNCED, 9.6, generation=1, member_id=M1, client_id=C1),
        event(ev.GROUP_STABILIZED, 9.5, generation=1),
        event(ev.ASSIGNMENT_RECEIVED, 9.6, generation=1, member_id=M1),
    ]
    (row,) = group_history(events=events)
    assert [(m.member_id, m.client_id, m.assigned_partitions) for m in row.members] == [(M1, C1, ())]
    assert (row.member_count, row.members_joined) == (None, (M1,))


def test_pre_2_1_preparing_line_without_reason_takes_the_cause_from_the_membership_line() -> None:
    events = [
        event(ev.GROUP_STABILIZED, 9.5, generation=1),
        event(ev.ASSIGNMENT_RECEIVED, 9.6, generation=1),
        event(ev.MEMBER_FAILED_SESSION_TIMEOUT, 19.0, member_id=M2, cause_class=ev.SESSION_TIMEOUT),
        event(ev.REBALANCE_PREPARED, 19.0, generation=1),
        event(ev.GROUP_STABILIZED, 19.5, generation=2),
        event(ev.ASSIGNMENT_RECEIVED, 19.6, generation=2),
    ]
    rows = group_history(events=events)
    assert [cause(r) for r in rows] == [
        (1, ev.NEW_MEMBER, (ev.NEW_MEMBER,), True, None),
        (2, ev.SESSION_TIMEOUT, (ev.SESSION_TIMEOUT,), False, M2),
    ]
    assert rows[0].inference == "the group's first generation: its first members joined"


def test_poll_timeout_leave_and_same_client_rejoin() -> None:
    """M2 stops polling, its heartbeat thread sends LeaveGroup (gen 2), it polls again and rejoins with a new
    member id from the same client id and host (gen 3)."""
    records = [
        generation(1, 10.0, 1, [member(M1, C1, assigned=[("orders", 0)]),
                                member(M2, C2, assigned=[("orders", 1)], host="/10.0.0.2")]),
        generation(2, 20.0, 2, [member(M1, C1, assigned=[("orders", 0), ("orders", 1)])]),
        generation(3, 30.0, 3, [member(M1, C1, assigned=[("orders", 0)]),
                                member(M2B, C2, assigned=[("orders", 1)], host="/10.0.0.2")]),
    ]
    events = [
        event(ev.CLIENT_POLL_TIMEOUT, 18.8, client_id=C2, cause_class=ev.POLL_TIMEOUT),
        event(ev.MEMBER_LEFT, 18.9, member_id=M2, cause_class=ev.MEMBER_LEFT_CAUSE, client_reason="not provided",
              reason="not provided"),
        event(ev.REBALANCE_PREPARED, 19.0, generation=1, cause_class=ev.MEMBER_LEFT_CAUSE,
              reason=f"explicit `LeaveGroup` request for ({M2}) members."),
        event(ev.GROUP_STABILIZED, 19.5, generation=2),
    ]
    rows = group_history(records, events)
    assert [cause(r) for r in rows] == [
        (1, "new_member", ("new_member",), True, None),
        (2, ev.POLL_TIMEOUT, (ev.POLL_TIMEOUT, ev.MEMBER_LEFT_CAUSE), False, M2),
        (3, ev.NEW_MEMBER, (ev.NEW_MEMBER,), True, None),
    ]
    assert rows[2].member_id_changes == (
        MemberIdChange(CLIENT_REJOIN, M2, M2B, None, C2, "10.0.0.2", 1, at(30)),)
    assert [diff(r)[:4] for r in rows] == [(1, (M1, M2), (), ()), (2, (), (M2,), (M1,)), (3, (M2B,), (), (M1,))]
    # Records only: the leave is a member_left, inferred.
    rows = group_history(records)
    assert cause(rows[1]) == (2, ev.MEMBER_LEFT_CAUSE, (ev.MEMBER_LEFT_CAUSE,), True, None)
    assert rows[2].member_id_changes == (
        MemberIdChange(CLIENT_REJOIN, M2, M2B, None, C2, "10.0.0.2", 1, at(30)),)


def test_crash_loop_rebalance_has_a_join_and_a_session_timeout() -> None:
    """A crashed member restarts with the same client id: its join starts the round, and its old member id is
    removed on session timeout during the same round."""
    records = [
        generation(1, 10.0, 1, [member(M1, C1, assigned=[("orders", 0)]),
                                member(M2, C2, assigned=[("orders", 1)], host="/10.0.0.2")]),
        generation(2, 30.0, 2, [member(M1, C1, assigned=[("orders", 0)]),
                                member(M2B, C2, assigned=[("orders", 1)], host="/10.0.0.2")]),
    ]
    events = [
        event(ev.REBALANCE_PREPARED, 21.0, generation=1, member_id=M2B, cause_class=ev.NEW_MEMBER,
              reason=f"Adding new member {M2B} with group instance id None; client reason: not provided"),
        event(ev.MEMBER_FAILED_SESSION_TIMEOUT, 26.0, member_id=M2, cause_class=ev.SESSION_TIMEOUT),
        event(ev.GROUP_STABILIZED, 29.9, generation=2),
    ]
    (_, second) = group_history(records, events)
    assert cause(second) == (2, ev.NEW_MEMBER, (ev.NEW_MEMBER, ev.SESSION_TIMEOUT), False, M2B)
    assert second.member_id_changes == (MemberIdChange(CLIENT_REJOIN, M2, M2B, None, C2, "10.0.0.2", 1, at(30)),)
    (_, second) = group_history(records)
    assert cause(second) == (2, ev.NEW_MEMBER, (ev.NEW_MEMBER, ev.MEMBER_LEFT_CAUSE), True, None)


def test_gap_in_stored_generations_is_a_never_completed_row() -> None:
    records = [
        generation(1, 10.0, 5, [member(M1, C1, assigned=[("orders", 0), ("orders", 1)])], stabilized=9.75),
        generation(2, 53.2, 7, [member(M1, C1, assigned=[("orders", 0)]),
                                member(M2, C2, assigned=[("orders", 1)])], stabilized=53.0),
    ]
    rows = group_history(records)
    assert [(r.generation, r.outcome, r.from_records, r.from_logs, r.cause, r.cause_inferred) for r in rows] == [
        (5, STABLE, True, False, "unknown", True),
        (6, NEVER_COMPLETED, False, False, "unknown", True),
        (7, STABLE, True, False, ev.NEW_MEMBER, True),
    ]
    assert rows[1].inference is not None and rows[1].inference.startswith("generation number skipped")
    # Generation 7 is compared with 5, the last one whose members are known.
    assert diff(rows[2]) == (7, (M2,), (), (M1,), (PartitionMove("orders", 1, M1, M2, None),), 1)
    assert rows[2].previous_generation == 6

    events = [
        event(ev.REBALANCE_PREPARED, 50.0, generation=5, member_id=M2, cause_class=ev.NEW_MEMBER),
        event(ev.GROUP_STABILIZED, 51.0, generation=6),
        event(ev.REBALANCE_PREPARED, 52.0, generation=6, member_id="consumer-x", cause_class=ev.NEW_MEMBER),
        event(ev.GROUP_STABILIZED, 53.0, generation=7),
        event(ev.ASSIGNMENT_RECEIVED, 53.1, generation=7, member_id=M1),
    ]
    rows = group_history(records, events)
    assert [timeline(r) for r in rows] == [
        (5, STABLE, None, at(9.75), at(10), at(50), "next_generation", None, None, 250, 40000),
        (6, NEVER_COMPLETED, at(50), at(51), None, at(52), "next_generation", 1000, 1000, None, 1000),
        (7, STABLE, at(52), at(53), at(53.2), None, None, 1200, 1000, 200, None),
    ]
    assert [cause(r) for r in rows[1:]] == [
        (6, ev.NEW_MEMBER, (ev.NEW_MEMBER,), False, M2),
        (7, ev.NEW_MEMBER, (ev.NEW_MEMBER,), False, "consumer-x"),
    ]


def test_static_restart_within_a_generation_and_across_generations() -> None:
    a, b1, b2, b3 = "static-a-1111", "static-b-2222", "static-b-3333", "static-b-4444"
    records = [
        generation(1, 10.0, 1, [member(a, "ca", assigned=[("orders", 0)], instance="inst-a"),
                                member(b1, "cb", assigned=[("orders", 1)], instance="inst-b")]),
        # b restarts within its session timeout: same generation, stored again with the new member id.
        generation(2, 15.0, 1, [member(a, "ca", assigned=[("orders", 0)], instance="inst-a"),
                                member(b2, "cb", assigned=[("orders", 1)], instance="inst-b")]),
        # later b comes back with a new id in a new generation (it had timed out meanwhile... and a changed)
        generation(3, 30.0, 2, [member(a, "ca", assigned=[("orders", 0)], instance="inst-a"),
                                member(b3, "cb", assigned=[("orders", 1)], instance="inst-b")]),
    ]
    events = [event(ev.STATIC_MEMBER_REPLACED, 14.9, member_id=b2, related_member_id=b1,
                    group_instance_id="inst-b", cause_class=ev.STATIC_MEMBER_REPLACED_CAUSE)]
    first, second = group_history(records, events)
    assert (first.generation, first.record_count, first.static_restarts, first.member_id_changes) == (
        1, 2, 1, (MemberIdChange(STATIC_RESTART, b1, b2, "inst-b", "cb", "10.0.0.1", 1, at(15)),))
    assert [m.member_id for m in first.members] == [a, b2]
    assert [(e.event_type, e.at) for e in first.evidence] == [(ev.STATIC_MEMBER_REPLACED, at(14.9))]
    assert (second.static_restarts, second.member_id_changes) == (
        1, (MemberIdChange(STATIC_RESTART, b2, b3, "inst-b", "cb", "10.0.0.1", 1, at(30)),))
    assert cause(second) == (2, ev.STATIC_MEMBER_REPLACED_CAUSE, (ev.STATIC_MEMBER_REPLACED_CAUSE,), True, None)
    assert diff(second) == (2, (b3,), (b2,), (a,), (PartitionMove("orders", 1, b2, b3, None),), 1)


def test_static_restart_from_logs_only_is_kept_on_the_generation_in_force() -> None:
    events = [
        event(ev.GROUP_STABILIZED, 9.5, generation=1),
        event(ev.ASSIGNMENT_RECEIVED, 9.6, generation=1),
        event(ev.STATIC_MEMBER_REPLACED, 14.9, member_id="b-new", related_member_id="b-old",
              group_instance_id="inst-b", cause_class=ev.STATIC_MEMBER_REPLACED_CAUSE),
    ]
    (row,) = group_history(events=events)
    assert row.member_id_changes == (
        MemberIdChange(STATIC_RESTART, "b-old", "b-new", "inst-b", None, None, 1, at(14.9)),)
    assert row.static_restarts == 1


def test_cooperative_two_round_rebalance() -> None:
    """cooperative-sticky: M2 joins; round 1 (gen 2) revokes orders-2/3 from M1 without giving them to
    anyone, round 2 (gen 3) assigns them to M2."""
    everything = [("orders", p) for p in range(4)]
    records = [
        generation(1, 10.0, 1, [member(M1, C1, assigned=everything)], protocol="cooperative-sticky"),
        generation(2, 20.0, 2, [member(M1, C1, assigned=everything[:2], owned=everything),
                                member(M2, C2, assigned=[])], protocol="cooperative-sticky"),
        generation(3, 21.0, 3, [member(M1, C1, assigned=everything[:2], owned=everything[:2]),
                                member(M2, C2, assigned=everything[2:])], protocol="cooperative-sticky"),
    ]
    rows = group_history(records)
    assert [(r.generation, r.cooperative_round, r.cause, r.cause_inferred) for r in rows] == [
        (1, None, ev.NEW_MEMBER, True), (2, 1, ev.NEW_MEMBER, True), (3, 2, ev.COOPERATIVE_SECOND_ROUND, True)]
    assert rows[1].partitions_moved == (PartitionMove("orders", 2, M1, None, None),
                                        PartitionMove("orders", 3, M1, None, None))
    assert rows[2].partitions_moved == (PartitionMove("orders", 2, None, M2, None),
                                        PartitionMove("orders", 3, None, M2, None))
    assert rows[2].partitions_revoked_then_assigned == (PartitionMove("orders", 2, M1, M2, 2),
                                                        PartitionMove("orders", 3, M1, M2, 2))
    assert next(m.owned_partitions for m in rows[1].members)[3].partition == 3

    # With logs, the broker names the second round "Updating metadata ... need to revoke partitions".
    events = [
        event(ev.REBALANCE_PREPARED, 20.5, generation=2, member_id=M1, cause_class=ev.METADATA_CHANGE,
              reason=f"Updating metadata for member {M1} during Stable; client reason: need to revoke partitions "
                     "[orders-2, orders-3] as indicated by the current assignment and re-join"),
        event(ev.CLIENT_REJOIN_REQUESTED, 20.4, client_id=C1, cause_class=ev.COOPERATIVE_SECOND_ROUND),
        event(ev.GROUP_STABILIZED, 20.9, generation=3),
    ]
    rows = group_history(records, events)
    assert cause(rows[2]) == (3, ev.COOPERATIVE_SECOND_ROUND, (ev.COOPERATIVE_SECOND_ROUND,), False, M1)


def test_same_members_other_cause_inference() -> None:
    base = [member(M1, C1, assigned=[("orders", 0), ("orders", 1)])]
    grown = [member(M1, C1, assigned=[("orders", 0), ("orders", 1), ("orders", 2)])]
    resubscribed = [member(M1, C1, assigned=[("orders", 0), ("orders", 1), ("orders", 2)],
                           topics=("orders", "payments"))]
    rows = group_history([generation(1, 10.0, 1, base), generation(2, 20.0, 2, grown),
                          generation(3, 30.0, 3, resubscribed), generation(4, 40.0, 4, resubscribed),
                          generation(5, 50.0, 5, resubscribed, protocol="roundrobin")])
    assert [(r.generation, r.cause, r.inference) for r in rows[1:]] == [
        (2, ev.METADATA_CHANGE,
         "same members and subscriptions, another assignment (topic metadata changed, e.g. partitions added)"),
        (3, ev.METADATA_CHANGE, "same members; a subscription changed"),
        (4, "unknown", "same members, subscriptions and assignment: the records cannot tell why"),
        (5, ev.METADATA_CHANGE, "same members; the selected assignor changed from range to roundrobin"),
    ]
    assert rows[1].partitions_moved == (PartitionMove("orders", 2, None, M1, None),)


def test_group_deleted_and_recreated() -> None:
    from tests.unit.test_history_builders import group_tombstone

    records = [
        generation(1, 10.0, 1, [member(M1, C1, assigned=[("orders", 0)])]),
        generation(2, 20.0, 2, []),
        group_tombstone(3, 25.0),
        generation(4, 60.0, 1, [member(M2, C2, assigned=[("orders", 0)])]),
    ]
    rows = group_history(records)
    assert [(r.generation, r.outcome, r.ended_at, r.ended_by) for r in rows] == [
        (1, STABLE, at(20), "next_generation"), (2, EMPTY, at(25), "group_deleted"), (1, STABLE, None, None)]


def test_coordinator_failover_load_explains_a_rebalance_without_a_preparing_line() -> None:
    events = [
        event(ev.GROUP_STABILIZED, 9.5, generation=1),
        event(ev.ASSIGNMENT_RECEIVED, 9.6, generation=1),
        event(ev.OFFSETS_LOADED, 30.0, group_id=None, offsets_partition=12, cause_class=ev.COORDINATOR_FAILOVER),
        event(ev.GROUP_STABILIZED, 31.0, generation=2),
        event(ev.ASSIGNMENT_RECEIVED, 31.1, generation=2),
        # another group's line is ignored
        event(ev.MEMBER_FAILED_SESSION_TIMEOUT, 30.5, group_id="other", member_id="x",
              cause_class=ev.SESSION_TIMEOUT),
    ]
    rows = group_history(events=events, group_id="orders-svc")
    assert cause(rows[1]) == (2, ev.COORDINATOR_FAILOVER, (ev.COORDINATOR_FAILOVER,), False, None)
    assert [e.event_type for e in rows[1].evidence] == [ev.OFFSETS_LOADED, ev.GROUP_STABILIZED, ev.ASSIGNMENT_RECEIVED]


def test_client_rejoin_not_paired_when_client_ids_are_shared() -> None:
    """kafka-python's default client id is the same for every member: no pairing by client id then."""
    shared = "kafka-python-2.2.15"
    records = [
        generation(1, 10.0, 1, [member("k-1", shared, assigned=[("orders", 0)]),
                                member("k-2", shared, assigned=[("orders", 1)])]),
        generation(2, 20.0, 2, [member("k-3", shared, assigned=[("orders", 0)]),
                                member("k-4", shared, assigned=[("orders", 1)])]),
    ]
    rows = group_history(records)
    assert rows[1].member_id_changes == ()
    assert diff(rows[1])[:4] == (2, ("k-3", "k-4"), ("k-1", "k-2"), ())


def test_inputs_in_any_order_and_plain_tuples() -> None:
    records = [tuple(r[:3]) for r in reversed(grow_and_shrink_records())]
    assert [r.generation for r in group_history(records)] == [0, 1, 2, 3, 4]
    assert group_history(records) == group_history(grow_and_shrink_records())


def test_no_input_no_rows() -> None:
    assert group_history([], []) == []


def test_history_that_starts_late_does_not_guess_the_first_cause() -> None:
    """Generations 1-7 were compacted before archiving: nothing says why 8 happened, and no gap rows are
    invented before it."""
    rows = group_history([generation(0, 10.0, 8, [member(M1, C1, assigned=[("orders", 0)])])])
    assert [(r.generation, r.cause, r.causes, r.cause_inferred, r.members_joined, r.inference) for r in rows] == [
        (8, "unknown", ("unknown",), True, (), "no earlier generation with known members to compare with")]
