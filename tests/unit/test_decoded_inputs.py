"""The history's inputs from decoded rows equal those from the bytes (decode once, then move forward).

The nightly history reads what the decode stage stored (GroupMetadata members already decoded,
key types 3+ as ``record_json``) instead of decoding the archived bytes again. The reference here is
``decode_record`` on the same bytes, itself checked against Kafka's own classes elsewhere: every record
must come back equal (KIP-848 types) or give the same members (GroupMetadata), and every group of both
real-broker samples must get the same generation rows either way.
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import coordinator_core as cc
from coordinator_core import messages as m
from coordinator_core.batch import decode_batch
from coordinator_core.history import GroupRecord, group_history, group_record_from_row
from coordinator_core.history.classic import classic_member
from coordinator_core.logs import read_log_lines
from coordinator_core.record_json import record_from_json
from coordinator_core.records import Record
from tests.unit.test_roundtrip import group_metadata, kip848

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def _row(decoded: dict[str, Any], offset: int, timestamp: int | None) -> dict[str, Any]:
    return {**decoded, "offset": offset, "timestamp": timestamp}


def _decoded(records: list[tuple[bytes, bytes | None]]) -> list[dict[str, Any]]:
    return decode_batch([k for k, _ in records], [v for _, v in records]).to_pylist()


def _assert_same_input(got: GroupRecord, want: GroupRecord) -> None:
    assert (got.offset, got.timestamp, got.record.record_type, got.record.value_version) == (
        want.offset, want.timestamp, want.record.record_type, want.record.value_version)
    if want.record.record_type != 2:
        assert got.record == want.record
        return
    assert got.record.key == want.record.key
    value, expected = got.record.value, want.record.value
    if expected is None:
        assert value is None
        return
    assert (value.protocol_type, value.generation, value.protocol, value.leader) == (
        expected.protocol_type, expected.generation, expected.protocol, expected.leader)
    # The history reads the state timestamp only when there is one: Kafka's -1 ("none") comes back as None.
    assert value.current_state_timestamp == (
        None if expected.current_state_timestamp == -1 else expected.current_state_timestamp)
    assert list(value.members) == [classic_member(expected.protocol_type, x) for x in expected.members]


@st.composite
def consumer_group_metadata(draw: st.DrawFn) -> Record:
    """GroupMetadata of protocol type "consumer" whose members carry real ConsumerProtocol bytes."""
    names = st.text(min_size=1, max_size=6)
    members = []
    for _ in range(draw(st.integers(0, 3))):
        version = draw(st.integers(0, 3))
        owned = tuple(cc.TopicPartition(draw(names), draw(st.integers(0, 50))) for _ in range(draw(st.integers(0, 3))))
        sub = cc.Subscription(version, tuple(draw(st.lists(names, max_size=3))), None,
                              owned if version >= 1 else (), 7 if version >= 2 else -1, "r" if version >= 3 else None)
        asg = cc.Assignment(version, tuple(cc.TopicPartition(draw(names), draw(st.integers(0, 50)))
                                           for _ in range(draw(st.integers(0, 4)))), None)
        members.append(m.MemberMetadata(
            member_id=draw(names), group_instance_id=draw(st.one_of(st.none(), names)), client_id=draw(names),
            client_host="/10.0.0." + str(draw(st.integers(1, 254))),
            rebalance_timeout=draw(st.sampled_from([-1, 30000])),
            session_timeout=45000, subscription=cc.encode_subscription(sub), assignment=cc.encode_assignment(asg)))
    value = m.GroupMetadataValue("consumer", draw(st.integers(0, 100)), "range", None, -1, tuple(members))
    return Record(2, m.GroupMetadataKey(draw(names)), 3, value)


@settings(max_examples=300, deadline=None)
@given(st.one_of(kip848(), group_metadata(), consumer_group_metadata()), st.integers(0, 1 << 40))
def test_a_decoded_row_gives_the_record_decode_record_gives(rec: Record, offset: int) -> None:
    key, value = cc.encode_record(rec)
    (decoded,) = _decoded([(key, value)])
    got = group_record_from_row(_row(decoded, offset, 1_700_000_000_000))
    _assert_same_input(got, GroupRecord(offset, 1_700_000_000_000, cc.decode_record(key, value)))


def test_tombstones_opaque_and_unknown_types_come_back_as_decoded() -> None:
    group_key = cc.encode_record(Record(3, m.GroupIdKey("g"), 0, m.ConsumerGroupMetadataValue(1, 2)))[0]
    # Type 18 (in no released broker) is the one group-keyed type whose value stays opaque.
    share_key = (18).to_bytes(2, "big") + cc.encode_record(Record(3, m.GroupIdKey("g"), None, None))[0][2:]
    cases = [(group_key, None), (share_key, b"\x00\x00\x01\x02"), (b"\x00\x63abc", b"\x00\x01zz"), (b"\x00\x63", None)]
    for (key, value), decoded in zip(cases, _decoded(cases), strict=True):
        want = cc.decode_record(key, value)
        assert record_from_json(decoded["record_type"], decoded["value_version"], decoded["record_json"]) == want


def test_record_json_that_does_not_fit_its_layout_is_a_decode_error() -> None:
    with pytest.raises(cc.DecodeError, match="record_json of record type 3"):
        record_from_json(3, 0, '{"group_id": "g", "value": {"epoch": 1}}')


def _sample_inputs(sample: Path) -> tuple[dict[str, list[GroupRecord]], dict[str, list[GroupRecord]]]:
    """Every decodable group-level record of the sample by group: from decode_record and from decoded rows."""
    entries = []
    for segment in sorted(sample.glob("__consumer_offsets-*/*.log")):
        entries += [e for e in cc.read_segment(str(segment))
                    if not e.is_control and e.key is not None and e.key[:2] not in (b"\x00\x00", b"\x00\x01")]
    rows = _decoded([(e.key, e.value) for e in entries])
    by_bytes: dict[str, list[GroupRecord]] = defaultdict(list)
    by_rows: dict[str, list[GroupRecord]] = defaultdict(list)
    for entry, decoded in zip(entries, rows, strict=True):
        if decoded["error"] is not None or decoded["group_id"] is None:
            continue
        by_bytes[decoded["group_id"]].append(
            GroupRecord(entry.offset, entry.timestamp, cc.decode_record(entry.key, entry.value)))
        by_rows[decoded["group_id"]].append(group_record_from_row(_row(decoded, entry.offset, entry.timestamp)))
    return by_bytes, by_rows


@pytest.mark.parametrize("version", ["kafka-4.3.1", "kafka-3.9.1"])
def test_every_sample_group_has_the_same_generations_from_decoded_rows(version: str) -> None:
    sample = SAMPLES / version
    by_bytes, by_rows = _sample_inputs(sample)
    assert by_bytes.keys() == by_rows.keys() and len(by_bytes) >= 10
    events: dict[str | None, list[Any]] = defaultdict(list)
    for path in [sample / "broker" / "server.log", *sorted((sample / "clients").glob("*.log"))]:
        for event in read_log_lines(str(path), source=os.path.basename(path)):
            events[event.group_id].append(event)
    kinds = set()
    for group, records in by_bytes.items():
        for got, want in zip(by_rows[group], records, strict=True):
            _assert_same_input(got, want)
            kinds.add(want.record.kind)
        group_events = events[group] + events[None]
        want_rows = group_history(records, group_events, group_id=group)
        assert want_rows, group
        assert group_history(by_rows[group], group_events, group_id=group) == want_rows, group
    assert "group_metadata" in kinds
    if version == "kafka-4.3.1":
        assert {"consumer_group_metadata", "consumer_group_member_metadata",
                "consumer_group_current_member_assignment"} <= kinds


def test_the_generation_fold_counts_a_row_it_cannot_read_back_and_folds_the_others() -> None:
    """A consumer_group_records row whose record_json no longer fits its layout is left out of the history
    and counted in the fold's state row (`_unreadable`, summed into the run's summary); its neighbours fold."""
    import pandas as pd

    from jobs.history.fold import FOLD_RECORD_COLUMNS, _fold_fn

    good = [cc.encode_record(Record(3, m.GroupIdKey("g"), 0, m.ConsumerGroupMetadataValue(1, 2))),
            cc.encode_record(Record(3, m.GroupIdKey("g"), 0, m.ConsumerGroupMetadataValue(2, 2)))]
    rows = []
    for offset, decoded in enumerate(_decoded(good)):
        rows.append({**dict.fromkeys(FOLD_RECORD_COLUMNS), "cluster": "c", "group_id": "g", "partition": 0,
                     "offset": offset * 2, "timestamp_ms": 1_700_000_000_000 + offset,
                     "record_type": decoded["record_type"], "value_version": decoded["value_version"],
                     "record_json": decoded["record_json"]})
    rows.insert(1, {**rows[0], "offset": 1, "record_json": '{"group_id": "g", "value": {"epoch": 9}}'})
    no_events = pd.DataFrame({"cluster": pd.Series([], dtype=object)})
    out = _fold_fn({}, 48.0)(pd.DataFrame(rows, columns=list(FOLD_RECORD_COLUMNS)), no_events)
    (state,) = [r for r in out if r["_kind"] == "state"]
    assert state["_unreadable"] == 1
    # The two readable epochs are in the history; the unreadable one (epoch 9) is not.
    generations = sorted(r["generation"] for r in out if r["_kind"] == "row" and not r["_deleted"])
    assert generations == [1, 2]
