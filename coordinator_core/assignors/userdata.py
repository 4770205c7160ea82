"""The sticky assignors' ConsumerProtocol user data, encoded and decoded the way Kafka's clients do.

* ``sticky`` (`StickyAssignor`): ``STICKY_ASSIGNOR_USER_DATA_V1`` = previous assignment
  ``[{topic: STRING, partitions: [INT32]}]`` then ``generation: INT32``; V0 (before 2.3) lacks the
  generation. There is no version prefix: the reader tries V1, then V0, and treats anything else as
  "no previous assignment, generation -1".
* ``cooperative-sticky`` (`CooperativeStickyAssignor`): ``COOPERATIVE_STICKY_ASSIGNOR_USER_DATA_V0`` =
  ``generation: INT32``.

STRING is an int16 length then UTF-8; arrays are an int32 count; all big-endian.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from coordinator_core import schema
from coordinator_core.assignors._model import AssignorError, TopicPartition
from coordinator_core.consumer_protocol import decode_sticky_user_data as _decode_layout
from coordinator_core.errors import DecodeError
from coordinator_core.messages import STICKY_ASSIGNOR_USER_DATA, StickyAssignorUserDataWire

DEFAULT_GENERATION = -1

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


def decode_sticky_user_data(user_data: bytes | None) -> tuple[list[TopicPartition], int | None]:
    """`StickyAssignor.memberData`: (previous assignment, generation or None).

    Null or empty user data means no previous assignment and no generation; bytes that parse as
    neither V1 nor V0 mean no previous assignment and generation -1 (Kafka's own fallback). The layout
    itself is read by :func:`coordinator_core.consumer_protocol.decode_sticky_user_data` (declared once in
    messages.py), which follows Java's `Schema.read`: V1 first, then V0, trailing bytes ignored.
    """
    if not user_data:
        return [], None
    try:
        decoded = _decode_layout(user_data)
    except DecodeError:
        return [], DEFAULT_GENERATION
    partitions = [(tp.topic, tp.partition) for tp in decoded.previous_assignment]
    return partitions, decoded.generation if decoded.user_data_version == 1 else None


def decode_sticky_user_data_v0(user_data: bytes) -> list[TopicPartition]:
    """`StickyAssignor.deserializeTopicPartitionAssignment` of 0.11.0-2.2.x: the previous assignment read
    with the V0 layout only (trailing bytes, such as a 2.3+ member's generation, are ignored), in the order
    the member wrote it, repeats included.

    Raises:
        AssignorError: the bytes are not V0 user data; Kafka's leader had no fallback then, its
            SchemaException failed the whole assignment.
    """
    name = STICKY_ASSIGNOR_USER_DATA.name
    try:
        decoded, _pos = schema.decoder(STICKY_ASSIGNOR_USER_DATA, 0)(user_data, 0, len(user_data), name)
    except DecodeError as e:
        raise AssignorError(f"SchemaException: sticky user data is not V0: {e}") from None
    assert isinstance(decoded, StickyAssignorUserDataWire)
    return [(entry.topic, p) for entry in decoded.previous_assignment for p in entry.partitions]


def encode_sticky_user_data(partitions: Sequence[TopicPartition], generation: int | None) -> bytes:
    """What a `StickyAssignor` member sends after receiving `partitions` in `generation`.

    Partitions are grouped by topic in first-seen order (`CollectionUtils.groupPartitionsByTopic`
    uses a HashMap; the reader does not depend on the grouping order). `generation=None` writes V0.
    """
    by_topic: dict[str, list[int]] = {}
    for topic, p in partitions:
        by_topic.setdefault(topic, []).append(p)
    out = bytearray(_INT32.pack(len(by_topic)))
    for topic, ps in by_topic.items():
        raw = topic.encode("utf-8")
        out += _INT16.pack(len(raw)) + raw + _INT32.pack(len(ps))
        for p in ps:
            out += _INT32.pack(p)
    if generation is not None:
        out += _INT32.pack(generation)
    return bytes(out)


def decode_cooperative_user_data(user_data: bytes | None) -> int | None:
    """`CooperativeStickyAssignor.memberData` fallback (no generation in the subscription): the int32
    generation, None for null user data, -1 for user data too short to hold one."""
    if user_data is None:
        return None
    if len(user_data) < 4:
        return DEFAULT_GENERATION
    return int(_INT32.unpack_from(user_data, 0)[0])


def encode_cooperative_user_data(generation: int) -> bytes:
    """What a `CooperativeStickyAssignor` member sends as user data: its last generation."""
    return _INT32.pack(generation)


def sticky_user_data_left_after_read(user_data: bytes | None) -> bytes | None:
    """What `StickyAssignor.memberData` leaves in the user data's ByteBuffer: Java's `Schema.read` moves
    the buffer's position, so a second call (2.5.1-2.8.x call it twice on the general path) sees only
    the bytes after the struct it read. A V1 read stops after the generation; a V0 one fails on the
    missing generation with the position after the partitions. For bytes that fit neither layout the
    position Java stopped at is not modelled: they are returned whole (read again, they are garbage
    again in practice).
    """
    if not user_data:
        return user_data
    pos, end = 0, len(user_data)
    try:
        count = _INT32.unpack_from(user_data, pos)[0]
        pos += 4
        for _ in range(count):
            length = _INT16.unpack_from(user_data, pos)[0]
            if length < 0 or pos + 2 + length > end:
                return user_data
            pos += 2 + length
            partitions = _INT32.unpack_from(user_data, pos)[0]
            pos += 4
            if partitions < 0 or pos + 4 * partitions > end:
                return user_data
            pos += 4 * partitions
    except struct.error:
        return user_data
    if count < 0:
        return user_data
    if end - pos >= 4:
        pos += 4  # the V1 generation
    return user_data[pos:]


def cooperative_user_data_left_after_read(user_data: bytes | None) -> bytes | None:
    """What `CooperativeStickyAssignor.memberData` (2.8.1+) leaves in the user data's ByteBuffer: the
    bytes after the int32 generation, or all of them when the read failed for lack of 4 bytes."""
    if user_data is None or len(user_data) < 4:
        return user_data
    return user_data[4:]
