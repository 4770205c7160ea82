"""Logs stage: log files -> raw_log_lines -> coordinator_events, incremental by file identity and position.

Log files are written into tmp_path line by line here; expected rows are written out by hand from those
lines (timestamps converted to UTC by hand), never computed by the code under test.
"""

from __future__ import annotations

import datetime as dt
import glob
import gzip
import os
from pathlib import Path

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from coordinator_core.logs import iter_log_entries
from jobs.common.config import ConfigError
from jobs.common.delta_io import Tables
from jobs.logs import (
    LogSource,
    classify_entries,
    file_identity,
    parse_log_sources,
    read_entries,
    run_logs,
)
from schemas.logs import COORDINATOR_EVENTS, RAW_LOG_LINES

STARTED = dt.datetime(2024, 6, 1, 3, 0, 0)
M1 = "consumer-orders-svc-1-1a2b3c4d-0000-4e5f-8a9b-0123456789ab"
M2 = "consumer-orders-svc-2-5e6f7a8b-1111-4c2d-9e8f-fedcba987654"
GC = "(kafka.coordinator.group.GroupCoordinator)"
NGMM = "(org.apache.kafka.coordinator.group.GroupMetadataManager)"
CC = "(org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)"

# Broker 1 writes local time in Europe/Berlin (CEST, UTC+2 in June).
BROKER_LINES = [
    "[2024-06-01 10:00:00,000] INFO Registered kafka:type=kafka.Log4jController MBean"
    " (kafka.utils.Log4jControllerRegistration$)",
    "[2024-06-01 10:00:01,003] INFO [GroupCoordinator 1]: Member " + M2 + " in group orders-svc has failed,"
    " removing it from the group " + GC,
    "[2024-06-01 10:00:01,004] INFO [GroupCoordinator 1]: Preparing to rebalance group orders-svc in state"
    " PreparingRebalance with old generation 6 (__consumer_offsets-12) (reason: removing member " + M2
    + " on heartbeat expiration) " + GC,
    "[2024-06-01 10:00:02,000] WARN [ReplicaFetcher replicaId=1, leaderId=2, fetcherId=0] Error in response"
    " (kafka.server.ReplicaFetcherThread)",
    "org.apache.kafka.common.errors.DisconnectException",
    "\tat org.apache.kafka.clients.NetworkClient.poll(NetworkClient.java:123)",
    "[2024-06-01 10:00:04,010] INFO [GroupCoordinator 1]: Stabilized group orders-svc generation 7"
    " (__consumer_offsets-12) with 2 members " + GC,
    "[2024-06-01 10:00:05,000] INFO [GroupCoordinator 1]: Frobnicated group orders-svc beyond repair " + GC,
    "[2024-06-01 10:00:06,000] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=12] Stabilized"
    " group billing generation 3 with 1 members. " + NGMM,
]
CLIENT_LINES = [
    "[2024-06-01 08:00:04,070] INFO [Consumer clientId=consumer-orders-svc-1, groupId=orders-svc] Successfully"
    " joined group with generation Generation{generationId=7, memberId='" + M1 + "', protocol='range'} " + CC,
    "[2024-06-01 08:00:04,080] INFO [Consumer clientId=consumer-orders-svc-1, groupId=orders-svc] Subscribed to"
    " topic(s): orders (org.apache.kafka.clients.consumer.KafkaConsumer)",
    "[2024-06-01 08:00:05,501] INFO [Consumer clientId=consumer-orders-svc-1, groupId=orders-svc] Request"
    " joining group due to: group is already rebalancing " + CC,
]

EVENT_COLUMNS = (
    "cluster string, log_source string, path string, line_number long, event_type string, line_kind string,"
    " timestamp timestamp, broker_id int, offsets_partition int, group_id string, generation int,"
    " member_id string, client_id string, reason string, cause_class string"
)
RAW_COLUMNS = "path string, line_number long, line_count int, text string"


def write_lines(path: Path, lines: list[str], mode: str = "w") -> None:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, mode + "t", encoding="utf-8", newline="") as handle:
        handle.write("".join(line + "\n" for line in lines))


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

    stack_trace = spark.createDataFrame(
        [(server, 4, 3, "\n".join(BROKER_LINES[3:6]))], RAW_COLUMNS
    )
    assert_df_equality(raw_lines(tables).where(F.col("line_count") > 1), stack_trace, ignore_nullable=True, ignore_metadata=True)
    summary = {(f["log_source"], f["lines"], f["events"], f["unparsed"], tuple(f["unparsed_lines"]))
               for f in result.files}
    assert summary == {("broker-1", 8, 3, 1, (8,)), ("orders-consumer", 2, 1, 0, ())}


def test_rerun_adds_nothing(spark: SparkSession, tables: Tables, log_root: Path) -> None:
    run(tables, log_root, 1)
    raw_before, events_before = raw_lines(tables).collect(), events(tables).collect()
    again = run(tables, log_root, 2)
    assert_df_equality(raw_lines(tables), spark.createDataFrame(raw_before, RAW_COLUMNS), ignore_nullable=True, ignore_metadata=True)
    assert_df_equality(events(tables), spark.createDataFrame(events_before, EVENT_COLUMNS), ignore_nullable=True, ignore_metadata=True)
    assert [(f["lines"], f["events"], f["unparsed"]) for f in again.files] == [(0, 0, 0), (0, 0, 0)]


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
    assert numbers == [1, 2, 3, 4, 7, 8, 9, 10]


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
    assert grain.count() == 11


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


def test_fast_reader_joins_entries_like_the_reference_reader(tmp_path: Path) -> None:
    lines = [
        "continuation before any head",
        *BROKER_LINES,
        "[2024-06-01 10:00:07,000] ERROR boom (kafka.server.KafkaApis)\r",
        *[f"\tat frame{i}" for i in range(40)],
        "Caused by: java.lang.IllegalStateException: x\r",
        *CLIENT_LINES,
    ]
    path = tmp_path / "mixed.log.1"
    write_lines(path, lines)
    with open(path, encoding="utf-8") as handle:
        reference = [(e.line_number, e.line_count, e.text) for e in iter_log_entries(handle)]
    for block_bytes in (64, 300, 1 << 20):
        got = [
            row
            for numbers, counts, texts in read_entries(str(path), 0, False, block_bytes)
            for row in zip(numbers.tolist(), counts.tolist(), texts.to_pylist())
        ]
        assert got == reference, block_bytes
    skipped = [n for numbers, _, _ in read_entries(str(path), 10, True, 128) for n in numbers.tolist()]
    assert skipped == [n for n, _, _ in reference if n > 10][:-1]


def test_container_prefixed_files_use_the_reference_reader(tmp_path: Path) -> None:
    path = tmp_path / "kafka-0.log"
    write_lines(path, [
        "2024-06-01T10:00:00.000000001Z stdout P [2024-06-01 10:00:00,000] INFO [GroupCoordinator 1]: Stabilized",
        "2024-06-01T10:00:00.000000002Z stdout F  group g generation 7 " + GC,
        "2024-06-01T10:00:01.000000000Z stdout F [2024-06-01 10:00:01,000] INFO x (kafka.server.KafkaServer)",
    ])
    got = [row for n, c, t in read_entries(str(path), 0, False) for row in zip(n.tolist(), c.tolist(), t.to_pylist())]
    assert got == [
        (1, 2, "[2024-06-01 10:00:00,000] INFO [GroupCoordinator 1]: Stabilized group g generation 7 " + GC),
        (3, 1, "[2024-06-01 10:00:01,000] INFO x (kafka.server.KafkaServer)"),
    ]


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


def test_log_sources_config_is_strict(tmp_path: Path) -> None:
    sources = parse_log_sources([{"cluster": "c", "source": "b1", "paths": ["logs/server.log*"], "broker_id": 1}],
                                root=tmp_path)
    assert sources == (LogSource("c", "b1", (str(tmp_path / "logs/server.log*"),), "UTC", 1),)
    with pytest.raises(ConfigError, match="sources.logs\\[0\\].path"):
        parse_log_sources([{"cluster": "c", "source": "b1", "path": "x"}], root=tmp_path)


def test_prefilter_keeps_every_entry_the_parser_does_not_call_unrelated(spark: SparkSession) -> None:
    from coordinator_core.logs import classify_log_entry

    texts = [*BROKER_LINES, *CLIENT_LINES, '{"message": "[GroupCoordinator 1]: Stabilized group g generation 7"}',
             '{"message": "hello", "logger_name": "kafka.server.KafkaServer"}', "[GroupCoordinator 3]: bare"]
    rows = [("c", "f", i + 1, t, None, "UTC") for i, t in enumerate(texts)]
    raw = spark.createDataFrame(rows, "cluster string, file_id string, line_number long, text string,"
                                      " broker_id int, source_zone string")
    kept = {r["line_number"] for r in classify_entries(raw).collect()}
    related = {i + 1 for i, t in enumerate(texts) if classify_log_entry(t).status != "unrelated"}
    assert related <= kept
    assert kept - related <= {2 + len(BROKER_LINES)}  # the client's "Subscribed" line (consumer prefix, other logger)
