"""The parser of DumpLogSegments output (tests/kafka_testbed/dumplog.py) on lines shaped like Kafka 4.x's.

The oracle is only as good as this parser: these lines check that keys, payloads, tombstones, control
records and batch facts are picked out exactly, including names that contain the separator text.
"""

from __future__ import annotations

from tests.kafka_testbed.dumplog import parse_dump, split_key_payload

BATCH = ("baseOffset: 7 lastOffset: 8 count: 2 baseSequence: 0 lastSequence: 1 producerId: 42 producerEpoch: 0 "
         "partitionLeaderEpoch: 0 isTransactional: true isControl: false deleteHorizonMs: OptionalLong.empty "
         "position: 0 CreateTime: 1700000000000 size: 200 magic: 2 compresscodec: none crc: 1 isvalid: true")
CONTROL_BATCH = BATCH.replace("baseOffset: 7 lastOffset: 8", "baseOffset: 9 lastOffset: 9").replace(
    "isControl: false", "isControl: true")


def test_a_group_name_containing_the_separator_does_not_cut_the_key() -> None:
    key = '{"type":"2","data":{"group":"odd payload: name"}}'
    line = (f"| offset: 3 CreateTime: 1 keySize: 5 valueSize: -1 sequence: -1 headerKeys: [] key: {key} "
            "payload: <DELETE>")
    assert split_key_payload(line) == (key, "<DELETE>")


def test_records_batches_and_markers_are_parsed() -> None:
    key = '{"type":"1","data":{"group":"g","topic":"t","partition":0}}'
    value = '{"version":"3","data":{"offset":5,"leaderEpoch":-1,"metadata":"txn-commit","commitTimestamp":1}}'
    text = "\n".join([
        "Dumping /x/00000000000000000007.log",
        "Log starting offset: 7",
        BATCH,
        f"| offset: 7 CreateTime: 1700000000001 keySize: 1 valueSize: 1 sequence: 0 headerKeys: [] key: {key} "
        f"payload: {value}",
        f"| offset: 8 CreateTime: 1700000000002 keySize: 1 valueSize: -1 sequence: 1 headerKeys: [] key: {key} "
        "payload: <DELETE>",
        CONTROL_BATCH,
        "| offset: 9 CreateTime: 1700000000003 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
        "endTxnMarker: COMMIT coordinatorEpoch: 0",
    ])
    (dumped,) = parse_dump(text).values()
    assert dumped.path == "/x/00000000000000000007.log"
    first, tombstone, marker = dumped.records
    assert (first.offset, first.timestamp, first.key, first.payload) == (7, 1700000000001, key, value)
    assert (first.batch.base_offset, first.batch.producer_id, first.batch.is_transactional,
            first.batch.is_control) == (7, 42, True, False)
    assert (tombstone.offset, tombstone.payload) == (8, "<DELETE>")
    assert (marker.offset, marker.key, marker.control_type, marker.coordinator_epoch) == (9, None, "COMMIT", 0)
    assert marker.batch.is_control
