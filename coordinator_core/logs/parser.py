"""Parses coordinator log entries into ``CoordinatorEvent`` and reads whole logs with per-source counts.

The order of work per entry: envelope (``envelope.py``), log-context prefix, catalogue row, then the
normalisations described on ``CoordinatorEvent``. An entry that yields no event is one of: a known
coordinator line without an event, an unrelated line (another logger, or not a log record), or an
unparsed coordinator line, which is what the run summary counts per file so that a new Kafka version's
texts show up instead of vanishing. Unmatched DEBUG/TRACE coordinator lines are counted apart: the
catalogue covers the INFO-and-above texts (plus the few DEBUG ones that carry events).
"""

from __future__ import annotations

import gzip
import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import tzinfo
from typing import Any, Final

from coordinator_core.logs.catalogue import (
    COORDINATOR_LOGGERS,
    EVENT_FIELD_OF_GROUP,
    KAFKA_PYTHON_LOGGERS,
    LINE_KINDS,
    MESSAGE_PREFIXES,
    OTHER_CATALOGUE_LOGGERS,
    REASON_RULES,
    THREAD_NAMES,
    LineKind,
)
from coordinator_core.logs.envelope import (
    exception_class,
    is_entry_head,
    parse_envelope,
    strip_container_prefix,
    zone_of,
)
from coordinator_core.logs.events import CoordinatorEvent

#: Outcomes of ``classify_log_entry``.
EVENT: Final = "event"
KNOWN_NON_EVENT: Final = "known_non_event"
UNRELATED: Final = "unrelated"
UNPARSED: Final = "unparsed"
UNPARSED_BELOW_INFO: Final = "unparsed_below_info"

#: An entry is cut after this many physical lines, so that a file with no recognisable heads cannot
#: grow one entry without bound.
MAX_ENTRY_LINES: Final = 5000
#: How many unparsed entries ``LogReadStats`` keeps as examples.
MAX_UNPARSED_EXAMPLES: Final = 20

_KINDS: Final = tuple((kind, re.compile(kind.python_pattern)) for kind in LINE_KINDS)
_PREFIXES: Final = tuple((prefix, re.compile(prefix.python_pattern)) for prefix in MESSAGE_PREFIXES)
_RULES: Final = tuple((rule, re.compile(rule.python_pattern)) for rule in REASON_RULES)
_THREADS: Final = tuple(re.compile(thread.python_pattern) for thread in THREAD_NAMES)
#: Full logger names whose lines match only the catalogue rows restricted to them (``LineKind.loggers``).
_OWN_TEXT_LOGGERS: Final = frozenset(name for kind in LINE_KINDS for name in kind.loggers or ())
#: Full names of coordinator loggers that are modules, not classes (kafka-python).
_COORDINATOR_LOGGER_NAMES: Final = KAFKA_PYTHON_LOGGERS
#: Prefixes whose unmatched lines count as unparsed: the broker coordinator's. A client's
#: ``[Consumer clientId=...]`` prefix is on every line of the consumer (fetcher, offsets, subscriptions), so
#: client lines count by their logger only.
_COUNTED_PREFIXES: Final = frozenset(p.name for p in MESSAGE_PREFIXES) - {"consumer_client", "connect_worker"}
_CLIENT_PREFIXES: Final = frozenset({"consumer_client", "connect_worker"})
#: Loggers whose lines may match a catalogue row; any other logger's line is skipped without matching.
_ALL_LOGGERS: Final = COORDINATOR_LOGGERS | OTHER_CATALOGUE_LOGGERS
_TOPIC_PARTITION_REPR = re.compile(r"TopicPartition\(topic='([^']*)', partition=(\d+)\)")
_COORDINATOR_MARKER = re.compile(
    r"\[(?:GroupCoordinator |GroupMetadataManager brokerId=|Group Metadata Manager on Broker )"
)
_INT_FIELDS: Final = frozenset({
    "generation", "member_count", "offsets_removed", "duration_ms", "coordinator_epoch", "offsets_partition",
    "broker_id",
})
_MAX_INT32: Final = 2147483647


@dataclass(frozen=True)
class ParseOutcome:
    """What one entry turned out to be; ``event`` is set only for ``status == "event"``."""

    status: str
    event: CoordinatorEvent | None = None
    line_kind: str | None = None


@dataclass(frozen=True)
class LogEntry:
    """One log record: its physical lines joined with ``\\n``, and where it starts in its source."""

    line_number: int
    text: str
    line_count: int


@dataclass
class LogReadStats:
    """Counts for one source, filled while ``read_log_lines`` is consumed."""

    source: str | None = None
    physical_lines: int = 0
    entries: int = 0
    events: int = 0
    known_non_events: int = 0
    unrelated: int = 0
    unparsed: int = 0
    unparsed_below_info: int = 0
    events_by_type: Counter[str] = field(default_factory=Counter)
    unparsed_examples: list[tuple[int, str]] = field(default_factory=list)


def parse_log_line(
    line: str, *, source_zone: str | tzinfo = "UTC", broker_id: int | None = None
) -> CoordinatorEvent | None:
    """Parses one log entry (a line, or a multi-line entry joined with ``\\n``) into an event.

    Args:
        line: the entry, with or without a container prefix.
        source_zone: the zone of zone-less timestamps in this source (an IANA name or a tzinfo).
        broker_id: the broker that wrote the source, for lines whose text does not name it.

    Returns:
        The event, or ``None`` when the entry is no coordinator event (see ``classify_log_entry``).
    """
    return classify_log_entry(line, source_zone=source_zone, broker_id=broker_id).event


def classify_log_entry(  # noqa: C901 - one step after another as the module docstring lists them, each may end the entry
    entry: str,
    *,
    source_zone: str | tzinfo = "UTC",
    broker_id: int | None = None,
    source: str | None = None,
    line_number: int | None = None,
) -> ParseOutcome:
    """Parses one entry and says what it is: event, known non-event, unrelated, or unparsed."""
    zone = zone_of(source_zone) if isinstance(source_zone, str) else source_zone
    first, _, rest = entry.partition("\n")
    first, _, _ = strip_container_prefix(first)
    text = first if not rest else f"{first}\n{rest}"
    envelope = parse_envelope(text, zone)
    if envelope is None:
        return ParseOutcome(UNPARSED if _COORDINATOR_MARKER.search(first) else UNRELATED)
    prefix_name: str | None = None
    prefix_values: dict[str, Any] = {}
    body = envelope.message
    for prefix, compiled in _PREFIXES:
        match = compiled.match(body)
        if match is not None:
            prefix_name = prefix.name
            prefix_values = _field_values(match.groupdict())
            if prefix.protocol_type is not None:
                prefix_values["protocol_type"] = prefix.protocol_type
            body = body[match.end():]
            break
    logger_class = (envelope.logger or "").rsplit(".", 1)[-1]
    coordinator_logger = logger_class in COORDINATOR_LOGGERS or envelope.logger in _COORDINATOR_LOGGER_NAMES
    if envelope.logger is not None and prefix_name in _CLIENT_PREFIXES | {None} and not coordinator_logger \
            and logger_class not in _ALL_LOGGERS:
        return ParseOutcome(UNRELATED)  # another component's line: no catalogue row applies
    own_text = envelope.logger in _OWN_TEXT_LOGGERS
    for kind, compiled in _KINDS:
        if not body.startswith(kind.literal_prefix):
            continue
        if kind.prefixes is not None and prefix_name not in kind.prefixes:
            continue
        if (kind.loggers is not None or own_text) and envelope.logger not in (kind.loggers or ()):
            continue
        match = compiled.match(body)
        if match is None:
            continue
        if kind.event_type is None:
            return ParseOutcome(KNOWN_NON_EVENT, line_kind=kind.name)
        values = _field_values(match.groupdict())
        for name, value in prefix_values.items():
            if name == "broker_id" or values.get(name) is None:
                values[name] = value
        if values.get("group_id") is None and envelope.thread and prefix_name in _CLIENT_PREFIXES | {None}:
            values["group_id"] = _group_of_thread(envelope.thread)
        fields = _build_event(kind, values, envelope.message, broker_id)
        event = CoordinatorEvent(
            **{**fields, "timestamp": envelope.timestamp, "level": envelope.level, "logger": envelope.logger,
               "thread": envelope.thread, "source": source, "line_number": line_number,
               "error": fields["error"] or exception_class(envelope.throwable)}
        )
        return ParseOutcome(EVENT, event=event, line_kind=kind.name)
    if prefix_name in _COUNTED_PREFIXES or coordinator_logger:
        below_info = envelope.level in ("DEBUG", "TRACE")
        return ParseOutcome(UNPARSED_BELOW_INFO if below_info else UNPARSED)
    return ParseOutcome(UNRELATED)


def _group_of_thread(thread: str) -> str | None:
    """The group a client's heartbeat thread is named after (``THREAD_NAMES``), if it is one."""
    for compiled in _THREADS:
        match = compiled.match(thread)
        if match is not None:
            return match["groupId"]
    return None


def _build_event(kind: LineKind, values: dict[str, Any], message: str, broker_id: int | None) -> dict[str, Any]:
    """The event's fields from a catalogue match: reason, cause class and defaults filled in."""
    if values.get("reason") is None and values.get("client_reason") is not None:
        values["reason"] = values["client_reason"]
    cause: str | None = None
    reason = values.get("reason")
    if isinstance(reason, str):
        for rule, compiled in _RULES:
            match = compiled.search(reason)
            if match is None:
                continue
            if cause is None and rule.cause is not None:
                cause = rule.cause
            for name, value in _field_values(match.groupdict()).items():
                if values.get(name) is None:
                    values[name] = value
    values["cause_class"] = cause if cause is not None else kind.cause
    if values.get("broker_id") is None:
        values["broker_id"] = broker_id
    fields = dict.fromkeys(CoordinatorEvent.__dataclass_fields__)
    fields.update(values)
    fields.update(event_type=kind.event_type, line_kind=kind.name, message=message)
    return fields


def _field_values(groups: dict[str, str | None]) -> dict[str, Any]:
    """Maps named pattern groups onto event fields, normalising Kafka's renderings."""
    values: dict[str, Any] = {}
    for group_name, text in groups.items():
        if text is None:
            continue
        name = EVENT_FIELD_OF_GROUP[group_name]
        value = normalise_field(group_name, text.strip())
        if value is not None or name not in values:
            values[name] = value
    return values


def normalise_field(group_name: str, text: str) -> Any:
    """A captured pattern field (``group_name``, stripped ``text``) as the event field holds it.

    Kafka renders some values differently by version and client: a coordinator's node id as
    ``Integer.MAX_VALUE - id``, ``Some(x)``/``Optional[x]`` for an optional instance id, a leading ``/`` on
    hosts, Scala/Java collection brackets, kafka-python's ``TopicPartition(...)`` sets, the group protocol
    ``generic`` (older brokers' name of ``classic``). The reference parser and the column-wise classifier
    (``bulk``) both normalise through this function, so the two read a field alike.
    """
    if group_name == "coordinatorNodeId":
        node_id = int(text)
        if node_id >= 1 << 30:
            return _MAX_INT32 - node_id
        return node_id if node_id >= 0 else None
    if EVENT_FIELD_OF_GROUP[group_name] in _INT_FIELDS:
        return int(text)
    if group_name == "instanceId":
        return _optional_value(text)
    if group_name == "host":
        return text.lstrip("/") or None
    if group_name == "partitions" and (text == "set()" or "TopicPartition(" in text):
        # kafka-python prints a Python set of TopicPartition tuples; it becomes Kafka's `topic-partition` list.
        return ", ".join(f"{topic}-{partition}" for topic, partition in _TOPIC_PARTITION_REPR.findall(text))
    if group_name in ("partitions", "groupList"):
        return text[1:-1].strip() if text.startswith("[") and text.endswith("]") else text
    if group_name == "protocol":
        return None if text in ("", "null", "None") else text
    if group_name == "groupProtocol":
        return "classic" if text == "generic" else text
    return text or None


def _optional_value(text: str) -> str | None:
    """``Some(x)``, ``Optional[x]`` -> ``x``; ``None``, ``null``, ``Optional.empty``, empty -> ``None``."""
    if text in ("", "None", "null", "Optional.empty"):
        return None
    for opening, closing in (("Some(", ")"), ("Optional[", "]")):
        if text.startswith(opening) and text.endswith(closing):
            return text[len(opening):-len(closing)] or None
    return text


def iter_log_entries(lines: Iterable[str]) -> Iterator[LogEntry]:
    """Joins physical lines into log entries (stack traces, multi-line messages, a JUL record's 2 lines).

    A new entry starts at a line that looks like a record head (a timestamp, or ``{`` for JSON layouts);
    every other line continues the entry before it. Container prefixes are removed from every line, and a
    CRI partial line (tag ``P``) is glued to the next one without a newline.
    """
    sticky = False
    pending_partial = ""
    in_partial = False
    partial_start = 0
    current: list[str] = []
    start = 0
    physical = 0
    number = 0
    for number, raw in enumerate(lines, start=1):
        content, prefix, partial = strip_container_prefix(raw.rstrip("\r\n"), sticky=sticky)
        if prefix is not None and prefix != "docker_json":
            sticky = True
        if partial:
            if not in_partial:
                in_partial, partial_start = True, number
            pending_partial += content
            continue
        first_number = number
        consumed = 1 + (number - partial_start if in_partial else 0)
        if in_partial:
            content, first_number = pending_partial + content, partial_start
            pending_partial, in_partial = "", False
        if current and (is_entry_head(content) or len(current) >= MAX_ENTRY_LINES):
            yield LogEntry(start, "\n".join(current), physical)
            current, physical = [], 0
        if not current:
            start = first_number
        current.append(content)
        physical += consumed
    if in_partial:
        if not current:
            start = partial_start
        current.append(pending_partial)
        physical += number - partial_start + 1
    if current:
        yield LogEntry(start, "\n".join(current), physical)


def read_log_lines(
    lines_or_file: Iterable[str] | str | os.PathLike[str],
    *,
    source: str | None = None,
    source_zone: str | tzinfo = "UTC",
    broker_id: int | None = None,
    stats: LogReadStats | None = None,
) -> Iterator[CoordinatorEvent]:
    """Yields the events of one source (a path, plain or ``.gz``, or an iterable of lines).

    Events carry ``source`` and the first line number of their entry. Pass a ``LogReadStats`` to get the
    counts, including coordinator-looking entries that did not parse; they are complete once the iterator
    is exhausted.
    """
    if stats is None:
        stats = LogReadStats()
    if isinstance(lines_or_file, (str, os.PathLike)):
        path = os.fspath(lines_or_file)
        if source is None:
            source = path
        stats.source = source
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8", errors="replace") as handle:
            yield from _read(handle, source, source_zone, broker_id, stats)
    else:
        stats.source = source
        yield from _read(lines_or_file, source, source_zone, broker_id, stats)


def _read(lines: Iterable[str], source: str | None, source_zone: str | tzinfo, broker_id: int | None,
          stats: LogReadStats) -> Iterator[CoordinatorEvent]:
    zone = zone_of(source_zone) if isinstance(source_zone, str) else source_zone
    for entry in iter_log_entries(lines):
        stats.physical_lines += entry.line_count
        stats.entries += 1
        outcome = classify_log_entry(entry.text, source_zone=zone, broker_id=broker_id, source=source,
                                     line_number=entry.line_number)
        if outcome.event is not None:
            stats.events += 1
            stats.events_by_type[outcome.event.event_type] += 1
            yield outcome.event
        elif outcome.status == KNOWN_NON_EVENT:
            stats.known_non_events += 1
        elif outcome.status == UNPARSED:
            stats.unparsed += 1
            if len(stats.unparsed_examples) < MAX_UNPARSED_EXAMPLES:
                stats.unparsed_examples.append((entry.line_number, entry.text.split("\n", 1)[0]))
        elif outcome.status == UNPARSED_BELOW_INFO:
            stats.unparsed_below_info += 1
        else:
            stats.unrelated += 1
