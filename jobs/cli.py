"""cgh: quick answers from the Delta tables, without Spark.

A question such as "what happened to group X" should take a second, not the minute a JVM and Spark's first
Delta query take. cgh reads the tables the nightly job wrote with delta-rs (the `deltalake` package, which
honours deletion vectors) and answers with DataFusion SQL:

    cgh group cgh-storm-poll-timeout --cluster kafka-3.9.1   # the group's generations: who, why, what moved
    cgh storms --since 7d                                      # rebalance storms, most severe first
    cgh sql "SELECT cluster, count(*) FROM group_generations GROUP BY cluster"
    cgh tables                                                 # the tables and their row counts

Each command prints an aligned table with headers, or JSON lines with `--json`. The tables are found from
the configuration (`--conf`, default conf/local.toml: `[tables] location`) or given with `--tables DIR`.
Times are UTC. Exit status: 0 answered, 1 the group asked for is not there, 2 a usage, configuration or
SQL error (one line on stderr).

Nothing here imports pyspark: the configuration loader (jobs.common.config) is plain Python.
"""

from __future__ import annotations

import argparse
import datetime as dt
import difflib
import json
import math
import os
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EXIT_OK = 0
EXIT_NOT_FOUND = 1
EXIT_USAGE = 2

#: widest cell of a table (longer values end in "..."; --json prints them whole)
MAX_CELL = 100


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


def _sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _sql_timestamp(moment: dt.datetime) -> str:
    return f"TIMESTAMP '{moment.astimezone(dt.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.%f')}Z'"


# ---------------------------------------------------------------------------------------------------
# Output


def _utc_text(moment: dt.datetime) -> str:
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def cell_text(value: Any) -> str:
    """A value as a table cell: times in UTC to the millisecond, lists comma-separated, maps as k=v."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        return _utc_text(value)
    if isinstance(value, float):
        return str(round(value, 6)) if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={cell_text(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(cell_text(v) for v in value)
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def json_value(value: Any) -> Any:
    """A value as JSON: times as ISO 8601 UTC with Z, bytes as hex."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            return value.astimezone(dt.timezone.utc).isoformat().replace("+00:00", "Z")
        return value.isoformat()
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "as_tuple"):  # Decimal
        return str(value)
    return value


def rows_of(table: Any) -> tuple[list[str], list[dict[str, Any]]]:
    """Column headers and rows of a pyarrow Table; maps become dicts, timestamp columns with a zone say it
    in their header ("window_start (UTC)")."""
    import pyarrow as pa

    headers = []
    maps = []
    for f in table.schema:
        tz = getattr(f.type, "tz", None) if pa.types.is_timestamp(f.type) else None
        headers.append(f"{f.name} ({tz})" if tz else f.name)
        if pa.types.is_map(f.type):
            maps.append(f.name)
    rows = table.to_pylist()
    for row in rows:
        for name in maps:
            if row[name] is not None:
                row[name] = dict(row[name])
    return headers, rows


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], right: Iterable[int] = ()) -> str:
    """An aligned table with a header line and a rule under it; numbers (and the `right` columns) are
    right-aligned."""
    cells = [[_clip(cell_text(v)) for v in row] for row in rows]
    right_aligned = set(right) | {
        i for i in range(len(headers))
        if rows and all(isinstance(r[i], (int, float)) and not isinstance(r[i], bool) for r in rows if r[i] is not None)
        and any(r[i] is not None for r in rows)
    }
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if i in right_aligned else v.ljust(w)
                         for i, (v, w) in enumerate(zip(values, widths, strict=True))).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(c) for c in cells)])


def _clip(text: str) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= MAX_CELL else text[:MAX_CELL - 3] + "..."


def print_json_lines(rows: Iterable[dict[str, Any]], out: Any) -> None:
    for row in rows:
        out.write(json.dumps(json_value(row), ensure_ascii=False) + "\n")


# ---------------------------------------------------------------------------------------------------
# cgh group


#: group_generations columns the timeline shows (and --json prints), in this order
GROUP_COLUMNS = (
    "cluster", "group_id", "group_protocol", "generation", "record_offset", "at", "outcome", "protocol",
    "member_count", "members_joined", "members_left", "static_restarts", "rebalance_ms", "cause", "causes",
    "cause_inferred", "inference", "trigger_member_id", "evidence", "partitions_moved",
)


#: columns added after warehouses were written: shown when the table has them (a nightly run adds them)
OPTIONAL_GROUP_COLUMNS = ("coordinator_loads",)


def _has_column(warehouse: Warehouse, table: str, column: str) -> bool:
    from deltalake import DeltaTable

    if table not in warehouse.names:
        return False
    return column in {f.name for f in DeltaTable(os.path.join(warehouse.location, table)).schema().fields}


def group_timeline(warehouse: Warehouse, group_id: str, cluster: str | None, since: dt.datetime | None
                   ) -> list[dict[str, Any]]:
    """The group's generations, oldest first per cluster, each with its cause's evidence line."""
    at = "coalesce(rebalance_started_at, stabilized_at, assignment_stored_at)"
    where = [f"group_id = {_sql_string(group_id)}"]
    if cluster:
        where.append(f"cluster = {_sql_string(cluster)}")
    if since:
        where.append(f"{at} >= {_sql_timestamp(since)}")
    shown = GROUP_COLUMNS + tuple(c for c in OPTIONAL_GROUP_COLUMNS if _has_column(warehouse, "group_generations", c))
    columns = ", ".join(f"{at} AS at" if c == "at" else c for c in shown)
    table = warehouse.query(
        f"SELECT {columns} FROM group_generations WHERE {' AND '.join(where)} "
        f"ORDER BY cluster, {at} ASC NULLS LAST, group_protocol, generation, record_offset",
        ["group_generations"],
    )
    _, rows = rows_of(table)
    for row in rows:
        row["evidence_line"] = evidence_line(row["cause"], row.pop("evidence") or [])
    return rows


def evidence_line(cause: str | None, evidence: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The log line that best says why: the first with the row's cause class, else the first with any cause
    class (the rest of `group_generations.evidence` is the rebalance's own progress: stabilized, assigned)."""
    with_message = [e for e in evidence if e.get("message")]
    for wanted in (lambda e: cause is not None and e.get("cause_class") == cause,
                   lambda e: e.get("cause_class") is not None):
        for e in with_message:
            if wanted(e):
                return {k: e.get(k) for k in ("at", "source", "line_number", "event_type", "cause_class", "reason",
                                              "message")}
    return None


def close_group_names(warehouse: Warehouse, group_id: str) -> tuple[list[str], dict[str, list[str]]]:
    """Group ids like `group_id` (for the "not found" message), and the clusters of every group."""
    table = warehouse.query("SELECT DISTINCT cluster, group_id FROM group_generations", ["group_generations"])
    clusters: dict[str, list[str]] = {}
    for row in table.to_pylist():
        clusters.setdefault(row["group_id"], []).append(row["cluster"])
    names = list(clusters)
    close = [n for n in names if group_id.lower() in n.lower() and n != group_id]
    close += [n for n in difflib.get_close_matches(group_id, names, n=5, cutoff=0.6) if n not in close]
    return close[:8], clusters


def _moves_text(moves: Sequence[dict[str, Any]]) -> list[str]:
    """Partitions moved, one line per (from, to) pair: `topic 3,4,5  from -> to`."""
    pairs: dict[tuple[str, str], dict[str, list[int]]] = {}
    for m in moves:
        key = (m.get("from_member") or "(unassigned)", m.get("to_member") or "(unassigned)")
        pairs.setdefault(key, {}).setdefault(m["topic"], []).append(m["partition"])
    lines = []
    for (source, target), topics in pairs.items():
        partitions = "; ".join(f"{t} {','.join(str(p) for p in sorted(ps))}" for t, ps in sorted(topics.items()))
        lines.append(f"{partitions}  {source} -> {target}")
    return lines


def render_group(rows: Sequence[dict[str, Any]]) -> str:
    """The timeline: a table per cluster, each generation followed by who joined and left, the trigger, the
    partitions moved and the evidence line of its cause."""
    out: list[str] = []
    by_cluster: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_cluster.setdefault(row["cluster"], []).append(row)
    headers = ["generation", "at (UTC)", "outcome", "members", "joined", "left", "moved", "rebalance s", "cause"]
    for cluster, generations in by_cluster.items():
        first = generations[0]
        inferred = sum(1 for g in generations if g["cause_inferred"])
        out.append(f"group {first['group_id']} on {cluster}: {len(generations)} generations"
                   + (f", {inferred} with an inferred cause" if inferred else "")
                   + (f", assignor {_assignors(generations)}" if _assignors(generations) else ""))
        table_rows = []
        details: list[list[str]] = []
        for g in generations:
            cause = g["cause"] or ""
            if g["cause_inferred"]:
                cause += " (inferred)"
            generation = str(g["generation"])
            if g["group_protocol"] != "classic":  # a KIP-848 group epoch
                generation += f" ({g['group_protocol']})"
            table_rows.append([generation, g["at"], g["outcome"], g["member_count"], len(g["members_joined"] or []),
                               len(g["members_left"] or []), len(g["partitions_moved"] or []),
                               None if g["rebalance_ms"] is None else round(g["rebalance_ms"] / 1000, 3), cause])
            detail = []
            for member in g["members_joined"] or []:
                detail.append(f"joined    {member}")
            for member in g["members_left"] or []:
                detail.append(f"left      {member}")
            if g["cause_inferred"] and g["inference"]:
                detail.append(f"inferred  {g['inference']}")
            if g["trigger_member_id"]:
                detail.append(f"trigger   {g['trigger_member_id']}")
            for move in _moves_text(g["partitions_moved"] or []):
                detail.append(f"moved     {move}")
            for load in g.get("coordinator_loads") or []:
                # Kafka loads a stable group as it was: the coordinator moved, no rebalance
                at = _utc_text(load["at"]) if isinstance(load["at"], dt.datetime) else load["at"]
                detail.append(f"coordinator  loaded by broker {load['broker_id']} at {at}"
                              f" (__consumer_offsets-{load['offsets_partition']}, {load['cause_class']})")
            line = g["evidence_line"]
            if line and line["source"]:
                detail.append(f"evidence  {os.path.basename(line['source'])}:{line['line_number']}  {line['message']}")
            elif line:  # a record, not a log line ("record:group_metadata", "offset 0")
                detail.append(f"evidence  {line['event_type']} {line['message']}"
                              + (f": {line['reason']}" if line.get("reason") else ""))
            elif not g["cause_inferred"] and g["cause"]:
                detail.append("evidence  (no log line kept)")
            details.append(detail)
        table = format_table(headers, table_rows, right=[0]).split("\n")
        out.extend(table[:2])
        for text, detail in zip(table[2:], details, strict=True):
            out.append(text)
            out.extend("    " + d for d in detail)
        out.append("")
    return "\n".join(out).rstrip("\n")


def _assignors(generations: Sequence[dict[str, Any]]) -> str:
    seen: list[str] = []
    for g in generations:
        if g["protocol"] and g["protocol"] not in seen:
            seen.append(g["protocol"])
    return ", ".join(seen)


def command_group(args: argparse.Namespace, out: Any) -> int:
    warehouse = find_warehouse(args)
    since = parse_since(args.since) if args.since else None
    rows = group_timeline(warehouse, args.group, args.cluster, since)
    if not rows:
        close, clusters = close_group_names(warehouse, args.group)
        if args.group in clusters and args.cluster and args.cluster not in clusters[args.group]:
            print(f"cgh: group {args.group} has no generations on cluster {args.cluster} "
                  f"(it has on: {', '.join(sorted(clusters[args.group]))})", file=sys.stderr)
            return EXIT_NOT_FOUND
        if args.group in clusters:  # only --since left nothing: an answer, not an error
            if not args.json:
                print(f"group {args.group}: no generations since {_utc_text(since)} UTC"  # type: ignore[arg-type]
                      + (f" on {args.cluster}" if args.cluster else ""), file=out)
            return EXIT_OK
        hint = f"; close names: {', '.join(close)}" if close else ""
        print(f"cgh: no group {args.group!r} in group_generations at {warehouse.location}{hint}", file=sys.stderr)
        return EXIT_NOT_FOUND
    if args.json:
        print_json_lines(rows, out)
    else:
        print(render_group(rows), file=out)
    return EXIT_OK


# ---------------------------------------------------------------------------------------------------
# cgh storms


#: v_storms (jobs/views.py) as DataFusion SQL, with the causes per storm, most severe first
STORMS_SQL = """
SELECT cluster, group_id, window_start, window_end, rebalances, first_generation, last_generation,
       round(stalled_seconds, 1) AS stalled_seconds, dominant_cause, causes, flapping_members, lockstep_id,
       lockstep_groups, round(severity, 1) AS severity
FROM rebalance_storms
{where}
ORDER BY severity DESC, window_start, cluster, group_id
"""


def storms(warehouse: Warehouse, cluster: str | None, since: dt.datetime | None) -> Any:
    where = []
    if cluster:
        where.append(f"cluster = {_sql_string(cluster)}")
    if since:  # a storm still going on at `since` counts
        where.append(f"coalesce(window_end, window_start) >= {_sql_timestamp(since)}")
    return warehouse.query(STORMS_SQL.format(where=("WHERE " + " AND ".join(where)) if where else ""),
                           ["rebalance_storms"])


def command_storms(args: argparse.Namespace, out: Any) -> int:
    warehouse = find_warehouse(args)
    since = parse_since(args.since) if args.since else None
    headers, rows = rows_of(storms(warehouse, args.cluster, since))
    if args.json:
        print_json_lines(rows, out)
        return EXIT_OK
    scope = (f" on {args.cluster}" if args.cluster else "") + (f" since {_utc_text(since)} UTC" if since else "")
    if not rows:
        print(f"no rebalance storms{scope}", file=out)
        return EXIT_OK
    shown = ["cluster", "group_id", "window_start", "window_end", "rebalances", "stalled_seconds", "dominant_cause",
             "severity", "flapping_members", "lockstep_id"]
    titles = ["cluster", "group", "start (UTC)", "end (UTC)", "rebalances", "stalled s", "dominant cause",
              "severity", "flapping members", "lock-step wave"]
    print(f"{len(rows)} rebalance storm{'s' if len(rows) != 1 else ''}{scope}, most severe first", file=out)
    print(format_table(titles, [[r[c] for c in shown] for r in rows]), file=out)
    return EXIT_OK


# ---------------------------------------------------------------------------------------------------
# cgh sql, cgh tables


def command_sql(args: argparse.Namespace, out: Any) -> int:
    warehouse = find_warehouse(args)
    table = warehouse.query(args.query, warehouse.tables_named_in(args.query))
    headers, rows = rows_of(table)
    if args.json:
        print_json_lines(rows, out)
    else:
        names = table.schema.names
        print(format_table(headers, [[r[n] for n in names] for r in rows]), file=out)
        print(f"({len(rows)} row{'s' if len(rows) != 1 else ''})", file=out)
    return EXIT_OK


def command_tables(args: argparse.Namespace, out: Any) -> int:
    from deltalake import DeltaTable

    warehouse = find_warehouse(args)
    counts = warehouse.query(
        " UNION ALL ".join(f"SELECT '{name}' AS name, count(*) AS n FROM {name}" for name in warehouse.names),
        warehouse.names,
    ).to_pylist()
    rows_by_name = {r["name"]: r["n"] for r in counts}
    rows = []
    for name in warehouse.names:
        table = DeltaTable(os.path.join(warehouse.location, name))
        history = table.history(1)
        last_write = dt.datetime.fromtimestamp(history[0]["timestamp"] / 1000, dt.timezone.utc) if history else None
        rows.append({
            "table": name, "rows": rows_by_name[name], "version": table.version(), "last_write": last_write,
            "partitioned_by": list(table.metadata().partition_columns),
        })
    if args.json:
        print_json_lines(rows, out)
    else:
        print(f"tables in {warehouse.location}", file=out)
        print(format_table(["table", "rows", "version", "last write (UTC)", "partitioned by"],
                           [list(r.values()) for r in rows]), file=out)
    return EXIT_OK


# ---------------------------------------------------------------------------------------------------
# Command line


def build_parser() -> argparse.ArgumentParser:
    def common(defaults: bool) -> argparse.ArgumentParser:
        # The shared options are accepted before and after the command (`cgh --json storms`, `cgh storms
        # --json`); after it they carry no default, so they do not undo one given before it.
        keep = {} if defaults else {"default": argparse.SUPPRESS}
        p = argparse.ArgumentParser(add_help=False)
        p.add_argument("--conf", help="TOML configuration whose [tables] location is read "
                       "(default conf/local.toml)", **({"default": None} if defaults else keep))
        p.add_argument("--tables", metavar="DIR", help="the tables directory (one subdirectory per Delta table); "
                       "overrides --conf", **({"default": None} if defaults else keep))
        p.add_argument("--json", action="store_true", help="JSON lines, one object per row (times ISO 8601 UTC)",
                       **({"default": False} if defaults else keep))
        return p

    since_help = "only from this time on: an ISO date or time (UTC unless an offset is given) or an age: 7d, 24h, 30m"
    parser = argparse.ArgumentParser(
        prog="cgh", parents=[common(True)],
        description="Quick answers from the consumer group history tables (Delta, read without Spark).",
        epilog="Exit status: 0 answered, 1 group not found, 2 usage, configuration or query error.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    group = commands.add_parser("group", parents=[common(False)], help="a group's generations: who joined and "
                                "left, why (with the log line that says so), which partitions moved")
    group.add_argument("group", help="consumer group id")
    group.add_argument("--cluster", help="only this cluster")
    group.add_argument("--since", metavar="T", help=since_help)
    group.set_defaults(run=command_group)

    storm = commands.add_parser("storms", parents=[common(False)], help="rebalance storms, most severe first")
    storm.add_argument("--cluster", help="only this cluster")
    storm.add_argument("--since", metavar="T", help=since_help + " (storms that ended after it)")
    storm.set_defaults(run=command_storms)

    sql = commands.add_parser("sql", parents=[common(False)], help="DataFusion SQL over the tables (by name)")
    sql.add_argument("query", help='e.g. "SELECT cluster, count(*) FROM group_generations GROUP BY cluster"')
    sql.set_defaults(run=command_sql)

    tables = commands.add_parser("tables", parents=[common(False)], help="the tables with their row counts")
    tables.set_defaults(run=command_tables)
    return parser


def main(argv: Sequence[str] | None = None, out: Any = None) -> int:
    """The `cgh` console script. Errors are one line on stderr; returns the exit status."""
    args = build_parser().parse_args(list(argv) if argv is not None else None)
    run: Callable[[argparse.Namespace, Any], int] = args.run
    try:
        return run(args, out or sys.stdout)
    except CliError as error:
        print(f"cgh: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # `cgh ... | head`
        sys.stderr.close()
        return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
