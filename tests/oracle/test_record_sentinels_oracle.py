"""Fields a record version does not have are null, checked per (record type, version) against Kafka's JSON.

Kafka's generated JsonConverter writes a field only in the versions that have it (and a tagged field only
when it differs from its default), so a field missing from the oracle's `valueJson` that is not a tagged
field of a flexible version is one the version lacks. For every record the oracle wrote with Kafka's own
classes (tests/oracle/test_record_codec_oracle.py), such fields must be None in decode_record's value and
null in decode_batch's rows (the Arrow table the Spark decode stage writes from), never Kafka's in-memory
default (-1 for a state timestamp, a rebalance timeout, a leader epoch, an expire timestamp or a
subscription generation). Issue #21 item 3.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

import coordinator_core as cc
from coordinator_core import messages as m
from coordinator_core import schema
from coordinator_core.records import RECORD_TYPES
from tests.oracle.test_record_codec_oracle import camel, oracle_lines

pytestmark = pytest.mark.oracle


def _lacked(decl: schema.Struct, version: int, kafka: dict[str, Any]) -> set[str]:
    """The fields of `decl` that Kafka's JSON of a `version` value leaves out because the version lacks them."""
    flexible = decl.flexible_in(version)
    return {f.name for f in decl.fields if camel(f.name) not in kafka and not (flexible and f.tag is not None)}


def _check(decl: schema.Struct, version: int, kafka: dict[str, Any], ours: Any, seen: Counter[str]) -> None:
    """Every field Kafka's JSON lacks is None in `ours`, and is one our declaration says the version lacks;
    nested structs (group members, KIP-848/share/streams sub-structs) likewise."""
    lacked = _lacked(decl, version, kafka)
    for f in decl.fields:
        value = getattr(ours, f.name)
        if f.name in lacked:
            assert value is None, f"{decl.name} v{version}: {f.name} = {value!r}, Kafka's JSON has no {camel(f.name)}"
            assert not f.present_in(version), f"{decl.name} v{version}: {f.name} declared but absent from Kafka's JSON"
            seen[f"{decl.name}.{f.name} v{version}"] += 1
            continue
        assert f.present_in(version), f"{decl.name} v{version}: Kafka's JSON has {camel(f.name)}, not declared"
        sub = kafka.get(camel(f.name))
        if isinstance(f.type, schema.Struct) and sub is not None and value is not None:
            _check(f.type, version, sub, value, seen)
        elif isinstance(f.type, schema.ArrayOf) and isinstance(f.type.element, schema.Struct) and sub is not None:
            for k_el, o_el in zip(sub, value, strict=True):
                _check(f.type.element, version, k_el, o_el, seen)


def _records() -> list[dict[str, Any]]:
    return [line for line in oracle_lines() if "type" in line]


def test_fields_a_version_lacks_are_none_in_decode_record() -> None:
    seen: Counter[str] = Counter()
    versions: set[tuple[int, int]] = set()
    for line in _records():
        rec = cc.decode_record(bytes.fromhex(line["key"]), bytes.fromhex(line["value"]))
        decl = RECORD_TYPES[line["type"]].value
        assert decl is not None
        _check(decl, line["version"], line["valueJson"], rec.value, seen)
        versions.add((line["type"], line["version"]))
    assert {(1, v) for v in range(5)} | {(2, v) for v in range(5)} <= versions
    # The sentinels of issue #21, each seen for every version that lacks the field.
    for name in ("GroupMetadataValue.current_state_timestamp v0", "GroupMetadataValue.current_state_timestamp v1",
                 "MemberMetadata.rebalance_timeout v0", "MemberMetadata.group_instance_id v2",
                 "OffsetCommitValue.leader_epoch v0", "OffsetCommitValue.leader_epoch v2",
                 "OffsetCommitValue.expire_timestamp v0", "OffsetCommitValue.expire_timestamp v4",
                 "OffsetCommitValue.topic_id v3"):
        assert seen[name] > 0, name


def test_fields_a_version_lacks_are_null_in_the_decoded_rows() -> None:
    lines = _records()
    table = cc.decode_batch([bytes.fromhex(x["key"]) for x in lines], [bytes.fromhex(x["value"]) for x in lines])
    checked: Counter[str] = Counter()
    for line, row in zip(lines, table.to_pylist(), strict=True):
        want, version = line["valueJson"], line["version"]
        assert row["error"] is None and row["trailing_bytes"] == 0, row["error"]
        if line["type"] == 1:
            # Absent, or written as Kafka's "none" (-1, read back as empty by Kafka's loader): null.
            assert (row["leader_epoch"] is None) == (want.get("leaderEpoch", -1) == -1), line
            assert (row["expire_timestamp"] is None) == (want.get("expireTimestamp", -1) == -1), line
            checked["offset_commit"] += 1
        elif line["type"] == 2:
            g = row["group_metadata"]
            assert (g["current_state_timestamp"] is None) == (want.get("currentStateTimestamp", -1) == -1), line
            for k_member, r_member in zip(want["members"], g["members"], strict=True):
                if "rebalanceTimeout" not in k_member:
                    assert r_member["rebalance_timeout"] is None
                    checked["rebalance_timeout"] += 1
                else:
                    assert r_member["rebalance_timeout"] == k_member["rebalanceTimeout"]
                if k_member.get("groupInstanceId") is None:
                    assert r_member["group_instance_id"] is None
            checked[f"group_metadata v{version}"] += 1
        else:
            decl = RECORD_TYPES[line["type"]].value
            assert decl is not None
            doc = json.loads(row["record_json"])
            for name in _lacked(decl, version, want):
                assert doc["value"][name] is None, (line["type"], name)
            checked["record_json"] += 1
    assert checked["group_metadata v0"] and checked["group_metadata v1"] and checked["rebalance_timeout"]
    assert checked["offset_commit"] and checked["record_json"]


def test_subscription_fields_a_version_lacks_are_none() -> None:
    seen: Counter[str] = Counter()
    for line in oracle_lines():
        if line.get("protocol") != "subscription":
            continue
        raw, want, version = bytes.fromhex(line["value"]), line["valueJson"], line["version"]
        wire, _ = schema.decode_struct(m.CONSUMER_PROTOCOL_SUBSCRIPTION, version, raw, 2)
        _check(m.CONSUMER_PROTOCOL_SUBSCRIPTION, version, want, wire, seen)
        sub = cc.decode_subscription(raw)
        assert sub.generation_id == want.get("generationId") and sub.rack_id == want.get("rackId")
    assert seen["ConsumerProtocolSubscription.generation_id v1"] and seen["ConsumerProtocolSubscription.rack_id v2"]
    assert seen["ConsumerProtocolSubscription.owned_partitions v0"]
