"""Logs stage: broker and client log files -> raw_log_lines + log_file_reads -> coordinator_events.

    python -m jobs.logs [--conf conf/local.toml]

The flow, one module each: `listing` (the files, their identities, how far each was read), `scan` (Spark
tasks that each read a share of the files, each file in order: coordinator_core.logs reads it and classifies
the kept entries), `rows` (the scan output -> the three tables' rows), and this stage (`run_logs`: list,
scan once, write, summarise).

What is archived: raw_log_lines keeps the coordinator-looking entries only (everything the catalogue
parses, today or after a catalogue update, is among them), joined over their physical lines; every line
read is accounted for per file in log_file_reads (lines, entries, events, unparsed). Archiving every line
of a broker's server.log caps the stage far below its target on two cores: Spark reading the 4M benchmark
lines (771 MB) and appending them to Delta, with no grouping and no parsing at all, took 14.5 s (275k
lines/s, load average ~5). It also holds the whole scan output in the cache between the three writes (the
benchmark's 2g driver ran out of heap). So it is an option of `run_logs` (`archive_all_entries`), not the
default.

Damaged input (issue #20): every file listed is accounted for in log_file_reads with a status (`read`,
`read_with_errors`, `unreadable`, `waiting`; see the column's comment and `worth_a_row` for when a file
that read no new line gets a row). A .gz cut short is read up to the cut (`read_available`), a file that
cannot be opened or a rotated one without a complete first line is unreadable, an active one without it
yet is waiting. Damaged lines are counted per file (`damaged_lines`): binary garbage (control bytes),
over-long lines (cut to `max_line_bytes` before they are classified and archived) and invalid UTF-8
(decoded with replacement characters; an entry that then does not parse is classified once more without
them, `reclassified_without_replacements`); see coordinator_core.logs.damage.

The run summary counts per file the entries that look like coordinator entries but match no catalogue
row (`unparsed`), with their first line numbers. A run that dies after appending raw_log_lines but before
log_file_reads is rolled back by the nightly job's recovery (all three tables are the stage's writes).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from coordinator_core.logs.damage import DAMAGE_COUNTERS
from coordinator_core.logs.scan import READ_BLOCK_BYTES
from jobs.common.config import LogsConfig, LogSource, load_job_config
from jobs.common.delta_io import Tables, write_together
from jobs.common.run_lock import EXIT_WAREHOUSE_CLAIMED, RunClaim, WarehouseClaimed, metastore_refusal
from jobs.common.session import build_session
from jobs.logs.listing import LogFile, archived_positions, list_log_files, worth_a_row
from jobs.logs.rows import coordinator_event_rows, log_file_read_rows, raw_log_line_rows
from jobs.logs.scan import FILE_COLUMNS, FILE_COUNTERS, SCAN_COLUMNS, held, new_bytes, scan_log_files, scan_slices
from schemas.logs import COORDINATOR_EVENTS, LOG_FILE_READS, RAW_LOG_LINES


@dataclass
class LogsResult:
    """The run summary: per file listed, its status, how much was new, how much of it did not parse and how
    many lines were damaged."""

    files: list[dict[str, Any]] = field(default_factory=list)

    @property
    def entries_archived(self) -> int:
        return sum(f["archived_entries"] for f in self.files)

    @property
    def lines_read(self) -> int:
        return sum(f["lines"] for f in self.files)

    @property
    def events(self) -> int:
        return sum(f["events"] for f in self.files)

    @property
    def unparsed(self) -> int:
        return sum(f["unparsed"] for f in self.files)

    @property
    def read_errors(self) -> list[tuple[str, str]]:
        """(path, error) of the files that could not be read, or not to their end (vanished, cut .gz)."""
        return [(f["path"], f["read_error"]) for f in self.files if f["read_error"] and f["status"] != "waiting"]

    def format(self) -> str:
        statuses = Counter(f["status"] for f in self.files if f["status"] != "read")
        damage = {name: sum(f[name] for f in self.files) for name in DAMAGE_COUNTERS}
        lines = [f"logs: {self.lines_read} new lines, {sum(f['entries'] for f in self.files)} entries,"
                 f" {self.entries_archived} archived, {self.events} events, "
                 f"{self.unparsed} coordinator-looking entries unparsed"
                 + "".join(f", {damage[name]} {name.replace('_', ' ')}" for name in DAMAGE_COUNTERS if damage[name])
                 + "".join(f", {count} files {status.replace('_', ' ')}" for status, count in sorted(statuses.items()))]
        for f in self.files:
            where = f"  {f['cluster']:<12} {f['path']}"
            if f["status"] in ("unreadable", "waiting"):
                lines.append(f"{where}: {f['status']}: {f['read_error']}")
                continue
            if f["lines"] or f["unparsed"] or f["read_error"]:
                lines.append(
                    f"{where}: lines {f['first_line']}..{f['first_line'] + f['lines'] - 1}, "
                    f"{f['events']} events, {f['unparsed']} unparsed"
                    + (f" (lines {f['unparsed_lines']})" if f["unparsed"] else "")
                )
            if any(f[name] for name in DAMAGE_COUNTERS):
                lines.append(f"{where}: {f['malformed_lines']} malformed, {f['overlong_lines']} over-long (cut), "
                             f"{f['invalid_utf8_lines']} invalid UTF-8 lines")
            if f["read_error"]:
                lines.append(f"{where}: read stopped: {f['read_error']}")
        return "\n".join(lines)


def _unchanged(f: LogFile, end_byte: int | None) -> bool:
    """Whether a file is known, from its listing alone, to hold nothing after its recorded position: a plain
    file (not .gz, whose size is not the uncompressed one; not a container-runtime file, whose position has
    no byte) exactly as long as the byte its last read ended at. Its scan would seek there and read nothing;
    a quiet night skips the Spark job of such scans."""
    return end_byte is not None and not f.path.endswith(".gz") and f.size == end_byte


def _nothing_read(f: LogFile, last_line: int, end_byte: int | None, status: str = "read",
                  reason: str | None = None) -> dict[str, Any]:
    """The file row of a file whose read brought no line, its position kept: one with nothing after its
    position (`_unchanged`: what its scan would give, status read), or one not read at all (its status
    and reason from the listing)."""
    return {
        "cluster": f.cluster, "file_id": f.file_id, "log_source": f.source, "path": f.path,
        "source_broker_id": f.broker_id, "source_zone": f.zone, "row_kind": "file",
        "first_line": last_line + 1, "last_line": last_line, "end_byte": end_byte,
        **dict.fromkeys(FILE_COUNTERS, 0), "unparsed_lines": [], "read_error": reason,
        "read_status": status, **dict.fromkeys(DAMAGE_COUNTERS, 0),
    }


def run_logs(
    tables: Tables,
    sources: Sequence[LogSource],
    run_id: str,
    started_at: dt.datetime,
    *,
    archive_all_entries: bool = False,
    block_bytes: int = READ_BLOCK_BYTES,
    max_line_bytes: int = LogsConfig.max_line_bytes,
) -> LogsResult:
    """Archive the new coordinator-looking entries of every source and parse them; per-file summary.

    `archive_all_entries` archives every entry in raw_log_lines, not only the coordinator-looking ones
    (a full copy of the logs; several times slower, see the module docstring). `max_line_bytes`: longer
    lines are cut to it and counted (config `[logs] max_line_bytes`).

    Every file listed is accounted for: a readable one is scanned; one that cannot be read, or has no
    complete first line yet, gets a file row of its own here (unreadable / waiting, no lines, see
    `coordinator_core.logs.files.why_not_read`). Which rows are written: `worth_a_row`.
    """
    spark = tables.spark
    tables.ensure_all((RAW_LOG_LINES, COORDINATOR_EVENTS, LOG_FILE_READS))
    files = list_log_files(sources)
    if not files:
        return LogsResult()
    ids = [f.file_id for f in files]
    positions: dict[tuple[str, str], tuple[int, int | None]] = {}
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    # Version 0 of a table is its creation (Tables.ensure), with no rows: nothing was read yet, and the
    # query (a Spark job, the first Delta read of a fresh session) is skipped.
    if tables.version(LOG_FILE_READS) > 0:
        for r in archived_positions(tables.read(LOG_FILE_READS).where(F.col("file_id").isin(ids))).collect():
            positions[(r["cluster"], r["file_id"])] = (int(r["last_line"]), r["end_byte"])
            latest[(r["cluster"], r["file_id"])] = {"status": r["status"], "read_error": r["read_error"],
                                                    "first_line": r["first_line"]}
    file_rows: list[dict[str, Any]] = []
    readable = []
    for f in files:
        if f.not_read is not None:
            continue
        last_line, end_byte = positions.get((f.cluster, f.file_id), (0, None))
        if _unchanged(f, end_byte):
            file_rows.append(_nothing_read(f, last_line, end_byte))
        else:
            readable.append(f)
    if readable:
        to_read = [
            (f.cluster, f.file_id, f.source, f.path, f.broker_id, f.zone,
             *positions.get((f.cluster, f.file_id), (0, None)), not f.rotated, f.container_layout,
             None if f.path.endswith(".gz") else f.size)
            for f in readable
        ]
        # A file is scanned in order by one task; a task scans a share of the files, as many tasks as the
        # new bytes are worth (see `scan_slices`). One element per partition: a slice's files.
        weights = [new_bytes(f.size, positions.get((f.cluster, f.file_id), (0, None))[1], f.path.endswith(".gz"))
                   for f in readable]
        slices = [[to_read[i] for i in s] for s in scan_slices(weights, spark.sparkContext.defaultParallelism)]
        files_to_read = spark.createDataFrame(
            spark.sparkContext.parallelize(slices, len(slices)).flatMap(lambda files: files), FILE_COLUMNS)
        scanned, release = held(scan_log_files(files_to_read, all_entries=archive_all_entries,
                                                block_bytes=block_bytes, max_line_bytes=max_line_bytes))
        try:
            # The file rows (one per file) first: this job runs the scan, once, and fills what holds its output.
            file_rows += [r.asDict() for r in scanned.where(F.col("row_kind") == "file").collect()]
            # Two independent tables, appended at the same time from the held scan output.
            write_together([
                partial(tables.append, RAW_LOG_LINES, raw_log_line_rows(scanned, run_id, started_at)),
                partial(tables.append, COORDINATOR_EVENTS, coordinator_event_rows(scanned, run_id)),
            ])
        finally:
            release()
    for f in files:
        if f.not_read is not None:
            file_rows.append(_nothing_read(f, *positions.get((f.cluster, f.file_id), (0, None)), status=f.not_read,
                                           reason=f.reason))
    # The positions (log_file_reads) are written last, only once both are committed; from the file rows
    # already on the driver (one per file), not from another pass over the cache.
    recorded = [r for r in file_rows if worth_a_row(r, latest.get((r["cluster"], r["file_id"])))]
    if recorded:
        file_frame = spark.createDataFrame([tuple(r.get(name) for name in SCAN_COLUMNS.names) for r in recorded],
                                           SCAN_COLUMNS)
        tables.append(LOG_FILE_READS, log_file_read_rows(file_frame, run_id, started_at))
    per_file = {(r["cluster"], r["file_id"]): r for r in file_rows}
    result = LogsResult()
    for f in files:
        read = per_file[(f.cluster, f.file_id)]
        result.files.append(
            {
                "cluster": f.cluster,
                "log_source": f.source,
                "path": f.path,
                "file_id": f.file_id,
                "status": read["read_status"],
                "first_line": int(read["first_line"]),
                "lines": int(read["last_line"]) - int(read["first_line"]) + 1,
                **{name: int(read[name]) for name in (*FILE_COUNTERS, *DAMAGE_COUNTERS)},
                "unparsed_lines": list(read["unparsed_lines"] or []),
                "read_error": read["read_error"],
            }
        )
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="jobs.logs", description="Archive and parse coordinator logs.")
    parser.add_argument("--conf", default=None, help="TOML configuration (default: conf/local.toml)")
    parser.add_argument("--debug", action="store_true", help="on a configuration error, print the traceback too")
    args = parser.parse_args(list(argv) if argv is not None else None)
    config = load_job_config(args.conf, debug=args.debug)
    sources = config.sources.logs
    if not sources:
        print("no [[sources.logs]] configured; nothing to do", file=sys.stderr)
        return 0
    refused = metastore_refusal(config.spark)
    if refused:
        print(f"error: {refused}", file=sys.stderr)
        return EXIT_WAREHOUSE_CLAIMED
    spark: SparkSession = build_session(config)
    try:
        tables = Tables(spark, config.tables.database, config.tables.location)
        tables.ensure_database()
        now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
        run_id = f"{now:%Y%m%dT%H%M%S%f}Z-logs"
        # The same claim as a nightly run's: the two must not append the same lines at once. (What this job
        # writes is not a committed nightly run: the next nightly run rolls it back and reads the lines again.)
        with RunClaim(tables, run_id, "jobs.logs", config.run.lock_stale_hours):
            print(run_logs(tables, sources, run_id, now, max_line_bytes=config.logs.max_line_bytes).format())
    except WarehouseClaimed as claimed:
        print(f"error: {claimed}", file=sys.stderr)
        return EXIT_WAREHOUSE_CLAIMED
    finally:
        spark.stop()
    return 0
