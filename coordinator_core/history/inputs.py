"""The inputs of the history functions: one group's records in log order, and its log events.

A group lives in one ``__consumer_offsets`` partition, so the partition offset orders its records totally.
Callers pass ``GroupRecord`` values (or plain ``(offset, timestamp_ms, record)`` tuples); events are
``coordinator_core.logs.CoordinatorEvent`` values ordered by time.
"""

from __future__ import annotations

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


def record_time(record: GroupRecord) -> datetime | None:
    """The record's timestamp as a UTC datetime, None when the segment had none."""
    if record.timestamp is None or record.timestamp < 0:
        return None
    return datetime.fromtimestamp(record.timestamp / 1000, tz=timezone.utc)


def millis_between(start: datetime | None, end: datetime | None) -> int | None:
    """Whole milliseconds from ``start`` to ``end``, None if either is unknown."""
    if start is None or end is None:
        return None
    return round((end - start).total_seconds() * 1000)
