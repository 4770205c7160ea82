"""Spark test fixtures: one local[1] session per test process, shared by its modules (UTC, 1 shuffle
partition, UI off, Delta configured by the jobs' own session builder), and a fresh catalog database per test."""

from __future__ import annotations

import itertools
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from jobs.common.config import Config, SparkConfig, TablesConfig, parse_config
from jobs.common.delta_io import Tables
from jobs.common.session import build_session, plan_for_input
from tests.conftest import SPARK_JVMS_STARTED_FOR
from tests.spark.empty_tables import copy_fresh_tables
from tests.spark.sample_warehouse import SampleWarehouse, shared_sample_warehouse

_databases = itertools.count()


@pytest.fixture(scope="session")
def spark_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("spark")


#: Task slots of a test process's Spark: one. `scripts/test` runs one process per core, so a second slot only
#: made each process's threads compete with the other's, and halved no query's work (every input is small):
#: with one slot a query has half the tasks to schedule, serialize and start. Measured on the 2-core machine,
#: test_incremental_runs alone (the shared warehouse's night and seven more): 285-294 busy core-seconds and
#: 190-198 s with one slot, 317-334 core-s and 202-215 s with two (two runs each, alternating).
TEST_CORES = 1


def _test_config(spark_root: Path) -> Config:
    return Config(
        spark=SparkConfig(
            master=f"local[{TEST_CORES}]",
            app_name="consumer-group-history-tests",
            catalog="in-memory",
            warehouse_dir=str(spark_root / "spark-warehouse"),
            metastore_dir="",
            shuffle_partitions=TEST_CORES,
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
                "spark.sql.adaptive.coalescePartitions.initialPartitionNum": str(TEST_CORES),
                "spark.databricks.delta.snapshotPartitions": str(TEST_CORES),
                "spark.default.parallelism": str(TEST_CORES),
            },
        )
    )


#: The driver JVM's heap in use after a full GC, as a share of its maximum, above which the session is
#: restarted between two modules (see `spark`).
RESTART_ABOVE_HEAP_SHARE = 0.35


class _SharedSession:
    """The one SparkSession of a test process, kept across modules while its JVM stays lean."""

    session: SparkSession | None = None
    modules: int = 0
    #: the Spark driver JVMs this process started, each with the test module that started it: every start
    #: costs a cold JIT and class loading (~25 s of a first nightly run), so `tests/conftest.py` prints them
    started_for: list[str] = []  # noqa: RUF012 - one per process, like the session
    #: the session's SQL settings as built: a module's changes (a nightly run plans by its input's size) are
    #: undone before the next module
    settings: dict[str, str] = {}  # noqa: RUF012 - one per process, like the session

    @classmethod
    def get(cls, spark_root: Path, module: str = "?") -> SparkSession:
        if cls.session is None:
            config = _test_config(spark_root)
            cls.session = build_session(config)
            # A fresh warehouse's tables start as copies of empty ones (tests/spark/empty_tables.py)
            copy_fresh_tables(spark_root / "empty-tables")
            cls.started_for.append(module)
            # Every test's input is small: the session plans as a small night does (`plan_for_input`: no
            # adaptive re-planning, no broadcast by size, interpreted rather than compiled), also for the
            # tests that call a stage without a nightly run (which plans by its input itself).
            plan_for_input(cls.session, config.spark, 0)
            cls.settings = dict(cls.session.conf.getAll)
            cls.modules = 0
        return cls.session

    @classmethod
    def after_module(cls) -> None:
        """Leave nothing of a module for the next: its catalog databases and cached tables go, Delta's cache
        of table logs is emptied; the JVM is restarted when what it holds after a full GC is over the share."""
        session = cls.session
        if session is None:
            return
        cls.modules += 1
        now = dict(session.conf.getAll)
        for key in now.keys() - cls.settings.keys():
            if session.conf.isModifiable(key):
                session.conf.unset(key)
        for key, value in cls.settings.items():
            if now.get(key) != value and session.conf.isModifiable(key):
                session.conf.set(key, value)
        session.catalog.clearCache()
        for db in session.catalog.listDatabases():
            if db.name != "default":
                # external tables (every table here has a LOCATION): the catalog entries go, the files stay
                session.sql(f"DROP DATABASE IF EXISTS `{db.name}` CASCADE")
        jvm = session._jvm  # type: ignore[attr-defined]
        jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()
        runtime = jvm.java.lang.Runtime.getRuntime()
        jvm.java.lang.System.gc()
        used = runtime.totalMemory() - runtime.freeMemory()
        if used > RESTART_ABOVE_HEAP_SHARE * runtime.maxMemory():
            print(f"\n[tests] Spark driver heap {used >> 20} MiB after {cls.modules} modules: new JVM", flush=True)
            cls.stop()

    @classmethod
    def stop(cls) -> None:
        if cls.session is not None:
            _stop_with_its_jvm(cls.session)
            cls.session = None


@pytest.fixture(scope="module")
def spark(spark_root: Path, request: pytest.FixtureRequest) -> Iterator[SparkSession]:
    """The test process's SparkSession (local[1], in-memory catalog), shared by the modules one after the
    other. A fresh JVM per module cost its start and, more, a cold JIT for every module's first queries;
    a session that ran the whole suite's hundreds of nightly runs kept enough of them (status store, block
    manager, shuffle bookkeeping) to run its driver out of heap (GC overhead limit exceeded, ~40 minutes
    in, in CI). So between modules the catalog and caches are emptied and the JVM's heap is measured after
    a full GC: over `RESTART_ABOVE_HEAP_SHARE` of its maximum, the next module gets a new JVM."""
    session = _SharedSession.get(spark_root, request.node.nodeid)
    yield session
    _SharedSession.after_module()


def pytest_sessionfinish(session: pytest.Session) -> None:
    _SharedSession.stop()
    # Handed to the xdist controller (tests/conftest.py prints it), or kept for this process's own summary.
    started = list(_SharedSession.started_for)
    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["spark_jvms_started_for"] = started
    elif started:  # (xdist's controller starts none)
        session.config.stash.setdefault(SPARK_JVMS_STARTED_FOR, {})["this process"] = started


@pytest.fixture(scope="session")
def sample_warehouse(spark_root: Path, tmp_path_factory: pytest.TempPathFactory) -> SampleWarehouse:
    """The embedded default's night (conf/local.toml's inputs, every stage), built once per test session for
    the tests that read it (tests/spark/sample_warehouse.py)."""
    return shared_sample_warehouse(_SharedSession.get(spark_root, "the shared sample warehouse"), tmp_path_factory)


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
