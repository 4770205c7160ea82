"""Kafka's reading of edge bytes (issue #21 items 3, 5 and 6), checked on hand-built bytes.

- A field a version does not have decodes to None, for every declared struct at every version (the oracle
  test checks the same against Kafka's JSON, tests/oracle/test_record_sentinels_oracle.py).
- Bytes after a complete struct are ignored, as Kafka's readers ignore them, and counted: on the Record, on
  the embedded ConsumerProtocol structs, in decode_batch's `trailing_bytes` column and in decode_coverage's
  status `decoded_trailing_bytes`.
- A truncation names the field actually cut short at its own byte, also inside a run of fixed-width fields;
  an empty value and empty sticky/cooperative-sticky user data get the reading Kafka gives them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import coordinator_core as cc
from coordinator_core import consumer_protocol as cp
from coordinator_core import messages as m
from coordinator_core import schema
from coordinator_core.assignors import userdata
from coordinator_core.records import RECORD_TYPES
from jobs.common.boundary import DecodeSideOutput, coverage_status
from tests.unit import vectors as v
from tests.unit.test_bad_input import GOLDEN
from tests.unit.test_decode_side_output import _decoded

h = bytes.fromhex


def i16(n: int) -> bytes:
    return n.to_bytes(2, "big", signed=True)


def i32(n: int) -> bytes:
    return n.to_bytes(4, "big", signed=True)


def i64(n: int) -> bytes:
    return n.to_bytes(8, "big", signed=True)


def s(x: str) -> bytes:
    return i16(len(x)) + x.encode()


# ------------------------------------------------------------------------------------------------
# Item 3: fields a version does not have are None

_SAMPLES = {schema.INT8: 3, schema.INT16: 4, schema.UINT16: 5, schema.INT32: 6, schema.INT64: 7,
            schema.STRING: "x", schema.BYTES: b"y", schema.UUID: "AQIDBAUGBwgJCgsMDQ4PEA"}


def _sample(t: schema.FieldType, version: int) -> Any:
    """A value of type `t` that differs from every default (so tagged fields are written)."""
    if isinstance(t, schema.ArrayOf):
        return (_sample(t.element, version),)
    if isinstance(t, schema.Struct):
        return _filled(t, version)
    return _SAMPLES[t]


def _filled(decl: schema.Struct, version: int) -> Any:
    """`decl` at `version` with every field the version has set, and -12345 in every field it lacks (which
    the encoder must not write and the decoder must not return)."""
    return decl.cls(**{f.name: _sample(f.type, version) if f.present_in(version) else -12345 for f in decl.fields})


def _declared_structs() -> list[schema.Struct]:
    out = [t.value for t in RECORD_TYPES.values() if t.value is not None]
    return [*out, m.CONSUMER_PROTOCOL_SUBSCRIPTION, m.CONSUMER_PROTOCOL_ASSIGNMENT, m.STICKY_ASSIGNOR_USER_DATA]


def _absent_fields_are_none(decl: schema.Struct, version: int, want: Any, got: Any) -> int:
    """Checks `got` against `want` field by field, nested structs included; returns the absent fields seen."""
    absent = 0
    for f in decl.fields:
        g = getattr(got, f.name)
        if not f.present_in(version):
            assert g is None, f"{decl.name} v{version}: {f.name} is {g!r}, not None"
            absent += 1
        elif isinstance(f.type, schema.Struct):
            absent += _absent_fields_are_none(f.type, version, getattr(want, f.name), g)
        elif isinstance(f.type, schema.ArrayOf) and isinstance(f.type.element, schema.Struct):
            for w_el, g_el in zip(getattr(want, f.name), g, strict=True):
                absent += _absent_fields_are_none(f.type.element, version, w_el, g_el)
        else:
            assert g == getattr(want, f.name), (decl.name, version, f.name)
    return absent


def test_every_declared_field_a_version_lacks_decodes_to_none() -> None:
    absent = 0
    for decl in _declared_structs():
        for version in range(decl.highest_version + 1):
            value = _filled(decl, version)
            raw = schema.encode_struct(decl, version, value)
            assert b"\xff\xff\xcf\xc7" not in raw  # -12345 was not written
            got, pos = schema.decode_struct(decl, version, raw)
            assert pos == len(raw)
            absent += _absent_fields_are_none(decl, version, value, got)
    # OffsetCommitValue: leader_epoch v0-2, expire_timestamp v0/v2/v3/v4, topic_id v0-3; GroupMetadataValue
    # current_state_timestamp v0/v1 and its members' group_instance_id v0-2, rebalance_timeout v0; the
    # subscription's owned_partitions v0, generation_id v0/v1, rack_id v0-2; sticky generation V0; at least.
    assert absent >= 3 + 4 + 4 + 2 + 3 + 1 + 1 + 2 + 3 + 1


def test_group_metadata_v0_v1_have_no_state_timestamp_and_v0_members_no_rebalance_timeout() -> None:
    for version in (0, 1, 2):
        member = s("m-1") + s("c") + s("/h") + (i32(60000) if version >= 1 else b"") + i32(10000) + i32(0) + i32(0)
        raw = i16(version) + s("consumer") + i32(3) + s("range") + s("m-1") \
            + (i64(1_700_000_000_000) if version >= 2 else b"") + i32(1) + member
        rec = cc.decode_record(h(v.GROUP_KEY), raw)
        assert rec.value.current_state_timestamp == (1_700_000_000_000 if version >= 2 else None)
        assert rec.value.members[0].rebalance_timeout == (60000 if version >= 1 else None)
        [row] = cc.decode_batch([h(v.GROUP_KEY)], [raw]).to_pylist()
        g = row["group_metadata"]
        assert g["current_state_timestamp"] == (1_700_000_000_000 if version >= 2 else None)
        assert g["members"][0]["rebalance_timeout"] == (60000 if version >= 1 else None)
        assert cc.encode_record(rec) == (h(v.GROUP_KEY), raw)


def test_a_written_minus_one_state_timestamp_is_none_in_the_rows_as_kafka_reads_it() -> None:
    # GroupMetadataManager: `value.currentStateTimestamp() == -1 ? Optional.empty() : ...`
    raw = i16(3) + s("consumer") + i32(0) + i16(-1) + i16(-1) + i64(-1) + i32(0)
    assert cc.decode_record(h(v.GROUP_KEY), raw).value.current_state_timestamp == -1
    [row] = cc.decode_batch([h(v.GROUP_KEY)], [raw]).to_pylist()
    assert row["group_metadata"]["current_state_timestamp"] is None


def test_subscription_fields_a_version_lacks_are_null_in_the_member_rows() -> None:
    for version in range(4):
        sub = i16(version) + i32(1) + s("t") + i32(-1)
        sub += (i32(1) + s("t") + i32(1) + i32(0)) if version >= 1 else b""
        sub += i32(5) if version >= 2 else b""
        sub += s("r") if version >= 3 else b""
        decoded = cc.decode_subscription(sub)
        assert (decoded.generation_id, decoded.rack_id) == (5 if version >= 2 else None, "r" if version >= 3 else None)
        member = s("m") + s("c") + s("/h") + i32(1) + i32(2) + i32(len(sub)) + sub + i32(0)
        raw = i16(1) + s("consumer") + i32(1) + s("range") + s("m") + i32(1) + member
        [row] = cc.decode_batch([h(v.GROUP_KEY)], [raw]).to_pylist()
        mem = row["group_metadata"]["members"][0]
        assert mem["owned_partitions"] == ([{"topic": "t", "partition": 0}] if version >= 1 else None)
        assert mem["subscription_generation"] == (5 if version >= 2 else None)
        assert mem["rack_id"] == ("r" if version >= 3 else None)


def test_offset_commit_fields_a_version_lacks_are_null_on_both_batch_paths() -> None:
    keys = [h(v.OFFSET_KEY_T1)] * len(v.OFFSET_VALUES)
    values = [h(c[1]) for c in v.OFFSET_VALUES]
    # the regular rows (column-wise path) and the same rows with one trailing byte (per-record path)
    for vals in (values, [x + b"\x00" for x in values]):
        rows = cc.decode_batch(keys, vals).to_pylist()
        for case, row in zip(v.OFFSET_VALUES, rows, strict=True):
            version = case[2]
            assert (row["leader_epoch"] is None) == (version < 3 or case[4] == -1), case[0]
            assert (row["expire_timestamp"] is None) == (version != 1), case[0]


# ------------------------------------------------------------------------------------------------
# Item 5: trailing bytes


def test_trailing_bytes_of_an_embedded_subscription_are_read_and_counted_on_the_row() -> None:
    sub = h(v.SUBSCRIPTION_V3) + b"\x00\x00\x00"
    asg = h(v.ASSIGNMENT_V3) + b"\x01"
    assert cc.decode_subscription(sub).trailing_bytes == 3
    assert cc.decode_assignment(asg).trailing_bytes == 1
    assert dataclasses.replace(cc.decode_assignment(asg), trailing_bytes=0) == cc.decode_assignment(h(v.ASSIGNMENT_V3))
    member = m.MemberMetadata("m", None, "c", "/h", 1, 2, sub, asg)
    value = m.GroupMetadataValue("consumer", 4, "range", "m", 1_700_000_000_000, (member,))
    key, raw = cc.encode_record(cc.Record(2, m.GroupMetadataKey("g"), 3, value))
    assert raw is not None
    [row] = cc.decode_batch([key], [raw + b"\x09\x09"]).to_pylist()
    assert row["error"] is None and row["trailing_bytes"] == 2 + 3 + 1
    mem = row["group_metadata"]["members"][0]
    assert mem["protocol_error"] is None and mem["assigned_partitions"] == [{"topic": "my-topic", "partition": 0}]


def test_a_newer_consumer_protocol_versions_fields_are_not_trailing_bytes() -> None:
    # ConsumerProtocol reads a version above the highest it knows with the newest layout ("new versions
    # cannot remove or reorder fields"): the bytes after it are the newer version's fields.
    sub = cc.decode_subscription(i16(4) + h(v.SUBSCRIPTION_V3)[2:] + b"new-field")
    asg = cc.decode_assignment(i16(4) + h(v.ASSIGNMENT_V3)[2:] + b"new-field")
    assert (sub.version, sub.trailing_bytes, asg.version, asg.trailing_bytes) == (4, 0, 4, 0)
    assert cc.decode_subscription(h(v.SUBSCRIPTION_V3) + b"new-field").trailing_bytes == 9


def test_coverage_counts_trailing_bytes_with_their_own_status() -> None:
    good_key, good_value = h(v.OFFSET_KEY_T1), h(v.OFFSET_VALUES[3][1])
    keys = [good_key, good_key, good_key + b"\x00", good_key, good_key]
    values = [good_value, good_value + b"\x00", None, good_value[:-1], None]
    table = cc.decode_batch(keys, values)
    assert table.column("trailing_bytes").to_pylist() == [0, 1, 1, None, 0]
    assert coverage_status(table).to_pylist() == ["decoded", "decoded_trailing_bytes", "decoded_trailing_bytes",
                                                  "error", "tombstone"]
    # The decode stage's task function (Arrow in, Arrow out) and its side output, as the Spark job runs them.
    seen = DecodeSideOutput()
    seen.observe(_decoded(list(zip(keys, values, strict=True))))
    assert seen.coverage == {
        ("c1", 1, "offset_commit", 3, "decoded"): 1,
        ("c1", 1, "offset_commit", 3, "decoded_trailing_bytes"): 1,
        ("c1", 1, "offset_commit", None, "decoded_trailing_bytes"): 1,
        ("c1", 1, "offset_commit", None, "error"): 1,
        ("c1", 1, "offset_commit", None, "tombstone"): 1,
    }
    assert len(seen.errors) == 1


def test_run_summary_counts_trailing_bytes_as_decoded() -> None:
    from jobs import run_outputs

    assert "decoded_trailing_bytes" in run_outputs._DECODED_STATUSES
    assert "error" not in run_outputs._DECODED_STATUSES


def test_cooperative_sticky_user_data_ignores_bytes_after_the_generation() -> None:
    assert cc.decode_cooperative_sticky_user_data(i32(7) + b"\x01\x02") == 7  # Schema.read stops after it


# ------------------------------------------------------------------------------------------------
# Item 6: the field cut short, at its own byte


def test_a_cut_inside_a_fixed_run_names_the_field_cut_short() -> None:
    value = h(v.OFFSET_VALUES[3][1])  # v3: version, offset (8), leader epoch (4), metadata, commit ts
    with pytest.raises(cc.DecodeError) as err:
        cc.decode_record(h(v.OFFSET_KEY_T1), value[:13])  # offset whole, leader epoch cut after 1 byte
    assert (err.value.field_path, err.value.position) == ("OffsetCommitValue.leader_epoch", 10)
    assert err.value.message == "truncated input: needed 4 byte(s), 3 left"
    with pytest.raises(cc.DecodeError) as err:
        cc.decode_record(h(v.OFFSET_KEY_T1), value[:9])  # inside the offset
    assert (err.value.field_path, err.value.position, err.value.message) == (
        "OffsetCommitValue.offset", 2, "truncated input: needed 8 byte(s), 7 left")


@pytest.mark.parametrize("key,value", GOLDEN, ids=[f"golden{i}" for i in range(len(GOLDEN))])
def test_every_truncation_names_a_field_that_starts_before_the_cut_and_runs_past_it(key: bytes, value: bytes) -> None:
    for cut in range(2, len(value)):
        with pytest.raises(cc.DecodeError) as err:
            cc.decode_record(key, value[:cut])
        e = err.value
        if e.message.startswith("truncated input: needed "):
            need = int(e.message.split()[3])
            assert e.position <= cut < e.position + need, (cut, str(e))
            assert e.message.endswith(f"{cut - e.position} left"), (cut, str(e))
            # one field, not a run of them: a fixed-width primitive, or an int32 array's elements
            assert need in (1, 2, 4, 8, 16) or (need % 4 == 0 and e.field_path.endswith("partitions")), str(e)


def test_an_empty_value_says_a_tombstone_is_none() -> None:
    for key in (h(v.OFFSET_KEY_T1), h(v.GROUP_KEY), i16(3) + s("g")):
        with pytest.raises(cc.DecodeError) as err:
            cc.decode_record(key, b"")
        assert "tombstone's value is None (null), not empty bytes" in str(err.value)
        assert err.value.position == 0
    assert cc.decode_record(h(v.OFFSET_KEY_T1), None).is_tombstone
    [row] = cc.decode_batch([h(v.OFFSET_KEY_T1)], [b""]).to_pylist()
    assert "tombstone's value is None" in row["error"]


def test_empty_sticky_user_data_is_no_previous_assignment() -> None:
    # StickyAssignor.memberData: `userData == null || !userData.hasRemaining()` -> no partitions, no generation
    assert cc.decode_sticky_user_data(b"") == cc.StickyUserData((), None, None)
    assert userdata.decode_sticky_user_data(b"") == ([], None)
    # CooperativeStickyAssignor.memberData: reading the generation of empty user data fails -> DEFAULT_GENERATION
    assert cc.decode_cooperative_sticky_user_data(b"") == cp.DEFAULT_GENERATION == -1
    with pytest.raises(cc.DecodeError, match="needed 4 byte"):
        cc.decode_cooperative_sticky_user_data(b"\x00\x01")
