"""Classifies many log entries at once over Arrow arrays: the same outcomes as ``classify_log_entry``.

``classify_log_entry`` costs tens of microseconds per entry because it tries the layouts, prefixes and
catalogue rows one after another in Python. Here every step runs column-wise with Arrow's RE2 kernels:
the envelope and the log-context prefix are split once per batch, the catalogue is indexed by each
row's fixed leading text (``LineKind.literal_prefix``) and tried only on the entries whose first word
fits it, and the fields are normalised column by column (the few non-trivial normalisations through the
parser's own ``normalise_field``, once per distinct value).

The fast path takes the entries it can read exactly like the reference parser: single-line, printable
ASCII (so that ``\\d``, ``\\s`` and ``\\w`` mean the same in RE2 and Python), in the stock log4j layout
(``[%d] %p %m (%c)``, Strimzi's thread suffix and Connect's line number included), without a container
prefix. Every other entry (JSON, Spring Boot, logback, Python layouts, stack traces, kafka-python's own
loggers, values whose rendering could differ) is handed to ``classify_log_entry`` one by one, so the
outcome never depends on which path read an entry. Importing this module imports pyarrow, which the rest
of ``coordinator_core`` does not need; the Spark job imports it on its executors.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo
from functools import lru_cache
from typing import Any, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from coordinator_core.logs.catalogue import (
    COORDINATOR_LOGGERS,
    EVENT_FIELD_OF_GROUP,
    KAFKA_PYTHON_LOGGERS,
    LINE_KINDS,
    MESSAGE_PREFIXES,
    OTHER_CATALOGUE_LOGGERS,
    REASON_RULES,
    LineKind,
    unnamed_groups,
)
from coordinator_core.logs.envelope import CONTAINER_PREFIXES, ENVELOPE_PATTERNS, zone_of
from coordinator_core.logs.events import CoordinatorEvent
from coordinator_core.logs.parser import (
    EVENT,
    KNOWN_NON_EVENT,
    UNPARSED,
    UNPARSED_BELOW_INFO,
    UNRELATED,
    ParseOutcome,
    classify_log_entry,
    normalise_field,
)

#: Columns of the result, after ``status``: every ``CoordinatorEvent`` field except ``source`` and
#: ``line_number``, which belong to the caller. ``line_kind`` is the outcome's (set for known non-events
#: too); every other column is null unless the entry is an event.
EVENT_COLUMNS: Final[tuple[str, ...]] = tuple(
    name for name in CoordinatorEvent.__dataclass_fields__ if name not in ("source", "line_number")
)
_INT_COLUMNS: Final = frozenset(
    {
        "broker_id",
        "offsets_partition",
        "coordinator_epoch",
        "generation",
        "member_count",
        "offsets_removed",
        "duration_ms",
    }
)
TIMESTAMP_TYPE: Final = pa.timestamp("us", tz="UTC")


def _column_type(name: str) -> Any:
    if name == "timestamp":
        return TIMESTAMP_TYPE
    return pa.int64() if name in _INT_COLUMNS else pa.string()


RESULT_SCHEMA: Final = pa.schema(
    [pa.field("status", pa.string(), False), *(pa.field(n, _column_type(n)) for n in EVENT_COLUMNS)]
)

# -- what the fast path reads ------------------------------------------------------------------------------

_ENVELOPES: Final = {e.name: e.python_pattern for e in ENVELOPE_PATTERNS}
_THROWABLE_TAIL: Final = r"(?=\n|$)(?P<throwable>\n.*)?$"


def _single_line(pattern: str) -> str:
    """An envelope pattern for single-line entries, in RE2 syntax (RE2 has no lookahead)."""
    if not pattern.endswith(_THROWABLE_TAIL):
        raise ValueError(f"envelope pattern no longer ends in its throwable part: {pattern}")
    return pattern[: -len(_THROWABLE_TAIL)] + "$"


_LOG4J: Final = _single_line(_ENVELOPES["log4j"])
_PYTHON_BRACKETED: Final = _single_line(_ENVELOPES["python_bracketed"])
_CONTAINER_PREFIX: Final = "|".join("(?:" + unnamed_groups(p) + ")" for _, p in CONTAINER_PREFIXES)
_TIMESTAMP_PARTS: Final = (
    r"^(?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})[ T](?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})"
    r"(?:[,.](?P<frac>\d{1,9}))?(?P<zone>Z|[+-]\d{2}:?\d{2})?$"
)
_LEVEL_ALIASES: Final = {"WARNING": "WARN", "SEVERE": "ERROR", "CRITICAL": "ERROR"}
#: Groups whose value is the stripped text, or null when empty.
_TEXT_GROUPS: Final = frozenset(
    {
        "groupId",
        "memberId",
        "relatedMemberId",
        "memberIds",
        "clientId",
        "reason",
        "clientReason",
        "error",
        "state",
        "previousState",
    }
)
_INT_GROUPS: Final = frozenset(g for g, f in EVENT_FIELD_OF_GROUP.items() if f in _INT_COLUMNS) - {"coordinatorNodeId"}
#: Groups whose empty capture normalises to a non-null value: an empty Arrow capture cannot tell a group
#: that matched nothing from one that did not take part, so such entries go to the reference parser.
_EMPTY_IS_A_VALUE: Final = frozenset({"partitions", "groupList"})
_CLIENT_PREFIXES: Final = frozenset({"consumer_client", "connect_worker"})
_COUNTED_PREFIXES: Final = frozenset(p.name for p in MESSAGE_PREFIXES) - _CLIENT_PREFIXES
_OWN_TEXT_LOGGERS: Final = frozenset(name for kind in LINE_KINDS for name in kind.loggers or ())
_ALL_LOGGERS: Final = COORDINATOR_LOGGERS | OTHER_CATALOGUE_LOGGERS
#: Distinct first words of a batch tried column-wise; entries with rarer first words go one by one.
MAX_FIRST_WORDS: Final = 64
#: Digits an integer field may have on the fast path (int64 holds 18 safely).
_MAX_DIGITS: Final = 18


@dataclass(frozen=True)
class _Kind:
    index: int
    kind: LineKind
    pattern: str
    groups: tuple[str, ...]


def _group_names(pattern: str) -> tuple[str, ...]:
    return tuple(sorted(re.compile(pattern).groupindex, key=re.compile(pattern).groupindex.__getitem__))


_KINDS: Final = tuple(
    _Kind(i, kind, kind.python_pattern, _group_names(kind.python_pattern))
    for i, kind in enumerate(LINE_KINDS)
    if kind.loggers is None  # kafka-python's own rows: its loggers' entries go to the reference parser
)
_PREFIX_PATTERNS: Final = tuple(
    (prefix, f"{prefix.python_pattern}(?P<zzBody>.*)$", _group_names(prefix.python_pattern))
    for prefix in MESSAGE_PREFIXES
)
_RULES: Final = tuple((rule, rule.python_pattern, _group_names(rule.python_pattern)) for rule in REASON_RULES)


@lru_cache(maxsize=4096)
def _kinds_for(first_word: str) -> tuple[_Kind, ...]:
    """The catalogue rows a message body beginning with `first_word` may match, in catalogue order.

    A body starts with a row's literal prefix only if one of the two is a prefix of the other (the word
    is a prefix of the body), so no row the reference parser would try is left out.
    """
    return tuple(
        k
        for k in _KINDS
        if k.kind.literal_prefix.startswith(first_word) or first_word.startswith(k.kind.literal_prefix)
    )


_COORDINATOR_LOGGER: Final = 1
_CATALOGUE_LOGGER: Final = 2
_OWN_TEXT_LOGGER: Final = 4
_PYTHON_SHAPED_LOGGER: Final = 8
_PYTHON_LOGGER_NAME: Final = re.compile(r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*")


@lru_cache(maxsize=1024)
def _logger_facts(logger: str) -> int:
    """Bits: a coordinator logger, a logger catalogue rows may come from, one of kafka-python's own, a
    name the Python layout's logger pattern reads."""
    logger_class = logger.rsplit(".", 1)[-1]
    coordinator = logger_class in COORDINATOR_LOGGERS or logger in KAFKA_PYTHON_LOGGERS
    return (
        (_COORDINATOR_LOGGER if coordinator else 0)
        | (_CATALOGUE_LOGGER if coordinator or logger_class in _ALL_LOGGERS else 0)
        | (_OWN_TEXT_LOGGER if logger in _OWN_TEXT_LOGGERS else 0)
        | (_PYTHON_SHAPED_LOGGER if _PYTHON_LOGGER_NAME.fullmatch(logger) else 0)
    )


# -- small column helpers --------------------------------------------------------------------------------


def _np(array: Any) -> Any:
    return np.asarray(array.to_numpy(zero_copy_only=False))


def _mask(array: Any) -> Any:
    """A boolean Arrow array as NumPy, nulls as False."""
    return _np(pc.fill_null(array, False)).astype(bool)


def _map_distinct(array: Any, function: Callable[[str], Any], type_: Any) -> Any:
    """`function` applied once per distinct value of a string array (nulls stay null)."""
    encoded = pc.dictionary_encode(array)
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks()
    mapped = pa.array([function(v) for v in encoded.dictionary.to_pylist()], type_)
    return pc.take(mapped, encoded.indices)


def _strings(values: Any, where: Any) -> Any:
    """An object array of str/None -> a string array, null where `where` is False."""
    return pa.array(values, pa.string(), mask=~np.asarray(where, bool))


def _empty_to_null(array: Any) -> Any:
    return pc.if_else(pc.equal(pc.utf8_length(array), 0), pa.scalar(None, pa.string()), array)


def _scatter(n: int, rows: Any, values: Any, type_: Any) -> Any:
    """A length-`n` array holding `values` at `rows` and nulls elsewhere."""
    position = np.full(n, -1, np.int64)
    position[rows] = np.arange(len(rows), dtype=np.int64)
    indices = pa.array(position, mask=position < 0)
    return pc.take(values.cast(type_) if len(values) else pa.array([], type_), indices)


def _plain_single_lines(texts: Any) -> Any:
    """Entries of printable ASCII and tabs only (one line, and no character RE2 and Python class apart)."""
    n = len(texts)
    readable = np.ones(n, bool)
    if n == 0:
        return readable
    offsets_buffer, data_buffer = texts.buffers()[1], texts.buffers()[2]
    offsets = np.frombuffer(offsets_buffer, np.int32)[texts.offset : texts.offset + n + 1]
    if data_buffer is None or offsets[-1] == offsets[0]:
        return readable
    data = np.frombuffer(data_buffer, np.uint8)[offsets[0] : offsets[-1]]
    odd = np.flatnonzero(((data < 0x20) & (data != 0x09)) | (data > 0x7E))
    readable[np.searchsorted(offsets, odd + offsets[0], side="right") - 1] = False
    return readable


#: The two ways a stock log4j entry ends: the logger, or the logger and Strimzi's thread.
_LOG4J_TAIL: Final = r"^(?P<logger>[A-Za-z_$][\w$]*(?:\.[\w$]+)+)(?::(?:\d+|\?))?\)$"
_LOG4J_HEAD: Final = (
    r"^\[?(?P<timestamp>\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[,.]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?)\]?"
    r"\s+(?P<level>TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL|SEVERE|CRITICAL)\s"
)
_LOG4J_HEAD_WHOLE: Final = (
    r"^\[?\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[,.]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?\]?"
    r"\s+(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL|SEVERE|CRITICAL)\s+"
)


def _log4j_envelopes(texts: Any, rows: Any) -> tuple[Any, dict[str, Any]]:
    """The rows (of `rows`) in the stock log4j layout, and their envelope columns.

    Equivalent to the ``log4j`` envelope pattern on single-line entries, without running it over whole
    lines (RE2 extracts submatches slowly on long matches): an entry that ends in ``)`` has its logger after
    its last `` (`` (a logger holds no space and no parenthesis, so the parser's lazy message ends there);
    the timestamp and level come from the head, the message is what lies between. Entries that end in
    Strimzi's `` [thread]`` go through the whole pattern.
    """
    subject = texts.take(pa.array(rows))
    plain = _mask(pc.ends_with(subject, ")"))
    threaded = _mask(pc.ends_with(subject, "]"))
    found_rows: list[Any] = []
    columns: dict[str, list[Any]] = {name: [] for name in ("timestamp", "level", "message", "logger", "thread")}
    if plain.any():
        ending = subject.filter(pa.array(plain))
        parts = pc.split_pattern(ending, " (", max_splits=1, reverse=True)
        two = _np(pc.equal(pc.list_value_length(parts), 2)).astype(bool)
        parts = parts.filter(pa.array(two))
        before, tail = pc.list_element(parts, 0), pc.list_element(parts, 1)
        logger = pc.extract_regex(tail, _LOG4J_TAIL)
        head = pc.extract_regex(before, _LOG4J_HEAD)
        ok = _mask(pc.and_(logger.is_valid(), head.is_valid()))
        ok_mask = pa.array(ok)
        before, logger, head = before.filter(ok_mask), logger.filter(ok_mask), head.filter(ok_mask)
        found_rows.append(rows[plain][two][ok])
        columns["timestamp"].append(head.field("timestamp"))
        columns["level"].append(head.field("level"))
        message = pc.replace_substring_regex(before, _LOG4J_HEAD_WHOLE, "", max_replacements=1)
        columns["message"].append(pc.utf8_trim_whitespace(message))
        columns["logger"].append(logger.field("logger"))
        columns["thread"].append(pa.nulls(len(before), pa.string()))
    if threaded.any():
        found = pc.extract_regex(subject.filter(pa.array(threaded)), _LOG4J)
        ok = _np(found.is_valid()).astype(bool)
        found = found.filter(pa.array(ok))
        found_rows.append(rows[threaded][ok])
        for name in ("timestamp", "level", "logger"):
            columns[name].append(found.field(name))
        columns["message"].append(pc.utf8_trim_whitespace(found.field("message")))
        columns["thread"].append(_empty_to_null(pc.utf8_trim_whitespace(found.field("thread"))))
    if not found_rows:
        return np.zeros(0, np.int64), {}
    all_rows = np.concatenate(found_rows)
    order = np.argsort(all_rows, kind="stable")
    envelope = {
        name: pa.concat_arrays([v.cast(pa.string()) for v in values]).take(pa.array(order))
        for name, values in columns.items()
    }
    return all_rows[order], envelope


# -- the fast path ---------------------------------------------------------------------------------------


def _timestamps(texts: Any, zone: tzinfo) -> tuple[Any, Any]:
    """Envelope timestamps -> (UTC timestamps, rows the fast path cannot convert exactly)."""
    parts = pc.extract_regex(texts, _TIMESTAMP_PARTS)
    n = len(texts)
    bad = ~_np(parts.is_valid()).astype(bool)
    filled = {name: pc.fill_null(parts.field(name), "") for name in ("y", "mo", "d", "h", "mi", "s", "frac", "zone")}
    ints = {}
    for name in ("y", "mo", "d", "h", "mi", "s"):
        text = pc.if_else(pc.equal(filled[name], ""), "0", filled[name])
        ints[name] = _np(pc.cast(text, pa.int64()))
    year, month, day = ints["y"], ints["mo"], ints["d"]
    bad |= (year < 2) | (year > 9998) | (month < 1) | (month > 12) | (day < 1)
    bad |= (ints["h"] > 23) | (ints["mi"] > 59) | (ints["s"] > 59)
    safe_month = np.where(bad, 1, month)
    safe_year = np.where(bad, 1970, year)
    month_start = ((safe_year - 1970) * 12 + (safe_month - 1)).astype("datetime64[M]")
    first_day = month_start.astype("datetime64[D]").astype(np.int64)
    days_in_month = (month_start + 1).astype("datetime64[D]").astype(np.int64) - first_day
    bad |= day > days_in_month
    local_seconds = (first_day + np.where(bad, 1, day) - 1) * 86400 + ints["h"] * 3600 + ints["mi"] * 60 + ints["s"]
    frac = pc.utf8_rpad(pc.utf8_slice_codeunits(filled["frac"], 0, 6), 6, "0")
    micros = _np(pc.cast(frac, pa.int64()))
    zone_text = filled["zone"]
    has_zone = _np(pc.not_equal(zone_text, "")).astype(bool)
    offsets = np.zeros(n, np.int64)
    if has_zone.any():
        digits = pc.replace_substring(pc.utf8_slice_codeunits(zone_text, 1), ":", "")
        digits = pc.if_else(pc.or_(pc.equal(zone_text, "Z"), pc.equal(zone_text, "")), "0000", digits)
        hours = _np(pc.cast(pc.utf8_slice_codeunits(digits, 0, 2), pa.int64()))
        minutes = _np(pc.cast(pc.utf8_slice_codeunits(digits, 2, 4), pa.int64()))
        sign = np.where(_np(pc.starts_with(zone_text, "-")).astype(bool), -1, 1)
        zone_minutes = hours * 60 + minutes
        bad |= has_zone & (zone_minutes >= 24 * 60)  # Python's timezone() refuses these: the parser raises
        offsets = np.where(has_zone, sign * zone_minutes * 60, 0)
    local = ~has_zone & ~bad
    if local.any() and zone is not timezone.utc:
        # A zone with rules: the offset of each distinct local second, as Python's datetime computes it.
        seconds = local_seconds[local]
        distinct, inverse = np.unique(seconds, return_inverse=True)
        epoch = datetime(1970, 1, 1)
        found = np.array([_utc_offset(epoch + timedelta(seconds=int(s)), zone) for s in distinct], np.int64)
        offsets[local] = found[inverse]
    utc_micros = (local_seconds - offsets) * 1_000_000 + micros
    return pa.array(utc_micros, TIMESTAMP_TYPE, mask=bad), bad


def _utc_offset(local: datetime, zone: tzinfo) -> int:
    offset = local.replace(tzinfo=zone).utcoffset()
    return 0 if offset is None else int(offset.total_seconds())


def _normalised(group: str, captured: Any) -> tuple[Any, Any]:
    """A captured column -> (the field's values, rows to decline). Empty captures are null."""
    text = pc.utf8_trim_whitespace(captured)
    empty = pc.equal(pc.utf8_length(text), 0)
    declined = np.zeros(len(captured), bool)
    if group in _EMPTY_IS_A_VALUE:
        declined = _mask(empty)
    if group in _TEXT_GROUPS:
        return _empty_to_null(text), declined
    if group in _INT_GROUPS or group == "coordinatorNodeId":
        digits = pc.utf8_length(pc.replace_substring(text, "-", ""))
        too_long = _mask(pc.greater(digits, _MAX_DIGITS))
        declined = declined | too_long
        usable = pc.if_else(pc.or_(empty, pa.array(too_long)), pa.scalar(None, pa.string()), text)
        values = pc.cast(usable, pa.int64())
        if group == "coordinatorNodeId":
            values = pc.if_else(
                pc.greater_equal(values, 1 << 30),
                pc.subtract(2147483647, values),
                pc.if_else(pc.less(values, 0), pa.scalar(None, pa.int64()), values),
            )
        return values, declined
    return _map_distinct(_empty_to_null(text), lambda value: normalise_field(group, value), pa.string()), declined


def classify_log_entries(
    entries: Sequence[str] | Any,
    *,
    source_zone: str | tzinfo = "UTC",
    broker_id: int | None = None,
) -> Any:
    """Classifies a batch of entries; one row per entry, as ``classify_log_entry`` would say.

    Args:
        entries: the entries (a list of str or an Arrow string array).
        source_zone: the zone of zone-less timestamps in this source.
        broker_id: the broker that wrote the source, for lines whose text does not name it.

    Returns:
        A ``pyarrow.RecordBatch`` with ``RESULT_SCHEMA``: ``status`` and the event's fields.
    """
    zone = zone_of(source_zone) if isinstance(source_zone, str) else source_zone
    texts = entries if isinstance(entries, (pa.Array, pa.ChunkedArray)) else pa.array(entries, pa.string())
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    texts = texts.cast(pa.string())
    n = len(texts)
    fast = _FastBatch(texts, zone, broker_id)
    declined = fast.run()
    columns = fast.columns
    slow_rows = np.flatnonzero(declined)
    if len(slow_rows):
        outcomes = [classify_log_entry(texts[int(i)].as_py(), source_zone=zone, broker_id=broker_id) for i in slow_rows]
        slow = _outcome_columns(outcomes)
        keep = pa.array(~declined)
        for name in RESULT_SCHEMA.names:
            type_ = RESULT_SCHEMA.field(name).type
            columns[name] = pc.if_else(keep, columns[name], _scatter(n, slow_rows, slow[name], type_))
    arrays = [columns[name].cast(RESULT_SCHEMA.field(name).type) for name in RESULT_SCHEMA.names]
    return pa.RecordBatch.from_arrays(arrays, schema=RESULT_SCHEMA)


def _outcome_columns(outcomes: Sequence[ParseOutcome]) -> dict[str, Any]:
    """ParseOutcome objects -> columns of RESULT_SCHEMA."""
    columns: dict[str, Any] = {"status": pa.array([o.status for o in outcomes], pa.string())}
    for name in EVENT_COLUMNS:
        if name == "line_kind":
            values = [o.line_kind for o in outcomes]
        else:
            values = [None if o.event is None else getattr(o.event, name) for o in outcomes]
        columns[name] = pa.array(values, _column_type(name))
    return columns


class _FastBatch:
    """One batch through the column-wise path; `run` returns the rows it leaves to the reference parser."""

    def __init__(self, texts: Any, zone: tzinfo, broker_id: int | None) -> None:
        self.texts = texts
        self.zone = zone
        self.broker_id = broker_id
        self.n = len(texts)
        self.columns: dict[str, Any] = {}

    def run(self) -> Any:  # noqa: C901, PLR0912, PLR0915 - grandfathered: the batch's steps in one pass, to split later
        n, texts = self.n, self.texts
        nulls = {name: pa.nulls(n, _column_type(name)) for name in RESULT_SCHEMA.names}
        self.columns = dict(nulls)
        self.columns["status"] = pa.array([UNRELATED] * n, pa.string()) if n else pa.array([], pa.string())
        declined = np.ones(n, bool)
        if n == 0:
            return declined
        rows = np.flatnonzero(_plain_single_lines(texts) & ~_mask(pc.starts_with(texts, "{")))
        maybe_container = ~_mask(pc.starts_with(texts.take(pa.array(rows)), "[")) | _mask(
            pc.starts_with(texts.take(pa.array(rows)), "[pod/")
        )
        if maybe_container.any():
            suspects = rows[maybe_container]
            prefixed = _mask(pc.match_substring_regex(texts.take(pa.array(suspects)), _CONTAINER_PREFIX))
            rows = np.setdiff1d(rows, suspects[prefixed])
        rows, envelope = _log4j_envelopes(texts, rows)
        if len(rows) == 0:
            return declined
        logger = envelope["logger"]
        facts = _np(_map_distinct(logger, _logger_facts, pa.int8()))
        coordinator_logger = (facts & _COORDINATOR_LOGGER) != 0
        catalogue_logger = (facts & _CATALOGUE_LOGGER) != 0
        own_text = (facts & _OWN_TEXT_LOGGER) != 0
        python_shaped = (facts & _PYTHON_SHAPED_LOGGER) != 0
        if python_shaped.any():
            # the reference parser tries the Python layout first; its logger is lower case, so only such rows
            candidates = np.flatnonzero(python_shaped)
            taken = _mask(pc.match_substring_regex(texts.take(pa.array(rows[candidates])), _PYTHON_BRACKETED))
            own_text[candidates[taken]] = True  # left to the reference parser
        timestamps, bad_time = _timestamps(envelope["timestamp"], self.zone)
        keep = ~own_text & ~bad_time
        keep_mask = pa.array(keep)
        rows = rows[keep]
        envelope = {name: values.filter(keep_mask) for name, values in envelope.items()}
        coordinator_logger, catalogue_logger = coordinator_logger[keep], catalogue_logger[keep]
        timestamps = timestamps.filter(keep_mask)
        m = len(rows)
        if m == 0:
            return declined
        message = envelope["message"]
        level = _map_distinct(envelope["level"], lambda v: _LEVEL_ALIASES.get(v, v), pa.string())
        thread = envelope["thread"]
        logger = envelope["logger"]

        # the log-context prefix: the first of MESSAGE_PREFIXES that matches, as the parser tries them
        prefix_of = np.full(m, -1, np.int64)
        body = message
        prefix_values: dict[str, Any] = {}
        prefix_declined = np.zeros(m, bool)
        for index, (_, pattern, groups) in enumerate(_PREFIX_PATTERNS):
            open_rows = np.flatnonzero(prefix_of < 0)
            if len(open_rows) == 0:
                break
            found = pc.extract_regex(message.take(pa.array(open_rows)), pattern)
            hit = _np(found.is_valid()).astype(bool)
            hit_rows = open_rows[hit]
            if len(hit_rows) == 0:
                continue
            found = found.filter(pa.array(hit))
            prefix_of[hit_rows] = index
            body = pc.if_else(
                pa.array(prefix_of == index), _scatter(m, hit_rows, found.field("zzBody"), pa.string()), body
            )
            for group in groups:
                values, group_declined = _normalised(group, found.field(group))
                prefix_declined[hit_rows] |= group_declined
                field = EVENT_FIELD_OF_GROUP[group]
                scattered = _scatter(m, hit_rows, values, _column_type(field))
                prefix_values[field] = (
                    scattered if field not in prefix_values else pc.coalesce(scattered, prefix_values[field])
                )
        client_or_none = np.isin(
            prefix_of, [-1, *(i for i, (p, _, _) in enumerate(_PREFIX_PATTERNS) if p.name in _CLIENT_PREFIXES)]
        )
        counted = np.isin(prefix_of, [i for i, (p, _, _) in enumerate(_PREFIX_PATTERNS) if p.name in _COUNTED_PREFIXES])
        prefix_names = np.array([p.name for p, _, _ in _PREFIX_PATTERNS] + [""], dtype=object)[prefix_of]
        unrelated = client_or_none & ~coordinator_logger & ~catalogue_logger

        # the catalogue, indexed by first word
        kind_of = np.full(m, -1, np.int64)
        to_match = np.flatnonzero(~unrelated)
        words = pc.extract_regex(body.take(pa.array(to_match)), r"^(?P<w>[^ ]*)").field("w")
        encoded = pc.dictionary_encode(words)
        word_index = _np(encoded.indices)
        distinct_words = encoded.dictionary.to_pylist()
        counts = np.bincount(word_index, minlength=len(distinct_words))
        too_rare = np.zeros(m, bool)
        kind_pieces: list[tuple[_Kind, Any, Any]] = []
        for rank, word_number in enumerate(np.argsort(-counts, kind="stable").tolist()):
            word_rows = to_match[word_index == word_number]
            if rank >= MAX_FIRST_WORDS:
                too_rare[word_rows] = True
                continue
            open_rows = word_rows
            for kind in _kinds_for(distinct_words[word_number]):
                tried = open_rows
                if kind.kind.prefixes is not None:
                    allowed = np.isin(prefix_names[tried], list(kind.kind.prefixes))
                    tried = tried[allowed]
                if len(tried) == 0:
                    continue
                subject = body.take(pa.array(tried))
                literal = kind.kind.literal_prefix
                if len(literal) > len(distinct_words[word_number]):
                    # the reference parser's startswith pre-check, kept so no row is tried that it skips
                    starts = _mask(pc.starts_with(subject, literal))
                    if not starts.all():
                        tried = tried[starts]
                        if len(tried) == 0:
                            continue
                        subject = body.take(pa.array(tried))
                # RE2 tells a match from none quickly; it extracts groups slowly, so only from the matches
                hit = _mask(pc.match_substring_regex(subject, kind.pattern))
                if not hit.any():
                    continue
                hit_rows = tried[hit]
                kind_of[hit_rows] = kind.index
                if kind.groups and kind.kind.event_type is not None:
                    found = pc.extract_regex(subject.filter(pa.array(hit)), kind.pattern)
                    kind_pieces.append((kind, hit_rows, found))
                open_rows = open_rows[~np.isin(open_rows, hit_rows)]
                if len(open_rows) == 0:
                    break

        # statuses
        event_types = np.array([k.event_type for k in LINE_KINDS] + [None], dtype=object)[kind_of]
        matched = kind_of >= 0
        is_event = matched & np.array([t is not None for t in event_types], bool)
        below_info = _mask(pc.is_in(level, pa.array(["DEBUG", "TRACE"])))
        status = np.full(m, UNRELATED, dtype=object)
        status[~matched & (counted | coordinator_logger)] = UNPARSED
        status[~matched & (counted | coordinator_logger) & below_info] = UNPARSED_BELOW_INFO
        status[matched & ~is_event] = KNOWN_NON_EVENT
        status[is_event] = EVENT
        status[unrelated] = UNRELATED

        # event fields: per matched catalogue row, its groups column-wise; the last non-null group wins
        fields: dict[str, Any] = {}
        field_declined = np.zeros(m, bool)
        for kind, hit_rows, found in kind_pieces:
            if kind.kind.event_type is None or found is None:
                continue
            piece: dict[str, Any] = {}
            for group in kind.groups:
                values, group_declined = _normalised(group, found.field(group))
                field_declined[hit_rows] |= group_declined
                field = EVENT_FIELD_OF_GROUP[group]
                piece[field] = values if field not in piece else pc.coalesce(values, piece[field])
            for field, values in piece.items():
                scattered = _scatter(m, hit_rows, values, _column_type(field))
                fields[field] = scattered if field not in fields else pc.coalesce(fields[field], scattered)

        def column(name: str) -> Any:
            return fields[name] if name in fields else pa.nulls(m, _column_type(name))

        for name, values in prefix_values.items():
            fields[name] = (
                pc.coalesce(values, column(name)) if name == "broker_id" else pc.coalesce(column(name), values)
            )
        protocol_types = np.array([p.protocol_type for p, _, _ in _PREFIX_PATTERNS] + [None], dtype=object)[prefix_of]
        fields["protocol_type"] = pa.array(protocol_types, pa.string())
        # a client line without its group takes it from the thread name: left to the reference parser
        from_thread = is_event & client_or_none & ~_mask(column("group_id").is_valid()) & _mask(thread.is_valid())
        fields["reason"] = pc.coalesce(column("reason"), column("client_reason"))
        causes = np.array([k.cause for k in LINE_KINDS] + [None], dtype=object)[kind_of]
        cause = _strings(causes, is_event)
        cause, rule_declined = self._reason_rules(fields, is_event, cause)
        fields["cause_class"] = cause
        if self.broker_id is not None:
            fields["broker_id"] = pc.coalesce(column("broker_id"), pa.scalar(self.broker_id, pa.int64()))
        kinds = np.array([k.name for k in LINE_KINDS] + [None], dtype=object)[kind_of]
        fields["line_kind"] = _strings(kinds, matched)
        fields["event_type"] = _strings(event_types, is_event)
        fields["timestamp"] = timestamps
        fields["level"] = level
        fields["logger"] = logger
        fields["thread"] = thread
        fields["message"] = message
        event_mask = pa.array(is_event)
        out: dict[str, Any] = {"status": pa.array(status, pa.string())}
        for name in EVENT_COLUMNS:
            values = column(name).cast(_column_type(name))
            out[name] = values if name == "line_kind" else pc.if_else(event_mask, values, pa.scalar(None, values.type))
        fast_declined = (
            too_rare | from_thread | (is_event & (field_declined | rule_declined)) | (prefix_declined & ~unrelated)
        )
        done = rows[~fast_declined]
        keep_rows = np.flatnonzero(~fast_declined)
        for name in RESULT_SCHEMA.names:
            self.columns[name] = _scatter(n, done, out[name].take(pa.array(keep_rows)), RESULT_SCHEMA.field(name).type)
        declined[done] = False
        return declined

    def _reason_rules(self, fields: dict[str, Any], is_event: Any, cause: Any) -> tuple[Any, Any]:
        """REASON_RULES over the events' reasons: the first rule with a cause wins; groups fill empty fields."""
        m = len(is_event)
        declined = np.zeros(m, bool)
        reason = fields.get("reason")
        if reason is None:
            return cause, declined
        rows = np.flatnonzero(is_event & _mask(reason.is_valid()))
        if len(rows) == 0:
            return cause, declined
        subject = reason.take(pa.array(rows))
        rule_cause = np.full(len(rows), None, dtype=object)
        has_cause = np.zeros(len(rows), bool)
        for rule, pattern, groups in _RULES:
            if groups:
                found = pc.extract_regex(subject, pattern)
                hit = _np(found.is_valid()).astype(bool)
            else:
                found = None
                hit = _mask(pc.match_substring_regex(subject, pattern))
            if not hit.any():
                continue
            if rule.cause is not None:
                rule_cause[hit & ~has_cause] = rule.cause
                has_cause |= hit
            if found is None:
                continue
            hit_rows = rows[hit]
            found = found.filter(pa.array(hit))
            for group in groups:
                values, group_declined = _normalised(group, found.field(group))
                declined[hit_rows] |= group_declined
                name = EVENT_FIELD_OF_GROUP[group]
                scattered = _scatter(m, hit_rows, values, _column_type(name))
                current = fields.get(name, pa.nulls(m, _column_type(name)))
                fields[name] = pc.coalesce(current, scattered)
        found_cause = _scatter(m, rows, pa.array(rule_cause, pa.string()), pa.string())
        return pc.coalesce(found_cause, cause), declined
