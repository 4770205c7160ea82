"""Coordinator log parsing: broker and client log lines into ``CoordinatorEvent`` records.

The catalogue of lines (``LINE_KINDS``), the message prefixes and the envelope layouts are declared as
data, read by the reference parser (``parser``, Python's ``re``) and by the column-wise classifier
(``bulk``, Arrow's RE2 kernels) alike. Reading log files is here too: ``files`` (plain or gzip, up to a
cut, file identities), ``scan`` (the block scanner and the reference reader), ``keep`` (which entries are
kept) and ``damage`` (damaged lines). The package never imports Spark; ``bulk``, ``scan``, ``keep`` and
``damage`` need numpy and pyarrow, and are not imported here.
"""

from __future__ import annotations

from coordinator_core.logs.catalogue import (
    COORDINATOR_LOGGERS,
    EVENT_FIELD_OF_GROUP,
    FIELD_PATTERNS,
    KAFKA_PYTHON_LOGGERS,
    LINE_KINDS,
    MESSAGE_PREFIXES,
    REASON_RULES,
    THREAD_NAMES,
    LineKind,
    MessagePrefix,
    ReasonRule,
    to_python_pattern,
)
from coordinator_core.logs.envelope import (
    CONTAINER_PREFIXES,
    ENVELOPE_PATTERNS,
    HEAD_PATTERN,
    JSON_KEYS,
    Envelope,
    parse_envelope,
    parse_timestamp,
)
from coordinator_core.logs.events import (
    ALL_EVENT_TYPES,
    CATALOGUE_EVENT_TYPES,
    CAUSE_CLASSES,
    EXTENSION_EVENT_TYPES,
    CoordinatorEvent,
)
from coordinator_core.logs.parser import (
    LogEntry,
    LogReadStats,
    ParseOutcome,
    classify_log_entry,
    iter_log_entries,
    parse_log_line,
    read_log_lines,
)

__all__ = [
    "ALL_EVENT_TYPES",
    "CATALOGUE_EVENT_TYPES",
    "CAUSE_CLASSES",
    "CONTAINER_PREFIXES",
    "COORDINATOR_LOGGERS",
    "ENVELOPE_PATTERNS",
    "EVENT_FIELD_OF_GROUP",
    "EXTENSION_EVENT_TYPES",
    "FIELD_PATTERNS",
    "HEAD_PATTERN",
    "JSON_KEYS",
    "KAFKA_PYTHON_LOGGERS",
    "LINE_KINDS",
    "MESSAGE_PREFIXES",
    "REASON_RULES",
    "THREAD_NAMES",
    "CoordinatorEvent",
    "Envelope",
    "LineKind",
    "LogEntry",
    "LogReadStats",
    "MessagePrefix",
    "ParseOutcome",
    "ReasonRule",
    "classify_log_entry",
    "iter_log_entries",
    "parse_envelope",
    "parse_log_line",
    "parse_timestamp",
    "read_log_lines",
    "to_python_pattern",
]
