"""`cgh sql QUERY` (DataFusion SQL over the tables, by name) and `cgh tables` (the tables, their row counts)."""

from __future__ import annotations

import argparse
import datetime as dt
import os
from typing import Any

from jobs.cli.output import format_table, print_json_lines, rows_of
from jobs.cli.warehouse import EXIT_OK, find_warehouse


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
