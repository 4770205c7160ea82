"""Offset retention expiry read from the coordinator's group-less sweep line (3.x "Removed N expired offsets",
4.x "Generated N tombstone records while cleaning up group metadata"): the sweep that expires an empty
group's last offsets writes the group's tombstone in the same batch, so "written with the group's tombstone"
alone would call them deleted with the group. Hand-built records and log lines; expected rows written out
by hand. The cases are shared with the Spark parity test (tests/spark/test_offset_sweeps.py)."""

from __future__ import annotations

from typing import Any

import pytest

from coordinator_core.history import DELETED, EXPIRED, GROUP_DELETED, offset_history
from coordinator_core.history.offsets import EXPLAIN_GROUP_SWEPT
from coordinator_core.logs import CoordinatorEvent
from coordinator_core.logs import events as ev
from tests.unit.test_history_builders import (
    GROUP,
    commit,
    event,
    generation,
    group_tombstone,
    member,
    offset_tombstone,
)

M1 = "consumer-expiry-1-0f6c2f0e"
SWEEP = "expired: an offset-expiry sweep logged at the same time"
WITH_GROUP = "deleted with the group (the group's tombstone is written with it)"
GROUP_GONE = "the group's own tombstone: the group was deleted"


def records() -> list[Any]:
    """One member commits two partitions and leaves; a minute later the coordinator writes both offsets'
    tombstones and the group's in one batch (record offsets 5-7, one timestamp)."""
    return [
        generation(0, 10.0, 1, [member(M1, "c1", assigned=[("orders", 0), ("orders", 1)])]),
        commit(1, 20.0, "orders", 0, 5),
        commit(2, 21.0, "orders", 1, 7),
        generation(3, 30.0, 2, []),
        offset_tombstone(5, 100.0, "orders", 0),
        offset_tombstone(6, 100.0, "orders", 1),
        group_tombstone(7, 100.0),
    ]


def sweep(seconds: float, removed: int | None = 3, line: int = 1) -> CoordinatorEvent:
    """The coordinator's sweep line: it names no group."""
    return event(ev.OFFSETS_EXPIRED, seconds, group_id=None, offsets_removed=removed, line_number=line,
                 cause_class=ev.OFFSETS_EXPIRED_OR_DELETED)


def deleted_line(seconds: float, line: int) -> CoordinatorEvent:
    return event(ev.GROUPS_DELETED, seconds, group_id=GROUP, offsets_removed=2, line_number=line,
                 cause_class=ev.OFFSETS_EXPIRED_OR_DELETED)


#: name -> (the cluster's log lines, expected (record offset, kind, inferred, explanation, evidence lines)).
CASES: dict[str, tuple[list[CoordinatorEvent], list[tuple[int, str, bool, str, list[int]]]]] = {
    "sweep_with_the_group_tombstone_is_expiry": ([sweep(100.4)], [
        (5, EXPIRED, False, SWEEP, [1]), (6, EXPIRED, False, SWEEP, [1]),
        (7, GROUP_DELETED, False, EXPLAIN_GROUP_SWEPT, [1])]),
    "a_deletion_line_naming_the_group_wins": ([deleted_line(100.1, 1), sweep(100.2, line=2)], [
        (5, DELETED, False, "deleted: GROUPS_DELETED names the group", [1]),
        (6, DELETED, False, "deleted: GROUPS_DELETED names the group", [1]),
        (7, GROUP_DELETED, False, GROUP_GONE, [1])]),
    "no_logs_is_still_deleted_with_the_group": ([], [
        (5, DELETED, True, WITH_GROUP, []), (6, DELETED, True, WITH_GROUP, []),
        (7, GROUP_DELETED, False, GROUP_GONE, [])]),
    # 4.x logs the sweep after every check: a line that removed nothing explains nothing.
    "a_sweep_that_removed_nothing_does_not_count": ([sweep(100.4, removed=0)], [
        (5, DELETED, True, WITH_GROUP, []), (6, DELETED, True, WITH_GROUP, []),
        (7, GROUP_DELETED, False, GROUP_GONE, [])]),
    "a_sweep_past_five_seconds_does_not_count": ([sweep(105.5)], [
        (5, DELETED, True, WITH_GROUP, []), (6, DELETED, True, WITH_GROUP, []),
        (7, GROUP_DELETED, False, GROUP_GONE, [])]),
}


def outcome(events: list[CoordinatorEvent]) -> list[tuple[int | None, str, bool, str, list[int | None]]]:
    return [(r.record_offset, r.kind, r.inferred, r.explanation, [e.line_number for e in r.evidence])
            for r in offset_history(records(), events, group_id=GROUP)]


@pytest.mark.parametrize("name", sorted(CASES))
def test_tombstones(name: str) -> None:
    events, expected = CASES[name]
    assert outcome(events) == expected


def test_the_evidence_is_the_sweep_line() -> None:
    line = sweep(100.4, removed=7)
    rows = offset_history(records(), [line], group_id=GROUP)
    assert {(e.event_type, e.message, e.at) for r in rows for e in r.evidence} == {
        (ev.OFFSETS_EXPIRED, line.message, line.timestamp)}


def test_a_sweep_line_naming_the_group_counts_without_a_count() -> None:
    """2.1+ DEBUG "Expired offsets from group 'g': ..." names the group and has no count."""
    rows = offset_history(records(), [event(ev.OFFSETS_EXPIRED, 100.4, line_number=9)], group_id=GROUP)
    assert [(r.kind, r.inferred) for r in rows] == [(EXPIRED, False), (EXPIRED, False), (GROUP_DELETED, False)]
    assert rows[2].explanation == EXPLAIN_GROUP_SWEPT


def test_a_sweep_line_naming_another_group_does_not_count() -> None:
    rows = offset_history(records(), [event(ev.OFFSETS_EXPIRED, 100.4, group_id="other", line_number=9)],
                          group_id=GROUP)
    assert [(r.kind, r.inferred) for r in rows] == [(DELETED, True), (DELETED, True), (GROUP_DELETED, False)]
