"""Crash drills: a nightly run that dies anywhere (SIGKILLed with its JVM in the middle of the history stage,
between two gold tables' writes) is completed by the next run, and every table ends up as one clean run
leaves it. The other kill points are drilled where their stage's tests are: after ingest and in the middle of
decode in tests/spark/test_nightly.py; after the last table-writing stage (every table written, the run not
committed) in tests/spark/test_incremental_runs.py's dead run, stopped after the cost stage; right after a
maintenance that compacted and vacuumed in tests/spark/test_maintenance.py.

The input is a real broker's capture (samples/kafka-3.9.1: segments, broker and client logs), read the way
the embedded default reads it. The expected tables are that cluster's rows of one uninterrupted run: the
embedded default's night, which the test session builds once (tests/spark/sample_warehouse.py).
Columns that name the run that wrote a row (run ids, ingest times) are left out of the comparison.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs.common.config import (
    Config,
    LogSource,
    ReportConfig,
    SegmentSource,
    SourcesConfig,
    StormsConfig,
    TablesConfig,
    parse_config,
)
from jobs.common.delta_io import Tables
from jobs.nightly import run_nightly
from jobs.stages import STAGES
from schemas import ALL_TABLES, GROUP_GENERATIONS, INGEST_RUNS, OFFSET_EVENTS, REBALANCE_COST, TableSpec
from schemas.observability import RUN_CLAIMS
from tests.spark.same_rows import assert_same_rows
from tests.spark.sample_warehouse import SampleWarehouse
from tests.spark.splits import comparable

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "kafka-3.9.1"
CLUSTER = "kafka-3.9.1"
STORMS = StormsConfig(min_rebalances=12, window_minutes=2, quiet_minutes=1, flapping_min_rejoins=3,
                      lockstep_seconds=5, lockstep_min_groups=3)
#: Columns naming the run that wrote a row, not the data.
LINEAGE = {"ingest_run_id", "ingested_at", "run_id", "updated_run_id"}
#: Every table but the run log itself (one row per committed run: compared by count).
#: The chain's stages: every stage but cost. The cost stage writes only rebalance_cost, rolled back by the same
#: mechanism as every stage's tables (jobs.stages: a Stage names what it writes); its death and rollback are
#: drilled in tests/spark/test_incremental_runs.py (a run stopped after the cost stage, redone by the next),
#: so the chain's three nights do not pay for it again.
CHAIN_STAGES = tuple(s for s in STAGES if s.name != "cost")
COMPARED = tuple(spec for spec in ALL_TABLES if spec is not INGEST_RUNS and spec is not REBALANCE_COST)


def _config(root: Path, name: str) -> Config:
    logs = (LogSource(CLUSTER, "broker-1", (str(SAMPLE / "broker" / "server.log*"),), "UTC", 1),
            LogSource(CLUSTER, "clients", (str(SAMPLE / "clients" / "*.log"),)))
    return Config(
        sources=SourcesConfig(mode="segments", segments=(SegmentSource(CLUSTER, str(SAMPLE)),), logs=logs),
        tables=TablesConfig(database=name, location=str(root / name)),
        storms=STORMS,
        report=ReportConfig(path=str(root / f"{name}.html"), groups_shown=4),
    )


def _contents(tables: Tables, spec: TableSpec, cluster: str | None = None) -> DataFrame:
    rows = tables.read(spec)
    if cluster is not None:
        rows = rows.where(F.col("cluster") == cluster)
    return comparable(rows.select(*[c for c in spec.column_names if c not in LINEAGE]))


def _assert_same_tables(got: Tables, expected: Tables, cluster: str | None = None) -> None:
    """Every table but ingest_runs holds the same rows (lineage columns aside); with `cluster`, the rows of
    that cluster (every such table has the column)."""
    for spec in COMPARED:
        assert_same_rows(_contents(got, spec, cluster), _contents(expected, spec, cluster),
                         f"table {spec.name} and a clean run's")


@pytest.fixture(scope="module")
def clean(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory, sample_warehouse: SampleWarehouse
          ) -> tuple[Path, Tables]:
    """The clean run: the embedded default's night (the shared sample warehouse), whose kafka-3.9.1 rows are
    what one uninterrupted run of this module's inputs writes (every table is per cluster: partitioned by
    it, or keyed by it; the same inputs and thresholds)."""
    root = tmp_path_factory.mktemp("drills")
    config = _config(root, "cgh_drill_clean")
    shared = sample_warehouse.config
    assert {s for s in shared.sources.logs if s.cluster == CLUSTER} == set(config.sources.logs)
    assert (shared.storms, shared.history) == (config.storms, config.history)
    tables = sample_warehouse.tables(spark)
    assert tables.read(GROUP_GENERATIONS).where(F.col("cluster") == CLUSTER).count() > 0
    assert tables.read(OFFSET_EVENTS).where(F.col("cluster") == CLUSTER).count() > 0
    return root, tables


def _toml(config: Config, spark_dir: Path) -> str:
    """The drill's configuration as a file for `python -m jobs.nightly --conf` (absolute paths; one task slot,
    as the test processes' own sessions: tests/spark/conftest.py's TEST_CORES)."""
    jars = parse_config({"sources": {"mode": "none"}}).spark.jars_dir
    logs = "".join(
        f'[[sources.logs]]\ncluster = "{s.cluster}"\nsource = "{s.source}"\npaths = ["{s.paths[0]}"]\n'
        f'zone = "UTC"\nbroker_id = {s.broker_id}\n\n' for s in config.sources.logs)
    st = config.storms
    return f'''[sources]
mode = "segments"

[[sources.segments]]
cluster = "{CLUSTER}"
path = "{SAMPLE}"

{logs}[tables]
database = "{config.tables.database}"
location = "{config.tables.location}"

[spark]
master = "local[1]"
catalog = "in-memory"
warehouse_dir = "{spark_dir}"
metastore_dir = ""
shuffle_partitions = 1
jars_dir = "{jars}"
show_progress = false

[spark.extra]
"spark.ui.enabled" = "false"
"spark.databricks.delta.snapshotPartitions" = "1"

[storms]
min_rebalances = {st.min_rebalances}
window_minutes = {st.window_minutes}
quiet_minutes = {st.quiet_minutes}
flapping_min_rejoins = {st.flapping_min_rejoins}
lockstep_seconds = {st.lockstep_seconds}
lockstep_min_groups = {st.lockstep_min_groups}

[report]
path = "{config.report.path}"
groups_shown = 4
'''


def _sigkill_inside_the_history_stage(config: Config, root: Path) -> None:
    """`python -m jobs.nightly` in a process group of its own (driver and JVM), killed with SIGKILL as soon as
    the history stage has committed its first gold write (group_generations version 1; version 0 is the
    table's creation): no cleanup of any kind runs, and its claim on the warehouse stays."""
    conf = root / "sigkill.toml"
    conf.write_text(_toml(config, root / "sigkill-spark-warehouse"))
    output = root / "sigkill.log"
    generations_log = Path(config.tables.location) / GROUP_GENERATIONS.name / "_delta_log"
    with open(output, "w") as out:
        job = subprocess.Popen([sys.executable, "-m", "jobs.nightly", "--conf", str(conf)], cwd=ROOT,
                               stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        while not (generations_log / f"{1:020d}.json").exists():
            assert job.poll() is None, "the job ended before the drill killed it:\n" + output.read_text()[-3000:]
            assert time.monotonic() < deadline, "the history stage did not write in time"
            time.sleep(0.05)
        os.killpg(job.pid, signal.SIGKILL)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
        job.wait(timeout=60)


def test_runs_killed_inside_the_history_stage_are_completed(
        spark: SparkSession, clean: tuple[Path, Tables], monkeypatch: pytest.MonkeyPatch) -> None:
    """One warehouse, a chain of runs that each die somewhere else; every run after a death takes over or
    waits for nothing, rolls the dead run's writes back and does the work again. Last, one run that
    finishes: the tables of one clean run."""
    root, expected = clean
    config = _config(root, "cgh_drill_chain")
    tables = Tables(spark, config.tables.database, config.tables.location)

    # 1. SIGKILL of the job and its JVM inside the history stage.
    _sigkill_inside_the_history_stage(config, root)
    assert tables.read(GROUP_GENERATIONS).count() > 0 and tables.read(INGEST_RUNS).count() == 0

    # 2. Inside the history stage again, in process: group_generations is merged, offset_events' write fails.
    real_upsert = Tables.upsert

    def dying_upsert(self: Tables, spec: TableSpec, rows: DataFrame, delete_flag: str | None = None) -> None:
        if spec is OFFSET_EVENTS:
            raise RuntimeError("driver lost (simulated) while writing offset_events")
        real_upsert(self, spec, rows, delete_flag)

    monkeypatch.setattr(Tables, "upsert", dying_upsert)
    with pytest.raises(RuntimeError, match="simulated"):
        run_nightly(spark, config, stages=CHAIN_STAGES)
    monkeypatch.setattr(Tables, "upsert", real_upsert)
    # That run took the killed job's claim over: the killed process is gone.
    took_over = [r["took_over"] for r in tables.read(RUN_CLAIMS).where("event = 'claimed'").collect()]
    assert len(took_over) == 2 and "that process is gone" in (took_over[0] or "") + (took_over[1] or "")

    assert tables.read(INGEST_RUNS).count() == 0

    # 3. A run that finishes.
    run_nightly(spark, config, stages=CHAIN_STAGES)
    assert tables.read(INGEST_RUNS).count() == 1
    _assert_same_tables(tables, expected, CLUSTER)
