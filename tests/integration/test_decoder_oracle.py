"""Kafka's own dump-log tool is the referee for coordinator_core's decoding of real broker segments.

`org.apache.kafka.tools.DumpLogSegments --offsets-decoder` (the Kafka release of the jar set) prints
every record of every segment; coordinator_core's `read_segment` + `decode_record` (+ the embedded
ConsumerProtocol decoders) must agree on each one: offset, timestamp, batch facts, key, value version,
every value field, every member's subscription and assignment, tombstones and transaction markers
(tests/kafka_testbed/compare.py says exactly what is compared). Any disagreement fails.

It runs twice: on the committed sample (no broker needed, only java and the jars), and on the segments
the live broker has just written for this session's scenarios.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tests.integration.conftest import Sample
from tests.kafka_testbed.compare import DELETE, compare_segment, segment_files
from tests.kafka_testbed.dumplog import DumpedFile, dump_segments

pytestmark = pytest.mark.oracle

# What the scenarios put into __consumer_offsets, so the comparison is known to cover it: offset commits
# (type 1), classic group metadata (type 2), and on 4.x KIP-848 group records (3, 5, 6, 7, 8).
CLASSIC_RECORD_TYPES = {1, 2}
KIP_848_RECORD_TYPES = {3, 5, 6, 7, 8}


def oracle_disagreements(directory: Path, jar_set: str) -> tuple[int, list[str], dict[Path, DumpedFile]]:
    segments = segment_files(directory)
    assert segments, f"no segments under {directory}"
    dumped = dump_segments(segments, jar_set=jar_set)
    compared, problems = 0, []
    for segment in segments:
        count, found = compare_segment(segment, dumped[segment.resolve()].records)
        compared += count
        problems += found
    return compared, problems, dumped


def coverage(dumped: dict[Path, DumpedFile]) -> Counter[str]:
    """What Kafka's tool saw (independently of our decoder): record types, tombstones, markers, rolls."""
    seen: Counter[str] = Counter()
    for path, dump in dumped.items():
        for record in dump.records:
            if record.control_type is not None:
                seen[f"marker {record.control_type}"] += 1
                continue
            assert record.key is not None
            seen[f"type {json.loads(record.key)['type']}"] += 1
            if record.payload == DELETE:
                seen["tombstone"] += 1
            if record.batch.is_transactional:
                seen["transactional"] += 1
        if int(path.stem) > 0:
            seen["rolled segment"] += 1
    return seen


def assert_agreement(directory: Path, jar_set: str, record_types: set[int]) -> None:
    compared, problems, dumped = oracle_disagreements(directory, jar_set)
    printed = sum(len(d.records) for d in dumped.values())
    assert not problems, f"{len(problems)} disagreements with DumpLogSegments:\n" + "\n".join(problems[:40])
    assert compared == printed
    seen = coverage(dumped)
    assert {f"type {t}" for t in record_types} <= set(seen), seen
    for what in ("tombstone", "transactional", "marker COMMIT", "marker ABORT", "rolled segment"):
        assert seen[what] > 0, f"the data has no {what}: {seen}"


def test_committed_sample_decodes_exactly_as_kafkas_dump_log(sample: Sample) -> None:
    kip_848 = "consumer-protocol" in sample.scenarios["scenarios"]
    assert_agreement(sample.path, sample.jar_set, CLASSIC_RECORD_TYPES | (KIP_848_RECORD_TYPES if kip_848 else set()))


@pytest.mark.integration
def test_live_broker_segments_decode_exactly_as_kafkas_dump_log(live_run) -> None:  # type: ignore[no-untyped-def]
    assert_agreement(live_run.segments_dir, live_run.broker.jar_set, CLASSIC_RECORD_TYPES | KIP_848_RECORD_TYPES)
