"""What a consumer reads from the running broker's `__consumer_offsets` equals what read_segment reads
from the files, record for record (partition, offset, key bytes, value bytes).

The consumer is kafka-python with internal topics included, assigned every partition from the
beginning to the end offsets it was told. It never returns control records (transaction markers), so
those are left out of the file side; it does return records of aborted transactions (isolation level
read_uncommitted), and so does the file side. Spark's Kafka source joins this test when the pipeline
issue lands.
"""

from __future__ import annotations

import time
from collections import Counter

import pytest
from kafka import KafkaConsumer, TopicPartition

import coordinator_core

pytestmark = pytest.mark.integration

TOPIC = "__consumer_offsets"


def consume_everything(bootstrap_servers: str, timeout: float = 60.0) -> tuple[list[tuple[int, int, bytes | None,
                                                                                         bytes | None]],
                                                                               dict[int, int]]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers, group_id=None, client_id="cgh-live-read",
                             exclude_internal_topics=False, enable_auto_commit=False,
                             isolation_level="read_uncommitted", max_partition_fetch_bytes=1024 * 1024)
    try:
        partitions = [TopicPartition(TOPIC, p) for p in sorted(consumer.partitions_for_topic(TOPIC) or [])]
        assert len(partitions) == 50
        consumer.assign(partitions)
        # Explicit seeks: kafka-python 2.2.15's position() spins forever after seek_to_beginning() on a
        # manually assigned partition (the lazy offset reset is never completed inside that loop).
        beginning = consumer.beginning_offsets(partitions)
        for tp in partitions:
            consumer.seek(tp, beginning[tp])
        end = consumer.end_offsets(partitions)
        records: list[tuple[int, int, bytes | None, bytes | None]] = []
        deadline = time.monotonic() + timeout
        while any(consumer.position(tp) < end[tp] for tp in partitions):
            assert time.monotonic() < deadline, "timed out reading __consumer_offsets"
            for tp, batch in consumer.poll(timeout_ms=500).items():
                records += [(tp.partition, r.offset, r.key, r.value) for r in batch if r.offset < end[tp]]
        return sorted(records, key=lambda r: (r[0], r[1])), {tp.partition: end[tp] for tp in partitions}
    finally:
        consumer.close()


def test_consumer_of_consumer_offsets_reads_what_read_segment_reads_from_the_files(live_run) -> None:  # type: ignore[no-untyped-def]
    consumed, end_offsets = consume_everything(live_run.broker.bootstrap_servers)
    from_files = []
    for directory in live_run.broker.consumer_offsets_dirs():
        partition = int(directory.name.rsplit("-", 1)[1])
        for segment in sorted(directory.glob("*.log")):
            from_files.extend((partition, entry.offset, entry.key, entry.value)
                              for entry in coordinator_core.read_segment(segment)
                              if not entry.is_control and entry.offset < end_offsets[partition])
    from_files.sort(key=lambda r: (r[0], r[1]))

    assert len(consumed) == len(from_files)
    assert consumed == from_files
    partitions_with_data = Counter(p for p, *_ in consumed)
    # Every scenario group lives in some partition; together they fill several.
    assert len(partitions_with_data) >= 5, partitions_with_data
    assert any(value is None for *_, value in consumed), "no tombstone was read"
