"""Read Kafka log segment files (``<base offset>.log``) entry by entry, in constant memory.

A segment is a concatenation of batches, each starting ``int64 offset, int32 size`` with the magic byte at
position 16: RecordBatch v2 (magic 2, 0.11+) or a legacy message (magic 0 / 1), possibly a compressed
wrapper holding an inner message set. A segment of an upgraded cluster can mix magics.

Kafka's batch framing rules are followed (``FileLogInputStream``, ``DefaultRecordBatch``,
``AbstractLegacyRecordBatch``): CRC-32C over a v2 batch from its attributes to its end, CRC-32 over a
legacy message from its magic byte; timestamps from LogAppendTime batches apply to every record; magic-1
wrapper offsets are relative. Decompression uses kafka-python's codec functions (gzip, xerial snappy with
raw-block fallback, lz4 frames incl. the broken magic-0 header checksum, zstd).

Bad input never stops the read: a batch whose CRC fails, whose records do not parse, or whose codec is
unknown is reported as a :class:`SegmentProblem` (file, byte position, reason) and skipped; if its size
field itself is impossible the reader scans forward to the next batch whose header and CRC check out. A
truncated tail (a segment still being written, or a torn copy) ends the file with a ``truncated_tail``
notice.

The CRC does not cover a batch's baseOffset (nor its length, leader epoch and magic), so offsets are
checked too, with the invariants Kafka keeps even in compacted segments (``DefaultRecordBatch``,
``MemoryRecords.filterTo``: the cleaner removes records but keeps a v2 batch's base offset and
lastOffsetDelta, and may keep an emptied batch as a bare header). A batch is skipped and reported when
its offsets lie outside the segment's range (from the base offset its file name gives to the next
segment's base offset, when the caller knows it: ``offset_out_of_range``), when its base offset is not
above the last offset of the batch before it (``offsets_not_increasing``), or when its records' offsets
are not strictly increasing inside [baseOffset, baseOffset + lastOffsetDelta]. To tell a batch whose
base offset was pushed ahead from the good batch after it, a batch's records are handed out only once
the next good batch's offsets are known: two batches are held in memory at a time.
"""

from __future__ import annotations

import io
import logging
import os
import re
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from coordinator_core._frozen import fast_init
from coordinator_core.errors import DecodeError

log = logging.getLogger(__name__)

LOG_OVERHEAD = 12  # int64 offset + int32 size
HEADER_SIZE_UP_TO_MAGIC = 17
V2_HEADER_SIZE = 61
LEGACY_MIN_SIZE_V0 = 14
LEGACY_MIN_SIZE_V1 = 22
#: Kafka's default max.message.bytes is ~1 MiB; brokers allow far more, but a batch size beyond this
#: in `__consumer_offsets` is taken as a corrupt size field rather than a reason to allocate.
MAX_BATCH_SIZE = 256 * 1024 * 1024

COMPRESSION = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
CONTROL_TYPES = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}
CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"
NO_TIMESTAMP_TYPE = "NoTimestampType"

_HDR = struct.Struct(">qi")
_V2 = struct.Struct(">qiibIhiqqqhii")  # the 61-byte RecordBatch v2 header
_LEGACY_V0 = struct.Struct(">Ibb")
_LEGACY_V1 = struct.Struct(">Ibbq")
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_CONTROL_VALUE = struct.Struct(">hi")
#: Kafka names a segment file by its base offset in 20 digits (``LogFileUtils.filenamePrefixFromOffset``).
_SEGMENT_FILE_NAME = re.compile(r"(\d{20})\.log")


def segment_base_offset(path: str | os.PathLike[str]) -> int | None:
    """The base offset a segment's file name gives (``00000000000000000071.log`` -> 71), or None when the
    name is not a Kafka segment name."""
    match = _SEGMENT_FILE_NAME.fullmatch(Path(path).name)
    return int(match.group(1)) if match else None


@fast_init
@dataclass(frozen=True, slots=True)
class SegmentEntry:
    """One record read from a segment, with the batch facts needed to interpret it.

    ``key``/``value`` are None when absent (a None value is a tombstone). For a control record
    (transaction marker) ``is_control`` is set and ``control_type`` / ``coordinator_epoch`` say which
    marker it is. ``file_position`` is the byte position of the enclosing batch in the file.
    """

    offset: int
    timestamp: int
    timestamp_type: str
    key: bytes | None
    value: bytes | None
    producer_id: int
    producer_epoch: int
    is_transactional: bool
    is_control: bool
    control_type: str | None
    coordinator_epoch: int | None
    batch_base_offset: int
    batch_last_offset: int
    partition_leader_epoch: int
    magic: int
    compression: str
    file_position: int


@fast_init
@dataclass(frozen=True, slots=True)
class SegmentProblem:
    """Something in a segment that could not be read: where, what, and what the reader did about it.

    ``kind`` is one of ``crc_mismatch``, ``corrupt_batch``, ``unsupported_compression``,
    ``offset_out_of_range`` (the batch's offsets lie outside the segment's range, or a record's outside
    its batch's), ``offsets_not_increasing`` (the batch's base offset is not above the previous batch's
    last offset, or its records' offsets do not increase), ``corrupt_framing`` (the size field was
    impossible; ``skipped_bytes`` were scanned past to the next valid batch) or ``truncated_tail`` (the
    file ended inside a batch; reading stopped there).
    """

    file: str
    position: int
    kind: str
    message: str
    skipped_bytes: int = 0

    def __str__(self) -> str:
        return f"{self.file} @ byte {self.position}: {self.kind}: {self.message}"


class _BatchError(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


#: A batch read whole: (file position, first offset, last offset, entries). A v2 batch's offsets are its
#: header's (baseOffset, baseOffset + lastOffsetDelta), which compaction keeps; a legacy one's are its
#: first and last message's.
_Batch = tuple[int, int, int, list[SegmentEntry]]


def _record_offset_error(offset_delta: int, previous_delta: int, last_offset_delta: int) -> _BatchError:
    if offset_delta < 0:
        return _BatchError("offset_out_of_range", f"record offset delta {offset_delta} is below the batch's base "
                                                  f"offset (lastOffsetDelta {last_offset_delta})")
    return _BatchError("offsets_not_increasing", f"record offset delta {offset_delta} after {previous_delta} "
                                                 f"(lastOffsetDelta {last_offset_delta})")


def _crc32c() -> object:
    import crc32c

    return crc32c.crc32c


def _decompress(codec: int, data: bytes, magic: int) -> bytes:
    # kafka-python's codec helpers, imported on the first compressed batch only.
    import kafka.codec as kc

    if codec == 1:
        return bytes(kc.gzip_decode(data))
    if codec == 2:
        return bytes(kc.snappy_decode(data))
    if codec == 3:
        # Magic-0 producers computed the LZ4 frame header checksum wrongly; Kafka ignores it there.
        return bytes(kc.lz4_decode_old_kafka(data) if magic == 0 else kc.lz4_decode(data))
    if codec == 4:
        if magic < 2:
            raise _BatchError("unsupported_compression", "zstd is not allowed in legacy (magic < 2) messages")
        return bytes(kc.zstd_decode(data))
    raise _BatchError("unsupported_compression", f"unknown compression codec {codec}")


# ----------------------------------------------------------------------------------------------
# Varint helpers (inline fast path: most varints in these records are one byte)


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    b = buf[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    result = b & 0x7F
    shift = 7
    pos += 1
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift > 63:
            raise _BatchError("corrupt_batch", "varint longer than 10 bytes")
    return (result >> 1) ^ -(result & 1), pos


# ----------------------------------------------------------------------------------------------


class SegmentReader:
    """Iterate the entries of one segment; problems met on the way collect in :attr:`problems`.

    >>> reader = SegmentReader(bytes.fromhex(  # one RecordBatch v2 with a single offset commit
    ...     "00000000000000000000006a00000000022b8620f60000000000000000018bcfe568000000018bcfe56800"
    ...     "ffffffffffffffffffffffffffff000000017000000034000100086d792d67726f757000086d792d746f706963"
    ...     "00000000300003000000000000002a0000000500000000018bcfe5680000"))
    >>> [(e.offset, len(e.key), len(e.value)) for e in reader], reader.problems
    ([(0, 26, 24)], [])
    """

    def __init__(self, source: str | os.PathLike[str] | bytes | bytearray | memoryview, *,
                 verify_crc: bool = True, name: str | None = None, base_offset: int | None = None,
                 next_base_offset: int | None = None) -> None:
        self.source = source
        self.verify_crc = verify_crc
        if isinstance(source, (bytes, bytearray, memoryview)):
            self.name = name or "<bytes>"
        else:
            self.name = name or os.fspath(source)
            if base_offset is None:
                base_offset = segment_base_offset(source)
        #: Offsets of this segment lie in [base_offset, next_base_offset); None: not known (no offset is
        #: negative, though).
        self.base_offset = base_offset
        self.next_base_offset = next_base_offset
        self.problems: list[SegmentProblem] = []
        self.batches_read = 0
        self.records_read = 0
        self.bytes_read = 0

    def _problem(self, position: int, kind: str, message: str, skipped: int = 0) -> None:
        p = SegmentProblem(self.name, position, kind, message, skipped)
        self.problems.append(p)
        log.warning("%s", p)

    def __iter__(self) -> Iterator[SegmentEntry]:
        if isinstance(self.source, (bytes, bytearray, memoryview)):
            yield from self._in_sequence(self._read(io.BytesIO(bytes(self.source)), len(self.source)))
        else:
            path = Path(self.source)
            with path.open("rb") as f:
                yield from self._in_sequence(self._read(f, path.stat().st_size))

    # -- offsets --------------------------------------------------------------------------------

    def _segment_range(self) -> str:
        low = self.base_offset if self.base_offset is not None else 0
        return f"[{low}, {self.next_base_offset})" if self.next_base_offset is not None else f"[{low}, ...)"

    def _in_sequence(self, batches: Iterator[_Batch]) -> Iterator[SegmentEntry]:
        """The entries of the batches whose offsets fit the segment and follow on from the batch before.

        A batch is held back until the next good batch shows whether it fits: when a batch's offsets run
        into the next one's while the next one follows on from the batches before it, the held batch is
        the one out of place (its base offset was pushed ahead; the CRC does not cover it), not the next.
        A batch that fits exactly after the previous one is kept, and the next one is reported instead.
        """
        low = self.base_offset if self.base_offset is not None else 0
        high = self.next_base_offset
        accepted_last = low - 1  # last offset of the batches handed out so far
        held: _Batch | None = None
        for batch in batches:
            position, first, last, _entries = batch
            if first < low or (high is not None and last >= high):
                self._problem(position, "offset_out_of_range",
                              f"batch offsets {first}..{last} lie outside the segment's range {self._segment_range()}")
                continue
            if held is not None:
                held_position, held_first, held_last, held_entries = held
                if first > held_last:
                    self.batches_read += 1
                    self.records_read += len(held_entries)
                    yield from held_entries
                    accepted_last = held_last
                elif first > accepted_last and held_first != accepted_last + 1:
                    self._problem(held_position, "offsets_not_increasing",
                                  f"batch offsets {held_first}..{held_last} run past the base offset {first} of the "
                                  f"next batch (byte {position}), which follows on from offset {accepted_last}: "
                                  f"this batch's base offset is out of sequence")
                else:
                    self._problem(position, "offsets_not_increasing",
                                  f"base offset {first} (batch offsets {first}..{last}) is not above the last offset "
                                  f"{held_last} of the previous batch (byte {held_position})")
                    continue
            held = batch
        if held is not None:
            self.batches_read += 1
            self.records_read += len(held[3])
            yield from held[3]

    # -- framing --------------------------------------------------------------------------------

    def _read(self, f: BinaryIO, size: int) -> Iterator[_Batch]:
        pos = 0
        while True:
            remaining = size - pos
            if remaining <= 0:
                return
            f.seek(pos)
            head = f.read(HEADER_SIZE_UP_TO_MAGIC)
            if len(head) < HEADER_SIZE_UP_TO_MAGIC:
                if head.strip(b"\x00"):
                    self._problem(pos, "truncated_tail", f"{remaining} byte(s) at the end do not hold a batch header")
                return
            base_offset, batch_size = _HDR.unpack_from(head, 0)
            magic = head[16]
            if batch_size == 0 and base_offset == 0 and not head.strip(b"\x00"):
                # Preallocated, never-written space (file.preallocate): the data ends here.
                return
            if batch_size < LEGACY_MIN_SIZE_V0 or batch_size > MAX_BATCH_SIZE or magic > 2:
                skipped = self._resync(f, pos, size)
                self._problem(pos, "corrupt_framing",
                              f"impossible batch header (size {batch_size}, magic {magic}); "
                              + (f"skipped {skipped} byte(s) to the next valid batch" if skipped < remaining
                                 else "no valid batch after it"), skipped)
                pos += skipped
                continue
            end = pos + LOG_OVERHEAD + batch_size
            if end > size:
                self._problem(pos, "truncated_tail",
                              f"batch of {LOG_OVERHEAD + batch_size} bytes but only {remaining} left in the file")
                return
            f.seek(pos)
            batch = f.read(LOG_OVERHEAD + batch_size)
            self.bytes_read += len(batch)
            try:
                first, last, entries = self._v2(batch, pos) if magic == 2 else self._legacy(batch, pos, magic)
            except _BatchError as e:
                self._problem(pos, e.kind, e.message)
            except (IndexError, struct.error, ValueError, EOFError, OSError, zlib.error) as e:
                self._problem(pos, "corrupt_batch", f"{type(e).__name__}: {e}")
            except Exception as e:  # noqa: BLE001 - codec libraries raise their own types
                self._problem(pos, "corrupt_batch", f"{type(e).__name__}: {e}")
            else:
                yield pos, first, last, entries
            pos = end

    def _resync(self, f: BinaryIO, start: int, size: int) -> int:
        """Bytes from `start` to the next position that holds a batch with a plausible header and a good CRC."""
        window = 1 << 20
        pos = start + 1
        while pos < size - HEADER_SIZE_UP_TO_MAGIC:
            f.seek(pos)
            chunk = f.read(window + HEADER_SIZE_UP_TO_MAGIC)
            for i in range(0, max(len(chunk) - HEADER_SIZE_UP_TO_MAGIC, 0)):
                magic = chunk[i + 16]
                if magic > 2:
                    continue
                _, bsize = _HDR.unpack_from(chunk, i)
                if bsize < LEGACY_MIN_SIZE_V0 or pos + i + LOG_OVERHEAD + bsize > size:
                    continue
                f.seek(pos + i)
                candidate = f.read(LOG_OVERHEAD + bsize)
                if self._crc_ok(candidate, magic):
                    return pos + i - start
            pos += window
        return size - start

    def _crc_ok(self, batch: bytes, magic: int) -> bool:
        (stored,) = struct.unpack_from(">I", batch, 17 if magic == 2 else LOG_OVERHEAD)
        if magic == 2:
            return bool(_crc32c()(batch[21:]) == stored)  # type: ignore[operator]
        return bool((zlib.crc32(batch[16:]) & 0xFFFFFFFF) == stored)

    # -- RecordBatch v2 -------------------------------------------------------------------------

    def _v2(self, batch: bytes, file_pos: int) -> tuple[int, int, list[SegmentEntry]]:  # noqa: C901, PLR0912, PLR0915 - the v2 batch header in wire order, one check per field
        if len(batch) < V2_HEADER_SIZE:
            raise _BatchError("corrupt_batch", f"v2 batch of {len(batch)} bytes is shorter than its 61-byte header")
        (base_offset, _size, leader_epoch, _magic, crc, attributes, last_offset_delta, base_ts, max_ts,
         producer_id, producer_epoch, _base_seq, count) = _V2.unpack_from(batch, 0)
        if self.verify_crc:
            actual = _crc32c()(batch[21:])  # type: ignore[operator]
            if actual != crc:
                raise _BatchError("crc_mismatch", f"CRC-32C stored {crc}, computed {actual}")
        codec = attributes & 0x07
        ts_type = LOG_APPEND_TIME if attributes & 0x08 else CREATE_TIME
        transactional = bool(attributes & 0x10)
        control = bool(attributes & 0x20)
        if count < 0:
            raise _BatchError("corrupt_batch", f"negative record count {count}")
        if last_offset_delta < 0:
            raise _BatchError("offset_out_of_range", f"negative lastOffsetDelta {last_offset_delta}")
        body = batch[V2_HEADER_SIZE:] if codec == 0 else _decompress(codec, batch[V2_HEADER_SIZE:], 2)
        last_offset = base_offset + last_offset_delta
        compression = COMPRESSION.get(codec, str(codec))
        out: list[SegmentEntry] = []
        pos = 0
        n = len(body)
        previous_delta = -1
        for _ in range(count):
            length, pos = _varint(body, pos)
            start = pos
            if length < 0 or start + length > n:
                raise _BatchError("corrupt_batch", f"record length {length} runs past the batch end")
            pos += 1  # record attributes (unused)
            ts_delta, pos = _varint(body, pos)
            offset_delta, pos = _varint(body, pos)
            if offset_delta <= previous_delta:
                raise _record_offset_error(offset_delta, previous_delta, last_offset_delta)
            previous_delta = offset_delta
            klen, pos = _varint(body, pos)
            key: bytes | None = None
            if klen >= 0:
                key = body[pos:pos + klen]
                pos += klen
            vlen, pos = _varint(body, pos)
            value: bytes | None = None
            if vlen >= 0:
                value = body[pos:pos + vlen]
                pos += vlen
            headers, pos = _varint(body, pos)
            if headers < 0:
                raise _BatchError("corrupt_batch", f"negative header count {headers}")
            for _h in range(headers):
                hk, pos = _varint(body, pos)
                pos += max(hk, 0)
                hv, pos = _varint(body, pos)
                pos += max(hv, 0)
            if pos != start + length:
                raise _BatchError("corrupt_batch", f"record declared {length} bytes but used {pos - start}")
            control_type: str | None = None
            coordinator_epoch: int | None = None
            if control:
                if key is None or len(key) < 4:
                    raise _BatchError("corrupt_batch", "control record without a 4-byte key")
                ctype = _I16.unpack_from(key, 2)[0]
                control_type = CONTROL_TYPES.get(ctype, f"UNKNOWN({ctype})")
                if ctype in (0, 1) and value is not None and len(value) >= 6:
                    coordinator_epoch = _CONTROL_VALUE.unpack_from(value, 0)[1]
            out.append(SegmentEntry(
                base_offset + offset_delta,
                max_ts if ts_type == LOG_APPEND_TIME else base_ts + ts_delta,
                ts_type, key, value, producer_id, producer_epoch, transactional, control,
                control_type, coordinator_epoch, base_offset, last_offset, leader_epoch, 2, compression,
                file_pos,
            ))
        if pos != n:
            raise _BatchError("corrupt_batch", f"{n - pos} byte(s) left after {count} record(s)")
        if previous_delta > last_offset_delta:
            # Compaction may leave the last record's delta below lastOffsetDelta, never above it.
            raise _BatchError("offset_out_of_range", f"record offset delta {previous_delta} is past the batch's "
                                                     f"lastOffsetDelta {last_offset_delta}")
        return base_offset, last_offset, out

    # -- legacy message sets (magic 0 and 1) ----------------------------------------------------

    def _legacy_message(self, msg: bytes, offset: int) -> tuple[int, int, int, bytes | None, bytes | None]:
        """Parse one legacy message (after its offset/size header): (magic, attributes, ts, key, value)."""
        if len(msg) < LEGACY_MIN_SIZE_V0:
            raise _BatchError("corrupt_batch", f"legacy message of {len(msg)} bytes is too short")
        crc, magic, attributes = _LEGACY_V0.unpack_from(msg, 0)
        if magic not in (0, 1):
            raise _BatchError("corrupt_batch", f"legacy message with magic {magic}")
        if self.verify_crc:
            actual = zlib.crc32(msg[4:]) & 0xFFFFFFFF
            if actual != crc:
                raise _BatchError("crc_mismatch", f"CRC-32 stored {crc}, computed {actual} (offset {offset})")
        pos = 6
        ts = -1
        if magic == 1:
            if len(msg) < LEGACY_MIN_SIZE_V1:
                raise _BatchError("corrupt_batch", f"magic-1 message of {len(msg)} bytes is too short")
            ts = _LEGACY_V1.unpack_from(msg, 0)[3]
            pos = 14
        (klen,) = _I32.unpack_from(msg, pos)
        pos += 4
        key = None
        if klen >= 0:
            key = msg[pos:pos + klen]
            pos += klen
        if pos + 4 > len(msg):
            raise _BatchError("corrupt_batch", "legacy message key runs past the message")
        (vlen,) = _I32.unpack_from(msg, pos)
        pos += 4
        value = None
        if vlen >= 0:
            value = msg[pos:pos + vlen]
            pos += vlen
        if pos != len(msg):
            raise _BatchError("corrupt_batch", f"legacy message sizes do not add up ({len(msg) - pos} byte(s) off)")
        return magic, attributes, ts, key, value

    def _legacy(self, batch: bytes, file_pos: int, magic: int) -> tuple[int, int, list[SegmentEntry]]:  # noqa: C901 - the legacy message set in wire order, one check per field
        wrapper_offset = _HDR.unpack_from(batch, 0)[0]
        magic, attributes, ts, key, value = self._legacy_message(batch[LOG_OVERHEAD:], wrapper_offset)
        codec = attributes & 0x07
        ts_type = NO_TIMESTAMP_TYPE if magic == 0 else (LOG_APPEND_TIME if attributes & 0x08 else CREATE_TIME)

        def entry(offset: int, t: int, t_type: str, k: bytes | None, v: bytes | None, mg: int) -> SegmentEntry:
            return SegmentEntry(offset, t, t_type, k, v, -1, -1, False, False, None, None,
                                wrapper_offset, wrapper_offset, -1, mg, COMPRESSION.get(codec, str(codec)),
                                file_pos)

        if codec == 0:
            return wrapper_offset, wrapper_offset, [entry(wrapper_offset, ts, ts_type, key, value, magic)]
        if value is None:
            raise _BatchError("corrupt_batch", "compressed wrapper message without a value")
        inner = _decompress(codec, value, magic)
        parsed: list[tuple[int, int, int, bytes | None, bytes | None, int]] = []
        pos = 0
        while pos + LOG_OVERHEAD <= len(inner):
            inner_offset, inner_size = _HDR.unpack_from(inner, pos)
            msg = inner[pos + LOG_OVERHEAD:pos + LOG_OVERHEAD + inner_size]
            if len(msg) != inner_size:
                raise _BatchError("corrupt_batch", "inner message runs past the decompressed wrapper")
            imagic, iattr, its, ikey, ivalue = self._legacy_message(msg, inner_offset)
            if iattr & 0x07:
                raise _BatchError("corrupt_batch", "compressed message nested inside a compressed wrapper")
            parsed.append((inner_offset, imagic, its, ikey, ivalue, iattr))
            pos += LOG_OVERHEAD + inner_size
        if pos != len(inner):
            raise _BatchError("corrupt_batch", f"{len(inner) - pos} stray byte(s) after the inner messages")
        out: list[SegmentEntry] = []
        last_relative = parsed[-1][0] if parsed else 0
        previous = -1
        for inner_offset, imagic, its, ikey, ivalue, _iattr in parsed:
            if magic == 1 and wrapper_offset != 0:
                # Magic 1: inner offsets are relative; the wrapper carries the offset of the last one.
                absolute = wrapper_offset - last_relative + inner_offset
            else:
                absolute = inner_offset
            if absolute <= previous:
                raise _BatchError("offsets_not_increasing" if absolute >= 0 else "offset_out_of_range",
                                  f"inner message offset {absolute} after {previous} in the wrapper at offset "
                                  f"{wrapper_offset}")
            previous = absolute
            if magic == 0:
                t, t_type = -1, NO_TIMESTAMP_TYPE
            elif ts_type == LOG_APPEND_TIME:
                t, t_type = ts, LOG_APPEND_TIME
            else:
                t, t_type = its, CREATE_TIME
            out.append(entry(absolute, t, t_type, ikey, ivalue, imagic))
        if not out:
            return wrapper_offset, wrapper_offset, out
        return out[0].offset, out[-1].offset, out


def read_segment(path_or_bytes: str | os.PathLike[str] | bytes | bytearray | memoryview, *,
                 verify_crc: bool = True, base_offset: int | None = None,
                 next_base_offset: int | None = None) -> SegmentReader:
    """Entries of one `.log` segment file (or its bytes), in file order.

    Returns a :class:`SegmentReader`: iterate it for :class:`SegmentEntry` objects; afterwards its
    ``problems`` list holds every corrupt batch or truncated tail met, with file and byte position.

    Args:
        path_or_bytes: The segment file, or its bytes.
        verify_crc: Check each batch's CRC.
        base_offset: The segment's base offset: no batch may hold a lower offset. A file's name gives it
            (``00000000000000000071.log``); for bytes, pass it here if known.
        next_base_offset: The base offset of the partition's next segment, if known: every offset of this
            segment is below it. Without it a batch pushed ahead is still found when a later batch of the
            same segment follows on from the batches before it, but not when it is the segment's last.
    """
    return SegmentReader(path_or_bytes, verify_crc=verify_crc, base_offset=base_offset,
                         next_base_offset=next_base_offset)


__all__ = ["DecodeError", "SegmentEntry", "SegmentProblem", "SegmentReader", "read_segment", "segment_base_offset"]
