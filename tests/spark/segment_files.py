"""Write small Kafka log segments (RecordBatch v2, uncompressed) for the Spark tests.

Test-only helper: the project reads segments with coordinator_core.read_segment; tests need files to
read, with transactional batches, control markers and deliberately corrupt bytes.
Format (Kafka DefaultRecordBatch): baseOffset i64, batchLength i32, partitionLeaderEpoch i32, magic i8=2,
crc u32 (CRC-32C of everything after it), attributes i16, lastOffsetDelta i32, baseTimestamp i64,
maxTimestamp i64, producerId i64, producerEpoch i16, baseSequence i32, recordCount i32, records.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

import crc32c

TRANSACTIONAL = 0x10
CONTROL = 0x20
CONTROL_TYPES = {"ABORT": 0, "COMMIT": 1}


def _varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = z & 0x7F
        z >>= 7
        if z:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _bytes_field(b: bytes | None) -> bytes:
    return _varint(-1) if b is None else _varint(len(b)) + b


@dataclass
class Batch:
    base_offset: int
    records: list[tuple[bytes | None, bytes | None]]
    timestamp_ms: int = 1_700_000_000_000
    producer_id: int = -1
    producer_epoch: int = -1
    transactional: bool = False
    control: bool = False
    offset_deltas: list[int] = field(default_factory=list)  # compacted batches skip deltas
    leader_epoch: int = 0  # the batch's partitionLeaderEpoch

    def encode(self) -> bytes:
        deltas = self.offset_deltas or list(range(len(self.records)))
        body = b""
        for delta, (key, value) in zip(deltas, self.records, strict=True):
            rec = bytes([0]) + _varint(0) + _varint(delta) + _bytes_field(key) + _bytes_field(value) + _varint(0)
            body += _varint(len(rec)) + rec
        attributes = (TRANSACTIONAL if self.transactional else 0) | (CONTROL if self.control else 0)
        after_crc = struct.pack(
            ">hiqqqhii",
            attributes,
            deltas[-1],
            self.timestamp_ms,
            self.timestamp_ms,
            self.producer_id,
            self.producer_epoch,
            -1,
            len(self.records),
        ) + body
        crc = crc32c.crc32c(after_crc)
        batch_length = 4 + 1 + 4 + len(after_crc)
        return struct.pack(">qiibI", self.base_offset, batch_length, self.leader_epoch, 2, crc) + after_crc


def marker(base_offset: int, producer_id: int, kind: str, timestamp_ms: int = 1_700_000_000_000) -> Batch:
    """A transaction COMMIT/ABORT control batch of `producer_id`."""
    key = struct.pack(">hh", 0, CONTROL_TYPES[kind])
    value = struct.pack(">hi", 0, 0)
    return Batch(
        base_offset,
        [(key, value)],
        timestamp_ms=timestamp_ms,
        producer_id=producer_id,
        producer_epoch=0,
        transactional=True,
        control=True,
    )


def write_segment(directory: Path, partition: int, batches: list[Batch], garbage_after: int | None = None) -> Path:
    """Write `__consumer_offsets-<partition>/<base offset>.log`; optionally corrupt one batch's CRC."""
    part_dir = directory / f"__consumer_offsets-{partition}"
    part_dir.mkdir(parents=True, exist_ok=True)
    data = bytearray()
    for i, batch in enumerate(batches):
        encoded = bytearray(batch.encode())
        if garbage_after is not None and i == garbage_after:
            encoded[-1] ^= 0xFF  # flips a payload byte: the CRC no longer matches
        data += encoded
    path = part_dir / f"{batches[0].base_offset:020d}.log"
    path.write_bytes(bytes(data))
    return path
