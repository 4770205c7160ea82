"""Table maintenance: compaction of small files (Delta OPTIMIZE) and VACUUM, so that the files of every
table stay bounded as nights pass.

Every nightly run adds files to each table it writes: one per write task and partition for an append, the
rewritten rows as new files for a MERGE. Readers pay per file (a log entry, a footer, a task), so after a
year of nights an unmaintained table is thousands of small files. The nightly job's last stage before the
report calls `run_maintenance` on the tables the run changed.

Compaction. A partition (a cluster) is compacted once it holds more than `max_small_files` files smaller
than `small_file_mb`. OPTIMIZE then rewrites only those small files (Delta's own minimum file size is set
to the same value for the call), so one compaction costs at most about max_small_files x small_file_mb per
partition whatever the age of the archive, and a file that reached the size is never rewritten again: a
night's rows are rewritten once or a few times, not every night. Files with many deleted rows (deletion
vectors) are rewritten by the same OPTIMIZE, which drops their deleted rows.

OPTIMIZE changes no row: its commit carries dataChange = false, so appendOnly tables (raw_offsets) accept
it and the change data feed skips it. The gold stages read a run's new rows as a version range of the feed;
one across an OPTIMIZE version still gives every inserted row exactly once.

VACUUM deletes files no version younger than `vacuum_retention_hours` needs (the files compaction and
MERGEs replaced), and the files of failed writes. It lists the whole table directory and adds two commits
(VACUUM START/END), so it runs each time a table's log passes another `vacuum_every_commits` commits since
the last committed run, which spreads the tables' vacuums over different nights.

Crash safety. A run that dies after this stage is undone by the next run: every derived table is restored
to the version the last committed run recorded, and the next decode reads raw_offsets from the last version
decoded. Both need the files of those versions (RESTORE re-adds them; the feed reads the files versions
added), and VACUUM would delete a file that this run (or an earlier crashed one) removed if the retention
were shorter than the time since. So each table's retention is raised to the age of its protected version
(the caller's `since_versions`): a file live at that version is removed by a later commit, hence later than
the commit of that version, and is kept. With the default 168 hours (Delta's own safety margin) this only
matters when runs are a week apart; with an operator's shorter retention it is what keeps recovery working.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F

from jobs.common.config import DELTA_SAFE_RETENTION_HOURS, MaintenanceConfig
from jobs.common.delta_io import Tables
from jobs.common.session import session_setting
from schemas import TableSpec

#: Added to the age of a protected version: the commit time comes from the storage's clock, the removal
#: times VACUUM compares with from the driver's.
CLOCK_MARGIN_HOURS = 1.0


@dataclass(frozen=True)
class TableMaintenance:
    """What maintenance did to one table (files are the live data files of the table's current version)."""

    table: str
    files_before: int
    files_after: int
    #: partitions compacted, as SQL predicates (`cluster = 'x'`; "" for a table without partitions)
    compacted: tuple[str, ...] = ()
    files_rewritten: int = 0
    vacuum_retention_hours: int | None = None  # None: not vacuumed
    files_deleted: int | None = None  # files and directories VACUUM deleted (None: Delta did not log it)
    note: str = ""

    def format(self) -> str:
        parts = []
        if self.compacted:
            parts.append(f"{self.files_rewritten} small files compacted ({self.files_before} -> "
                         f"{self.files_after} files)")
        if self.vacuum_retention_hours is not None:
            deleted = "" if self.files_deleted is None else f", {self.files_deleted} files and directories deleted"
            parts.append(f"vacuumed (retention {self.vacuum_retention_hours} h{deleted})")
        if self.note:
            parts.append(self.note)
        return f"{self.table} " + ", ".join(parts)


@dataclass(frozen=True)
class MaintenanceResult:
    tables: tuple[TableMaintenance, ...]

    @property
    def compacted(self) -> tuple[TableMaintenance, ...]:
        return tuple(t for t in self.tables if t.compacted)

    @property
    def vacuumed(self) -> tuple[TableMaintenance, ...]:
        return tuple(t for t in self.tables if t.vacuum_retention_hours is not None)

    def format(self) -> str:
        acted = [t for t in self.tables if t.compacted or t.vacuum_retention_hours is not None or t.note]
        checked = f"{len(self.tables)} changed tables checked"
        if not acted:
            return f"{checked}, nothing to compact or vacuum"
        return f"{checked}: " + "; ".join(t.format() for t in acted)


@dataclass(frozen=True)
class PartitionFiles:
    """The live data files of one partition of a table."""

    predicate: str  # SQL predicate on the partition columns selecting it ("" for an unpartitioned table)
    files: int
    small_files: int


def _snapshot(tables: Tables, spec: TableSpec) -> Any:
    """The table's current Delta snapshot (JVM object).

    Delta has no public API for a table's file list; DESCRIBE DETAIL aggregates the very same snapshot
    state (its AddFile actions), which Delta caches per table, so asking it costs no data read.
    """
    none = tables.spark.sparkContext._jvm.scala.Option.empty()  # type: ignore[attr-defined]
    return tables.delta(spec)._jdt.deltaLog().update(False, none, none)


def live_files(tables: Tables, spec: TableSpec) -> int:
    """The number of data files in the table's current version (what its readers open).

    Read from the version's checksum file (`_delta_log/<version>.crc`, which Delta writes with every commit,
    computed from the previous one and the commit's actions) when there is one: the snapshot's own count
    would reconstruct its state from the log, a Spark job per table, and the stage checks every table a
    run changed (~2.7 s of a sample night's 3 s of maintenance). A version without one (a writer that
    does not write checksums) is counted from its state.
    """
    snapshot = _snapshot(tables, spec)
    checksum = snapshot.checksumOpt()
    if checksum.isDefined():
        return int(checksum.get().numFiles())
    return int(snapshot.numOfFiles())


def partition_files(tables: Tables, spec: TableSpec, small_file_bytes: int) -> list[PartitionFiles]:
    """Files and small files (below `small_file_bytes`) per partition of the table's current version."""
    added = DataFrame(_snapshot(tables, spec).allFiles().toDF(), tables.spark)
    keys = [F.col("partitionValues")[c].alias(c) for c in spec.partition_columns]
    counts = (
        added.groupBy(*keys)
        .agg(F.count(F.lit(1)).alias("files"),
             F.sum((F.col("size") < small_file_bytes).cast("int")).alias("small_files"))
        .collect()  # one row per partition (per cluster): a handful
    )
    return [PartitionFiles(_partition_predicate(spec, row), int(row["files"]), int(row["small_files"]))
            for row in counts]


def _partition_predicate(spec: TableSpec, row: Row) -> str:
    """`a = 'x' AND b IS NULL` for one partition (Delta keeps partition values as strings)."""
    terms = []
    for c in spec.partition_columns:
        value = row[c]
        if value is None:
            terms.append(f"`{c}` IS NULL")
        else:
            escaped = str(value).replace("\\", "\\\\").replace("'", "\\'")
            terms.append(f"`{c}` = '{escaped}'")
    return " AND ".join(terms)


def compact(tables: Tables, spec: TableSpec, predicates: Sequence[str], small_file_bytes: int) -> int:
    """OPTIMIZE the partitions selected by `predicates` (all of an unpartitioned table with [""]),
    rewriting only their files below `small_file_bytes`. Returns the number of files rewritten."""
    optimize = tables.delta(spec).optimize()
    where = " OR ".join(f"({p})" for p in predicates if p)
    if where:
        optimize = optimize.where(where)
    with session_setting(tables.spark, "spark.databricks.delta.optimize.minFileSize", str(small_file_bytes)):
        metrics = optimize.executeCompaction().select("metrics.numFilesRemoved").first()
    return int(metrics[0]) if metrics and metrics[0] is not None else 0


def commit_time(tables: Tables, spec: TableSpec, version: int) -> dt.datetime | None:
    """When `version` of the table was committed (its log file's time, which is Delta's own commit time);
    None when that log file is gone (older than the log retention) or never existed."""
    if version < 0:
        return None
    jvm = tables.spark.sparkContext._jvm  # type: ignore[attr-defined]
    hadoop_conf = tables.spark.sparkContext._jsc.hadoopConfiguration()  # type: ignore[attr-defined]
    path = jvm.org.apache.hadoop.fs.Path(f"{tables.path(spec)}/_delta_log/{version:020d}.json")
    fs = path.getFileSystem(hadoop_conf)
    if not fs.exists(path):
        return None
    millis = fs.getFileStatus(path).getModificationTime()
    return dt.datetime.fromtimestamp(millis / 1000, dt.timezone.utc).replace(tzinfo=None)


def vacuum(tables: Tables, spec: TableSpec, retention_hours: int, below_safety_check: bool = False) -> int | None:
    """VACUUM the table with this retention (whole hours: Delta rounds a fraction to the nearest hour, so
    0.4 h would delete what was replaced a minute ago). Returns the number of files and directories deleted
    (from the VACUUM END commit's metrics, checksum files included; None when Delta did not log it).

    A retention below Delta's safety margin (`DELTA_SAFE_RETENTION_HOURS`) needs `below_safety_check`,
    the operator's consent: a reader of an older version (a long query, a time travel) loses its files.
    VACUUM lists the table directory with as many tasks as `parallelPartitionDiscovery.parallelism`
    (10,000 by default); the tables are partitioned by cluster only, so the session's default parallelism
    lists them as fast, without thousands of empty tasks (68 s against 10 s for a tiny table on local[2]).
    """
    if retention_hours < DELTA_SAFE_RETENTION_HOURS and not below_safety_check:
        raise ValueError(f"VACUUM of {spec.name} with {retention_hours} hours of retention is below Delta's "
                         f"safety margin of {DELTA_SAFE_RETENTION_HOURS:.0f} hours")
    spark = tables.spark
    parallelism = str(spark.sparkContext.defaultParallelism)
    with session_setting(spark, "spark.sql.sources.parallelPartitionDiscovery.parallelism", parallelism):
        if retention_hours < DELTA_SAFE_RETENTION_HOURS:
            with session_setting(spark, "spark.databricks.delta.retentionDurationCheck.enabled", "false"):
                tables.delta(spec).vacuum(float(retention_hours))
        else:
            tables.delta(spec).vacuum(float(retention_hours))
    last = tables.delta(spec).history(1).select("operation", "operationMetrics").first()
    if last is None or last["operation"] != "VACUUM END":
        return None
    deleted = (last["operationMetrics"] or {}).get("numDeletedFiles")
    return int(deleted) if deleted is not None else None


def _vacuum_due(current: int, since: int | None, every_commits: int) -> bool:
    """True when the table's log passed another multiple of `every_commits` commits after `since`."""
    if every_commits <= 0:
        return False
    if since is None:
        return True
    return current // every_commits > since // every_commits


def _protected_retention(tables: Tables, spec: TableSpec, since: int | None,
                         configured: int) -> tuple[int | None, str]:
    """The retention VACUUM may use on the table: the configured one, raised to keep every file live at the
    protected version `since` (rounded up to whole hours); None (no VACUUM) when that version's commit time
    is unknown.

    Asked right before the VACUUM: Delta counts the retention back from its own clock when it starts, a
    moment later, which only makes it keep more.
    """
    if since is None or since < 0:
        return configured, ""
    committed = commit_time(tables, spec, since)
    if committed is None:
        return None, f"not vacuumed: the commit of version {since} is no longer in its log"
    now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    age_hours = max(0.0, (now - committed).total_seconds() / 3600) + CLOCK_MARGIN_HOURS
    return max(configured, math.ceil(age_hours)), ""


def run_maintenance(
    tables: Tables,
    specs: Sequence[TableSpec],
    config: MaintenanceConfig,
    since_versions: Mapping[str, int] | None = None,
) -> MaintenanceResult:
    """Compact and vacuum the tables of `specs` that need it.

    `since_versions`: table name -> the version the last committed run left (for raw_offsets the last
    version decoded). A table still at that version is left alone (nothing added files to it); a table
    past it is compacted if a partition holds too many small files, and vacuumed when its log passed
    another `vacuum_every_commits` commits since, keeping every file of that version (see the module
    docstring). Tables absent from it are checked every time and vacuumed with the configured retention;
    None: every table is checked and vacuumed.
    """
    small_file_bytes = int(config.small_file_mb * 2**20)
    done = []
    for spec in specs:
        since = since_versions.get(spec.name) if since_versions is not None else None
        current = tables.version(spec)
        if since is not None and current <= since:
            continue
        files_before = live_files(tables, spec)
        compacted: tuple[str, ...] = ()
        rewritten = 0
        if files_before > config.max_small_files:
            crowded = [p.predicate for p in partition_files(tables, spec, small_file_bytes)
                       if p.small_files > config.max_small_files]
            if crowded:
                rewritten = compact(tables, spec, crowded, small_file_bytes)
                compacted = tuple(crowded)
        retention: int | None = None
        deleted: int | None = None
        note = ""
        if files_before and _vacuum_due(current, since, config.vacuum_every_commits):
            retention, note = _protected_retention(tables, spec, since, config.vacuum_retention_hours)
            if retention is not None:
                deleted = vacuum(tables, spec, retention, config.allow_short_retention)
        files_after = live_files(tables, spec) if compacted else files_before
        done.append(TableMaintenance(spec.name, files_before, files_after, compacted, rewritten, retention,
                                     deleted, note))
    return MaintenanceResult(tuple(done))

