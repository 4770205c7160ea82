"""Log-record envelopes: the layout around Kafka's message (timestamp, level, logger, thread).

Kafka fixes only the message text; the layout comes from log4j/log4j2 configuration on brokers and from
whatever logging framework an application uses on clients (Python's ``logging`` for kafka-python, whose
level names ``WARNING`` and ``CRITICAL`` become ``WARN`` and ``ERROR``). The layouts seen in real logs are declared
here as data (``ENVELOPE_PATTERNS``, ``CONTAINER_PREFIXES``) so the Spark job can apply the same patterns in
the JVM; JSON layouts are read with a JSON parser, by the key names in ``JSON_KEYS``.

Timestamps: log4j's ``%d`` has no zone, so a zone-less timestamp is read in the zone configured for its
source and converted to UTC. During a DST fall-back hour a local time is ambiguous; the earlier instant
(``fold=0``) is taken, which is what ``zoneinfo`` does by default.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo
from functools import lru_cache
from typing import Any, Final
from zoneinfo import ZoneInfo

from coordinator_core.logs.catalogue import to_python_pattern

#: A timestamp as log4j (``,`` before millis), logback/Spring (``.``) or ISO-8601 encoders write it.
TIMESTAMP: Final = r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[,.]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?"
LEVELS: Final = r"TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL|SEVERE|CRITICAL"
#: Python logging's level names (``%(levelname)s``).
PYTHON_LEVELS: Final = r"DEBUG|INFO|WARNING|ERROR|CRITICAL"
#: A fully qualified logger (at least one dot), so that ``(MemberIdRequiredException)`` in a message is
#: never taken for the logger.
LOGGER: Final = r"[A-Za-z_$][\w$]*(?:\.[\w$]+)+"
#: A Python logger name (``%(name)s``): module names, lower case by convention (PEP 8), which is what tells
#: it from a Java logger, whose last segment is a class name.
PYTHON_LOGGER: Final = r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*"
PYTHON_DOTTED_LOGGER: Final = r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)+"
_JUL_TIMESTAMP: Final = r"[A-Z][a-z]{2} \d{1,2}, \d{4} \d{1,2}:\d{2}:\d{2} [AP]M"


@dataclass(frozen=True)
class EnvelopePattern:
    """A layout whose fields a regex can split (Java syntax; ``(?s)`` because an entry may span lines)."""

    name: str
    pattern: str

    @property
    def python_pattern(self) -> str:
        """The pattern in Python ``re`` syntax."""
        return to_python_pattern(self.pattern)


ENVELOPE_PATTERNS: Final[tuple[EnvelopePattern, ...]] = (
    # Python logging `[%(asctime)s] %(levelname)s [%(threadName)s] %(message)s (%(name)s)` (kafka-python
    # applications). Before log4j, which would take `[thread] ` for part of the message; a Java logger ends
    # in a class name, so it never matches PYTHON_LOGGER. A traceback follows the first line.
    EnvelopePattern(
        "python_bracketed",
        rf"(?s)^\[(?<timestamp>{TIMESTAMP})\] (?<level>{PYTHON_LEVELS})\s+\[(?<thread>[^\]\n]*)\] (?<message>.*?)"
        rf" \((?<logger>{PYTHON_LOGGER})\)(?=\n|$)(?<throwable>\n.*)?$",
    ),
    # Stock broker/client layout `[%d] %p %m (%c)%n`, Strimzi's `%d{ISO8601} %p %m (%c) [%t]%n`, Connect's
    # `(%c:%L)`. The logger is the first ` (a.b.C)` that ends a physical line: on the first line normally,
    # on a line of its own when the message ends in a newline; what follows it is a stack trace.
    EnvelopePattern(
        "log4j",
        rf"(?s)^\[?(?<timestamp>{TIMESTAMP})\]?\s+(?<level>{LEVELS})\s+(?<message>.*?)"
        rf" \((?<logger>{LOGGER})(?::(?:\d+|\?))?\)(?: \[(?<thread>[^\]\n]*)\])?(?=\n|$)(?<throwable>\n.*)?$",
    ),
    # Spring Boot's logback default: `2022-09-05 15:20:44.151  INFO 1 --- [main] o.a.k.c.c.i.ConsumerCoordinator  : msg`
    EnvelopePattern(
        "spring_boot",
        rf"(?s)^(?<timestamp>{TIMESTAMP})\s+(?<level>{LEVELS})\s+\d+\s+---\s+(?:\[[^\]\n]*\]\s+)?"
        rf"\[\s*(?<thread>[^\]\n]*)\]\s+(?<logger>[\w.$]+)\s+:\s(?<message>.*)$",
    ),
    # logback's common `%d [%thread] %-5level %logger{36} - %msg%n`
    EnvelopePattern(
        "logback",
        rf"(?s)^(?<timestamp>{TIMESTAMP})\s+\[(?<thread>[^\]\n]*)\]\s+(?<level>{LEVELS})\s+(?<logger>[\w.$]+)"
        rf"\s+-\s(?<message>.*)$",
    ),
    # Python logging `%(asctime)s %(levelname)s %(name)s %(message)s` and the logging cookbook's
    # `%(asctime)s - %(name)s - %(levelname)s - %(message)s`. After log4j: a Strimzi line is never taken
    # for one. The logger needs a dot here, so that a one-word message start is not taken for a logger.
    EnvelopePattern(
        "python_plain",
        rf"(?s)^(?<timestamp>{TIMESTAMP}) (?<level>{PYTHON_LEVELS})\s+(?<logger>{PYTHON_DOTTED_LOGGER})"
        rf" (?<message>.*)$",
    ),
    EnvelopePattern(
        "python_dashed",
        rf"(?s)^(?<timestamp>{TIMESTAMP}) - (?<logger>{PYTHON_LOGGER}) - (?<level>{PYTHON_LEVELS}) -"
        rf" (?<message>.*)$",
    ),
    # java.util.logging's two-line SimpleFormatter default (English locale)
    EnvelopePattern(
        "jul",
        rf"(?s)^(?<timestamp>{_JUL_TIMESTAMP}) (?<logger>[\w.$]+)"
        rf" \S+\n(?<level>SEVERE|WARNING|INFO|CONFIG|FINE|FINER"
        rf"|FINEST): (?<message>.*)$",
    ),
)

#: A physical line that starts a new entry; every other line continues the entry before it.
HEAD_PATTERN: Final = rf"^(?:\[?\d{{4}}-\d{{2}}-\d{{2}}[ T]\d{{2}}:\d{{2}}:\d{{2}}|{_JUL_TIMESTAMP} |\{{)"

#: Prefixes that container runtimes and tools put before every physical line. The CRI file format
#: (``<RFC3339Nano> stdout F ``, ``P`` for a partial line continued by the next record) is unambiguous; the
#: others are stripped when what follows is an entry head, or once the source has shown them.
CONTAINER_PREFIXES: Final[tuple[tuple[str, str], ...]] = (
    ("cri", r"^(?<containerTimestamp>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2}))"
            r" (?:stdout|stderr) (?<tag>[PF]) "),
    ("kubectl_timestamps",
    r"^(?<containerTimestamp>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})) "),
    ("docker_compose", r"^[A-Za-z0-9][\w.-]*\s+\| "),
    ("kubectl_prefix", r"^\[pod/[^\]\s]+\] "),
)

#: Key names of JSON layouts (log4j2 JsonLayout/JsonTemplateLayout, logstash-logback-encoder, ECS), tried
#: in order. A value may be nested one level (ECS ``{"log": {"level": ...}}``), written ``log.level``.
JSON_KEYS: Final[dict[str, tuple[str, ...]]] = {
    "message": ("message", "msg", "@message"),
    "level": ("level", "log.level", "severity", "levelname"),
    "logger": ("logger_name", "loggerName", "logger", "log.logger"),
    "thread": ("thread_name", "thread", "threadName", "process.thread.name"),
    "timestamp": ("@timestamp", "timestamp", "time", "ts", "timeMillis", "instant"),
    "throwable": ("stack_trace", "exception", "thrown", "error.stack_trace"),
}

_COMPILED_ENVELOPES: Final = tuple((e.name, re.compile(e.python_pattern)) for e in ENVELOPE_PATTERNS)
_HEAD = re.compile(HEAD_PATTERN)
_COMPILED_PREFIXES: Final = tuple((name, re.compile(to_python_pattern(p))) for name, p in CONTAINER_PREFIXES)
_TIMESTAMP = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})[ T](?P<h>\d{2}):(?P<m>\d{2}):(?P<s>\d{2})(?:[,.](?P<frac>\d{1,9}))?"
    r"(?P<zone>Z|[+-]\d{2}:?\d{2})?$"
)
_JUL = re.compile(r"(?P<mon>[A-Z][a-z]{2}) (?P<d>\d{1,2}), (?P<y>\d{4})"
                  r" (?P<h>\d{1,2}):(?P<m>\d{2}):(?P<s>\d{2}) (?P<ap>[AP]M)$")
_MONTHS: Final = {m: i for i, m in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), start=1)}
_LEVEL_ALIASES: Final = {"WARNING": "WARN", "SEVERE": "ERROR", "FINE": "DEBUG", "FINER": "TRACE",
                         "FINEST": "TRACE", "CONFIG": "INFO", "CRITICAL": "ERROR"}
_THROWABLE_START = re.compile(r"^(?:\s+at |Caused by: |\s*\.\.\. \d+"
                              r" more|(?:[\w$]+\.)+[\w$]*(?:Exception|Error|Throwable)\b"
                              r"|Traceback \(most recent call last\):)")
#: The last line of a Python traceback: ``module.ErrorClass: message`` (or the bare class).
_PYTHON_EXCEPTION_LINE = re.compile(r"^((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)(?::|$)")
_EXCEPTION_CLASS = re.compile(r"^\s*((?:[\w$]+\.)+[\w$]+)(?::|\s*$)")


@dataclass(frozen=True)
class Envelope:
    """The parts of one log entry around Kafka's message."""

    layout: str
    message: str
    timestamp: datetime | None
    level: str | None
    logger: str | None
    thread: str | None
    throwable: str | None


@lru_cache(maxsize=64)
def zone_of(name: str) -> tzinfo:
    """The tzinfo for a zone name; ``UTC`` is the fixed UTC zone. Raises for an unknown name."""
    return timezone.utc if name.upper() in ("UTC", "Z") else ZoneInfo(name)


def parse_timestamp(text: str, zone: tzinfo) -> datetime | None:
    """Reads a log timestamp into an aware UTC datetime; a zone-less one is taken as local time in ``zone``.

    Fractions beyond microseconds are truncated. Returns ``None`` for text that is no timestamp.
    """
    match = _TIMESTAMP.match(text)
    if match is not None:
        year, month, day = (int(part) for part in match["date"].split("-"))
        frac = (match["frac"] or "0")[:6].ljust(6, "0")
        tz = zone if match["zone"] is None else _offset_zone(match["zone"])
        try:
            local = datetime(year, month, day, int(match["h"]), int(match["m"]), int(match["s"]), int(frac),
                             tzinfo=tz)
        except ValueError:
            return None
        return local.astimezone(timezone.utc)
    jul = _JUL.match(text)
    if jul is not None and jul["mon"] in _MONTHS:
        hour = int(jul["h"]) % 12 + (12 if jul["ap"] == "PM" else 0)
        try:
            local = datetime(int(jul["y"]), _MONTHS[jul["mon"]], int(jul["d"]), hour, int(jul["m"]),
                             int(jul["s"]), tzinfo=zone)
        except ValueError:
            return None
        return local.astimezone(timezone.utc)
    return None


def _offset_zone(text: str) -> tzinfo:
    if text == "Z":
        return timezone.utc
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    return timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))


def is_entry_head(line: str) -> bool:
    """Whether a physical line (container prefix removed) starts a new log entry."""
    return _HEAD.match(line) is not None


def strip_container_prefix(line: str, *, sticky: bool = False) -> tuple[str, str | None, bool]:
    """Removes a container runtime's per-line prefix.

    Returns the content, the name of the prefix removed (or ``None``), and whether the content is a CRI
    partial line (tag ``P``) that the next record continues. A docker ``json-file`` record
    (``{"log": "...", "stream": ..., "time": ...}``) is unwrapped to its ``log`` text. Without ``sticky`` a
    non-CRI prefix is removed only when an entry head follows it, so a layout that begins like one (a
    logback line with an ISO timestamp) is left alone.
    """
    if line.startswith('{"log":'):
        try:
            record = json.loads(line)
        except ValueError:
            return line, None, False
        if isinstance(record, dict) and isinstance(record.get("log"), str):
            text: str = record["log"]
            return text[:-1] if text.endswith("\n") else text, "docker_json", not text.endswith("\n")
        return line, None, False
    for name, compiled in _COMPILED_PREFIXES:
        match = compiled.match(line)
        if match is None:
            continue
        rest = line[match.end():]
        if name == "cri":
            return rest, name, match["tag"] == "P"
        if sticky or is_entry_head(rest):
            return rest, name, False
    return line, None, False


def parse_envelope(entry: str, zone: tzinfo) -> Envelope | None:
    """Splits one log entry (possibly several physical lines) into its envelope and message."""
    if entry.startswith("{"):
        return _parse_json(entry, zone)
    for name, compiled in _COMPILED_ENVELOPES:
        match = compiled.match(entry)
        if match is None:
            continue
        groups = match.groupdict()
        message: str = groups["message"]
        throwable: str | None = groups.get("throwable")
        if name not in ("log4j", "python_bracketed"):
            message, throwable = _split_throwable(message)
        elif throwable is not None:
            throwable = throwable.lstrip("\n")
        return Envelope(
            layout=name,
            message=message.strip(),
            timestamp=parse_timestamp(groups["timestamp"], zone),
            level=_level(groups["level"]),
            logger=groups["logger"],
            thread=(groups.get("thread") or "").strip() or None,
            throwable=throwable or None,
        )
    return None


def exception_class(throwable: str | None) -> str | None:
    """The exception class named on the first line of a stack trace, if any."""
    if not throwable:
        return None
    lines = throwable.split("\n")
    if lines[0].startswith("Traceback (most recent call last):"):
        # Python names the exception on the traceback's last line that is not indented.
        for line in reversed(lines[1:]):
            found = _PYTHON_EXCEPTION_LINE.match(line)
            if found is not None:
                return found.group(1)
        return None
    match = _EXCEPTION_CLASS.match(lines[0])
    return match.group(1) if match else None


def _split_throwable(message: str) -> tuple[str, str | None]:
    """Separates a trailing stack trace from a message in layouts that print the logger first."""
    lines = message.split("\n")
    for index, line in enumerate(lines[1:], start=1):
        if _THROWABLE_START.match(line):
            return "\n".join(lines[:index]), "\n".join(lines[index:])
    return message, None


def _level(text: str | None) -> str | None:
    if text is None:
        return None
    upper = text.strip().upper()
    return _LEVEL_ALIASES.get(upper, upper)


def _json_value(record: dict[str, Any], key: str) -> Any:
    if key in record:
        return record[key]
    head, _, tail = key.partition(".")
    nested = record.get(head)
    if tail and isinstance(nested, dict):
        return nested.get(tail)
    return None


def _first(record: dict[str, Any], kind: str) -> Any:
    for key in JSON_KEYS[kind]:
        value = _json_value(record, key)
        if value is not None:
            return value
    return None


def _parse_json(entry: str, zone: tzinfo) -> Envelope | None:
    try:
        record = json.loads(entry)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    message = _first(record, "message")
    if not isinstance(message, str):
        return None
    stamp = _first(record, "timestamp")
    timestamp: datetime | None = None
    if isinstance(stamp, str):
        timestamp = parse_timestamp(stamp, zone)
    elif isinstance(stamp, (int, float)) and not isinstance(stamp, bool):
        timestamp = datetime.fromtimestamp(stamp / 1000.0, tz=timezone.utc)
    elif isinstance(stamp, dict) and isinstance(stamp.get("epochSecond"), int):
        nanos = stamp.get("nanoOfSecond", 0)
        timestamp = datetime.fromtimestamp(stamp["epochSecond"], tz=timezone.utc) + timedelta(
            microseconds=(nanos if isinstance(nanos, int) else 0) // 1000)
    thrown = _first(record, "throwable")
    throwable: str | None
    if isinstance(thrown, dict):
        name = thrown.get("name") or thrown.get("type")
        text = thrown.get("extendedStackTrace") or thrown.get("stack_trace") or thrown.get("message") or ""
        throwable = f"{name}: {text}" if isinstance(name, str) else (str(text) or None)
    else:
        throwable = thrown if isinstance(thrown, str) and thrown else None
    level = _first(record, "level")
    logger = _first(record, "logger")
    thread = _first(record, "thread")
    return Envelope(
        layout="json",
        message=message.strip(),
        timestamp=timestamp,
        level=_level(level) if isinstance(level, str) else None,
        logger=logger if isinstance(logger, str) else None,
        thread=thread if isinstance(thread, str) else None,
        throwable=throwable,
    )
