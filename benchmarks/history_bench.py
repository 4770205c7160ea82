"""Benchmark of the gold stages (history, storms) on synthetic fleet traffic, on local[2].

    .venv/bin/python -m benchmarks.history_bench                          # 1M records, 2,000 groups
    .venv/bin/python -m benchmarks.history_bench --records 200000 --groups 500 --rebalance-rate 0.02

The synthetic fleet generator writes N records into raw_offsets; one nightly run (ingest, decode, history,
storms) processes them all, then the generator appends 1% more and a second run processes that. The
history stage rebuilds every touched group's generations (`group_generations`), offset events, assignment
replay and what-if replay under four assignors; its time is read from the run's own stage timer.
Reported: generations/s and groups/s of the history stage (rows of group_generations written by the
stage / stage seconds), the storms stage time, the same for the incremental run, and the 1-minute load
average (the machine is shared: a figure means little without it). There are no coordinator logs in the
synthetic fleet: this is the records-only path.
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


def _run(records: int, groups: int, rebalance_rate: float, workdir: Path) -> dict[str, Any]:
    from pyspark.sql import functions as F

    from jobs.common.config import Config, SourcesConfig, SparkConfig, TablesConfig
    from jobs.common.delta_io import Tables
    from jobs.common.session import build_session
    from jobs.nightly import run_nightly
    from jobs.stages import STAGES
    from jobs.synthetic_fleet import FleetSpec, write_fleet
    from schemas import GROUP_GENERATIONS, GROUP_METADATA

    config = Config(
        sources=SourcesConfig(mode="none"),
        tables=TablesConfig(database="history_bench", location=str(workdir / "tables")),
        spark=SparkConfig(
            master="local[2]", catalog="in-memory", warehouse_dir=str(workdir / "spark-warehouse"),
            metastore_dir="", shuffle_partitions=8, show_progress=False,
            extra={"spark.ui.enabled": "false", "spark.driver.memory": "4g"},
        ),
    )
    stages = tuple(s for s in STAGES if s.name in ("ingest", "decode", "history", "storms"))
    spark = build_session(config)
    tables = Tables(spark, config.tables.database, config.tables.location)
    spec = FleetSpec(groups=groups, rebalance_rate=rebalance_rate)
    result: dict[str, Any] = {"records": records, "groups": groups, "rebalance_rate": rebalance_rate}
    write_fleet(tables, spec, records, append=False)

    def one_run(label: str) -> None:
        tables.ensure(GROUP_GENERATIONS)
        before = tables.read(GROUP_GENERATIONS).count()
        t0 = time.monotonic()
        ctx = run_nightly(spark, config, stages=stages)
        result[f"{label}_run_s"] = time.monotonic() - t0
        result[f"{label}_history_s"] = ctx.stage_seconds["history"]
        result[f"{label}_storms_s"] = ctx.stage_seconds["storms"]
        result[f"{label}_history_summary"] = ctx.extra.get("history", "")
        result[f"{label}_load_1m"] = os.getloadavg()[0]
        result[f"{label}_generations_total"] = tables.read(GROUP_GENERATIONS).count()
        result[f"{label}_generations_before"] = before

    one_run("full")
    result["group_metadata_records"] = tables.read(GROUP_METADATA).count()
    result["groups_with_generations"] = (
        tables.read(GROUP_GENERATIONS).select("cluster", "group_id").distinct().count()
    )
    result["full_generations_per_s"] = result["full_generations_total"] / result["full_history_s"]
    result["full_groups_per_s"] = result["groups_with_generations"] / result["full_history_s"]

    write_fleet(tables, spec, max(1, records // 100), append=True)
    one_run("incremental")
    recent = tables.read(GROUP_GENERATIONS).agg(F.max("generation")).first()
    result["max_generation"] = recent[0] if recent else None
    spark.stop()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, default=2000)
    parser.add_argument("--rebalance-rate", type=float, default=0.01,
                        help="probability that a group's next event is a rebalance (the fleet default is 0.004)")
    parser.add_argument("--workdir", default=None, help="where the tables go (default: a temp dir, removed)")
    args = parser.parse_args(argv)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="history_bench_"))
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    try:
        r = _run(args.records, args.groups, args.rebalance_rate, workdir)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print(
        f"[bench] {r['records']:,} records, {r['groups']:,} groups, {r['group_metadata_records']:,} group metadata "
        f"records -> {r['full_generations_total']:,} generations in {r['groups_with_generations']:,} groups\n"
        f"[bench] full run: history stage {r['full_history_s']:.1f}s = {r['full_generations_per_s']:,.0f} "
        f"generations/s, {r['full_groups_per_s']:,.0f} groups/s; storms stage {r['full_storms_s']:.1f}s "
        f"(load {r['full_load_1m']:.1f})\n"
        f"[bench]   {r['full_history_summary']}\n"
        f"[bench] incremental 1%: history stage {r['incremental_history_s']:.1f}s, storms "
        f"{r['incremental_storms_s']:.1f}s (load {r['incremental_load_1m']:.1f})\n"
        f"[bench]   {r['incremental_history_summary']}",
        flush=True,
    )
    print(json.dumps(r, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    raise SystemExit(main())
