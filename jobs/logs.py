"""Logs stage: broker and client log files -> raw_log_lines -> coordinator_events, incremental.

    python -m jobs.logs [--conf conf/local.toml]

Extract (driver, metadata only): the configured globs are listed; each file is known by its content
identity (`file_id`: cluster, source name and first line), so `server.log` renamed to `server.log.1` and
later compressed to `server.log.1.gz` is the same file. How far each identity was archived comes from
raw_log_lines itself (last physical line of its entries).

Read (executors, one task per file, `mapInArrow`): the file is read in large blocks from the line after
the archived position; lines are split and entry heads found with Arrow compute (RE2, vectorized), so
only the rare continuation lines (stack traces) are touched one by one in Python. Files written by a
container runtime (CRI, docker json, kubectl prefixes) go through coordinator_core's reference reader
instead. The last entry of an active (not rotated) file is held back: its stack trace may still be
being written; it is read when the file grows or once it is rotated.

Parse: a JVM pre-filter (`contains` on the broker log-context markers and the coordinator logger names:
a superset of what coordinator_core can classify as anything but unrelated) keeps the few coordinator
looking entries; those go through coordinator_core.classify_log_entry in one vectorized `mapInArrow`
batch boundary, the same parser the unit tests prove line kind by line kind. Entries that look like
coordinator lines but match no catalogue row are counted per file in the run summary.

A run that dies after appending raw_log_lines but before coordinator_events is rolled back by the
nightly job's recovery (both tables are in the stage's `writes`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import glob
import gzip
import hashlib
import os
import re
import sys
import tomllib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from jobs.common.config import PROJECT_ROOT, Config, ConfigError, _build, parse_config
from jobs.common.delta_io import Tables
from schemas.logs import COORDINATOR_EVENTS, RAW_LOG_LINES

# -- configuration ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LogSource:
    """One broker's or client's log files (`[[sources.logs]]`).

    Attributes:
        cluster: cluster name (as in the segment/Kafka sources).
        source: a name for the writer of these files (`broker-1`, `orders-consumer`); part of the file
            identity, so two brokers whose logs start with the same line stay apart.
        paths: glob patterns; a relative one is resolved against the project root. Rotated (`.log.N`,
            `.log.<date>`) and gzip-compressed (`.gz`) files are read as well.
        zone: IANA zone of zone-less timestamps (log4j's `%d`); everything is stored in UTC.
        broker_id: broker that writes these files, for lines that do not name it; -1 for clients.
    """

    cluster: str
    source: str
    paths: tuple[str, ...]
    zone: str = "UTC"
    broker_id: int = -1


def parse_log_sources(data: list[dict[str, Any]], root: Path = PROJECT_ROOT) -> tuple[LogSource, ...]:
    """`[[sources.logs]]` entries (already-parsed TOML) -> LogSource, strictly (unknown keys are errors)."""
    if not isinstance(data, list):
        raise ConfigError("sources.logs: expected an array of tables ([[sources.logs]])")
    sources = []
    for index, entry in enumerate(data):
        source: LogSource = _build(LogSource, entry, f"sources.logs[{index}]", root)
        paths = tuple(p if os.path.isabs(p) or "://" in p else str(root / p) for p in source.paths)
        sources.append(LogSource(source.cluster, source.source, paths, source.zone, source.broker_id))
    return tuple(sources)


def load_config_with_logs(path: str | os.PathLike[str] | None) -> tuple[Config, tuple[LogSource, ...]]:
    """The job's Config plus its `[[sources.logs]]`, until `jobs.common.config` knows that section."""
    config_path = Path(path) if path else PROJECT_ROOT / "conf" / "local.toml"
    with open(config_path, "rb") as handle:
        data = tomllib.load(handle)
    root = config_path.resolve().parent.parent
    logs = data.get("sources", {}).pop("logs", [])
    return parse_config(data, root=root), parse_log_sources(logs, root)


# -- extract: which files, which identity, from which line ---------------------------------------------

#: A file whose name says it was rotated (`server.log.1`, `server.log.2024-05-01-10`, `*.gz`): complete,
#: so its last entry is read too. Every other file is active.
_ROTATED_NAME = re.compile(r"(?:\.log\.[^/]+|\.gz)$")
_FIRST_LINE_LIMIT = 65536


@dataclass(frozen=True)
class LogFile:
    cluster: str
    source: str
    path: str
    file_id: str
    rotated: bool
    zone: str
    broker_id: int | None


def _open_binary(path: str) -> Any:
    return gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")


def file_identity(cluster: str, source: str, path: str) -> str | None:
    """Content identity of a log file, or None while it has no complete first line."""
    try:
        with _open_binary(path) as handle:
            first = handle.readline(_FIRST_LINE_LIMIT)
    except (OSError, EOFError):
        return None
    if not first.endswith(b"\n") and len(first) < _FIRST_LINE_LIMIT:
        return None
    digest = hashlib.sha256(b"\0".join([cluster.encode(), source.encode(), first.rstrip(b"\r\n")]))
    return digest.hexdigest()[:32]


def list_log_files(sources: Sequence[LogSource]) -> list[LogFile]:
    """The files of every source, one per identity (a plain copy preferred over a `.gz` of the same file)."""
    by_identity: dict[tuple[str, str], LogFile] = {}
    for source in sources:
        paths = sorted({p for pattern in source.paths for p in glob.glob(pattern) if os.path.isfile(p)})
        for path in paths:
            file_id = file_identity(source.cluster, source.source, path)
            if file_id is None:
                continue
            found = LogFile(
                source.cluster,
                source.source,
                path,
                file_id,
                bool(_ROTATED_NAME.search(path)),
                source.zone,
                None if source.broker_id < 0 else source.broker_id,
            )
            key = (source.cluster, file_id)
            seen = by_identity.get(key)
            # A rotated copy is complete; among those, a plain one reads faster than its .gz.
            if seen is None or (found.rotated, not found.path.endswith(".gz")) > (
                seen.rotated,
                not seen.path.endswith(".gz"),
            ):
                by_identity[key] = found
    return sorted(by_identity.values(), key=lambda f: (f.cluster, f.source, f.path))


def archived_positions(raw_log_lines: DataFrame) -> DataFrame:
    """(cluster, file_id, archived_lines): the last physical line already archived, per file."""
    return raw_log_lines.groupBy("cluster", "file_id").agg(
        F.max(F.col("line_number") + F.col("line_count") - 1).alias("archived_lines")
    )


# -- read: files -> entries, on the executors -----------------------------------------------------------

_FILE_COLUMNS = T.StructType(
    [
        T.StructField("file_id", T.StringType(), False),
        T.StructField("path", T.StringType(), False),
        T.StructField("skip_lines", T.LongType(), False),
        T.StructField("hold_back_last", T.BooleanType(), False),
    ]
)
_ENTRY_COLUMNS = T.StructType(
    [
        T.StructField("file_id", T.StringType(), False),
        T.StructField("line_number", T.LongType(), False),
        T.StructField("line_count", T.IntegerType(), False),
        T.StructField("text", T.StringType(), False),
    ]
)
#: Bytes read per block; a block's complete lines become one Arrow batch.
READ_BLOCK_BYTES = 4 << 20


def _re2(java_pattern: str) -> str:
    """A catalogue pattern for Arrow's RE2: named groups dropped (RE2 refuses a name used twice)."""
    return re.sub(r"\(\?P?<[A-Za-z]\w*>", "(?:", java_pattern)


def read_entries(
    path: str, skip_lines: int, hold_back_last: bool, block_bytes: int = READ_BLOCK_BYTES
) -> Iterator[tuple[Any, Any, Any]]:
    """Entries of one file after `skip_lines`: (line numbers, line counts, texts) per block, as Arrow/NumPy.

    Joins lines exactly like `coordinator_core.iter_log_entries` (a line that is no entry head continues
    the entry before it; at most MAX_ENTRY_LINES lines per entry); files with container prefixes are read
    by that function itself.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from coordinator_core.logs import CONTAINER_PREFIXES, HEAD_PATTERN
    from coordinator_core.logs.parser import MAX_ENTRY_LINES

    head_pattern = _re2(HEAD_PATTERN)
    container_pattern = "|".join(f"(?:{_re2(p)})" for _, p in CONTAINER_PREFIXES) + '|^\\{"log":'

    pending: list[str] = []
    pending_start = 0
    seen = 0  # physical lines before the current block
    rest = b""
    checked_layout = False
    with _open_binary(path) as handle:
        while True:
            block = handle.read(block_bytes)
            data = rest + block
            if block:
                cut = data.rfind(b"\n")
                if cut < 0:
                    rest = data
                    continue
                data, rest = data[:cut], data[cut + 1 :]
            elif not data:
                break
            else:
                rest = b""
            count = data.count(b"\n") + 1
            if seen + count <= skip_lines:
                seen += count
                if not block:
                    break
                continue
            text = data.decode("utf-8", "replace")
            lines = text.split("\n")
            if "\r" in text:
                lines = [line.rstrip("\r") for line in lines]
            drop = max(0, skip_lines - seen)
            base = seen + drop + 1  # line number of lines[drop]
            seen += count
            lines = lines[drop:]
            array = pa.array(lines, pa.string())
            if not checked_layout:
                checked_layout = True
                if pc.any(pc.match_substring_regex(array, container_pattern)).as_py():
                    handle.close()
                    yield from _reference_entries(path, skip_lines, hold_back_last)
                    return
            heads = pc.match_substring_regex(array, head_pattern).to_numpy(zero_copy_only=False)
            starts = np.flatnonzero(heads)
            numbers: list[int] = []
            counts: list[int] = []
            texts: list[str] = []
            first = int(starts[0]) if len(starts) else len(lines)
            if pending:
                for line in lines[:first]:
                    if len(pending) >= MAX_ENTRY_LINES:
                        numbers.append(pending_start)
                        counts.append(len(pending))
                        texts.append("\n".join(pending))
                        pending, pending_start = [], pending_start + len(pending)
                    pending.append(line)
                if len(starts):
                    numbers.append(pending_start)
                    counts.append(len(pending))
                    texts.append("\n".join(pending))
                    pending = []
            elif first > 0:
                starts = np.concatenate([[0], starts])  # the file starts mid-entry: an entry of its own
            if len(starts) == 0:
                if numbers:  # a pending entry cut at MAX_ENTRY_LINES
                    yield (np.array(numbers, np.int64), np.array(counts, np.int32), pa.array(texts, pa.string()))
                continue
            bounds = np.append(starts, len(lines))
            lengths = np.diff(bounds)
            if (lengths > MAX_ENTRY_LINES).any():
                starts = np.array(
                    sorted(
                        int(s) + k
                        for s, n in zip(starts, lengths)
                        for k in range(0, int(n), MAX_ENTRY_LINES)
                    )
                )
                bounds = np.append(starts, len(lines))
                lengths = np.diff(bounds)
            # The last entry may continue in the next block.
            last = int(starts[-1])
            pending, pending_start = lines[last:], base + last
            complete, complete_lengths = starts[:-1], lengths[:-1]
            entry_texts = array.take(pa.array(complete, pa.int64()))
            multi = complete_lengths > 1
            if multi.any():
                joined = ["\n".join(lines[int(s) : int(s) + int(n)]) for s, n in zip(complete[multi], complete_lengths[multi])]
                entry_texts = pc.replace_with_mask(entry_texts, pa.array(multi), pa.array(joined, pa.string()))
            if numbers:
                entry_texts = pa.concat_arrays([pa.array(texts, pa.string()), entry_texts])
            yield (
                np.concatenate([np.array(numbers, np.int64), complete.astype(np.int64) + base]),
                np.concatenate([np.array(counts, np.int32), complete_lengths.astype(np.int32)]),
                entry_texts,
            )
            if not block:
                break
    if pending and not hold_back_last:
        yield (np.array([pending_start], np.int64), np.array([len(pending)], np.int32), pa.array(["\n".join(pending)]))


def _reference_entries(path: str, skip_lines: int, hold_back_last: bool) -> Iterator[tuple[Any, Any, Any]]:
    """coordinator_core's own reader, for files whose lines carry container-runtime prefixes."""
    import numpy as np
    import pyarrow as pa

    from coordinator_core.logs import iter_log_entries

    with gzip.open(path, "rt", encoding="utf-8", errors="replace") if path.endswith(".gz") else open(
        path, encoding="utf-8", errors="replace"
    ) as handle:
        entries = [e for e in iter_log_entries(handle) if e.line_number > skip_lines]
    if hold_back_last and entries:
        entries.pop()
    for start in range(0, len(entries), 20000):
        chunk = entries[start : start + 20000]
        yield (
            np.array([e.line_number for e in chunk], np.int64),
            np.array([e.line_count for e in chunk], np.int32),
            pa.array([e.text for e in chunk], pa.string()),
        )


def _read_files_fn(block_bytes: int) -> Callable[[Iterator[Any]], Iterator[Any]]:
    def read_partition(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        arrow_schema = to_arrow_schema(_ENTRY_COLUMNS, timestamp_utc=True, prefers_large_types=False)
        for files in batches:
            for file_id, path, skip, hold in zip(*(files.column(c).to_pylist() for c in _FILE_COLUMNS.names)):
                for numbers, counts, texts in read_entries(path, skip, hold, block_bytes):
                    ids = pa.array([file_id] * len(numbers), pa.string())
                    yield pa.RecordBatch.from_arrays(
                        [ids, pa.array(numbers), pa.array(counts), texts], schema=arrow_schema
                    )

    return read_partition


def read_log_files(files_to_read: DataFrame, block_bytes: int = READ_BLOCK_BYTES) -> DataFrame:
    """(file_id, path, skip_lines, hold_back_last) rows -> (file_id, line_number, line_count, text) entries."""
    return files_to_read.select(*_FILE_COLUMNS.names).mapInArrow(_read_files_fn(block_bytes), _ENTRY_COLUMNS)


def raw_log_line_rows(entries: DataFrame, log_files: DataFrame, run_id: str, started_at: dt.datetime) -> DataFrame:
    """Entries read + the files they came from -> raw_log_lines rows."""
    return entries.join(F.broadcast(log_files), on="file_id", how="inner").select(
        "cluster",
        "file_id",
        "line_number",
        "line_count",
        "text",
        "log_source",
        "path",
        "broker_id",
        "source_zone",
        F.lit(run_id).alias("ingest_run_id"),
        F.lit(started_at).cast("timestamp").alias("ingested_at"),
    )


# -- parse: entries -> coordinator events --------------------------------------------------------------


def coordinator_markers() -> tuple[str, ...]:
    """Texts of which every coordinator-looking entry holds at least one (the JVM pre-filter).

    The broker log-context prefixes plus the class names of the coordinator loggers; a marker that
    contains another is dropped (`GroupCoordinatorShard` is found by `GroupCoordinator`).
    """
    from coordinator_core.logs.catalogue import COORDINATOR_LOGGERS

    markers = {
        "[GroupCoordinator ",
        "[GroupMetadataManager brokerId=",
        "[Group Metadata Manager on Broker ",
        "CoordinatorRuntime",
        *(name.rstrip("$") for name in COORDINATOR_LOGGERS),
    }
    return tuple(sorted(m for m in markers if not any(o != m and o in m for o in markers)))


def looks_like_coordinator_entry(text: Column) -> Column:
    """JVM pre-filter: may this entry be anything but unrelated to coordinator_core's parser?

    JSON-layout entries without a logger key are kept too: for them the parser cannot rule out the
    catalogue by logger.
    """
    condition = F.lit(False)
    for marker in coordinator_markers():
        condition = condition | text.contains(marker)
    return condition | (text.startswith("{") & ~text.contains("logger"))


#: Outcome of classify_log_entry per candidate entry, plus the event's fields (null unless an event).
_EVENT_FIELDS = [f for f in COORDINATOR_EVENTS.schema.fields if f.name not in
                 ("cluster", "file_id", "line_number", "log_source", "path", "ingest_run_id")]
PARSED_COLUMNS = T.StructType(
    [
        T.StructField("cluster", T.StringType(), False),
        T.StructField("file_id", T.StringType(), False),
        T.StructField("line_number", T.LongType(), False),
        T.StructField("status", T.StringType(), False),
        *(T.StructField(f.name, f.dataType, True) for f in _EVENT_FIELDS),
    ]
)


def _classify_fn() -> Callable[[Iterator[Any]], Iterator[Any]]:
    def classify_partition(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        from coordinator_core.logs import classify_log_entry

        arrow_schema = to_arrow_schema(PARSED_COLUMNS, timestamp_utc=True, prefers_large_types=False)
        event_names = [f.name for f in _EVENT_FIELDS]
        for batch in batches:
            columns = {c: batch.column(c).to_pylist() for c in ("cluster", "file_id", "line_number", "text",
                                                               "broker_id", "source_zone")}
            out: dict[str, list[Any]] = {n: [] for n in ("status", *event_names)}
            for text, broker_id, zone in zip(columns["text"], columns["broker_id"], columns["source_zone"]):
                outcome = classify_log_entry(text, source_zone=zone, broker_id=broker_id)
                out["status"].append(outcome.status)
                event = outcome.event
                for name in event_names:
                    out[name].append(None if event is None else getattr(event, name))
            arrays = [pa.array(columns[c], arrow_schema.field(c).type) for c in ("cluster", "file_id", "line_number")]
            arrays += [pa.array(out[n], arrow_schema.field(n).type) for n in ("status", *event_names)]
            yield pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)

    return classify_partition


def classify_entries(raw_log_lines: DataFrame) -> DataFrame:
    """raw_log_lines rows -> one PARSED_COLUMNS row per coordinator-looking entry (status + event fields)."""
    candidates = raw_log_lines.where(looks_like_coordinator_entry(F.col("text")))
    return candidates.select("cluster", "file_id", "line_number", "text", "broker_id", "source_zone").mapInArrow(
        _classify_fn(), PARSED_COLUMNS
    )


def coordinator_event_rows(parsed: DataFrame, raw_log_lines: DataFrame, run_id: str) -> DataFrame:
    """Classified entries -> coordinator_events rows (events only), with their file's source and path."""
    files = raw_log_lines.select("cluster", "file_id", "log_source", "path").distinct()
    return (
        parsed.where(F.col("status") == "event")
        .join(F.broadcast(files), on=["cluster", "file_id"], how="inner")
        .withColumn("ingest_run_id", F.lit(run_id))
        .select(*COORDINATOR_EVENTS.column_names)
    )


def unparsed_per_file(parsed: DataFrame) -> DataFrame:
    """Per file: events, known non-events, and coordinator-looking entries no catalogue row matched."""
    def count_of(status: str) -> Column:
        return F.count(F.when(F.col("status") == status, True)).alias(status)

    return parsed.groupBy("cluster", "file_id").agg(
        count_of("event"),
        count_of("known_non_event"),
        count_of("unparsed"),
        count_of("unparsed_below_info"),
        F.slice(F.sort_array(F.collect_list(F.when(F.col("status") == "unparsed", F.col("line_number")))), 1, 5)
        .alias("unparsed_lines"),
    )


# -- the stage ------------------------------------------------------------------------------------------


@dataclass
class LogsResult:
    """The run summary: per file read, how much was new and how much of it did not parse."""

    files: list[dict[str, Any]] = field(default_factory=list)

    @property
    def entries_archived(self) -> int:
        return sum(f["entries"] for f in self.files)

    @property
    def lines_read(self) -> int:
        return sum(f["lines"] for f in self.files)

    @property
    def events(self) -> int:
        return sum(f["events"] for f in self.files)

    @property
    def unparsed(self) -> int:
        return sum(f["unparsed"] for f in self.files)

    def format(self) -> str:
        lines = [f"logs: {self.lines_read} new lines, {self.entries_archived} entries, {self.events} events, "
                 f"{self.unparsed} coordinator-looking entries unparsed"]
        for f in self.files:
            if f["lines"] or f["unparsed"]:
                lines.append(
                    f"  {f['cluster']:<12} {f['path']}: lines {f['first_line']}..{f['first_line'] + f['lines'] - 1}, "
                    f"{f['events']} events, {f['unparsed']} unparsed"
                    + (f" (lines {f['unparsed_lines']})" if f["unparsed"] else "")
                )
        return "\n".join(lines)


def run_logs(
    tables: Tables,
    sources: Sequence[LogSource],
    run_id: str,
    started_at: dt.datetime,
    block_bytes: int = READ_BLOCK_BYTES,
) -> LogsResult:
    """Archive the new log entries of every source and parse them; returns the per-file summary."""
    spark = tables.spark
    tables.ensure(RAW_LOG_LINES)
    tables.ensure(COORDINATOR_EVENTS)
    files = list_log_files(sources)
    if not files:
        return LogsResult()
    log_files = spark.createDataFrame(
        [(f.cluster, f.file_id, f.source, f.path, f.broker_id, f.zone, f.rotated) for f in files],
        "cluster string, file_id string, log_source string, path string, broker_id int, source_zone string, "
        "rotated boolean",
    )
    ids = [f.file_id for f in files]
    positions = {
        (r["cluster"], r["file_id"]): int(r["archived_lines"])
        for r in archived_positions(tables.read(RAW_LOG_LINES).where(F.col("file_id").isin(ids))).collect()
    }
    to_read = [(f.file_id, f.path, positions.get((f.cluster, f.file_id), 0), not f.rotated) for f in files]
    parallelism = max(1, min(len(to_read), spark.sparkContext.defaultParallelism))
    files_to_read = spark.createDataFrame(to_read, _FILE_COLUMNS).repartition(parallelism)
    entries = read_log_files(files_to_read, block_bytes)
    tables.append(RAW_LOG_LINES, raw_log_line_rows(entries, log_files.drop("rotated"), run_id, started_at))

    new_lines = tables.read(RAW_LOG_LINES).where(F.col("ingest_run_id") == run_id)
    parsed = classify_entries(new_lines).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        tables.append(COORDINATOR_EVENTS, coordinator_event_rows(parsed, new_lines, run_id))
        per_file_parsed = {(r["cluster"], r["file_id"]): r.asDict() for r in unparsed_per_file(parsed).collect()}
    finally:
        parsed.unpersist()
    per_file_read = {
        (r["cluster"], r["file_id"]): r
        for r in new_lines.groupBy("cluster", "file_id")
        .agg(F.count(F.lit(1)).alias("entries"), F.sum("line_count").alias("lines"), F.min("line_number").alias("first"))
        .collect()
    }
    result = LogsResult()
    for f in files:
        key = (f.cluster, f.file_id)
        read = per_file_read.get(key)
        counts = per_file_parsed.get(key, {})
        result.files.append(
            {
                "cluster": f.cluster,
                "log_source": f.source,
                "path": f.path,
                "file_id": f.file_id,
                "first_line": int(read["first"]) if read else positions.get(key, 0) + 1,
                "entries": int(read["entries"]) if read else 0,
                "lines": int(read["lines"]) if read else 0,
                "events": counts.get("event", 0),
                "known_non_events": counts.get("known_non_event", 0),
                "unparsed": counts.get("unparsed", 0),
                "unparsed_below_info": counts.get("unparsed_below_info", 0),
                "unparsed_lines": list(counts.get("unparsed_lines") or []),
            }
        )
    return result


def main(argv: Sequence[str] | None = None) -> int:
    from jobs.common.session import build_session

    parser = argparse.ArgumentParser(prog="jobs.logs", description="Archive and parse coordinator logs.")
    parser.add_argument("--conf", default=None, help="TOML configuration (default: conf/local.toml)")
    args = parser.parse_args(list(argv) if argv is not None else None)
    config, sources = load_config_with_logs(args.conf)
    if not sources:
        print("no [[sources.logs]] configured; nothing to do", file=sys.stderr)
        return 0
    spark: SparkSession = build_session(config)
    try:
        tables = Tables(spark, config.tables.database, config.tables.location)
        tables.ensure_database()
        now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
        run_id = f"{now:%Y%m%dT%H%M%S%f}Z-logs"
        print(run_logs(tables, sources, run_id, now).format())
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
