"""decode_batch (the vectorized path) agrees with decode_record row by row, on every shape of input: all
offset-commit versions (the column-wise fast path), tombstones, group metadata with embedded protocol,
KIP-848 and unknown records, and malformed records, which become error rows and are never dropped."""

from __future__ import annotations

import json
import random

import pyarrow as pa
import pytest

import coordinator_core as cc
from coordinator_core import messages as m
from coordinator_core.batch import DECODED_SCHEMA
from coordinator_core.records import Record
from tests.unit import vectors as v
from tests.unit.test_records_golden import KIP848_CASES

h = bytes.fromhex


def mixed_input() -> tuple[list[bytes | None], list[bytes | None]]:
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    for case in v.OFFSET_VALUES:
        keys.append(h(v.OFFSET_KEY_T1))
        values.append(h(case[1]))
    keys += [h(v.OFFSET_KEY_T0), h(v.GROUP_KEY), h(v.GROUP_KEY), h(v.OFFSET_KEY_T1)]
    values += [h(v.OFFSET_VALUES[0][1]), h(v.GROUP_VALUE_V3), h(v.EMPTY_GROUP_VALUE_V3), None]
    for rtype, key_rest, value, _ in KIP848_CASES:
        keys.append(rtype.to_bytes(2, "big") + key_rest)
        values.append(value)
    # malformed: short key, missing key, truncated value, trailing garbage, unknown type, non-UTF-8 group
    keys += [
        b"\x00",
        None,
        h(v.OFFSET_KEY_T1),
        h(v.OFFSET_KEY_T1),
        h("7fff") + b"??",
        h("00010002") + b"\xff\xfe" + h("0001") + b"t" + h("00000003"),
    ]
    values += [
        b"",
        h(v.OFFSET_VALUES[3][1]),
        h(v.OFFSET_VALUES[3][1])[:-1],
        h(v.OFFSET_VALUES[3][1]) + b"\x00",
        b"\x00\x00",
        h(v.OFFSET_VALUES[3][1]),
    ]
    return keys, values


def expected_row(key: bytes | None, value: bytes | None) -> dict:
    """What one row must hold, derived from decode_record (the per-record reference path)."""
    try:
        rec = cc.decode_record(key, value)  # type: ignore[arg-type]
    except cc.DecodeError as e:
        return {"error": e.message, "error_field_path": e.field_path, "error_position": e.position}
    row: dict = {
        "record_type": rec.record_type,
        "record_kind": rec.kind,
        "value_version": rec.value_version,
        "is_tombstone": value is None,
    }
    if isinstance(rec.key, m.OffsetCommitKey):
        row.update(group_id=rec.key.group, topic=rec.key.topic, partition=rec.key.partition)
        if rec.value is not None:
            val = rec.value
            row.update(
                committed_offset=val.offset,
                metadata=val.metadata,
                commit_timestamp=val.commit_timestamp,
                leader_epoch=None if val.leader_epoch == -1 else val.leader_epoch,
                expire_timestamp=None if val.expire_timestamp == -1 else val.expire_timestamp,
                topic_id=val.topic_id,
            )
    elif isinstance(rec.key, m.GroupMetadataKey):
        row["group_id"] = rec.key.group
    elif not isinstance(rec.key, m.UnknownKey):
        row["group_id"] = rec.key.group_id
    return row


def test_every_row_matches_decode_record() -> None:
    keys, values = mixed_input()
    table = cc.decode_batch(keys, values)
    assert table.schema == DECODED_SCHEMA
    assert table.num_rows == len(keys)
    for i, row in enumerate(table.to_pylist()):
        for column, want in expected_row(keys[i], values[i]).items():
            assert row[column] == want, (i, column, row)


def test_error_rows_keep_their_reason_and_null_decoded_columns() -> None:
    keys, values = mixed_input()
    rows = cc.decode_batch(keys, values).to_pylist()
    errors = [r for r in rows if r["error"] is not None]
    assert len(errors) == 3  # short key, missing key, truncated value
    # Trailing garbage after a complete value is read as Kafka reads it (issue #21 item 5), and counted.
    assert [r["trailing_bytes"] for r in rows].count(1) == 1
    assert [r["trailing_bytes"] for r in rows if r["error"] is None and r["trailing_bytes"] != 1] == [0] * (
        len(rows) - 4)
    assert all(r["trailing_bytes"] is None for r in errors)
    for r in errors:
        assert r["error_field_path"] and r["committed_offset"] is None and r["group_metadata"] is None
    unknown = [r for r in rows if r["record_kind"] == "unknown" and r["error"] is None]
    assert len(unknown) == 1 and json.loads(unknown[0]["record_json"])["key_bytes"] == "Pz8="
    bad_utf8 = rows[-1]
    assert bad_utf8["group_id"] == "\ufffd\ufffd"  # Java's new String(bytes, UTF_8) replacement


def test_group_metadata_members_are_decoded_into_columns() -> None:
    [row] = cc.decode_batch([h(v.GROUP_KEY)], [h(v.GROUP_VALUE_V3)]).to_pylist()
    g = row["group_metadata"]
    assert (g["protocol_type"], g["generation"], g["protocol"], g["leader"], g["current_state_timestamp"]) == (
        "consumer",
        1,
        "range",
        "c-1",
        v.T,
    )
    [member] = g["members"]
    assert member == {
        "member_id": "c-1",
        "group_instance_id": None,
        "client_id": "c",
        "client_host": "/127.0.0.1",
        "rebalance_timeout": 300000,
        "session_timeout": 45000,
        "subscription": h(v.SUBSCRIPTION_V3),
        "assignment": h(v.ASSIGNMENT_V3),
        "subscription_version": 3,
        "subscribed_topics": ["my-topic"],
        "subscription_user_data": None,
        "owned_partitions": [],
        "subscription_generation": -1,
        "rack_id": None,
        "assignment_version": 3,
        "assigned_partitions": [{"topic": "my-topic", "partition": 0}],
        "assignment_user_data": None,
        "protocol_error": None,
    }


def test_kip848_rows_carry_json() -> None:
    key = h("00080001") + b"g" + h("0002") + b"m1"
    [row] = cc.decode_batch([key], [KIP848_CASES[5][2]]).to_pylist()
    assert (row["record_kind"], row["group_id"], row["member_id"]) == (
        "consumer_group_current_member_assignment",
        "g",
        "m1",
    )
    doc = json.loads(row["record_json"])
    assert doc["value"]["member_epoch"] == 7 and doc["value"]["state"] == 1
    assert doc["value"]["assigned_partitions"][0]["topic_id"] == "AQIDBAUGBwgJCgsMDQ4PEA"


@pytest.mark.parametrize("kind", ["list", "binary", "large_binary", "chunked", "sliced"])
def test_input_shapes(kind: str) -> None:
    keys, values = mixed_input()
    want = cc.decode_batch(keys, values)
    if kind == "list":
        got = cc.decode_batch(keys, values)
    elif kind == "binary":
        got = cc.decode_batch(pa.array(keys, pa.binary()), pa.array(values, pa.binary()))
    elif kind == "large_binary":
        got = cc.decode_batch(pa.array(keys, pa.large_binary()), pa.array(values, pa.large_binary()))
    elif kind == "chunked":
        got = cc.decode_batch(
            pa.chunked_array([pa.array(keys[:5], pa.binary()), pa.array(keys[5:], pa.binary())]),
            pa.chunked_array([pa.array(values[:5], pa.binary()), pa.array(values[5:], pa.binary())]),
        )
    else:
        pad_k = pa.array([b"x" * 50] * 3 + keys + [b"y"], pa.binary()).slice(3, len(keys))
        pad_v = pa.array([b"z" * 9] * 3 + values + [None], pa.binary()).slice(3, len(values))
        got = cc.decode_batch(pad_k, pad_v)
    assert got.equals(want)


def test_large_random_fleet_matches_decode_record() -> None:
    rnd = random.Random(11)
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    for i in range(70_000):  # more than one internal chunk
        version = rnd.choice([0, 1, 2, 3, 4, 4])
        value = m.OffsetCommitValue(
            rnd.randrange(1 << 50),
            rnd.choice([-1, 0, 7]) if version >= 3 else -1,
            rnd.choice(["", "", "ckpt-ü", "x" * 200]),
            rnd.randrange(1 << 41),
            rnd.randrange(1 << 41) if version == 1 else -1,
            rnd.choice([None, "AQIDBAUGBwgJCgsMDQ4PEA"]) if version == 4 else None,
        )
        rec = Record(
            1,
            m.OffsetCommitKey(f"group-{i % 97}-é", f"topic.{i % 13}", i % 64),
            version,
            None if i % 500 == 0 else value,
        )
        k, val = cc.encode_record(rec)
        if i % 1000 == 1:
            val = (val or b"")[:-1]  # corrupt
        keys.append(k)
        values.append(val)
    table = cc.decode_batch(keys, values)
    rows = table.to_pylist()
    for i in rnd.sample(range(len(keys)), 4000) + list(range(0, 70_000, 1000)):
        for column, want in expected_row(keys[i], values[i]).items():
            assert rows[i][column] == want, (i, column)
