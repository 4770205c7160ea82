"""The Spark fixtures of tests/spark (a local[1] session per test process, a database of its own per test), for
the report job's test."""

from tests.spark.conftest import _delta_log_cache_cleared, spark, spark_root, tables, test_config

__all__ = ["_delta_log_cache_cleared", "spark", "spark_root", "tables", "test_config"]
