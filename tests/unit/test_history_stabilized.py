"""A classic generation's ``stabilized_at`` from its GroupMetadata record (``current_state_timestamp``, v2+).

Kafka sets a group's current state timestamp on every state change and writes it into each GroupMetadata
record (value v2+, Kafka 2.1+). A generation's first record is stored in CompletingRebalance (or, without
members, in Empty), so its timestamp is the end of the join phase: the instant of the broker's "Stabilized
group ..." (or "... is now empty") line. The samples check that against the brokers' own lines: the
expected time is the line's, parsed from the log, and the history is rebuilt from the records alone.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import coordinator_core as cc
from coordinator_core import messages as m
from coordinator_core.history import CLASSIC, GenerationRow, GroupRecord, group_history, group_record_from_row
from coordinator_core.logs import events as ev
from coordinator_core.records import Record
from coordinator_core.storms import generation_facts, generation_rebalances
from tests.unit.test_history_builders import GROUP, at, event, generation, gr, member, ms

SAMPLES = Path(__file__).resolve().parents[2] / "samples"

#: The broker logs its line right after the state change that sets the timestamp: in the same millisecond,
#: or the next one when the clock ticks in between (never before).
LINE_LAG_MS = (0, 1)


def _millis(t: datetime) -> int:
    return round(t.timestamp() * 1000)


def _sample_records(sample: Path) -> dict[str, list[GroupRecord]]:
    """Every decodable group-level record by group. A multi-broker sample holds each partition's copy on
    every broker; the copies are the same log, so each (partition, offset) is taken once."""
    records: dict[str, list[GroupRecord]] = defaultdict(list)
    seen: set[tuple[str, int]] = set()
    for segment in sorted(sample.glob("**/__consumer_offsets-*/*.log")):
        partition = segment.parent.name
        for entry in cc.read_segment(str(segment)):
            if entry.is_control or (partition, entry.offset) in seen:
                continue
            seen.add((partition, entry.offset))
            try:
                record = cc.decode_record(entry.key, entry.value)
            except cc.DecodeError:
                continue
            group = getattr(record.key, "group", None) or getattr(record.key, "group_id", None)
            if group is not None and record.kind != "offset_commit":
                records[group].append(GroupRecord(entry.offset, entry.timestamp, record))
    return records


def _logged_join_ends(sample: Path) -> dict[tuple[str, int], tuple[str, int]]:
    """(group, generation) -> (line kind, epoch ms) of every broker's "Stabilized group" and "is now empty"
    line (the brokers log in UTC)."""
    out: dict[tuple[str, int], tuple[str, int]] = {}
    for log in sorted(sample.glob("**/server.log")):
        for line in log.read_text(encoding="utf-8").splitlines():
            e = cc.parse_log_line(line)
            if e is None or e.event_type not in (ev.GROUP_STABILIZED, ev.GROUP_EMPTY):
                continue
            assert e.group_id is not None and e.generation is not None and e.timestamp is not None, line
            key = (e.group_id, e.generation)
            assert key not in out, f"two lines for {key}"
            out[key] = (e.event_type, _millis(e.timestamp))
    return out


@pytest.mark.parametrize(("version", "stabilized", "empty"),
                         [("kafka-3.9.1", 50, 11), ("kafka-4.3.1", 50, 11), ("kafka-4.3.1-3brokers", 19, 6)])
def test_the_records_tell_when_each_join_phase_ended_as_the_broker_logged_it(version: str, stabilized: int,
                                                                              empty: int) -> None:
    sample = SAMPLES / version
    logged = _logged_join_ends(sample)
    from_records: dict[tuple[str, int], int | None] = {}
    for group, records in _sample_records(sample).items():
        for row in group_history(records, group_id=group):
            if row.group_protocol == CLASSIC and row.from_records and row.generation > 0:
                from_records[(group, row.generation)] = (
                    None if row.stabilized_at is None else _millis(row.stabilized_at))
    compared = {kind: 0 for kind in (ev.GROUP_STABILIZED, ev.GROUP_EMPTY)}
    for key, (kind, line_ms) in sorted(logged.items()):
        assert key in from_records, f"{key}: a logged generation without its record"
        record_ms = from_records[key]
        assert record_ms is not None, f"{key}: no stabilized_at from the record"
        assert line_ms - record_ms in LINE_LAG_MS, (key, kind, line_ms, record_ms)
        compared[kind] += 1
    assert compared == {ev.GROUP_STABILIZED: stabilized, ev.GROUP_EMPTY: empty}
    # Every record-built generation of these 2.1+ brokers has its join phase's end.
    assert all(v is not None for v in from_records.values())


# --- hand-built records --------------------------------------------------------------------------------------------
M1, M2, M2B = "c-1-aaaa", "c-2-bbbb", "c-2-cccc"


def _timeline(rows: list[GenerationRow]) -> list[tuple[Any, ...]]:
    return [(r.generation, r.rebalance_started_at, r.stabilized_at, r.assignment_stored_at, r.join_ms, r.sync_ms)
            for r in rows]


def test_a_static_member_replaced_within_the_generation_does_not_move_its_stabilization() -> None:
    # The second record of generation 1 is stored in Stable (KIP-345: a static member rejoined with a new id,
    # no rebalance): its state timestamp is when the group became Stable, after the first record.
    records = [
        generation(0, 10.0, 1, [member(M1, "c-1", instance="a"), member(M2, "c-2", instance="b")], stabilized=9.5),
        generation(1, 30.0, 1, [member(M1, "c-1", instance="a"), member(M2B, "c-2", instance="b")],
                   stabilized=10.25),
    ]
    (row,) = group_history(records)
    assert _timeline([row]) == [(1, None, at(9.5), at(10), None, 500)]
    assert row.record_count == 2 and row.static_restarts == 1


def test_a_state_timestamp_that_is_none_or_after_the_record_is_not_taken() -> None:
    v1 = gr(0, 10.0, Record(2, m.GroupMetadataKey(GROUP), 1,
                            m.GroupMetadataValue("consumer", 1, "range", M1, None, (member(M1, "c-1"),))))
    none = gr(1, 20.0, Record(2, m.GroupMetadataKey(GROUP), 3,
                              m.GroupMetadataValue("consumer", 2, "range", M1, -1, (member(M1, "c-1"),))))
    later = generation(2, 30.0, 3, [member(M1, "c-1")], stabilized=30.5)
    zero = gr(3, 40.0, Record(2, m.GroupMetadataKey(GROUP), 3,
                              m.GroupMetadataValue("consumer", 4, "range", M1, 0, (member(M1, "c-1"),))))
    rows = group_history([v1, none, later, zero])
    assert [(r.generation, r.stabilized_at, r.sync_ms) for r in rows] == [(g, None, None) for g in (1, 2, 3, 4)]


def test_the_broker_line_stands_where_the_record_has_no_state_timestamp() -> None:
    v1 = gr(0, 10.0, Record(2, m.GroupMetadataKey(GROUP), 1,
                            m.GroupMetadataValue("consumer", 1, "range", M1, None, (member(M1, "c-1"),))))
    v3 = generation(1, 20.0, 2, [member(M1, "c-1"), member(M2, "c-2")], stabilized=19.5)
    events = [
        event(ev.REBALANCE_PREPARED, 9.0, generation=0, member_id=M1, cause_class=ev.NEW_MEMBER),
        event(ev.GROUP_STABILIZED, 9.25, generation=1, member_count=1),
        event(ev.REBALANCE_PREPARED, 19.0, generation=1, member_id=M2, cause_class=ev.NEW_MEMBER),
        event(ev.GROUP_STABILIZED, 19.5, generation=2, member_count=2),
    ]
    assert _timeline(group_history([v1, v3], events)) == [
        (1, at(9), at(9.25), at(10), 250, 750),   # the line's time: the v1 record has none
        (2, at(19), at(19.5), at(20), 500, 500),  # the record's, the same instant as the line's
    ]


def test_decoded_rows_carry_the_state_timestamp_and_older_rows_without_it_still_read() -> None:
    value = {"protocol_type": "consumer", "generation": 1, "protocol": "range", "leader": None, "members": []}
    row = {"offset": 0, "timestamp": ms(10), "record_type": 2, "value_version": 3, "group_id": GROUP,
           "record_json": None}
    stored = [group_record_from_row({**row, "group_metadata": gm}).record.value for gm in (
        {**value, "current_state_timestamp": ms(9.5)}, {**value, "current_state_timestamp": None},
        {**value, "current_state_timestamp": -1}, value)]
    assert [v.current_state_timestamp for v in stored] == [ms(9.5), None, None, None]


# --- storms ---------------------------------------------------------------------------------------------------------
def test_a_records_only_rebalance_starts_when_it_stabilized_and_lasts_its_sync_phase() -> None:
    t = datetime(2026, 1, 1, 12)
    base = {"group_protocol": CLASSIC, "outcome": "stable", "cause": "new_member"}
    records_only = {**base, "generation": 2, "record_offset": 10, "rebalance_started_at": None,
                    "stabilized_at": t, "assignment_stored_at": t + timedelta(milliseconds=40),
                    "rebalance_ms": None, "sync_ms": 40}
    no_state_time = {**base, "generation": 3, "record_offset": 20, "rebalance_started_at": None,
                     "stabilized_at": None, "assignment_stored_at": t + timedelta(seconds=5),
                     "rebalance_ms": None, "sync_ms": None}
    with_logs = {**base, "generation": 4, "record_offset": 30, "rebalance_started_at": t + timedelta(seconds=9),
                 "stabilized_at": t + timedelta(seconds=10), "assignment_stored_at": t + timedelta(seconds=11),
                 "rebalance_ms": 2000, "sync_ms": 1000}
    facts = [generation_facts(r) for r in (records_only, no_state_time, with_logs)]
    assert [(f.started_at, f.settled_at, f.rebalance_ms) for f in facts] == [
        (t, t + timedelta(milliseconds=40), 40),
        (t + timedelta(seconds=5), t + timedelta(seconds=5), None),
        (t + timedelta(seconds=9), t + timedelta(seconds=11), 2000),
    ]
    assert [(r.generation, r.started_at, r.ended_at) for r in generation_rebalances("c", "g", [
        with_logs, records_only, no_state_time])] == [
        (2, t, t + timedelta(milliseconds=40)),
        (3, t + timedelta(seconds=5), t + timedelta(seconds=5)),
        (4, t + timedelta(seconds=9), t + timedelta(seconds=11)),
    ]
