"""Table maintenance (jobs/maintenance.py): compaction leaves every row and every change-feed range as it
was, files per table stay bounded over nights, and a run that dies after compacting and vacuuming is
recovered exactly (VACUUM keeps the files recovery needs, even with a zero retention)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from jobs import maintenance
from jobs.common.config import Config, ConfigError, MaintenanceConfig, SourcesConfig, TablesConfig, parse_config
from jobs.common.delta_io import Tables
from jobs.common.session import session_setting
from jobs.maintenance import run_maintenance
from jobs.nightly import StoppedAfterStage, run_nightly
from jobs.stages import STAGES
from jobs.synthetic_fleet import FleetSpec, write_fleet
from schemas import ALL_TABLES, INGEST_RUNS, OFFSET_COMMITS, RAW_OFFSETS, TableSpec
from tests.spark.rows import raw, raw_frame
from tests.spark.same_rows import assert_same_rows

pytestmark = pytest.mark.spark

# (The cost stage's MERGE path, withdrawals included, and its rollback are tested night after night in
# tests/spark/test_incremental_runs.py; its table's files are compacted by the same per-table loop.)
NIGHT_STAGES = tuple(s for s in STAGES if s.name not in ("logs", "report", "cost"))
# Columns that name the run rather than the data: two histories of runs differ there.
LINEAGE = {"ingest_run_id", "ingested_at", "run_id", "updated_run_id"}
FLEET = FleetSpec(cluster="fleet", groups=60, partitions=5, rebalance_rate=0.03, seed=11)
NIGHT_RECORDS = 2000
# Two nights: the second compacts the first night's compacted file with its own new ones (what every later
# night repeats), and is the one that dies after maintenance and is run again.
NIGHTS = 2
CRASH_NIGHT = 2
# Compact as soon as a partition holds 3 small files; vacuum with no retention at all (the operator's
# consent given), so that only the protection of the recovery's versions keeps files.
TIGHT = MaintenanceConfig(small_file_mb=32, max_small_files=2, vacuum_every_commits=0,
                          vacuum_retention_hours=0, allow_short_retention=True)
TIGHT_AND_VACUUM_ALL = dataclasses.replace(TIGHT, vacuum_every_commits=1)


# ----------------------------------------------------------------------------------------------
# Configuration


def test_maintenance_is_on_by_default_with_deltas_safety_margin() -> None:
    config = parse_config({"sources": {"mode": "none"}})
    assert config.maintenance == MaintenanceConfig(enabled=True, small_file_mb=32.0, max_small_files=16,
                                                   vacuum_every_commits=20, vacuum_retention_hours=168.0,
                                                   allow_short_retention=False)


def test_a_retention_below_deltas_safety_margin_needs_the_operators_consent() -> None:
    with pytest.raises(ConfigError, match=r"maintenance.vacuum_retention_hours = 24 is below Delta's safety margin"):
        parse_config({"sources": {"mode": "none"}, "maintenance": {"vacuum_retention_hours": 24}})
    config = parse_config({"sources": {"mode": "none"},
                           "maintenance": {"vacuum_retention_hours": 24, "allow_short_retention": True}})
    assert config.maintenance.vacuum_retention_hours == 24.0


def test_unknown_and_out_of_range_maintenance_keys_are_named() -> None:
    with pytest.raises(ConfigError, match=r"unknown configuration key maintenance.optimise"):
        parse_config({"sources": {"mode": "none"}, "maintenance": {"optimise": True}})
    with pytest.raises(ConfigError, match=r"maintenance.max_small_files must be 1 or more, found 0"):
        parse_config({"sources": {"mode": "none"}, "maintenance": {"max_small_files": 0}})


# ----------------------------------------------------------------------------------------------
# Compaction and the change data feed


def _versions(tables: Tables, spec: TableSpec) -> list[tuple[int, str]]:
    return sorted((r["version"], r["operation"]) for r in tables.delta(spec).history().collect())


def _live_files(tables: Tables, spec: TableSpec) -> int:
    return int(tables.delta(spec).detail().select("numFiles").first()[0])


def test_a_change_feed_range_across_an_optimize_yields_each_appended_row_once(
        spark: SparkSession, tables: Tables) -> None:
    """raw_offsets (append-only): the decode stage reads the versions archived since its last run."""
    tables.ensure(RAW_OFFSETS)
    nights = [[raw(p, 10 * night + i, b"k", b"v", cluster=c, at_ms=night) for c in ("c1", "c2")
               for p in (0, 1) for i in range(3)] for night in range(4)]
    for rows in nights[:3]:  # versions 1, 2, 3
        tables.append(RAW_OFFSETS, raw_frame(spark, rows).repartition(2))
    result = run_maintenance(tables, [RAW_OFFSETS], TIGHT)  # version 4: OPTIMIZE
    tables.append(RAW_OFFSETS, raw_frame(spark, nights[3]))  # version 5

    assert _versions(tables, RAW_OFFSETS)[-2:] == [(4, "OPTIMIZE"), (5, "WRITE")]
    assert sorted(result.compacted[0].compacted) == ["`cluster` = 'c1'", "`cluster` = 'c2'"]
    for after, up_to, expected in ((1, 5, nights[1] + nights[2] + nights[3]), (1, 4, nights[1] + nights[2]),
                                   (3, 5, nights[3]), (4, 5, nights[3]), (3, 4, [])):
        assert_df_equality(tables.changes(RAW_OFFSETS, after, up_to), raw_frame(spark, expected),
                           ignore_row_order=True, ignore_nullable=True)
    assert_df_equality(tables.read(RAW_OFFSETS), raw_frame(spark, [r for n in nights for r in n]),
                       ignore_row_order=True, ignore_nullable=True)


def _offset_commit(offset: int, outcome: str | None = None) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(OFFSET_COMMITS.column_names)
    row.update(cluster="c1", partition=0, offset=offset, group_id="g", topic="t", topic_partition=offset % 3,
               committed_offset=100 + offset, is_tombstone=False, producer_id=7, is_transactional=True,
               transaction_outcome=outcome, record_timestamp=dt.datetime(2024, 1, 1))
    return row


def test_a_change_feed_range_across_an_optimize_that_drops_deleted_rows_yields_each_change_once(
        spark: SparkSession, tables: Tables) -> None:
    """offset_commits: deletion vectors (outcomes updated in place) and the change data feed."""
    tables.ensure(OFFSET_COMMITS)

    def commits(offsets: range, outcome: str | None = "open") -> DataFrame:
        return spark.createDataFrame([_offset_commit(o, outcome) for o in offsets], OFFSET_COMMITS.schema)

    tables.append(OFFSET_COMMITS, commits(range(0, 6)).repartition(2))   # version 1
    tables.append(OFFSET_COMMITS, commits(range(6, 12)).repartition(2))  # version 2
    tables.update_where(OFFSET_COMMITS, "offset IN (1, 7)", {"transaction_outcome": "'committed'"})  # 3
    run_maintenance(tables, [OFFSET_COMMITS], TIGHT)  # version 4: OPTIMIZE, the deleted rows dropped
    tables.append(OFFSET_COMMITS, commits(range(12, 15)).coalesce(1))  # version 5

    assert _versions(tables, OFFSET_COMMITS)[3:] == [(3, "UPDATE"), (4, "OPTIMIZE"), (5, "WRITE")]
    assert _live_files(tables, OFFSET_COMMITS) == 2  # one compacted file and the last append's
    feed = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 2)
            .option("endingVersion", 5).load(tables.path(OFFSET_COMMITS))
            .select("_change_type", "_commit_version", "offset", "transaction_outcome"))
    expected = spark.createDataFrame(
        [("insert", 2, o, "open") for o in range(6, 12)]
        + [("update_preimage", 3, o, "open") for o in (1, 7)]
        + [("update_postimage", 3, o, "committed") for o in (1, 7)]
        + [("insert", 5, o, "open") for o in range(12, 15)],
        "_change_type string, _commit_version long, offset long, transaction_outcome string")
    assert_df_equality(feed, expected, ignore_row_order=True, ignore_nullable=True, ignore_metadata=True)
    assert_df_equality(tables.changes(OFFSET_COMMITS, 1, 5), commits(range(6, 15)),
                       ignore_row_order=True, ignore_nullable=True)


def test_a_table_not_changed_since_the_last_run_is_left_alone(spark: SparkSession, tables: Tables) -> None:
    tables.ensure(RAW_OFFSETS)
    for night in range(4):
        tables.append(RAW_OFFSETS, raw_frame(spark, [raw(0, night, b"k", b"v")]))
    current = tables.version(RAW_OFFSETS)
    assert run_maintenance(tables, [RAW_OFFSETS], TIGHT, {RAW_OFFSETS.name: current}).tables == ()
    assert tables.version(RAW_OFFSETS) == current
    done = run_maintenance(tables, [RAW_OFFSETS], TIGHT, {RAW_OFFSETS.name: current - 1}).tables
    assert [(t.table, t.files_before, t.files_after, t.files_rewritten) for t in done] == [("raw_offsets", 4, 1, 4)]


def test_live_files_are_counted_from_the_checksum_file_or_else_from_the_state(
        spark: SparkSession, tables: Tables) -> None:
    """`live_files` reads a version's checksum file; a version written without one is counted from its
    state. Either way the count DESCRIBE DETAIL gives."""
    tables.ensure(RAW_OFFSETS)
    tables.append(RAW_OFFSETS, raw_frame(spark, [raw(0, o, b"k", b"v") for o in range(3)]).repartition(3))
    log = Path(tables.path(RAW_OFFSETS)) / "_delta_log"
    assert (log / f"{tables.version(RAW_OFFSETS):020d}.crc").is_file()
    assert maintenance._snapshot(tables, RAW_OFFSETS).checksumOpt().isDefined()  # what live_files reads
    assert maintenance.live_files(tables, RAW_OFFSETS) == _live_files(tables, RAW_OFFSETS) == 3
    with session_setting(spark, "spark.databricks.delta.writeChecksumFile.enabled", "false"):
        tables.append(RAW_OFFSETS, raw_frame(spark, [raw(0, 3, b"k", b"v")]).coalesce(1))
    assert not (log / f"{tables.version(RAW_OFFSETS):020d}.crc").exists()
    assert maintenance.live_files(tables, RAW_OFFSETS) == _live_files(tables, RAW_OFFSETS) == 4


def test_an_operators_compaction_between_runs_is_kept_and_a_data_change_is_undone(
        spark: SparkSession, tables: Tables) -> None:
    """recover() rolls back what a run that did not commit wrote; an OPTIMIZE (or REORG, VACUUM) an operator
    ran between two runs changes no row, so the next run keeps it instead of bringing the small files back."""
    tables.ensure(OFFSET_COMMITS)

    def commits(offsets: range) -> DataFrame:
        return spark.createDataFrame([_offset_commit(o) for o in offsets], OFFSET_COMMITS.schema).coalesce(1)

    for night in range(3):
        tables.append(OFFSET_COMMITS, commits(range(night * 3, night * 3 + 3)))
    committed = tables.version(OFFSET_COMMITS)
    rows = tables.read(OFFSET_COMMITS).count()
    tables.delta(OFFSET_COMMITS).optimize().executeCompaction()
    assert tables.version(OFFSET_COMMITS) == committed + 1
    assert not tables.data_changed_since(OFFSET_COMMITS, committed)
    assert not tables.restore(OFFSET_COMMITS, committed)
    assert tables.version(OFFSET_COMMITS) == committed + 1 and _live_files(tables, OFFSET_COMMITS) == 1
    # A write after the compaction (a run that died) is undone, and the compaction with it.
    tables.append(OFFSET_COMMITS, commits(range(100, 102)))
    assert tables.data_changed_since(OFFSET_COMMITS, committed)
    assert tables.data_changed_since(OFFSET_COMMITS, committed + 1)
    assert tables.restore(OFFSET_COMMITS, committed)
    assert tables.read(OFFSET_COMMITS).count() == rows


def _data_files(tables: Tables, spec: TableSpec) -> set[str]:
    """The parquet files in the table's directory (live or not)."""
    return {str(p.relative_to(tables.path(spec))) for p in Path(tables.path(spec)).rglob("*.parquet")
            if "_delta_log" not in p.parts}


def test_vacuum_keeps_the_files_of_the_version_a_recovery_goes_back_to(spark: SparkSession, tables: Tables) -> None:
    """With no retention at all, only the protection of the last committed version keeps its files."""
    tables.ensure(RAW_OFFSETS)
    rows = [raw(0, o, b"k", b"v") for o in range(3)]
    for o in range(3):  # versions 1-3: the last committed run left version 3 ...
        tables.append(RAW_OFFSETS, raw_frame(spark, rows[o:o + 1]).coalesce(1))
    committed = tables.version(RAW_OFFSETS)
    originals = _data_files(tables, RAW_OFFSETS)
    # ... and a later run compacts them (version 4) and vacuums.
    done = run_maintenance(tables, [RAW_OFFSETS], TIGHT_AND_VACUUM_ALL, {RAW_OFFSETS.name: committed - 1})

    assert [(t.files_before, t.files_rewritten, t.files_after) for t in done.tables] == [(3, 3, 1)]
    # The commit of version 2 is seconds old: the retention is that age plus the clock margin, rounded up.
    assert done.tables[0].vacuum_retention_hours == 2
    assert originals <= _data_files(tables, RAW_OFFSETS)
    tables.restore(RAW_OFFSETS, committed)
    assert_df_equality(tables.read(RAW_OFFSETS), raw_frame(spark, rows), ignore_row_order=True, ignore_nullable=True)
    # What the protection prevents: the same VACUUM without it deletes the files of version 3.
    run_maintenance(tables, [RAW_OFFSETS], TIGHT)  # compact again (the restore brought the three back)
    maintenance.vacuum(tables, RAW_OFFSETS, 0, below_safety_check=True)
    assert not originals & _data_files(tables, RAW_OFFSETS)
    with pytest.raises(Exception, match=r"(?i)not exist|FileNotFound|FILE_NOT_EXIST"):
        tables.read(RAW_OFFSETS, version=committed).collect()


def test_the_retention_grows_with_the_age_of_the_protected_version(spark: SparkSession, tables: Tables) -> None:
    tables.ensure(RAW_OFFSETS)
    for o in range(3):
        tables.append(RAW_OFFSETS, raw_frame(spark, [raw(0, o, b"k", b"v")]))
    log_file = Path(tables.path(RAW_OFFSETS)) / "_delta_log" / f"{1:020d}.json"
    long_ago = time.time() - 29.9 * 3600  # the last committed run, more than a day ago
    os.utime(log_file, (long_ago, long_ago))
    since = {RAW_OFFSETS.name: 1}

    no_retention = run_maintenance(tables, [RAW_OFFSETS], dataclasses.replace(TIGHT, vacuum_every_commits=1), since)
    assert [t.vacuum_retention_hours for t in no_retention.tables] == [31]  # 29.9 h + 1 h margin, rounded up
    week = run_maintenance(tables, [RAW_OFFSETS], MaintenanceConfig(vacuum_every_commits=1), since)
    assert [t.vacuum_retention_hours for t in week.tables] == [168]
    assert maintenance._protected_retention(tables, RAW_OFFSETS, 99, 0) == (
        None, "not vacuumed: the commit of version 99 is no longer in its log")


# ----------------------------------------------------------------------------------------------
# Nights of a synthetic fleet, with and without maintenance, one of them dying after maintenance


def _config(root: Path, name: str, maintenance_config: MaintenanceConfig) -> Config:
    return Config(sources=SourcesConfig(mode="none"), tables=TablesConfig(database=name, location=str(root / name)),
                  maintenance=maintenance_config)


def _live_files_per_table(tables: Tables) -> dict[str, int]:
    return {spec.name: _live_files(tables, spec) for spec in ALL_TABLES}


@dataclasses.dataclass
class Nights:
    maintained: Tables  # compacted every night; night CRASH_NIGHT died after maintenance and ran again
    clean: Tables  # a copy of it taken before that night, which ran that night once, without dying
    files_per_night: list[dict[str, int]]  # maintained, after each committed night
    crashed_operations: dict[str, list[str]]  # maintained: operations of the run that died, per table
    summaries: list[str]  # maintained: the run summary's maintenance line of each committed night


@pytest.fixture(scope="module")
def nights(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nights]:
    root = tmp_path_factory.mktemp("maintenance_nights")
    config = _config(root, "cgh_maint_nights", TIGHT)
    maintained = Tables(spark, config.tables.database, config.tables.location)
    clean_config = _config(root, "cgh_maint_clean", TIGHT)
    files_per_night = []
    summaries = []
    crashed_operations: dict[str, list[str]] = {}
    for night in range(1, NIGHTS + 1):
        write_fleet(maintained, FLEET, NIGHT_RECORDS, append=night > 1)
        if night == CRASH_NIGHT:
            # The expected result: the same warehouse, copied, running the night once.
            shutil.copytree(config.tables.location, clean_config.tables.location)
            run_nightly(spark, clean_config, stages=NIGHT_STAGES)
            # The run that dies vacuums every table it changed, with no retention, right before.
            before = {spec.name: maintained.version(spec) for spec in ALL_TABLES}
            with pytest.raises(StoppedAfterStage):
                run_nightly(spark, dataclasses.replace(config, maintenance=TIGHT_AND_VACUUM_ALL),
                            stages=NIGHT_STAGES, stop_after="maintenance")
            for spec in ALL_TABLES:
                history = maintained.delta(spec).history().where(F.col("version") > before[spec.name])
                crashed_operations[spec.name] = [r["operation"] for r in history.orderBy("version").collect()]
        ctx = run_nightly(spark, config, stages=NIGHT_STAGES)
        files_per_night.append(_live_files_per_table(maintained))
        summaries.append(ctx.extra.get("maintenance", ""))
    clean = Tables(spark, clean_config.tables.database, clean_config.tables.location)
    yield Nights(maintained, clean, files_per_night, crashed_operations, summaries)


def test_files_per_table_stay_bounded_night_after_night(nights: Nights) -> None:
    bound = TIGHT.max_small_files  # one cluster, every file small: at most this many per table
    for night, files in enumerate(nights.files_per_night, start=1):
        over = {name: n for name, n in files.items()
                if n > bound + (1 if name == INGEST_RUNS.name else 0)}  # its row comes after maintenance
        assert over == {}, f"night {night}: {over}"
    # Not for want of files: every night adds more than that to the archive (compacted by the run that
    # died on the last night).
    assert all(re.search(r"raw_offsets \d+ small files compacted \((\d+) -> 1 files\)", s) for s in
               nights.summaries[:CRASH_NIGHT - 1]), nights.summaries


def _comparable(tables: Tables, spec: TableSpec) -> DataFrame:
    """The table's data columns, maps as sorted arrays of entries."""
    return tables.read(spec).select(*[
        F.array_sort(F.map_entries(f.name)).alias(f.name) if isinstance(f.dataType, T.MapType) else F.col(f.name)
        for f in spec.schema.fields if f.name not in LINEAGE])


def test_a_run_that_dies_after_compacting_and_vacuuming_is_recovered_exactly(nights: Nights) -> None:
    # The run did compact and vacuum (with no retention) before it died ...
    compacted = {name for name, ops in nights.crashed_operations.items() if "OPTIMIZE" in ops}
    vacuumed = {name for name, ops in nights.crashed_operations.items() if "VACUUM END" in ops}
    assert {RAW_OFFSETS.name, OFFSET_COMMITS.name} <= compacted
    assert compacted <= vacuumed
    # ... and the next run rolled it back and redid the night: every table as the night run once left it.
    for spec in ALL_TABLES:
        if spec is INGEST_RUNS:
            continue
        assert_same_rows(_comparable(nights.maintained, spec), _comparable(nights.clean, spec), spec.name,
                         ignore_metadata=False)
    assert nights.maintained.read(INGEST_RUNS).count() == NIGHTS


def test_the_run_summary_says_what_maintenance_did(nights: Nights) -> None:
    for summary in nights.summaries:
        assert re.fullmatch(r"\d+ changed tables checked(, nothing to compact or vacuum|: .+)", summary), summary
