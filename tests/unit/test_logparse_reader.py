"""The multi-line reader: entry joining, line numbers, per-source counts, files (plain and .gz), and the
patterns' behaviour in the JVM (the Spark job runs them through java.util.regex)."""

from __future__ import annotations

import base64
import gzip
import importlib.util
import re
import shutil
import subprocess
from datetime import datetime, timezone
from pathlib import Path

from coordinator_core.logs import (
    CONTAINER_PREFIXES,
    ENVELOPE_PATTERNS,
    LINE_KINDS,
    MESSAGE_PREFIXES,
    REASON_RULES,
    THREAD_NAMES,
    LogReadStats,
    iter_log_entries,
    read_log_lines,
    to_python_pattern,
)
from coordinator_core.logs.envelope import parse_envelope, zone_of

DATA = Path(__file__).parent / "data" / "logs"
CC = "org.apache.kafka.clients.consumer.internals.ConsumerCoordinator"
GMM = "kafka.coordinator.group.GroupMetadataManager"
PREFIX = "[Consumer clientId=consumer-orders-svc-1, groupId=orders-svc] "

SERVER_LOG = [
    "[2023-01-01 12:30:00,100] INFO [GroupMetadataManager brokerId=2] Scheduling loading of offsets and group"
    f" metadata from __consumer_offsets-12 for epoch 15 ({GMM})",
    "[2023-01-01 12:30:00,200] ERROR [GroupMetadataManager brokerId=2] Error loading offsets from"
    f" __consumer_offsets-12 ({GMM})",
    "java.lang.IllegalStateException: Unexpected unload of active group orders-svc",
    "\tat kafka.coordinator.group.GroupMetadataManager.loadGroup(GroupMetadataManager.scala:812)",
    "\tat kafka.coordinator.group.GroupMetadataManager.doLoadGroupsAndOffsets(GroupMetadataManager.scala:600)",
    "Caused by: java.lang.RuntimeException: boom",
    "\t... 12 more",
    "[2023-01-01 12:30:00,300] INFO [KafkaServer id=2] started (kafka.server.KafkaServer)",
    "[2023-01-01 12:30:00,400] INFO [GroupCoordinator 2]: Stabilized group orders-svc generation x"
    " (__consumer_offsets-12) (kafka.coordinator.group.GroupCoordinator)",
    "[2023-01-01 12:30:00,500] INFO [GroupCoordinator 2]: Static member joins during Stable stage will not trigger"
    " rebalance. (kafka.coordinator.group.GroupCoordinator)",
    "[2023-01-01 12:30:00,600] INFO [GroupCoordinator 2]: Stabilized group orders-svc generation 8"
    " (__consumer_offsets-12) with 1 members (kafka.coordinator.group.GroupCoordinator)",
]


def test_stack_trace_is_joined_to_its_entry_and_line_numbers_are_first_lines() -> None:
    stats = LogReadStats()
    events = list(read_log_lines(SERVER_LOG, source="broker-2/server.log", source_zone="Europe/Berlin",
                                 stats=stats))
    assert [(e.event_type, e.line_number, e.source) for e in events] == [
        ("OFFSETS_LOAD_SCHEDULED", 1, "broker-2/server.log"),
        ("OFFSETS_LOAD_FAILED", 2, "broker-2/server.log"),
        ("GROUP_STABILIZED", 11, "broker-2/server.log"),
    ]
    failed = events[1]
    assert (failed.level, failed.error, failed.offsets_partition, failed.broker_id, failed.timestamp) == (
        "ERROR", "java.lang.IllegalStateException", 12, 2, datetime(2023, 1, 1, 11, 30, 0, 200000, tzinfo=timezone.utc))
    assert failed.message == "[GroupMetadataManager brokerId=2] Error loading offsets from __consumer_offsets-12"
    assert (stats.source, stats.physical_lines, stats.entries, stats.events, stats.known_non_events,
            stats.unrelated, stats.unparsed, stats.unparsed_below_info) == (
        "broker-2/server.log", 11, 6, 3, 1, 1, 1, 0)
    assert stats.unparsed_examples == [(9, SERVER_LOG[8])]
    assert dict(stats.events_by_type) == {"OFFSETS_LOAD_SCHEDULED": 1, "OFFSETS_LOAD_FAILED": 1, "GROUP_STABILIZED": 1}


def test_logger_suffix_on_its_own_line_after_a_multi_line_message() -> None:
    lines = [
        f"[2023-01-01 12:00:04,090] INFO {PREFIX}Updating assignment with",
        "\tAssigned partitions:                       [orders-0, orders-1, orders-2]",
        "\tCurrent owned partitions:                  [orders-0, orders-1]",
        "\tAdded partitions (assigned - owned):       [orders-2]",
        "\tRevoked partitions (owned - assigned):     []",
        f" ({CC})",
        f"[2023-01-01 12:00:04,091] INFO {PREFIX}Adding newly assigned partitions: orders-2 ({CC})",
    ]
    entries = list(iter_log_entries(lines))
    assert [(e.line_number, e.line_count) for e in entries] == [(1, 6), (7, 1)]
    events = list(read_log_lines(lines))
    assert [(e.event_type, e.line_number, e.logger, e.partitions) for e in events] == [
        ("CLIENT_COOPERATIVE_UPDATE", 1, CC, "orders-0, orders-1, orders-2"),
        ("CLIENT_PARTITIONS_ASSIGNED", 7, CC, "orders-2"),
    ]
    assert events[0].message == "\n".join([f"{PREFIX}Updating assignment with", *lines[1:5]])


def test_new_consumer_reconciliation_block() -> None:
    lines = [
        f"[2025-03-20 09:20:05,000] INFO {PREFIX}Reconciling assignment with local epoch 14",
        "\tMember:                                    Jx3aP0c9Qb2yK8vW1zL5nA",
        "\tAssigned partitions:                       [orders-0]",
        "\tCurrent owned partitions:                  []",
        "\tAdded partitions (assigned - owned):       [orders-0]",
        "\tRevoked partitions (owned - assigned):     []",
        " (org.apache.kafka.clients.consumer.internals.ConsumerMembershipManager)",
    ]
    (event,) = read_log_lines(lines)
    assert (event.event_type, event.member_id, event.generation, event.partitions, event.line_number) == (
        "CLIENT_RECONCILING", "Jx3aP0c9Qb2yK8vW1zL5nA", 14, "orders-0", 1)


def test_cri_prefixes_on_every_line_and_partial_lines() -> None:
    lines = [
        "2021-05-04T16:41:31.006683114Z stdout F [2021-05-04 16:41:31,006] ERROR [Consumer clientId=c1, groupId=g1]"
        f" Rebalance failed. ({CC})",
        "2021-05-04T16:41:31.006683114Z stdout F org.apache.kafka.common.errors.RebalanceInProgressException: x",
        "2021-05-04T16:41:31.006683114Z stdout F \tat org.apache.kafka.Foo.bar(Foo.java:1)",
        "2021-05-04T16:41:32.000000000Z stdout P [2021-05-04 16:41:32,000] INFO [Consumer clientId=c1, groupId=g1] "
        "Request joining group due to: ",
        f"2021-05-04T16:41:32.000000001Z stdout F group is already rebalancing ({CC})",
    ]
    stats = LogReadStats()
    events = list(read_log_lines(lines, stats=stats))
    assert [(e.event_type, e.line_number, e.error, e.reason) for e in events] == [
        ("CLIENT_JOIN_FAILED", 1, "org.apache.kafka.common.errors.RebalanceInProgressException", None),
        ("CLIENT_REJOIN_REQUESTED", 4, None, "group is already rebalancing"),
    ]
    assert (stats.physical_lines, stats.entries, stats.unparsed) == (5, 2, 0)


def test_docker_compose_prefix_is_sticky_for_continuation_lines() -> None:
    lines = [
        f"kafka-1  | [2023-01-01 12:30:00,200] ERROR [GroupMetadataManager brokerId=2] Error loading offsets from"
        f" __consumer_offsets-12 ({GMM})",
        "kafka-1  | java.lang.IllegalStateException: boom",
        "kafka-1  | \tat kafka.coordinator.group.GroupMetadataManager.loadGroup(GroupMetadataManager.scala:812)",
    ]
    (event,) = read_log_lines(lines)
    assert (event.event_type, event.error, event.line_number) == (
        "OFFSETS_LOAD_FAILED", "java.lang.IllegalStateException", 1)


def test_java_util_logging_two_line_records() -> None:
    lines = [
        f"Jul 17, 2026 1:50:29 PM {CC} onJoinComplete",
        f"INFO: {PREFIX}Adding newly assigned partitions: orders-0",
        f"Jul 17, 2026 1:50:30 PM {CC} requestRejoin",
        f"WARNING: {PREFIX}Request joining group due to: group is already rebalancing",
    ]
    events = list(read_log_lines(lines, source_zone="Europe/Paris"))
    assert [(e.event_type, e.level, e.logger, e.timestamp, e.line_number) for e in events] == [
        ("CLIENT_PARTITIONS_ASSIGNED", "INFO", CC, datetime(2026, 7, 17, 11, 50, 29, tzinfo=timezone.utc), 1),
        ("CLIENT_REJOIN_REQUESTED", "WARN", CC, datetime(2026, 7, 17, 11, 50, 30, tzinfo=timezone.utc), 3),
    ]


def test_article_client_log_in_logback_layout() -> None:
    """Client lines of a first join quoted in the article notes (2.5 client, logback layout, UTC+8)."""
    stats = LogReadStats()
    path = DATA / "article-003-client-2.5.log"
    events = list(read_log_lines(path, source_zone="Asia/Shanghai", stats=stats))
    assert [(e.line_number, e.event_type, e.cause_class) for e in events] == [
        (2, "CLIENT_COORDINATOR_DISCOVERED", None),
        (7, "CLIENT_JOIN_SENT", None),
        (9, "CLIENT_JOIN_FAILED", "new_member"),
        (11, "CLIENT_JOIN_SENT", None),
        (12, "CLIENT_ASSIGNMENT_COMPUTED", None),
        (13, "CLIENT_JOINED", None),
        (15, "CLIENT_PARTITIONS_ASSIGNED", None),
    ]
    discovered, joined = events[0], events[5]
    assert (discovered.host, discovered.broker_id, discovered.timestamp, discovered.client_id, discovered.group_id) == (
        "10.179.149.201:7093", 2, datetime(2021, 6, 2, 9, 9, 25, 87000, tzinfo=timezone.utc),
        "consumer-cg_logi_kafka_test_1-1", "cg_logi_kafka_test_1")
    assert (joined.generation, events[6].partitions) == (1, "kmo_comminity-0, kmo_comminity-1, kmo_comminity-2")
    assert (stats.source, stats.physical_lines, stats.entries, stats.events, stats.unparsed,
            stats.unparsed_below_info, stats.unrelated) == (str(path), 16, 16, 7, 0, 9, 0)


def test_gzip_and_plain_files_read_the_same(tmp_path: Path) -> None:
    text = "\n".join(SERVER_LOG) + "\n"
    plain = tmp_path / "server.log.2023-01-01-12"
    plain.write_text(text, encoding="utf-8")
    packed = tmp_path / "server.log.2023-01-01-12.gz"
    with gzip.open(packed, "wt", encoding="utf-8") as handle:
        handle.write(text)
    from_plain = [(e.event_type, e.line_number) for e in read_log_lines(plain)]
    from_gzip = list(read_log_lines(packed))
    assert from_plain == [("OFFSETS_LOAD_SCHEDULED", 1), ("OFFSETS_LOAD_FAILED", 2), ("GROUP_STABILIZED", 11)]
    assert [(e.event_type, e.line_number) for e in from_gzip] == from_plain
    assert {e.source for e in from_gzip} == {str(packed)}


# ---- the same patterns in the JVM ------------------------------------------------------------------------
JAVA_CHECK = r"""
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
import java.util.regex.*;

public class RegexCheck {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Base64.Decoder dec = Base64.getDecoder();
        Base64.Encoder enc = Base64.getEncoder();
        StringBuilder out = new StringBuilder();
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.split("\t", -1);
            Pattern p = Pattern.compile(new String(dec.decode(f[0]), StandardCharsets.UTF_8));
            String subject = new String(dec.decode(f[1]), StandardCharsets.UTF_8);
            Matcher m = p.matcher(subject);
            if (!m.find()) { out.append("NOMATCH\n"); continue; }
            List<String> values = new ArrayList<>();
            for (String name : f[2].isEmpty() ? new String[0] : f[2].split(",")) {
                String v = m.group(name);
                values.add(v == null ? "-" : enc.encodeToString(v.getBytes(StandardCharsets.UTF_8)));
            }
            out.append("MATCH\t").append(String.join(",", values)).append("\n");
        }
        System.out.print(out);
    }
}
"""


#: Python logging layouts (kafka-python), a traceback after one of them.
PYTHON_LAYOUT_LINES = [
    "2026-11-21 05:32:14,672 WARNING kafka.coordinator.heartbeat Heartbeat session expired, marking coordinator dead",
    "2026-11-21 05:32:14,672 - kafka.coordinator - CRITICAL - (Re-)joining group orders-svc",
    "[2026-11-21 05:32:23,000] ERROR [main] Offset commit failed: This is likely to cause duplicate message delivery"
    " (kafka.coordinator.consumer)\nTraceback (most recent call last):\n  File \"x.py\", line 1, in f\n"
    "kafka.errors.CommitFailedError: CommitFailedError: kicked out",
]


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _python_groups(pattern: str, subject: str) -> list[str] | None:
    match = re.compile(to_python_pattern(pattern)).search(subject)
    if match is None:
        return None
    return ["-" if v is None else _b64(v) for v in match.groupdict().values()]


def _samples() -> list[tuple[str, str]]:
    """(pattern, subject) pairs: every kind on its own example, envelopes, prefixes and rules on real text."""
    cases_file = Path(__file__).with_name("test_logparse_events.py")
    spec = importlib.util.spec_from_file_location("_logparse_cases", cases_file)
    assert spec is not None and spec.loader is not None
    cases_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cases_module)
    pairs: list[tuple[str, str]] = []
    kinds = {kind.name: kind for kind in LINE_KINDS}
    for param in cases_module.CASES:
        line, expected = param.values
        pairs.extend((envelope.pattern, line) for envelope in ENVELOPE_PATTERNS)
        envelope = parse_envelope(line, zone_of("UTC"))
        assert envelope is not None
        if envelope.thread is not None:
            pairs.extend((thread.pattern, envelope.thread) for thread in THREAD_NAMES)
        body = envelope.message
        for prefix in MESSAGE_PREFIXES:
            pairs.append((prefix.pattern, body))
            match = re.compile(prefix.python_pattern).match(body)
            if match is not None:
                body = body[match.end():]
        pairs.append((kinds[expected.line_kind].pattern, body))
        if expected.reason is not None:
            pairs.extend((rule.pattern, expected.reason) for rule in REASON_RULES)
    for layout in PYTHON_LAYOUT_LINES:
        pairs.extend((envelope.pattern, layout) for envelope in ENVELOPE_PATTERNS)
    pairs.extend((thread.pattern, "kafka-coordinator-heartbeat-thread | orders-svc") for thread in THREAD_NAMES)
    for name, pattern in CONTAINER_PREFIXES:
        pairs.append((pattern, "2021-05-04T16:41:31.006683114Z stdout F [2021-05-04 16:41:31,006] INFO x (a.B)"))
        pairs.append((pattern, f"kafka-1  | [pod/{name}] x"))
    return pairs


def test_patterns_match_and_extract_the_same_in_java(tmp_path: Path) -> None:
    java = shutil.which("java")
    assert java is not None, "java (needed by Spark) is not on PATH"
    source = tmp_path / "RegexCheck.java"
    source.write_text(JAVA_CHECK, encoding="utf-8")
    pairs = _samples()
    lines = []
    for pattern, subject in pairs:
        names = ",".join(re.compile(to_python_pattern(pattern)).groupindex)
        lines.append(f"{_b64(pattern)}\t{_b64(subject)}\t{names}")
    result = subprocess.run([java, str(source)], input="\n".join(lines) + "\n", capture_output=True, text=True,
                            timeout=300, check=True)
    java_results = result.stdout.splitlines()
    assert len(java_results) == len(pairs)
    mismatches = []
    for (pattern, subject), java_line in zip(pairs, java_results, strict=False):
        expected = _python_groups(pattern, subject)
        got = None if java_line == "NOMATCH" else java_line.split("\t", 1)[1].split(",")
        if got == [""] and expected == []:
            got = []
        if got != expected:
            mismatches.append((pattern, subject))
    assert mismatches == []
    assert sum(1 for r in java_results if r != "NOMATCH") > len(LINE_KINDS)
