"""Logs stage: log files -> raw_log_lines -> coordinator_events, incremental by file identity and position.

Log files are written into tmp_path line by line here; expected rows are written out by hand from those
lines (timestamps converted to UTC by hand), never computed by the code under test.
"""

from __future__ import annotations

import datetime as dt
import gzip
import os
from pathlib import Path

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from coordinator_core.logs import classify_log_entry, iter_log_entries
from jobs.common.config import ConfigError, LogSource
from jobs.common.delta_io import Tables
from jobs.logs.listing import parse_log_sources
from jobs.logs.stage import run_logs
from schemas.logs import COORDINATOR_EVENTS, LOG_FILE_READS, RAW_LOG_LINES
from tests.unit.log_lines import BROKER_LINES, CC, CLIENT_LINES, GC, M1, M2, write_lines

STARTED = dt.datetime(2024, 6, 1, 3, 0, 0)
EVENT_COLUMNS = (
    "cluster string, log_source string, path string, line_number long, event_type string, line_kind string,"
    " timestamp timestamp, broker_id int, offsets_partition int, group_id string, generation int,"
    " member_id string, client_id string, reason string, cause_class string"
)
RAW_COLUMNS = "path string, line_number long, line_count int, text string"
READ_COLUMNS = (
    "path string, first_line long, last_line long, lines_read long, entries long, archived_entries long,"
    " events long, unparsed long, unparsed_lines array<long>, ingest_run_id string"
)


def sources_for(root: Path) -> list[LogSource]:
    return [
        LogSource("c1", "broker-1", (str(root / "broker-1" / "server.log*"),), "Europe/Berlin", 1),
        LogSource("c1", "orders-consumer", (str(root / "client" / "app.log*"),), "UTC", -1),
    ]


def events(tables: Tables) -> DataFrame:
    return (
        tables.read(COORDINATOR_EVENTS)
        .select(*[c.split()[0] for c in EVENT_COLUMNS.split(",")])
        .orderBy("path", "line_number")
    )


def raw_lines(tables: Tables) -> DataFrame:
    return tables.read(RAW_LOG_LINES).select("path", "line_number", "line_count", "text").orderBy(
        "path", "line_number"
    )


def file_reads(tables: Tables) -> DataFrame:
    return tables.read(LOG_FILE_READS).select(*[c.split()[0] for c in READ_COLUMNS.split(",")]).orderBy(
        "path", "first_line"
    )


def run(tables: Tables, root: Path, run_number: int, **kwargs: int):  # type: ignore[no-untyped-def]
    return run_logs(tables, sources_for(root), f"run-{run_number}", STARTED, **kwargs)


@pytest.fixture
def log_root(tmp_path: Path) -> Path:
    (tmp_path / "broker-1").mkdir()
    (tmp_path / "client").mkdir()
    write_lines(tmp_path / "broker-1" / "server.log", BROKER_LINES)
    write_lines(tmp_path / "client" / "app.log", CLIENT_LINES)
    return tmp_path


def test_events_extracted_with_their_fields(spark: SparkSession, tables: Tables, log_root: Path) -> None:
    result = run(tables, log_root, 1)
    server, client = str(log_root / "broker-1" / "server.log"), str(log_root / "client" / "app.log")
    utc = dt.datetime
    expected = spark.createDataFrame(
        [
            ("c1", "orders-consumer", client, 1, "CLIENT_JOINED", "c1_joined", utc(2024, 6, 1, 8, 0, 4, 70000),
             None, None, "orders-svc", 7, M1, "consumer-orders-svc-1", None, None),
            # line 3 (the last) is held back: the active file may still be growing.
            ("c1", "broker-1", server, 2, "MEMBER_FAILED_SESSION_TIMEOUT", "b3_member_failed",
             utc(2024, 6, 1, 8, 0, 1, 3000), 1, None, "orders-svc", None, M2, None, None, "session_timeout"),
            ("c1", "broker-1", server, 3, "REBALANCE_PREPARED", "b1_prepare", utc(2024, 6, 1, 8, 0, 1, 4000), 1, 12,
             "orders-svc", 6, M2, None, f"removing member {M2} on heartbeat expiration", "session_timeout"),
            ("c1", "broker-1", server, 7, "GROUP_STABILIZED", "b2_stabilized", utc(2024, 6, 1, 8, 0, 4, 10000), 1,
             12, "orders-svc", 7, None, None, None, None),
        ],
        EVENT_COLUMNS,
    ).orderBy("path", "line_number")
    actual = events(tables)
    assert_df_equality(actual, expected, ignore_nullable=True, ignore_metadata=True)
    assert [f.name for f in tables.read(COORDINATOR_EVENTS).schema.fields] == COORDINATOR_EVENTS.column_names

    # Archived: the coordinator-looking entries only (not the MBean line, the ReplicaFetcher stack trace
    # or the client's KafkaConsumer line); the unparsed "Frobnicated" line is archived too.
    archived = spark.createDataFrame(
        [(server, 2, 1, BROKER_LINES[1]), (server, 3, 1, BROKER_LINES[2]), (server, 7, 1, BROKER_LINES[6]),
         (server, 8, 1, BROKER_LINES[7]), (client, 1, 1, CLIENT_LINES[0])],
        RAW_COLUMNS,
    ).orderBy("path", "line_number")
    assert_df_equality(raw_lines(tables), archived, ignore_nullable=True, ignore_metadata=True)
    reads = spark.createDataFrame(
        [(server, 1, 8, 8, 6, 4, 3, 1, [8], "run-1"), (client, 1, 2, 2, 2, 1, 1, 0, [], "run-1")], READ_COLUMNS
    ).orderBy("path", "first_line")
    assert_df_equality(file_reads(tables), reads, ignore_nullable=True, ignore_metadata=True)
    summary = {(f["log_source"], f["lines"], f["entries"], f["events"], f["unparsed"], tuple(f["unparsed_lines"]))
               for f in result.files}
    assert summary == {("broker-1", 8, 6, 3, 1, (8,)), ("orders-consumer", 2, 2, 1, 0, ())}


def test_rerun_adds_nothing(spark: SparkSession, tables: Tables, log_root: Path) -> None:
    run(tables, log_root, 1)
    raw_before, events_before = raw_lines(tables).collect(), events(tables).collect()
    reads_before = file_reads(tables).collect()
    again = run(tables, log_root, 2)
    assert_df_equality(raw_lines(tables), spark.createDataFrame(raw_before, RAW_COLUMNS), ignore_nullable=True,
                       ignore_metadata=True)
    assert_df_equality(events(tables), spark.createDataFrame(events_before, EVENT_COLUMNS), ignore_nullable=True,
                       ignore_metadata=True)
    assert_df_equality(file_reads(tables), spark.createDataFrame(reads_before, READ_COLUMNS), ignore_nullable=True,
                       ignore_metadata=True)
    assert len(reads_before) == 2
    assert [(f["lines"], f["events"], f["unparsed"]) for f in again.files] == [(0, 0, 0), (0, 0, 0)]


@pytest.mark.parametrize("local", [True, False], ids=["local-checkpoint", "cluster-cache"])
def test_each_file_is_scanned_once_and_nothing_stays_held(
    spark: SparkSession, tables: Tables, log_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    local: bool,
) -> None:
    """The scan output is read three times (file rows, two appends) but the files are scanned once, both
    as a local run holds it and as a cluster run does; what held it is let go at the end of the stage."""
    import functools

    from jobs.logs import scan, stage

    scans = tmp_path / "scans"
    real_scan = scan.scan_log_files

    def counted_scan(files: DataFrame, **kwargs: object) -> DataFrame:
        path = str(scans)

        def note(batches):  # type: ignore[no-untyped-def]
            for batch in batches:
                with open(path, "a") as handle:
                    handle.write(f"{batch.num_rows}\n")
                yield batch

        return real_scan(files.mapInArrow(note, files.schema), **kwargs)

    monkeypatch.setattr(stage, "scan_log_files", counted_scan)
    monkeypatch.setattr(stage, "held", functools.partial(scan.held, local=local))
    held_before = spark.sparkContext._jsc.sc().getPersistentRDDs().size()
    result = run(tables, log_root, 1)
    assert len(result.files) == 2
    assert sum(int(n) for n in scans.read_text().split()) == 2
    assert spark.sparkContext._jsc.sc().getPersistentRDDs().size() == held_before
    assert raw_lines(tables).count() == result.entries_archived > 0


def test_a_rotated_file_that_did_not_grow_is_not_scanned_again(
    spark: SparkSession, tables: Tables, log_root: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A quiet night: the rotated server.log.1, read to its end, gets no scan task (its file row is made on
    the driver); the active files are scanned as before (their last entry is held back); nothing changes."""
    from jobs.logs import stage

    os.rename(log_root / "broker-1" / "server.log", log_root / "broker-1" / "server.log.1")
    run(tables, log_root, 1)
    reads_before = file_reads(tables).collect()
    real_scan = stage.scan_log_files
    scanned_paths: list[str] = []

    def recorded(files: DataFrame, **kwargs: object) -> DataFrame:
        scanned_paths.extend(r["path"] for r in files.select("path").collect())
        return real_scan(files, **kwargs)

    monkeypatch.setattr(stage, "scan_log_files", recorded)
    again = run(tables, log_root, 2)
    assert scanned_paths == [str(log_root / "client" / "app.log")]
    rotated = next(f for f in again.files if f["path"].endswith("server.log.1"))
    assert (rotated["status"], rotated["lines"], rotated["first_line"]) == ("read", 0, len(BROKER_LINES) + 1)
    assert_df_equality(file_reads(tables), spark.createDataFrame(reads_before, READ_COLUMNS), ignore_nullable=True,
                       ignore_metadata=True)


def test_appended_lines_are_picked_up(spark: SparkSession, tables: Tables, log_root: Path) -> None:
    run(tables, log_root, 1)
    server = log_root / "broker-1" / "server.log"
    write_lines(server, [
        "[2024-06-01 10:05:00,300] INFO [GroupCoordinator 1]: Group orders-svc with generation 8 is now empty"
        " (__consumer_offsets-12) " + GC,
        "[2024-06-01 10:06:00,000] INFO Still running (kafka.server.KafkaServer)",
    ], mode="a")
    result = run(tables, log_root, 2)
    new_events = events(tables).where(F.col("log_source") == "broker-1").select("line_number", "event_type")
    expected = spark.createDataFrame(
        [(2, "MEMBER_FAILED_SESSION_TIMEOUT"), (3, "REBALANCE_PREPARED"), (7, "GROUP_STABILIZED"),
         (9, "GROUP_STABILIZED"), (10, "GROUP_EMPTY")],
        "line_number long, event_type string",
    )
    assert_df_equality(new_events, expected, ignore_nullable=True, ignore_metadata=True)
    broker = next(f for f in result.files if f["log_source"] == "broker-1")
    # The held-back line 9 and the new line 10 are read; line 11 is the new held-back last entry.
    assert (broker["first_line"], broker["lines"], broker["events"]) == (9, 2, 2)
    numbers = [r["line_number"] for r in raw_lines(tables).where(F.col("path") == str(server)).collect()]
    assert numbers == [2, 3, 7, 8, 9, 10]
    ranges = [(r["first_line"], r["last_line"], r["ingest_run_id"])
              for r in file_reads(tables).where(F.col("path") == str(server)).collect()]
    assert ranges == [(1, 8, "run-1"), (9, 10, "run-2")]


def test_rotated_and_gzipped_files(spark: SparkSession, tables: Tables, log_root: Path) -> None:
    run(tables, log_root, 1)
    broker_dir = log_root / "broker-1"
    # log4j rotation: server.log -> server.log.1, a new server.log; then logrotate compresses server.log.1.
    os.rename(broker_dir / "server.log", broker_dir / "server.log.1")
    write_lines(broker_dir / "server.log", [
        "[2024-06-01 11:00:00,000] INFO [GroupCoordinator 1]: Group billing with generation 3 is now empty"
        " (__consumer_offsets-12) " + GC,
        "[2024-06-01 11:00:01,000] INFO Still running (kafka.server.KafkaServer)",
    ])
    # A client log seen for the first time already compressed.
    write_lines(log_root / "client" / "app.log.2.gz", [
        "[2024-05-31 23:59:59,000] INFO [Consumer clientId=consumer-orders-svc-1, groupId=orders-svc] Request"
        " joining group due to: need to re-join with the given member-id: " + M1 + " " + CC,
    ])
    run(tables, log_root, 2)
    with open(broker_dir / "server.log.1", "rb") as plain, gzip.open(broker_dir / "server.log.1.gz", "wb") as gz:
        gz.write(plain.read())
    os.remove(broker_dir / "server.log.1")
    third = run(tables, log_root, 3)

    actual = events(tables).select("path", "line_number", "event_type", "group_id", "cause_class")
    expected = spark.createDataFrame(
        [
            (str(broker_dir / "server.log"), 1, "GROUP_EMPTY", "billing", "group_empty_or_dead"),
            (str(broker_dir / "server.log"), 2, "MEMBER_FAILED_SESSION_TIMEOUT", "orders-svc", "session_timeout"),
            (str(broker_dir / "server.log"), 3, "REBALANCE_PREPARED", "orders-svc", "session_timeout"),
            (str(broker_dir / "server.log"), 7, "GROUP_STABILIZED", "orders-svc", None),
            (str(broker_dir / "server.log.1"), 9, "GROUP_STABILIZED", "billing", None),
            (str(log_root / "client" / "app.log"), 1, "CLIENT_JOINED", "orders-svc", None),
            (str(log_root / "client" / "app.log.2.gz"), 1, "CLIENT_REJOIN_REQUESTED", "orders-svc", "new_member"),
        ],
        "path string, line_number long, event_type string, group_id string, cause_class string",
    ).orderBy("path", "line_number")
    assert_df_equality(actual.orderBy("path", "line_number"), expected, ignore_nullable=True, ignore_metadata=True)
    # Run 3 saw the .gz copy as the file it already read: nothing new.
    assert sum(f["lines"] for f in third.files) == 0
    assert {f["path"] for f in third.files} >= {str(broker_dir / "server.log.1.gz")}
    grain = tables.read(RAW_LOG_LINES).groupBy("cluster", "file_id", "line_number").count()
    # 7 entries of the first server.log (its last one read from server.log.1), 1 of the new server.log (its
    # last held back), 2 of app.log (last held back), 1 of app.log.2.gz; no grain twice.
    assert grain.where(F.col("count") > 1).count() == 0
    # Archived entries: lines 2, 3, 7, 8 of the first server.log and its line 9 read from server.log.1, line 1
    # of the new server.log (its line 2 held back), line 1 of app.log, line 1 of app.log.2.gz.
    assert grain.count() == 8
    reads = file_reads(tables).select("path", "first_line", "last_line", "ingest_run_id")
    expected_reads = spark.createDataFrame(
        [(str(broker_dir / "server.log"), 1, 1, "run-2"), (str(broker_dir / "server.log"), 1, 8, "run-1"),
         (str(broker_dir / "server.log.1"), 9, 9, "run-2"), (str(log_root / "client" / "app.log"), 1, 2, "run-1"),
         (str(log_root / "client" / "app.log.2.gz"), 1, 1, "run-2")],
        "path string, first_line long, last_line long, ingest_run_id string",
    )
    assert_df_equality(reads, expected_reads, ignore_nullable=True, ignore_metadata=True, ignore_row_order=True)


def test_malformed_coordinator_lines_counted_per_file(tables: Tables, tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    write_lines(tmp_path / "b" / "server.log.3", [
        "[2024-06-01 10:00:00,000] INFO [GroupCoordinator 2]: Stabilized group g generation seven " + GC,
        "[2024-06-01 10:00:01,000] INFO Some unrelated line (kafka.server.KafkaServer)",
        "[2024-06-01 10:00:02,000] INFO [GroupCoordinator 2]: Stabilized group g generation 7 " + GC,
        "[GroupCoordinator 2]: a coordinator line without its envelope",
        "[2024-06-01 10:00:03,000] DEBUG [GroupCoordinator 2]: Some debug text nobody catalogued " + GC,
    ])
    write_lines(tmp_path / "b" / "server.log.4", [
        "[2024-06-01 09:00:00,000] INFO [GroupMetadataManager brokerId=2] Made up text " + GC,
    ])
    result = run_logs(tables, [LogSource("c2", "broker-2", (str(tmp_path / "b" / "server.log*"),), "UTC", 2)],
                      "run-1", STARTED)
    counts = sorted((Path(f["path"]).name, f["events"], f["unparsed"], f["unparsed_below_info"],
                     tuple(f["unparsed_lines"])) for f in result.files)
    # Line 4 has no envelope: it continues line 3's entry, which still parses.
    assert counts == [("server.log.3", 1, 1, 1, (1,)), ("server.log.4", 0, 1, 0, (1,))]


def test_log_sources_config_is_strict(tmp_path: Path) -> None:
    sources = parse_log_sources([{"cluster": "c", "source": "b1", "paths": ["logs/server.log*"], "broker_id": 1}],
                                root=tmp_path)
    assert sources == (LogSource("c", "b1", (str(tmp_path / "logs/server.log*"),), "UTC", 1),)
    with pytest.raises(ConfigError, match=r"sources.logs\[0\].path"):
        parse_log_sources([{"cluster": "c", "source": "b1", "path": "x"}], root=tmp_path)


def test_multi_line_coordinator_entries_archived_joined(spark: SparkSession, tables: Tables, tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    load_error = [
        "[2024-06-01 10:00:08,000] ERROR [GroupMetadataManager brokerId=1] Error loading offsets from"
        " __consumer_offsets-12 (kafka.coordinator.group.GroupMetadataManager)",
        "org.apache.kafka.common.errors.NotLeaderOrFollowerException: x",
        "\tat kafka.coordinator.group.GroupMetadataManager.load(GroupMetadataManager.scala:1)",
    ]
    update = [
        "[2024-06-01 10:00:09,000] INFO [Consumer clientId=c-1, groupId=orders-svc] Updating assignment with",
        "\tAssigned partitions:                       [orders-0, orders-1]",
        "\tRevoked partitions (owned - assigned):     []",
        " (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)",
    ]
    unrelated = ["[2024-06-01 10:00:10,000] WARN fetch failed (kafka.server.ReplicaFetcherThread)",
                 "\tat x.y(Z.java:1)"]
    path = tmp_path / "b" / "server.log.1"
    write_lines(path, [*unrelated, *load_error, *unrelated, *update])
    run_logs(tables, [LogSource("c3", "broker-1", (str(path),), "UTC", 1)], "run-1", STARTED)
    expected_raw = spark.createDataFrame(
        [(str(path), 3, 3, "\n".join(load_error)), (str(path), 8, 4, "\n".join(update))], RAW_COLUMNS
    )
    assert_df_equality(raw_lines(tables), expected_raw, ignore_nullable=True, ignore_metadata=True)
    actual = tables.read(COORDINATOR_EVENTS).select("line_number", "event_type", "offsets_partition", "error",
                                                    "partitions").orderBy("line_number")
    expected = spark.createDataFrame(
        [(3, "OFFSETS_LOAD_FAILED", 12, "org.apache.kafka.common.errors.NotLeaderOrFollowerException", None),
         (8, "CLIENT_COOPERATIVE_UPDATE", None, None, "orders-0, orders-1")],
        "line_number long, event_type string, offsets_partition int, error string, partitions string",
    )
    assert_df_equality(actual, expected, ignore_nullable=True, ignore_metadata=True)
    assert [f.name for f in tables.read(LOG_FILE_READS).schema.fields] == LOG_FILE_READS.column_names
    assert [f.name for f in tables.read(RAW_LOG_LINES).schema.fields] == RAW_LOG_LINES.column_names


def test_archive_all_entries_keeps_every_entry(spark: SparkSession, tables: Tables, log_root: Path) -> None:
    run_logs(tables, sources_for(log_root)[:1], "run-1", STARTED, archive_all_entries=True)
    server = str(log_root / "broker-1" / "server.log")
    expected = spark.createDataFrame(
        [(server, 1, 1, BROKER_LINES[0]), (server, 2, 1, BROKER_LINES[1]), (server, 3, 1, BROKER_LINES[2]),
         (server, 4, 3, "\n".join(BROKER_LINES[3:6])), (server, 7, 1, BROKER_LINES[6]),
         (server, 8, 1, BROKER_LINES[7])],
        RAW_COLUMNS,
    )
    assert_df_equality(raw_lines(tables), expected, ignore_nullable=True, ignore_metadata=True)
    assert [r["event_type"] for r in events(tables).collect()] == [
        "MEMBER_FAILED_SESSION_TIMEOUT", "REBALANCE_PREPARED", "GROUP_STABILIZED"]


def test_unreadable_file_is_reported_not_fatal(spark: SparkSession, tables: Tables, tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    write_lines(tmp_path / "b" / "server.log.2", BROKER_LINES[1:3])
    stabilized = [f"[2024-06-01 09:{i // 60 % 60:02d}:{i % 60:02d},000] INFO [GroupCoordinator 1]: Stabilized group"
                  f" g{i * 7919 % 10007} generation {i} (__consumer_offsets-{i % 50}) with 2 members {GC}"
                  for i in range(20000)]
    complete = gzip.compress("".join(line + "\n" for line in stabilized).encode())
    (tmp_path / "b" / "server.log.1.gz").write_bytes(complete[: len(complete) // 2])  # cut by a full disk
    # Small blocks, so that some blocks are read before the cut.
    result = run_logs(tables, [LogSource("c4", "broker-1", (str(tmp_path / "b" / "server.log*"),), "UTC", 1)],
                      "run-1", STARTED, block_bytes=64 << 10)
    errors = {Path(path).name: error.split(":")[0] for path, error in result.read_errors}
    assert list(errors) == ["server.log.1.gz"]
    assert errors["server.log.1.gz"].startswith("truncated or corrupt gzip at uncompressed byte ")
    numbers = [r["line_number"] for r in events(tables).where(F.col("path").endswith("server.log.2")).collect()]
    assert numbers == [1, 2]
    assert "read stopped: truncated or corrupt gzip" in result.format()
    # What was read before the cut is recorded and parsed: every line up to the position is an event.
    (gz_read,) = tables.read(LOG_FILE_READS).where(F.col("path").endswith(".gz")).collect()
    assert (gz_read["first_line"], gz_read["status"]) == (1, "read_with_errors")
    assert "EOFError" in gz_read["read_error"]
    assert 0 < gz_read["last_line"] < len(stabilized)
    gz_events = events(tables).where(F.col("path").endswith(".gz")).select("line_number").collect()
    assert [r["line_number"] for r in gz_events] == list(range(1, gz_read["last_line"] + 1))


# -- damaged input: every listed file accounted for, damaged lines counted (issue #20) --------------------

SAMPLE_BROKER_LOG = Path(__file__).parents[2] / "samples" / "kafka-3.9.1" / "broker" / "server.log"
DAMAGE_COLUMNS = (
    "path string, status string, first_line long, last_line long, malformed_lines long, overlong_lines long,"
    " invalid_utf8_lines long"
)


def damage(tables: Tables) -> DataFrame:
    return tables.read(LOG_FILE_READS).select(*[c.split()[0] for c in DAMAGE_COLUMNS.split(",")]).orderBy(
        "path", "first_line")


def gzip_cut_at(data: bytes, available: int) -> tuple[bytes, int]:
    """A gzip of `data` cut short so that about `available` uncompressed bytes can still be read; the cut
    compressed bytes and how many uncompressed bytes they give (zlib's own count, not the code under test)."""
    import zlib

    compressed = gzip.compress(data)
    low, high = 20, len(compressed) - 9  # a cut inside the deflate stream, before the trailer
    while low < high:
        mid = (low + high) // 2
        if len(zlib.decompressobj(31).decompress(compressed[:mid])) < available:
            low = mid + 1
        else:
            high = mid
    cut = compressed[:low]
    return cut, len(zlib.decompressobj(31).decompress(cut))


def reference_events_before(data: bytes, zone: str = "UTC", broker_id: int = 1) -> tuple[int, list[int]]:
    """(complete lines, line numbers of their events) of `data` as the reference reader sees them: the line
    cut in the middle is no line."""
    import io

    complete = data[: data.rfind(b"\n") + 1]
    entries = list(iter_log_entries(io.StringIO(complete.decode("utf-8", "replace"))))
    numbers = [e.line_number for e in entries
               if classify_log_entry(e.text, source_zone=zone, broker_id=broker_id).status == "event"]
    return complete.count(b"\n"), numbers


@pytest.mark.parametrize("available", [50_000, 150_000], ids=["cut-in-first-64KiB", "cut-past-64KiB"])
def test_truncated_gzip_is_read_up_to_the_cut(spark: SparkSession, tables: Tables, tmp_path: Path,
                                              available: int) -> None:
    sample = SAMPLE_BROKER_LOG.read_bytes()
    cut, readable = gzip_cut_at(sample, available)
    assert readable < len(sample)
    (tmp_path / "b").mkdir()
    gz = tmp_path / "b" / "server.log.1.gz"
    gz.write_bytes(cut)
    lines, event_lines = reference_events_before(sample[:readable])
    assert event_lines, "the cut keeps some coordinator events"
    sources = [LogSource("c5", "broker-1", (str(tmp_path / "b" / "server.log*"),), "UTC", 1)]
    result = run_logs(tables, sources, "run-1", STARTED)
    expected = spark.createDataFrame([(str(gz), "read_with_errors", 1, lines, 0, 0, 0)], DAMAGE_COLUMNS)
    assert_df_equality(damage(tables), expected, ignore_nullable=True, ignore_metadata=True)
    (row,) = tables.read(LOG_FILE_READS).collect()
    assert row["read_error"].startswith(f"truncated or corrupt gzip at uncompressed byte {readable}")
    assert [r["line_number"] for r in events(tables).collect()] == event_lines
    assert f"read stopped: truncated or corrupt gzip at uncompressed byte {readable}" in result.format()
    # The next night the file is as it was: its read stops at the same cut, nothing new, no new row.
    again = run_logs(tables, sources, "run-2", STARTED)
    assert tables.read(LOG_FILE_READS).count() == 1
    assert again.files[0]["status"] == "read_with_errors" and again.files[0]["lines"] == 0


def test_files_that_cannot_be_read_get_a_row(spark: SparkSession, tables: Tables, tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    write_lines(tmp_path / "b" / "server.log.2", BROKER_LINES[1:3])
    (tmp_path / "b" / "server.log.3.gz").write_bytes("".join(line + "\n" for line in BROKER_LINES).encode())
    (tmp_path / "b" / "server.log.4").write_bytes(b"")  # rotated, empty: it will never get a first line
    (tmp_path / "b" / "server.log").write_bytes(b"[2024-06-01 10:00:00,000] INFO Starting")  # active, no newline yet
    sources = [LogSource("c6", "broker-1", (str(tmp_path / "b" / "server.log*"),), "UTC", 1)]
    result = run_logs(tables, sources, "run-1", STARTED)
    rows = {Path(r["path"]).name: (r["status"], r["lines_read"], r["read_error"])
            for r in tables.read(LOG_FILE_READS).collect()}
    assert set(rows) == {"server.log", "server.log.2", "server.log.3.gz", "server.log.4"}
    assert rows["server.log.2"] == ("read", 2, None)
    assert rows["server.log.3.gz"][:2] == ("unreadable", 0) and "BadGzipFile" in rows["server.log.3.gz"][2]
    assert rows["server.log.4"][:2] == ("unreadable", 0) and "no complete first line" in rows["server.log.4"][2]
    assert rows["server.log"][:2] == ("waiting", 0) and "no complete first line" in rows["server.log"][2]
    summary = result.format()
    assert "server.log.3.gz: unreadable: " in summary and "server.log: waiting: " in summary
    # Unchanged files: the same rows, none repeated.
    run_logs(tables, sources, "run-2", STARTED)
    assert sorted(r["ingest_run_id"] for r in tables.read(LOG_FILE_READS).collect()) == ["run-1"] * 4


def test_damaged_lines_counted_and_still_parsed(spark: SparkSession, tables: Tables, tmp_path: Path) -> None:
    stabilized = BROKER_LINES[6].encode()
    at = stabilized.index(b"Stabilized") + 5
    damaged = stabilized[:at] + b"\xff" + stabilized[at:]  # one invalid byte inside "Stabilized"
    assert classify_log_entry(damaged.decode("utf-8", "replace"), source_zone="UTC").status == "unparsed"
    long_line = b"[2024-06-01 10:00:08,000] INFO [GroupCoordinator 1]: " + b"x" * 10_000_000 + b" " + GC.encode()
    lines = [
        BROKER_LINES[0].encode(),
        b"\x00\x01\x02PK\x03\x04 binary garbage \xfe\xff",
        b"garbage with a bell \x07 and NULs \x00\x00",
        BROKER_LINES[1].encode(),
        damaged,
        long_line,
        "[2024-06-01 10:00:09,000] INFO [GroupCoordinator 1]: Stabilized group café generation 2"
        " (__consumer_offsets-3) with 1 members ".encode() + GC.encode(),
    ]
    (tmp_path / "b").mkdir()
    log = tmp_path / "b" / "server.log.1"
    log.write_bytes(b"".join(line + b"\n" for line in lines))
    max_line_bytes = 1 << 20

    def valid_utf8(line: bytes) -> bool:
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return True

    expected_counts = (
        sum(any(b < 32 and b not in (9, 13, 27) for b in line) for line in lines),
        sum(len(line) > max_line_bytes for line in lines),
        sum(not valid_utf8(line) for line in lines),
    )
    assert expected_counts == (2, 1, 2)
    result = run_logs(tables, [LogSource("c7", "broker-1", (str(tmp_path / "b" / "server.log*"),), "UTC", 1)],
                      "run-1", STARTED, max_line_bytes=max_line_bytes)
    expected = spark.createDataFrame([(str(log), "read_with_errors", 1, 7, *expected_counts)], DAMAGE_COLUMNS)
    assert_df_equality(damage(tables), expected, ignore_nullable=True, ignore_metadata=True)
    (summary,) = result.files
    assert (summary["malformed_lines"], summary["overlong_lines"], summary["invalid_utf8_lines"]) == expected_counts
    assert "2 malformed, 1 over-long (cut), 2 invalid UTF-8" in result.format()
    found = [(r["line_number"], r["event_type"], r["group_id"], r["generation"])
             for r in events(tables).collect()]
    assert found == [(4, "MEMBER_FAILED_SESSION_TIMEOUT", "orders-svc", None),
                     (5, "GROUP_STABILIZED", "orders-svc", 7), (7, "GROUP_STABILIZED", "café", 2)]
    # The over-long line is archived cut to max_line_bytes; the damaged one as read (replacement character).
    archived = {r["line_number"]: r["text"] for r in raw_lines(tables).collect()}
    assert len(archived[6].encode()) == max_line_bytes and archived[6].startswith(long_line[:60].decode())
    assert archived[5] == damaged.decode("utf-8", "replace")


def test_log_file_reads_of_the_old_layout_gains_the_new_columns(spark: SparkSession, tables: Tables,
                                                                  tmp_path: Path) -> None:
    """A warehouse written before log_file_reads had its status and damage counts keeps working: the
    table gains the columns (null in the old rows) when the stage ensures it, registered or not."""
    from pyspark.sql import types as T

    new = ["status", "malformed_lines", "overlong_lines", "invalid_utf8_lines"]
    old_schema = T.StructType([f for f in LOG_FILE_READS.schema.fields if f.name not in new])
    assert [f.name for f in LOG_FILE_READS.schema.fields][-len(new):] == new
    old_row = ("c1", "f" * 32, 1, 1, 10, "broker-1", "/x/server.log", 1, 1, 0, 0, 0, 0, 0, [], None, "run-0",
               dt.datetime(2024, 5, 1))
    # Not registered in the catalog (a new metastore): registered as it is found, then evolved.
    spark.createDataFrame([old_row], old_schema).write.format("delta").save(tables.path(LOG_FILE_READS))
    tables.ensure(LOG_FILE_READS)
    got = tables.read(LOG_FILE_READS)
    assert [f.name for f in got.schema.fields] == LOG_FILE_READS.column_names
    assert [tuple(r) for r in got.select(*new).collect()] == [(None, None, None, None)]
    # Registered in the catalog with the old columns (the common case of an existing warehouse).
    other = Tables(spark, tables.database + "_old", str(tmp_path / "old"))
    other.ensure_database()
    spark.createDataFrame([old_row], old_schema).write.format("delta").saveAsTable(
        f"{other.database}.{LOG_FILE_READS.name}", path=other.path(LOG_FILE_READS))
    other.ensure(LOG_FILE_READS)
    assert [f.name for f in other.read(LOG_FILE_READS).schema.fields] == LOG_FILE_READS.column_names
    # Columns that are not an extension of the old ones are still refused.
    wrong = Tables(spark, tables.database + "_wrong", str(tmp_path / "wrong"))
    wrong.ensure_database()
    spark.createDataFrame([("c1",)], "cluster string").write.format("delta").save(wrong.path(LOG_FILE_READS))
    with pytest.raises(ValueError, match="columns are not log_file_reads'"):
        wrong.ensure(LOG_FILE_READS)


def test_the_nightly_logs_stage_cuts_lines_at_the_configured_max_line_bytes(spark: SparkSession, tmp_path: Path
                                                                           ) -> None:
    """`[logs] max_line_bytes` reaches the scan through the nightly job (it once read the default whatever
    the configuration said): a 5,000-byte line is over-long at 2,048 and archived cut there."""
    from jobs.common.config import Config, LogsConfig, SourcesConfig, TablesConfig
    from jobs.nightly import run_nightly
    from jobs.stages import STAGES

    long_line = f"[2024-06-01 10:00:08,000] INFO [GroupCoordinator 1]: {'y' * 5000} {GC}".encode()
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "server.log.1").write_bytes(BROKER_LINES[1].encode() + b"\n" + long_line + b"\n")
    config = Config(
        sources=SourcesConfig(mode="none", logs=(LogSource("c9", "broker-1", (str(tmp_path / "b" / "server.log*"),),
                                                           "UTC", 1),)),
        tables=TablesConfig(database="cgh_logs_max_line", location=str(tmp_path / "tables")),
        logs=LogsConfig(max_line_bytes=2048),
    )
    run_nightly(spark, config, stages=tuple(s for s in STAGES if s.name == "logs"))
    tables = Tables(spark, config.tables.database, config.tables.location)
    (row,) = tables.read(LOG_FILE_READS).select("overlong_lines", "malformed_lines").collect()
    assert (row["overlong_lines"], row["malformed_lines"]) == (1, 0)
    texts = [r["text"] for r in tables.read(RAW_LOG_LINES).where("line_number = 2").collect()]
    assert [len(t.encode()) for t in texts] == [2048]


def test_the_first_nightly_run_after_log_file_reads_gained_columns_rolls_nothing_back(
        spark: SparkSession, tmp_path: Path) -> None:
    """A warehouse whose log_file_reads has the older layout: the run adds the columns and keeps them. (The
    rollback used to run after the tables were ensured: it took the added columns for a dead run's write
    and restored the old layout, printing a false "rolled back log_file_reads".)"""
    from pyspark.sql import types as T

    from jobs.common.config import Config, SourcesConfig, TablesConfig
    from jobs.nightly import run_nightly
    from jobs.stages import STAGES

    new = ["status", "malformed_lines", "overlong_lines", "invalid_utf8_lines"]
    old_schema = T.StructType([f for f in LOG_FILE_READS.schema.fields if f.name not in new])
    old_row = ("c1", "f" * 32, 1, 1, 10, "broker-1", "/x/server.log", 1, 1, 0, 0, 0, 0, 0, [], None, "run-0",
               dt.datetime(2024, 5, 1))
    config = Config(sources=SourcesConfig(mode="none"),
                    tables=TablesConfig(database="cgh_logs_upgrade", location=str(tmp_path / "tables")))
    tables = Tables(spark, config.tables.database, config.tables.location)
    spark.createDataFrame([old_row], old_schema).write.format("delta").save(tables.path(LOG_FILE_READS))
    # The logs stage owns log_file_reads (no log sources here: it reads nothing, its table is still ensured).
    run_nightly(spark, config, stages=tuple(s for s in STAGES if s.name == "logs"))
    operations = [r["operation"] for r in tables.delta(LOG_FILE_READS).history().collect()]
    assert "RESTORE" not in operations, operations
    assert tables.read(LOG_FILE_READS).columns == LOG_FILE_READS.column_names
    assert tables.read(LOG_FILE_READS).count() == 1
