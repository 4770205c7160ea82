"""Kafka's wire primitives over a bytes buffer, with explicit bounds checks.

Every reader takes ``(buf, pos, end, path)`` and returns ``(value, next_pos)``; it never reads past
``end`` and raises :class:`DecodeError` naming the field path and byte position instead. The record
codecs compiled in :mod:`coordinator_core.schema` call these for variable-length fields and unpack runs
of fixed-width fields with precompiled ``struct.Struct`` objects themselves.

Encodings follow ``org.apache.kafka.common.protocol.types.Type`` and ``ByteUtils``: big-endian fixed
ints; STRING = int16 length + UTF-8; BYTES = int32 length; COMPACT_* = unsigned varint (length + 1);
tagged-field sections = uvarint count, then (uvarint tag, uvarint size, bytes) per field.
"""

from __future__ import annotations

import base64
import struct
import uuid as _uuid

from coordinator_core.errors import DecodeError

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
UINT16 = struct.Struct(">H")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")
UINT32 = struct.Struct(">I")
UUID = struct.Struct(">16s")

ZERO_UUID = bytes(16)


def underrun(path: str, pos: int, need: int, end: int) -> DecodeError:
    """The error for a field that runs past the end of its buffer."""
    return DecodeError(
        f"truncated input: needed {need} byte(s), {max(end - pos, 0)} left", path, pos
    )


def run_underrun(path: str, pos: int, end: int, widths: tuple[tuple[str, int], ...]) -> DecodeError:
    """The error for a run of fixed-width fields (read with one bounds check) that does not fit: it names
    the first field of the run that is cut short, at that field's own position and width."""
    at = pos
    for name, width in widths:
        if at + width > end:
            return underrun(f"{path}.{name}", at, width, end)
        at += width
    return underrun(path, pos, at - pos, end)  # pragma: no cover - called only when the run does not fit


def _text(raw: bytes) -> str:
    # Java's `new String(bytes, UTF_8)` replaces malformed sequences instead of failing, and Kafka
    # decodes keys that way; doing the same keeps group ids identical to what Kafka reports.
    return raw.decode("utf-8", "replace")


# ----------------------------------------------------------------------------------------------
# Classic (non-flexible) variable-length fields


def read_string(buf: bytes, pos: int, end: int, path: str, nullable: bool) -> tuple[str | None, int]:
    """STRING / NULLABLE_STRING: int16 length (-1 = null) followed by UTF-8."""
    if pos + 2 > end:
        raise underrun(path, pos, 2, end)
    (n,) = INT16.unpack_from(buf, pos)
    pos += 2
    if n < 0:
        if n == -1 and nullable:
            return None, pos
        raise DecodeError(f"invalid string length {n}", path, pos - 2)
    stop = pos + n
    if stop > end:
        raise DecodeError(f"string length {n} runs past the end ({end - pos} byte(s) left)", path, pos - 2)
    return _text(buf[pos:stop]), stop


def read_bytes(buf: bytes, pos: int, end: int, path: str, nullable: bool) -> tuple[bytes | None, int]:
    """BYTES / NULLABLE_BYTES: int32 length (-1 = null) followed by the bytes."""
    if pos + 4 > end:
        raise underrun(path, pos, 4, end)
    (n,) = INT32.unpack_from(buf, pos)
    pos += 4
    if n < 0:
        if n == -1 and nullable:
            return None, pos
        raise DecodeError(f"invalid bytes length {n}", path, pos - 4)
    stop = pos + n
    if stop > end:
        raise DecodeError(f"bytes length {n} runs past the end ({end - pos} byte(s) left)", path, pos - 4)
    return bytes(buf[pos:stop]), stop


def read_array_length(buf: bytes, pos: int, end: int, path: str, nullable: bool) -> tuple[int, int]:
    """ARRAY: int32 element count (-1 = null, returned as -1)."""
    if pos + 4 > end:
        raise underrun(path, pos, 4, end)
    (n,) = INT32.unpack_from(buf, pos)
    if n < -1 or (n == -1 and not nullable):
        raise DecodeError(f"invalid array length {n}", path, pos)
    # Each element takes at least one byte: a count larger than what is left is a corrupt length,
    # caught here before it can drive a huge allocation.
    if n > end - pos - 4:
        raise DecodeError(f"array length {n} exceeds the {end - pos - 4} byte(s) left", path, pos)
    return n, pos + 4


# ----------------------------------------------------------------------------------------------
# Varints and flexible (compact) fields


def read_uvarint(buf: bytes, pos: int, end: int, path: str) -> tuple[int, int]:
    """UNSIGNED_VARINT: 7 bits per byte, low group first, at most 5 bytes for a 32-bit value."""
    result = 0
    shift = 0
    start = pos
    while True:
        if pos >= end:
            raise underrun(path, pos, 1, end)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 28:
            raise DecodeError("unsigned varint longer than 5 bytes", path, start)


def read_varint(buf: bytes, pos: int, end: int, path: str) -> tuple[int, int]:
    """VARINT: zig-zag encoded signed 32-bit."""
    raw, pos = read_uvarint(buf, pos, end, path)
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf: bytes, pos: int, end: int, path: str) -> tuple[int, int]:
    """VARLONG: zig-zag encoded signed 64-bit, at most 10 bytes."""
    result = 0
    shift = 0
    start = pos
    while True:
        if pos >= end:
            raise underrun(path, pos, 1, end)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 63:
            raise DecodeError("varlong longer than 10 bytes", path, start)
    return (result >> 1) ^ -(result & 1), pos


def _compact_span(
    buf: bytes, pos: int, end: int, path: str, nullable: bool, what: str
) -> tuple[int, int]:
    """The span of a COMPACT_STRING/COMPACT_BYTES (uvarint length + 1, 0 = null): (start, stop), or
    (-1, pos after the length) for a null."""
    start = pos
    n, pos = read_uvarint(buf, pos, end, path)
    if n == 0:
        if nullable:
            return -1, pos
        raise DecodeError(f"null value for non-nullable compact {what}", path, start)
    stop = pos + n - 1
    if stop > end:
        raise DecodeError(f"{what} length {n - 1} runs past the end ({end - pos} byte(s) left)", path, start)
    return pos, stop


def read_compact_string(
    buf: bytes, pos: int, end: int, path: str, nullable: bool
) -> tuple[str | None, int]:
    """COMPACT_STRING / COMPACT_NULLABLE_STRING: uvarint (length + 1), 0 = null."""
    start, stop = _compact_span(buf, pos, end, path, nullable, "string")
    return (None, stop) if start < 0 else (_text(buf[start:stop]), stop)


def read_compact_bytes(
    buf: bytes, pos: int, end: int, path: str, nullable: bool
) -> tuple[bytes | None, int]:
    """COMPACT_BYTES / COMPACT_NULLABLE_BYTES: uvarint (length + 1), 0 = null."""
    start, stop = _compact_span(buf, pos, end, path, nullable, "bytes")
    return (None, stop) if start < 0 else (bytes(buf[start:stop]), stop)


def read_compact_array_length(
    buf: bytes, pos: int, end: int, path: str, nullable: bool
) -> tuple[int, int]:
    """COMPACT_ARRAY: uvarint (count + 1), 0 = null (returned as -1)."""
    start = pos
    n, pos = read_uvarint(buf, pos, end, path)
    if n == 0:
        if nullable:
            return -1, pos
        raise DecodeError("null value for a non-nullable compact array", path, start)
    if n - 1 > end - pos:
        raise DecodeError(f"array length {n - 1} exceeds the {end - pos} byte(s) left", path, start)
    return n - 1, pos


def read_uuid(buf: bytes, pos: int, end: int, path: str) -> tuple[str | None, int]:
    """UUID: 16 raw bytes, rendered like Kafka's ``Uuid.toString()`` (URL-safe base64, no padding).

    The all-zero UUID is Kafka's ``Uuid.ZERO_UUID`` ("no topic id") and is returned as None.
    """
    stop = pos + 16
    if stop > end:
        raise underrun(path, pos, 16, end)
    raw = bytes(buf[pos:stop])
    return (None if raw == ZERO_UUID else uuid_to_kafka_string(raw)), stop


def uuid_to_kafka_string(raw: bytes) -> str:
    """Kafka's textual Uuid: URL-safe base64 of the 16 bytes without '=' padding (22 characters)."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def uuid_from_kafka_string(text: str) -> bytes:
    """Inverse of :func:`uuid_to_kafka_string`; also accepts the canonical 8-4-4-4-12 hex form."""
    if len(text) == 36 and text.count("-") == 4:
        return _uuid.UUID(text).bytes
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != 16:
        raise ValueError(f"not a Kafka Uuid: {text!r}")
    return raw


# ----------------------------------------------------------------------------------------------
# Writers (used by the compiled encoders, the test-vector builders and the synthetic generator)


def write_uvarint(n: int) -> bytes:
    if n < 0:
        raise ValueError(f"unsigned varint cannot be negative: {n}")
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def write_varint(n: int) -> bytes:
    return write_uvarint(((n << 1) ^ (n >> 31)) & 0xFFFFFFFF)


def write_varlong(n: int) -> bytes:
    return write_uvarint(((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF)


def write_string(s: str | None, nullable: bool, path: str) -> bytes:
    if s is None:
        if not nullable:
            raise ValueError(f"{path}: null for a non-nullable string")
        return INT16.pack(-1)
    raw = s.encode("utf-8")
    if len(raw) > 0x7FFF:
        raise ValueError(f"{path}: string of {len(raw)} bytes is longer than int16 allows")
    return INT16.pack(len(raw)) + raw


def write_bytes(b: bytes | None, nullable: bool, path: str) -> bytes:
    if b is None:
        if not nullable:
            raise ValueError(f"{path}: null for non-nullable bytes")
        return INT32.pack(-1)
    return INT32.pack(len(b)) + bytes(b)


def write_compact_string(s: str | None, nullable: bool, path: str) -> bytes:
    if s is None:
        if not nullable:
            raise ValueError(f"{path}: null for a non-nullable string")
        return b"\x00"
    raw = s.encode("utf-8")
    return write_uvarint(len(raw) + 1) + raw


def write_compact_bytes(b: bytes | None, nullable: bool, path: str) -> bytes:
    if b is None:
        if not nullable:
            raise ValueError(f"{path}: null for non-nullable bytes")
        return b"\x00"
    return write_uvarint(len(b) + 1) + bytes(b)


def write_uuid(text: str | None) -> bytes:
    return ZERO_UUID if text is None else uuid_from_kafka_string(text)
