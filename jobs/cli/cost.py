"""`cgh cost`: groups ranked by what their rebalances cost (paused partition-seconds, records delayed)."""

from __future__ import annotations

import argparse
import datetime as dt
from typing import Any

from jobs.cli.output import format_table, print_json_lines, rows_of, utc_text
from jobs.cli.warehouse import EXIT_OK, Warehouse, find_warehouse, parse_since, sql_string, sql_timestamp

#: rebalance_cost per group (DataFusion SQL): point figures where every pause has one, else the low bounds,
#: with the bounds beside them; most paused partition-seconds first
COST_SQL = """
SELECT cluster, group_id, count(*) AS rebalances, sum(partitions_paused) AS partitions_paused,
       round(sum(coalesce(partition_seconds, partition_seconds_low)), 3) AS partition_seconds,
       round(sum(partition_seconds_low), 3) AS partition_seconds_low,
       CASE WHEN count(partition_seconds_high) = count(*) THEN round(sum(partition_seconds_high), 3) END
           AS partition_seconds_high,
       sum(records_delayed) AS records_delayed, max(pause_ms) AS longest_pause_ms,
       sum(CASE WHEN inferred THEN 1 ELSE 0 END) AS inferred,
       sum(CASE WHEN protocol_kind = 'static_restart' THEN 1 ELSE 0 END) AS static_restarts
FROM rebalance_cost
{where}
GROUP BY cluster, group_id
ORDER BY partition_seconds DESC, records_delayed DESC NULLS LAST, cluster, group_id
"""


def cost(warehouse: Warehouse, cluster: str | None, group: str | None, since: dt.datetime | None) -> Any:
    where = ["partitions_paused > 0"]
    if cluster:
        where.append(f"cluster = {sql_string(cluster)}")
    if group:
        where.append(f"group_id = {sql_string(group)}")
    if since:
        where.append(f"rebalance_at >= {sql_timestamp(since)}")
    return warehouse.query(COST_SQL.format(where="WHERE " + " AND ".join(where)), ["rebalance_cost"])


def command_cost(args: argparse.Namespace, out: Any) -> int:
    warehouse = find_warehouse(args)
    since = parse_since(args.since) if args.since else None
    _, rows = rows_of(cost(warehouse, args.cluster, args.group, since))
    if args.json:
        print_json_lines(rows, out)
        return EXIT_OK
    scope = ((f" of {args.group}" if args.group else "") + (f" on {args.cluster}" if args.cluster else "")
             + (f" since {utc_text(since)} UTC" if since else ""))
    if not rows:
        print(f"no rebalance paused a partition{scope}", file=out)
        return EXIT_OK
    shown = ["cluster", "group_id", "rebalances", "partitions_paused", "partition_seconds", "partition_seconds_low",
             "partition_seconds_high", "records_delayed", "longest_pause_ms", "inferred"]
    titles = ["cluster", "group", "rebalances", "partitions paused", "paused partition-s", "low", "high",
              "records delayed", "longest pause ms", "inferred"]
    print(f"{len(rows)} group{'s' if len(rows) != 1 else ''} whose rebalances paused partitions{scope}, most paused "
          "partition-seconds first (a figure with bounds only counts its low bound; 'high' empty: unbounded)",
          file=out)
    print(format_table(titles, [[r[c] for c in shown] for r in rows]), file=out)
    return EXIT_OK
