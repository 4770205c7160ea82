"""read_segment over every batch format Kafka has written: RecordBatch v2 and legacy magic 0/1, every
codec, control and transactional batches, CRC corruption, corrupt framing, truncated tails, and offsets the
CRC does not cover (a batch outside its segment's range or not above the batch before it).

Batches are built by kafka-python's record builders (an independent implementation) or, for control
batches and hand-made corruption, by the small v2 writer below, which follows DefaultRecordBatch's layout.
"""

from __future__ import annotations

import struct
from pathlib import Path

import crc32c
import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

import coordinator_core as cc
from coordinator_core.wire import write_varint, write_varlong
from tests.unit import vectors as v

h = bytes.fromhex


def v2_batch(base_offset: int, records: list[tuple[bytes | None, bytes | None]], *, attributes: int = 0,
             producer_id: int = -1, producer_epoch: int = -1, base_ts: int = 1000, max_ts: int = 1000,
             offset_deltas: list[int] | None = None, last_offset_delta: int | None = None) -> bytes:
    """A RecordBatch v2 laid out as DefaultRecordBatch documents it (uncompressed).

    `offset_deltas` (default 0, 1, ...) and `last_offset_delta` (default the last record's delta) make the
    batches the log cleaner leaves: records removed, the original lastOffsetDelta kept."""
    deltas = list(range(len(records))) if offset_deltas is None else offset_deltas
    if last_offset_delta is None:
        last_offset_delta = deltas[-1] if deltas else 0
    body = b""
    for delta, (key, value) in zip(deltas, records, strict=True):
        rec = b"\x00" + write_varlong(0) + write_varint(delta)
        rec += write_varint(-1) if key is None else write_varint(len(key)) + key
        rec += write_varint(-1) if value is None else write_varint(len(value)) + value
        rec += write_varint(0)
        body += write_varint(len(rec)) + rec
    after_crc = struct.pack(">hiqqqhii", attributes, last_offset_delta, base_ts, max_ts, producer_id,
                            producer_epoch, -1, len(records)) + body
    crc = crc32c.crc32c(after_crc)
    head = struct.pack(">qiib", base_offset, 4 + 1 + 4 + len(after_crc), 0, 2) + struct.pack(">I", crc)
    return head + after_crc


def control_batch(base_offset: int, marker: int, producer_id: int, coordinator_epoch: int = 3) -> bytes:
    key = struct.pack(">hh", 0, marker)
    value = struct.pack(">hi", 0, coordinator_epoch)
    return v2_batch(base_offset, [(key, value)], attributes=0x30, producer_id=producer_id, producer_epoch=0)


def test_reference_batches() -> None:
    reader = cc.read_segment(h(v.BATCH_V2) + h(v.BATCH_V2_TOMBSTONE))
    entries = list(reader)
    assert reader.problems == []
    assert [(e.offset, e.timestamp, e.timestamp_type, e.magic) for e in entries] == [
        (0, v.T, "CreateTime", 2), (1, v.T, "CreateTime", 2)]
    assert entries[0].key == h(v.OFFSET_KEY_T1) and entries[0].value == h(v.OFFSET_VALUES[3][1])
    assert entries[1].value is None
    assert (entries[0].producer_id, entries[0].is_transactional, entries[0].is_control) == (-1, False, False)


@pytest.mark.parametrize("hex_batch,magic,timestamp,ts_type", [
    (v.LEGACY_MAGIC1, 1, v.T, "CreateTime"), (v.LEGACY_MAGIC0, 0, -1, "NoTimestampType")])
def test_reference_legacy_messages(hex_batch: str, magic: int, timestamp: int, ts_type: str) -> None:
    reader = cc.read_segment(h(hex_batch))
    [e] = list(reader)
    assert reader.problems == []
    assert (e.offset, e.magic, e.timestamp, e.timestamp_type) == (0, magic, timestamp, ts_type)
    assert cc.decode_record(e.key, e.value).value.expire_timestamp == v.T + 86_400_000


@pytest.mark.parametrize("codec,name", [(0, "none"), (1, "gzip"), (2, "snappy"), (3, "lz4"), (4, "zstd")])
def test_v2_every_codec(codec: int, name: str) -> None:
    bb = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False, producer_id=-1,
                                   producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i in range(50):
        bb.append(i, timestamp=5000 + i, key=b"key-%d" % i, value=b"value-%d" % i * 3, headers=[])
    reader = cc.read_segment(bytes(bb.build()))
    entries = list(reader)
    assert reader.problems == []
    assert [(e.offset, e.key, e.value, e.timestamp) for e in entries] == [
        (i, b"key-%d" % i, b"value-%d" % i * 3, 5000 + i) for i in range(50)]
    assert {e.compression for e in entries} == {name}


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [0, 1, 2, 3])
def test_legacy_every_magic_and_codec(magic: int, codec: int) -> None:
    # Magic-0 wrappers keep the inner offsets the broker rewrote to absolute values, which only the
    # first set built here has (0..3); every other case gets two sets, the second at offsets 4..7.
    sets = 1 if (magic == 0 and codec != 0) else 2
    segment = b""
    for set_no in range(sets):
        lb = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 20)
        for i in range(4):
            lb.append(i, timestamp=7000 + i if magic else None, key=b"k%d" % i, value=b"v%d" % i)
        raw = bytearray(lb.build())
        if codec == 0:
            # Uncompressed legacy sets are one message per entry; give them absolute offsets as a log has.
            pos = 0
            while pos < len(raw):
                off = struct.unpack_from(">q", raw, pos)[0]
                struct.pack_into(">q", raw, pos, set_no * 4 + off)
                pos += 12 + struct.unpack_from(">i", raw, pos + 8)[0]
        elif magic == 1:
            # The broker stamps a magic-1 wrapper with the absolute offset of its last inner message.
            struct.pack_into(">q", raw, 0, set_no * 4 + 3)
        segment += bytes(raw)
    reader = cc.read_segment(segment)
    entries = list(reader)
    assert reader.problems == []
    assert [(e.offset, e.key, e.value) for e in entries] == [
        (n * 4 + i, b"k%d" % i, b"v%d" % i) for n in range(sets) for i in range(4)]
    assert {e.magic for e in entries} == {magic}
    assert {e.timestamp for e in entries} == ({7000, 7001, 7002, 7003} if magic else {-1})


def test_log_append_time_applies_the_batch_max_timestamp() -> None:
    batch = v2_batch(10, [(b"k", b"v"), (b"k2", b"v2")], attributes=0x08, base_ts=1, max_ts=99)
    entries = list(cc.read_segment(batch))
    assert [(e.offset, e.timestamp, e.timestamp_type) for e in entries] == [
        (10, 99, "LogAppendTime"), (11, 99, "LogAppendTime")]


def test_transactional_and_control_batches() -> None:
    key = h(v.OFFSET_KEY_T1)
    value = h(v.OFFSET_VALUES[3][1])
    segment = (v2_batch(0, [(key, value)], attributes=0x10, producer_id=4000, producer_epoch=0)
               + control_batch(1, marker=1, producer_id=4000)
               + v2_batch(2, [(key, value)], attributes=0x10, producer_id=4001, producer_epoch=0)
               + control_batch(3, marker=0, producer_id=4001, coordinator_epoch=9))
    reader = cc.read_segment(segment)
    entries = list(reader)
    assert reader.problems == []
    assert [(e.offset, e.producer_id, e.is_transactional, e.is_control, e.control_type, e.coordinator_epoch)
            for e in entries] == [
        (0, 4000, True, False, None, None),
        (1, 4000, True, True, "COMMIT", 3),
        (2, 4001, True, False, None, None),
        (3, 4001, True, True, "ABORT", 9),
    ]


def test_crc_mismatch_is_reported_and_the_next_batch_is_read(tmp_path: Path) -> None:
    good = h(v.BATCH_V2)
    bad = bytearray(h(v.BATCH_V2_TOMBSTONE))
    bad[-3] ^= 0xFF  # inside the record, covered by the CRC
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(bytes(bad) + good)
    reader = cc.read_segment(path)
    entries = list(reader)
    assert [e.offset for e in entries] == [0]
    [problem] = reader.problems
    assert (problem.file, problem.position, problem.kind) == (str(path), 0, "crc_mismatch")
    legacy = bytearray(h(v.LEGACY_MAGIC1))
    legacy[-1] ^= 1
    reader = cc.read_segment(bytes(legacy) + good)
    assert [e.offset for e in reader] == [0] and [p.kind for p in reader.problems] == ["crc_mismatch"]


def test_corrupt_framing_resyncs_to_the_next_valid_batch() -> None:
    first = h(v.BATCH_V2)
    junk = b"\x00" * 8 + b"\x7f\xff\xff\xff" + b"garbage-bytes-here"
    second = v2_batch(1, [(b"k", b"v")])
    reader = cc.read_segment(first + junk + second)
    entries = list(reader)
    assert [e.offset for e in entries] == [0, 1]
    [problem] = reader.problems
    assert (problem.position, problem.kind, problem.skipped_bytes) == (len(first), "corrupt_framing", len(junk))


def test_truncated_tail_ends_the_file_with_a_notice() -> None:
    data = h(v.BATCH_V2) + h(v.BATCH_V2_TOMBSTONE)
    # +10 ends inside the next header (which is not all zeros); -1 ends inside the next batch.
    for cut in (len(h(v.BATCH_V2)) + 10, len(data) - 1):
        reader = cc.read_segment(data[:cut])
        assert [e.offset for e in reader] == [0]
        [problem] = reader.problems
        assert (problem.kind, problem.position) == ("truncated_tail", len(h(v.BATCH_V2)))


def test_preallocated_zero_tail_is_the_end_of_data() -> None:
    reader = cc.read_segment(h(v.BATCH_V2) + bytes(4096))
    assert [e.offset for e in reader] == [0]
    assert reader.problems == []


def test_corrupt_record_inside_a_valid_crc_batch_is_reported() -> None:
    # A record whose declared length disagrees with its fields, in a batch whose CRC was computed over it.
    batch = bytearray(v2_batch(0, [(b"k", b"v")]))
    batch[61] = 0x20  # record length varint: 16 instead of 8
    fixed = bytes(batch[:17]) + struct.pack(">I", crc32c.crc32c(bytes(batch[21:]))) + bytes(batch[21:])
    reader = cc.read_segment(fixed)
    assert list(reader) == []
    assert [p.kind for p in reader.problems] == ["corrupt_batch"]


def test_mixed_magics_in_one_segment() -> None:
    lb = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 20)
    lb.append(0, timestamp=1, key=b"a", value=b"1")
    segment = bytes(lb.build()) + v2_batch(1, [(b"b", b"2")])
    assert [(e.offset, e.magic) for e in cc.read_segment(segment)] == [(0, 1), (1, 2)]


# ----------------------------------------------------------------------------------------------
# Offset sanity beyond the CRC (issue #20): Kafka's CRC-32C covers a v2 batch from its attributes on, so a
# batch's baseOffset can be altered without the CRC noticing. Offsets inside a segment must increase and
# stay within [the segment's base offset (its file name), the next segment's base offset).

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
#: A real segment of the 3.9.1 sample; its second batch (byte 434) holds offsets 1..12, the next segment
#: of the partition starts at offset 71.
SAMPLE_SEGMENT = SAMPLES / "kafka-3.9.1" / "__consumer_offsets-0" / "00000000000000000000.log"
ALTERED_POSITION = 434
NEXT_SEGMENT_BASE = 71


def _altered_copy(tmp_path: Path, base_offset: int = 1_000_000) -> Path:
    """A copy of SAMPLE_SEGMENT, same file name, whose batch at ALTERED_POSITION claims `base_offset`.
    Nothing is recomputed: the CRC does not cover baseOffset and stays valid."""
    data = bytearray(SAMPLE_SEGMENT.read_bytes())
    assert struct.unpack_from(">q", data, ALTERED_POSITION)[0] == 1
    struct.pack_into(">q", data, ALTERED_POSITION, base_offset)
    path = tmp_path / "__consumer_offsets-0" / SAMPLE_SEGMENT.name
    path.parent.mkdir(parents=True)
    path.write_bytes(bytes(data))
    return path


def _offsets(reader: cc.SegmentReader) -> list[int]:
    return [e.offset for e in reader]


@pytest.mark.parametrize("next_base_offset,kind", [
    (NEXT_SEGMENT_BASE, "offset_out_of_range"),  # the ingest knows the next segment of the partition
    (None, "offsets_not_increasing"),  # the last segment of a partition: the next batch gives it away
])
def test_altered_base_offset_in_a_real_segment_is_quarantined(
        tmp_path: Path, next_base_offset: int | None, kind: str) -> None:
    expected = [o for o in _offsets(cc.read_segment(SAMPLE_SEGMENT)) if not 1 <= o <= 12]
    path = _altered_copy(tmp_path)
    reader = cc.read_segment(path, next_base_offset=next_base_offset)
    assert _offsets(reader) == expected
    [problem] = reader.problems
    assert (problem.file, problem.position, problem.kind) == (str(path), ALTERED_POSITION, kind)
    assert "1000000" in problem.message and "1000011" in problem.message


def test_altered_first_batch_of_bytes_is_quarantined() -> None:
    # The tester's case: offsets 1..6 archived as 1000001..1000006. Read as bytes with no segment range.
    segment = v2_batch(0, [(b"k", b"v")]) + v2_batch(1000001, [(b"k", b"v")] * 6) + v2_batch(7, [(b"k", b"v")])
    reader = cc.read_segment(segment)
    assert _offsets(reader) == [0, 7]
    [problem] = reader.problems
    assert (problem.position, problem.kind) == (len(v2_batch(0, [(b"k", b"v")])), "offsets_not_increasing")
    # Read alone it cannot be told from a real batch, but with its segment's range it can.
    reader = cc.read_segment(v2_batch(1000001, [(b"k", b"v")] * 6), base_offset=0, next_base_offset=7)
    assert _offsets(reader) == [] and [p.kind for p in reader.problems] == ["offset_out_of_range"]
    assert "1000001..1000006" in reader.problems[0].message and "[0, 7)" in reader.problems[0].message


def test_a_batch_whose_offsets_go_backwards_is_quarantined() -> None:
    first, second = v2_batch(0, [(b"a", b"1"), (b"b", b"2")]), v2_batch(2, [(b"c", b"3")] * 3)
    backwards = v2_batch(3, [(b"d", b"4")])  # 3 is not above the previous batch's last offset 4
    segment = first + second + backwards + v2_batch(5, [(b"e", b"5")])
    reader = cc.read_segment(segment)
    assert _offsets(reader) == [0, 1, 2, 3, 4, 5]
    [problem] = reader.problems
    assert (problem.position, problem.kind) == (len(first + second), "offsets_not_increasing")
    assert "3" in problem.message and "4" in problem.message


def test_batches_outside_the_segment_range_are_quarantined(tmp_path: Path) -> None:
    # Below the base offset the file name gives, and at or past the next segment's base offset.
    path = tmp_path / "00000000000000000100.log"
    below, inside = v2_batch(90, [(b"k", b"v")]), v2_batch(100, [(b"k", b"v")] * 3)
    past = v2_batch(103, [(b"k", b"v")] * 2)
    path.write_bytes(below + inside + past)
    reader = cc.read_segment(path, next_base_offset=104)
    assert _offsets(reader) == [100, 101, 102]
    assert [(p.position, p.kind) for p in reader.problems] == [
        (0, "offset_out_of_range"), (len(below + inside), "offset_out_of_range")]
    assert "[100, 104)" in reader.problems[1].message and "103..104" in reader.problems[1].message
    # Bytes have no file name: the base offset is a keyword.
    reader = cc.read_segment(below + inside, base_offset=100)
    assert _offsets(reader) == [100, 101, 102] and [p.position for p in reader.problems] == [0]


def test_record_offset_deltas_must_increase_within_the_batch_range() -> None:
    records = [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")]
    for deltas, kind in (([0, 2, 1], "offsets_not_increasing"), ([0, 1, 1], "offsets_not_increasing"),
                         ([0, 1, 3], "offset_out_of_range"), ([-1, 0, 1], "offset_out_of_range")):
        reader = cc.read_segment(v2_batch(10, records, offset_deltas=deltas, last_offset_delta=2)
                                 + v2_batch(13, records[:1]))
        assert _offsets(reader) == [13], deltas
        assert [(p.position, p.kind) for p in reader.problems] == [(0, kind)], deltas
        assert "lastOffsetDelta 2" in reader.problems[0].message, deltas


def test_compacted_batches_keep_their_last_offset_delta_and_read_cleanly() -> None:
    # What the log cleaner leaves (MemoryRecords.filterTo): a v2 batch keeps its base offset and its
    # lastOffsetDelta when records are removed, and an emptied batch may stay as a header with no records.
    compacted = v2_batch(10, [(b"a", b"1"), (b"c", b"3")], offset_deltas=[1, 3], last_offset_delta=5)
    emptied = v2_batch(16, [], last_offset_delta=4)
    reader = cc.read_segment(compacted + emptied + v2_batch(21, [(b"d", b"4")]), base_offset=0, next_base_offset=22)
    assert _offsets(reader) == [11, 13, 21]
    assert reader.problems == []
    # The emptied batch still holds offsets 16..20: a batch at 19 after it does not increase.
    reader = cc.read_segment(compacted + emptied + v2_batch(19, [(b"d", b"4")]))
    assert _offsets(reader) == [11, 13]
    assert [(p.position, p.kind) for p in reader.problems] == [(len(compacted + emptied), "offsets_not_increasing")]


def test_legacy_messages_going_backwards_are_quarantined() -> None:
    def message(offset: int) -> bytes:
        lb = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 20)
        lb.append(0, timestamp=1, key=b"k", value=b"v")
        raw = bytearray(lb.build())
        struct.pack_into(">q", raw, 0, offset)
        return bytes(raw)

    reader = cc.read_segment(message(5) + message(6) + message(6) + message(7), base_offset=5)
    assert _offsets(reader) == [5, 6, 7]
    assert [(p.position, p.kind) for p in reader.problems] == [(2 * len(message(5)), "offsets_not_increasing")]
    reader = cc.read_segment(message(4) + message(5), base_offset=5)
    assert _offsets(reader) == [5] and [p.kind for p in reader.problems] == ["offset_out_of_range"]


def _sample_segments() -> list[tuple[Path, int | None]]:
    """Every sample segment with the next segment's base offset in its partition (None for the last)."""
    out: list[tuple[Path, int | None]] = []
    partitions = [*SAMPLES.glob("kafka-*/__consumer_offsets-*"), *SAMPLES.glob("kafka-*/broker-*/__consumer_offsets-*")]
    for partition in sorted(partitions):
        files = sorted(partition.glob("*.log"))
        bases = [int(f.name[:-4]) for f in files]
        out += [(f, bases[i + 1] if i + 1 < len(files) else None) for i, f in enumerate(files)]
    return out


def test_every_real_sample_segment_reads_without_problems() -> None:
    segments = _sample_segments()
    assert len({p.parts[-3] for p, _ in segments}) >= 2  # segments of each captured Kafka version
    for path, next_base_offset in segments:
        checked = cc.read_segment(path, next_base_offset=next_base_offset)
        unchecked = cc.read_segment(path.read_bytes())
        assert [(e.offset, e.key, e.value) for e in checked] == [(e.offset, e.key, e.value) for e in unchecked]
        assert checked.problems == [] and unchecked.problems == [], path
