"""The logs stage's readers without Spark (coordinator_core.logs.scan): the block scanner joins entries like
the reference reader, keeps the coordinator-looking ones, resumes at a recorded position, stops at the size
listed and cuts entries at the line limit; container-runtime files go through the reference reader; the
file identity survives rotation; and the keep rule keeps everything the parser reads."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator_core.logs import classify_log_entry, iter_log_entries
from coordinator_core.logs import parser as log_parser
from coordinator_core.logs.damage import MAX_LINE_BYTES
from coordinator_core.logs.files import file_identity
from coordinator_core.logs.keep import coordinator_entries
from coordinator_core.logs.scan import FileScan, scan_container_file, scan_log_file
from jobs.common.config import LogsConfig, LogSource
from jobs.common.tasks import TASK_BYTES
from jobs.logs.listing import list_log_files
from jobs.logs.scan import GZ_EXPANSION, new_bytes, scan_slices
from tests.unit.log_lines import BROKER_LINES, CC, CLIENT_LINES, GC, MIXED_LINES, write_lines

ROOT = Path(__file__).resolve().parents[2]
#: Every broker and client log of the shipped samples (stock log4j, Python layouts, kafka-python).
SAMPLE_LOGS = sorted(p for p in (ROOT / "samples").glob("*/*/*")
                     if p.parent.name in ("broker", "clients")
                     or (re.fullmatch(r"broker-\d+", p.parent.name) and p.name.startswith("server.log")))


def scanned(path: Path, skip: int = 0, hold_back_last: bool = False, end_byte: int | None = None,
            **options: object) -> tuple[list[tuple[int, int, str]], FileScan]:
    scan = FileScan(skip + 1, skip, end_byte)
    rows = [row for numbers, counts, texts in scan_log_file(str(path), scan, hold_back_last, **options)  # type: ignore[arg-type]
            for row in zip(numbers, counts, texts, strict=True)]
    return rows, scan


def test_scanner_joins_entries_like_the_reference_reader(tmp_path: Path) -> None:
    path = tmp_path / "mixed.log.1"
    write_lines(path, MIXED_LINES)
    with open(path, encoding="utf-8") as handle:
        reference = [(e.line_number, e.line_count, e.text) for e in iter_log_entries(handle)]
    last = reference[-1][0] + reference[-1][1] - 1
    for block_bytes in (64, 300, 1 << 20):
        rows, scan = scanned(path, all_entries=True, block_bytes=block_bytes)
        assert rows == reference, block_bytes
        assert (scan.last_line, scan.end_byte, scan.entries) == (last, path.stat().st_size, len(reference))
    rows, scan = scanned(path, 10, hold_back_last=True, all_entries=True, block_bytes=128)
    assert rows == [r for r in reference if r[0] > 10][:-1]
    assert scan.last_line == reference[-1][0] - 1


def test_scanner_keeps_coordinator_looking_entries_only(tmp_path: Path) -> None:
    path = tmp_path / "mixed.log.1"
    write_lines(path, MIXED_LINES)
    rows, scan = scanned(path, block_bytes=256)
    # By hand: MIXED_LINES[i] is line i + 1; the GroupCoordinator/GroupMetadataManager lines of the broker
    # and the ConsumerCoordinator lines of the client.
    assert [(n, c) for n, c, _ in rows] == [(3, 1), (4, 1), (8, 1), (9, 1), (10, 1), (53, 1), (55, 1)]
    assert rows[0][2] == BROKER_LINES[1]
    assert scan.entries == 12


def test_scanner_resumes_at_the_recorded_byte_or_by_counting(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    write_lines(path, BROKER_LINES)
    _, scan = scanned(path, hold_back_last=True, all_entries=True)
    assert scan.last_line == 8 and scan.end_byte == sum(len(line) + 1 for line in BROKER_LINES[:8])
    write_lines(path, CLIENT_LINES, mode="a")
    resumed, by_seek = scanned(path, scan.last_line, end_byte=scan.end_byte, all_entries=True)
    counted, by_count = scanned(path, scan.last_line, all_entries=True)
    # An offset that is not just after a newline (the file was replaced) is not trusted: lines are counted.
    distrusted, by_distrust = scanned(path, scan.last_line, end_byte=scan.end_byte + 3, all_entries=True)
    assert [n for n, _, _ in resumed] == [9, 10, 11, 12]
    assert resumed == counted == distrusted
    assert by_seek == by_count == by_distrust


@pytest.mark.parametrize("past_listing", [0, 10], ids=["at-a-line-end", "mid-line"])
def test_scanner_reads_no_further_than_the_size_listed(tmp_path: Path, past_listing: int) -> None:
    """A scan computed again after the file grew (its cached output lost on a cluster) reads what the
    first computation read: the file as it was when listed, here even when the cut falls inside a line."""
    path, as_listed = tmp_path / "server.log", tmp_path / "as-listed.log"
    write_lines(path, BROKER_LINES)
    write_lines(path, CLIENT_LINES, mode="a")
    listed = sum(len(line) + 1 for line in BROKER_LINES) + past_listing
    as_listed.write_bytes(path.read_bytes()[:listed])
    capped, scan = scanned(path, hold_back_last=True, all_entries=True, read_until=listed)
    expected, expected_scan = scanned(as_listed, hold_back_last=True, all_entries=True)
    assert capped == expected and capped
    assert (scan.last_line, scan.end_byte, scan.entries) == (expected_scan.last_line, expected_scan.end_byte,
                                                            expected_scan.entries)
    # the next run reads on from the recorded position: together, the whole file, each entry once
    rest, _ = scanned(path, scan.last_line, end_byte=scan.end_byte, all_entries=True)
    everything, _ = scanned(path, all_entries=True)
    assert capped + rest == everything


def test_scanner_cuts_entries_at_the_line_limit_like_the_reference(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(log_parser, "MAX_ENTRY_LINES", 4)
    path = tmp_path / "long.log.1"
    write_lines(path, MIXED_LINES)
    with open(path, encoding="utf-8") as handle:
        reference = [(e.line_number, e.line_count, e.text) for e in iter_log_entries(handle)]
    assert max(count for _, count, _ in reference) == 4
    for block_bytes in (50, 333, 1 << 20):
        assert scanned(path, all_entries=True, block_bytes=block_bytes)[0] == reference, block_bytes


def test_container_prefixed_files_use_the_reference_reader(tmp_path: Path) -> None:
    (tmp_path / "k").mkdir()
    path = tmp_path / "k" / "kafka-0.log"
    write_lines(path, [
        "2024-06-01T10:00:00.000000001Z stdout P [2024-06-01 10:00:00,000] INFO [GroupCoordinator 1]: Stabilized",
        "2024-06-01T10:00:00.000000002Z stdout F  group g generation 7 " + GC,
        "2024-06-01T10:00:01.000000000Z stdout F [2024-06-01 10:00:01,000] INFO x (kafka.server.KafkaServer)",
        "2024-06-01T10:00:02.000000000Z stdout F [2024-06-01 10:00:02,000] INFO y (kafka.server.KafkaServer)",
    ])
    write_lines(tmp_path / "k" / "plain.log", BROKER_LINES)
    layouts = {Path(f.path).name: f.container_layout
               for f in list_log_files([LogSource("c", "k", (str(tmp_path / "k" / "*.log"),))])}
    assert layouts == {"kafka-0.log": True, "plain.log": False}
    scan = FileScan(1, 0, None)
    got = [row for n, c, t in scan_container_file(str(path), scan, True) for row in zip(n, c, t, strict=True)]
    assert got == [(1, 2, "[2024-06-01 10:00:00,000] INFO [GroupCoordinator 1]: Stabilized group g generation 7 " + GC)]
    assert (scan.last_line, scan.end_byte, scan.entries) == (3, None, 2)
    # read no further than the size listed: the first two lines (one entry, held back as the last one)
    listed = len(path.read_bytes().split(b"\n", 2)[0]) + len(path.read_bytes().split(b"\n", 2)[1]) + 2
    capped_scan = FileScan(1, 0, None)
    assert [row for n, c, t in scan_container_file(str(path), capped_scan, True, read_until=listed)
            for row in zip(n, c, t, strict=True)] == []
    assert (capped_scan.last_line, capped_scan.entries) == (0, 0)
    capped_scan = FileScan(1, 0, None)
    got = [row for n, c, t in scan_container_file(str(path), capped_scan, False, read_until=listed)
           for row in zip(n, c, t, strict=True)]
    assert got == [(1, 2, "[2024-06-01 10:00:00,000] INFO [GroupCoordinator 1]: Stabilized group g generation 7 " + GC)]
    assert (capped_scan.last_line, capped_scan.entries) == (2, 1)


def test_file_identity_survives_rotation_and_compression(tmp_path: Path) -> None:
    write_lines(tmp_path / "server.log.1", BROKER_LINES)
    write_lines(tmp_path / "server.log.1.gz", BROKER_LINES)
    write_lines(tmp_path / "partial.log", [])
    with open(tmp_path / "partial.log", "w") as handle:
        handle.write("[2024-06-01 10:00:00,000] INFO no newline yet")
    plain = file_identity("c1", "broker-1", str(tmp_path / "server.log.1"))
    assert plain is not None
    assert file_identity("c1", "broker-1", str(tmp_path / "server.log.1.gz")) == plain
    assert file_identity("c1", "broker-2", str(tmp_path / "server.log.1")) != plain
    assert file_identity("c1", "broker-1", str(tmp_path / "partial.log")) is None


def test_prefilter_keeps_every_entry_the_parser_does_not_call_unrelated(tmp_path: Path) -> None:
    texts = [*MIXED_LINES, '{"message": "[GroupCoordinator 1]: Stabilized group g generation 7"}',
             '{"message": "hello", "logger_name": "kafka.server.KafkaServer"}', "[GroupCoordinator 3]: bare",
             "[2024-06-01 08:00:06,000] INFO [Consumer clientId=c-1, groupId=g] Updating assignment with",
             "\tAssigned partitions:                       [orders-0]",
             " (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)",
             "[2024-06-01 08:00:07,000] INFO done (kafka.server.KafkaServer)"]
    path = tmp_path / "prefilter.log.1"
    write_lines(path, texts)
    with open(path, encoding="utf-8") as handle:
        entries = list(iter_log_entries(handle))
    related = {e.line_number for e in entries if classify_log_entry(e.text).status != "unrelated"}
    kept = {n for n, _, _ in scanned(path)[0]}
    assert related <= kept
    # Kept although the parser calls it unrelated: the JSON "hello" entry, which the envelope-less
    # "[GroupCoordinator 3]: bare" line continues (a marker in a continuation line; the parser reads the
    # entry as broken JSON whose first line names no coordinator).
    assert kept - related == {2 + len(MIXED_LINES)}
    assert 1 + len(MIXED_LINES) + 3 in related  # the message whose logger is on its last line


def read_both(path: Path, **options: bool) -> tuple[list[tuple[int, int, str]], FileScan,
                                                list[tuple[int, int, str]], FileScan]:
    """The block scanner's and the reference reader's entries of a whole file, and how far each got."""
    fast, fast_scan = scanned(path, block_bytes=65536, **options)  # type: ignore[arg-type]
    reference_scan = FileScan(1, 0, None)
    reference = [row for n, c, t in scan_container_file(str(path), reference_scan, False, **options)
                 for row in zip(n, c, t, strict=True)]
    return fast, fast_scan, reference, reference_scan


@pytest.mark.parametrize("path", SAMPLE_LOGS, ids=lambda p: str(p.relative_to(ROOT)))
def test_both_readers_keep_the_same_entries_of_the_sample_logs(path: Path) -> None:
    """One keep rule: the block scanner and the reference reader keep the same entries of every shipped
    broker and client log, and read the same entries and lines; what they keep holds every entry the parser
    does not call unrelated."""
    fast, fast_scan, reference, reference_scan = read_both(path)
    assert fast == reference
    assert (fast_scan.last_line, fast_scan.entries) == (reference_scan.last_line, reference_scan.entries)
    every, _, every_reference, _ = read_both(path, all_entries=True)
    assert every == every_reference
    related = {n for n, _, text in every if classify_log_entry(text).status != "unrelated"}
    assert related, "a sample log without a single coordinator entry"
    assert related <= {n for n, _, _ in fast}


def test_sample_logs_are_found() -> None:
    assert len(SAMPLE_LOGS) >= 10
    assert {p.name for p in SAMPLE_LOGS} >= {"server.log", "kafka-python.log"}


def test_the_keep_rule_line_by_line() -> None:
    """Expected flags by hand: a marker anywhere in an entry keeps it; a JSON record head without a logger
    key keeps its entry (its logger is unknown before parsing); other loggers' entries are dropped."""
    texts = [
        BROKER_LINES[0],  # kafka.utils.Log4jControllerRegistration: no marker
        BROKER_LINES[1],  # [GroupCoordinator 1]: and the GroupCoordinator logger
        CLIENT_LINES[1],  # KafkaConsumer: a consumer line, not the coordinator's
        CLIENT_LINES[2],  # ConsumerCoordinator
        "[2024-06-01 10:00:07,000] ERROR boom (kafka.server.KafkaApis)\n\tat x\n[GroupCoordinator 3]: bare",
        '{"message": "[GroupCoordinator 1]: Stabilized group g generation 7"}',
        '{"message": "hello"}',
        '{"message": "hello", "logger_name": "kafka.server.KafkaServer"}',
        "2024-06-01 10:00:00,000 INFO kafka.coordinator.consumer Heartbeat ok",
        "2024-06-01 10:00:00,000 INFO x (kafka.coordinator.consumer)",
        "2024-06-01 10:00:00,000 INFO kafka.coordinator.consumerX Heartbeat ok",
        "[2024-06-01 10:00:00,000] INFO [GroupMetadataManager brokerId=1] Removed 0 expired offsets in 1 ms. " + CC,
    ]
    assert coordinator_entries(texts).tolist() == [False, True, False, True, True, True, True, False, True, True,
                                                   False, True]
    assert coordinator_entries([]).tolist() == []


def test_the_scanners_cut_lines_at_the_configured_default() -> None:
    assert LogsConfig.max_line_bytes == MAX_LINE_BYTES


def test_both_readers_keep_a_json_entry_by_its_head_line(tmp_path: Path) -> None:
    """The keep rule reads lines: a JSON record head without a logger key keeps its entry even when a
    continuation line names a logger (by hand: entry 1, lines 1-2, is kept; entry 2 names its logger on its
    head line and holds no marker, so it is not)."""
    path = tmp_path / "json.log.1"
    path.write_text('{"message": "hello"\n "logger": "kafka.server.KafkaServer"}\n{"message": "x", "logger": "y"}\n')
    fast, _, reference, _ = read_both(path)
    assert fast == reference == [(1, 2, '{"message": "hello"\n "logger": "kafka.server.KafkaServer"}')]


def test_a_file_listed_at_the_byte_its_last_read_ended_gets_the_scans_own_file_row_without_a_scan(
        tmp_path: Path) -> None:
    """A quiet night: a plain file exactly as long as where its last read stopped is not scanned (no task);
    the file row the stage makes for it is the one the scan task gives when it seeks there and reads
    nothing. An active file's held-back last entry, a .gz and a container file are still scanned."""
    from pyspark.sql.pandas.types import to_arrow_schema

    from jobs.logs.scan import SCAN_COLUMNS, _file_batches
    from jobs.logs.stage import _nothing_read, _unchanged

    path = tmp_path / "server.log.1"
    write_lines(path, BROKER_LINES)
    files = list_log_files([LogSource("c1", "broker-1", (str(tmp_path / "server.log*"),), "UTC", 1)])
    assert len(files) == 1 and files[0].rotated
    f = files[0]
    _, first = scanned(path)
    assert first.end_byte == path.stat().st_size == f.size and first.last_line == len(BROKER_LINES)
    assert _unchanged(f, first.end_byte)

    file = {"cluster": f.cluster, "file_id": f.file_id, "log_source": f.source, "path": f.path,
            "source_broker_id": f.broker_id, "source_zone": f.zone, "last_line": first.last_line,
            "end_byte": first.end_byte, "hold_back_last": False, "container_layout": False, "read_until": f.size}
    schema = to_arrow_schema(SCAN_COLUMNS, timestamp_utc=True, prefers_large_types=False)
    batches = list(_file_batches(file, schema, all_entries=False, block_bytes=1 << 16,
                                 max_line_bytes=LogsConfig.max_line_bytes))
    assert len(batches) == 1  # the file row alone: nothing after the position
    (scanned_row,) = batches[0].to_pylist()
    made = _nothing_read(f, first.last_line, first.end_byte)
    assert {k: v for k, v in scanned_row.items() if k in made} == made
    assert all(v is None for k, v in scanned_row.items() if k not in made)

    # Still scanned: a byte more (a new line, or the active file's held-back entry), a .gz, no byte position.
    assert not _unchanged(f, first.end_byte - 1)
    assert not _unchanged(dataclasses.replace(f, path=f.path + ".gz"), first.end_byte)
    assert not _unchanged(f, None)


# -- how the files are shared out among scan tasks ---------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(weights=st.lists(st.integers(min_value=0, max_value=10 * TASK_BYTES), max_size=60),
       cores=st.integers(min_value=1, max_value=16))
def test_scan_tasks_read_every_file_once_and_as_many_as_the_bytes_are_worth(weights: list[int], cores: int) -> None:
    slices = scan_slices(weights, cores)
    assert sorted(i for s in slices for i in s) == list(range(len(weights)))
    assert all(slices)
    n = len(weights)
    worth = -(-sum(weights) // TASK_BYTES)  # tasks of TASK_BYTES each
    assert len(slices) == max(min(n, cores), min(n, 4 * cores, worth))
    for s in slices:  # a task starts with its largest file
        assert [weights[i] for i in s] == sorted((weights[i] for i in s), reverse=True)
    if slices:  # largest first onto the lightest task: no task carries more than the mean plus one file
        loads = [sum(weights[i] for i in s) for s in slices]
        assert max(loads) <= sum(weights) / len(slices) + max(weights)


def test_a_quiet_night_of_small_files_is_scanned_by_one_task_per_core() -> None:
    # 34 files with a few bytes new each (the samples on a night with nothing new): two tasks on two cores
    slices = scan_slices([100] * 34, 2)
    assert [len(s) for s in slices] == [17, 17]
    # a large file is alone beside the small ones
    slices = scan_slices([5 * TASK_BYTES] + [TASK_BYTES // 10] * 10, 2)
    assert [0] in slices and len(slices) == 6


def test_the_new_bytes_of_a_file_are_what_follows_its_last_read() -> None:
    assert new_bytes(1000, 400, gz=False) == 600
    assert new_bytes(1000, None, gz=False) == 1000      # never read
    assert new_bytes(1000, 1200, gz=False) == 1000      # shrank: rotated in place, read from its start
    assert new_bytes(1000, 400, gz=True) == 1000 * GZ_EXPANSION  # a .gz file is read whole, compressed
    assert new_bytes(None, None, gz=False) == 0
