"""The column-wise fast path (`coordinator_core.logs.bulk`) says exactly what the reference parser says.

For every entry of the inputs below, `classify_log_entries` must give the status, line kind and every
event field that `classify_log_entry` gives for the same entry, alone. Inputs: the benchmark's generated
broker log, every broker and client log of the shipped samples (several layouts: stock log4j, Python
logging, new-consumer client logs), every line the catalogue and layout tests parse, and hand-made lines
aimed at the places where the two paths could drift apart (empty captures, odd timestamps, zones,
non-ASCII text, thread names, container prefixes).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from datetime import timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from coordinator_core.logs import classify_log_entry, iter_log_entries
from coordinator_core.logs.bulk import EVENT_COLUMNS, classify_log_entries

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_LOGS = sorted(p for p in (ROOT / "samples").glob("*/*/*")
                     if p.parent.name in ("broker", "clients")
                     or (re.fullmatch(r"broker-\d+", p.parent.name) and p.name.startswith("server.log")))
GC = "(kafka.coordinator.group.GroupCoordinator)"
NGMM = "(org.apache.kafka.coordinator.group.GroupMetadataManager)"
CC = "(org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)"
CLIENT = "[Consumer clientId=consumer-g-1, groupId=g] "


def reference_rows(entries: Sequence[str], zone: str, broker_id: int | None) -> list[tuple[object, ...]]:
    rows = []
    for entry in entries:
        outcome = classify_log_entry(entry, source_zone=zone, broker_id=broker_id)
        event = outcome.event
        rows.append(
            (
                outcome.status,
                *(
                    outcome.line_kind if name == "line_kind" else (None if event is None else getattr(event, name))
                    for name in EVENT_COLUMNS
                ),
            )
        )
    return rows


def fast_rows(entries: Sequence[str], zone: str, broker_id: int | None) -> list[tuple[object, ...]]:
    batch = classify_log_entries(list(entries), source_zone=zone, broker_id=broker_id)
    return [tuple(row.values()) for row in batch.to_pylist()]


def assert_same(entries: Sequence[str], zone: str = "UTC", broker_id: int | None = None) -> None:
    expected = reference_rows(entries, zone, broker_id)
    found = fast_rows(entries, zone, broker_id)
    assert len(found) == len(expected)
    for entry, want, got in zip(entries, expected, found, strict=True):
        assert got == want, entry


def test_benchmark_log_classifies_the_same() -> None:
    import benchmarks.logs_bench as bench

    rng = random.Random(7)
    lines = []
    for i in range(4000):
        stamp = f"[2024-06-01 00:{i // 600 % 60:02d}:{i // 10 % 60:02d},{i % 1000:03d}] "
        values = {
            "g": rng.randrange(200),
            "n": rng.randrange(1, 5000),
            "p": rng.randrange(50),
            "m": rng.randrange(10**6),
        }
        template = rng.choice(bench.COORDINATOR_TEMPLATES + bench.UNRELATED_TEMPLATES)
        lines.append(stamp + template.format(**values))
    assert_same(lines, broker_id=1)


@pytest.mark.parametrize("path", SAMPLE_LOGS, ids=lambda p: str(p.relative_to(ROOT)))
def test_sample_logs_classify_the_same(path: Path) -> None:
    with open(path, encoding="utf-8", errors="replace") as handle:
        entries = [e.text for e in iter_log_entries(handle)]
    assert entries
    assert_same(entries, broker_id=None if path.parent.name == "clients" else 1)


def catalogue_test_lines() -> list[str]:
    from tests.unit import test_logparse_events, test_logparse_layouts

    lines = [param.values[0] for param in test_logparse_events.CASES]
    for name in dir(test_logparse_layouts):
        value = getattr(test_logparse_layouts, name)
        if isinstance(value, list):
            for item in value:
                first = getattr(item, "values", (item,))[0]
                if isinstance(first, str):
                    lines.append(first)
    return lines


def test_catalogue_and_layout_test_lines_classify_the_same() -> None:
    lines = catalogue_test_lines()
    assert len(lines) > 200
    assert_same(lines)
    assert_same(lines, zone="Europe/Amsterdam", broker_id=4)


EDGE_LINES = [
    # empty and odd captures
    f"[2024-01-01 00:00:00,000] INFO {CLIENT}Revoking previously assigned partitions  for group g {CC}",
    f"[2024-01-01 00:00:00,000] INFO {CLIENT}Revoking previously assigned partitions [] for group g {CC}",
    f"[2024-01-01 00:00:00,000] INFO [GroupCoordinator 1]: The following groups were deleted: . {GC}",
    f"[2024-01-01 00:00:00,000] INFO [GroupCoordinator 1]: Stabilized group g generation"
    f" 1234567890123456789 (__consumer_offsets-1) {GC}",
    f"[2024-01-01 00:00:00,000] INFO [GroupCoordinator 1]: Stabilized group  g  generation 3 {GC}",
    f"[2024-01-01 00:00:00,000] INFO [GroupCoordinator 1]:  Stabilized group g generation 3 {GC}",
    f"[2024-01-01 00:00:00,000] INFO [GroupCoordinator 1]: Stabilized group g generation 3   {GC}",
    f"[2024-01-01 00:00:00,000]\tINFO\t[GroupCoordinator 1]: Stabilized group g generation 3 {GC}",
    # timestamps: fractions, zones, impossible dates, the DST change in Amsterdam
    f"2024-03-31T02:30:00.123456789 INFO [GroupCoordinator 1]: Stabilized group g generation 3 {GC}",
    f"2024-10-27 02:30:00 INFO [GroupCoordinator 1]: Stabilized group g generation 3 {GC}",
    f"2024-10-27T02:30:00.5+05:30 INFO [GroupCoordinator 1]: Stabilized group g generation 3 {GC}",
    f"2024-10-27T02:30:00-0800 INFO [GroupCoordinator 1]: Stabilized group g generation 3 {GC}",
    f"2024-10-27T02:30:00Z INFO [GroupCoordinator 1]: Stabilized group g generation 3 {GC}",
    f"[2024-02-30 00:00:00,000] INFO [GroupCoordinator 1]: Stabilized group g generation 3 {GC}",
    f"[2023-02-29 24:00:00,000] INFO [GroupCoordinator 1]: Stabilized group g generation 3 {GC}",
    f"[2024-02-29 23:59:60,000] INFO [GroupCoordinator 1]: Stabilized group g generation 3 {GC}",
    f"[0001-01-02 00:00:00,000] INFO [GroupCoordinator 1]: Stabilized group g generation 3 {GC}",
    # levels, loggers, threads
    f"[2024-01-01 00:00:00,000] DEBUG [GroupCoordinator 1]: Frobnicated group g {GC}",
    f"[2024-01-01 00:00:00,000] WARNING [GroupCoordinator 1]: Frobnicated group g {GC}",
    f"[2024-01-01 00:00:00,000] TRACE {CLIENT}Something else entirely {CC}",
    f"[2024-01-01 00:00:00,000] INFO {CLIENT}Something else entirely (org.apache.kafka.clients.Other)",
    "2024-01-01 00:00:00,000 WARN [Consumer clientId=c, groupId=] consumer poll timeout has expired. This means"
    f" the time between subsequent calls to poll() was longer than the configured max.poll.interval.ms {CC}"
    " [kafka-coordinator-heartbeat-thread | orders]",
    f"[2024-01-01 00:00:00,000] INFO [Worker clientId=connect-1, groupId=connect] (Re-)joining group {CC}",
    f"[2024-01-01 00:00:00,000] INFO [Consumer instanceId=Some(i-1), clientId=c, groupId=g] (Re-)joining group {CC}",
    "[2024-01-01 00:00:00,000] INFO (Re-)joining group (org.apache.kafka.clients.consumer.internals.Other:12)",
    # what the fast path leaves to the reference parser
    f"[2024-01-01 00:00:00,000] INFO [GroupCoordinator 1]: Stabilized group gé generation 3 {GC}",
    f"[2024-01-01 00:00:00,000] INFO [GroupCoordinator 1]: Stabilized group g\u2003 generation 3 {GC}",
    f"2021-05-04T16:41:31.006683114Z stdout F [2024-01-01 00:00:00,000] INFO [GroupCoordinator 1]: Stabilized"
    f" group g generation 3 {GC}",
    f"kafka-1  | [2024-01-01 00:00:00,000] INFO [GroupCoordinator 1]: Stabilized group g generation 3 {GC}",
    f"[2024-01-01 00:00:00,000] ERROR [GroupMetadataManager brokerId=2] Error loading offsets from"
    f" __consumer_offsets-12 {NGMM}\njava.lang.IllegalStateException: boom\n\tat a.b.C(C.java:1)",
    '{"message":"[GroupCoordinator 1]: Stabilized group g generation 3","level":"INFO"}',
    "[2024-01-01 00:00:00,000] INFO [GroupCoordinator 1]: no logger here",
    "not a log line at all",
    "",
]


@pytest.mark.parametrize("zone", ["UTC", "Europe/Amsterdam", "America/Los_Angeles"])
def test_edge_lines_classify_the_same(zone: str) -> None:
    assert_same(EDGE_LINES, zone=zone, broker_id=9)
    assert_same(EDGE_LINES, zone=zone, broker_id=None)


def test_tzinfo_zone_and_empty_batch() -> None:
    assert classify_log_entries([]).num_rows == 0
    lines = [EDGE_LINES[9], EDGE_LINES[0]]
    for zone in (timezone.utc, ZoneInfo("Europe/Amsterdam")):
        found = classify_log_entries(lines, source_zone=zone).to_pylist()
        assert [tuple(r.values()) for r in found] == reference_rows(lines, zone, None)  # type: ignore[arg-type]
