"""The nightly pipeline run k times over one input cut into k pieces must leave every gold table exactly as
one run over the whole input does (the gold stages are folds over carried state, not recomputations).

The input is a real broker's capture (samples/): its `__consumer_offsets` records are archived in k slices
cut at random times (each partition in offset order, as the archive grows), and its broker and client log
files grow the way log files do: here all at once at the end (logs collected late, within the reopen
horizon). The expected tables are those of one run over the complete input: the sample's cluster in the
embedded default's night, which the test session builds once (tests/spark/sample_warehouse.py), its log
files read where the sample keeps them.
"""

from __future__ import annotations

import random
import re
import shutil
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from jobs.common.config import (
    Config,
    HistoryConfig,
    LogSource,
    ReportConfig,
    SegmentSource,
    SourcesConfig,
    StormsConfig,
    TablesConfig,
)
from jobs.common.delta_io import Tables
from jobs.nightly import StoppedAfterStage, run_nightly
from jobs.offset_events.stage import OffsetEventsResult, run_offset_events
from jobs.stages import STAGES
from schemas import CONSUMER_GROUP_RECORDS, COORDINATOR_EVENTS, GROUP_METADATA, OFFSET_COMMITS, RAW_OFFSETS
from schemas.gold import GOLD_TABLES
from schemas.state import GROUP_STATE
from tests.spark.same_rows import assert_same_rows
from tests.spark.sample_warehouse import SampleWarehouse
from tests.spark.splits import comparable

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_CLUSTER = "kafka-4.3.1"
STORMS = StormsConfig(min_rebalances=12, window_minutes=2, quiet_minutes=1, flapping_min_rejoins=3,
                      lockstep_seconds=5, lockstep_min_groups=3)
GOLD_STAGES = tuple(s for s in STAGES if s.name != "report")
_LINE_TIME = re.compile(r"^\[?(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)[,.](\d{3})")


def _log_lines(sample: Path) -> dict[str, list[tuple[datetime | None, str]]]:
    """Every log file of the sample: its lines with the time of the entry each belongs to."""
    files = {}
    for path in [sample / "broker" / "server.log", *sorted((sample / "clients").glob("*.log"))]:
        lines: list[tuple[datetime | None, str]] = []
        current: datetime | None = None
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True):
            m = _LINE_TIME.match(line)
            if m:
                current = datetime.strptime(f"{m.group(1).replace('T', ' ')}.{m.group(2)}", "%Y-%m-%d %H:%M:%S.%f")
            lines.append((current, line))
        files[path.relative_to(sample).as_posix()] = lines
    return files


def _config(sample: Path, logs_dir: Path, root: Path, name: str, mode: str) -> Config:
    cluster = SAMPLE_CLUSTER
    logs = (LogSource(cluster, "broker-1", (str(logs_dir / "broker" / "server.log"),), "UTC", 1),
            LogSource(cluster, "clients", (str(logs_dir / "clients" / "*.log"),)))
    sources = (SourcesConfig(mode="segments", segments=(SegmentSource(cluster, str(sample)),), logs=logs)
               if mode == "segments" else SourcesConfig(mode="none", logs=logs))
    return Config(sources=sources, tables=TablesConfig(database=name, location=str(root / name)),
                  storms=STORMS, report=ReportConfig(path=str(root / f"{name}.html"), groups_shown=4))


def _write_logs(logs_dir: Path, files: dict[str, list[tuple[datetime | None, str]]], until: datetime | None) -> None:
    """Each log file as it stood at `until` (None: complete); files are only ever appended to."""
    for rel, lines in files.items():
        path = logs_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        text = "".join(line for at, line in lines if until is None or at is None or at <= until)
        if not path.exists() or path.read_text(encoding="utf-8", errors="replace") != text:
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(text[len(path.read_text(encoding="utf-8", errors="replace")) if path.exists() else 0:])


@pytest.fixture(scope="module")
def full(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory, sample_warehouse: SampleWarehouse
         ) -> tuple[Path, Path, Tables, dict[str, list[tuple[datetime | None, str]]]]:
    """One run over the whole sample: the expected tables (the shared sample warehouse, of which SAMPLE_CLUSTER's
    rows are compared: every table is per cluster), and the archive the split runs are cut from."""
    sample = ROOT / "samples" / SAMPLE_CLUSTER
    # the same thresholds as the split runs (whose Config leaves the history settings at their defaults)
    assert (sample_warehouse.config.storms, sample_warehouse.config.history) == (STORMS, HistoryConfig())
    shared_logs = {s.source: tuple(p.removeprefix(f"{ROOT}/") for p in s.paths)
                   for s in sample_warehouse.config.sources.logs if s.cluster == SAMPLE_CLUSTER}
    assert shared_logs == {"broker-1": (f"samples/{SAMPLE_CLUSTER}/broker/server.log*",),
                           "clients": (f"samples/{SAMPLE_CLUSTER}/clients/*.log",)}
    assert [p.name for p in (sample / "broker").iterdir()] == ["server.log"]  # what _log_lines reads
    root = tmp_path_factory.mktemp("incremental")
    return sample, root, sample_warehouse.tables(spark), _log_lines(sample)


def _source_file(source: Column) -> Column:
    """A log line's source as the path under its sample (broker/server.log, clients/x.log): the split runs grow
    the files in a directory of their own."""
    under = F.regexp_extract(source, r"((broker|clients)/[^/]+)$", 1)
    return F.when(under != "", under).otherwise(source)


def _gold(tables: Tables) -> dict[str, DataFrame]:
    out = {}
    for spec in GOLD_TABLES:
        rows = tables.read(spec).where(F.col("cluster") == SAMPLE_CLUSTER)
        for column in ("evidence", "coordinator_loads"):
            if column in rows.columns:
                rows = rows.withColumn(column, F.transform(
                    column, lambda e: e.withField("source", _source_file(e["source"]))))
        out[spec.name] = comparable(rows)
    return out


def _assert_same_gold(got: Tables, expected: Tables) -> None:
    for spec in GOLD_TABLES:  # the split runs' warehouses hold the one cluster (compared below) and no other
        assert {r[0] for r in got.read(spec).select("cluster").distinct().collect()} <= {SAMPLE_CLUSTER}, spec.name
    wanted, have = _gold(expected), _gold(got)
    for name, want in wanted.items():
        assert_same_rows(have[name], want, f"{name} and one run's")


def _run_in_pieces(spark: SparkSession, full: tuple[Path, Path, Tables, dict], k: int, seed: int,
                   logs_late: bool, crash: tuple[int, str] | None = None,
                   before_run: tuple[int, Callable[[Tables], None]] | None = None) -> Tables:
    """The sample's archive cut into `k` pieces, one nightly run each. `crash` (run index, stage): that run
    dies right after the stage, and the next run (over the same piece) has to finish its work.
    `before_run` (run index, change): the warehouse is changed before that run (an older layout, say)."""
    sample, root, expected, files = full
    rng = random.Random(f"{k}:{seed}:{logs_late}")
    name = (f"cgh_split_{k}_{seed}_{int(logs_late)}" + (f"_crash_{crash[0]}_{crash[1]}" if crash else "")
            + (f"_changed_{before_run[0]}" if before_run else ""))
    logs_dir = root / "logs"
    shutil.rmtree(logs_dir, ignore_errors=True)
    (logs_dir / "broker").mkdir(parents=True)
    (logs_dir / "clients").mkdir(parents=True)
    config = _config(sample, logs_dir, root, name, "none")
    tables = Tables(spark, name, config.tables.location)
    archive = (expected.read(RAW_OFFSETS).where(F.col("cluster") == SAMPLE_CLUSTER)
               .withColumn("_ts", F.col("timestamp")).persist())
    times = sorted(r[0] for r in archive.select("timestamp").distinct().collect() if r[0] is not None)
    cuts = sorted(rng.sample(times[:-1], k - 1)) if k > 1 else []
    previous: datetime | None = None
    try:
        for i, cut in enumerate([*cuts, None]):
            # Each partition's records up to the last offset whose time is within the cut, in offset order.
            upto = archive if cut is None else archive.where(F.col("timestamp") <= F.lit(cut))
            last = upto.groupBy("cluster", "partition").agg(F.max("offset").alias("_last"))
            piece = (archive.join(last, on=["cluster", "partition"], how="inner")
                     .where(F.col("offset") <= F.col("_last")))
            if previous is not None:
                before = archive.where(F.col("timestamp") <= F.lit(previous)).groupBy("cluster", "partition").agg(
                    F.max("offset").alias("_before"))
                piece = piece.join(before, on=["cluster", "partition"], how="left").where(
                    F.col("_before").isNull() | (F.col("offset") > F.col("_before")))
            if i == 0:
                tables.ensure_database()
                tables.ensure(RAW_OFFSETS)
            tables.append(RAW_OFFSETS, piece.select(*RAW_OFFSETS.column_names))
            if not logs_late or cut is None:
                _write_logs(logs_dir, files, cut)
            if before_run is not None and before_run[0] == i:
                before_run[1](tables)
            if crash is not None and crash[0] == i:
                with pytest.raises(StoppedAfterStage):
                    run_nightly(spark, config, stages=GOLD_STAGES, stop_after=crash[1])
            run_nightly(spark, config, stages=GOLD_STAGES)
            previous = cut
    finally:
        archive.unpersist()
    return tables


#: The many-runs split: three pieces, the fewest in which a run both follows an upgraded run and dies, and
#: is redone by a third. The folds' property over many random splits is tested in the core, with hypothesis
#: (tests/unit/test_*_fold.py); the random k of 3..4 pieces at the Spark level is tests/spark/test_gold_splits.py's;
#: here what only Spark can break across nights: the upgrade, the dead run's rollback, the carried state.
K_RUNS = 3
#: In the many-runs chain: before run 1 the warehouse gets a group_metadata of an older layout, and run 2
#: dies after the cost stage (the last stage that writes a table) (both indices exist for any k >= 3).
OLD_METADATA_RUN, CRASH_RUN = 1, 2


def _without_members(tables: Tables) -> None:
    """group_metadata as a version before it kept each record's decoded members wrote it (the history read
    them from the archived bytes then)."""
    spark = tables.spark
    path = tables.path(GROUP_METADATA)
    rows = spark.createDataFrame(tables.read(GROUP_METADATA).drop("members").collect(),
                                 tables.read(GROUP_METADATA).drop("members").schema)
    # A table of its own history, as an older version wrote it (an overwrite would be rolled back).
    shutil.rmtree(path)
    rows.write.format("delta").save(path)
    tables.ensure_change_feed(GROUP_METADATA)
    assert "members" not in tables.read(GROUP_METADATA).columns


@pytest.fixture(scope="module")
def many_runs(spark: SparkSession, full: tuple[Path, Path, Tables, dict]) -> Tables:
    """The sample in K_RUNS pieces, one warehouse through what a real one meets over nights: log files
    collected late (every line arrives with the last piece, within the reopen horizon), an upgrade from a
    layout without group_metadata.members (before run OLD_METADATA_RUN) and a run that dies after the gold
    stages (run CRASH_RUN). The warehouse the rebuild and nothing-new tests go on from. (Lines arriving in
    the run of their time, or in any later one: tests/spark/test_gold_splits.py feeds each line to a random
    run of its split.)"""
    return _run_in_pieces(spark, full, K_RUNS, 3, logs_late=True, crash=(CRASH_RUN, "cost"),
                          before_run=(OLD_METADATA_RUN, _without_members))


def test_k_runs_with_late_logs_through_an_upgrade_and_a_dead_run_leave_the_gold_tables_of_one_run(
        many_runs: Tables, full: tuple[Path, Path, Tables, dict]) -> None:
    """The first runs write generations from the records alone; the last brings every log line, which
    amends them. Run CRASH_RUN dies after the cost stage (gold rows, group_state and rebalance_cost written, the run not
    committed): the next run rolls those writes back and does the night again (its change feed ranges must
    not read the dead run's rows and the RESTORE that undid them). Before run OLD_METADATA_RUN,
    group_metadata lost its `members` column: that run adds the column, fills it from the archive once, and
    goes on. The tables end up as one run's."""
    _assert_same_gold(many_runs, full[2])
    assert many_runs.read(GROUP_STATE).where(F.col("generations").isNotNull()).count() > 0
    stored = many_runs.read(GROUP_METADATA).where(~F.col("is_tombstone"))
    assert stored.count() > 0 and stored.where(F.col("members").isNull()).count() == 0
    assert (stored.select(F.sort_array(F.transform("members", lambda m: m["member_id"])).alias("ids"), "member_ids")
            .where(F.col("ids") != F.col("member_ids")).count() == 0)


def test_a_rebuild_equals_the_incremental_result(
        spark: SparkSession, many_runs: Tables, full: tuple[Path, Path, Tables, dict]) -> None:
    sample, root, expected, _ = full
    config = _config(sample, root / "logs", root, many_runs.database, "none")
    ctx = run_nightly(spark, config, stages=GOLD_STAGES, rebuild=True)
    assert "rebuild" in ctx.extra
    _assert_same_gold(many_runs, expected)


def test_a_night_with_nothing_new_writes_no_gold_table(
        spark: SparkSession, many_runs: Tables, full: tuple[Path, Path, Tables, dict]) -> None:
    """A run after the last piece, with no new record or log line: the gold stages see from their inputs'
    commit files that nothing changed and write nothing (not even an empty commit)."""
    sample, root, expected, _ = full
    config = _config(sample, root / "logs", root, many_runs.database, "none")
    written = (*GOLD_TABLES, GROUP_STATE)
    before = {spec.name: many_runs.version(spec) for spec in written}
    # The offset-event stage on its own sees the same from the versions the last run committed.
    since = {spec.name: many_runs.version(spec)
             for spec in (OFFSET_COMMITS, GROUP_METADATA, CONSUMER_GROUP_RECORDS, COORDINATOR_EVENTS)}
    assert run_offset_events(many_runs, "direct", since) == OffsetEventsResult(0, 0, 0, 0, 0, 0, 0)
    ctx = run_nightly(spark, config, stages=GOLD_STAGES)
    assert {spec.name: many_runs.version(spec) for spec in written} == before
    assert ctx.extra["history"] == "nothing new since the last committed run"
    assert ctx.extra["storms"] == "no generation changed"
    _assert_same_gold(many_runs, expected)


def test_a_group_state_of_another_layout_is_replaced_and_the_gold_tables_rebuilt(
        spark: SparkSession, many_runs: Tables, full: tuple[Path, Path, Tables, dict]) -> None:
    """A warehouse whose group_state was written by an earlier version of the project (here: the `offsets`
    column as the opaque bytes it was before it became a typed struct): the next run replaces the table and
    rebuilds the gold tables from the archive, which come out as before. (A copy of the many-runs warehouse,
    whose tables every test of the module finds equal to one run's.)"""
    sample, root, expected, _ = full
    name = "cgh_old_state_layout"
    shutil.copytree(many_runs.location, root / name)
    config = _config(sample, root / "logs", root, name, "none")
    tables = Tables(spark, name, config.tables.location)
    old = T.StructType([T.StructField(f.name, T.BinaryType() if f.name == "offsets" else f.dataType, f.nullable)
                        for f in GROUP_STATE.schema.fields])
    states = spark.createDataFrame(many_runs.read(GROUP_STATE).withColumn("offsets", F.lit(None).cast("binary"))
                                   .select(*old.fieldNames()).collect(), old)
    # A table of its own history (an overwrite would be a write after the committed run, rolled back).
    shutil.rmtree(tables.path(GROUP_STATE))
    states.write.format("delta").save(tables.path(GROUP_STATE))
    ctx = run_nightly(spark, config, stages=GOLD_STAGES)
    assert "rebuild" in ctx.extra
    assert tables.columns_match(GROUP_STATE)
    _assert_same_gold(tables, expected)
    assert tables.read(GROUP_STATE).where(F.col("offsets").isNotNull()).count() > 0
