"""Logs stage, scan (executors, each file read in order by one task, one `mapInArrow` pass): files -> kept
entries, classified.

Each task reads its files one after the other with coordinator_core.logs.scan, each in large blocks from
the byte after the recorded position (or by counting lines when that offset cannot be trusted) up to the
size the file had when listed, so a scan computed again reads the same bytes (what a file gains meanwhile
is the next run's).
The coordinator-looking entries (coordinator_core.logs.keep) come out of each block as one Arrow string
array, and batches of them are classified column-wise by coordinator_core.logs.bulk (RE2 over Arrow
arrays, the catalogue indexed by literal prefix; the entries it cannot read exactly like the reference
parser go through coordinator_core.classify_log_entry one by one), in the same task. Files written by a
container runtime (CRI, docker json, compose/kubectl prefixes) go through the reference reader instead.
The last entry of an active (not rotated) file is held back: its stack trace may still be being written;
it is read when the file grows or once it is rotated.

Why not Spark's text source: on local[2] (load average ~5) the JVM text reader alone, with no filter and
no write, read 620k lines/s over both cores; `contains` on the 16 markers brought it to 230k lines/s.
The block scan (split, heads, markers, grouping, candidate texts) reads 450k-600k lines/s on ONE core
under heavier load, and hands only the candidates to the parser without another serialization.

Where the time goes (benchmarks/logs_bench.py: 16M lines, 3.1 GB in 8 files, 5% coordinator lines,
785k entries archived, 698k events; local[2], warm JVM, 14-16 s and 26-31 CPU seconds for the run): the
block scan ~0.53 CPU seconds per 1M lines on an idle core, half of it the RE2 marker alternation over
every line (Arrow's literal search, a per-anchor `bytes.find`, and RE2 literal searches over the whole
block for rare anchors with the alternation run on their lines only were measured and were no faster);
the column-wise classification ~6 us per entry. The JVM's share, a little under half the CPU, is turning
the scan's Arrow batches into rows, holding them, and the Parquet encoding of the two appends
(coordinator_events, 35 columns, is most of it; its compression and Delta's statistics are not). The
scan output is read three times but computed once: in local mode it is held as serialized rows
(`localCheckpoint`, less CPU than Spark's columnar cache), on a cluster it is cached uncompressed
(compressing it cost ~3 s of a ~19 s run), see `held`; and log_file_reads is written from the file rows
already on the driver.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from coordinator_core.logs.damage import DAMAGE_COUNTERS, cut_long_lines, reclassified_without_replacements
from coordinator_core.logs.files import READ_ERRORS, error_text
from coordinator_core.logs.scan import READ_BLOCK_BYTES, FileScan, scan_container_file, scan_log_file_columns
from jobs.common.config import LogsConfig
from jobs.common.session import session_setting
from jobs.common.tasks import python_tasks
from schemas.logs import COORDINATOR_EVENTS

#: One row per file to scan (the input of the scan task).
FILE_COLUMNS = T.StructType(
    [
        T.StructField("cluster", T.StringType(), False),
        T.StructField("file_id", T.StringType(), False),
        T.StructField("log_source", T.StringType(), False),
        T.StructField("path", T.StringType(), False),
        T.StructField("source_broker_id", T.IntegerType(), True),
        T.StructField("source_zone", T.StringType(), False),
        T.StructField("last_line", T.LongType(), False),
        T.StructField("end_byte", T.LongType(), True),
        T.StructField("hold_back_last", T.BooleanType(), False),
        T.StructField("container_layout", T.BooleanType(), False),
        # the size the file had when listed (not for .gz, listed compressed): the scan reads no further
        T.StructField("read_until", T.LongType(), True),
    ]
)
#: Event fields as classify_log_entry fills them (the position and source columns come from the file).
_EVENT_FIELDS = [f for f in COORDINATOR_EVENTS.schema.fields if f.name not in
                 ("cluster", "file_id", "line_number", "log_source", "path", "ingest_run_id")]
#: Per-file counts the scan task keeps (log_file_reads columns).
FILE_COUNTERS = ("entries", "archived_entries", "events", "known_non_events", "unparsed", "unparsed_below_info")
#: What the scan task emits: `row_kind` "entry" rows (an archived entry, its classification and event
#: fields) and one "file" row per file (position and counters). Internal, never a table.
SCAN_COLUMNS = T.StructType(
    [
        *(f for f in FILE_COLUMNS.fields if f.name not in ("last_line", "end_byte", "hold_back_last",
                                                              "container_layout", "read_until")),
        T.StructField("row_kind", T.StringType(), False),
        T.StructField("line_number", T.LongType(), True),
        T.StructField("line_count", T.IntegerType(), True),
        T.StructField("text", T.StringType(), True),
        T.StructField("status", T.StringType(), True),
        *(T.StructField(f.name, f.dataType, True) for f in _EVENT_FIELDS),
        T.StructField("first_line", T.LongType(), True),
        T.StructField("last_line", T.LongType(), True),
        T.StructField("end_byte", T.LongType(), True),
        *(T.StructField(name, T.LongType(), True) for name in FILE_COUNTERS),
        T.StructField("unparsed_lines", T.ArrayType(T.LongType(), False), True),
        T.StructField("read_error", T.StringType(), True),
        # log_file_reads' status (`status` above is an entry's classification)
        T.StructField("read_status", T.StringType(), True),
        *(T.StructField(name, T.LongType(), True) for name in DAMAGE_COUNTERS),
    ]
)
#: How many unparsed line numbers a file's summary keeps.
UNPARSED_LINES_KEPT = 5


#: Entries classified together: the fast path works column-wise, so larger batches cost less per entry.
CLASSIFY_BATCH = 32768


def _read_status(scan: FileScan, raised: bool) -> str:
    """log_file_reads' status of a scan (see the column's comment)."""
    if raised and scan.last_line < scan.first_line:
        return "unreadable"  # failed before any line was read (vanished, or no longer readable)
    if raised or scan.read_error is not None or any(getattr(scan, name) for name in DAMAGE_COUNTERS):
        return "read_with_errors"
    return "read"


def _entry_blocks(file: dict[str, Any], scan: FileScan, *, all_entries: bool, block_bytes: int,
                  max_line_bytes: int) -> Iterator[tuple[Any, Any, Any]]:
    """The kept entries of a file (a FILE_COLUMNS row), as (line numbers, line counts, texts) columns per
    block, read by the block scanner or, for a file with container-runtime prefixes, the reference reader."""
    import numpy as np
    import pyarrow as pa

    if not file["container_layout"]:
        yield from scan_log_file_columns(file["path"], scan, file["hold_back_last"], all_entries=all_entries,
                                         block_bytes=block_bytes, read_until=file["read_until"],
                                         max_line_bytes=max_line_bytes)
        return
    for numbers, counts, texts in scan_container_file(file["path"], scan, file["hold_back_last"],
                                                      all_entries=all_entries, read_until=file["read_until"],
                                                      max_line_bytes=max_line_bytes):
        yield np.array(numbers, np.int64), np.array(counts, np.int64), pa.array(texts, pa.string())


def _joined(blocks: list[tuple[Any, Any, Any]]) -> tuple[Any, Any, Any]:
    """Column blocks of entries -> one."""
    import numpy as np
    import pyarrow as pa

    return (np.concatenate([b[0] for b in blocks]), np.concatenate([b[1] for b in blocks]),
            pa.concat_arrays([b[2] for b in blocks]))


#: The scan task's counter of each classification status.
_COUNTER_OF_STATUS = {"event": "events", "known_non_event": "known_non_events", "unparsed": "unparsed",
                      "unparsed_below_info": "unparsed_below_info"}
#: The file columns every row of a file repeats (cluster .. source_zone).
_CONSTANT_NAMES = [f.name for f in FILE_COLUMNS.fields][:6]


def _scan_batch(arrow_schema: Any, columns: dict[str, Any], rows: int, constants: dict[str, Any]) -> Any:
    """A SCAN_COLUMNS record batch of `rows` rows: `columns` as given, the others `constants` or null."""
    import pyarrow as pa

    arrays = []
    for arrow_field in arrow_schema:
        values = columns.get(arrow_field.name)
        if values is None:
            values = pa.repeat(pa.scalar(constants.get(arrow_field.name), arrow_field.type), rows)
        elif not isinstance(values, pa.Array):
            values = pa.array(values, arrow_field.type)
        arrays.append(values.cast(arrow_field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)


def _classified(entries: tuple[Any, Any, Any], file: dict[str, Any], counters: dict[str, int],
                unparsed_lines: list[int], max_line_bytes: int, arrow_schema: Any) -> Any:
    """One batch of archived entries (line numbers, line counts, texts), classified column-wise
    (coordinator_core.logs.bulk) into SCAN_COLUMNS entry rows; the file's counters advanced."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from coordinator_core.logs.bulk import classify_log_entries
    from coordinator_core.logs.envelope import zone_of

    numbers, counts, text_array = entries
    zone = zone_of(file["source_zone"])
    text_array = cut_long_lines(text_array, max_line_bytes)
    classify = partial(classify_log_entries, source_zone=zone, broker_id=file["source_broker_id"])
    outcome = reclassified_without_replacements(classify(text_array), text_array, classify)
    status = outcome.column("status")
    for value, count in zip(*pc.value_counts(status).flatten(), strict=True):
        if value.as_py() in _COUNTER_OF_STATUS:
            counters[_COUNTER_OF_STATUS[value.as_py()]] += count.as_py()
    if len(unparsed_lines) < UNPARSED_LINES_KEPT:
        unparsed = np.flatnonzero(pc.equal(status, "unparsed").to_numpy(zero_copy_only=False))
        unparsed_lines.extend(int(numbers[i]) for i in unparsed[: UNPARSED_LINES_KEPT - len(unparsed_lines)])
    counters["archived_entries"] += len(numbers)
    is_event = pc.equal(status, "event")
    events = {f.name: outcome.column(f.name) for f in _EVENT_FIELDS}
    # a known non-event keeps its line kind in the outcome; the scan rows carry it for events only
    events["line_kind"] = pc.if_else(is_event, events["line_kind"], pa.scalar(None, pa.string()))
    return _scan_batch(
        arrow_schema,
        {"row_kind": pa.repeat(pa.scalar("entry"), len(numbers)), "line_number": pa.array(numbers, pa.int64()),
         "line_count": pa.array(counts, pa.int32()), "text": text_array, "status": status, **events},
        len(numbers), {name: file[name] for name in _CONSTANT_NAMES},
    )


def _file_batches(file: dict[str, Any], arrow_schema: Any, *, all_entries: bool, block_bytes: int,
                  max_line_bytes: int) -> Iterator[Any]:
    """The scan of one file (a FILE_COLUMNS row): its classified entries in batches of CLASSIFY_BATCH or
    more, then its file row (position, counters, status)."""
    scan = FileScan(file["last_line"] + 1, file["last_line"], file["end_byte"])
    counters = dict.fromkeys(FILE_COUNTERS, 0)
    unparsed_lines: list[int] = []
    blocks = _entry_blocks(file, scan, all_entries=all_entries, block_bytes=block_bytes,
                           max_line_bytes=max_line_bytes)
    raised = False
    pending: list[tuple[Any, Any, Any]] = []
    try:
        for block in blocks:
            pending.append(block)
            if sum(len(b[0]) for b in pending) >= CLASSIFY_BATCH:
                yield _classified(_joined(pending), file, counters, unparsed_lines, max_line_bytes, arrow_schema)
                pending = []
    except READ_ERRORS as error:  # vanished or unreadable file (a cut .gz ends its read itself)
        # What was read before stays read: `scan` only ever covers entries already handed over.
        raised = True
        scan.read_error = error_text(error)
    if pending:
        yield _classified(_joined(pending), file, counters, unparsed_lines, max_line_bytes, arrow_schema)
    counters["entries"] = scan.entries
    yield _scan_batch(
        arrow_schema,
        {"row_kind": ["file"], "first_line": [scan.first_line], "last_line": [scan.last_line],
         "end_byte": [scan.end_byte], **{name: [value] for name, value in counters.items()},
         "unparsed_lines": [unparsed_lines], "read_error": [scan.read_error],
         "read_status": [_read_status(scan, raised)],
         **{name: [getattr(scan, name)] for name in DAMAGE_COUNTERS}},
        1, {name: file[name] for name in _CONSTANT_NAMES},
    )


def _scan_files_fn(all_entries: bool, block_bytes: int,
                   max_line_bytes: int) -> Callable[[Iterable[Any]], Iterable[Any]]:
    """The scan task: FILE_COLUMNS batches -> SCAN_COLUMNS batches (each file's classified entries, then its
    file row)."""

    def scan_partition(batches: Iterable[Any]) -> Iterator[Any]:
        arrow_schema = to_arrow_schema(SCAN_COLUMNS, timestamp_utc=True, prefers_large_types=False)
        for files in batches:
            for file in files.to_pylist():
                yield from _file_batches(file, arrow_schema, all_entries=all_entries, block_bytes=block_bytes,
                                         max_line_bytes=max_line_bytes)

    return scan_partition


def scan_log_files(files_to_read: DataFrame, *, all_entries: bool = False,
                   block_bytes: int = READ_BLOCK_BYTES, max_line_bytes: int = LogsConfig.max_line_bytes) -> DataFrame:
    """FILE_COLUMNS rows (a partition's files are read one after the other) -> SCAN_COLUMNS rows: archived
    entries and file rows."""
    return files_to_read.select(*FILE_COLUMNS.names).mapInArrow(
        _scan_files_fn(all_entries, block_bytes, max_line_bytes), SCAN_COLUMNS
    )



#: A .gz file's size on disk is its compressed size: its text is taken as this many times as long.
GZ_EXPANSION = 8


def new_bytes(size: int | None, end_byte: int | None, gz: bool) -> int:
    """About how many bytes of a file's text a scan reads: what follows its last read (all of a .gz file,
    which is read from its start; all of a file whose size is unknown or shrank: rotated in place)."""
    size = size or 0
    if gz:
        return size * GZ_EXPANSION
    if end_byte is not None and 0 <= end_byte <= size:
        return size - end_byte
    return size


def scan_slices(weights: Sequence[int], cores: int) -> list[list[int]]:
    """The files' indices grouped into scan tasks (each file read in order by one task), as many as
    `jobs.common.tasks.python_tasks` says the new bytes are worth; files placed largest first, each on the
    lightest task so far (LPT), so a large file runs beside the small ones rather than after them. Each
    task's files in that order."""
    if not weights:
        return []
    tasks = python_tasks(sum(weights), len(weights), cores)
    slices: list[list[int]] = [[] for _ in range(tasks)]
    load = [0] * tasks
    for i in sorted(range(len(weights)), key=lambda i: -weights[i]):
        lightest = min(range(tasks), key=lambda t: (load[t], len(slices[t])))
        slices[lightest].append(i)
        load[lightest] += weights[i]
    return [s for s in slices if s]


def held(scanned: DataFrame, *, local: bool | None = None) -> tuple[DataFrame, Callable[[], None]]:
    """The scan output, kept for this stage (it is read three times), and how to let it go.

    In local mode the rows are kept as they come out of the scan (`localCheckpoint`: serialized row blocks,
    memory then disk) rather than in Spark's cache, which turns every row into columns and gathers bounds
    for every string column, then turns them back into rows for each write. On the 16M-line benchmark
    (A/B in one JVM) that took the JVM's task and GC CPU from ~12.4 s to ~10.4 s per run; rows kept as
    objects (the JVM's default for a checkpoint) saved as much task time but spent it again in G1's
    concurrent marking. A local checkpoint has no lineage, so a lost block fails the job instead of being
    recomputed; in local mode blocks are only lost with the driver itself, so nothing is given up. On a
    cluster an executor can be lost, so the scan is cached (`persist`) and recomputed where needed.
    `local` overrides what the master says (tests take both paths).
    """
    spark = scanned.sparkSession
    if local is None:
        local = (spark.sparkContext.master or "").startswith("local")
    if local:
        # PySpark's MEMORY_AND_DISK is the JVM's serialized MEMORY_AND_DISK_SER.
        checkpointed = scanned.localCheckpoint(eager=False, storageLevel=StorageLevel.MEMORY_AND_DISK)

        def release() -> None:
            # The checkpoint's blocks belong to the RDD under its plan, not to Spark's cache manager.
            checkpointed._jdf.queryExecution().analyzed().rdd().unpersist(False)

        return checkpointed, release
    # Compressing the cache (Spark's default) cost more CPU than any other part of the JVM's work (16M
    # benchmark lines: 19.5 s compressed, 16-17.5 s not, warm). The setting is taken when it is declared.
    with session_setting(spark, "spark.sql.inMemoryColumnarStorage.compressed", "false"):
        cached = scanned.persist(StorageLevel.MEMORY_AND_DISK)

    def uncache() -> None:
        cached.unpersist()

    return cached, uncache
