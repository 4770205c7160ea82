"""Builders for the history tests (no tests here): hand-built records and log events of one group.

Every record goes through ``encode_record`` and back through ``decode_record``, so the history functions see
exactly what the decoder gives for real bytes. Times are seconds after ``T0`` (UTC).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import coordinator_core as cc
from coordinator_core import messages as m
from coordinator_core.history import GroupRecord
from coordinator_core.logs import CoordinatorEvent
from coordinator_core.records import Record
from coordinator_core.wire import uuid_to_kafka_string

T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=timezone.utc)
GROUP = "orders-svc"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def ms(seconds: float) -> int:
    return int(at(seconds).timestamp() * 1000)


def topic_id(n: int) -> str:
    return uuid_to_kafka_string(bytes([n]) * 16)


def _roundtrip(rec: Record) -> Record:
    key, value = cc.encode_record(rec)
    return cc.decode_record(key, value)


def gr(offset: int, seconds: float | None, rec: Record, outcome: str | None = None) -> GroupRecord:
    return GroupRecord(offset, ms(seconds) if seconds is not None else None, _roundtrip(rec), outcome)


# --- classic -------------------------------------------------------------------------------------------
def member(member_id: str, client_id: str, *, assigned: Sequence[tuple[str, int]] = (),
           topics: Sequence[str] = ("orders",), owned: Sequence[tuple[str, int]] = (),
           instance: str | None = None, host: str = "/10.0.0.1") -> m.MemberMetadata:
    subscription = cc.encode_subscription(cc.Subscription(1, tuple(topics), None,
                                                          tuple(cc.TopicPartition(*p) for p in owned), -1, None))
    assignment = cc.encode_assignment(cc.Assignment(1, tuple(cc.TopicPartition(*p) for p in assigned), None))
    return m.MemberMetadata(member_id, instance, client_id, host, 300000, 45000, subscription, assignment)


def generation(offset: int, seconds: float | None, gen: int, members: Iterable[m.MemberMetadata], *,
               protocol: str | None = "range", leader: str | None = None, protocol_type: str = "consumer",
               group: str = GROUP, stabilized: float | None = None) -> GroupRecord:
    """A GroupMetadata record (value v3) stored at ``seconds``; its current_state_timestamp (when the join
    phase ended) is ``stabilized``, by default the record's own time (-1 when that is unknown)."""
    members = tuple(members)
    if not members:
        protocol = None
    state_at = stabilized if stabilized is not None else seconds
    value = m.GroupMetadataValue(protocol_type, gen, protocol,
                                 leader if leader is not None else (members[0].member_id if members else None),
                                 ms(state_at) if state_at is not None else -1, members)
    return gr(offset, seconds, Record(2, m.GroupMetadataKey(group), 3, value))


def placeholder(offset: int, seconds: float, group: str = GROUP) -> GroupRecord:
    return gr(offset, seconds, Record(2, m.GroupMetadataKey(group), 3, m.GroupMetadataValue("", 0, None, None, -1, ())))


def group_tombstone(offset: int, seconds: float, group: str = GROUP) -> GroupRecord:
    return gr(offset, seconds, Record(2, m.GroupMetadataKey(group), None, None))


def commit(offset: int, seconds: float, topic: str, partition: int, committed: int, *,
           expire_seconds: float | None = None, outcome: str | None = None, group: str = GROUP,
           metadata: str = "") -> GroupRecord:
    if expire_seconds is not None:
        value = m.OffsetCommitValue(committed, -1, metadata, ms(seconds), ms(expire_seconds), None)
        return gr(offset, seconds, Record(1, m.OffsetCommitKey(group, topic, partition), 1, value), outcome)
    value = m.OffsetCommitValue(committed, -1, metadata, ms(seconds), -1, None)
    return gr(offset, seconds, Record(1, m.OffsetCommitKey(group, topic, partition), 3, value), outcome)


def offset_tombstone(offset: int, seconds: float, topic: str, partition: int, group: str = GROUP) -> GroupRecord:
    return gr(offset, seconds, Record(1, m.OffsetCommitKey(group, topic, partition), None, None))


# --- KIP-848 -------------------------------------------------------------------------------------------
def cg_epoch(offset: int, seconds: float, epoch: int | None, group: str = GROUP) -> GroupRecord:
    value = m.ConsumerGroupMetadataValue(epoch, 0) if epoch is not None else None
    return gr(offset, seconds, Record(3, m.GroupIdKey(group), 0 if value else None, value))


def cg_topics(offset: int, seconds: float, topics: dict[str, tuple[str, int]], group: str = GROUP) -> GroupRecord:
    value = m.ConsumerGroupPartitionMetadataValue(tuple(
        m.TopicMetadata(tid, name, n, ()) for tid, (name, n) in topics.items()))
    return gr(offset, seconds, Record(4, m.GroupIdKey(group), 0, value))


def cg_member(offset: int, seconds: float, member_id: str, client_id: str | None, *,
              topics: Sequence[str] = ("orders",), instance: str | None = None, host: str = "/10.0.0.1",
              assignor: str | None = None, group: str = GROUP) -> GroupRecord:
    if client_id is None:
        return gr(offset, seconds, Record(5, m.GroupMemberKey(group, member_id), None, None))
    value = m.ConsumerGroupMemberMetadataValue(instance, None, client_id, host, tuple(topics), None, 300000, assignor,
                                               None)
    return gr(offset, seconds, Record(5, m.GroupMemberKey(group, member_id), 0, value))


def cg_target(offset: int, seconds: float, member_id: str, partitions: dict[str, Sequence[int]],
              group: str = GROUP) -> GroupRecord:
    value = m.ConsumerGroupTargetAssignmentMemberValue(tuple(
        m.TopicIdPartitions(t, tuple(ps)) for t, ps in partitions.items()))
    return gr(offset, seconds, Record(7, m.GroupMemberKey(group, member_id), 0, value))


def cg_target_epoch(offset: int, seconds: float, epoch: int, group: str = GROUP) -> GroupRecord:
    value = m.ConsumerGroupTargetAssignmentMetadataValue(epoch, 0)
    return gr(offset, seconds, Record(6, m.GroupIdKey(group), 0, value))


def cg_current(offset: int, seconds: float, member_id: str, epoch: int, previous: int, state: int,
               assigned: dict[str, Sequence[int]], pending: dict[str, Sequence[int]] | None = None,
               group: str = GROUP) -> GroupRecord:
    value = m.ConsumerGroupCurrentMemberAssignmentValue(
        epoch, previous, state,
        tuple(m.AssignedTopicPartitions(t, tuple(ps), ()) for t, ps in assigned.items()),
        tuple(m.AssignedTopicPartitions(t, tuple(ps), ()) for t, ps in (pending or {}).items()))
    return gr(offset, seconds, Record(8, m.GroupMemberKey(group, member_id), 0, value))


# --- log events ----------------------------------------------------------------------------------------
def event(event_type: str, seconds: float, **fields: Any) -> CoordinatorEvent:
    fields.setdefault("group_id", GROUP)
    return CoordinatorEvent(event_type=event_type, line_kind="hand-built", message=f"{event_type} @{seconds}",
                            timestamp=at(seconds), **fields)
