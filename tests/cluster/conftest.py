"""The Spark tests' session (local[1], Delta, in-memory catalog), to read the warehouses a test wrote."""

from tests.spark.conftest import sample_warehouse, spark, spark_root  # noqa: F401
