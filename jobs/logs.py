"""Logs stage: broker and client log files -> raw_log_lines + log_file_reads -> coordinator_events.

    python -m jobs.logs [--conf conf/local.toml]

Extract (driver, metadata only): the configured globs are listed; each file is known by its content
identity (`file_id`: cluster, source name and first line), so `server.log` renamed to `server.log.1` and
later compressed to `server.log.1.gz` is the same file. How far each identity was read comes from
log_file_reads (last line, and the byte offset just after it, of the last entry read).

Scan (executors, one task per file, one `mapInArrow` pass): the file is read in large blocks from the byte
after the recorded position (or by counting lines when that offset cannot be trusted) up to the size it
had when listed, so a scan computed again reads the same bytes (what a file gains meanwhile is the next
run's). Each block becomes one Arrow binary array of lines without any per-line Python object: line
splitting with NumPy, entry heads and coordinator markers with Arrow's RE2 kernels over the whole block,
multi-line entries grouped column-wise (heads -> segment bounds -> `reduceat`). The entries that look
like coordinator entries (a marker in any of their lines: the broker log-context prefixes and the
coordinator logger names, or a JSON-layout entry without a logger key) are cut out of the block as one
Arrow string array, and batches of them are classified column-wise by coordinator_core.logs.bulk (RE2
over Arrow arrays, the catalogue indexed by literal prefix; the entries it cannot read exactly like the
reference parser go through coordinator_core.classify_log_entry one by one), in the same task. Files
written by a container runtime (CRI, docker json, compose/kubectl prefixes) go through coordinator_core's
reference reader instead. The last entry of an active (not rotated) file is held back: its stack trace
may still be being written; it is read when the file grows or once it is rotated.

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
them, `reclassified_without_replacements`).

The run summary counts per file the entries that look like coordinator entries but match no catalogue
row (`unparsed`), with their first line numbers. A run that dies after appending raw_log_lines but before
log_file_reads is rolled back by the nightly job's recovery (all three tables are the stage's writes).

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
(compressing it cost ~3 s of a ~19 s run), see `_held`; and log_file_reads is written from the file rows
already on the driver.
"""

from __future__ import annotations

import argparse
import datetime as dt
import glob
import gzip
import hashlib
import io
import os
import re
import sys
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from coordinator_core.logs import CONTAINER_PREFIXES
from jobs.common.config import PROJECT_ROOT, ConfigError, LogsConfig, LogSource, load_job_config, parse_config
from jobs.common.delta_io import Tables, write_together
from jobs.common.run_lock import EXIT_WAREHOUSE_CLAIMED, RunClaim, WarehouseClaimed, metastore_refusal
from jobs.common.session import build_session, session_setting
from schemas.logs import COORDINATOR_EVENTS, LOG_FILE_READS, RAW_LOG_LINES

# -- configuration ------------------------------------------------------------------------------------


def parse_log_sources(data: list[dict[str, Any]], root: Path = PROJECT_ROOT) -> tuple[LogSource, ...]:
    """`[[sources.logs]]` entries (already-parsed TOML) -> LogSource, strictly (unknown keys are errors),
    through the project's config loader so the rules are the same as in a configuration file."""
    if not isinstance(data, list):
        raise ConfigError("sources.logs: expected an array of tables ([[sources.logs]])")
    return parse_config({"sources": {"mode": "none", "logs": data}}, root=root).sources.logs


# -- extract: which files, which identity, from which line ---------------------------------------------

#: A file whose name says it was rotated (`server.log.1`, `server.log.2024-05-01-10`, `*.gz`): complete,
#: so its last entry is read too. Every other file is active.
_ROTATED_NAME = re.compile(r"(?:\.log\.[^/]+|\.gz)$")
_FIRST_LINE_LIMIT = 65536


@dataclass(frozen=True)
class LogFile:
    """A listed file. One that cannot be read (`not_read`: "unreadable", or "waiting" for an active file
    without a complete first line yet) has no content identity: its `file_id` is its path's (see
    `_path_identity`), and `reason` says why."""

    cluster: str
    source: str
    path: str
    file_id: str
    rotated: bool
    zone: str
    broker_id: int | None
    container_layout: bool = False
    size: int = 0
    not_read: str | None = None
    reason: str | None = None


def _open_binary(path: str) -> Any:
    return gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")


#: What reading a damaged or vanished file raises: OSError (gzip's BadGzipFile among them), EOFError (a .gz
#: cut short) and zlib.error (a corrupt deflate stream).
_READ_ERRORS = (OSError, EOFError, zlib.error)


def read_available(handle: Any, size: int) -> tuple[bytes, BaseException | None]:
    """Up to `size` bytes of `handle`, and the error that stopped the read before (None at the end of the
    file or once `size` bytes are read).

    A .gz cut short (a full disk, a copy that stopped) raises at the cut, and `read(size)` then loses every
    byte it had decompressed for the call; `read1` hands over what each step decompressed, so every byte
    before the cut is kept. On a plain file `read1` of a large size is one system call, like `read`.
    """
    parts: list[bytes] = []
    got = 0
    try:
        while got < size:
            chunk = handle.read1(min(size - got, 8 << 20))
            if not chunk:
                break
            parts.append(chunk)
            got += len(chunk)
    except _READ_ERRORS as error:
        return b"".join(parts), error
    return b"".join(parts), None


def _error_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _stopped_at(path: str, position: int, error: BaseException) -> str:
    """The read_error of a read that stopped at uncompressed byte `position` (the bytes before are read)."""
    where = "truncated or corrupt gzip" if path.endswith(".gz") else "read failed"
    return f"{where} at uncompressed byte {position}: {_error_text(error)}"


def _unnamed(java_pattern: str) -> str:
    """A catalogue pattern with its named groups made plain (one alternation may repeat a name; RE2 and
    Python refuse that)."""
    return re.sub(r"\(\?P?<[A-Za-z]\w*>", "(?:", java_pattern)


#: Container-runtime line prefixes (coordinator_core's CONTAINER_PREFIXES, docker's json-file records).
_CONTAINER_LINE = re.compile(
    "|".join(f"(?:{_unnamed(p)})" for _, p in CONTAINER_PREFIXES) + r'|^\{"log":', re.MULTILINE
)


def _first_bytes(path: str) -> tuple[bytes, str | None]:
    """The file's first 64 KiB (fewer when it is shorter or cut short), and why the read stopped before, if
    it did (a .gz cut within them still has its first line read)."""
    try:
        with _open_binary(path) as handle:
            head, error = read_available(handle, _FIRST_LINE_LIMIT)
    except _READ_ERRORS as error:  # could not even be opened
        return b"", _error_text(error)
    return head, None if error is None else _error_text(error)


def _identity_of(cluster: str, source: str, head: bytes | None) -> str | None:
    if head is None:
        return None
    cut = head.find(b"\n")
    if cut < 0 and len(head) < _FIRST_LINE_LIMIT:
        return None  # no complete first line yet
    first = head if cut < 0 else head[:cut]
    digest = hashlib.sha256(b"\0".join([cluster.encode(), source.encode(), first.rstrip(b"\r\n")]))
    return digest.hexdigest()[:32]


def file_identity(cluster: str, source: str, path: str) -> str | None:
    """Content identity of a log file, or None while it has no complete first line."""
    return _identity_of(cluster, source, _first_bytes(path)[0])


def _path_identity(cluster: str, source: str, path: str) -> str:
    """The identity of a file with no first line to be known by: its path and inode (a new file at the same
    path, after a rotation, is another file), marked so that it never equals a content identity."""
    try:
        inode = os.stat(path).st_ino
    except OSError:
        inode = 0
    digest = hashlib.sha256(b"\0".join([b"path", cluster.encode(), source.encode(), os.fsencode(path),
                                        str(inode).encode()]))
    return "path:" + digest.hexdigest()[:27]


def _why_not_read(head: bytes, error: str | None, rotated: bool) -> tuple[str, str]:
    """(status, reason) of a file without a complete first line.

    An active file may simply not have one yet (a broker that just started, a log4j rotation a moment
    ago): it is `waiting`, not in error, and read once it has. A rotated file will not grow, and a file that
    cannot be read will not get better by waiting: `unreadable`.
    """
    if error is not None and not head:
        return "unreadable", f"cannot be read: {error}"
    if error is not None:
        return "unreadable", f"no complete first line in the {len(head)} bytes read before the read failed: {error}"
    if rotated:
        return "unreadable", f"no complete first line ({len(head)} bytes) in a rotated file, which will not grow"
    return "waiting", f"no complete first line yet ({len(head)} bytes)"


def list_log_files(sources: Sequence[LogSource]) -> list[LogFile]:
    """The files of every source, one per identity (a plain copy preferred over a `.gz` of the same file).

    The first 64 KiB of each file give its identity and whether a container runtime wrote it. A file
    without a complete first line in them (or that cannot be read) is listed too, with `not_read` and
    `reason` (see `_why_not_read`): every file listed gets accounted for in log_file_reads.
    """
    by_identity: dict[tuple[str, str], LogFile] = {}
    for source in sources:
        paths = sorted({p for pattern in source.paths for p in glob.glob(pattern) if os.path.isfile(p)})
        for path in paths:
            head, error = _first_bytes(path)
            rotated = bool(_ROTATED_NAME.search(path))
            broker_id = None if source.broker_id < 0 else source.broker_id
            try:
                size = os.path.getsize(path)
            except OSError:
                size = 0
            file_id = _identity_of(source.cluster, source.source, head)
            if file_id is None:
                not_read, reason = _why_not_read(head, error, rotated)
                file_id = _path_identity(source.cluster, source.source, path)
                by_identity[(source.cluster, file_id)] = LogFile(
                    source.cluster, source.source, path, file_id, rotated, source.zone, broker_id, size=size,
                    not_read=not_read, reason=reason,
                )
                continue
            found = LogFile(
                source.cluster,
                source.source,
                path,
                file_id,
                rotated,
                source.zone,
                broker_id,
                _CONTAINER_LINE.search(head.decode("utf-8", "replace")) is not None,
                size,
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


def archived_positions(log_file_reads: DataFrame) -> DataFrame:
    """(cluster, file_id, last_line, end_byte, status, read_error, first_line): how far each file was read,
    and what its latest row says (a row without lines comes after the read it follows: same last_line,
    later first_line)."""
    latest = F.max_by(F.struct("end_byte", "status", "read_error", "first_line"), F.struct("last_line", "first_line"))
    return log_file_reads.groupBy("cluster", "file_id").agg(
        F.max("last_line").alias("last_line"), latest.alias("latest")
    ).select("cluster", "file_id", "last_line", "latest.*")


# -- scan: files -> entries -> coordinator-looking entries, classified, on the executors ----------------

#: Bytes read per block; a block's complete lines become one Arrow array.
READ_BLOCK_BYTES = 8 << 20


def coordinator_markers() -> tuple[str, ...]:
    """Texts of which every coordinator-looking entry holds at least one (the pre-filter).

    The broker log-context prefixes, the class names of the coordinator loggers and kafka-python's
    coordinator loggers; a marker that contains another is dropped (`GroupCoordinatorShard` is found by
    `GroupCoordinator`).
    """
    from coordinator_core.logs import KAFKA_PYTHON_LOGGERS
    from coordinator_core.logs.catalogue import COORDINATOR_LOGGERS

    markers = {
        "[GroupCoordinator ",
        "[GroupMetadataManager brokerId=",
        "[Group Metadata Manager on Broker ",
        "CoordinatorRuntime",
        *(name.rstrip("$") for name in COORDINATOR_LOGGERS),
        # kafka-python's loggers, as Python logging layouts print them: "(name)" at the end of the line
        # or " name " between the level and the message
        *(f"({name})" for name in KAFKA_PYTHON_LOGGERS),
        *(f" {name} " for name in KAFKA_PYTHON_LOGGERS),
    }
    return tuple(sorted(m for m in markers if not any(o != m and o in m for o in markers)))


def marker_pattern() -> str:
    """One RE2 alternation of the markers (RE2 runs it as a DFA: one pass over each line)."""
    return "|".join(re.escape(m) for m in coordinator_markers())


@dataclass
class FileScan:
    """How far a scan of one file got: the position to record and what was seen on the way.

    Attributes:
        first_line: first physical line of this read (the line after the recorded position).
        last_line: last physical line of the last entry read (`first_line - 1` when none was).
        end_byte: offset just after `last_line` in the (uncompressed) file, where the next read seeks to;
            None when unknown (container-runtime files, which are re-read and skipped by line number).
        entries: entries read (complete ones; an active file's last entry is held back).
        read_error: why the read stopped before the end (a .gz cut short: at which uncompressed byte).
        malformed_lines, overlong_lines, invalid_utf8_lines: damaged lines among those read (see
            `damaged_lines`).
    """

    first_line: int
    last_line: int
    end_byte: int | None
    entries: int = 0
    read_error: str | None = None
    malformed_lines: int = 0
    overlong_lines: int = 0
    invalid_utf8_lines: int = 0


#: FileScan's counts of damaged lines, in the order `damaged_lines` finds them.
_DAMAGE_COUNTERS = ("malformed_lines", "overlong_lines", "invalid_utf8_lines")
#: The control bytes text lines hold: tab, newline, carriage return, escape (terminal colours). Any other
#: byte below 0x20 in a line makes it binary garbage.
_TEXT_CONTROLS = (9, 10, 13, 27)


def damaged_lines(data: bytes, offsets: Any, max_line_bytes: int, controls: Any = None) -> tuple[Any, Any, Any]:
    """Indices of the damaged lines of a block, by kind: malformed (a control byte other than tab, CR or
    ESC: binary garbage), over-long (more than `max_line_bytes` bytes before its newline), not UTF-8.

    Line i is data[offsets[i]:offsets[i + 1]], its newline included (the file's last line may have none). A
    line may be of several kinds. `controls`: the positions of the block's control bytes, when the caller
    already has them. A clean block (nearly every one) costs a comparison over its bytes and Arrow's UTF-8
    validation; only the lines holding a byte above 0x7F are decoded one by one, and only if the block
    fails validation.
    """
    import numpy as np
    import pyarrow as pa

    start, end = int(offsets[0]), int(offsets[-1])
    view = np.frombuffer(data, np.uint8)
    if controls is None:
        controls = np.flatnonzero(view[start:end] < 32) + start
    controls = controls[(controls >= start) & (controls < end)]
    controls = controls[~np.isin(view[controls], _TEXT_CONTROLS)]
    malformed = np.unique(np.searchsorted(offsets, controls, side="right") - 1)
    lengths = np.diff(offsets)
    overlong = np.flatnonzero(lengths - (view[offsets[1:] - 1] == 10) > max_line_bytes)
    lines = pa.Array.from_buffers(
        pa.binary(), len(lengths), [None, pa.py_buffer((offsets - start).astype(np.int32)),
                                    pa.py_buffer(memoryview(data)[start:end])]
    )
    invalid = np.zeros(0, np.int64)
    try:
        lines.cast(pa.string())
    except pa.ArrowInvalid:
        high = np.unique(np.searchsorted(offsets, np.flatnonzero(view[start:end] > 127) + start, side="right") - 1)
        invalid = np.array([i for i in high.tolist() if not _is_utf8(data[offsets[i] : offsets[i + 1]])], np.int64)
    return malformed, overlong, invalid


def _is_utf8(line: bytes) -> bool:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def cut_long_lines(texts: Any, max_line_bytes: int) -> Any:
    """Entry texts (an Arrow string array) with every line longer than `max_line_bytes` bytes cut to at most
    that many, on a character boundary; the array itself when no entry is that long (nearly always)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if len(texts) == 0:
        return texts
    lengths = pc.binary_length(texts)
    if pc.max(lengths).as_py() <= max_line_bytes:
        return texts
    long_rows = pc.greater(lengths, max_line_bytes)
    cut = [
        "\n".join(line.encode()[:max_line_bytes].decode("utf-8", "ignore") for line in text.split("\n"))
        for text in texts.filter(long_rows).to_pylist()
    ]
    return pc.replace_with_mask(texts, long_rows, pa.array(cut, pa.string()))


@dataclass
class _Pending:
    """The entry the last block ended in: it may continue in the next block."""

    line_number: int
    byte_offset: int
    chunks: list[bytes]
    line_count: int
    candidate: bool


def _entry_text(data: bytes) -> str:
    """An entry's physical lines (with their newlines) -> its text: lines joined by \\n, no trailing \\r."""
    text = data.decode("utf-8", "replace")
    if text.endswith("\n"):
        text = text[:-1]
    if "\r" in text:
        text = "\n".join(line.rstrip("\r") for line in text.split("\n"))
    return text


def _piece(data: bytes, offsets: Any, first: int, end: int) -> bytes:
    """Lines `first` to `end` (exclusive) of a block, with their newlines."""
    return data[int(offsets[first]) : int(offsets[end])]


def _segment_starts(heads: Any, n: int, pending_lines: int | None, max_lines: int) -> Any:
    """Entry starts within a block of `n` lines: its heads, plus a start at 0 when no entry is pending
    (the read begins mid-entry), plus the cuts that keep every entry at most `max_lines` long."""
    import numpy as np

    starts = heads if pending_lines is not None or (len(heads) and heads[0] == 0) else np.concatenate(
        [np.zeros(1, np.int64), heads]
    )
    bounds = np.append(starts, n)
    prefix = int(bounds[0])  # lines that continue the pending entry
    over_prefix = pending_lines is not None and pending_lines + prefix > max_lines
    if not over_prefix and not (np.diff(bounds) > max_lines).any():
        return starts
    cuts: list[int] = []
    if over_prefix:
        assert pending_lines is not None
        cuts.extend(range(max_lines - pending_lines, prefix, max_lines))
    for start, end in zip(starts.tolist(), bounds[1:].tolist(), strict=True):
        cuts.extend(range(start + max_lines, end, max_lines))
    return np.unique(np.concatenate([starts, np.array(cuts, np.int64)]))


def scan_log_file(
    path: str,
    scan: FileScan,
    hold_back_last: bool,
    *,
    all_entries: bool = False,
    block_bytes: int = READ_BLOCK_BYTES,
    read_until: int | None = None,
    max_line_bytes: int = LogsConfig.max_line_bytes,
) -> Iterator[tuple[list[int], list[int], list[str]]]:
    """The coordinator-looking entries (every entry with `all_entries`) after `scan.last_line`, in the
    file's first `read_until` bytes when given (the size it had when listed; see `scan_log_file_columns`).

    Yields (line numbers, line counts, texts) per block and advances `scan`. Lines are joined into entries
    exactly like `coordinator_core.iter_log_entries`: a line that is no entry head continues the entry
    before it, at most MAX_ENTRY_LINES lines per entry; lines end at \\n, trailing \\r removed.
    """
    for numbers, counts, texts in scan_log_file_columns(path, scan, hold_back_last, all_entries=all_entries,
                                                         block_bytes=block_bytes, read_until=read_until,
                                                         max_line_bytes=max_line_bytes):
        yield numbers.tolist(), counts.tolist(), texts.to_pylist()


def _entry_texts(data: bytes, offsets: Any, starts: Any, chosen: Any) -> Any:
    """The texts of the chosen complete entries of a block, as one Arrow string array (no per-entry
    Python object): entry i spans lines starts[i] to starts[i + 1]; texts as `_entry_text` makes them."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    base = int(offsets[starts[0]])
    bounds = (offsets[starts] - base).astype(np.int32)
    segments = pa.Array.from_buffers(
        pa.binary(), len(starts) - 1, [None, pa.py_buffer(bounds), pa.py_buffer(memoryview(data)[base:])]
    )
    entries = pc.binary_slice(segments.take(pa.array(chosen)), 0, -1)  # every complete entry ends in a newline
    try:
        texts = entries.cast(pa.string())
    except pa.ArrowInvalid:  # not UTF-8: decoded with replacement characters, one by one
        return pa.array([_entry_text(bytes(b) + b"\n") for b in entries.to_pylist()], pa.string())
    carriage = pc.match_substring(entries, "\r").to_numpy(zero_copy_only=False)
    if carriage.any():
        rows = np.flatnonzero(carriage)
        fixed = pa.array([_entry_text(entries[int(i)].as_py() + b"\n") for i in rows], pa.string())
        position = np.full(len(texts), -1, np.int64)
        position[rows] = np.arange(len(rows))
        texts = pc.if_else(pa.array(carriage), pc.take(fixed, pa.array(position, mask=position < 0)), texts)
    return texts


def scan_log_file_columns(
    path: str,
    scan: FileScan,
    hold_back_last: bool,
    *,
    all_entries: bool = False,
    block_bytes: int = READ_BLOCK_BYTES,
    read_until: int | None = None,
    max_line_bytes: int = LogsConfig.max_line_bytes,
) -> Iterator[tuple[Any, Any, Any]]:
    """`scan_log_file` with columns: (line numbers, line counts) as NumPy arrays, texts as an Arrow string
    array, per block; what the scan task reads (no Python object per entry).

    `read_until` stops the read at that byte of the file even if it has grown since: a scan computed again
    (its cached output lost with an executor) then reads the same bytes as the first time, so the two
    appends and the recorded position agree. A line cut there reads as the file's last line, which an
    active file holds back with its entry.

    A .gz cut short (or a file whose read fails midway) is read up to the cut: its complete lines are read
    as the file's last (the line cut in the middle is no line) and `scan.read_error` says where it stopped;
    reading it again stops at the same byte. The damaged lines read are counted in `scan` (`damaged_lines`;
    texts are cut to `max_line_bytes` by the caller, see `cut_long_lines`).
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from coordinator_core.logs import HEAD_PATTERN
    from coordinator_core.logs.parser import MAX_ENTRY_LINES

    head_pattern, markers = _unnamed(HEAD_PATTERN), marker_pattern()
    skip_lines = scan.last_line
    with _open_binary(path) as handle:
        base_line, base_byte = 1, 0  # line number and file offset of the block's first line
        if scan.end_byte and _is_line_end(handle, scan.end_byte):
            base_line, base_byte = skip_lines + 1, scan.end_byte
        pending: _Pending | None = None
        rest = b""
        position = base_byte  # where the handle is
        # Line numbers of damaged lines past scan.last_line (in the entry still pending), by kind.
        damaged: list[Any] = [np.zeros(0, np.int64)] * len(_DAMAGE_COUNTERS)

        def count_damaged_lines_read() -> None:
            for kind, name in enumerate(_DAMAGE_COUNTERS):
                read = damaged[kind] <= scan.last_line
                setattr(scan, name, getattr(scan, name) + int(read.sum()))
                damaged[kind] = damaged[kind][~read]

        while True:
            want = block_bytes if read_until is None else min(block_bytes, read_until - position)
            block, error = read_available(handle, want) if want > 0 else (b"", None)
            position += len(block)
            data = rest + block
            if error is not None:
                scan.read_error = _stopped_at(path, position, error)
                data, rest, block = data[: data.rfind(b"\n") + 1], b"", b""
                if not data:
                    break
            elif block:
                cut = data.rfind(b"\n") + 1
                if cut == 0:
                    rest = data
                    continue
                data, rest = data[:cut], data[cut:]
            elif not data:
                break
            else:
                rest = b""
            view = np.frombuffer(data, np.uint8)
            controls = np.flatnonzero(view < 32)  # the newlines, and the control bytes of damaged lines
            ends = controls[view[controls] == 10] + 1
            if len(ends) == 0 or ends[-1] != len(data):
                ends = np.append(ends, len(data))  # the file's last line has no newline
            offsets = np.zeros(len(ends) + 1, np.int64)
            offsets[1:] = ends
            n = len(ends)
            drop = min(n, max(0, skip_lines + 1 - base_line))  # lines already read (counting, no seek)
            block_line, block_byte = base_line + drop, base_byte + int(offsets[drop])
            base_line, base_byte = base_line + n, base_byte + len(data)
            if drop == n:
                if not block:
                    break
                continue
            offsets = offsets[drop:]
            n -= drop
            for kind, lines_of_kind in enumerate(damaged_lines(data, offsets, max_line_bytes, controls)):
                if len(lines_of_kind):
                    damaged[kind] = np.concatenate([damaged[kind], block_line + lines_of_kind])
            lines = pa.Array.from_buffers(
                pa.binary(), n, [None, pa.py_buffer((offsets - offsets[0]).astype(np.int32)),
                                 pa.py_buffer(memoryview(data)[int(offsets[0]):])]
            )
            heads = np.flatnonzero(pc.match_substring_regex(lines, head_pattern).to_numpy(zero_copy_only=False))
            if all_entries:
                flags = np.ones(n, bool)
            else:
                marked = pc.match_substring_regex(lines, markers)
                json_heads = pc.starts_with(lines, "{")
                if pc.any(json_heads).as_py():
                    marked = pc.or_(marked, pc.and_(json_heads, pc.invert(pc.match_substring(lines, "logger"))))
                flags = marked.to_numpy(zero_copy_only=False)
            starts = _segment_starts(heads, n, None if pending is None else pending.line_count, MAX_ENTRY_LINES)
            numbers: list[Any] = []
            counts: list[Any] = []
            texts: list[Any] = []

            prefix = int(starts[0]) if len(starts) else n
            if pending is not None and prefix:
                pending.chunks.append(_piece(data, offsets, 0, prefix))
                pending.line_count += prefix
                pending.candidate = pending.candidate or bool(flags[:prefix].any())
            if len(starts) == 0:
                continue
            if pending is not None:
                scan.entries += 1
                scan.last_line, scan.end_byte = block_line - 1 + prefix, block_byte + int(offsets[prefix] - offsets[0])
                if pending.candidate:
                    numbers.append(np.array([pending.line_number], np.int64))
                    counts.append(np.array([pending.line_count], np.int64))
                    texts.append(pa.array([_entry_text(b"".join(pending.chunks))], pa.string()))
            complete = starts[:-1]
            if len(complete):
                lengths = np.diff(starts)
                chosen = np.flatnonzero(np.logical_or.reduceat(flags, starts)[:-1])
                if len(chosen):
                    numbers.append(block_line + complete[chosen].astype(np.int64))
                    counts.append(lengths[chosen].astype(np.int64))
                    texts.append(_entry_texts(data, offsets, starts, chosen))
                scan.entries += len(complete)
                last = int(starts[-1])
                scan.last_line, scan.end_byte = block_line + last - 1, block_byte + int(offsets[last] - offsets[0])
            last = int(starts[-1])
            pending = _Pending(block_line + last, block_byte + int(offsets[last] - offsets[0]),
                               [_piece(data, offsets, last, n)], n - last, bool(flags[last:].any()))
            count_damaged_lines_read()
            if numbers:
                yield np.concatenate(numbers), np.concatenate(counts), pa.concat_arrays(texts)
            if not block:
                break
    if pending is not None and not hold_back_last:
        scan.entries += 1
        scan.last_line = pending.line_number + pending.line_count - 1
        scan.end_byte = pending.byte_offset + sum(len(c) for c in pending.chunks)
        count_damaged_lines_read()
        if pending.candidate:
            yield (np.array([pending.line_number], np.int64), np.array([pending.line_count], np.int64),
                   pa.array([_entry_text(b"".join(pending.chunks))], pa.string()))


def _is_line_end(handle: Any, offset: int) -> bool:
    """Whether `offset` is just after a newline of the file (a recorded position still fits the file).

    Leaves the handle at `offset` when it is, at the start of the file when it is not (a `.gz` handle
    decompresses on seek, so it is not moved twice).
    """
    try:
        handle.seek(offset - 1)
        if handle.read(1) == b"\n":
            return True
        handle.seek(0)
    except _READ_ERRORS:
        handle.seek(0)
    return False


def scan_container_file(
    path: str, scan: FileScan, hold_back_last: bool, *, all_entries: bool = False, read_until: int | None = None,
    max_line_bytes: int = LogsConfig.max_line_bytes,
) -> Iterator[tuple[list[int], list[int], list[str]]]:
    """coordinator_core's reference reader, for files whose lines carry container-runtime prefixes; no
    further than `read_until` bytes when given, up to the cut of a .gz cut short, damaged lines counted (as
    `scan_log_file_columns`)."""
    import numpy as np

    from coordinator_core.logs import iter_log_entries

    marker_texts = coordinator_markers()
    with _open_binary(path) as raw:
        data, error = read_available(raw, sys.maxsize if read_until is None else read_until)
    if error is not None:
        scan.read_error = _stopped_at(path, len(data), error)
        data = data[: data.rfind(b"\n") + 1]
    read_before = scan.last_line
    # Decoded as a text-mode open() would: UTF-8 with replacement, universal newlines.
    with io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace") as handle:
        entries = [e for e in iter_log_entries(handle) if e.line_number > scan.last_line]
    if hold_back_last and entries:
        entries.pop()
    scan.end_byte = None
    if entries:
        scan.entries += len(entries)
        scan.last_line = entries[-1].line_number + entries[-1].line_count - 1
    if scan.last_line > read_before:
        ends = np.flatnonzero(np.frombuffer(data, np.uint8) == 10) + 1
        if not len(ends) or ends[-1] != len(data):
            ends = np.append(ends, len(data))  # the last line has no newline
        offsets = np.concatenate([np.zeros(1, np.int64), ends])
        for name, lines_of_kind in zip(_DAMAGE_COUNTERS, damaged_lines(data, offsets, max_line_bytes), strict=True):
            numbers = lines_of_kind + 1
            read = int(((numbers > read_before) & (numbers <= scan.last_line)).sum())
            setattr(scan, name, getattr(scan, name) + read)
    chosen = [
        e for e in entries
        if all_entries or any(m in e.text for m in marker_texts)
        or (e.text.startswith("{") and "logger" not in e.text)
    ]
    for start in range(0, len(chosen), 10000):
        chunk = chosen[start : start + 10000]
        yield [e.line_number for e in chunk], [e.line_count for e in chunk], [e.text for e in chunk]


#: One row per file to scan (the input of the scan task).
_FILE_COLUMNS = T.StructType(
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
_FILE_COUNTERS = ("entries", "archived_entries", "events", "known_non_events", "unparsed", "unparsed_below_info")
#: What the scan task emits: `row_kind` "entry" rows (an archived entry, its classification and event
#: fields) and one "file" row per file (position and counters). Internal, never a table.
SCAN_COLUMNS = T.StructType(
    [
        *(f for f in _FILE_COLUMNS.fields if f.name not in ("last_line", "end_byte", "hold_back_last",
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
        *(T.StructField(name, T.LongType(), True) for name in _FILE_COUNTERS),
        T.StructField("unparsed_lines", T.ArrayType(T.LongType(), False), True),
        T.StructField("read_error", T.StringType(), True),
        # log_file_reads' status (`status` above is an entry's classification)
        T.StructField("read_status", T.StringType(), True),
        *(T.StructField(name, T.LongType(), True) for name in _DAMAGE_COUNTERS),
    ]
)
#: How many unparsed line numbers a file's summary keeps.
UNPARSED_LINES_KEPT = 5


#: Entries classified together: the fast path works column-wise, so larger batches cost less per entry.
CLASSIFY_BATCH = 32768


#: What an entry is classified as, when the entry without its replacement characters says more.
_UNPARSED_STATUSES = ("unparsed", "unparsed_below_info")
_PARSED_STATUSES = ("event", "known_non_event")


def reclassified_without_replacements(outcome: Any, texts: Any, classify: Callable[[Any], Any]) -> Any:
    """The classification of a batch of entries, where an entry with a replacement character (an invalid
    UTF-8 byte, decoded with U+FFFD) that did not parse is classified again without them.

    One stray byte in an otherwise intact line (a bit flip, a torn write) breaks the word it lands in
    ("Stabili\ufffdzed"); without it the line reads as written. The second reading is kept only when it
    parses (an event or a known non-event); the archived text keeps the replacement characters.

    Args:
        outcome: `classify(texts)` (a RecordBatch with `status` and the event's fields).
        texts: the entries' texts (an Arrow string array).
        classify: Arrow string array -> such a RecordBatch.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    retry = pc.and_(pc.match_substring(texts, "\ufffd"), pc.is_in(outcome.column("status"),
                                                                 pa.array(_UNPARSED_STATUSES)))
    rows = np.flatnonzero(retry.to_numpy(zero_copy_only=False))
    if not len(rows):
        return outcome
    again = classify(pc.replace_substring(texts.take(pa.array(rows)), "\ufffd", ""))
    parsed = np.flatnonzero(pc.is_in(again.column("status"), pa.array(_PARSED_STATUSES)).to_numpy(zero_copy_only=False))
    if not len(parsed):
        return outcome
    index = np.arange(len(texts))
    index[rows[parsed]] = len(texts) + parsed
    return pa.RecordBatch.from_arrays(
        [pa.concat_arrays([outcome.column(i), again.column(i)]).take(pa.array(index))
         for i in range(outcome.num_columns)],
        schema=outcome.schema,
    )


def _read_status(scan: FileScan, raised: bool) -> str:
    """log_file_reads' status of a scan (see the column's comment)."""
    if raised and scan.last_line < scan.first_line:
        return "unreadable"  # failed before any line was read (vanished, or no longer readable)
    if raised or scan.read_error is not None or any(getattr(scan, name) for name in _DAMAGE_COUNTERS):
        return "read_with_errors"
    return "read"


def _scan_files_fn(all_entries: bool, block_bytes: int,
                   max_line_bytes: int) -> Callable[[Iterable[Any]], Iterable[Any]]:
    def scan_partition(batches: Iterable[Any]) -> Iterator[Any]:
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        from coordinator_core.logs.bulk import classify_log_entries
        from coordinator_core.logs.envelope import zone_of

        arrow_schema = to_arrow_schema(SCAN_COLUMNS, timestamp_utc=True, prefers_large_types=False)
        event_names = [f.name for f in _EVENT_FIELDS]
        constant_names = [f.name for f in _FILE_COLUMNS.fields][:6]
        counter_of_status = {"event": "events", "known_non_event": "known_non_events", "unparsed": "unparsed",
                             "unparsed_below_info": "unparsed_below_info"}

        def batch_of(columns: dict[str, Any], rows: int, constants: dict[str, Any]) -> Any:
            arrays = []
            for arrow_field in arrow_schema:
                values = columns.get(arrow_field.name)
                if values is None:
                    values = pa.repeat(pa.scalar(constants.get(arrow_field.name), arrow_field.type), rows)
                elif not isinstance(values, pa.Array):
                    values = pa.array(values, arrow_field.type)
                arrays.append(values.cast(arrow_field.type))
            return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)

        def joined(blocks: list[tuple[Any, Any, Any]]) -> tuple[Any, Any, Any]:
            return (np.concatenate([b[0] for b in blocks]), np.concatenate([b[1] for b in blocks]),
                    pa.concat_arrays([b[2] for b in blocks]))

        def classified(
            numbers: Any,
            counts: Any,
            text_array: Any,
            file: dict[str, Any],
            counters: dict[str, int],
            unparsed_lines: list[int],
        ) -> Any:
            """One batch of archived entries, classified column-wise (coordinator_core.logs.bulk)."""
            zone = zone_of(file["source_zone"])
            text_array = cut_long_lines(text_array, max_line_bytes)
            classify = partial(classify_log_entries, source_zone=zone, broker_id=file["source_broker_id"])
            outcome = reclassified_without_replacements(classify(text_array), text_array, classify)
            status = outcome.column("status")
            for value, count in zip(*pc.value_counts(status).flatten(), strict=True):
                if value.as_py() in counter_of_status:
                    counters[counter_of_status[value.as_py()]] += count.as_py()
            if len(unparsed_lines) < UNPARSED_LINES_KEPT:
                unparsed = np.flatnonzero(pc.equal(status, "unparsed").to_numpy(zero_copy_only=False))
                unparsed_lines.extend(int(numbers[i]) for i in unparsed[: UNPARSED_LINES_KEPT - len(unparsed_lines)])
            counters["archived_entries"] += len(numbers)
            is_event = pc.equal(status, "event")
            events = {name: outcome.column(name) for name in event_names}
            # a known non-event keeps its line kind in the outcome; the scan rows carry it for events only
            events["line_kind"] = pc.if_else(is_event, events["line_kind"], pa.scalar(None, pa.string()))
            return batch_of(
                {"row_kind": pa.repeat(pa.scalar("entry"), len(numbers)), "line_number": pa.array(numbers, pa.int64()),
                 "line_count": pa.array(counts, pa.int32()), "text": text_array, "status": status, **events},
                len(numbers), {name: file[name] for name in constant_names},
            )

        for files in batches:
            for file in files.to_pylist():
                scan = FileScan(file["last_line"] + 1, file["last_line"], file["end_byte"])
                counters = dict.fromkeys(_FILE_COUNTERS, 0)
                unparsed_lines: list[int] = []
                blocks = (
                    (
                        (np.array(n, np.int64), np.array(c, np.int64), pa.array(t, pa.string()))
                        for n, c, t in scan_container_file(file["path"], scan, file["hold_back_last"],
                                                           all_entries=all_entries, read_until=file["read_until"],
                                                           max_line_bytes=max_line_bytes)
                    )
                    if file["container_layout"]
                    else scan_log_file_columns(file["path"], scan, file["hold_back_last"], all_entries=all_entries,
                                               block_bytes=block_bytes, read_until=file["read_until"],
                                               max_line_bytes=max_line_bytes)
                )
                raised = False
                pending: list[tuple[Any, Any, Any]] = []
                try:
                    for block in blocks:
                        pending.append(block)
                        if sum(len(b[0]) for b in pending) >= CLASSIFY_BATCH:
                            yield classified(*joined(pending), file, counters, unparsed_lines)
                            pending = []
                except _READ_ERRORS as error:  # vanished or unreadable file (a cut .gz ends its read itself)
                    # What was read before stays read: `scan` only ever covers entries already handed over.
                    raised = True
                    scan.read_error = _error_text(error)
                if pending:
                    yield classified(*joined(pending), file, counters, unparsed_lines)
                counters["entries"] = scan.entries
                yield batch_of(
                    {"row_kind": ["file"], "first_line": [scan.first_line], "last_line": [scan.last_line],
                     "end_byte": [scan.end_byte], **{name: [value] for name, value in counters.items()},
                     "unparsed_lines": [unparsed_lines], "read_error": [scan.read_error],
                     "read_status": [_read_status(scan, raised)],
                     **{name: [getattr(scan, name)] for name in _DAMAGE_COUNTERS}},
                    1, {name: file[name] for name in constant_names},
                )

    return scan_partition


def scan_log_files(files_to_read: DataFrame, *, all_entries: bool = False,
                   block_bytes: int = READ_BLOCK_BYTES, max_line_bytes: int = LogsConfig.max_line_bytes) -> DataFrame:
    """_FILE_COLUMNS rows (one partition per file) -> SCAN_COLUMNS rows: archived entries and file rows."""
    return files_to_read.select(*_FILE_COLUMNS.names).mapInArrow(
        _scan_files_fn(all_entries, block_bytes, max_line_bytes), SCAN_COLUMNS
    )


def _held(scanned: DataFrame, *, local: bool | None = None) -> tuple[DataFrame, Callable[[], None]]:
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


def raw_log_line_rows(scanned: DataFrame, run_id: str, started_at: dt.datetime) -> DataFrame:
    """Scan output -> raw_log_lines rows (the archived entries)."""
    return scanned.where(F.col("row_kind") == "entry").select(
        "cluster",
        "file_id",
        "line_number",
        "line_count",
        "text",
        "log_source",
        "path",
        F.col("source_broker_id").alias("broker_id"),
        "source_zone",
        F.lit(run_id).alias("ingest_run_id"),
        F.lit(started_at).cast("timestamp").alias("ingested_at"),
    )


def coordinator_event_rows(scanned: DataFrame, run_id: str) -> DataFrame:
    """Scan output -> coordinator_events rows (the entries that are events)."""
    return (
        scanned.where((F.col("row_kind") == "entry") & (F.col("status") == "event"))
        .withColumn("ingest_run_id", F.lit(run_id))
        .select(*COORDINATOR_EVENTS.column_names)
    )


def log_file_read_rows(file_rows: DataFrame, run_id: str, started_at: dt.datetime) -> DataFrame:
    """File rows of the scan output (those `worth_a_row`) -> log_file_reads rows."""
    return (
        file_rows.where(F.col("row_kind") == "file")
        .withColumn("lines_read", F.col("last_line") - F.col("first_line") + 1)
        .drop("status")
        .withColumnRenamed("read_status", "status")
        .withColumn("ingest_run_id", F.lit(run_id))
        .withColumn("ingested_at", F.lit(started_at).cast("timestamp"))
        .select(*LOG_FILE_READS.column_names)
    )


def worth_a_row(read: dict[str, Any], latest: dict[str, Any] | None) -> bool:
    """Whether a file's read gets a log_file_reads row this run.

    The table's grain is (cluster, file_id, first_line) and a read starts after the last_line of the
    file's latest row. A read of new lines always gets a row. A read of none gets one only when it has
    something to say (a status other than `read`: cut short, unreadable, waiting) that the file's latest
    row does not say already (another status or reason), and when that latest row is not itself a row
    without lines at this position (it would have this row's first_line). So a file that stays unreadable,
    waiting or cut at the same byte is recorded once, not every night, and re-runs add nothing; a file that
    changes (becomes readable, grows, or is cut elsewhere) is recorded when it is read.

    Args:
        read: a file row of the scan (SCAN_COLUMNS).
        latest: the file's latest log_file_reads row (status, read_error, first_line), None without one.
    """
    if read["last_line"] >= read["first_line"]:
        return True
    if read["read_status"] == "read":
        return False
    if latest is None:
        return True
    if latest["first_line"] == read["first_line"]:
        return False
    return (latest["status"], latest["read_error"]) != (read["read_status"], read["read_error"])


# -- the stage ------------------------------------------------------------------------------------------


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
        damage = {name: sum(f[name] for f in self.files) for name in _DAMAGE_COUNTERS}
        lines = [f"logs: {self.lines_read} new lines, {sum(f['entries'] for f in self.files)} entries,"
                 f" {self.entries_archived} archived, {self.events} events, "
                 f"{self.unparsed} coordinator-looking entries unparsed"
                 + "".join(f", {damage[name]} {name.replace('_', ' ')}" for name in _DAMAGE_COUNTERS if damage[name])
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
            if any(f[name] for name in _DAMAGE_COUNTERS):
                lines.append(f"{where}: {f['malformed_lines']} malformed, {f['overlong_lines']} over-long (cut), "
                             f"{f['invalid_utf8_lines']} invalid UTF-8 lines")
            if f["read_error"]:
                lines.append(f"{where}: read stopped: {f['read_error']}")
        return "\n".join(lines)


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
    `_why_not_read`). Which rows are written: `worth_a_row`.
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
    readable = [f for f in files if f.not_read is None]
    file_rows: list[dict[str, Any]] = []
    if readable:
        # Largest first: tasks start in partition order, so the longest scans do not come last.
        ordered = sorted(readable, key=lambda f: -f.size)
        to_read = [
            (f.cluster, f.file_id, f.source, f.path, f.broker_id, f.zone,
             *positions.get((f.cluster, f.file_id), (0, None)), not f.rotated, f.container_layout,
             None if f.path.endswith(".gz") else f.size)
            for f in ordered
        ]
        # One partition per file: a file is scanned in order by one task.
        files_to_read = spark.createDataFrame(spark.sparkContext.parallelize(to_read, len(to_read)), _FILE_COLUMNS)
        scanned, release = _held(scan_log_files(files_to_read, all_entries=archive_all_entries,
                                                block_bytes=block_bytes, max_line_bytes=max_line_bytes))
        try:
            # The file rows (one per file) first: this job runs the scan, once, and fills what holds its output.
            file_rows = [r.asDict() for r in scanned.where(F.col("row_kind") == "file").collect()]
            # Two independent tables, appended at the same time from the held scan output.
            write_together([
                partial(tables.append, RAW_LOG_LINES, raw_log_line_rows(scanned, run_id, started_at)),
                partial(tables.append, COORDINATOR_EVENTS, coordinator_event_rows(scanned, run_id)),
            ])
        finally:
            release()
    for f in files:
        if f.not_read is not None:
            last_line, end_byte = positions.get((f.cluster, f.file_id), (0, None))
            file_rows.append({
                "cluster": f.cluster, "file_id": f.file_id, "log_source": f.source, "path": f.path,
                "source_broker_id": f.broker_id, "source_zone": f.zone, "row_kind": "file",
                "first_line": last_line + 1, "last_line": last_line, "end_byte": end_byte,
                **dict.fromkeys(_FILE_COUNTERS, 0), "unparsed_lines": [], "read_error": f.reason,
                "read_status": f.not_read, **dict.fromkeys(_DAMAGE_COUNTERS, 0),
            })
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
                **{name: int(read[name]) for name in (*_FILE_COUNTERS, *_DAMAGE_COUNTERS)},
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


if __name__ == "__main__":
    raise SystemExit(main())
