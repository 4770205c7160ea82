"""Vectorized decoding of many `__consumer_offsets` records into one Arrow table.

Offset commits are nearly every record of the topic, and their layouts are short and regular, so they are
decoded column-wise with numpy over the Arrow buffers: key type, string lengths and positions, the value
version and every field are computed for all rows at once, and the group/topic/metadata strings are
gathered into new Arrow string buffers in one pass. Rows that do not fit that regular shape (group
metadata, KIP-848 records, unknown types, anything malformed, uncommon encodings) go through
:func:`coordinator_core.decode_record` one by one, so both paths give the same answer by construction for
the rows the fast path does not claim, and a test holds them equal on the rows it does.

This is the only coordinator_core module that imports pyarrow and numpy.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]

from coordinator_core import messages as m
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
        ("error", pa.string()),
        ("error_field_path", pa.string()),
        ("error_position", pa.int32()),
    ]
)

#: Rows decoded column-wise per chunk: bounds the temporary index arrays of the string gathers.
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


def _buffers(arr: pa.BinaryArray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(offsets int64[n+1], data uint8[...], is_null bool[n]) of a binary array, zero-copy where possible."""
    n = len(arr)
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int32, count=n + 1 + arr.offset)[arr.offset :].astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    # A sliced array shares its parent's data buffer: keep only this slice's bytes, rebased to 0.
    data = data[offsets[0] : offsets[-1]]
    offsets -= offsets[0]
    is_null = arr.is_null().to_numpy(zero_copy_only=False)
    return offsets, data, is_null


# ----------------------------------------------------------------------------------------------
# Column-wise big-endian reads with clamped indexes (rows where a read would run past the buffer are
# masked out by the caller's validity conditions before any value is used)


_BE_DTYPES: dict[int, np.dtype[Any]] = {1: np.dtype(">u1"), 2: np.dtype(">i2"), 4: np.dtype(">i4"), 8: np.dtype(">i8")}


def _gather(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate data[starts[i] : starts[i] + lengths[i]] for all i; return (offsets int32, bytes).

    The slices must be disjoint and in increasing order (true for fields of consecutive records), so
    they can be cut out with one boolean mask instead of a per-byte index array.
    """
    offsets = np.zeros(len(starts) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] == 0:
        return offsets.astype(np.int32), np.zeros(0, np.uint8)
    marks = np.zeros(len(data) + 1, np.int8)
    # Starts are distinct, and so are ends (each slice lies in its own record), so plain fancy-index
    # updates are safe; a zero-length slice gets +1 and -1 at the same place and selects nothing.
    marks[starts] += 1
    marks[starts + lengths] -= 1
    inside = np.cumsum(marks[:-1], dtype=np.int8).view(np.bool_)
    return offsets.astype(np.int32), data[inside]


def _string_array(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> pa.Array:
    offsets, raw = _gather(data, starts, lengths)
    binary = pa.Array.from_buffers(pa.binary(), len(starts), [None, pa.py_buffer(offsets), pa.py_buffer(raw)])
    try:
        return binary.cast(pa.string())
    except pa.ArrowInvalid:
        # Malformed UTF-8: Kafka (Java) decodes with replacement characters; do the same row by row.
        return pa.array([None if b is None else b.decode("utf-8", "replace") for b in binary.to_pylist()], pa.string())


_B64 = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", np.uint8)


def _uuid_strings(data: np.ndarray, starts: np.ndarray) -> pa.Array:
    """Kafka Uuid text (URL-safe base64, no padding) of the 16 bytes at each start, column-wise."""
    n = len(starts)
    raw = np.zeros((n, 18), np.uint32)
    raw[:, :16] = data[starts[:, None] + np.arange(16)[None, :]]
    triples = raw.reshape(n, 6, 3)
    word = (triples[:, :, 0] << 16) | (triples[:, :, 1] << 8) | triples[:, :, 2]
    sextets = np.stack([(word >> 18) & 63, (word >> 12) & 63, (word >> 6) & 63, word & 63], axis=2)
    chars = _B64[sextets.reshape(n, 24)[:, :22]]
    offsets = np.arange(n + 1, dtype=np.int32) * 22
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(chars.tobytes())])


# ----------------------------------------------------------------------------------------------
# The fast path: offset commits (key types 0/1, value versions 0-4, tombstones)


_PAD = 32  # zero bytes appended to a data buffer so fixed-width reads of valid rows never run off the end


def _padded(data: np.ndarray) -> np.ndarray:
    out = np.zeros(len(data) + _PAD, np.uint8)
    out[: len(data)] = data
    return out


def _rows(data: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    """The `width` bytes at each position as an (n, width) matrix, in one gather. `data` is padded, so
    rows of well-formed records are read exactly; positions of malformed rows are clamped into range
    and their values are discarded by the caller's validity masks."""
    start = np.minimum(np.maximum(pos, 0), len(data) - width)
    out: np.ndarray = data[start[:, None] + np.arange(width)[None, :]]
    return out


def _int(mat: np.ndarray, start: int, width: int) -> np.ndarray:
    """Signed big-endian int of `width` bytes at column `start` of a row matrix."""
    out: np.ndarray = np.ascontiguousarray(mat[:, start : start + width]).view(_BE_DTYPES[width])
    return out.reshape(-1).astype(np.int64)


def _fast_offset_commits(
    koff: np.ndarray,
    kdata: np.ndarray,
    knull: np.ndarray,
    voff: np.ndarray,
    vdata: np.ndarray,
    vnull: np.ndarray,
) -> tuple[np.ndarray, dict[str, pa.Array]]:
    """Decode the rows that are well-formed offset commits; return (mask of those rows, their columns).

    Layouts (after the int16 version): v0/v2 offset, metadata, commit ts; v1 adds an expire ts; v3
    offset, leader epoch, metadata, commit ts; v4 as v3 with a compact metadata string and a tagged
    section (empty, or exactly the 16-byte topic id under tag 0). Each row is read with two fixed-width
    gathers: the 16 bytes at the value start and the 19 bytes after the metadata.
    """
    kdata, vdata = _padded(kdata), _padded(vdata)
    ks = koff[:-1]
    kl = koff[1:] - ks
    khead = _rows(kdata, ks, 4)
    rtype = np.where(kl >= 2, _int(khead, 0, 2), -1)
    glen = _int(khead, 2, 2)
    tpos = ks + 4 + glen
    tlen = _int(_rows(kdata, tpos, 2), 0, 2)
    key_ok = (
        (~knull) & (kl >= 10) & ((rtype == 0) | (rtype == 1)) & (glen >= 0) & (tlen >= 0) & (kl == 10 + glen + tlen)
    )

    vs = voff[:-1]
    vl = voff[1:] - vs
    tomb = vnull
    vhead = _rows(vdata, vs, 16)
    ver = np.where(vl >= 2, _int(vhead, 0, 2), -1)
    mvar_v4 = vhead[:, 14].astype(np.int64)  # v4: compact string, uvarint length + 1 (one byte when < 128)
    classic = ver <= 2
    mlen = np.where(classic, _int(vhead, 10, 2), np.where(ver == 3, _int(vhead, 14, 2), mvar_v4 - 1))
    mstart = vs + np.where(classic, 12, np.where(ver == 3, 16, 15))
    after_meta = mstart + mlen
    vtail = _rows(vdata, after_meta, 19)
    tag_count = vtail[:, 8]
    has_topic_id = (ver == 4) & (tag_count == 1) & (vtail[:, 9] == 0) & (vtail[:, 10] == 16)
    expected = np.where(
        (ver == 0) | (ver == 2),
        20,
        np.where(ver == 1, 28, np.where(ver == 3, 24, np.where(has_topic_id, 42, np.where(tag_count == 0, 24, -1)))),
    )
    v4_ok = (ver != 4) | ((mvar_v4 >= 1) & (mvar_v4 < 0x80))
    value_ok = (~vnull) & (ver >= 0) & (ver <= 4) & (mlen >= 0) & v4_ok & (vl == expected + mlen)
    fast = key_ok & (tomb | value_ok)
    idx = np.nonzero(fast)[0]
    n = len(idx)

    ks_f, glen_f, tpos_f, tlen_f = ks[idx], glen[idx], tpos[idx], tlen[idx]
    cols: dict[str, pa.Array] = {}
    cols["record_type"] = pa.array(rtype[idx].astype(np.int16))
    cols["record_kind"] = pa.repeat(pa.scalar("offset_commit", pa.string()), n)
    cols["group_id"] = _string_array(kdata, ks_f + 4, glen_f)
    cols["topic"] = _string_array(kdata, tpos_f + 2, tlen_f)
    cols["partition"] = pa.array(_int(_rows(kdata, tpos_f + 2 + tlen_f, 4), 0, 4).astype(np.int32))
    cols["member_id"] = pa.nulls(n, pa.string())

    t = tomb[idx]
    live = ~t
    ver_f, mlen_f = ver[idx], mlen[idx]
    vhead_f, vtail_f = vhead[idx], vtail[idx]
    after_f = after_meta[idx]
    cols["value_version"] = pa.array(ver_f.astype(np.int16), mask=t)
    cols["is_tombstone"] = pa.array(t)
    cols["committed_offset"] = pa.array(_int(vhead_f, 2, 8), mask=t)
    epoch = _int(vhead_f, 10, 4).astype(np.int32)
    cols["leader_epoch"] = pa.array(epoch, mask=t | (ver_f < 3) | (epoch == -1))
    meta_len = np.where(live, mlen_f, 0)
    if meta_len.any():
        meta = _string_array(vdata, np.where(live, mstart[idx], 0), meta_len)
    else:  # the usual case: every metadata string is empty, nothing to gather
        meta = pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(np.zeros(n + 1, np.int32)), pa.py_buffer(b"")])
    cols["metadata"] = pc.if_else(pa.array(t), pa.scalar(None, pa.string()), meta)
    cols["commit_timestamp"] = pa.array(_int(vtail_f, 0, 8), mask=t)
    expire = _int(vtail_f, 8, 8)
    cols["expire_timestamp"] = pa.array(expire, mask=t | (ver_f != 1) | (expire == -1))
    tid_mask = has_topic_id[idx] & live
    if tid_mask.any():
        tids = _uuid_strings(vdata, after_f[tid_mask] + 11)
        # The all-zero Uuid is Kafka's "no topic id"; a writer never tags it, but read it as absent.
        tids = pc.if_else(pc.equal(tids, "AAAAAAAAAAAAAAAAAAAAAA"), pa.scalar(None, pa.string()), tids)
        cols["topic_id"] = pc.replace_with_mask(pa.nulls(n, pa.string()), pa.array(tid_mask), tids)
    else:
        cols["topic_id"] = pa.nulls(n, pa.string())
    cols["group_metadata"] = pa.nulls(n, GROUP_METADATA)
    cols["record_json"] = pa.nulls(n, pa.string())
    cols["error"] = pa.nulls(n, pa.string())
    cols["error_field_path"] = pa.nulls(n, pa.string())
    cols["error_position"] = pa.nulls(n, pa.int32())
    return fast, cols


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


def _members(value: m.GroupMetadataValue) -> list[dict[str, Any]]:
    out = []
    for mem in value.members:
        proto = decode_member_protocol(value.protocol_type, mem)
        sub, asg = proto.subscription, proto.assignment
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
                "owned_partitions": [{"topic": t, "partition": p} for t, p in sub.owned_partitions] if sub else None,
                "subscription_generation": sub.generation_id if sub else None,
                "rack_id": sub.rack_id if sub else None,
                "assignment_version": asg.version if asg else None,
                "assigned_partitions": [{"topic": t, "partition": p} for t, p in asg.partitions] if asg else None,
                "assignment_user_data": asg.user_data if asg else None,
                "protocol_error": str(proto.error) if proto.error else None,
            }
        )
    return out


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
            row["group_metadata"] = {
                "protocol_type": v.protocol_type,
                "generation": v.generation,
                "protocol": v.protocol,
                "leader": v.leader,
                "current_state_timestamp": v.current_state_timestamp,
                "members": _members(v),
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


def _slow_table(keys: pa.BinaryArray, values: pa.BinaryArray, rows: np.ndarray) -> pa.Table:
    k_list = keys.take(pa.array(rows)).to_pylist()
    v_list = values.take(pa.array(rows)).to_pylist()
    decoded = [_row(k, v) for k, v in zip(k_list, v_list, strict=False)]
    return pa.Table.from_pylist(decoded, schema=DECODED_SCHEMA)


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
        parts = [
            decode_batch(karr.slice(i, CHUNK_ROWS), varr.slice(i, CHUNK_ROWS)) for i in range(0, len(karr), CHUNK_ROWS)
        ]
        return pa.concat_tables(parts)
    koff, kdata, knull = _buffers(karr)
    voff, vdata, vnull = _buffers(varr)
    fast, cols = _fast_offset_commits(koff, kdata, knull, voff, vdata, vnull)
    fast_rows = np.nonzero(fast)[0]
    slow_rows = np.nonzero(~fast)[0]
    fast_table = pa.Table.from_arrays([cols[f.name] for f in DECODED_SCHEMA], schema=DECODED_SCHEMA)
    if len(slow_rows) == 0:
        return fast_table
    slow_table = _slow_table(karr, varr, slow_rows)
    if len(fast_rows) == 0:
        return slow_table
    combined = pa.concat_tables([fast_table, slow_table])
    order = np.argsort(np.concatenate([fast_rows, slow_rows]), kind="stable")
    return combined.take(pa.array(order))
