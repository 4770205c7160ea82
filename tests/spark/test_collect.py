"""collect_together: several small results, one Spark job, every value with its type."""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from jobs.common.collect import collect_together
from jobs.common.session import session_setting

pytestmark = pytest.mark.spark


def test_each_frame_gets_its_own_rows_with_their_types_from_one_job(spark: SparkSession) -> None:
    first = spark.createDataFrame([("a", 1, b"\x00x"), ("b", None, None)], "name string, n int, raw binary")
    second = spark.range(5).groupBy((F.col("id") % 2).alias("odd")).agg(
        F.count(F.lit(1)).alias("count"),
        F.min(F.struct("id", F.lit(dt.datetime(2024, 1, 1)).alias("at"))).alias("first"),
    )
    empty = spark.createDataFrame([], "x long")
    tracker = spark.sparkContext.statusTracker()
    group = "collect-together-test"
    spark.sparkContext.setJobGroup(group, "one job")
    try:
        # as the decode stage runs it: without adaptive execution (which runs each shuffle as a job of its own)
        with session_setting(spark, "spark.sql.adaptive.enabled", "false"):
            a, b, c = collect_together(first, second, empty)
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    assert sorted(tuple(r) for r in a) == [("a", 1, bytearray(b"\x00x")), ("b", None, None)]
    assert sorted((r["odd"], r["count"], r["first"]["id"], r["first"]["at"]) for r in b) == [
        (0, 3, 0, dt.datetime(2024, 1, 1)), (1, 2, 1, dt.datetime(2024, 1, 1))]
    assert c == []
    assert len(tracker.getJobIdsForGroup(group)) == 1
