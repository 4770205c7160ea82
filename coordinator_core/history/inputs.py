"""The inputs of the history functions: one group's records in log order, and its log events.

A group lives in one ``__consumer_offsets`` partition, so the partition offset orders its records totally.
Callers pass ``GroupRecord`` values (or plain ``(offset, timestamp_ms, record)`` tuples); events are
``coordinator_core.logs.CoordinatorEvent`` values ordered by time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any, NamedTuple

from coordinator_core.logs import CoordinatorEvent
from coordinator_core.records import Record

#: ``GroupRecord.transaction_outcome`` of a TxnOffsetCommit whose transaction was aborted: it never took
#: effect, so the history ignores it.
ABORTED = "aborted"


class GroupRecord(NamedTuple):
    """One record of the group: its offset in the ``__consumer_offsets`` partition, its timestamp (epoch
    milliseconds as the segment stores it; -1 or None when unknown), the decoded record, and, for
    transactional offset commits, the transaction's outcome (``committed``, ``aborted``, ``open``)."""

    offset: int
    timestamp: int | None
    record: Record
    transaction_outcome: str | None = None


def as_group_records(records: Iterable[Any]) -> list[GroupRecord]:
    """Normalises tuples to ``GroupRecord`` and sorts by offset (the log order)."""
    out = [r if isinstance(r, GroupRecord) else GroupRecord(*r) for r in records]
    out.sort(key=lambda r: r.offset)
    return out


def committed_topic_ids(records: Iterable[GroupRecord]) -> dict[str, str]:
    """Topic id -> name from offset commits of value version 4+, whose key names the topic and whose
    value carries its id (KIP-848 records name partitions by topic id only)."""
    names: dict[str, str] = {}
    for r in records:
        rec = r.record
        if rec.kind == "offset_commit" and rec.value is not None:
            topic_id = getattr(rec.value, "topic_id", None)
            if topic_id:
                names[topic_id] = rec.key.topic
    return names


def as_events(events: Iterable[CoordinatorEvent]) -> list[CoordinatorEvent]:
    """Events with a timestamp, in time order (stable, so lines of one millisecond keep their order)."""
    out = [e for e in events if e.timestamp is not None]
    out.sort(key=lambda e: e.timestamp)  # type: ignore[arg-type, return-value]
    return out


def millis_time(millis: int | None) -> datetime | None:
    """Epoch milliseconds as a UTC datetime, None for None and for Kafka's negative "no time" values."""
    if millis is None or millis < 0:
        return None
    return datetime.fromtimestamp(millis / 1000, tz=timezone.utc)


def record_time(record: GroupRecord) -> datetime | None:
    """The record's timestamp as a UTC datetime, None when the segment had none."""
    return millis_time(record.timestamp)


def millis_between(start: datetime | None, end: datetime | None) -> int | None:
    """Whole milliseconds from ``start`` to ``end``, None if either is unknown."""
    if start is None or end is None:
        return None
    return round((end - start).total_seconds() * 1000)


def member_scoped(event: CoordinatorEvent) -> bool:
    """A line about one member that names no group (e.g. the classic coordinator's "Request memberId=... for
    static member ... is fenced by ..." from ClassicGroup.validateMember): its group is found by member id."""
    return event.group_id is None and event.member_id is not None


def member_groups(events: Iterable[CoordinatorEvent] = (), records: Iterable[tuple[str, str]] = ()
                  ) -> dict[str, str]:
    """member id -> group from the lines that name both (member and related member) and from
    ``(member_id, group_id)`` pairs the records give (GroupMetadata members). Member ids are unique per
    cluster (client id + UUID, or a UUID); should one ever appear under two groups, the smallest group id
    wins, so the answer does not depend on input order."""
    out: dict[str, str] = {}

    def note(member: str | None, group: str | None) -> None:
        if member and group and (member not in out or group < out[member]):
            out[member] = group

    for e in events:
        if e.group_id is not None:
            note(e.member_id, e.group_id)
            note(e.related_member_id, e.group_id)
    for member, group in records:
        note(member, group)
    return out


def attribute_to_groups(events: Iterable[CoordinatorEvent], groups: dict[str, str]
                        ) -> tuple[list[CoordinatorEvent], int]:
    """Events with the group filled in on member-scoped group-less lines whose member id (else related
    member id) ``groups`` knows; also how many such lines stayed group-less (kept, not dropped)."""
    out: list[CoordinatorEvent] = []
    unattributed = 0
    for e in events:
        if member_scoped(e):
            group = groups.get(e.member_id or "") or groups.get(e.related_member_id or "")
            if group is not None:
                out.append(dataclasses.replace(e, group_id=group))
                continue
            unattributed += 1
        out.append(e)
    return out, unattributed
