"""Reading a log file into its entries, side by side: the block scanner and the reference reader.

The block scanner (`scan_log_file_columns`) reads a file in large blocks from a recorded position, and
turns each block into one Arrow binary array of lines without any per-line Python object: line splitting
with NumPy, entry heads and the keep rule (`keep.coordinator_lines`) with Arrow's RE2 kernels over the
whole block, multi-line entries grouped column-wise (heads -> segment bounds -> `reduceat`). The kept
entries are cut out of the block as one Arrow string array. It joins lines into entries exactly like the
reference reader, `parser.iter_log_entries`, which reads files written by a container runtime (CRI,
docker json, compose/kubectl prefixes) instead (`scan_container_file`): their prefixes and partial lines
need it. Both keep the same entries, by the same rule, and count the damaged lines they read (`damage`).

The last entry of an active (not rotated) file may be held back: its stack trace may still be being
written. `FileScan` says how far a scan got: the position the next read starts after.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from coordinator_core.logs import parser
from coordinator_core.logs.catalogue import unnamed_groups
from coordinator_core.logs.damage import DAMAGE_COUNTERS, MAX_LINE_BYTES, damaged_lines
from coordinator_core.logs.envelope import HEAD_PATTERN
from coordinator_core.logs.files import READ_ERRORS, open_binary, read_available, stopped_at
from coordinator_core.logs.keep import coordinator_entries, coordinator_lines

#: Bytes read per block; a block's complete lines become one Arrow array.
READ_BLOCK_BYTES: Final = 8 << 20
#: Entries a reference read hands over at a time.
_REFERENCE_CHUNK: Final = 10000


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
            `damage.damaged_lines`).
    """

    first_line: int
    last_line: int
    end_byte: int | None
    entries: int = 0
    read_error: str | None = None
    malformed_lines: int = 0
    overlong_lines: int = 0
    invalid_utf8_lines: int = 0


@dataclass
class _Pending:
    """The entry the last block ended in: it may continue in the next block."""

    line_number: int
    byte_offset: int
    chunks: list[bytes]
    line_count: int
    candidate: bool

    def columns(self) -> tuple[Any, Any, Any]:
        """The entry as one row of (line numbers, line counts, texts)."""
        return (np.array([self.line_number], np.int64), np.array([self.line_count], np.int64),
                pa.array([_entry_text(b"".join(self.chunks))], pa.string()))


class _DamagedLines:
    """Line numbers of the damaged lines found past `scan.last_line` (in the entry still pending), by kind;
    counted in the scan once the entry holding them is read."""

    def __init__(self) -> None:
        self.pending: list[Any] = [np.zeros(0, np.int64)] * len(DAMAGE_COUNTERS)

    def add(self, first_line: int, by_kind: tuple[Any, Any, Any]) -> None:
        """A block's damaged lines (indices from `damaged_lines`; line 0 is `first_line`)."""
        for kind, lines_of_kind in enumerate(by_kind):
            if len(lines_of_kind):
                self.pending[kind] = np.concatenate([self.pending[kind], first_line + lines_of_kind])

    def count_read(self, scan: FileScan) -> None:
        """Counts in `scan` those up to its `last_line`."""
        for kind, name in enumerate(DAMAGE_COUNTERS):
            read = self.pending[kind] <= scan.last_line
            setattr(scan, name, getattr(scan, name) + int(read.sum()))
            self.pending[kind] = self.pending[kind][~read]


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


def segment_starts(heads: Any, n: int, pending_lines: int | None, max_lines: int) -> Any:
    """Entry starts within a block of `n` lines: its heads, plus a start at 0 when no entry is pending
    (the read begins mid-entry), plus the cuts that keep every entry at most `max_lines` long."""
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


def _entry_texts(data: bytes, offsets: Any, starts: Any, chosen: Any) -> Any:
    """The texts of the chosen complete entries of a block, as one Arrow string array (no per-entry
    Python object): entry i spans lines starts[i] to starts[i + 1]; texts as `_entry_text` makes them."""
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
    except READ_ERRORS:
        handle.seek(0)
    return False


@dataclass
class _Block:
    """Complete lines of a file not read before: line i is data[offsets[i]:offsets[i + 1]]."""

    data: bytes
    offsets: Any
    controls: Any  # positions in `data` of its bytes below 0x20 (the newlines among them)
    first_line: int  # line number of line 0
    first_byte: int  # file offset of line 0

    def byte_of(self, line: int) -> int:
        """File offset of line `line` of the block (its number of lines: the offset after it)."""
        return self.first_byte + int(self.offsets[line] - self.offsets[0])


def _line_blocks(handle: Any, path: str, scan: FileScan, block_bytes: int, read_until: int | None) -> Iterator[_Block]:
    """The file's complete lines after `scan.last_line`, block by block, up to `read_until` bytes.

    Seeks to `scan.end_byte` when it is a line end of the file, else counts lines from the start. A line
    cut by `read_until` or at the end of the file reads as the file's last line; at a read error (a .gz cut
    short), the line cut in the middle is no line and `scan.read_error` says where the read stopped.
    """
    skip_lines = scan.last_line
    base_line, base_byte = 1, 0  # line number and file offset of the next block's first line
    if scan.end_byte and _is_line_end(handle, scan.end_byte):
        base_line, base_byte = skip_lines + 1, scan.end_byte
    rest = b""
    position = base_byte  # where the handle is
    while True:
        want = block_bytes if read_until is None else min(block_bytes, read_until - position)
        block, error = read_available(handle, want) if want > 0 else (b"", None)
        position += len(block)
        data = rest + block
        if error is not None:
            scan.read_error = stopped_at(path, position, error)
            data, rest, block = data[: data.rfind(b"\n") + 1], b"", b""
            if not data:
                return
        elif block:
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                rest = data
                continue
            data, rest = data[:cut], data[cut:]
        elif not data:
            return
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
        if drop < n:
            yield _Block(data, offsets[drop:], controls, base_line + drop, base_byte + int(offsets[drop]))
        base_line, base_byte = base_line + n, base_byte + len(data)
        if not block:
            return


def scan_log_file(
    path: str,
    scan: FileScan,
    hold_back_last: bool,
    *,
    all_entries: bool = False,
    block_bytes: int = READ_BLOCK_BYTES,
    read_until: int | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> Iterator[tuple[list[int], list[int], list[str]]]:
    """The kept entries (every entry with `all_entries`) after `scan.last_line`, in the file's first
    `read_until` bytes when given (the size it had when listed; see `scan_log_file_columns`).

    Yields (line numbers, line counts, texts) per block and advances `scan`. Lines are joined into entries
    exactly like `parser.iter_log_entries`: a line that is no entry head continues the entry before it, at
    most MAX_ENTRY_LINES lines per entry; lines end at \\n, trailing \\r removed.
    """
    for numbers, counts, texts in scan_log_file_columns(path, scan, hold_back_last, all_entries=all_entries,
                                                         block_bytes=block_bytes, read_until=read_until,
                                                         max_line_bytes=max_line_bytes):
        yield numbers.tolist(), counts.tolist(), texts.to_pylist()


def scan_log_file_columns(
    path: str,
    scan: FileScan,
    hold_back_last: bool,
    *,
    all_entries: bool = False,
    block_bytes: int = READ_BLOCK_BYTES,
    read_until: int | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> Iterator[tuple[Any, Any, Any]]:
    """`scan_log_file` with columns: (line numbers, line counts) as NumPy arrays, texts as an Arrow string
    array, per block; what the logs stage's scan task reads (no Python object per entry).

    `read_until` stops the read at that byte of the file even if it has grown since: a scan computed again
    (its cached output lost with an executor) then reads the same bytes as the first time, so the two
    appends and the recorded position agree. A line cut there reads as the file's last line, which an
    active file holds back with its entry.

    A .gz cut short (or a file whose read fails midway) is read up to the cut: its complete lines are read
    as the file's last (the line cut in the middle is no line) and `scan.read_error` says where it stopped;
    reading it again stops at the same byte. The damaged lines read are counted in `scan` (`damaged_lines`;
    texts are cut to `max_line_bytes` by the caller, see `cut_long_lines`).
    """
    head_pattern = unnamed_groups(HEAD_PATTERN)
    max_lines = parser.MAX_ENTRY_LINES
    pending: _Pending | None = None
    damaged = _DamagedLines()
    with open_binary(path) as handle:
        for block in _line_blocks(handle, path, scan, block_bytes, read_until):
            n = len(block.offsets) - 1
            damaged.add(block.first_line, damaged_lines(block.data, block.offsets, max_line_bytes, block.controls))
            lines = pa.Array.from_buffers(
                pa.binary(), n, [None, pa.py_buffer((block.offsets - block.offsets[0]).astype(np.int32)),
                                 pa.py_buffer(memoryview(block.data)[int(block.offsets[0]):])]
            )
            heads = np.flatnonzero(pc.match_substring_regex(lines, head_pattern).to_numpy(zero_copy_only=False))
            flags = np.ones(n, bool) if all_entries else coordinator_lines(lines)
            starts = segment_starts(heads, n, None if pending is None else pending.line_count, max_lines)
            prefix = int(starts[0]) if len(starts) else n
            if pending is not None and prefix:  # lines that continue the pending entry
                pending.chunks.append(_piece(block.data, block.offsets, 0, prefix))
                pending.line_count += prefix
                pending.candidate = pending.candidate or bool(flags[:prefix].any())
            if len(starts) == 0:
                continue
            parts, pending = _block_entries(block, flags, starts, pending, scan)
            damaged.count_read(scan)
            if parts:
                yield (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
                       pa.concat_arrays([p[2] for p in parts]))
    if pending is not None and not hold_back_last:
        scan.entries += 1
        scan.last_line = pending.line_number + pending.line_count - 1
        scan.end_byte = pending.byte_offset + sum(len(c) for c in pending.chunks)
        damaged.count_read(scan)
        if pending.candidate:
            yield pending.columns()


def _block_entries(block: _Block, flags: Any, starts: Any, pending: _Pending | None,
                   scan: FileScan) -> tuple[list[tuple[Any, Any, Any]], _Pending]:
    """The kept entries a block completes, as (line numbers, line counts, texts) parts: the pending entry
    (its lines before `starts[0]` already added) and the block's complete entries. Advances `scan` past
    them; the block's last entry, which may continue in the next block, is returned as pending."""
    data, offsets, block_line = block.data, block.offsets, block.first_line
    n = len(offsets) - 1
    parts: list[tuple[Any, Any, Any]] = []
    if pending is not None:
        prefix = int(starts[0])
        scan.entries += 1
        scan.last_line, scan.end_byte = block_line - 1 + prefix, block.byte_of(prefix)
        if pending.candidate:
            parts.append(pending.columns())
    complete = starts[:-1]
    last = int(starts[-1])
    if len(complete):
        chosen = np.flatnonzero(np.logical_or.reduceat(flags, starts)[:-1])
        if len(chosen):
            parts.append((block_line + complete[chosen].astype(np.int64), np.diff(starts)[chosen].astype(np.int64),
                          _entry_texts(data, offsets, starts, chosen)))
        scan.entries += len(complete)
        scan.last_line, scan.end_byte = block_line + last - 1, block.byte_of(last)
    return parts, _Pending(block_line + last, block.byte_of(last), [_piece(data, offsets, last, n)], n - last,
                           bool(flags[last:].any()))


def scan_container_file(
    path: str, scan: FileScan, hold_back_last: bool, *, all_entries: bool = False, read_until: int | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> Iterator[tuple[list[int], list[int], list[str]]]:
    """The reference reader (`parser.iter_log_entries`), for files whose lines carry container-runtime
    prefixes; the same entries kept as `scan_log_file_columns` (`keep.coordinator_entries`), no further
    than `read_until` bytes when given, up to the cut of a .gz cut short, damaged lines counted."""
    with open_binary(path) as raw:
        data, error = read_available(raw, sys.maxsize if read_until is None else read_until)
    if error is not None:
        scan.read_error = stopped_at(path, len(data), error)
        data = data[: data.rfind(b"\n") + 1]
    read_before = scan.last_line
    # Decoded as a text-mode open() would: UTF-8 with replacement, universal newlines.
    with io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace") as handle:
        entries = [e for e in parser.iter_log_entries(handle) if e.line_number > scan.last_line]
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
        for name, lines_of_kind in zip(DAMAGE_COUNTERS, damaged_lines(data, offsets, max_line_bytes), strict=True):
            numbers = lines_of_kind + 1
            read = int(((numbers > read_before) & (numbers <= scan.last_line)).sum())
            setattr(scan, name, getattr(scan, name) + read)
    if not all_entries:
        kept = coordinator_entries([e.text for e in entries])
        entries = [e for e, keep in zip(entries, kept.tolist(), strict=True) if keep]
    for start in range(0, len(entries), _REFERENCE_CHUNK):
        chunk = entries[start : start + _REFERENCE_CHUNK]
        yield [e.line_number for e in chunk], [e.line_count for e in chunk], [e.text for e in chunk]
