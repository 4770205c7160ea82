"""`cgh storms`: rebalance storms, most severe first."""

from __future__ import annotations

import argparse
import datetime as dt
from typing import Any

from jobs.cli.output import format_table, print_json_lines, rows_of, utc_text
from jobs.cli.warehouse import EXIT_OK, Warehouse, find_warehouse, parse_since, sql_string, sql_timestamp

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
        where.append(f"cluster = {sql_string(cluster)}")
    if since:  # a storm still going on at `since` counts
        where.append(f"coalesce(window_end, window_start) >= {sql_timestamp(since)}")
    return warehouse.query(STORMS_SQL.format(where=("WHERE " + " AND ".join(where)) if where else ""),
                           ["rebalance_storms"])


def command_storms(args: argparse.Namespace, out: Any) -> int:
    warehouse = find_warehouse(args)
    since = parse_since(args.since) if args.since else None
    _, rows = rows_of(storms(warehouse, args.cluster, since))
    if args.json:
        print_json_lines(rows, out)
        return EXIT_OK
    scope = (f" on {args.cluster}" if args.cluster else "") + (f" since {utc_text(since)} UTC" if since else "")
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
