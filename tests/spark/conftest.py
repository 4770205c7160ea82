"""Spark test fixtures: one local[2] session per test module (UTC, 2 shuffle partitions, UI off, Delta
configured by the jobs' own session builder) and a fresh catalog database per test."""

from __future__ import annotations

import itertools
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from jobs.common.config import Config, SparkConfig, TablesConfig, parse_config
from jobs.common.delta_io import Tables
from jobs.common.session import build_session

_databases = itertools.count()


@pytest.fixture(scope="session")
def spark_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("spark")


@pytest.fixture(scope="module")
def spark(spark_root: Path) -> Iterator[SparkSession]:
    """A SparkSession per test module, stopped at its end with its JVM. A SparkContext that ran the whole
    suite's hundreds of nightly runs kept enough of them (status store, block manager, shuffle bookkeeping)
    to run its driver out of heap (GC overhead limit exceeded, ~40 minutes in, in CI); per module, nothing
    carries over."""
    config = Config(
        spark=SparkConfig(
            master="local[2]",
            app_name="consumer-group-history-tests",
            catalog="in-memory",
            warehouse_dir=str(spark_root / "spark-warehouse"),
            metastore_dir="",
            shuffle_partitions=2,
            show_progress=False,
            jars_dir=str(parse_config({"sources": {"mode": "none"}}).spark.jars_dir),
            extra={
                "spark.ui.enabled": "false",
                # The incremental-run module makes ~30 nightly runs in one session: with 1.5 GiB the live
                # set (block store, 300 retained SQL executions, Delta states) left the old generation full
                # and the JVM in back-to-back full GCs (15 min of GC in CI, then a broadcast without heap).
                "spark.driver.memory": "3g",
                # tests/spark/splits.scanned_rows counts the scans of a whole history stage (generations,
                # replay and what-if, offset events: ~100 SQL executions) from the status store, which
                # keeps the last this many (the jobs keep 100).
                "spark.sql.ui.retainedExecutions": "300",
                "spark.sql.adaptive.coalescePartitions.initialPartitionNum": "2",
                "spark.databricks.delta.snapshotPartitions": "2",
                "spark.default.parallelism": "2",
            },
        )
    )
    session = build_session(config)
    yield session
    _stop_with_its_jvm(session)


def _stop_with_its_jvm(session: SparkSession) -> None:
    """Stops the session and the driver JVM under it, so that the next module's session starts a JVM of
    its own: no module's heap use (static caches, classes, what a stopped SparkContext leaves) carries over
    into the next. A fresh JVM costs a few seconds per module. (The CI failure of a broadcast without heap
    was the incremental module's own use of a 1.5 GiB heap; see the driver memory above.)"""
    from pyspark import SparkContext

    session.stop()
    gateway = SparkContext._gateway
    if gateway is None:
        return
    process = getattr(gateway, "proc", None)
    gateway.shutdown()
    if process is not None:
        # The gateway server exits when its stdin closes (pyspark's launch_gateway opens it as a pipe).
        process.stdin.close()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    SparkContext._gateway = None
    SparkContext._jvm = None


@pytest.fixture(autouse=True)
def _delta_log_cache_cleared(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test that used Spark, Delta's cache of table logs is emptied.

    Delta keeps a DeltaLog per table path with its snapshot's state cached in the driver's block manager,
    until 10,000 paths or an hour. A job has one warehouse; the test session makes hundreds (one per test,
    many more for the split tests), and their cached states filled the 1 GiB driver's heap (Java heap
    space after ~40 minutes of tests). Tables are read again from their logs when next used.
    """
    yield
    if "spark" in request.fixturenames:
        session = request.getfixturevalue("spark")
        session._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # type: ignore[attr-defined]


@pytest.fixture
def test_config(spark_root: Path) -> Config:
    """A configuration whose tables live in a database and directory of their own (one per test)."""
    n = next(_databases)
    return Config(tables=TablesConfig(database=f"cgh_test_{n}", location=str(spark_root / f"tables_{n}")))


@pytest.fixture
def tables(spark: SparkSession, test_config: Config) -> Tables:
    t = Tables(spark, test_config.tables.database, test_config.tables.location)
    t.ensure_database()
    return t
