"""Which log entries the logs stage keeps: the coordinator-looking ones (the pre-filter before parsing).

One rule, applied line by line: a line is coordinator-looking when it holds a marker (a broker log-context
prefix, a coordinator logger's class name, a kafka-python coordinator logger as Python layouts print it),
or when it starts a JSON-layout record without a logger key (the logger cannot be known before parsing).
An entry is kept when any of its lines is. Both readers of the stage apply it through `coordinator_lines`:
the block scanner over the raw lines of a block, the reference reader over the lines of each entry's text.
Everything the catalogue parses, today or after a catalogue update, holds a marker; the rule may keep more
(a marker in a stack trace), never less.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from coordinator_core.logs.catalogue import COORDINATOR_LOGGERS, KAFKA_PYTHON_LOGGERS, OTHER_CATALOGUE_LOGGERS


@cache
def coordinator_markers() -> tuple[str, ...]:
    """Texts of which every coordinator-looking line (other than a JSON head without a logger) holds one.

    The broker log-context prefixes, the class names of the coordinator loggers (and of the other
    loggers with catalogue rows) and kafka-python's coordinator loggers; a marker that contains another is
    dropped (`GroupCoordinatorShard` is found by `GroupCoordinator`).
    """
    markers = {
        "[GroupCoordinator ",
        "[GroupMetadataManager brokerId=",
        "[Group Metadata Manager on Broker ",
        *OTHER_CATALOGUE_LOGGERS,
        *(name.rstrip("$") for name in COORDINATOR_LOGGERS),
        # kafka-python's loggers, as Python logging layouts print them: "(name)" at the end of the line
        # or " name " between the level and the message
        *(f"({name})" for name in KAFKA_PYTHON_LOGGERS),
        *(f" {name} " for name in KAFKA_PYTHON_LOGGERS),
    }
    return tuple(sorted(m for m in markers if not any(o != m and o in m for o in markers)))


@cache
def marker_pattern() -> str:
    """One RE2 alternation of the markers (RE2 runs it as a DFA: one pass over each line)."""
    return "|".join(re.escape(m) for m in coordinator_markers())


def coordinator_lines(lines: Any) -> Any:
    """Which lines are coordinator-looking (the module's rule), as a NumPy bool array.

    Args:
        lines: an Arrow binary or string array of physical lines (a trailing newline does not matter).
    """
    marked = pc.match_substring_regex(lines, marker_pattern())
    json_heads = pc.starts_with(lines, "{")
    if pc.any(json_heads).as_py():
        marked = pc.or_(marked, pc.and_(json_heads, pc.invert(pc.match_substring(lines, "logger"))))
    return marked.to_numpy(zero_copy_only=False)


def coordinator_entries(texts: Sequence[str]) -> Any:
    """Which entries are kept (any of their lines coordinator-looking), as a NumPy bool array.

    Args:
        texts: entry texts, physical lines joined by newlines (as `iter_log_entries` makes them).
    """
    lines = [text.split("\n") for text in texts]
    if not lines:
        return np.zeros(0, bool)
    counts = np.array([len(entry) for entry in lines], np.int64)
    flags = coordinator_lines(pa.array([line for entry in lines for line in entry], pa.string()))
    starts = np.concatenate([np.zeros(1, np.int64), np.cumsum(counts)[:-1]])
    return np.logical_or.reduceat(flags, starts)
