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
from jobs.nightly import STAGES, run_nightly
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


def test_live_kafka_ingest_matches_segment_files(spark: SparkSession, tmp_path: Path) -> None:
    from tests.kafka_testbed.broker import KafkaBroker

    with KafkaBroker(tmp_path / "broker") as broker:
        _commit_offsets(broker.bootstrap_servers, "live-group", "live-topic", [3, 5])
        live = Config(
            sources=SourcesConfig(mode="kafka", kafka=(KafkaSource("live", broker.bootstrap_servers),)),
            tables=TablesConfig(database="cgh_live", location=str(tmp_path / "live_tables")),
        )
        tables = Tables(spark, "cgh_live", live.tables.location)
        first = run_nightly(spark, live, stages=ARCHIVE_STAGES)
        assert first.ingest is not None and first.ingest.records_archived > 0

        def committed() -> list[tuple[str, int, int]]:
            rows = tables.read(OFFSET_COMMITS).where(F.col("group_id") == "live-group")
            return sorted((r["topic"], r["topic_partition"], r["committed_offset"])
                          for r in rows.select("topic", "topic_partition", "committed_offset").collect())

        assert committed() == [("live-topic", 0, 3), ("live-topic", 0, 5)]
        again = run_nightly(spark, live, stages=ARCHIVE_STAGES)
        assert again.ingest is not None and again.ingest.records_archived == 0  # from the last offset + 1

        _commit_offsets(broker.bootstrap_servers, "live-group", "live-topic", [8])
        third = run_nightly(spark, live, stages=ARCHIVE_STAGES)
        assert third.decode is not None and third.decode.records_decoded >= 1
        assert committed() == [("live-topic", 0, 3), ("live-topic", 0, 5), ("live-topic", 0, 8)]
        broker.stop()

        offline = Config(
            sources=SourcesConfig(mode="segments", segments=(SegmentSource("live", str(broker.data_dir)),)),
            tables=TablesConfig(database="cgh_offline", location=str(tmp_path / "offline_tables")),
        )
        run_nightly(spark, offline, stages=ARCHIVE_STAGES)
        from_segments = Tables(spark, "cgh_offline", offline.tables.location).read(RAW_OFFSETS)
        # Spark's Kafka source returns data records only; the segments also hold control records.
        columns = ["cluster", "partition", "offset", "key", "value", "timestamp"]
        live_raw = tables.read(RAW_OFFSETS).select(*columns)
        segment_raw = from_segments.where(~F.col("is_control")).select(*columns)
        assert live_raw.exceptAll(segment_raw).count() == 0
        assert segment_raw.exceptAll(live_raw).count() == 0
