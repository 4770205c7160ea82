"""A run claim taken from a process of its own (`python -m tests.spark.claim_worker ...`), as a second
scheduled run on another driver would: its own JVM and its own in-memory catalog, the same table location.

It builds its session, says it is ready (a file), then for each round (a `--go` and an `--out` file) waits for
the test's go, claims, and writes `refused <message>` to the round's output, or `won <run_id>` and, once it has held the
claim for `--hold` seconds and let go, a `released` line. With `--hold-until FILE`, the winner of the last round
holds the claim until that file exists instead (the test runs a nightly job against it meanwhile). It exits 75
when its last round was refused.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from jobs.common.config import Config, SparkConfig, TablesConfig, parse_config
from jobs.common.delta_io import Tables
from jobs.common.run_lock import RunClaim, WarehouseClaimed
from jobs.common.session import build_session


def worker_config(location: str, scratch: Path) -> Config:
    return Config(
        tables=TablesConfig(database="claims", location=location),
        spark=SparkConfig(
            master="local[1]", catalog="in-memory", warehouse_dir=str(scratch / "spark-warehouse"),
            metastore_dir="", shuffle_partitions=1, show_progress=False,
            jars_dir=parse_config({"sources": {"mode": "none"}}).spark.jars_dir,
            extra={"spark.ui.enabled": "false", "spark.databricks.delta.snapshotPartitions": "1"},
        ),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--location", required=True)
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--ready", required=True)
    parser.add_argument("--go", required=True, action="append",
                        help="one per round: the file whose creation starts the round's claim")
    parser.add_argument("--out", required=True, action="append", help="one per round: where its result goes")
    parser.add_argument("--hold", type=float, default=3.0)
    parser.add_argument("--hold-until", default=None,
                        help="the last round's winner holds the claim until this file exists (not --hold seconds)")
    args = parser.parse_args(argv)
    if len(args.go) != len(args.out):
        parser.error("give as many --out as --go (one of each per round)")
    scratch = Path(args.out[0]).parent / f"scratch-{args.run_id}"
    config = worker_config(args.location, scratch)
    spark = build_session(config)
    tables = Tables(spark, config.tables.database, config.tables.location)
    tables.ensure_database()
    # Warm up (Delta's and Spark's classes), so that what races is the claim, not the JVMs' start. The first
    # round finds no run_claims table: both workers create it at once, as two first runs would.
    spark.createDataFrame([(1,)], "x int").write.format("delta").save(str(scratch / "warm"))
    Path(args.ready).touch()
    status = 0
    for round_, (go, out) in enumerate(zip(args.go, args.out, strict=True)):
        while not Path(go).exists():
            time.sleep(0.01)
        # A run id per round: the claims table tells the rounds apart.
        run_id = args.run_id if len(args.go) == 1 else f"{args.run_id}-round{round_}"
        claim = RunClaim(tables, run_id, "claim_worker", stale_hours=12)
        try:
            claim.claim()
        except WarehouseClaimed as refused:
            Path(out).write_text(f"refused {refused}\n")
            status = 75
            continue
        Path(out).write_text(f"won {run_id}\n")
        if args.hold_until is not None and round_ == len(args.go) - 1:
            while not Path(args.hold_until).exists():
                time.sleep(0.05)
        else:
            time.sleep(args.hold)
        claim.release()
        with open(out, "a") as done:  # the next round may start: the warehouse is free
            done.write("released\n")
        status = 0
    spark.stop()
    return status


if __name__ == "__main__":
    sys.exit(main())
