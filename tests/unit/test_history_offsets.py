"""Offset history of one group from hand-built records: rewinds, non-member commits (admin resets), stalls,
expired and deleted offsets. Expected rows are written out by hand."""

from __future__ import annotations

from typing import Any

from coordinator_core.history import (
    DELETED,
    EXPIRED,
    GROUP_DELETED,
    NON_MEMBER_COMMIT,
    REWIND,
    STALLED,
    OffsetEventRow,
    offset_history,
)
from coordinator_core.logs import events as ev
from tests.unit.test_history_builders import (
    at,
    cg_epoch,
    cg_member,
    commit,
    event,
    generation,
    group_tombstone,
    member,
    offset_tombstone,
)

M1 = "consumer-orders-svc-1-5b0f5b53"


def story() -> list[Any]:
    return [
        generation(0, 10.0, 1, [member(M1, "c1", assigned=[("orders", p) for p in range(4)])]),
        commit(1, 20.0, "orders", 0, 100),
        commit(2, 40.0, "orders", 0, 100),
        commit(3, 60.0, "orders", 0, 100),
        commit(4, 80.0, "orders", 0, 100),
        commit(5, 90.0, "orders", 0, 150),
        commit(6, 95.0, "orders", 2, 7, expire_seconds=300.0),
        commit(7, 96.0, "orders", 3, 10),
        commit(8, 100.0, "orders", 0, 120),          # the consumer sought back
        generation(9, 110.0, 2, []),                 # everybody left
        commit(10, 120.0, "orders", 0, 0),           # kafka-consumer-groups --reset-offsets --to-earliest
        commit(11, 121.0, "orders", 1, 5),
        commit(12, 122.0, "orders", 0, 999, outcome="aborted"),
        offset_tombstone(13, 150.0, "orders", 3),    # OffsetDelete
        offset_tombstone(14, 200.0, "orders", 1),    # retention
        offset_tombstone(15, 301.0, "orders", 2),    # retention, after the v1 expire timestamp
        offset_tombstone(16, 400.0, "orders", 0),    # DeleteGroups: offsets and group together
        group_tombstone(17, 400.0),
    ]


def fields(row: OffsetEventRow) -> tuple[Any, ...]:
    return (row.kind, row.topic, row.partition, row.at, row.record_offset, row.offset, row.previous_offset,
            row.delta, row.commit_count, row.duration_ms, row.generation, row.group_members, row.inferred)


def test_offset_events() -> None:
    events = [event(ev.OFFSETS_DELETED, 150.1, offsets_removed=1, cause_class=ev.OFFSETS_EXPIRED_OR_DELETED)]
    rows = offset_history(story(), events)
    assert [fields(r) for r in rows] == [
        (STALLED, "orders", 0, at(20), 1, 100, None, None, 4, 60000, 1, 1, False),
        (REWIND, "orders", 0, at(100), 8, 120, 150, -30, None, None, 1, 1, False),
        (NON_MEMBER_COMMIT, "orders", 0, at(120), 10, 0, 120, -120, None, None, 2, 0, True),
        (NON_MEMBER_COMMIT, "orders", 1, at(121), 11, 5, None, None, None, None, 2, 0, True),
        (DELETED, "orders", 3, at(150), 13, None, 10, None, None, None, 2, 0, False),
        (EXPIRED, "orders", 1, at(200), 14, None, 5, None, None, None, 2, 0, True),
        (EXPIRED, "orders", 2, at(301), 15, None, 7, None, None, None, 2, 0, False),
        (DELETED, "orders", 0, at(400), 16, None, 0, None, None, None, 2, 0, True),
        (GROUP_DELETED, None, None, at(400), 17, None, None, None, None, None, 2, None, False),
    ]
    assert rows[0].ended_at == at(80)
    assert rows[0].explanation == ("4 commits of offset 100 over 60000 ms in generation 1 while the group had 1 "
                                   "member(s)")
    assert rows[2].explanation == ("committed while generation 2 had no members: only a client outside the group "
                                   "(admin reset, assign()-based consumer) can commit then; it moved the offset "
                                   "backwards")
    assert [(e.event_type, e.at) for e in rows[4].evidence] == [(ev.OFFSETS_DELETED, at(150.1))]
    assert rows[6].explanation == "expired: the commit's expire timestamp had passed"
    assert rows[7].explanation == "deleted with the group (the group's tombstone is written with it)"


def test_without_the_log_line_an_offset_delete_reads_as_expiry() -> None:
    row = offset_history(story())[4]
    assert fields(row) == (EXPIRED, "orders", 3, at(150), 13, None, 10, None, None, None, 2, 0, True)


def test_expiry_sweep_line_confirms_an_expiry() -> None:
    events = [event(ev.OFFSETS_EXPIRED, 200.2, group_id=None, offsets_removed=3,
                    cause_class=ev.OFFSETS_EXPIRED_OR_DELETED)]
    row = offset_history(story(), events)[5]
    assert (row.kind, row.inferred, row.explanation, [e.at for e in row.evidence]) == (
        EXPIRED, False, "expired: an offset-expiry sweep logged at the same time", [at(200.2)])


def test_stall_needs_one_stable_generation_and_the_thresholds() -> None:
    records = [
        generation(0, 10.0, 1, [member(M1, "c1", assigned=[("orders", 0)])]),
        commit(1, 20.0, "orders", 0, 100),
        commit(2, 50.0, "orders", 0, 100),
        generation(3, 55.0, 2, [member(M1, "c1", assigned=[("orders", 0)])]),   # a rebalance splits the run
        commit(4, 60.0, "orders", 0, 100),
        commit(5, 90.0, "orders", 0, 100),
        commit(6, 120.0, "orders", 0, 100),
    ]
    rows = offset_history(records)
    assert [fields(r) for r in rows] == [(STALLED, "orders", 0, at(60), 4, 100, None, None, 3, 60000, 2, 1, False)]
    assert offset_history(records, stall_min_ms=60001) == []
    assert offset_history(records, stall_min_commits=4) == []


def test_offsets_only_group_is_not_reported_as_non_member_commits() -> None:
    """An assign()-based consumer group never stores a generation: its commits are normal; only a move
    backwards is worth a row."""
    records = [commit(0, 10.0, "orders", 0, 50), commit(1, 20.0, "orders", 0, 60), commit(2, 30.0, "orders", 0, 40)]
    rows = offset_history(records)
    assert [fields(r) for r in rows] == [(REWIND, "orders", 0, at(30), 2, 40, 60, -20, None, None, None, None, False)]
    assert rows[0].explanation == "committed offset went back by 20"


def test_kip848_group_empty_epoch_and_protocol_conversion_is_no_deletion() -> None:
    records = [
        generation(0, 10.0, 1, [member(M1, "c1", assigned=[("orders", 0)])]),
        group_tombstone(1, 20.0),                  # converted to the consumer protocol, not deleted
        cg_member(2, 20.0, M1, "c1"),
        cg_epoch(3, 20.0, 1),
        commit(4, 30.0, "orders", 0, 10),
        cg_member(5, 40.0, M1, None),
        cg_epoch(6, 40.0, 2),                      # no members left
        commit(7, 50.0, "orders", 0, 3),
    ]
    rows = offset_history(records)
    assert [fields(r) for r in rows] == [
        (NON_MEMBER_COMMIT, "orders", 0, at(50), 7, 3, 10, -7, None, None, 2, 0, True)]


def test_classic_tombstone_written_after_the_consumer_records_is_a_conversion() -> None:
    records = [
        generation(0, 10.0, 1, [member(M1, "c1", assigned=[("orders", 0)])]),
        cg_member(1, 20.0, M1, "c1"),
        cg_epoch(2, 20.0, 1),
        group_tombstone(3, 20.0),
    ]
    assert offset_history(records) == []
    assert [r.kind for r in offset_history([*records[:1], group_tombstone(1, 20.0)])] == [GROUP_DELETED]
