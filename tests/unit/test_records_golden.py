"""decode_record / encode_record against golden bytes of every key type and value version (see vectors.py
for where each vector comes from); expected values are transcribed from those sources by hand."""

from __future__ import annotations

import pytest

import coordinator_core as cc
from coordinator_core import messages as m
from tests.unit import vectors as v

h = bytes.fromhex


@pytest.mark.parametrize("key_hex,record_type", [(v.OFFSET_KEY_T1, 1), (v.OFFSET_KEY_T0, 0)])
@pytest.mark.parametrize("case", v.OFFSET_VALUES, ids=[c[0] for c in v.OFFSET_VALUES])
def test_offset_commit_every_value_version(key_hex: str, record_type: int, case: tuple) -> None:
    _name, value_hex, version, offset, epoch, metadata, commit_ts, expire_ts, topic_id, _src = case
    rec = cc.decode_record(h(key_hex), h(value_hex))
    assert rec.record_type == record_type
    assert rec.kind == "offset_commit"
    assert rec.key == m.OffsetCommitKey(group="my-group", topic="my-topic", partition=0)
    assert rec.value_version == version
    assert rec.value == m.OffsetCommitValue(offset, epoch, metadata, commit_ts, expire_ts, topic_id)
    assert cc.encode_record(rec) == (h(key_hex), h(value_hex))


def test_offset_commit_tombstone() -> None:
    rec = cc.decode_record(h(v.OFFSET_KEY_T1), None)
    assert (rec.record_type, rec.value_version, rec.value, rec.is_tombstone) == (1, None, None, True)
    assert rec.key.group == "my-group"
    assert cc.encode_record(rec) == (h(v.OFFSET_KEY_T1), None)


def test_value_version_above_highest_is_read_with_newest_layout() -> None:
    # KIP-915: Kafka's OffsetMessageFormatterTest formats an OffsetCommitValue written as version 5
    # exactly like v4; an unknown tagged field (tag 7, 3 bytes) is skipped.
    v5 = h("0005" "000000000000002a" "00000005" "01" "0000018bcfe56800" "01" "07" "03" "aabbcc")
    rec = cc.decode_record(h(v.OFFSET_KEY_T1), v5)
    assert rec.value_version == 5
    assert rec.value == m.OffsetCommitValue(42, 5, "", v.T, None, None)  # no expire timestamp after v1


def test_group_metadata_v3_with_consumer_member() -> None:
    rec = cc.decode_record(h(v.GROUP_KEY), h(v.GROUP_VALUE_V3))
    assert (rec.record_type, rec.kind, rec.key, rec.value_version) == (
        2, "group_metadata", m.GroupMetadataKey("my-group"), 3)
    g = rec.value
    assert (g.protocol_type, g.generation, g.protocol, g.leader, g.current_state_timestamp) == (
        "consumer", 1, "range", "c-1", v.T)
    assert g.members == (
        m.MemberMetadata("c-1", None, "c", "/127.0.0.1", 300000, 45000, h(v.SUBSCRIPTION_V3), h(v.ASSIGNMENT_V3)),
    )
    assert cc.encode_record(rec) == (h(v.GROUP_KEY), h(v.GROUP_VALUE_V3))


def test_empty_group_record() -> None:
    rec = cc.decode_record(h(v.GROUP_KEY), h(v.EMPTY_GROUP_VALUE_V3))
    assert rec.value == m.GroupMetadataValue("consumer", 2, None, None, v.T, ())
    assert cc.encode_record(rec)[1] == h(v.EMPTY_GROUP_VALUE_V3)


def _member(version: int) -> bytes:
    """A GroupMetadataValue member laid out by hand for `version` (schema in reference §2.3.1)."""
    def s(x: str) -> bytes:
        return len(x).to_bytes(2, "big") + x.encode()
    out = s("m-1")
    if version >= 3:
        out += s("inst-1")
    out += s("client") + s("/10.0.0.1")
    if version >= 1:
        out += (60000).to_bytes(4, "big")
    out += (10000).to_bytes(4, "big")
    out += (3).to_bytes(4, "big") + b"sub" + (3).to_bytes(4, "big") + b"asg"
    return out


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_group_metadata_classic_versions(version: int) -> None:
    def s(x: str) -> bytes:
        return len(x).to_bytes(2, "big") + x.encode()
    body = s("consumer") + (7).to_bytes(4, "big") + s("sticky") + s("m-1")
    if version >= 2:
        body += v.T.to_bytes(8, "big")
    body += (1).to_bytes(4, "big") + _member(version)
    raw = version.to_bytes(2, "big") + body
    rec = cc.decode_record(h(v.GROUP_KEY), raw)
    assert rec.value == m.GroupMetadataValue(
        "consumer", 7, "sticky", "m-1", v.T if version >= 2 else None,  # fields a version lacks are None
        (m.MemberMetadata("m-1", "inst-1" if version >= 3 else None, "client", "/10.0.0.1",
                          60000 if version >= 1 else None, 10000, b"sub", b"asg"),),
    )
    assert cc.encode_record(rec)[1] == raw


def test_group_metadata_v4_flexible() -> None:
    # v4 (KIP-915): compact strings/bytes/arrays, a tagged section after each member and the value.
    def cs(x: str | None) -> bytes:
        return b"\x00" if x is None else bytes([len(x) + 1]) + x.encode()
    member = cs("m-1") + cs(None) + cs("client") + cs("host") + (1000).to_bytes(4, "big") \
        + (100).to_bytes(4, "big") + bytes([4]) + b"sub" + bytes([4]) + b"asg" + b"\x00"
    raw = b"\x00\x04" + cs("consumer") + (10).to_bytes(4, "big") + cs("range") + cs("m-1") \
        + (-1).to_bytes(8, "big", signed=True) + bytes([2]) + member + b"\x00"
    rec = cc.decode_record(h(v.GROUP_KEY), raw)
    assert rec.value == m.GroupMetadataValue(
        "consumer", 10, "range", "m-1", -1,
        (m.MemberMetadata("m-1", None, "client", "host", 1000, 100, b"sub", b"asg"),))
    assert cc.encode_record(rec)[1] == raw


def test_kip848_member_metadata_from_kafka_classes() -> None:
    key = h("0005") + h("0001") + b"g" + h("0002") + b"m1"
    rec = cc.decode_record(key, h(v.KIP848_MEMBER_WITH_CLASSIC))
    assert rec.kind == "consumer_group_member_metadata"
    assert rec.key == m.GroupMemberKey("g", "m1")
    assert rec.value == m.ConsumerGroupMemberMetadataValue(
        "", "", "c", "h", (), "", -1, "", m.ClassicMemberMetadata(45000, ()))
    assert cc.encode_record(rec)[1] == h(v.KIP848_MEMBER_WITH_CLASSIC)
    plain = cc.decode_record(key, h(v.KIP848_MEMBER_PLAIN))
    # no tag: Kafka's default, an empty ClassicMemberMetadata (not null)
    assert plain.value.classic_member_metadata == m.ClassicMemberMetadata(0, ())
    assert cc.encode_record(plain)[1] == h(v.KIP848_MEMBER_PLAIN)


def test_kip848_member_metadata_written_by_a_4_3_1_broker() -> None:
    key = h("0005" "0001") + b"g" + h("0002") + b"m1"
    rec = cc.decode_record(key, h(v.KIP848_MEMBER_BROKER_4_3_1))
    assert rec.value == m.ConsumerGroupMemberMetadataValue(
        None, None, "consumer-protocol-a", "/127.0.0.1", ("cgh.consumer-protocol",), "", 300000, None, None)
    assert cc.encode_record(rec)[1] == h(v.KIP848_MEMBER_BROKER_4_3_1)


def _cs(x: str) -> bytes:
    return bytes([len(x) + 1]) + x.encode()


UUID_A = bytes(range(1, 17))  # Uuid text AQIDBAUGBwgJCgsMDQ4PEA
KIP848_CASES = [
    # (record type, key bytes after the type, value bytes, expected value)
    (3, h("0001") + b"g", h("0000" "0000000a" "00"), m.ConsumerGroupMetadataValue(10, 0)),
    (3, h("0001") + b"g", h("0000" "0000000a" "01" "00" "08" "0000000000000063"),
     m.ConsumerGroupMetadataValue(10, 99)),
    (4, h("0001") + b"g",
     h("0000") + b"\x02" + UUID_A + _cs("t") + (2).to_bytes(4, "big") + b"\x02" + (0).to_bytes(4, "big")
     + b"\x02" + _cs("r1") + b"\x00" + b"\x00" + b"\x00",
     m.ConsumerGroupPartitionMetadataValue(
         (m.TopicMetadata("AQIDBAUGBwgJCgsMDQ4PEA", "t", 2, (m.PartitionMetadata(0, ("r1",)),)),))),
    (6, h("0001") + b"g", h("0000" "00000005" "00"), m.ConsumerGroupTargetAssignmentMetadataValue(5, 0)),
    (7, h("0001") + b"g" + h("0002") + b"m1",
     h("0000") + b"\x02" + UUID_A + b"\x03" + (0).to_bytes(4, "big") + (2).to_bytes(4, "big") + b"\x00" + b"\x00",
     m.ConsumerGroupTargetAssignmentMemberValue((m.TopicIdPartitions("AQIDBAUGBwgJCgsMDQ4PEA", (0, 2)),))),
    (8, h("0001") + b"g" + h("0002") + b"m1",
     h("0000" "00000007" "00000006" "01") + b"\x02" + UUID_A + b"\x02" + (1).to_bytes(4, "big") + b"\x00"
     + b"\x01" + b"\x00",
     m.ConsumerGroupCurrentMemberAssignmentValue(
         7, 6, 1, (m.AssignedTopicPartitions("AQIDBAUGBwgJCgsMDQ4PEA", (1,), ()),), ())),
    (16, h("0001") + b"g" + h("0004") + b"foo.",
     h("0000") + b"\x02" + _cs("foo.a") + (3).to_bytes(8, "big") + v.T.to_bytes(8, "big") + b"\x00",
     m.ConsumerGroupRegularExpressionValue(("foo.a",), 3, v.T)),
]


@pytest.mark.parametrize("record_type,key_rest,value,expected", KIP848_CASES,
                         ids=[f"type{c[0]}-{i}" for i, c in enumerate(KIP848_CASES)])
def test_kip848_records_field_by_field(record_type: int, key_rest: bytes, value: bytes, expected: object) -> None:
    key = record_type.to_bytes(2, "big") + key_rest
    rec = cc.decode_record(key, value)
    assert rec.record_type == record_type
    assert rec.key.group_id == "g"
    assert rec.value_version == 0
    assert rec.value == expected
    assert cc.encode_record(rec) == (key, value)
    tomb = cc.decode_record(key, None)
    assert tomb.value is None and tomb.is_tombstone


@pytest.mark.parametrize("record_type", [18, 24])
def test_unreleased_streams_records_keep_value_bytes(record_type: int) -> None:
    # StreamsGroupPartitionMetadata (18) and StreamsGroupTargetAssignmentResolvedTopicIds (24) are in no
    # released broker (up to 4.4): keyed, their values kept as bytes. Share and streams types 9-15, 17 and
    # 19-23 are decoded field by field (tests/unit/test_share_streams_records.py, the record oracle).
    key = record_type.to_bytes(2, "big") + h("0001") + b"g"
    value = h("0000" "0000002a" "00")
    rec = cc.decode_record(key, value)
    assert rec.key.group_id == "g"
    assert rec.kind.startswith("streams_group_")
    assert (rec.value_version, rec.value) == (0, value)
    assert cc.encode_record(rec) == (key, value)
    assert cc.decode_record(key, None).value is None


def test_regular_expression_key() -> None:
    rec = cc.decode_record(h("0010" "0001") + b"g" + h("0003") + b"a.*", None)
    assert rec.key == m.ConsumerGroupRegularExpressionKey("g", "a.*")


@pytest.mark.parametrize("record_type", [25, 99, 32767, -1])
def test_unknown_record_type_is_kept_not_raised(record_type: int) -> None:
    key = record_type.to_bytes(2, "big", signed=True) + b"whatever"
    rec = cc.decode_record(key, b"\x00\x01payload")
    assert rec.kind == "unknown"
    assert rec.key == m.UnknownKey(b"whatever")
    assert (rec.value_version, rec.value) == (1, b"\x00\x01payload")
    assert cc.encode_record(rec) == (key, b"\x00\x01payload")


def test_partition_for_worked_values() -> None:
    # Reference §6 table, computed with Java String.hashCode semantics.
    assert cc.java_string_hash("my-group") == -1906497762
    assert cc.partition_for("my-group") == 12
    assert cc.partition_for("console-consumer-12345") == 6
    assert cc.partition_for("") == 0
    assert cc.partition_for("a") == 47
    assert cc.java_string_hash("polygenelubricants") == -(1 << 31)
    assert cc.partition_for("polygenelubricants") == 0  # Utils.abs(Integer.MIN_VALUE) == 0


def test_partition_for_counts_utf16_code_units() -> None:
    # U+1F600 is the surrogate pair D83D DE00 in UTF-16: h = 31 * 0xD83D + 0xDE00
    assert cc.java_string_hash("\U0001F600") == 31 * 0xD83D + 0xDE00
    assert cc.partition_for("\U0001F600", 10) == (31 * 0xD83D + 0xDE00) % 10
