"""encode_record then decode_record gives back the same record, for random values at every version.

Values are generated within what each version can carry (fields a version lacks hold their defaults), so a
mismatch means the declaration-driven encoder and decoder disagree."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import coordinator_core as cc
from coordinator_core import messages as m
from coordinator_core.records import Record
from coordinator_core.wire import uuid_to_kafka_string

text = st.text(max_size=12)
i32 = st.integers(-(1 << 31), (1 << 31) - 1)
i64 = st.integers(-(1 << 63), (1 << 63) - 1)
uuids = st.one_of(st.none(), st.binary(min_size=16, max_size=16).filter(any).map(uuid_to_kafka_string))


@st.composite
def offset_commits(draw: st.DrawFn) -> Record:
    version = draw(st.integers(0, 4))
    value = m.OffsetCommitValue(
        offset=draw(i64),
        leader_epoch=draw(i32) if version >= 3 else None,  # a field the version lacks is None
        metadata=draw(text),
        commit_timestamp=draw(i64),
        expire_timestamp=draw(i64) if version == 1 else None,
        topic_id=draw(uuids) if version >= 4 else None,
    )
    key = m.OffsetCommitKey(draw(text), draw(text), draw(i32))
    return Record(draw(st.sampled_from([0, 1])), key, version, value)


@st.composite
def group_metadata(draw: st.DrawFn) -> Record:
    version = draw(st.integers(0, 4))
    members = tuple(
        m.MemberMetadata(
            member_id=draw(text),
            group_instance_id=draw(st.one_of(st.none(), text)) if version >= 3 else None,
            client_id=draw(text),
            client_host=draw(text),
            rebalance_timeout=draw(i32) if version >= 1 else None,
            session_timeout=draw(i32),
            subscription=draw(st.binary(max_size=20)),
            assignment=draw(st.binary(max_size=20)),
        )
        for _ in range(draw(st.integers(0, 3)))
    )
    value = m.GroupMetadataValue(draw(text), draw(i32), draw(st.one_of(st.none(), text)),
                                 draw(st.one_of(st.none(), text)), draw(i64) if version >= 2 else None, members)
    return Record(2, m.GroupMetadataKey(draw(text)), version, value)


@st.composite
def kip848(draw: st.DrawFn) -> Record:
    tp = st.builds(m.AssignedTopicPartitions, uuids, st.lists(i32, max_size=3).map(tuple),
                   st.one_of(st.none(), st.lists(i32, max_size=3).map(tuple)))
    choices = [
        (3, m.GroupIdKey, st.builds(m.ConsumerGroupMetadataValue, i32, i64)),
        (5, m.GroupMemberKey, st.builds(
            m.ConsumerGroupMemberMetadataValue, st.one_of(st.none(), text), st.one_of(st.none(), text), text, text,
            st.lists(text, max_size=3).map(tuple), st.one_of(st.none(), text), i32, st.one_of(st.none(), text),
            st.one_of(st.none(), st.builds(m.ClassicMemberMetadata, i32, st.lists(
                st.builds(m.ClassicProtocol, text, st.binary(max_size=8)), max_size=2).map(tuple))))),
        (6, m.GroupIdKey, st.builds(m.ConsumerGroupTargetAssignmentMetadataValue, i32, i64)),
        (8, m.GroupMemberKey, st.builds(m.ConsumerGroupCurrentMemberAssignmentValue, i32, i32,
                                        st.integers(-128, 127), st.lists(tp, max_size=2).map(tuple),
                                        st.lists(tp, max_size=2).map(tuple))),
        (16, None, st.builds(m.ConsumerGroupRegularExpressionValue, st.lists(text, max_size=3).map(tuple), i64, i64)),
    ]
    rtype, key_cls, value_strategy = draw(st.sampled_from(choices))
    if key_cls is m.GroupIdKey:
        key: object = m.GroupIdKey(draw(text))
    elif key_cls is m.GroupMemberKey:
        key = m.GroupMemberKey(draw(text), draw(text))
    else:
        key = m.ConsumerGroupRegularExpressionKey(draw(text), draw(text))
    return Record(rtype, key, 0, draw(value_strategy))


@settings(max_examples=400, deadline=None)
@given(st.one_of(offset_commits(), group_metadata(), kip848()))
def test_encode_then_decode_is_identity(rec: Record) -> None:
    key, value = cc.encode_record(rec)
    back = cc.decode_record(key, value)
    assert back == rec
    assert cc.encode_record(back) == (key, value)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 3), st.lists(st.text(max_size=6), max_size=4),
       st.one_of(st.none(), st.binary(max_size=6)),
       st.lists(st.tuples(st.text(max_size=4), st.integers(0, 1000)), max_size=5))
def test_consumer_protocol_round_trip(version: int, topics: list[str], user_data: bytes | None,
                                      owned: list[tuple[str, int]]) -> None:
    sub = cc.Subscription(version, tuple(topics), user_data,
                          tuple(cc.TopicPartition(t, p) for t, p in owned) if version >= 1 else (),
                          7 if version >= 2 else None, "r" if version >= 3 else None)
    assert cc.decode_subscription(cc.encode_subscription(sub)) == sub
    asg = cc.Assignment(version, tuple(cc.TopicPartition(t, p) for t, p in owned), user_data)
    assert cc.decode_assignment(cc.encode_assignment(asg)) == asg
