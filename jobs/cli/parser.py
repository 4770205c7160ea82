"""cgh's command line: the shared options, one subcommand per question, and `main`, the console script."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from jobs.cli.cost import command_cost
from jobs.cli.group import command_group
from jobs.cli.sql import command_sql, command_tables
from jobs.cli.storms import command_storms
from jobs.cli.warehouse import EXIT_OK, EXIT_USAGE, CliError


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

    paid = commands.add_parser("cost", parents=[common(False)],
                               help="groups ranked by what their rebalances cost: paused partition-seconds, "
                                    "records delayed")
    paid.add_argument("--group", metavar="G", help="only this group")
    paid.add_argument("--cluster", help="only this cluster")
    paid.add_argument("--since", metavar="T", help=since_help + " (rebalances completed after it)")
    paid.set_defaults(run=command_cost)
    sql = commands.add_parser("sql", parents=[common(False)], help="DataFusion SQL over the tables (by name)")
    sql.add_argument("query", help='e.g. "SELECT cluster, count(*) FROM group_generations GROUP BY cluster"')
    sql.set_defaults(run=command_sql)

    tables = commands.add_parser("tables", parents=[common(False)], help="the tables with their row counts")
    tables.set_defaults(run=command_tables)
    return parser


#: Top-level modules that come with the `spark` extra, not with the core (`pip install .`).
SPARK_EXTRA_MODULES = frozenset({"deltalake", "pandas", "pyspark", "delta", "plotly"})


def main(argv: Sequence[str] | None = None, out: Any = None) -> int:
    """The `cgh` console script. Errors are one line on stderr; returns the exit status."""
    args = build_parser().parse_args(list(argv) if argv is not None else None)
    run: Callable[[argparse.Namespace, Any], int] = args.run
    try:
        return run(args, out or sys.stdout)
    except CliError as error:
        print(f"cgh: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except ModuleNotFoundError as error:
        if error.name not in SPARK_EXTRA_MODULES:
            raise
        # `pip install .` is the decoder alone; cgh reads Delta tables with delta-rs, which the extra brings.
        print(f"cgh: error: cgh needs the spark extra (module {error.name!r} is not installed): "
              "pip install 'consumer-group-history[spark]'", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # `cgh ... | head`
        sys.stderr.close()
        return EXIT_OK
