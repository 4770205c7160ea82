"""Inline raw_offsets rows for the Spark tests, built with the schema from schemas/."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from schemas import RAW_OFFSETS

RUN = "20240101T000000000000Z-test00"
INGESTED = dt.datetime(2024, 1, 1)
BASE = dt.datetime(2023, 11, 14, 22, 13, 20)


def ts(ms_after_base: int) -> dt.datetime:
    return BASE + dt.timedelta(milliseconds=ms_after_base)


def raw(
    partition: int,
    offset: int,
    key: bytes | None,
    value: bytes | None,
    *,
    cluster: str = "c1",
    at_ms: int = 0,
    producer_id: int = -1,
    transactional: bool = False,
    control_type: str | None = None,
) -> tuple[Any, ...]:
    return (
        cluster,
        partition,
        offset,
        ts(at_ms),
        "CreateTime",
        key,
        value,
        producer_id,
        0 if producer_id >= 0 else -1,
        transactional,
        control_type is not None,
        control_type,
        offset,
        offset,
        "test",
        RUN,
        INGESTED,
        None,  # partition_leader_epoch
    )


def raw_frame(spark: SparkSession, rows: list[tuple[Any, ...]]) -> DataFrame:
    return spark.createDataFrame(rows, RAW_OFFSETS.schema)
