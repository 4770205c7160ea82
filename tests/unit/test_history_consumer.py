"""KIP-848 group epochs and a classic -> consumer protocol upgrade, from hand-built records and log events.

The record sequences follow what the group coordinator writes for a heartbeat that changes the group:
the member record (or its tombstone), the group epoch, the target assignment (members, then its epoch),
then each member's current assignment as it reconciles.
"""

from __future__ import annotations

from typing import Any

from coordinator_core.history import CONSUMER, EMPTY, MISSING, STABLE, GenerationRow, PartitionMove, group_history
from coordinator_core.logs import events as ev
from tests.unit.test_history_builders import (
    at,
    cg_current,
    cg_epoch,
    cg_member,
    cg_target,
    cg_target_epoch,
    cg_topics,
    event,
    generation,
    group_tombstone,
    member,
    topic_id,
)

T1 = topic_id(1)
A = "Jx3aP0c9Qb2yK8vW1zL5nA"
B = "Qm7rT2xW9eL4pZ1cV8bN3s"
C = "Zk2pW8vQ1mN5bX7cL3rT9a"


def kip848_records() -> list[Any]:
    """A joins (epoch 1); B joins (epoch 2): A revokes orders-2/3, then B gets them; B leaves (epoch 3)."""
    return [
        cg_member(1, 10.0, A, "client-a", assignor="uniform"),
        cg_epoch(2, 10.0, 1),
        cg_topics(3, 10.0, {T1: ("orders", 4)}),
        cg_target(4, 10.0, A, {T1: [0, 1, 2, 3]}),
        cg_target_epoch(5, 10.0, 1),
        cg_current(6, 10.5, A, 1, 0, 0, {T1: [0, 1, 2, 3]}),
        cg_member(7, 20.0, B, "client-b", host="/10.0.0.2", assignor="uniform"),
        cg_epoch(8, 20.0, 2),
        cg_target(9, 20.0, A, {T1: [0, 1]}),
        cg_target(10, 20.0, B, {T1: [2, 3]}),
        cg_target_epoch(11, 20.0, 2),
        cg_current(12, 20.2, A, 2, 1, 1, {T1: [0, 1]}, pending={T1: [2, 3]}),
        cg_current(13, 20.3, B, 2, 0, 2, {}),
        cg_current(14, 21.0, A, 2, 1, 0, {T1: [0, 1]}),
        cg_current(15, 21.5, B, 2, 0, 0, {T1: [2, 3]}),
        # B leaves: its records are deleted, then the epoch is bumped and A gets everything.
        tombstone(16, 30.0, 8, B),
        tombstone(17, 30.0, 7, B),
        cg_member(18, 30.0, B, None),
        cg_epoch(19, 30.0, 3),
        cg_target(20, 30.0, A, {T1: [0, 1, 2, 3]}),
        cg_target_epoch(21, 30.0, 3),
        cg_current(22, 30.5, A, 3, 2, 0, {T1: [0, 1, 2, 3]}),
    ]


def tombstone(offset: int, seconds: float, record_type: int, member_id: str) -> Any:
    """A member-level tombstone (7: target assignment, 8: current assignment) of a leaving member."""
    from coordinator_core import messages as m
    from coordinator_core.records import Record
    from tests.unit.test_history_builders import gr

    return gr(offset, seconds, Record(record_type, m.GroupMemberKey("orders-svc", member_id), None, None))


def summary(row: GenerationRow) -> tuple[Any, ...]:
    return (row.group_protocol, row.generation, row.group_epoch, row.target_assignment_epoch, row.outcome,
            row.protocol, row.rebalance_started_at, row.assignment_stored_at, row.stabilized_at, row.ended_at)


def test_kip848_epochs_from_records() -> None:
    rows = group_history(kip848_records())
    assert [summary(r) for r in rows] == [
        (CONSUMER, 1, 1, 1, STABLE, "uniform", at(10), at(10), at(10.5), at(20)),
        (CONSUMER, 2, 2, 2, STABLE, "uniform", at(20), at(20), at(21.5), at(30)),
        (CONSUMER, 3, 3, 3, STABLE, "uniform", at(30), at(30), at(30.5), None),
    ]
    # join_ms: bump -> target stored; sync_ms: stored -> every member reconciled.
    assert [(r.rebalance_ms, r.join_ms, r.sync_ms, r.lifetime_ms) for r in rows] == [
        (500, 0, 500, 9500), (1500, 0, 1500, 8500), (500, 0, 500, None)]
    assert [(r.members_joined, r.members_left, r.members_kept) for r in rows] == [
        ((A,), (), ()), ((B,), (), (A,)), ((), (B,), (A,))]
    assert [(r.cause, r.causes, r.cause_inferred, r.trigger_member_id, r.inference) for r in rows] == [
        (ev.NEW_MEMBER, (ev.NEW_MEMBER,), True, A, "from the member records written before the epoch bump"),
        (ev.NEW_MEMBER, (ev.NEW_MEMBER,), True, B, "from the member records written before the epoch bump"),
        (ev.MEMBER_LEFT_CAUSE, (ev.MEMBER_LEFT_CAUSE,), True, B,
         "from the member records written before the epoch bump"),
    ]
    second = rows[1]
    assert [(m.member_id, m.client_id, m.client_host, m.member_epoch, m.previous_member_epoch, m.member_state,
             [(p.topic, p.partition) for p in m.assigned_partitions],
             [(p.topic, p.partition) for p in m.target_partitions], m.partitions_pending_revocation)
            for m in second.members] == [
        (A, "client-a", "10.0.0.1", 2, 1, "STABLE", [("orders", 0), ("orders", 1)], [("orders", 0), ("orders", 1)],
         ()),
        (B, "client-b", "10.0.0.2", 2, 0, "STABLE", [("orders", 2), ("orders", 3)], [("orders", 2), ("orders", 3)],
         ()),
    ]
    assert second.partitions_moved == (PartitionMove("orders", 2, A, B, None), PartitionMove("orders", 3, A, B, None))
    assert second.partitions_revoked_then_assigned == (PartitionMove("orders", 2, A, B, 2),
                                                       PartitionMove("orders", 3, A, B, 2))
    assert (second.cooperative_round, second.partitions_kept, second.leader) == (2, 2, None)
    assert [e.event_type for e in second.evidence] == ["record:consumer_group_member_metadata"]
    assert (rows[2].record_count, rows[2].record_offset) == (4, 19)


def test_kip848_member_still_reconciling_at_the_end_of_an_epoch() -> None:
    records = kip848_records()[:13]   # B joined, A has not yet revoked
    rows = group_history(records)
    assert rows[1].stabilized_at is None
    assert [(m.member_id, m.member_state, [(p.topic, p.partition) for p in m.partitions_pending_revocation])
            for m in rows[1].members] == [
        (A, "UNREVOKED_PARTITIONS", [("orders", 2), ("orders", 3)]), (B, "UNRELEASED_PARTITIONS", [])]


def test_kip848_topic_ids_without_names_stay_ids() -> None:
    records = [r for r in kip848_records() if r.record.kind != "consumer_group_partition_metadata"]
    rows = group_history(records)
    assert [(p.topic, p.partition) for p in rows[0].members[0].assigned_partitions] == [(T1, p) for p in range(4)]
    named = group_history(records, topic_names={T1: "orders"})
    assert [(p.topic, p.partition) for p in named[0].members[0].assigned_partitions] == [
        ("orders", p) for p in range(4)]


def test_kip848_topic_names_from_the_groups_v4_offset_commits() -> None:
    """From 4.1 no partition-metadata record is written; a v4 offset commit pairs the topic id with its name."""
    from coordinator_core import messages as m
    from coordinator_core.history.inputs import GroupRecord
    from coordinator_core.records import Record

    records = [r for r in kip848_records() if r.record.kind != "consumer_group_partition_metadata"]
    value = m.OffsetCommitValue(42, -1, "", 40_000, -1, T1)
    records.append(GroupRecord(40, 40_000, Record(1, m.OffsetCommitKey("g", "orders", 0), 4, value)))
    rows = group_history(records)
    assert [(p.topic, p.partition) for p in rows[0].members[0].assigned_partitions] == [
        ("orders", p) for p in range(4)]


def test_kip848_causes_from_logs() -> None:
    events = [
        event(ev.CG_MEMBER_JOINED, 9.9, member_id=A, cause_class=ev.NEW_MEMBER, group_protocol="consumer"),
        event(ev.CG_EPOCH_BUMPED, 10.0, generation=1),
        event(ev.CG_TARGET_ASSIGNMENT_COMPUTED, 10.0, generation=1, protocol="uniform"),
        event(ev.CG_MEMBER_JOINED, 19.9, member_id=B, cause_class=ev.NEW_MEMBER, group_protocol="consumer"),
        event(ev.CG_EPOCH_BUMPED, 20.0, generation=2),
        event(ev.CG_MEMBER_FENCED, 29.9, member_id=B, cause_class=ev.SESSION_TIMEOUT,
              reason="the member session expired"),
        event(ev.CG_EPOCH_BUMPED, 30.0, generation=3),
    ]
    rows = group_history(kip848_records(), events)
    assert [(r.generation, r.cause, r.causes, r.cause_inferred, r.trigger_member_id, r.from_logs) for r in rows] == [
        (1, ev.NEW_MEMBER, (ev.NEW_MEMBER,), False, A, True),
        (2, ev.NEW_MEMBER, (ev.NEW_MEMBER,), False, B, True),
        (3, ev.SESSION_TIMEOUT, (ev.SESSION_TIMEOUT,), False, B, True),
    ]
    assert [e.event_type for e in rows[2].evidence] == [
        ev.CG_MEMBER_FENCED, "record:consumer_group_member_metadata", ev.CG_EPOCH_BUMPED]

    # Logs only: epochs, times and causes; the missing epoch 2 line is a gap row.
    logs_only = group_history(events=[e for e in events if e.generation != 2])
    assert [(r.group_protocol, r.generation, r.outcome, r.rebalance_started_at, r.assignment_stored_at,
             r.protocol, r.cause, r.members_joined, r.members_left) for r in logs_only] == [
        (CONSUMER, 1, STABLE, at(10), at(10), "uniform", ev.NEW_MEMBER, (A,), ()),
        (CONSUMER, 2, MISSING, None, None, None, "unknown", (), ()),
        (CONSUMER, 3, STABLE, at(30), None, None, ev.NEW_MEMBER, (B,), (B,)),
    ]


def test_kip848_group_goes_empty_then_deleted() -> None:
    records = [
        *kip848_records()[:6],
        tombstone(7, 40.0, 8, A),
        cg_member(8, 40.0, A, None),
        cg_epoch(9, 40.0, 2),
        cg_target_epoch(10, 40.0, 2),
        cg_epoch(11, 50.0, None),
    ]
    rows = group_history(records)
    assert [(r.generation, r.outcome, r.member_count, r.members_left, r.cause, r.ended_at, r.ended_by)
            for r in rows] == [
        (1, STABLE, 1, (), ev.NEW_MEMBER, at(40), "next_generation"),
        (2, EMPTY, 0, (A,), ev.MEMBER_LEFT_CAUSE, at(50), "group_deleted"),
    ]


def test_classic_to_consumer_protocol_upgrade() -> None:
    """A classic range group (A, then A and B) is converted when a consumer-protocol member C joins: the
    classic record is deleted, the members are rewritten as KIP-848 members at epoch = generation 2, and
    C's join bumps the epoch to 3."""
    records = [
        generation(1, 10.0, 1, [member(A, "client-a", assigned=[("orders", 0), ("orders", 1)])]),
        generation(2, 20.0, 2, [member(A, "client-a", assigned=[("orders", 0)]),
                                member(B, "client-b", assigned=[("orders", 1)])]),
        group_tombstone(3, 30.0),
        cg_member(4, 30.0, A, "client-a"),
        cg_member(5, 30.0, B, "client-b"),
        cg_epoch(6, 30.0, 2),
        cg_topics(7, 30.0, {T1: ("orders", 2)}),
        cg_target(8, 30.0, A, {T1: [0]}),
        cg_target(9, 30.0, B, {T1: [1]}),
        cg_target_epoch(10, 30.0, 2),
        cg_current(11, 30.0, A, 2, 1, 0, {T1: [0]}),
        cg_current(12, 30.0, B, 2, 1, 0, {T1: [1]}),
        cg_member(13, 40.0, C, "client-c"),
        cg_epoch(14, 40.0, 3),
        cg_target(15, 40.0, C, {T1: []}),
        cg_target_epoch(16, 40.0, 3),
        cg_current(17, 40.1, C, 3, 0, 0, {}),
        cg_current(18, 40.2, A, 3, 2, 0, {T1: [0]}),
        cg_current(19, 40.3, B, 3, 2, 0, {T1: [1]}),
    ]
    events = [event(ev.CG_CONVERTED, 30.0, group_protocol="consumer", cause_class=ev.GROUP_PROTOCOL_MIGRATION)]
    for evs, inferred in (([], True), (events, False)):
        rows = group_history(records, evs)
        assert [(r.group_protocol, r.generation, r.ended_by, r.ended_at, r.cause, r.cause_inferred) for r in rows] == [
            ("classic", 1, "next_generation", at(20), ev.NEW_MEMBER, True),
            ("classic", 2, "protocol_change", at(30), ev.NEW_MEMBER, True),
            (CONSUMER, 2, "next_generation", at(40), ev.GROUP_PROTOCOL_MIGRATION, inferred),
            (CONSUMER, 3, None, None, ev.NEW_MEMBER, True),
        ]
        converted = rows[2]
        assert (converted.members_joined, converted.members_left, converted.members_kept,
                converted.partitions_moved, converted.partitions_kept, converted.previous_generation) == (
            (), (), (A, B), (), 2, 2)
        assert (rows[3].members_joined, rows[3].members_kept, rows[3].stabilized_at) == ((C,), (A, B), at(40.3))


def test_consumer_to_classic_downgrade() -> None:
    """The last consumer-protocol member leaves a converted group that still has a classic member: the
    group goes back to the classic protocol (its consumer records are deleted, a classic generation is
    stored)."""
    records = [
        cg_member(1, 10.0, A, "client-a"),
        cg_member(2, 10.0, B, "client-b"),
        cg_epoch(3, 10.0, 5),
        cg_topics(4, 10.0, {T1: ("orders", 2)}),
        cg_current(5, 10.0, A, 5, 4, 0, {T1: [0]}),
        cg_current(6, 10.0, B, 5, 4, 0, {T1: [1]}),
        tombstone(7, 20.0, 8, B),
        cg_member(8, 20.0, B, None),
        cg_epoch(9, 20.0, None),
        generation(10, 20.0, 6, [member(A, "client-a", assigned=[("orders", 0), ("orders", 1)])]),
    ]
    rows = group_history(records)
    assert [(r.group_protocol, r.generation, r.ended_by, r.cause, r.members_left, r.members_kept,
             r.partitions_moved) for r in rows] == [
        (CONSUMER, 5, "protocol_change", ev.NEW_MEMBER, (), (), ()),
        ("classic", 6, None, ev.GROUP_PROTOCOL_MIGRATION, (B,), (A,), (PartitionMove("orders", 1, B, A, None),)),
    ]
