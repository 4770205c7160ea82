"""Live ingest with Spark's Kafka source against a real KRaft broker (tests/kafka_testbed), cross-checked
byte for byte with the same broker's `__consumer_offsets` segment files read offline."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from jobs.common.config import Config, KafkaSource, SegmentSource, SourcesConfig, TablesConfig
from jobs.common.delta_io import Tables
from jobs.nightly import run_nightly
from jobs.stages import STAGES
from schemas import OFFSET_COMMITS, RAW_OFFSETS

# The archive and decode stages this file tests (later stages have their own tests).
ARCHIVE_STAGES = tuple(s for s in STAGES if s.name in ("ingest", "decode"))

pytestmark = [pytest.mark.spark, pytest.mark.integration]


def _commit_offsets(bootstrap: str, group: str, topic: str, offsets: list[int]) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.errors import TopicAlreadyExistsError
    from kafka.structs import OffsetAndMetadata

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, 1, 1)])  # the test-bed broker does not auto-create topics
    except TopicAlreadyExistsError:
        pass
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(max(offsets) + 1):
        producer.send(topic, value=b"m%d" % i, partition=0)
    producer.flush()
    producer.close()
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                             auto_offset_reset="earliest")
    deadline = time.monotonic() + 60
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(timeout_ms=500)
    for offset in offsets:
        consumer.commit({TopicPartition(topic, 0): OffsetAndMetadata(offset, "", -1)})
    consumer.close()


def _transaction(producer: object, group: str, topic: str, partition: int, offset: int, outcome: str | None) -> None:
    """One transaction that commits `offset` for `group` with TxnOffsetCommit, then commits, aborts, or
    (outcome None) stays open."""
    from kafka import TopicPartition
    from kafka.structs import OffsetAndMetadata

    producer.begin_transaction()  # type: ignore[attr-defined]
    producer.send(topic, value=b"txn output", partition=0)  # type: ignore[attr-defined]
    producer.send_offsets_to_transaction(  # type: ignore[attr-defined]
        {TopicPartition(topic, partition): OffsetAndMetadata(offset, f"txn-{outcome}", -1)}, group)
    # kafka-python 2.2.15 loops forever in abort_transaction() with batches still in flight: flush first.
    producer.flush()  # type: ignore[attr-defined]
    if outcome == "commit":
        producer.commit_transaction()  # type: ignore[attr-defined]
    elif outcome == "abort":
        producer.abort_transaction()  # type: ignore[attr-defined]



def test_live_kafka_ingest_matches_segment_files_and_resolves_transactions(spark: SparkSession, tmp_path: Path) -> None:
    """One broker, three live runs, then its segment files read offline.

    Plain commits are archived once: a run with nothing new archives nothing, a later commit is read from
    the last offset + 1. Spark's Kafka source shows neither control records nor producer ids: a read_committed
    read tells the aborted TxnOffsetCommits apart (a committed one looks like a plain commit), and a
    transaction still open is not archived until it is decided. Offline, the same broker's segment files give
    the live archive's records byte for byte and resolve every transaction from its markers."""
    from kafka import KafkaProducer

    from tests.kafka_testbed.broker import KafkaBroker

    with KafkaBroker(tmp_path / "broker") as broker:
        bootstrap = broker.bootstrap_servers
        _commit_offsets(bootstrap, "live-group", "live-topic", [3, 5])
        _commit_offsets(bootstrap, "plain-group", "txn-topic", [1])  # creates the topic, a plain commit
        live = Config(
            sources=SourcesConfig(mode="kafka", kafka=(KafkaSource("live", bootstrap),)),
            tables=TablesConfig(database="cgh_live", location=str(tmp_path / "live_tables")),
        )
        tables = Tables(spark, "cgh_live", live.tables.location)

        def committed() -> list[tuple[str, int, int]]:
            rows = tables.read(OFFSET_COMMITS).where(F.col("group_id") == "live-group")
            return sorted((r["topic"], r["topic_partition"], r["committed_offset"])
                          for r in rows.select("topic", "topic_partition", "committed_offset").collect())

        def commits() -> list[tuple[str, int, str | None]]:
            rows = tables.read(OFFSET_COMMITS).where(F.col("group_id") == "txn-group")
            return sorted((r["group_id"], r["committed_offset"], r["transaction_outcome"]) for r in rows.collect())

        producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="cgh-live-txn")
        try:
            producer.init_transactions()
            _transaction(producer, "txn-group", "txn-topic", 0, 10, "commit")
            _transaction(producer, "txn-group", "txn-topic", 0, 20, "abort")
            _transaction(producer, "txn-group", "txn-topic", 0, 30, None)  # still open at the first two runs

            first = run_nightly(spark, live, stages=ARCHIVE_STAGES)
            assert first.ingest is not None and first.ingest.records_archived > 0
            assert committed() == [("live-topic", 0, 3), ("live-topic", 0, 5)]
            # Committed: indistinguishable from a plain commit in a live read (outcome null); aborted: known;
            # the open one: not archived yet (past the last stable offset).
            assert commits() == [("txn-group", 10, None), ("txn-group", 20, "aborted")]
            plain = tables.read(OFFSET_COMMITS).where(F.col("group_id") == "plain-group").collect()
            assert [(r["committed_offset"], r["transaction_outcome"]) for r in plain] == [(1, None)]

            again = run_nightly(spark, live, stages=ARCHIVE_STAGES)
            assert again.ingest is not None and again.ingest.records_archived == 0  # from the last offset + 1

            _commit_offsets(bootstrap, "live-group", "live-topic", [8])
            producer.abort_transaction()
            third = run_nightly(spark, live, stages=ARCHIVE_STAGES)
            assert third.decode is not None and third.decode.records_decoded >= 2
            assert committed() == [("live-topic", 0, 3), ("live-topic", 0, 5), ("live-topic", 0, 8)]
            assert commits() == [("txn-group", 10, None), ("txn-group", 20, "aborted"), ("txn-group", 30, "aborted")]
        finally:
            producer.close()
        broker.stop()

        offline = Config(
            sources=SourcesConfig(mode="segments", segments=(SegmentSource("live", str(broker.data_dir)),)),
            tables=TablesConfig(database="cgh_offline", location=str(tmp_path / "offline_tables")),
        )
        run_nightly(spark, offline, stages=ARCHIVE_STAGES)
        segment_tables = Tables(spark, "cgh_offline", offline.tables.location)
        # Spark's Kafka source returns data records only; the segments also hold control records.
        columns = ["cluster", "partition", "offset", "key", "value", "timestamp"]
        live_raw = tables.read(RAW_OFFSETS).select(*columns)
        segment_raw = segment_tables.read(RAW_OFFSETS).where(~F.col("is_control")).select(*columns)
        assert live_raw.count() > 0
        assert live_raw.exceptAll(segment_raw).count() == 0
        assert segment_raw.exceptAll(live_raw).count() == 0
        # The markers resolve every transaction.
        rows = segment_tables.read(OFFSET_COMMITS).where(F.col("group_id") == "txn-group").collect()
        assert sorted((r["committed_offset"], r["transaction_outcome"]) for r in rows) == [
            (10, "committed"), (20, "aborted"), (30, "aborted")]
