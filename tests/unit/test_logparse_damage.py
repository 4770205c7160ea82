"""Damaged log input, on the pure helpers of the logs stage: reading a cut .gz up to the cut, finding the
malformed, over-long and invalid UTF-8 lines of a block, cutting over-long lines of entry texts, and a
scan of a truncated .gz (no Spark: the scan functions run in the driver's Python here)."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa

from coordinator_core.logs.damage import cut_long_lines, damaged_lines, reclassified_without_replacements
from coordinator_core.logs.files import read_available
from coordinator_core.logs.scan import FileScan, scan_container_file, scan_log_file
from jobs.logs.listing import worth_a_row

GC = "(kafka.coordinator.group.GroupCoordinator)"


def offsets_of(lines: list[bytes]) -> tuple[bytes, np.ndarray]:
    data = b"".join(line + b"\n" for line in lines)
    return data, np.array([0, *np.cumsum([len(line) + 1 for line in lines])], np.int64)


def test_damaged_lines_by_kind() -> None:
    lines = [b"plain", b"tab\tand\rCR and \x1b[31mcolour\x1b[0m", b"NUL \x00 here", b"caf\xc3\xa9",
             b"bad \xff byte", b"y" * 2000, b"\x01\x02 \xfe"]
    data, offsets = offsets_of(lines)
    malformed, overlong, invalid = damaged_lines(data, offsets, 1024)
    assert (malformed.tolist(), overlong.tolist(), invalid.tolist()) == ([2, 6], [5], [4, 6])


def test_damaged_lines_of_a_clean_block_are_none() -> None:
    data, offsets = offsets_of([b"a", b"b" * 1024, "ünïcode".encode()])
    assert [len(found) for found in damaged_lines(data, offsets, 1024)] == [0, 0, 0]


def test_a_last_line_without_newline_is_measured_whole() -> None:
    data = b"ok\n" + b"z" * 1025
    malformed, overlong, invalid = damaged_lines(data, np.array([0, 3, len(data)], np.int64), 1024)
    assert overlong.tolist() == [1] and not len(malformed) and not len(invalid)


def test_cut_long_lines_cuts_each_line_on_a_character_boundary() -> None:
    texts = pa.array(["short", "a" * 10 + "\n" + "b" * 3, "é" * 8], pa.string())
    assert cut_long_lines(texts, 5).to_pylist() == ["short", "aaaaa\nbbb", "éé"]
    same = pa.array(["abc", "de"], pa.string())
    assert cut_long_lines(same, 5) is same


def test_read_available_stops_at_the_cut_of_a_gzip(tmp_path: Path) -> None:
    data = b"".join(b"line %d\n" % i for i in range(200_000))
    compressed = gzip.compress(data)
    cut = compressed[: len(compressed) // 3]
    readable = zlib.decompressobj(31).decompress(cut)
    path = tmp_path / "x.gz"
    path.write_bytes(cut)
    with gzip.open(path, "rb") as handle:
        got, error = read_available(handle, len(data))
    assert got == readable and isinstance(error, EOFError)
    with gzip.open(path, "rb") as handle:
        first, error = read_available(handle, 100)
    assert first == data[:100] and error is None


def test_read_available_of_a_file_that_is_not_gzip(tmp_path: Path) -> None:
    path = tmp_path / "x.gz"
    path.write_bytes(b"plain text\n")
    with gzip.open(path, "rb") as handle:
        got, error = read_available(handle, 1000)
    assert got == b"" and isinstance(error, gzip.BadGzipFile)


def test_scan_of_a_truncated_gzip_keeps_the_complete_lines_before_the_cut(tmp_path: Path) -> None:
    lines = [f"[2024-06-01 09:00:{i % 60:02d},000] INFO [GroupCoordinator 1]: Stabilized group g{i} generation"
             f" {i} (__consumer_offsets-1) with 2 members {GC}" for i in range(5000)]
    data = "".join(line + "\n" for line in lines).encode()
    compressed = gzip.compress(data)
    cut = compressed[: len(compressed) // 2]
    readable = zlib.decompressobj(31).decompress(cut)
    complete = readable.count(b"\n")
    path = tmp_path / "server.log.1.gz"
    path.write_bytes(cut)
    scan = FileScan(1, 0, None)
    numbers = [n for block_numbers, _, _ in scan_log_file(str(path), scan, False, block_bytes=4096)
               for n in block_numbers]
    assert numbers == list(range(1, complete + 1))
    assert (scan.last_line, scan.end_byte) == (complete, readable.rfind(b"\n") + 1)
    assert scan.read_error is not None
    assert scan.read_error.startswith(f"truncated or corrupt gzip at uncompressed byte {len(readable)}")


def test_container_file_cut_short_and_damaged(tmp_path: Path) -> None:
    """A container-runtime file goes through the reference reader: read up to the cut as well, damaged
    lines counted the same way."""
    lines = [f"2024-06-01T10:00:{i % 60:02d}.000000000Z stdout F [2024-06-01 10:00:{i % 60:02d},000] INFO"
             f" [GroupCoordinator 1]: Stabilized group g{i} generation {i} (__consumer_offsets-1) with 2 members {GC}"
             .encode() for i in range(3000)]
    lines[1] = lines[1].replace(b"Stabilized", b"Stab\x00ilized")
    lines[2] = lines[2] + b"\xff"
    data = b"".join(line + b"\n" for line in lines)
    compressed = gzip.compress(data)
    cut = compressed[: len(compressed) // 2]
    readable = zlib.decompressobj(31).decompress(cut)
    complete = readable.count(b"\n")
    path = tmp_path / "kafka-0.log.1.gz"
    path.write_bytes(cut)
    scan = FileScan(1, 0, None)
    numbers = [n for block_numbers, _, _ in scan_container_file(str(path), scan, False) for n in block_numbers]
    assert numbers == list(range(1, complete + 1))
    assert scan.last_line == complete
    assert scan.read_error is not None
    assert scan.read_error.startswith(f"truncated or corrupt gzip at uncompressed byte {len(readable)}")
    assert (scan.malformed_lines, scan.overlong_lines, scan.invalid_utf8_lines) == (1, 0, 1)


def test_an_entry_with_a_stray_byte_is_classified_without_it() -> None:
    from coordinator_core.logs.bulk import classify_log_entries

    line = "[2024-06-01 10:00:04,010] INFO [GroupCoordinator 1]: Stabilized group orders-svc generation 7" \
           " (__consumer_offsets-12) with 2 members " + GC
    damaged = line.replace("Stabilized", "Stabi\ufffdlized")
    garbage = line.replace("Stabilized", "Sta\ufffdbi\ufffdxized")
    texts = pa.array([line, damaged, garbage], pa.string())
    outcome = reclassified_without_replacements(classify_log_entries(texts), texts, classify_log_entries)
    assert outcome.column("status").to_pylist() == ["event", "event", "unparsed"]
    assert outcome.column("group_id").to_pylist() == ["orders-svc", "orders-svc", None]
    assert outcome.column("generation").to_pylist() == [7, 7, None]


def test_a_read_without_lines_is_recorded_once_per_state() -> None:
    def read(first_line: int, last_line: int, status: str, error: str | None = None) -> dict[str, object]:
        return {"first_line": first_line, "last_line": last_line, "read_status": status, "read_error": error}

    cut = "truncated or corrupt gzip at uncompressed byte 10"
    assert worth_a_row(read(1, 5, "read"), None)
    assert not worth_a_row(read(6, 5, "read"), {"status": "read", "read_error": None, "first_line": 1})
    assert worth_a_row(read(1, 0, "unreadable", "cannot be read"), None)
    # the same state as the latest row: nothing new to say
    assert not worth_a_row(read(6, 5, "read_with_errors", cut), {"status": "read_with_errors", "read_error": cut,
                                                                 "first_line": 1})
    # another state after a read of lines: said once
    assert worth_a_row(read(6, 5, "unreadable", "gone"), {"status": "read_with_errors", "read_error": cut,
                                                          "first_line": 1})
    # a row without lines at this position exists already: the grain (cluster, file_id, first_line) forbids
    # a second, whatever the state
    assert not worth_a_row(read(1, 0, "unreadable", "x"), {"status": "waiting", "read_error": "y", "first_line": 1})
