"""Share-group (KIP-932) and streams-group (KIP-1071) records: decoded field by field, round-tripped, and kept
out of the consumer-group history.

The hand-built bytes below follow Kafka's flexible-version wire format (compact strings and arrays carry
length + 1, a nullable struct an int8 -1/1 marker, every struct a tagged-field section); the record oracle
(tests/oracle/test_record_codec_oracle.py) checks every type against Kafka's own generated classes.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import coordinator_core as cc
from coordinator_core import messages as m
from coordinator_core import schema
from coordinator_core.batch import decode_batch
from coordinator_core.history import group_history
from coordinator_core.history.decoded import group_record_from_row
from coordinator_core.records import RECORD_TYPES, Record
from coordinator_core.wire import uuid_to_kafka_string
from tests.unit.test_history_builders import GROUP, ms
from tests.unit.test_history_consumer import kip848_records, summary

SHARE_TYPES = (9, 10, 11, 12, 13, 14, 15)
STREAMS_TYPES = (17, 19, 20, 21, 22, 23)
MEMBER_TYPES = {10, 13, 14, 19, 21, 22}


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


def test_every_share_and_streams_type_but_18_and_24_has_a_value_layout() -> None:
    for rt in (*SHARE_TYPES, *STREAMS_TYPES):
        t = RECORD_TYPES[rt]
        assert t.value is not None and t.value.flexible_in(0), rt
        assert t.name.startswith("share_group_" if rt < 16 else "streams_group_")
        assert t.value.name == "".join(p.capitalize() for p in t.name.split("_")) + "Value"
        assert t.key.name == t.value.name[: -len("Value")] + "Key"
    assert RECORD_TYPES[18].value is None and RECORD_TYPES[24].value is None


def test_share_group_metadata_by_hand() -> None:
    key = h("000b 0001") + b"g"
    value = h("0000" "0000002a" "0000000000000007" "00")
    rec = cc.decode_record(key, value)
    assert (rec.kind, rec.key) == ("share_group_metadata", m.GroupIdKey("g"))
    assert rec.value == m.ShareGroupMetadataValue(42, 7)
    assert cc.encode_record(rec) == (key, value)


def test_streams_group_metadata_tagged_fields_by_hand() -> None:
    key = h("0011 0001") + b"s"
    # epoch 1, metadata hash 2, then 2 tagged fields: tag 0 (validated topology epoch 5, 4 bytes) and tag 1
    # (last assignment configs, 1 byte: a null compact array).
    value = h("0000" "00000001" "0000000000000002" "02" "00 04 00000005" "01 01 00")
    rec = cc.decode_record(key, value)
    assert rec.value == m.StreamsGroupMetadataValue(1, 2, 5, None, -1, -1)
    assert cc.encode_record(rec) == (key, value)
    # No tagged fields: Kafka's defaults (-1, an empty list).
    rec = cc.decode_record(key, h("0000" "00000001" "0000000000000002" "00"))
    assert rec.value == m.StreamsGroupMetadataValue(1, 2, -1, (), -1, -1)


def test_streams_group_member_metadata_by_hand() -> None:
    key = h("0013 0001") + b"s" + h("0002") + b"m1"
    value = h(
        "0000"
        "00"  # instance id: null
        "02 72"  # rack id "r"
        "02 63"  # client id "c"
        "03 2f68"  # client host "/h"
        "00007530"  # rebalance timeout 30000
        "00000003"  # topology epoch 3
        "02 70"  # process id "p"
        "01 02 68 1f90 00"  # user endpoint present: host "h", port 8080 (uint16), no tags
        "02 02 6b 02 76 00"  # one client tag k=v
        "00"
    )
    rec = cc.decode_record(key, value)
    assert rec.key == m.GroupMemberKey("s", "m1")
    assert rec.value == m.StreamsGroupMemberMetadataValue(
        None, "r", "c", "/h", 30000, 3, "p", m.Endpoint("h", 8080), (m.KeyValue("k", "v"),))
    assert cc.encode_record(rec) == (key, value)
    # A port above 32767 is a uint16, not a negative int16.
    high = dataclasses.replace(rec.value, user_endpoint=m.Endpoint("h", 65535))
    assert cc.decode_record(*cc.encode_record(dataclasses.replace(rec, value=high))).value == high


def test_share_group_state_partition_metadata_by_hand() -> None:
    tid = bytes(range(1, 17))
    key = h("000f 0001") + b"g"
    value = (h("0000") + h("02") + tid + h("02") + b"t" + h("03 00000000 00000001 00")  # initializing t: 0, 1
             + h("01")  # nothing initialized
             + h("02") + tid + h("02") + b"t" + h("00")  # deleting t
             + h("00"))
    rec = cc.decode_record(key, value)
    text = uuid_to_kafka_string(tid)
    assert rec.value == m.ShareGroupStatePartitionMetadataValue(
        (m.TopicPartitionsInfo(text, "t", (0, 1)),), (), (m.ShareTopicInfo(text, "t"),))
    assert cc.encode_record(rec) == (key, value)


# ---------------------------------------------------------------------------------------------------------
# Round trip for random values of every declared share/streams layout.

_PRIMITIVES: dict[Any, st.SearchStrategy[Any]] = {
    schema.INT8: st.integers(-(1 << 7), (1 << 7) - 1),
    schema.INT16: st.integers(-(1 << 15), (1 << 15) - 1),
    schema.UINT16: st.integers(0, (1 << 16) - 1),
    schema.INT32: st.integers(-(1 << 31), (1 << 31) - 1),
    schema.INT64: st.integers(-(1 << 63), (1 << 63) - 1),
    schema.STRING: st.text(max_size=8),
    schema.UUID: st.one_of(st.none(), st.binary(min_size=16, max_size=16).filter(any).map(uuid_to_kafka_string)),
}


def _values(t: schema.FieldType, nullable: bool) -> st.SearchStrategy[Any]:
    if isinstance(t, schema.ArrayOf):
        inner: st.SearchStrategy[Any] = st.lists(_values(t.element, False), max_size=3).map(tuple)
    elif isinstance(t, schema.Struct):
        inner = st.builds(t.cls, *(_values(f.type, f.nullable_in(0)) for f in t.fields))
    else:
        inner = _PRIMITIVES[t]
    return st.one_of(st.none(), inner) if nullable else inner


@st.composite
def share_and_streams_records(draw: st.DrawFn) -> Record:
    rt = draw(st.sampled_from((*SHARE_TYPES, *STREAMS_TYPES)))
    t = RECORD_TYPES[rt]
    assert t.value is not None
    key = m.GroupMemberKey(draw(st.text(max_size=6)), draw(st.text(max_size=6))) if rt in MEMBER_TYPES else \
        m.GroupIdKey(draw(st.text(max_size=6)))
    return Record(rt, key, 0, draw(_values(t.value, False)))


@settings(max_examples=400, deadline=None)
@given(share_and_streams_records())
def test_encode_then_decode_is_identity(rec: Record) -> None:
    key, value = cc.encode_record(rec)
    back = cc.decode_record(key, value)
    assert back == rec
    assert cc.encode_record(back) == (key, value)


@settings(max_examples=300, deadline=None)
@given(share_and_streams_records(), st.data())
def test_every_truncation_raises_decode_error_and_random_bytes_nothing_else(rec: Record, data: st.DataObject) -> None:
    key, value = cc.encode_record(rec)
    assert value is not None
    cut = data.draw(st.integers(0, len(value) - 1))
    try:
        cc.decode_record(key, value[:cut])
    except cc.DecodeError as e:
        assert e.field_path.startswith(RECORD_TYPES[rec.record_type].value.name)  # type: ignore[union-attr]
    else:
        raise AssertionError(f"{cut} of {len(value)} bytes decoded")
    garbage = value[:2] + data.draw(st.binary(max_size=40))
    with contextlib.suppress(cc.DecodeError):
        cc.decode_record(key, garbage)


# ---------------------------------------------------------------------------------------------------------
# The history: share and streams records are not KIP-848 consumer-group records.


def _share_and_streams(group: str) -> list[tuple[bytes, bytes | None]]:
    """Records of every share/streams kind for `group`, with epochs that would move a KIP-848 group's."""
    tp = (m.TopicIdPartitions(uuid_to_kafka_string(bytes([9]) * 16), (0, 1)),)
    tasks = (m.TaskIds("0", (0, 1)),)
    values: list[tuple[int, Any, Any]] = [
        (11, m.GroupIdKey(group), m.ShareGroupMetadataValue(99, 5)),
        (10, m.GroupMemberKey(group, "sh-1"), m.ShareGroupMemberMetadataValue(None, "c", "/h", ("orders",))),
        (13, m.GroupMemberKey(group, "sh-1"), m.ShareGroupTargetAssignmentMemberValue(tp)),
        (12, m.GroupIdKey(group), m.ShareGroupTargetAssignmentMetadataValue(99, 0)),
        (14, m.GroupMemberKey(group, "sh-1"), m.ShareGroupCurrentMemberAssignmentValue(99, 98, 0, tp)),
        (17, m.GroupIdKey(group), m.StreamsGroupMetadataValue(99, 5, 1, (), -1, -1)),
        (19, m.GroupMemberKey(group, "st-1"), m.StreamsGroupMemberMetadataValue(
            None, None, "c", "/h", 1000, 1, "p", None, ())),
        (21, m.GroupMemberKey(group, "st-1"), m.StreamsGroupTargetAssignmentMemberValue(tasks, (), ())),
        (20, m.GroupIdKey(group), m.StreamsGroupTargetAssignmentMetadataValue(99, 0)),
        (22, m.GroupMemberKey(group, "st-1"), m.StreamsGroupCurrentMemberAssignmentValue(
            99, 98, 0, (m.AssignedTaskIds("0", (0, 1), ()),), (), (), (), (), ())),
        (10, m.GroupMemberKey(group, "sh-1"), None),  # a leaving share member's tombstone
        (11, m.GroupIdKey(group), None),
    ]
    return [cc.encode_record(Record(rt, key, None if value is None else 0, value)) for rt, key, value in values]


def _decoded_group_records(records: list[tuple[bytes, bytes | None]], offset: int, seconds: float) -> list[Any]:
    """The records through the decode stage's Arrow path and back, as the history stage reads them."""
    rows = decode_batch([k for k, _ in records], [v for _, v in records]).to_pylist()
    out = []
    for i, row in enumerate(rows):
        assert row["error"] is None, row
        out.append(group_record_from_row({**row, "offset": offset + i, "timestamp": ms(seconds)}))
    return out


def test_decoded_rows_carry_the_fields_and_come_back_as_decoded() -> None:
    records = _share_and_streams("sh")
    rows = decode_batch([k for k, _ in records], [v for _, v in records]).to_pylist()
    for (key, value), row in zip(records, rows, strict=True):
        rec = cc.decode_record(key, value)
        assert (row["record_kind"], row["group_id"], row["member_id"], row["value_version"]) == (
            rec.kind, rec.key.group_id, getattr(rec.key, "member_id", None), rec.value_version)
        assert ('"value_bytes"' in row["record_json"]) is False
    assert '"subscribed_topic_names": ["orders"]' in rows[1]["record_json"]
    assert '"subtopology_id": "0"' in rows[7]["record_json"]


def test_share_and_streams_records_leave_a_kip848_groups_history_unchanged() -> None:
    alone = group_history(kip848_records())
    # The same group id (Kafka keeps one group type per id, but the history must not rely on it) and their
    # records in the middle of the KIP-848 group's: every epoch above would be a new generation if misread.
    mixed = [*kip848_records()[:10], *_decoded_group_records(_share_and_streams(GROUP), 1000, 20.1),
             *kip848_records()[10:]]
    together = group_history(mixed)
    assert [summary(r) for r in together] == [summary(r) for r in alone]
    assert [[(x.member_id, x.member_epoch) for x in r.members] for r in together] == [
        [(x.member_id, x.member_epoch) for x in r.members] for r in alone]
    assert [r.record_count for r in together] == [r.record_count for r in alone]
    # A share/streams group alone has no consumer-group generations.
    assert group_history(_decoded_group_records(_share_and_streams("sh"), 0, 5.0)) == []
