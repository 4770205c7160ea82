"""Kafka's own generated message classes are the oracle for every record codec.

jvm/record-oracle writes random records of every type and value version with the classes in the
kafka-group-coordinator / kafka-clients jars of the broker the project tests against (the `kafka` jar set),
together with Kafka's own JSON rendering of each. coordinator_core must decode every field to what Kafka
printed, and its encoder must reproduce Kafka's bytes exactly.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from functools import cache
from typing import Any

import pytest

import coordinator_core as cc
from coordinator_core import schema
from coordinator_core.records import RECORD_TYPES
from jvm_oracle.harness import ROOT, jar_dir, run_java

pytestmark = pytest.mark.oracle

SOURCE = ROOT / "jvm" / "record-oracle" / "src" / "main" / "java"
ZERO_UUID_TEXT = "AAAAAAAAAAAAAAAAAAAAAA"
RECORDS_PER_TYPE_AND_VERSION = 150


@cache
def oracle_lines() -> list[dict[str, Any]]:
    out = run_java(SOURCE, "kafka", "cgh.oracle.RecordCodecOracle", str(RECORDS_PER_TYPE_AND_VERSION), "20261121")
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.capitalize() for p in rest)


def kafka_json(value: Any, decl: schema.Struct, version: int) -> dict[str, Any]:
    """Our decoded value in the shape of Kafka's generated JsonConverter output for `version`."""
    flexible = decl.flexible_in(version)
    out: dict[str, Any] = {}
    for f in decl.fields:
        if not f.present_in(version):
            continue
        v = getattr(value, f.name)
        if flexible and f.tag is not None and v == f.default_value():
            continue  # Kafka prints a tagged field only when it differs from its default
        out[camel(f.name)] = render(v, f.type, version)
    return out


def render(v: Any, t: schema.FieldType, version: int) -> Any:
    if v is None:
        return ZERO_UUID_TEXT if t is schema.UUID else None
    if isinstance(t, schema.Struct):
        return kafka_json(v, t, version)
    if isinstance(t, schema.ArrayOf):
        return [render(x, t.element, version) for x in v]
    if t is schema.BYTES:
        return base64.b64encode(v).decode()
    return v


#: Share-group (KIP-932) and streams-group (KIP-1071) record types of the 4.3.1 jars, all at value version 0.
SHARE_AND_STREAMS_TYPES = (10, 11, 12, 13, 14, 15, 17, 19, 20, 21, 22, 23)
#: Declared value layouts the 4.3.1 jars cannot write: type 0 (0.8.2's offset commit, type 1's layout) and
#: type 9 (ShareGroupPartitionMetadata, Kafka 4.0 only: test_kafka_4_0_share_group_records).
NOT_IN_KAFKA_4_3 = {0, 9}


def expected_lines() -> int:
    return RECORDS_PER_TYPE_AND_VERSION * (5 + 5 + 7 + len(SHARE_AND_STREAMS_TYPES))


def test_oracle_covers_every_decoded_record_type_and_version() -> None:
    seen = {(line["type"], line["version"]) for line in oracle_lines() if "type" in line}
    kip848 = {(t, 0) for t in (3, 4, 5, 6, 7, 8, 16)}
    assert seen == {(1, v) for v in range(5)} | {(2, v) for v in range(5)} | kip848 | {
        (t, 0) for t in SHARE_AND_STREAMS_TYPES}
    declared = {(i, v) for i, t in RECORD_TYPES.items() if t.value is not None and i not in NOT_IN_KAFKA_4_3
                for v in range(t.value.highest_version + 1)}
    assert seen == declared


def test_share_and_streams_records_carry_their_optional_parts() -> None:
    # The random instances must exercise what makes these layouts hard: null nested structs and arrays,
    # tagged fields present and absent, empty and non-empty nested arrays.
    values = [line["valueJson"] for line in oracle_lines() if line.get("type") in (17, 19, 22)]
    text = json.dumps(values)
    assert '"userEndpoint": null' in text and '"userEndpoint": {' in text
    assert '"lastAssignmentConfigs": null' in text and '"lastAssignmentConfigs": [{' in text
    assert '"validatedTopologyEpoch"' in text and '"assignmentEpochs": null' in text
    assert any("validatedTopologyEpoch" not in v for v in values if "metadataHash" in v)


def check_record(line: dict[str, Any]) -> None:
    """Our decoding of Kafka's bytes prints as Kafka's JSON, and our encoding gives back Kafka's bytes."""
    key, value = bytes.fromhex(line["key"]), bytes.fromhex(line["value"])
    rec = cc.decode_record(key, value)
    t = RECORD_TYPES[line["type"]]
    assert rec.record_type == line["type"]
    assert rec.value_version == line["version"]
    assert kafka_json(rec.key, t.key, 0) == line["keyJson"], line
    assert t.value is not None
    assert kafka_json(rec.value, t.value, line["version"]) == line["valueJson"], line
    assert cc.encode_record(rec) == (key, value), line


def test_every_record_decodes_to_kafkas_fields_and_encodes_to_kafkas_bytes() -> None:
    checked = 0
    for line in oracle_lines():
        if "type" not in line:
            continue
        check_record(line)
        checked += 1
    assert checked == expected_lines()


def schema_records(jar_set: str, *types: str, n: int = RECORDS_PER_TYPE_AND_VERSION) -> list[dict[str, Any]]:
    """SchemaRecords' share/streams records from another Kafka release's jars (`types`: "9:ShareGroup...")."""
    if not any(jar_dir(jar_set).glob("kafka-group-coordinator-*.jar")):
        pytest.fail(f"jar set {jar_set} missing: run scripts/bootstrap --kafka")
    out = run_java(SOURCE, jar_set, "cgh.oracle.SchemaRecords", str(n), "20261127", *types)
    return [json.loads(line) for line in out.splitlines() if line.strip()]


#: Jar sets of the other 4.1+ releases -> the tagged fields their share/streams values have that 4.1's lack.
OTHER_RELEASES = {
    "assignor-oracle-server-4.1.0": (),
    "assignor-oracle-server-4.2.0": ("validatedTopologyEpoch", "lastAssignmentConfigs", "assignmentEpochs"),
    "assignor-oracle-server-4.3.0": ("assignmentTimestamp",),
    "assignor-oracle": ("storedDescriptionTopologyEpoch", "failedDescriptionTopologyEpoch"),  # 4.4.0
}


@pytest.mark.parametrize("jar_set", list(OTHER_RELEASES))
def test_share_and_streams_records_of_every_4_x_release(jar_set: str) -> None:
    # Every 4.1+ release's generated classes write the same types; the tagged fields each release added are
    # present at random in its records, and read by our declarations.
    lines = schema_records(jar_set, n=40)
    assert {line["type"] for line in lines} == set(SHARE_AND_STREAMS_TYPES)
    for line in lines:
        check_record(line)
    text = json.dumps([line["valueJson"] for line in lines])
    for tagged in OTHER_RELEASES[jar_set]:
        assert f'"{tagged}"' in text


#: Kafka 4.0's share-group record types (early access) whose layout 4.1+ kept; 4.1 dropped type 9.
KAFKA_4_0_SHARE_TYPES = ("9:ShareGroupPartitionMetadata", "10:ShareGroupMemberMetadata",
                         "12:ShareGroupTargetAssignmentMetadata", "13:ShareGroupTargetAssignmentMember",
                         "14:ShareGroupCurrentMemberAssignment")


def test_kafka_4_0_share_group_records() -> None:
    lines = schema_records("assignor-oracle-server-4.0.0", *KAFKA_4_0_SHARE_TYPES)
    assert len(lines) == RECORDS_PER_TYPE_AND_VERSION * len(KAFKA_4_0_SHARE_TYPES)
    for line in lines:
        check_record(line)


def test_kafka_4_0_layouts_that_4_1_changed_are_decode_errors() -> None:
    # 4.1 changed two share-group values without a new version: ShareGroupMetadataValue v0 gained MetadataHash
    # (4.0 wrote the epoch alone) and ShareGroupStatePartitionMetadataValue v0 gained InitializingTopics
    # before the two lists 4.0 wrote. Kafka 4.1+ cannot read 4.0's records either; none may read as a
    # (wrong) value: each goes to decode_errors, naming a field of the record.
    lines = schema_records("assignor-oracle-server-4.0.0", "11:ShareGroupMetadata",
                           "15:ShareGroupStatePartitionMetadata")
    assert {(line["type"], tuple(sorted(line["valueJson"]))) for line in lines} == {
        (11, ("epoch",)), (15, ("deletingTopics", "initializedTopics"))}
    for line in lines:
        with pytest.raises(cc.DecodeError) as e:
            cc.decode_record(bytes.fromhex(line["key"]), bytes.fromhex(line["value"]))
        assert e.value.field_path.startswith(RECORD_TYPES[line["type"]].value.name), line  # type: ignore[union-attr]


def test_embedded_consumer_protocol_matches_kafka() -> None:
    checked = 0
    for line in oracle_lines():
        if line.get("protocol") is None:
            continue
        raw, want, version = bytes.fromhex(line["value"]), line["valueJson"], line["version"]
        user_data = None if want["userData"] is None else base64.b64decode(want["userData"])
        if line["protocol"] == "subscription":
            sub = cc.decode_subscription(raw)
            owned = [(tp["topic"], p) for tp in want.get("ownedPartitions", []) for p in tp["partitions"]]
            assert (sub.version, list(sub.topics), sub.user_data, [tuple(x) for x in sub.owned_partitions],
                    sub.generation_id, sub.rack_id) == (
                version, want["topics"], user_data, owned, want.get("generationId"), want.get("rackId"))
            assert cc.encode_subscription(sub) == raw
        else:
            asg = cc.decode_assignment(raw)
            parts = [(tp["topic"], p) for tp in want["assignedPartitions"] for p in tp["partitions"]]
            assert (asg.version, [tuple(x) for x in asg.partitions], asg.user_data) == (version, parts, user_data)
            assert cc.encode_assignment(asg) == raw
        checked += 1
    assert checked == RECORDS_PER_TYPE_AND_VERSION * 8


def test_group_members_embedded_protocol_decodes() -> None:
    members = 0
    for line in oracle_lines():
        if line.get("type") != 2:
            continue
        rec = cc.decode_record(bytes.fromhex(line["key"]), bytes.fromhex(line["value"]))
        for member in rec.value.members:
            proto = cc.decode_member_protocol(rec.value.protocol_type, member)
            if rec.value.protocol_type == "consumer":
                assert proto.error is None and proto.subscription is not None and proto.assignment is not None
                members += 1
            else:
                assert proto == cc.MemberProtocol(None, None, None)
    assert members > 100


def test_dataclasses_follow_kafka_field_order() -> None:
    # Decoded dataclasses list their fields in Kafka's schema order, so positional construction and
    # the JSON comparison above line up; guard it for every declared value layout.
    for t in RECORD_TYPES.values():
        if t.value is not None:
            assert [f.name for f in dataclasses.fields(t.value.cls)] == [f.name for f in t.value.fields]
