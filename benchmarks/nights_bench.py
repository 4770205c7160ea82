"""Benchmark: a night's cost follows the night's new records, not the archive's age (issue 18), on local[2].

    .venv/bin/python benchmarks/nights_bench.py            # 10 nights of 1,000,000 records, 2,000 groups
    .venv/bin/python benchmarks/nights_bench.py --records-per-night 20000 --groups 200 --nights 3  # a look

The same daily volume of synthetic fleet traffic (jobs/synthetic_fleet.py) is appended to raw_offsets night
after night, and after each append one nightly run processes it: every stage of `jobs.nightly.STAGES` but
logs (the fleet has no log files) and report, so ingest, decode, the gold stages and maintenance. The
fleet's events are spaced so that each night's records span about a day of data time, as a real night's
do (storm windows, stalls and reopen horizons then see days, not minutes).

Printed per night: the run's seconds and each stage's (the run's own timers, `RunContext.stage_seconds`),
the archive (raw_offsets rows, bytes of its live files and on disk), the live data files of every table,
the data time the night's records span per partition, and the 1-minute load average (the machine is shared: a figure
means little without it). At the end: night N / night 2 for the whole run and for each stage (night 1 is
the cold start: a fresh JVM, the tables created), the warm runs with nothing new that follow the last
night, and one JSON line with everything.
Targets (issue 18): night 10 / night 2 <= 1.2 for the whole run and for each gold stage; a warm run with
nothing new <= 5 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DAY_MS = 86_400_000
#: Stages that are not gold stages (the ratios of the issue's target are for the gold ones and the run).
NOT_GOLD = {"ingest", "decode", "logs", "maintenance", "report"}


def _disk_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    from pyspark.sql import functions as F

    from jobs.common.config import Config, MaintenanceConfig, SourcesConfig, SparkConfig, TablesConfig
    from jobs.common.delta_io import Tables
    from jobs.common.session import build_session
    from jobs.maintenance import live_files
    from jobs.nightly import run_nightly
    from jobs.stages import STAGES
    from jobs.synthetic_fleet import FleetSpec, write_fleet
    from schemas import ALL_TABLES, RAW_OFFSETS

    maintenance = MaintenanceConfig(
        enabled=not args.no_maintenance, small_file_mb=args.small_file_mb, max_small_files=args.max_small_files,
        vacuum_every_commits=args.vacuum_every_commits)
    config = Config(
        sources=SourcesConfig(mode="none"),
        tables=TablesConfig(database="nights_bench", location=str(workdir / "tables")),
        spark=SparkConfig(
            master=args.master, catalog="in-memory", warehouse_dir=str(workdir / "spark-warehouse"),
            metastore_dir="", shuffle_partitions=args.shuffle_partitions, show_progress=False,
            extra={"spark.ui.enabled": "false", "spark.driver.memory": args.driver_memory,
                   "spark.databricks.delta.snapshotPartitions": "8"},
        ),
        maintenance=maintenance,
    )
    stages = tuple(s for s in STAGES if s.name not in ("logs", "report"))
    # Every partition gets an equal share of a night's records; spaced per record, each share spans a day.
    spacing = args.record_spacing_ms or max(1, DAY_MS * args.partitions // args.records_per_night)
    spec = FleetSpec(groups=args.groups, partitions=args.partitions, seed=args.seed,
                     rebalance_rate=args.rebalance_rate, record_spacing_ms=spacing)
    result: dict[str, Any] = {
        "records_per_night": args.records_per_night, "groups": args.groups, "nights": args.nights,
        "partitions": args.partitions, "rebalance_rate": args.rebalance_rate, "seed": args.seed,
        "record_spacing_ms": spacing, "master": args.master, "driver_memory": args.driver_memory,
        "stages": [s.name for s in stages], "maintenance": None if args.no_maintenance else vars(maintenance),
        "per_night": [],
    }
    print(f"[bench] {args.nights} nights of {args.records_per_night:,} records, {args.groups:,} groups, "
          f"{args.partitions} partitions, rebalance rate {args.rebalance_rate}, {spacing:,} ms of data time per "
          f"record of a partition; "
          f"stages {', '.join(result['stages'])}; {args.master}, driver memory {args.driver_memory}", flush=True)

    spark = build_session(config)
    tables = Tables(spark, config.tables.database, config.tables.location)
    for night in range(1, args.nights + 1):
        t0 = time.monotonic()
        tables.ensure_database()
        tables.ensure(RAW_OFFSETS)
        raw_before = tables.version(RAW_OFFSETS)
        write_fleet(tables, spec, args.records_per_night, append=night > 1)
        raw_after = tables.version(RAW_OFFSETS)
        generate_s = time.monotonic() - t0

        t0 = time.monotonic()
        ctx = run_nightly(spark, config, stages=stages)
        run_s = time.monotonic() - t0
        load = os.getloadavg()[0]

        # Outside the timed run: the archive and the tables as the night left them.
        spans = sorted(r["span_ms"] for r in tables.changes(RAW_OFFSETS, raw_before, raw_after).groupBy("partition")
                       .agg((F.unix_millis(F.max("timestamp")) - F.unix_millis(F.min("timestamp"))).alias("span_ms"))
                       .collect())  # one row per __consumer_offsets partition
        detail = tables.delta(RAW_OFFSETS).detail().select("numFiles", "sizeInBytes").first()
        row = {
            "night": night,
            "run_s": round(run_s, 3),
            "stage_seconds": dict(ctx.stage_seconds),
            "generate_s": round(generate_s, 3),
            "archive_rows": tables.read(RAW_OFFSETS).count(),  # from the Delta log's row counts
            "archive_live_bytes": int(detail["sizeInBytes"]),
            "archive_disk_bytes": _disk_bytes(Path(tables.path(RAW_OFFSETS))),
            "files": {s.name: live_files(tables, s) for s in ALL_TABLES},
            # data time the night's records span in each partition: median and widest
            "data_span_hours": [round(spans[len(spans) // 2] / 3_600_000, 2), round(spans[-1] / 3_600_000, 2)],
            "load_1m": round(load, 2),
            "summary": dict(ctx.extra),
        }
        result["per_night"].append(row)
        stages_text = " ".join(f"{name} {s:.1f}" for name, s in row["stage_seconds"].items())
        files_text = ", ".join(f"{name} {n}" for name, n in row["files"].items() if n)
        print(f"[night {night:>2}] run {run_s:.1f}s | {stages_text} | archive {row['archive_rows']:,} rows, "
              f"{row['archive_live_bytes'] / 2**20:,.1f} MiB live, {row['archive_disk_bytes'] / 2**20:,.1f} MiB on "
              f"disk | the night spans {row['data_span_hours'][0]:.1f} h of data time per partition (widest "
              f"{row['data_span_hours'][1]:.1f} h) | generate {generate_s:.1f}s | "
              f"load {load:.1f}\n"
              f"           files: {files_text}\n"
              f"           maintenance: {row['summary'].get('maintenance', 'off')}", flush=True)
    # A warm run with nothing new (target: <= 5 s): what a scheduler's retry or an extra trigger costs.
    result["noop_runs"] = []
    for _ in range(args.noop_runs):
        t0 = time.monotonic()
        ctx = run_nightly(spark, config, stages=stages)
        noop = {"run_s": round(time.monotonic() - t0, 3), "stage_seconds": dict(ctx.stage_seconds),
                "load_1m": round(os.getloadavg()[0], 2)}
        result["noop_runs"].append(noop)
        print(f"[no-op] run {noop['run_s']:.1f}s | "
              + " ".join(f"{name} {sec:.1f}" for name, sec in noop["stage_seconds"].items())
              + f" | load {noop['load_1m']:.1f}", flush=True)
    spark.stop()
    result["ratios_to_night_2"] = _ratios(result["per_night"])
    return result


def _ratios(nights: list[dict[str, Any]]) -> dict[str, float]:
    """Night N / night 2 for the whole run and for each stage (night 1 is the cold start)."""
    if len(nights) < 2:
        return {}
    second, last = nights[1], nights[-1]
    ratios = {"run": last["run_s"] / second["run_s"]}
    for name, seconds in last["stage_seconds"].items():
        base = second["stage_seconds"].get(name)
        if base:
            ratios[name] = seconds / base
    return {k: round(v, 3) for k, v in ratios.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records-per-night", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, default=2000)
    parser.add_argument("--nights", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=50, help="__consumer_offsets partitions of the fleet")
    parser.add_argument("--rebalance-rate", type=float, default=0.004,
                        help="probability that a group's next event is a rebalance (the fleet default is 0.004)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--record-spacing-ms", type=int, default=0,
                        help="data time per record of a partition (default: a night's share spans a day)")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--shuffle-partitions", type=int, default=8)
    parser.add_argument("--no-maintenance", action="store_true", help="run without the maintenance stage's work")
    parser.add_argument("--small-file-mb", type=float, default=32.0)
    parser.add_argument("--max-small-files", type=int, default=16)
    parser.add_argument("--vacuum-every-commits", type=int, default=20)
    parser.add_argument("--noop-runs", type=int, default=2, help="warm runs with nothing new after the last night")
    parser.add_argument("--workdir", default=None, help="where the tables go (default: a temp dir, removed)")
    args = parser.parse_args(argv)
    if args.nights < 1 or args.records_per_night < 1:
        parser.error("--nights and --records-per-night must be at least 1")
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="nights_bench_"))
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    try:
        result = _run(args, workdir)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    ratios = result["ratios_to_night_2"]
    if ratios:
        last = result["nights"]
        gold = {k: v for k, v in ratios.items() if k != "run" and k not in NOT_GOLD}
        print(f"[bench] night {last} / night 2: run {ratios['run']:.2f}; gold stages "
              + ", ".join(f"{k} {v:.2f}" for k, v in gold.items())
              + "; other stages " + ", ".join(f"{k} {v:.2f}" for k, v in ratios.items() if k in NOT_GOLD)
              + " (target: <= 1.2 for the run and each gold stage)", flush=True)
    print(json.dumps(result, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
