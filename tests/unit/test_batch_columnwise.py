"""decode_batch's column-wise path on the batch shapes it treats specially, each held equal, row by row and
column by column, to the per-record reference (decode_record, turned into a row by batch._row):

- batches with no per-record rows, only per-record rows, and per-record rows at the first and last position
  (their values are put in place while each column is built);
- keys repeated many times, all-distinct keys, one row, empty batches;
- the last row of the buffer, where a read past the value's end would land outside the Arrow buffer;
- offset-commit values one byte off their layout (a missing or extra tagged field, a non-zero tag count
  with no tags), which must become error rows, not offset commits;
- strings: non-ASCII UTF-8, invalid UTF-8, metadata on both paths, topic ids on both paths;
- a null key whose slot still holds bytes;
- random byte damage to valid records (hypothesis): any row, any column.
"""

from __future__ import annotations

import random

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import coordinator_core as cc
from coordinator_core import messages as m
from coordinator_core.batch import DECODED_SCHEMA, _row
from coordinator_core.records import Record
from tests.unit import vectors as v

h = bytes.fromhex
TOPIC_ID = "AQIDBAUGBwgJCgsMDQ4PEA"


def reference(keys: list[bytes | None], values: list[bytes | None]) -> pa.Table:
    """The table decode_batch must return, built one record at a time through decode_record."""
    return pa.Table.from_pylist([_row(k, val) for k, val in zip(keys, values, strict=True)], schema=DECODED_SCHEMA)


def assert_same_rows(keys: list[bytes | None], values: list[bytes | None]) -> pa.Table:
    got = cc.decode_batch(keys, values)
    want = reference(keys, values)
    assert got.schema == DECODED_SCHEMA
    assert got.num_rows == len(keys)
    for i, (g, w) in enumerate(zip(got.to_pylist(), want.to_pylist(), strict=True)):
        assert g == w, (i, keys[i], values[i])
    assert got.equals(want)
    return got


def commit(
    group: str,
    topic: str,
    partition: int,
    version: int | None,
    offset: int = 7,
    epoch: int = 3,
    metadata: str = "",
    topic_id: str | None = None,
) -> tuple[bytes, bytes | None]:
    value = (
        None
        if version is None
        else m.OffsetCommitValue(
            offset,
            epoch if version >= 3 else -1,
            metadata,
            v.T,
            v.T + 1000 if version == 1 else -1,
            topic_id if version >= 4 else None,
        )
    )
    key, val = cc.encode_record(Record(1, m.OffsetCommitKey(group, topic, partition), version, value))
    return key, val


def unzip(pairs: list[tuple[bytes | None, bytes | None]]) -> tuple[list[bytes | None], list[bytes | None]]:
    return [k for k, _ in pairs], [val for _, val in pairs]


GROUP_ROW = (h(v.GROUP_KEY), h(v.GROUP_VALUE_V3))
ERROR_ROW = (h(v.OFFSET_KEY_T1), h(v.OFFSET_VALUES[3][1])[:-1])


def test_empty_batch() -> None:
    assert cc.decode_batch([], []).equals(DECODED_SCHEMA.empty_table())
    assert cc.decode_batch(pa.array([], pa.binary()), pa.array([], pa.binary())).equals(DECODED_SCHEMA.empty_table())


@pytest.mark.parametrize(
    "pair",
    [
        commit("g", "t", 0, 3),
        commit("g", "t", 0, 4, topic_id=TOPIC_ID),
        commit("g", "t", 0, None),
        GROUP_ROW,
        ERROR_ROW,
        (None, None),
        (b"", b""),
    ],
    ids=["v3", "v4-topic-id", "tombstone", "group-metadata", "truncated", "null-key", "empty-key"],
)
def test_one_row(pair: tuple[bytes | None, bytes | None]) -> None:
    assert_same_rows(*unzip([pair]))


def test_one_key_repeated_through_the_batch() -> None:
    pairs = [
        commit(
            "payments-service-00042",
            "payments-events-007",
            5,
            (1, 3, 4)[i % 3],
            offset=i,
            topic_id=TOPIC_ID if i % 2 else None,
        )
        for i in range(3000)
    ]
    pairs[1500] = commit("payments-service-00042", "payments-events-007", 5, None)
    assert_same_rows(*unzip(pairs))


def test_all_distinct_keys() -> None:
    pairs = [commit(f"group-{i}", f"topic-{i % 7}", i, (0, 1, 2, 3, 4)[i % 5], offset=i) for i in range(2000)]
    assert len({k for k, _ in pairs}) == len(pairs)
    assert_same_rows(*unzip(pairs))


@pytest.mark.parametrize("where", ["none", "first", "last", "first-and-last", "all"])
def test_per_record_rows_are_put_in_place(where: str) -> None:
    pairs = [commit("g", "t", p, 3, offset=p) for p in range(50)]
    slow = [GROUP_ROW, ERROR_ROW, (b"\x00", b"\x00\x03"), (h("00080001") + b"g" + h("0002") + b"m1", None)]
    if where == "first":
        pairs = slow + pairs
    elif where == "last":
        pairs = pairs + slow
    elif where == "first-and-last":
        pairs = slow[:2] + pairs + slow[2:]
    elif where == "all":
        pairs = slow
    table = assert_same_rows(*unzip(pairs))
    kinds = table.column("record_kind").to_pylist()
    # the truncated commit is an error row whose kind is still offset_commit; b"\x00" is too short for a type
    slow_kinds = ["group_metadata", "offset_commit", "unknown", "consumer_group_current_member_assignment"]
    assert [kind for kind in kinds if kind != "offset_commit"] == [k for k in slow_kinds if k != "offset_commit"] * (
        where != "none"
    )


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_last_row_of_the_buffer(version: int) -> None:
    """The value ends the Arrow data buffer: nothing after it may decide the row."""
    pairs = [commit("g", "t", 0, 3), commit("g", "t", 1, version)]
    assert_same_rows(*unzip(pairs))
    key, value = pairs[1]
    assert value is not None
    assert_same_rows([key], [value])


def test_v4_tagged_section_must_match_its_length() -> None:
    base = h(v.OFFSET_VALUES[5][1])  # v4, no tagged fields: ends with a 00 tag count
    with_id = h(v.OFFSET_VALUES[6][1])  # v4 with the topic id under tag 0
    key = h(v.OFFSET_KEY_T1)
    cases = [
        base[:-1] + b"\x01",  # one tagged field announced, none there
        base + b"\x00",  # a byte after the tagged section
        with_id[:-1],  # topic id one byte short
        with_id + b"\x00",  # a byte after the topic id
        with_id[:-18] + b"\x01\x01\x10" + with_id[-16:],  # tag 1, not 0: an unknown tagged field
        with_id[:-18] + b"\x01\x00\x0f" + with_id[-15:],  # tag 0 of 15 bytes
        with_id[:-19] + b"\x02\x00\x10" + with_id[-16:] + b"\x05\x00",  # two tagged fields
        base[:14] + b"\x00" + base[15:],  # compact metadata length 0: a null string
    ]
    for value in cases:  # alone (the last bytes of the buffer), then followed by another row
        assert_same_rows([key], [value])
        assert_same_rows([key, key], [value, base])


def test_strings_on_both_paths() -> None:
    long_meta = "m" * 200  # a v4 compact string of 200 bytes takes a two-byte length: per-record path
    pairs = [
        commit("grüppe-€", "tópic", 1, 3, metadata="ckpt-ü"),
        commit("g", "t", 2, 4, metadata="plain"),
        commit("g", "t", 3, 4, metadata=long_meta, topic_id=TOPIC_ID),
        commit("g", "t", 4, 1, metadata="x" * 300),
        commit("g", "t", 5, 4, topic_id="AAAAAAAAAAAAAAAAAAAAAA"),  # the all-zero Uuid reads as no topic id
        commit("g", "t", 6, 4, topic_id="_____________________w"),
        (h("00010002") + b"\xff\xfe" + h("0001") + b"t" + h("00000003"), h(v.OFFSET_VALUES[3][1])),
        (h("00010001") + b"g" + h("0002") + b"\xc3(" + h("00000003"), h(v.OFFSET_VALUES[4][1])),
        GROUP_ROW,
    ]
    table = assert_same_rows(*unzip(pairs))
    assert table.column("metadata").to_pylist()[:4] == ["ckpt-ü", "plain", long_meta, "x" * 300]
    assert table.column("topic_id").to_pylist()[2:6] == [TOPIC_ID, None, None, "_____________________w"]
    assert table.column("group_id").to_pylist()[6] == "\ufffd\ufffd"


def test_null_key_whose_slot_holds_bytes() -> None:
    """Arrow does not require a null slot to be empty; a null key is a missing key whatever its bytes."""
    key, value = commit("g", "t", 0, 3)
    offsets = pa.py_buffer(pa.array([0, len(key), 2 * len(key)], pa.int32()).buffers()[1])
    validity = pa.py_buffer(bytes([0b10]))
    keys = pa.Array.from_buffers(pa.binary(), 2, [validity, offsets, pa.py_buffer(key + key)])
    got = cc.decode_batch(keys, pa.array([value, value], pa.binary()))
    assert got.equals(reference([None, key], [value, value]))


def test_sliced_arrays_read_only_their_rows() -> None:
    pairs = [commit("g", "t", p, (1, 3, 4)[p % 3]) for p in range(30)] + [GROUP_ROW, ERROR_ROW]
    random.Random(5).shuffle(pairs)
    keys, values = unzip(pairs)
    karr, varr = pa.array(keys, pa.binary()), pa.array(values, pa.binary())
    for start, length in [(0, 1), (3, 10), (29, 3), (31, 1), (0, 32)]:
        got = cc.decode_batch(karr.slice(start, length), varr.slice(start, length))
        assert got.equals(reference(keys[start : start + length], values[start : start + length])), (start, length)


_VALID = [
    commit("g", "t", 0, 0),
    commit("grp", "topic", 9, 1),
    commit("g", "t", 1, 2),
    commit("g", "t", 2, 3),
    commit("g", "t", 3, 3, metadata="meta"),
    commit("g", "t", 4, 4),
    commit("g", "t", 5, 4, topic_id=TOPIC_ID),
    commit("g", "t", 6, 4, metadata="m", topic_id=TOPIC_ID),
    commit("g", "t", 7, None),
    (h(v.OFFSET_KEY_T0), h(v.OFFSET_VALUES[0][1])),
    GROUP_ROW,
]


@st.composite
def damaged_records(draw: st.DrawFn) -> tuple[bytes | None, bytes | None]:
    key, value = draw(st.sampled_from(_VALID))
    target = draw(st.sampled_from(["key", "value", "none"]))
    data = key if target == "key" else value
    if data is None or target == "none":
        return key, value
    damage = draw(st.sampled_from(["truncate", "extend", "flip", "insert"]))
    position = draw(st.integers(0, len(data)))
    byte = draw(st.integers(0, 255))
    if damage == "truncate":
        data = data[:position]
    elif damage == "extend":
        data = data + bytes([byte]) * draw(st.integers(1, 3))
    elif damage == "flip" and position < len(data):
        data = data[:position] + bytes([byte]) + data[position + 1 :]
    else:
        data = data[:position] + bytes([byte]) + data[position:]
    return (data, value) if target == "key" else (key, data)


@settings(max_examples=300, deadline=None)
@given(st.lists(damaged_records(), min_size=1, max_size=12))
def test_damaged_records_match_the_per_record_path(pairs: list[tuple[bytes | None, bytes | None]]) -> None:
    keys, values = unzip(pairs)
    assert cc.decode_batch(keys, values).equals(reference(keys, values))


def test_per_record_strings_not_found_in_the_key_are_appended(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every known key type starts with the group, so a per-record row's group and topic are normally cut
    from the key bytes; the fallback that appends them must give the same table."""
    pairs = [
        commit("g", "t", 0, 3),
        GROUP_ROW,
        commit("grp", "tpc", 1, 4, metadata="x" * 200),
        (h("00080001") + b"g" + h("0002") + b"m1", None),
        ERROR_ROW,
        commit("g", "t", 2, 1),
    ]
    keys, values = unzip(pairs)
    want = reference(keys, values)
    monkeypatch.setattr("coordinator_core.batch._text", lambda raw: "\x00not in the key")
    assert cc.decode_batch(keys, values).equals(want)


def test_random_topic_ids() -> None:
    import base64

    rnd = random.Random(3)
    ids = [base64.urlsafe_b64encode(rnd.randbytes(16)).decode().rstrip("=") for _ in range(300)]
    pairs = [commit("g", "t", i, 4, topic_id=topic_id) for i, topic_id in enumerate(ids)]
    table = assert_same_rows(*unzip(pairs))
    assert table.column("topic_id").to_pylist() == ids
