"""cgh's tables and its inputs: finding the Delta tables (`--tables` or the configuration), querying them
with DataFusion, the exit statuses and usage errors, `--since` and the SQL literals the commands build."""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EXIT_OK = 0
EXIT_NOT_FOUND = 1
EXIT_USAGE = 2


class CliError(Exception):
    """A usage, configuration or query error: one line for stderr, exit status 2."""


# ---------------------------------------------------------------------------------------------------
# Finding and reading the tables


@dataclass
class Warehouse:
    """The Delta tables under one directory (one subdirectory per table), opened only when a query needs
    them: opening reads a table's log, and a question about one group should not pay for every table."""

    location: str
    names: list[str]
    _builder: Any = None
    _registered: set[str] = field(default_factory=set)

    @classmethod
    def open(cls, location: str, origin: str) -> Warehouse:
        """The tables at `location`; `origin` says where the location came from, for the error message."""
        if "://" in location and not location.startswith("file://"):
            raise CliError(f"cgh reads tables on a local or mounted filesystem; {origin} is {location!r}")
        path = Path(location.removeprefix("file://"))
        if not path.is_dir():
            raise CliError(f"no tables directory at {path} ({origin}): scripts/nightly creates it")
        names = sorted(entry.name for entry in os.scandir(path)
                       if entry.is_dir() and (Path(entry.path) / "_delta_log").is_dir())
        if not names:
            raise CliError(f"no Delta tables in {path} ({origin}): scripts/nightly creates them")
        return cls(str(path), names)

    def require(self, *tables: str) -> None:
        """Register `tables` with the query engine (each once)."""
        from deltalake import DeltaTable, QueryBuilder

        if self._builder is None:
            self._builder = QueryBuilder()
        for name in tables:
            if name in self._registered:
                continue
            if name not in self.names:
                raise CliError(f"table {name} not found in {self.location} (tables there: {', '.join(self.names)})")
            self._builder.register(name, DeltaTable(os.path.join(self.location, name)))
            self._registered.add(name)

    def query(self, sql: str, tables: Iterable[str]) -> Any:
        """Run DataFusion SQL over `tables`; returns a pyarrow Table."""
        import pyarrow as pa
        from deltalake.exceptions import DeltaError

        self.require(*tables)
        try:
            # (pa.table() on the result would import pandas: a third of a second of a one-second answer)
            return pa.RecordBatchReader.from_stream(self._builder.execute(sql)).read_all()
        except DeltaError as error:
            message = _one_line(str(error))
            if "not found" in message and "table" in message:
                message += f" (tables in {self.location}: {', '.join(self.names)})"
            raise CliError(f"query failed: {message}") from None

    def tables_named_in(self, sql: str) -> list[str]:
        """The tables whose names occur as words in `sql` (those are registered; the others stay unopened)."""
        return [name for name in self.names if re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", sql, re.IGNORECASE)]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def find_warehouse(args: argparse.Namespace) -> Warehouse:
    """`--tables DIR`, else `[tables] location` of the configuration (`--conf`, default conf/local.toml)."""
    if args.tables:
        return Warehouse.open(args.tables, "--tables")
    from jobs.common.config import DEFAULT_CONFIG, ConfigError, load_config

    try:
        config = load_config(args.conf)  # values checked, inputs not: cgh reads only the tables
    except ConfigError as error:
        raise CliError(str(error)) from None
    conf_name = args.conf or os.path.relpath(DEFAULT_CONFIG)
    return Warehouse.open(config.tables.location, f"[tables] location of {conf_name}")


# ---------------------------------------------------------------------------------------------------
# Times


_RELATIVE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_since(text: str, now: dt.datetime | None = None) -> dt.datetime:
    """`--since`: an ISO date or time (UTC unless it names an offset) or an age relative to now.

    >>> parse_since("2026-11-20").isoformat()
    '2026-11-20T00:00:00+00:00'
    >>> parse_since("2026-11-20T06:30:00+01:00").isoformat()
    '2026-11-20T05:30:00+00:00'
    >>> parse_since("36h", now=dt.datetime(2026, 11, 27, tzinfo=dt.timezone.utc)).isoformat()
    '2026-11-25T12:00:00+00:00'
    """
    relative = _RELATIVE.match(text)
    if relative:
        now = now or dt.datetime.now(dt.timezone.utc)
        return now - dt.timedelta(seconds=float(relative.group(1)) * _UNIT_SECONDS[relative.group(2)])
    try:
        moment = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise CliError(f"--since {text!r}: expected an ISO date or time (2026-11-20, 2026-11-20T06:30, UTC "
                       "unless an offset is given) or an age such as 7d, 24h, 30m") from None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=dt.timezone.utc)
    return moment.astimezone(dt.timezone.utc)


def sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def sql_timestamp(moment: dt.datetime) -> str:
    return f"TIMESTAMP '{moment.astimezone(dt.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.%f')}Z'"
