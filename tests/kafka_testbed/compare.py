"""Compare coordinator_core's reading of a segment with Kafka's DumpLogSegments, record by record.

The comparison is driven by Kafka's output, not by our declarations: every field Kafka printed for a key
or value (JSON from its generated `*JsonConverter` classes, camelCase names) must exist on our decoded
dataclass under its snake_case name and hold the same value; a field of ours that Kafka did not print
(absent in that version, or a tagged field at its default) must hold an "absent" value. The embedded
ConsumerProtocol subscription and assignment, which Kafka decodes inside a GroupMetadata member, are
compared with `decode_subscription` / `decode_assignment` of the member's bytes. Batch facts (producer id,
transactional and control flags, base offset), timestamps, tombstones and transaction markers are
compared too. Each function returns a list of human-readable disagreements; empty means agreement.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import coordinator_core

from .dumplog import DumpedRecord

ZERO_UUID_TEXT = "AAAAAAAAAAAAAAAAAAAAAA"  # Kafka's Uuid.ZERO_UUID.toString()
DELETE = "<DELETE>"
# What a field Kafka does not print may hold on our side (absent in this version / tagged default).
ABSENT_VALUES: tuple[Any, ...] = (None, -1, "", b"", (), [], 0)


def segment_files(directory: Path) -> list[Path]:
    """The `.log` segments under `directory` (`__consumer_offsets-N/<base offset>.log`), by partition
    number then base offset."""
    return sorted(directory.glob("__consumer_offsets-*/*.log"),
                  key=lambda p: (int(p.parent.name.rsplit("-", 1)[1]), p.name))


def snake(name: str) -> str:
    """Kafka's JSON field name (camelCase) -> our dataclass field name (snake_case)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _flatten_topic_partitions(items: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return [(item["topic"], partition) for item in items for partition in item["partitions"]]


def compare_subscription(kafka: Any, raw: bytes, path: str) -> list[str]:
    if isinstance(kafka, str):  # Kafka kept Base64: it could not parse the bytes as ConsumerProtocol
        return [] if base64.b64decode(kafka) == raw else [f"{path}: bytes differ from Kafka's Base64"]
    ours = coordinator_core.decode_subscription(raw)
    user_data = None if kafka.get("userData") is None else base64.b64decode(kafka["userData"])
    want = (list(kafka["topics"]), user_data, _flatten_topic_partitions(kafka.get("ownedPartitions", [])),
            kafka.get("generationId"), kafka.get("rackId"))
    got = (list(ours.topics), ours.user_data, [tuple(tp) for tp in ours.owned_partitions], ours.generation_id,
           ours.rack_id)
    known = {"topics", "userData", "ownedPartitions", "generationId", "rackId"}
    problems = [f"{path}: Kafka printed unexpected subscription field {k}" for k in kafka if k not in known]
    if want != got:
        problems.append(f"{path}: Kafka {want} != ours {got}")
    return problems


def compare_assignment(kafka: Any, raw: bytes, path: str) -> list[str]:
    if isinstance(kafka, str):
        return [] if base64.b64decode(kafka) == raw else [f"{path}: bytes differ from Kafka's Base64"]
    ours = coordinator_core.decode_assignment(raw)
    user_data = None if kafka.get("userData") is None else base64.b64decode(kafka["userData"])
    want = (_flatten_topic_partitions(kafka["assignedPartitions"]), user_data)
    got = ([tuple(tp) for tp in ours.partitions], ours.user_data)
    known = {"assignedPartitions", "userData"}
    problems = [f"{path}: Kafka printed unexpected assignment field {k}" for k in kafka if k not in known]
    if want != got:
        problems.append(f"{path}: Kafka {want} != ours {got}")
    return problems


def compare_fields(kafka: Any, ours: Any, path: str) -> list[str]:  # noqa: C901, PLR0912 - one branch per JSON shape Kafka prints
    """Kafka's JSON value against our decoded value, recursively."""
    if isinstance(kafka, dict):
        if not dataclasses.is_dataclass(ours):
            return [f"{path}: Kafka printed a struct, ours is {type(ours).__name__} {ours!r:.80}"]
        problems: list[str] = []
        ours_fields = {f.name for f in dataclasses.fields(ours)}
        printed = set()
        for name, kafka_value in kafka.items():
            attr = snake(name)
            printed.add(attr)
            if attr not in ours_fields:
                problems.append(f"{path}.{name}: no field {attr} on {type(ours).__name__}")
                continue
            value = getattr(ours, attr)
            if attr == "subscription" and isinstance(value, (bytes, bytearray)):
                problems += compare_subscription(kafka_value, bytes(value), f"{path}.{name}")
            elif attr == "assignment" and isinstance(value, (bytes, bytearray)):
                problems += compare_assignment(kafka_value, bytes(value), f"{path}.{name}")
            else:
                problems += compare_fields(kafka_value, value, f"{path}.{name}")
        for attr in sorted(ours_fields - printed):
            value = getattr(ours, attr)
            if not any(value == absent and type(value) is type(absent) for absent in ABSENT_VALUES):
                problems.append(f"{path}.{attr}: Kafka printed no such field, ours holds {value!r:.80}")
        return problems
    if isinstance(kafka, list):
        if not isinstance(ours, (list, tuple)):
            return [f"{path}: Kafka printed a list, ours is {ours!r:.80}"]
        if len(kafka) != len(ours):
            return [f"{path}: Kafka has {len(kafka)} items, ours {len(ours)}"]
        problems = []
        for i, (k, o) in enumerate(zip(kafka, ours, strict=False)):
            problems += compare_fields(k, o, f"{path}[{i}]")
        return problems
    if isinstance(ours, (bytes, bytearray)):
        return [] if isinstance(kafka, str) and base64.b64decode(kafka) == ours else [
            f"{path}: Kafka {kafka!r:.80} != ours {ours!r:.80}"]
    if kafka == ZERO_UUID_TEXT and ours is None:
        return []
    if isinstance(kafka, bool) or isinstance(ours, bool):
        return [] if kafka is ours else [f"{path}: Kafka {kafka!r} != ours {ours!r}"]
    if kafka != ours or type(kafka) is not type(ours):
        return [f"{path}: Kafka {kafka!r:.120} != ours {ours!r:.120}"]
    return []


def compare_entry(entry: Any, dumped: DumpedRecord) -> list[str]:  # noqa: C901 - one check per part of DumpLogSegments' output
    """One read_segment entry against the record DumpLogSegments printed at the same position."""
    where = f"offset {dumped.offset}"
    problems: list[str] = []
    batch = dumped.batch
    facts = {
        "offset": (dumped.offset, entry.offset),
        "timestamp": (dumped.timestamp, entry.timestamp),
        "batch_base_offset": (batch.base_offset, entry.batch_base_offset),
        "producer_id": (batch.producer_id, entry.producer_id),
        "is_transactional": (batch.is_transactional, entry.is_transactional),
        "is_control": (batch.is_control, entry.is_control),
    }
    problems += [f"{where}: {name}: Kafka {k!r} != ours {o!r}" for name, (k, o) in facts.items() if k != o]
    if dumped.control_type is not None:
        if (entry.control_type, entry.coordinator_epoch) != (dumped.control_type, dumped.coordinator_epoch):
            problems.append(f"{where}: control marker: Kafka {dumped.control_type}/{dumped.coordinator_epoch} "
                            f"!= ours {entry.control_type}/{entry.coordinator_epoch}")
        return problems
    if dumped.key is None:
        return [*problems, f"{where}: Kafka printed no key"]
    if entry.key is None:
        return [*problems, f"{where}: ours has no key, Kafka printed {dumped.key:.80}"]
    try:
        kafka_key = json.loads(dumped.key)
    except json.JSONDecodeError:
        return [*problems, f"{where}: Kafka could not decode the record: {dumped.key:.200}"]
    try:
        record = coordinator_core.decode_record(entry.key, entry.value)
    except coordinator_core.DecodeError as exc:
        return [*problems, f"{where}: ours failed to decode: {exc}"]
    if record.record_type != int(kafka_key["type"]):
        problems.append(f"{where}: record type: Kafka {kafka_key['type']} != ours {record.record_type}")
    problems += compare_fields(kafka_key["data"], record.key, f"{where} key")
    if dumped.payload == DELETE:
        if entry.value is not None or record.value is not None or record.value_version is not None:
            problems.append(f"{where}: Kafka printed a tombstone, ours has value {record.value!r:.80}")
        return problems
    if dumped.payload is None:
        return [*problems, f"{where}: Kafka printed no payload"]
    kafka_value = json.loads(dumped.payload)
    if record.value_version != int(kafka_value["version"]):
        problems.append(f"{where}: value version: Kafka {kafka_value['version']} != ours {record.value_version}")
    if isinstance(record.value, (bytes, bytearray)):
        return [*problems, f"{where}: ours kept the value of record type {record.record_type} as opaque bytes"]
    problems += compare_fields(kafka_value["data"], record.value, f"{where} value")
    return problems


def compare_segment(path: Any, dumped_records: list[DumpedRecord]) -> tuple[int, list[str]]:
    """Every entry of one segment against Kafka's dump. Returns (records compared, disagreements)."""
    reader = coordinator_core.read_segment(path)
    entries = list(reader)
    problems = [f"{path}: reader problem: {p}" for p in getattr(reader, "problems", [])]
    ours_offsets = [e.offset for e in entries]
    kafka_offsets = [d.offset for d in dumped_records]
    if ours_offsets != kafka_offsets:
        missing = sorted(set(kafka_offsets) - set(ours_offsets))[:10]
        extra = sorted(set(ours_offsets) - set(kafka_offsets))[:10]
        problems.append(f"{path}: offsets differ: {len(ours_offsets)} ours vs {len(kafka_offsets)} Kafka's; "
                        f"missing {missing}, extra {extra}")
        return 0, problems
    for entry, dumped in zip(entries, dumped_records, strict=False):
        problems += [f"{path}: {p}" for p in compare_entry(entry, dumped)]
    return len(entries), problems
