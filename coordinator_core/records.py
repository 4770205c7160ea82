"""Decode and encode whole `__consumer_offsets` records: dispatch on the key's int16 record type.

``key = int16 record_type + key struct``; ``value = None`` (tombstone) or ``int16 value_version + value
struct``. The record type selects both layouts (see :data:`RECORD_TYPES`). Every failure is a
:class:`DecodeError` with a field path and byte position; no other exception leaves :func:`decode_record`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from coordinator_core import messages as m
from coordinator_core import schema, wire
from coordinator_core._frozen import fast_init
from coordinator_core.errors import DecodeError


@dataclass(frozen=True)
class RecordType:
    """One `__consumer_offsets` record type: its id, a stable snake_case name, and its layouts.

    ``value`` is None for types whose values are kept as bytes (18 and 24: in no released broker).
    """

    id: int
    name: str
    key: schema.Struct
    value: schema.Struct | None


def _t(id: int, name: str, key: schema.Struct, value: schema.Struct | None = None) -> RecordType:
    return RecordType(id, name, key, value)


_gk = m._group_key
_mk = m._member_key

#: Record types by id (Kafka 0.8.2 - 4.4). Names follow the Kafka key schemas in snake_case; types 0 and 1
#: are both offset commits (type 0 was written only by 0.8.2).
RECORD_TYPES: dict[int, RecordType] = {
    t.id: t
    for t in (
        _t(0, "offset_commit", m.OFFSET_COMMIT_KEY, m.OFFSET_COMMIT_VALUE),
        _t(1, "offset_commit", m.OFFSET_COMMIT_KEY, m.OFFSET_COMMIT_VALUE),
        _t(2, "group_metadata", m.GROUP_METADATA_KEY, m.GROUP_METADATA_VALUE),
        _t(3, "consumer_group_metadata", _gk("ConsumerGroupMetadataKey"), m.CONSUMER_GROUP_METADATA_VALUE),
        _t(4, "consumer_group_partition_metadata", _gk("ConsumerGroupPartitionMetadataKey"),
           m.CONSUMER_GROUP_PARTITION_METADATA_VALUE),
        _t(5, "consumer_group_member_metadata", _mk("ConsumerGroupMemberMetadataKey"),
           m.CONSUMER_GROUP_MEMBER_METADATA_VALUE),
        _t(6, "consumer_group_target_assignment_metadata", _gk("ConsumerGroupTargetAssignmentMetadataKey"),
           m.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
        _t(7, "consumer_group_target_assignment_member", _mk("ConsumerGroupTargetAssignmentMemberKey"),
           m.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
        _t(8, "consumer_group_current_member_assignment", _mk("ConsumerGroupCurrentMemberAssignmentKey"),
           m.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
        _t(9, "share_group_partition_metadata", _gk("ShareGroupPartitionMetadataKey"),
           m.SHARE_GROUP_PARTITION_METADATA_VALUE),
        _t(10, "share_group_member_metadata", _mk("ShareGroupMemberMetadataKey"), m.SHARE_GROUP_MEMBER_METADATA_VALUE),
        _t(11, "share_group_metadata", _gk("ShareGroupMetadataKey"), m.SHARE_GROUP_METADATA_VALUE),
        _t(12, "share_group_target_assignment_metadata", _gk("ShareGroupTargetAssignmentMetadataKey"),
           m.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
        _t(13, "share_group_target_assignment_member", _mk("ShareGroupTargetAssignmentMemberKey"),
           m.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
        _t(14, "share_group_current_member_assignment", _mk("ShareGroupCurrentMemberAssignmentKey"),
           m.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
        _t(15, "share_group_state_partition_metadata", _gk("ShareGroupStatePartitionMetadataKey"),
           m.SHARE_GROUP_STATE_PARTITION_METADATA_VALUE),
        _t(16, "consumer_group_regular_expression", m.CONSUMER_GROUP_REGULAR_EXPRESSION_KEY,
           m.CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE),
        _t(17, "streams_group_metadata", _gk("StreamsGroupMetadataKey"), m.STREAMS_GROUP_METADATA_VALUE),
        # 18 and 24: in Kafka trunk during development, in no released broker (up to 4.4): values kept as bytes.
        _t(18, "streams_group_partition_metadata", _gk("StreamsGroupPartitionMetadataKey")),
        _t(19, "streams_group_member_metadata", _mk("StreamsGroupMemberMetadataKey"),
           m.STREAMS_GROUP_MEMBER_METADATA_VALUE),
        _t(20, "streams_group_target_assignment_metadata", _gk("StreamsGroupTargetAssignmentMetadataKey"),
           m.STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
        _t(21, "streams_group_target_assignment_member", _mk("StreamsGroupTargetAssignmentMemberKey"),
           m.STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
        _t(22, "streams_group_current_member_assignment", _mk("StreamsGroupCurrentMemberAssignmentKey"),
           m.STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
        _t(23, "streams_group_topology", _gk("StreamsGroupTopologyKey"), m.STREAMS_GROUP_TOPOLOGY_VALUE),
        _t(24, "streams_group_target_assignment_resolved_topic_ids",
           _gk("StreamsGroupTargetAssignmentResolvedTopicIdsKey")),
    )
}

UNKNOWN = "unknown"


def record_type_name(record_type: int | None) -> str:
    """The snake_case name of a record type id, or "unknown"."""
    t = RECORD_TYPES.get(record_type) if record_type is not None else None
    return t.name if t else UNKNOWN


@fast_init
@dataclass(frozen=True, slots=True)
class Record:
    """One decoded `__consumer_offsets` record.

    Attributes:
        record_type: the int16 key prefix.
        key: the decoded key dataclass (``UnknownKey`` for an unknown type).
        value_version: the int16 value prefix, None for a tombstone.
        value: the decoded value dataclass; None for a tombstone; the raw value bytes (prefix included)
            for record types 18 and 24 and unknown types, whose values this library keeps opaque.
        trailing_bytes: bytes left after the complete key struct plus those after the complete value
            struct (0 normally). Kafka's readers (`CoordinatorRecordSerde`, the Scala loader's `Schema.read`)
            ignore them, so the record is read as Kafka reads it, and this count says it was not clean.
    """

    record_type: int
    key: Any
    value_version: int | None
    value: Any
    trailing_bytes: int = 0

    @property
    def kind(self) -> str:
        """Stable snake_case name of the record type, e.g. "offset_commit" or "unknown"."""
        return record_type_name(self.record_type)

    @property
    def is_tombstone(self) -> bool:
        return self.value_version is None and self.value is None


# Compiled codecs per record type, looked up by plain ints on the hot path.
_KEY_DECODERS: dict[int, schema.Decoder] = {i: schema.decoder(t.key, 0) for i, t in RECORD_TYPES.items()}
_VALUE_DECODERS: dict[int, tuple[schema.Decoder, ...]] = {
    i: tuple(schema.decoder(t.value, v) for v in range(t.value.highest_version + 1))
    for i, t in RECORD_TYPES.items()
    if t.value is not None
}


def _decode_value(record_type: int, t: RecordType, value: bytes) -> tuple[int, Any, int]:
    """(value version, decoded value, trailing byte count) of a non-null value."""
    path = t.value.name if t.value else "value"
    if len(value) == 0:
        raise DecodeError(
            "empty value (0 bytes): a tombstone's value is None (null), not empty bytes; a record with a value "
            "starts with an int16 version", f"{path}.version", 0)
    if len(value) < 2:
        raise DecodeError(f"value of {len(value)} byte(s) has no int16 version prefix", f"{path}.version", 0)
    (version,) = wire.INT16.unpack_from(value, 0)
    if t.value is None:
        return version, bytes(value), 0
    if version < 0:
        raise DecodeError(f"negative value version {version}", f"{path}.version", 0)
    decoders = _VALUE_DECODERS[record_type]
    # KIP-915: a version above the highest known is read with the newest layout (newer versions only
    # add tagged fields, which are skipped); Kafka's generated readers behave the same way.
    decode = decoders[version] if version < len(decoders) else decoders[-1]
    decoded, pos = decode(value, 2, len(value), path)
    # Bytes after the complete struct are ignored, as Kafka's `message.read(accessor, version)` ignores them.
    return version, decoded, len(value) - pos


def decode_record(key: bytes, value: bytes | None) -> Record:
    """Decode one `__consumer_offsets` record from its key and value bytes.

    >>> rec = decode_record(bytes.fromhex("000100086d792d67726f757000086d792d746f70696300000000"),
    ...                     bytes.fromhex("0003000000000000002a000000050000000001" "8bcfe56800"))
    >>> (rec.kind, rec.key.group, rec.key.topic, rec.value.offset, rec.value.leader_epoch)
    ('offset_commit', 'my-group', 'my-topic', 42, 5)

    Bytes after a complete key or value struct are ignored, as Kafka's readers ignore them, and counted in
    ``Record.trailing_bytes``.

    Raises:
        DecodeError: the bytes are truncated or carry an impossible length.
    """
    try:
        if key is None:
            raise DecodeError("record has no key", "key", 0)
        if len(key) < 2:
            raise DecodeError(f"key of {len(key)} byte(s) has no int16 record type", "key.record_type", 0)
        (record_type,) = wire.INT16.unpack_from(key, 0)
        t = RECORD_TYPES.get(record_type)
        if t is None:
            raw = bytes(value) if value is not None else None
            version = wire.INT16.unpack_from(raw, 0)[0] if raw is not None and len(raw) >= 2 else None
            return Record(record_type, m.UnknownKey(bytes(key[2:])), version, raw)
        k, pos = _KEY_DECODERS[record_type](key, 2, len(key), t.key.name)
        key_trailing = len(key) - pos
        if value is None:
            return Record(record_type, k, None, None, key_trailing)
        decoders = _VALUE_DECODERS.get(record_type)
        if decoders is not None and len(value) >= 2:
            # Hot path (offset commits, group metadata); _decode_value handles every other case.
            version = (value[0] << 8) | value[1]
            if version < len(decoders):
                path = t.value.name  # type: ignore[union-attr]
                v, pos = decoders[version](value, 2, len(value), path)
                return Record(record_type, k, version, v, key_trailing + len(value) - pos)
        version, v, value_trailing = _decode_value(record_type, t, value)
        return Record(record_type, k, version, v, key_trailing + value_trailing)
    except DecodeError:
        raise
    except Exception as e:  # the contract: nothing but DecodeError escapes
        raise DecodeError(f"undecodable record ({type(e).__name__}: {e})", "record", -1) from e


def encode_record(rec: Record) -> tuple[bytes, bytes | None]:
    """Encode a :class:`Record` back to (key bytes, value bytes or None) with the same layouts.

    The value is written at ``rec.value_version``; a version above the highest known uses the newest
    layout (as decoding does). Opaque values (types 18, 24, unknown) are written back unchanged.
    """
    prefix = wire.INT16.pack(rec.record_type)
    t = RECORD_TYPES.get(rec.record_type)
    if t is None:
        if not isinstance(rec.key, m.UnknownKey):
            raise ValueError(f"record type {rec.record_type} is unknown; its key must be an UnknownKey")
        return prefix + rec.key.data, rec.value
    key = prefix + schema.encode_struct(t.key, 0, rec.key)
    if rec.value is None:
        return key, None
    if t.value is None or isinstance(rec.value, (bytes, bytearray)):
        return key, bytes(rec.value)
    if rec.value_version is None:
        raise ValueError("a non-tombstone record needs a value_version")
    layout = min(rec.value_version, t.value.highest_version)
    return key, wire.INT16.pack(rec.value_version) + schema.encode_struct(t.value, layout, rec.value)
