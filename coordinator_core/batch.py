"""Vectorized decoding of many `__consumer_offsets` records into one Arrow table.

Offset commits are nearly every record of the topic, and their layouts are short and regular, so they are
decoded column-wise with numpy over the Arrow buffers: key type, string lengths and positions, the value
version and every field are computed for all rows at once (each fixed-width read is one gather through a
view of the buffer's overlapping windows), and the group/topic/metadata strings are cut out of the
buffers by one Arrow take each. Rows that do not fit that regular shape (group metadata, KIP-848
records, unknown types, anything malformed, uncommon encodings) go through
:func:`coordinator_core.decode_record` one by one, and their values are put in place while each column is
built, so both paths give the same answer by construction for the rows the fast path does not claim,
and tests hold them equal on the rows it does.

Where the time goes, for 10k-row batches of realistic traffic (benchmarks.decode_bench): about a third
in the few per-record rows of each batch (GroupMetadata members' protocol decoding, the Python-to-Arrow
conversion of their nested values), the rest in numpy gathers and arithmetic, the string takes and
building the output arrays. Dictionary-encoding the keys (decoding each distinct key once) was measured
and is slower: hashing 10k keys costs about half of what decoding all of them column-wise does, and the
strings must still be gathered per row.

Of coordinator_core's record decoding this is the only module that imports pyarrow and numpy (the package
loads it lazily, on the first `decode_batch`); the log readers' column-wise paths in `coordinator_core.logs`
use them too. The rest of the core is plain Python.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from coordinator_core import messages as m
from coordinator_core import schema
from coordinator_core.consumer_protocol import decode_member_protocol
from coordinator_core.errors import DecodeError
from coordinator_core.records import RECORD_TYPES, Record, decode_record, record_type_name

TOPIC_PARTITION = pa.struct([("topic", pa.string()), ("partition", pa.int32())])
MEMBER = pa.struct(
    [
        ("member_id", pa.string()),
        ("group_instance_id", pa.string()),
        ("client_id", pa.string()),
        ("client_host", pa.string()),
        ("rebalance_timeout", pa.int32()),
        ("session_timeout", pa.int32()),
        ("subscription", pa.binary()),
        ("assignment", pa.binary()),
        ("subscription_version", pa.int16()),
        ("subscribed_topics", pa.list_(pa.string())),
        ("subscription_user_data", pa.binary()),
        ("owned_partitions", pa.list_(TOPIC_PARTITION)),
        ("subscription_generation", pa.int32()),
        ("rack_id", pa.string()),
        ("assignment_version", pa.int16()),
        ("assigned_partitions", pa.list_(TOPIC_PARTITION)),
        ("assignment_user_data", pa.binary()),
        ("protocol_error", pa.string()),
    ]
)
GROUP_METADATA = pa.struct(
    [
        ("protocol_type", pa.string()),
        ("generation", pa.int32()),
        ("protocol", pa.string()),
        ("leader", pa.string()),
        ("current_state_timestamp", pa.int64()),
        ("members", pa.list_(MEMBER)),
    ]
)

#: The output schema of :func:`decode_batch` (a contract with the Spark decode stage).
DECODED_SCHEMA = pa.schema(
    [
        ("record_type", pa.int16()),
        ("record_kind", pa.string()),
        ("group_id", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("member_id", pa.string()),
        ("value_version", pa.int16()),
        ("is_tombstone", pa.bool_()),
        ("committed_offset", pa.int64()),
        ("leader_epoch", pa.int32()),
        ("metadata", pa.string()),
        ("commit_timestamp", pa.int64()),
        ("expire_timestamp", pa.int64()),
        ("topic_id", pa.string()),
        ("group_metadata", GROUP_METADATA),
        ("record_json", pa.string()),
        ("trailing_bytes", pa.int32()),
        ("error", pa.string()),
        ("error_field_path", pa.string()),
        ("error_position", pa.int32()),
    ]
)

#: Rows decoded per chunk: bounds the temporary arrays of one call.
CHUNK_ROWS = 65536

# ----------------------------------------------------------------------------------------------
# Input normalisation


def _as_binary(values: Any) -> pa.BinaryArray:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if isinstance(values, pa.Array):
        if (
            pa.types.is_large_binary(values.type)
            or pa.types.is_string(values.type)
            or pa.types.is_large_string(values.type)
        ):
            values = values.cast(pa.binary())
        if not pa.types.is_binary(values.type):
            raise TypeError(f"expected an Arrow binary array, got {values.type}")
        return values
    return pa.array(list(values), type=pa.binary())


def _buffers(arr: pa.BinaryArray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(offsets int32[n+1], data uint8, is_null bool[n] or None) of a binary array, without copying.

    The offsets index the whole data buffer (a slice shares its parent's), and the data holds at least 16
    bytes, so fixed-width windows can be laid over it."""
    n = len(arr)
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int32, count=n + 1, offset=4 * arr.offset)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    if len(data) < 16:
        data = np.concatenate([data, np.zeros(16, np.uint8)])
    is_null = arr.is_null().to_numpy(zero_copy_only=False) if arr.null_count else None
    return offsets, data, is_null


# ----------------------------------------------------------------------------------------------
# Column-wise reads: a byte buffer seen as its overlapping fixed-width windows (a numpy view with a stride
# of one byte), so ``windows[positions]`` copies the bytes at every position in one gather, and a
# structured dtype names the big-endian fields inside a window.


def _windows(data: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
    """Every `dtype.itemsize`-byte window of `data`, one per start byte (a view, nothing is copied)."""
    width = dtype.itemsize
    out: np.ndarray = np.ndarray((len(data) - width + 1,), dtype=np.dtype((np.void, width)), buffer=data, strides=(1,))
    return out


def _read(data: np.ndarray, dtype: np.dtype[Any], positions: np.ndarray) -> np.ndarray:
    """The `dtype` record at each position; positions must lie in [0, len(data) - itemsize]."""
    out: np.ndarray = _windows(data, dtype)[positions].view(dtype)
    return out


# The offset-commit layouts, computed once from their declaration (messages.OFFSET_COMMIT_KEY and
# OFFSET_COMMIT_VALUE): the fixed-width fields' positions and the lengths of the regular shapes, per value
# version. The column-wise reads below assume the field order declared there; a declaration that no longer
# has it fails here, at import, instead of decoding wrong values.
_TYPE_SIZE = schema.INT16.size  # the int16 record type before a key, the int16 version before a value
_STRING_LENGTH_SIZE = schema.INT16.size  # the length before a (non-flexible) string
_COMPACT_LENGTH_SIZE = 1  # a compact string's uvarint length, for strings shorter than 127 bytes
_TAGGED_COUNT_SIZE = 1  # the uvarint count of a flexible struct's tagged fields (0 or 1 here)


def _shape(struct: schema.Struct) -> list[tuple[str, schema.FieldType]]:
    return [(f.name, f.type) for f in struct.fields]


if _shape(m.OFFSET_COMMIT_KEY) != [("group", schema.STRING), ("topic", schema.STRING), ("partition", schema.INT32)]:
    raise ImportError(f"coordinator_core.batch: the fast path reads OffsetCommitKey as group, topic, partition; "
                      f"it is declared as {_shape(m.OFFSET_COMMIT_KEY)}")
if _shape(m.OFFSET_COMMIT_VALUE) != [("offset", schema.INT64), ("leader_epoch", schema.INT32),
                                     ("metadata", schema.STRING), ("commit_timestamp", schema.INT64),
                                     ("expire_timestamp", schema.INT64), ("topic_id", schema.UUID)]:
    raise ImportError(f"coordinator_core.batch: the fast path reads OffsetCommitValue as offset, leader_epoch, "
                      f"metadata, commit_timestamp, expire_timestamp, topic_id; it is declared as "
                      f"{_shape(m.OFFSET_COMMIT_VALUE)}")

_VALUE_FIELDS = {f.name: f for f in m.OFFSET_COMMIT_VALUE.fields}
#: A key of the regular shape is this many bytes plus its group and topic: record type, two string lengths,
#: the partition.
_KEY_FIXED_LENGTH = _TYPE_SIZE + 2 * _STRING_LENGTH_SIZE + schema.INT32.size
#: The first value version with a leader epoch (3), the first flexible one (4: compact metadata, tagged
#: fields), the one with the topic id (4, under tag 0), and the highest (4).
_EPOCH_SINCE = schema.Versions.parse(_VALUE_FIELDS["leader_epoch"].versions).low
_FLEXIBLE_SINCE = schema.Versions.parse(m.OFFSET_COMMIT_VALUE.flexible_versions).low
_TOPIC_ID_VERSION = schema.Versions.parse(_VALUE_FIELDS["topic_id"].versions).low
#: The one value version with an expire timestamp (1).
_EXPIRE_VERSION = schema.Versions.parse(_VALUE_FIELDS["expire_timestamp"].versions).low
_HIGHEST_VERSION = m.OFFSET_COMMIT_VALUE.highest_version


def _value_layout(version: int) -> tuple[int, int]:
    """(where the metadata string starts, the value's length without the metadata) of an offset-commit value
    of `version` in its regular shape: the version, the fields it has up to the metadata, the metadata's
    length, the fields after it, and (flexible versions) an empty tagged section. Tagged fields (the topic
    id) are not counted."""
    flexible = m.OFFSET_COMMIT_VALUE.flexible_in(version)
    at, metadata_start = _TYPE_SIZE, 0
    for f in m.OFFSET_COMMIT_VALUE.fields:
        if not f.present_in(version) or f.tag is not None:
            continue
        if f.type is schema.STRING:
            at += _COMPACT_LENGTH_SIZE if flexible else _STRING_LENGTH_SIZE
            metadata_start = at
        elif isinstance(f.type, schema.Primitive):
            at += f.type.size
    return metadata_start, at + (_TAGGED_COUNT_SIZE if flexible else 0)


def _big_endian(t: schema.Primitive) -> str:
    return ">" + np.dtype(t.fmt).str[1:]


_KEY_HEAD = np.dtype(
    {
        "names": ["record_type", "group_length"],
        "formats": [_big_endian(schema.INT16), _big_endian(schema.INT16)],
        "offsets": [0, _TYPE_SIZE],
        "itemsize": _TYPE_SIZE + _STRING_LENGTH_SIZE,
    }
)
_INT16 = np.dtype(_big_endian(schema.INT16))
_INT32 = np.dtype(_big_endian(schema.INT32))
# The first 16 bytes of an offset-commit value: version, offset, then either the metadata length (v0-v2,
# the high half of word10) or the leader epoch (v3/v4, word10) followed by the metadata length (v3,
# word14) or its compact uvarint (v4, the high byte of word14).
_AFTER_OFFSET = _TYPE_SIZE + schema.INT64.size
_AFTER_EPOCH = _AFTER_OFFSET + schema.INT32.size
_VALUE_HEAD = np.dtype(
    {
        "names": ["version", "offset", "word10", "word14"],
        "formats": [_big_endian(schema.INT16), _big_endian(schema.INT64), ">i4", ">i2"],
        "offsets": [0, _TYPE_SIZE, _AFTER_OFFSET, _AFTER_EPOCH],
        "itemsize": _AFTER_EPOCH + schema.INT16.size,
    }
)
# The 16 bytes after the metadata: commit timestamp, then the expire timestamp (v1) or, in v4, the tagged
# fields count, tag and size (the top three bytes of word8).
_VALUE_TAIL = np.dtype(
    {
        "names": ["commit_timestamp", "word8"],
        "formats": [_big_endian(schema.INT64), ">i8"],
        "offsets": [0, schema.INT64.size],
        "itemsize": schema.INT64.size + 8,
    }
)
_UUID_SIZE = 16
_UUID = np.dtype((np.uint8, _UUID_SIZE))

# Per value version, indexed by clip(version, -1, highest + 1) + 1: where the metadata string starts, and
# the value length without the metadata (v4: without tagged fields). Versions outside 0-4 get a length no
# value has.
_LAYOUTS = [_value_layout(v) for v in range(_HIGHEST_VERSION + 1)]
_NO_LENGTH = -(1 << 20)
_METADATA_START = np.array([0] + [start for start, _ in _LAYOUTS] + [0], np.int32)
_FIXED_LENGTH = np.array([_NO_LENGTH] + [length for _, length in _LAYOUTS] + [_NO_LENGTH], np.int32)
# The v4 tagged section holding just the topic id: count 1, tag 0, size 16 (one byte each), then the uuid.
_TOPIC_ID = _VALUE_FIELDS["topic_id"]
if _TOPIC_ID.tag is None or _TOPIC_ID.type is not schema.UUID:
    raise ImportError("coordinator_core.batch: the fast path reads OffsetCommitValue's topic_id as a tagged uuid")
_TOPIC_ID_TAG = (1 << 16) | (_TOPIC_ID.tag << 8) | _UUID_SIZE
_TOPIC_ID_FIELD_SIZE = 2 + _UUID_SIZE  # tag and size bytes, then the uuid
_TOPIC_ID_AT = schema.INT64.size + _TAGGED_COUNT_SIZE + 2  # after the metadata: commit ts, count, tag, size
_PAD = 32  # zero bytes after the value bytes: a 16-byte window at any position <= their length stays inside


# ----------------------------------------------------------------------------------------------
# Building output columns. Every column is computed for all rows of the chunk from the offset-commit
# layout; rows that layout does not claim (the slow rows) are decoded by decode_record and their values are
# put in place while the column is built, so no table is concatenated and reordered afterwards.


def _validity(valid: np.ndarray) -> pa.Buffer | None:
    return None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))


def _numpy_dtype(typ: pa.DataType) -> np.dtype[Any]:
    """The numpy dtype of a fixed-width Arrow type. Not ``typ.to_pandas_dtype()``: that imports pandas, which
    the core does not depend on (`pip install .` installs no pandas)."""
    return pa.array([], typ).to_numpy(zero_copy_only=False).dtype  # type: ignore[no-any-return]


def _fixed_column(
    typ: pa.DataType, values: np.ndarray, valid: np.ndarray, slow_rows: np.ndarray, slow_values: list[Any]
) -> pa.Array:
    values = values.astype(_numpy_dtype(typ))
    if len(slow_rows):
        values[slow_rows] = [0 if x is None else x for x in slow_values]
        valid[slow_rows] = [x is not None for x in slow_values]
    return pa.Array.from_buffers(typ, len(values), [_validity(valid), pa.py_buffer(values)])


def _as_strings(binary: pa.Array, valid: np.ndarray) -> pa.Array:
    """A binary array as strings with the given validity. Bytes that are not UTF-8 are decoded with
    replacement characters, as Kafka (Java's new String(bytes, UTF_8)) does."""
    _, offsets, data = binary.buffers()
    # All ASCII (the usual case) is valid UTF-8 as it stands; anything else is checked.
    if data is not None and len(data) > 0 and np.frombuffer(data, np.uint8).max() >= 0x80:
        try:
            binary = binary.cast(pa.string())
        except pa.ArrowInvalid:
            binary = pa.array([b.decode("utf-8", "replace") for b in binary.to_pylist()], pa.string())
        _, offsets, data = binary.buffers()
    return pa.Array.from_buffers(pa.string(), len(valid), [_validity(valid), offsets, data], offset=binary.offset)


def _cut_strings(
    data: np.ndarray,
    lo: int,
    hi: int,
    bounds: np.ndarray,
    picks: np.ndarray,
    valid: np.ndarray,
    extra_rows: Sequence[int],
    extra_values: list[str],
) -> pa.Array:
    """A string column cut out of `data` in one Arrow take.

    `bounds` (int32, non-decreasing, within [lo, hi]) are the offsets of a binary array over `data` whose
    element ``picks[i]`` is row i's string. Strings that are not in `data` (`extra_values`, for
    `extra_rows`) are appended after ``data[lo:hi]`` as further elements, which copies `data`."""
    buffer = pa.py_buffer(data)
    if extra_rows:
        extra = [s.encode() for s in extra_values]
        sizes = np.fromiter((len(e) for e in extra), np.int32, len(extra))
        buffer = pa.py_buffer(np.concatenate([data[lo:hi], np.frombuffer(b"".join(extra), np.uint8)]))
        picks = picks.copy()
        picks[list(extra_rows)] = len(bounds) + np.arange(len(extra), dtype=np.int32)
        bounds = np.concatenate([bounds - lo, [hi - lo], (hi - lo) + np.cumsum(sizes, dtype=np.int32)]).astype(np.int32)
    binary = pa.Array.from_buffers(pa.binary(), len(bounds) - 1, [None, pa.py_buffer(bounds), buffer])
    return _as_strings(binary.take(pa.array(picks)), valid)


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _slow_only_column(typ: pa.DataType, n: int, slow_rows: np.ndarray, slow_values: list[Any]) -> pa.Array:
    """A column that only slow rows fill (null on every offset-commit row)."""
    if all(x is None for x in slow_values):
        return pa.nulls(n, typ)
    return _Spread(slow_rows, n).array(pa.array(slow_values, typ))


class _Spread:
    """Builds n-row arrays holding ``small[j]`` at row ``rows[j]`` (ascending) and null elsewhere.

    Arrow's take with null indices does the same, but walks every nested child at every row (0.3 ms for a
    group_metadata column of 10k rows); here only the top-level buffers are n long, list children are
    reused as they are, and an offsets buffer is one np.repeat of the few rows' offsets."""

    def __init__(self, rows: np.ndarray, n: int) -> None:
        self.rows, self.n = rows, n
        self.row_list: list[int] = rows.tolist()
        # offsets[i] = small offset of the first small row placed at or after row i
        self.runs = np.diff(np.concatenate([[-1], rows, [n]])).astype(np.int64)

    def array(self, small: pa.Array) -> pa.Array:
        typ, n = small.type, self.n
        if small.null_count == len(small):
            return pa.nulls(n, typ)
        validity = bytearray((n + 7) // 8)
        valid_rows = (
            self.row_list
            if small.null_count == 0
            else (row for row, valid in zip(self.row_list, small.is_valid().to_pylist(), strict=True) if valid)
        )
        for row in valid_rows:
            validity[row >> 3] |= 1 << (row & 7)
        buffers = [pa.py_buffer(validity)]
        if pa.types.is_struct(typ):
            children = [self.array(small.field(i)) for i in range(typ.num_fields)]
            return pa.Array.from_buffers(typ, n, buffers, children=children)
        if pa.types.is_list(typ) or pa.types.is_string(typ) or pa.types.is_binary(typ):
            # A list's offsets through .offsets: its buffers() would list every nested buffer too.
            small_offsets = (
                small.offsets.to_numpy()
                if pa.types.is_list(typ)
                else np.frombuffer(small.buffers()[1], np.int32, len(small) + 1, 4 * small.offset)
            )
            buffers.append(pa.py_buffer(np.repeat(small_offsets, self.runs)))
            if pa.types.is_list(typ):
                return pa.Array.from_buffers(typ, n, buffers, children=[small.values])
            return pa.Array.from_buffers(typ, n, [*buffers, small.buffers()[2]])
        values = np.zeros(n, _numpy_dtype(typ))
        values[self.rows] = (small.fill_null(0) if small.null_count else small).to_numpy(zero_copy_only=False)
        buffers.append(pa.py_buffer(np.packbits(values, bitorder="little") if pa.types.is_boolean(typ) else values))
        return pa.Array.from_buffers(typ, n, buffers)


_URL_SAFE = bytes.maketrans(b"+/", b"-_")


def _topic_id_column(
    n: int, rows: np.ndarray, uuids: np.ndarray, slow_rows: np.ndarray, slow_values: list[str | None]
) -> pa.Array:
    """Kafka Uuid text (URL-safe base64 of the 16 bytes, no padding: 22 characters) for `rows`, null
    elsewhere. The all-zero Uuid is Kafka's "no topic id": a writer never tags it, but read it as absent.

    Each Uuid is padded to 18 bytes, a whole number of 3-byte groups, so one base64 call over all of them
    gives 24 characters per Uuid, the first 22 of which are its text."""
    words = uuids.view(np.uint64)
    present = (words[:, 0] | words[:, 1]) != 0
    rows = rows[present]
    blocks = np.zeros((len(rows), 18), np.uint8)
    blocks[:, :16] = uuids[present]
    text = binascii.b2a_base64(blocks.tobytes(), newline=False).translate(_URL_SAFE)
    chars = np.frombuffer(text, np.uint8).reshape(len(rows), 24)[:, :22]
    valid = np.zeros(n, np.bool_)
    valid[rows] = True
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(valid * np.int32(22), out=offsets[1:])
    column = pa.Array.from_buffers(
        pa.string(), n, [_validity(valid), pa.py_buffer(offsets), pa.py_buffer(chars.tobytes())]
    )
    if any(s is not None for s in slow_values):  # rare: a v4 commit the fast layout does not cover
        mask = np.zeros(n, np.bool_)
        mask[slow_rows] = True
        column = pc.replace_with_mask(column, pa.array(mask), pa.array(slow_values, pa.string()))
    return column


_OFFSET_COMMIT = b"offset_commit"


def _kind_column(n: int, slow_rows: np.ndarray, slow_values: list[str]) -> pa.Array:
    """ "offset_commit" on every row but the slow rows, which have their own kind (never null)."""
    kinds = [kind.encode() for kind in slow_values]
    sizes = np.full(n, len(_OFFSET_COMMIT), np.int32)
    sizes[slow_rows] = [len(kind) for kind in kinds]
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(sizes, out=offsets[1:])
    pieces, previous = [], -1
    for row, kind in zip(slow_rows.tolist(), kinds, strict=True):
        pieces += [_OFFSET_COMMIT * (row - previous - 1), kind]
        previous = row
    pieces.append(_OFFSET_COMMIT * (n - previous - 1))
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(pieces))])


# ----------------------------------------------------------------------------------------------
# The chunk decoder: offset commits (key types 0/1, value versions 0-4, tombstones) column-wise, the rest
# through decode_record


@dataclasses.dataclass(frozen=True, slots=True)
class _KeyReads:
    """The offset-commit key fields of every row of a chunk, read column-wise (`_read_keys`)."""

    offsets: np.ndarray  # the binary array's offsets (n + 1)
    data: np.ndarray
    record_type: np.ndarray
    group_size: np.ndarray
    topic_size: np.ndarray
    partition: np.ndarray
    ok: np.ndarray  # the key is an offset commit's of the regular shape


def _read_keys(keys: pa.BinaryArray) -> _KeyReads:
    """Keys: type, group length; topic length after the group; partition after the topic."""
    koff, kdata, knull = _buffers(keys)
    ks = koff[:-1]
    key_size = koff[1:] - ks
    head = _read(kdata, _KEY_HEAD, np.minimum(ks, len(kdata) - _KEY_HEAD.itemsize))
    record_type = head["record_type"].astype(np.int32)
    group_size = head["group_length"].astype(np.int32)
    topic_at = ks + _KEY_HEAD.itemsize + group_size
    topic_size = _read(kdata, _INT16, np.clip(topic_at, 0, len(kdata) - _INT16.itemsize)).astype(np.int32)
    partition_at = np.clip(topic_at + _STRING_LENGTH_SIZE + topic_size, 0, len(kdata) - _INT32.itemsize)
    partition = _read(kdata, _INT32, partition_at)
    key_ok = ((record_type | 1) == 1) & (group_size >= 0) & (topic_size >= 0)
    key_ok &= key_size == _KEY_FIXED_LENGTH + group_size + topic_size
    if knull is not None:
        key_ok &= ~knull
    return _KeyReads(koff, kdata, record_type, group_size, topic_size, partition, key_ok)


@dataclasses.dataclass(frozen=True, slots=True)
class _ValueReads:
    """The offset-commit value fields of every row of a chunk, read column-wise (`_read_values`)."""

    data: np.ndarray  # the values' bytes, zero-padded
    starts: np.ndarray  # where each value starts in `data`
    version: np.ndarray
    offset: np.ndarray
    epoch: np.ndarray
    metadata_size: np.ndarray
    metadata_at: np.ndarray
    commit_timestamp: np.ndarray
    expire: np.ndarray
    topic_id_at: np.ndarray  # where the uuid would be (read only where `has_topic_id`)
    has_topic_id: np.ndarray
    ok: np.ndarray  # the value is one of the regular layouts
    tombstone: np.ndarray


def _read_values(values: pa.BinaryArray) -> _ValueReads:
    """Values, from a zero-padded copy of their bytes so that every 16-byte window read stays inside."""
    voff, vdata, vnull = _buffers(values)
    v_lo, v_hi = int(voff[0]), int(voff[-1])
    vbytes = np.empty(v_hi - v_lo + _PAD, np.uint8)
    vbytes[: v_hi - v_lo] = vdata[v_lo:v_hi]
    vbytes[v_hi - v_lo :] = 0
    vs = voff[:-1] - v_lo
    value_size = voff[1:] - voff[:-1]
    head = _read(vbytes, _VALUE_HEAD, vs)
    version = head["version"].astype(np.int32)
    word10 = head["word10"].astype(np.int32)
    word14 = head["word14"].astype(np.int32)
    metadata_size = np.where(
        version < _EPOCH_SINCE, word10 >> 16, np.where(version < _FLEXIBLE_SINCE, word14, ((word14 >> 8) & 0xFF) - 1)
    )
    layout = np.clip(version, -1, _HIGHEST_VERSION + 1) + 1
    metadata_at = vs + _METADATA_START[layout]
    after = np.clip(metadata_at + metadata_size, 0, v_hi - v_lo)
    tail = _read(vbytes, _VALUE_TAIL, after)
    word8 = tail["word8"].astype(np.int64)
    tag_header = word8 >> 40
    has_topic_id = (version == _TOPIC_ID_VERSION) & (tag_header == _TOPIC_ID_TAG)
    v4_ok = (version != _FLEXIBLE_SINCE) | ((metadata_size <= 126) & (has_topic_id | ((tag_header >> 16) == 0)))
    regular_size = _FIXED_LENGTH[layout] + _TOPIC_ID_FIELD_SIZE * has_topic_id + metadata_size
    value_ok = (metadata_size >= 0) & v4_ok & (value_size == regular_size)
    tombstone = vnull if vnull is not None else np.zeros(len(values), np.bool_)
    return _ValueReads(
        vbytes, vs, version, head["offset"], word10, metadata_size, metadata_at, tail["commit_timestamp"], word8,
        after + _TOPIC_ID_AT, has_topic_id, value_ok, tombstone,
    )


def _key_strings(
    k: _KeyReads, fast: np.ndarray, slow_rows: np.ndarray, slow_keys: list[bytes | None], slow: dict[str, list[Any]]
) -> tuple[pa.Array, pa.Array]:
    """The group_id and topic columns, cut out of the key bytes.

    A binary array over the key bytes whose elements are, per row, the 4 bytes before the group, the group,
    the topic length, the topic (elements 5i+1 and 5i+3); empty where not in place. A per-record row's group
    (and topic) is usually where an offset-commit key has it, as every known key type starts with the group
    as an int16-length string: it is cut from there too once it is seen to be the same string, and only the
    others are appended.
    """
    n = len(fast)
    group_at = _KEY_HEAD.itemsize
    group_in_key, topic_in_key = k.ok.copy(), k.ok.copy()
    group_valid, topic_valid = fast.copy(), fast.copy()
    group_rows: list[int] = []
    topic_rows: list[int] = []
    group_extra: list[str] = []
    topic_extra: list[str] = []
    for row, key, group, topic_name in zip(slow_rows.tolist(), slow_keys, slow["group_id"], slow["topic"], strict=True):
        g_size, t_size = int(k.group_size[row]), int(k.topic_size[row])
        group_in_key[row] = topic_in_key[row] = False
        if key is None:
            pass
        elif (
            group is not None
            and 0 <= g_size <= len(key) - group_at
            and _text(key[group_at : group_at + g_size]) == group
        ):
            group_in_key[row] = True
            end = group_at + _STRING_LENGTH_SIZE + g_size + t_size
            if (
                topic_name is not None
                and t_size >= 0
                and end <= len(key)
                and _text(key[end - t_size : end]) == topic_name
            ):
                topic_in_key[row] = True
        if group is not None:
            group_valid[row] = True
            if not group_in_key[row]:
                group_rows.append(row)
                group_extra.append(group)
        if topic_name is not None:
            topic_valid[row] = True
            if not topic_in_key[row]:
                topic_rows.append(row)
                topic_extra.append(topic_name)
    in_group, in_topic = group_in_key.astype(np.int32), topic_in_key.astype(np.int32)
    ks = k.offsets[:-1]
    bounds = np.empty((n, 5), np.int32)
    bounds[:, 0] = ks
    bounds[:, 1] = ks + group_at * in_group
    bounds[:, 2] = bounds[:, 1] + k.group_size * in_group
    bounds[:, 3] = bounds[:, 2] + _STRING_LENGTH_SIZE * in_topic
    bounds[:, 4] = bounds[:, 3] + k.topic_size * in_topic
    k_lo, k_hi = int(k.offsets[0]), int(k.offsets[-1])
    picks = np.arange(1, 5 * n, 5, dtype=np.int32)
    flat = bounds.reshape(-1)
    group_id = _cut_strings(k.data, k_lo, k_hi, flat, picks, group_valid, group_rows, group_extra)
    topic = _cut_strings(k.data, k_lo, k_hi, flat, picks + 2, topic_valid, topic_rows, topic_extra)
    return group_id, topic


def _metadata_column(v: _ValueReads, live: np.ndarray, slow_rows: np.ndarray, slow_metadata: list[Any]) -> pa.Array:
    """The metadata column, cut out of the value bytes (or all empty strings, the usual case)."""
    n = len(live)
    has_metadata = live & (v.metadata_size > 0)
    metadata_valid = live.copy()
    metadata_rows = [row for row, text in zip(slow_rows.tolist(), slow_metadata, strict=True) if text is not None]
    metadata_valid[metadata_rows] = True
    if not metadata_rows and not has_metadata.any():
        return pa.Array.from_buffers(
            pa.string(), n, [_validity(metadata_valid), pa.py_buffer(np.zeros(n + 1, np.int32)), pa.py_buffer(b"")]
        )
    meta_bounds = np.empty((n, 3), np.int32)
    meta_bounds[:, 0] = v.starts
    meta_bounds[:, 1] = np.where(has_metadata, v.metadata_at, v.starts)
    meta_bounds[:, 2] = meta_bounds[:, 1] + v.metadata_size * has_metadata
    picks = np.arange(1, 3 * n, 3, dtype=np.int32)
    metadata_extra = [text for text in slow_metadata if text is not None]
    span = len(v.data) - _PAD
    return _cut_strings(v.data, 0, span, meta_bounds.reshape(-1), picks, metadata_valid, metadata_rows, metadata_extra)


def _decode_chunk(keys: pa.BinaryArray, values: pa.BinaryArray) -> pa.Table:
    """Decode one chunk (at most CHUNK_ROWS rows).

    A row is an offset commit of the regular shape when its key is type 0/1 of exactly 10 + group + topic
    bytes, and its value is null (a tombstone) or one of these layouts, exactly, after the int16 version:
    v0/v2 offset, metadata, commit ts; v1 the same plus an expire ts; v3 offset, leader epoch, metadata,
    commit ts; v4 as v3 with a compact metadata string shorter than 127 bytes and a tagged section that is
    empty or exactly the 16-byte topic id under tag 0. Every field such a row needs is read from inside
    that row, so a row is claimed only when all its reads are real; other rows' reads may land anywhere
    (positions are clipped into the buffer) and are discarded.
    """
    n = len(keys)
    k = _read_keys(keys)
    v = _read_values(values)
    fast = k.ok & (v.tombstone | v.ok)
    live = fast & ~v.tombstone

    slow_rows = np.flatnonzero(~fast)
    slow_keys, s = _decode_rows(keys, values, slow_rows)
    group_id, topic = _key_strings(k, fast, slow_rows, slow_keys, s)
    topic_id_rows = np.flatnonzero(live & v.has_topic_id)
    uuids = _read(v.data, _UUID, v.topic_id_at[topic_id_rows])
    epoch, expire, version = v.epoch, v.expire, v.version
    columns = {
        "record_type": _fixed_column(pa.int16(), k.record_type, fast.copy(), slow_rows, s["record_type"]),
        "record_kind": _kind_column(n, slow_rows, s["record_kind"]),
        "group_id": group_id,
        "topic": topic,
        "partition": _fixed_column(pa.int32(), k.partition, fast.copy(), slow_rows, s["partition"]),
        "member_id": _slow_only_column(pa.string(), n, slow_rows, s["member_id"]),
        "value_version": _fixed_column(pa.int16(), version, live.copy(), slow_rows, s["value_version"]),
        "is_tombstone": pa.Array.from_buffers(
            pa.bool_(), n, [None, pa.py_buffer(np.packbits(v.tombstone, bitorder="little"))]
        ),
        "committed_offset": _fixed_column(pa.int64(), v.offset, live.copy(), slow_rows, s["committed_offset"]),
        "leader_epoch": _fixed_column(
            pa.int32(), epoch, live & (version >= _EPOCH_SINCE) & (epoch != -1), slow_rows, s["leader_epoch"]
        ),
        "metadata": _metadata_column(v, live, slow_rows, s["metadata"]),
        "commit_timestamp": _fixed_column(
            pa.int64(), v.commit_timestamp, live.copy(), slow_rows, s["commit_timestamp"]
        ),
        "expire_timestamp": _fixed_column(
            pa.int64(), expire, live & (version == _EXPIRE_VERSION) & (expire != -1), slow_rows, s["expire_timestamp"]
        ),
        "topic_id": _topic_id_column(n, topic_id_rows, uuids, slow_rows, s["topic_id"]),
        "group_metadata": _slow_only_column(GROUP_METADATA, n, slow_rows, s["group_metadata"]),
        "record_json": _slow_only_column(pa.string(), n, slow_rows, s["record_json"]),
        # A regular offset commit is exactly its struct's bytes; trailing bytes make a row a slow one.
        "trailing_bytes": _fixed_column(pa.int32(), np.zeros(n, np.int32), fast.copy(), slow_rows, s["trailing_bytes"]),
        "error": _slow_only_column(pa.string(), n, slow_rows, s["error"]),
        "error_field_path": _slow_only_column(pa.string(), n, slow_rows, s["error_field_path"]),
        "error_position": _slow_only_column(pa.int32(), n, slow_rows, s["error_position"]),
    }
    return pa.Table.from_arrays([columns[name] for name in DECODED_SCHEMA.names], schema=DECODED_SCHEMA)


# ----------------------------------------------------------------------------------------------
# The general path: one record at a time through decode_record


def _jsonable(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (bytes, bytearray)):
        return base64.b64encode(obj).decode("ascii")
    if isinstance(obj, (tuple, list)):
        return [_jsonable(x) for x in obj]
    return obj


def _members(value: m.GroupMetadataValue) -> tuple[list[dict[str, Any]], int]:
    """The members' rows, and the trailing bytes of their embedded subscriptions and assignments."""
    out = []
    trailing = 0
    for mem in value.members:
        proto = decode_member_protocol(value.protocol_type, mem)
        sub, asg = proto.subscription, proto.assignment
        trailing += (sub.trailing_bytes if sub else 0) + (asg.trailing_bytes if asg else 0)
        out.append(
            {
                "member_id": mem.member_id,
                "group_instance_id": mem.group_instance_id,
                "client_id": mem.client_id,
                "client_host": mem.client_host,
                "rebalance_timeout": mem.rebalance_timeout,
                "session_timeout": mem.session_timeout,
                "subscription": mem.subscription,
                "assignment": mem.assignment,
                "subscription_version": sub.version if sub else None,
                "subscribed_topics": list(sub.topics) if sub else None,
                "subscription_user_data": sub.user_data if sub else None,
                # Subscription v0 has no owned partitions: null, not an empty list.
                "owned_partitions": [{"topic": t, "partition": p} for t, p in sub.owned_partitions]
                if sub and sub.version >= 1 else None,
                "subscription_generation": sub.generation_id if sub else None,
                "rack_id": sub.rack_id if sub else None,
                "assignment_version": asg.version if asg else None,
                "assigned_partitions": [{"topic": t, "partition": p} for t, p in asg.partitions] if asg else None,
                "assignment_user_data": asg.user_data if asg else None,
                "protocol_error": str(proto.error) if proto.error else None,
            }
        )
    return out, trailing


def _row(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    row: dict[str, Any] = {"is_tombstone": value is None}
    try:
        rec: Record = decode_record(key, value)  # type: ignore[arg-type]
    except DecodeError as e:
        if key is not None and len(key) >= 2:
            rt = int.from_bytes(key[:2], "big", signed=True)
            row["record_type"] = rt
            row["record_kind"] = record_type_name(rt)
        else:
            row["record_kind"] = "unknown"
        row.update(error=e.message, error_field_path=e.field_path, error_position=e.position)
        return row
    row["record_type"] = rec.record_type
    row["record_kind"] = rec.kind
    row["value_version"] = rec.value_version
    row["trailing_bytes"] = rec.trailing_bytes
    k, v = rec.key, rec.value
    if isinstance(k, m.OffsetCommitKey):
        row.update(group_id=k.group, topic=k.topic, partition=k.partition)
        if isinstance(v, m.OffsetCommitValue):
            row.update(
                committed_offset=v.offset,
                leader_epoch=None if v.leader_epoch == -1 else v.leader_epoch,
                metadata=v.metadata,
                commit_timestamp=v.commit_timestamp,
                expire_timestamp=None if v.expire_timestamp == -1 else v.expire_timestamp,
                topic_id=v.topic_id,
            )
    elif isinstance(k, m.GroupMetadataKey):
        row["group_id"] = k.group
        if isinstance(v, m.GroupMetadataValue):
            members, member_trailing = _members(v)
            row["trailing_bytes"] += member_trailing
            # v0/v1 have no state timestamp (None); in v2+ Kafka writes -1 for "none" and reads it as empty.
            state_ts = v.current_state_timestamp
            row["group_metadata"] = {
                "protocol_type": v.protocol_type,
                "generation": v.generation,
                "protocol": v.protocol,
                "leader": v.leader,
                "current_state_timestamp": None if state_ts == -1 else state_ts,
                "members": members,
            }
    elif isinstance(k, m.UnknownKey):
        row["record_json"] = json.dumps(
            {"key_bytes": _jsonable(k.data), "value_bytes": _jsonable(v) if v is not None else None}
        )
    else:
        row["group_id"] = k.group_id
        row["member_id"] = getattr(k, "member_id", None)
        doc: dict[str, Any] = dict(_jsonable(k))
        t = RECORD_TYPES[rec.record_type]
        if v is None:
            doc["value"] = None
        elif t.value is None:
            doc["value_bytes"] = _jsonable(v)
        else:
            doc["value"] = _jsonable(v)
        row["record_json"] = json.dumps(doc, sort_keys=False)
    return row


def _decode_rows(
    keys: pa.BinaryArray, values: pa.BinaryArray, rows: np.ndarray
) -> tuple[list[bytes | None], dict[str, list[Any]]]:
    """The given rows' keys, and decode_record's result for them as one list per output column."""
    if not len(rows):
        return [], {name: [] for name in DECODED_SCHEMA.names}
    index = pa.array(rows)
    row_keys = keys.take(index).to_pylist()
    decoded = [_row(k, v) for k, v in zip(row_keys, values.take(index).to_pylist(), strict=True)]
    return row_keys, {name: [r.get(name) for r in decoded] for name in DECODED_SCHEMA.names}


# ----------------------------------------------------------------------------------------------


def decode_batch(
    keys: Sequence[bytes | None] | pa.Array | pa.ChunkedArray,
    values: Sequence[bytes | None] | pa.Array | pa.ChunkedArray,
) -> pa.Table:
    """Decode equal-length sequences of record keys and values into one Arrow table (schema
    :data:`DECODED_SCHEMA`, one row per record, in input order).

    A record that does not decode has its ``error``, ``error_field_path`` and ``error_position`` set and
    every decoded column null: it is reported, never dropped and never raised.
    """
    karr = _as_binary(keys)
    varr = _as_binary(values)
    if len(karr) != len(varr):
        raise ValueError(f"keys and values differ in length: {len(karr)} != {len(varr)}")
    if len(karr) == 0:
        return DECODED_SCHEMA.empty_table()
    if len(karr) > CHUNK_ROWS:
        return pa.concat_tables(
            [
                _decode_chunk(karr.slice(i, CHUNK_ROWS), varr.slice(i, CHUNK_ROWS))
                for i in range(0, len(karr), CHUNK_ROWS)
            ]
        )
    return _decode_chunk(karr, varr)
