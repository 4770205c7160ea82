"""Build `__consumer_offsets` record bytes for the Spark tests with coordinator_core's own encoder."""

from __future__ import annotations

import coordinator_core as cc
from coordinator_core.consumer_protocol import Assignment, Subscription, TopicPartition
from coordinator_core.messages import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
)


def offset_commit(
    group: str, topic: str, partition: int, offset: int, *, version: int = 3, commit_ms: int = 1_700_000_000_000,
    leader_epoch: int = 5, metadata: str = "",
) -> tuple[bytes, bytes]:
    key = OffsetCommitKey(group=group, topic=topic, partition=partition)
    value = OffsetCommitValue(
        offset=offset,
        leader_epoch=leader_epoch if version >= 3 else -1,
        metadata=metadata,
        commit_timestamp=commit_ms,
        expire_timestamp=-1,
        topic_id=None,
    )
    k, v = cc.encode_record(cc.Record(1, key, version, value))
    assert v is not None
    return k, v


def offset_tombstone(group: str, topic: str, partition: int) -> tuple[bytes, None]:
    k, _ = cc.encode_record(cc.Record(1, OffsetCommitKey(group=group, topic=topic, partition=partition), None, None))
    return k, None


def member(
    member_id: str, topics: list[str], assigned: list[tuple[str, int]], *, instance_id: str | None = None,
) -> MemberMetadata:
    subscription = cc.encode_subscription(Subscription(version=1, topics=tuple(topics), user_data=None,
                                                       owned_partitions=(), generation_id=-1, rack_id=None))
    assignment = cc.encode_assignment(Assignment(version=1, partitions=tuple(TopicPartition(t, p) for t, p in assigned),
                                                 user_data=None))
    return MemberMetadata(
        member_id=member_id,
        group_instance_id=instance_id,
        client_id="client-" + member_id,
        client_host="/127.0.0.1",
        rebalance_timeout=300000,
        session_timeout=45000,
        subscription=subscription,
        assignment=assignment,
    )


def group_metadata(
    group: str, generation: int, members: list[MemberMetadata], *, version: int = 3, protocol: str = "range",
    state_ms: int = 1_700_000_000_000,
) -> tuple[bytes, bytes]:
    value = GroupMetadataValue(
        protocol_type="consumer",
        generation=generation,
        protocol=protocol if members else None,
        leader=members[0].member_id if members else None,
        current_state_timestamp=state_ms,
        members=tuple(members),
    )
    k, v = cc.encode_record(cc.Record(2, GroupMetadataKey(group=group), version, value))
    assert v is not None
    return k, v
