"""Logs stage, extract (driver, metadata only): which files, known by which identity, read from which line.

The configured globs are listed; each file is known by its content identity (`file_id`: cluster, source
name and first line; see coordinator_core.logs.files), so `server.log` renamed to `server.log.1` and later
compressed to `server.log.1.gz` is the same file. How far each identity was read comes from
log_file_reads (last line, and the byte offset just after it, of the last entry read); which reads get a
row there is `worth_a_row`.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from coordinator_core.logs.files import first_bytes, has_container_layout, identity_of, path_identity, why_not_read
from jobs.common.config import PROJECT_ROOT, ConfigError, LogSource, parse_config


def parse_log_sources(data: list[dict[str, Any]], root: Path = PROJECT_ROOT) -> tuple[LogSource, ...]:
    """`[[sources.logs]]` entries (already-parsed TOML) -> LogSource, strictly (unknown keys are errors),
    through the project's config loader so the rules are the same as in a configuration file."""
    if not isinstance(data, list):
        raise ConfigError("sources.logs: expected an array of tables ([[sources.logs]])")
    return parse_config({"sources": {"mode": "none", "logs": data}}, root=root).sources.logs


#: A file whose name says it was rotated (`server.log.1`, `server.log.2024-05-01-10`, `*.gz`): complete,
#: so its last entry is read too. Every other file is active.
_ROTATED_NAME = re.compile(r"(?:\.log\.[^/]+|\.gz)$")


@dataclass(frozen=True)
class LogFile:
    """A listed file. One that cannot be read (`not_read`: "unreadable", or "waiting" for an active file
    without a complete first line yet) has no content identity: its `file_id` is its path's (see
    `coordinator_core.logs.files.path_identity`), and `reason` says why."""

    cluster: str
    source: str
    path: str
    file_id: str
    rotated: bool
    zone: str
    broker_id: int | None
    container_layout: bool = False
    size: int = 0
    not_read: str | None = None
    reason: str | None = None


def list_log_files(sources: Sequence[LogSource]) -> list[LogFile]:
    """The files of every source, one per identity (a plain copy preferred over a `.gz` of the same file).

    The first 64 KiB of each file give its identity and whether a container runtime wrote it. A file
    without a complete first line in them (or that cannot be read) is listed too, with `not_read` and
    `reason` (see `why_not_read`): every file listed gets accounted for in log_file_reads.
    """
    by_identity: dict[tuple[str, str], LogFile] = {}
    for source in sources:
        paths = sorted({p for pattern in source.paths for p in glob.glob(pattern) if os.path.isfile(p)})
        for path in paths:
            head, error = first_bytes(path)
            rotated = bool(_ROTATED_NAME.search(path))
            broker_id = None if source.broker_id < 0 else source.broker_id
            try:
                size = os.path.getsize(path)
            except OSError:
                size = 0
            file_id = identity_of(source.cluster, source.source, head)
            if file_id is None:
                not_read, reason = why_not_read(head, error, rotated)
                file_id = path_identity(source.cluster, source.source, path)
                by_identity[(source.cluster, file_id)] = LogFile(
                    source.cluster, source.source, path, file_id, rotated, source.zone, broker_id, size=size,
                    not_read=not_read, reason=reason,
                )
                continue
            found = LogFile(
                source.cluster,
                source.source,
                path,
                file_id,
                rotated,
                source.zone,
                broker_id,
                has_container_layout(head),
                size,
            )
            key = (source.cluster, file_id)
            seen = by_identity.get(key)
            # A rotated copy is complete; among those, a plain one reads faster than its .gz.
            if seen is None or (found.rotated, not found.path.endswith(".gz")) > (
                seen.rotated,
                not seen.path.endswith(".gz"),
            ):
                by_identity[key] = found
    return sorted(by_identity.values(), key=lambda f: (f.cluster, f.source, f.path))


def archived_positions(log_file_reads: DataFrame) -> DataFrame:
    """(cluster, file_id, last_line, end_byte, status, read_error, first_line): how far each file was read,
    and what its latest row says (a row without lines comes after the read it follows: same last_line,
    later first_line)."""
    latest = F.max_by(F.struct("end_byte", "status", "read_error", "first_line"), F.struct("last_line", "first_line"))
    return log_file_reads.groupBy("cluster", "file_id").agg(
        F.max("last_line").alias("last_line"), latest.alias("latest")
    ).select("cluster", "file_id", "last_line", "latest.*")


def worth_a_row(read: dict[str, Any], latest: dict[str, Any] | None) -> bool:
    """Whether a file's read gets a log_file_reads row this run.

    The table's grain is (cluster, file_id, first_line) and a read starts after the last_line of the
    file's latest row. A read of new lines always gets a row. A read of none gets one only when it has
    something to say (a status other than `read`: cut short, unreadable, waiting) that the file's latest
    row does not say already (another status or reason), and when that latest row is not itself a row
    without lines at this position (it would have this row's first_line). So a file that stays unreadable,
    waiting or cut at the same byte is recorded once, not every night, and re-runs add nothing; a file that
    changes (becomes readable, grows, or is cut elsewhere) is recorded when it is read.

    Args:
        read: a file row of the scan (SCAN_COLUMNS).
        latest: the file's latest log_file_reads row (status, read_error, first_line), None without one.
    """
    if read["last_line"] >= read["first_line"]:
        return True
    if read["read_status"] == "read":
        return False
    if latest is None:
        return True
    if latest["first_line"] == read["first_line"]:
        return False
    return (latest["status"], latest["read_error"]) != (read["read_status"], read["read_error"])
