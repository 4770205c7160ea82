"""The sample warehouse: what `scripts/nightly` makes of the embedded default, built once per test session
and read by every test that only reads it.

One nightly run (every stage) of conf/local.toml's inputs as they are (the three samples' segments, every
broker and client log, its storm thresholds), into tables under the session's shared temporary directory.
Under pytest-xdist the first worker that asks builds it while holding a file lock; the other worker waits
for it and reads the same directories (Delta tables are directories: each worker registers them in its own
in-memory catalog). The run's ingest and decode results, which only the run that built the tables saw, are
kept beside them. Its tests only read it: a test that writes builds a warehouse of its own.

Not tests: a fixture's helpers.
"""

from __future__ import annotations

import dataclasses
import fcntl
import pickle
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from jobs.common.config import Config, TablesConfig, load_config
from jobs.common.delta_io import Tables
from jobs.decode.stage import DecodeResult
from jobs.ingest.stage import IngestResult
from jobs.nightly import run_nightly
from schemas import ALL_TABLES
from schemas.observability import RUN_CLAIMS
from schemas.state import GROUP_STATE

ROOT = Path(__file__).resolve().parents[2]
LOCAL_CONF = ROOT / "conf" / "local.toml"
DATABASE = "cgh_samples"


@dataclass(frozen=True)
class SampleWarehouse:
    """Where the sample warehouse is, the configuration it was made with, and what its run's ingest and decode
    stages reported."""

    config: Config
    ingest: IngestResult
    decode: DecodeResult

    def tables(self, spark: SparkSession) -> Tables:
        """The tables, registered in this session's catalog: to read (every test that uses them shares them)."""
        tables = Tables(spark, self.config.tables.database, self.config.tables.location)
        tables.ensure_database()
        for spec in (*ALL_TABLES, GROUP_STATE, RUN_CLAIMS):
            if tables.exists(spec):
                tables.ensure(spec)
        return tables


def sample_config(root: Path) -> Config:
    """conf/local.toml with its tables and report under `root` (its Spark settings are not used: the tests'
    session runs it)."""
    local = load_config(LOCAL_CONF)
    return dataclasses.replace(
        local,
        tables=TablesConfig(database=DATABASE, location=str(root / "tables")),
        report=dataclasses.replace(local.report, path=str(root / "report" / "rebalance-audit.html")),
    )


def shared_sample_warehouse(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> SampleWarehouse:
    """The session's sample warehouse, built by whichever process asks first (see the module docstring)."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if base.name.startswith("popen-gw") else base  # xdist workers share the parent
    root = shared / "sample-warehouse"
    built = root / "built.pickle"
    with open(shared / "sample-warehouse.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if built.is_file():
                warehouse: SampleWarehouse = pickle.loads(built.read_bytes())  # noqa: S301 - written just before, by this session
                return warehouse
            if root.exists():
                shutil.rmtree(root)  # a build that died half-way
            config = sample_config(root)
            ctx = run_nightly(spark, config)
            assert ctx.ingest is not None and ctx.decode is not None
            warehouse = SampleWarehouse(config, ctx.ingest, ctx.decode)
            built.write_bytes(pickle.dumps(warehouse))
            return warehouse
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
