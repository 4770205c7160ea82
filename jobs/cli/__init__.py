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

The package holds one module per command (group, storms, sql), the tables and inputs they share (warehouse),
the printing (output) and the command line (parser); `main` is the `cgh` console script (project.scripts
`jobs.cli:main`).
"""

from __future__ import annotations

from jobs.cli.parser import main

__all__ = ["main"]
