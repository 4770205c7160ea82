"""Kafka reading: the topic read through Spark's Kafka source in batch mode, per partition from the last
archived offset + 1 to the last stable offset (`kafka_offset_bounds`), transaction outcomes told by a second
read_committed pass (`read_kafka`), as rows shaped like the segment reader's.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from jobs.common.boundary import READ_ERROR, READ_ERROR_POSITION
from jobs.common.config import KafkaSource


def kafka_options(source: KafkaSource, environ: dict[str, str] | None = None) -> dict[str, str]:
    """Spark Kafka source options: bootstrap servers plus every `<prefix>NAME` environment variable as
    `kafka.name` (e.g. CGH_KAFKA_SASL_JAAS_CONFIG -> kafka.sasl.jaas.config). Never logged."""
    env = os.environ if environ is None else environ
    options = {"kafka.bootstrap.servers": source.bootstrap_servers}
    for name, value in env.items():
        if name.startswith(source.options_env_prefix) and len(name) > len(source.options_env_prefix):
            option = name[len(source.options_env_prefix) :].lower().replace("_", ".")
            options[f"kafka.{option}"] = value
    return options


def kafka_offset_bounds(source: KafkaSource, options: dict[str, str]) -> list[tuple[int, int, int]]:
    """(partition, earliest offset, last stable offset) of every partition of the topic, from the broker.

    The end is the last stable offset (LSO), not the high watermark: records past it belong to
    transactions not decided yet, and Spark's Kafka source cannot tell later whether they were committed
    or aborted. The next run archives them once decided; nothing is lost meanwhile, since the log cleaner
    does not clean past the LSO either. Driver-side metadata only (one row per partition), read with
    kafka-python using the same bootstrap servers and the security options that kafka-python understands.
    """
    from kafka import KafkaConsumer, TopicPartition

    client_options: dict[str, Any] = {"bootstrap_servers": source.bootstrap_servers.split(",")}
    passthrough = {
        "kafka.security.protocol": "security_protocol",
        "kafka.sasl.mechanism": "sasl_mechanism",
        "kafka.sasl.plain.username": "sasl_plain_username",
        "kafka.sasl.plain.password": "sasl_plain_password",
        "kafka.ssl.cafile": "ssl_cafile",
    }
    for spark_name, python_name in passthrough.items():
        if spark_name in options:
            client_options[python_name] = options[spark_name]
    # read_committed: end_offsets() answers the LSO.
    consumer = KafkaConsumer(enable_auto_commit=False, isolation_level="read_committed", **client_options)
    try:
        partitions = sorted(consumer.partitions_for_topic(source.topic) or ())
        tps = [TopicPartition(source.topic, p) for p in partitions]
        earliest = consumer.beginning_offsets(tps)
        stable = consumer.end_offsets(tps)
        return [(tp.partition, int(earliest[tp]), int(stable[tp])) for tp in tps]
    finally:
        consumer.close()


def read_kafka(
    spark: SparkSession,
    source: KafkaSource,
    options: dict[str, str],
    ranges: Sequence[tuple[int, int, int]],
) -> DataFrame:
    """Records of the given (partition, start, end) ranges as segment-reader-shaped rows.

    Spark's Kafka source exposes neither producer ids nor control records. Transaction outcomes are read
    another way: the ranges (which end at the last stable offset, so every transaction in them is
    decided) are read twice, read_uncommitted for the records and read_committed for the offsets a
    transactional reader sees. A record missing from the second read belongs to an aborted transaction:
    it is archived with is_transactional = true (and no producer id), which the decode stage resolves to
    "aborted". Committed transactional records cannot be told from plain ones this way: is_transactional
    stays null for them, as for every other record read from Kafka.
    """
    wanted = [(p, start, end) for p, start, end in ranges if end > start]
    empty_schema = _kafka_record_schema()
    if not wanted:
        return spark.createDataFrame([], empty_schema)

    def load(isolation_level: str) -> DataFrame:
        reader = spark.read.format("kafka")
        for key, value in options.items():
            reader = reader.option(key, value)
        return (
            reader.option("kafka.isolation.level", isolation_level)
            .option("assign", json.dumps({source.topic: [p for p, _, _ in wanted]}))
            .option("startingOffsets", json.dumps({source.topic: {str(p): s for p, s, _ in wanted}}))
            .option("endingOffsets", json.dumps({source.topic: {str(p): e for p, _, e in wanted}}))
            .option("failOnDataLoss", "false")
            .load()
        )

    visible = load("read_committed").select("partition", "offset", F.lit(True).alias("_visible"))
    kafka_rows = load("read_uncommitted").join(visible, on=["partition", "offset"], how="left")
    return kafka_rows.select(
        F.lit(source.cluster).alias("cluster"),
        F.col("partition").cast("int").alias("partition"),
        F.col("offset").cast("long").alias("offset"),
        F.col("timestamp").alias("timestamp"),
        F.when(F.col("timestampType") == 0, F.lit("CreateTime"))
        .when(F.col("timestampType") == 1, F.lit("LogAppendTime"))
        .alias("timestamp_type"),
        "key",
        "value",
        F.lit(None).cast("long").alias("producer_id"),
        F.lit(None).cast("short").alias("producer_epoch"),
        F.when(F.col("_visible").isNull(), F.lit(True)).cast("boolean").alias("is_transactional"),
        F.lit(False).alias("is_control"),
        F.lit(None).cast("string").alias("control_type"),
        F.lit(None).cast("long").alias("batch_base_offset"),
        F.lit(None).cast("long").alias("batch_last_offset"),
        F.lit(None).cast("int").alias("partition_leader_epoch"),
        F.lit(f"kafka:{source.bootstrap_servers}").alias("source"),
        F.lit(None).cast("string").alias(READ_ERROR),
        F.lit(None).cast("long").alias(READ_ERROR_POSITION),
    )


def _kafka_record_schema() -> T.StructType:
    from jobs.common.boundary import segment_records_schema

    return segment_records_schema()
