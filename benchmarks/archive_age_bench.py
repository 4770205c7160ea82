"""What a night's ingest costs as the archive ages: the same segment files read into warehouses whose
raw_offsets already holds N records, for a few N (issue 30: a night's cost follows its new records).

    .venv/bin/python -m benchmarks.archive_age_bench                      # N = 0 and 5,000,000
    .venv/bin/python -m benchmarks.archive_age_bench --archived 0,200000  # a quick look

raw_offsets is append-only and never shrinks (compaction on the brokers is why it exists), so whatever a
night reads of it whole grows with every night ever archived. For each N, in one process (local[2],
in-memory catalog), a fresh warehouse: the synthetic fleet generator writes N records of a cluster of their
own into raw_offsets (not timed), then the nightly job's ingest stage alone runs over the configuration's
segment sources (conf/local.toml: the shipped samples) once to archive them, then `--again` times with
nothing new. Printed per N: the ingest's seconds of each run (the run's own timer) and the Spark jobs it
started; then the 1-minute load average and one JSON line. Flat across N is the aim: the archive's leader
epochs and watermarks are carried in the commit note, not grouped from raw_offsets every night.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import print_closing  # noqa: E402 - after the path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conf", default=str(ROOT / "conf" / "local.toml"), help="its segment sources are read")
    parser.add_argument("--archived", default="0,5000000", help="comma-separated archive sizes (records)")
    parser.add_argument("--again", type=int, default=2, help="runs with nothing new after the first (default 2)")
    args = parser.parse_args(argv)

    from benchmarks.run_overhead import _next_job_id
    from jobs.common.config import load_job_config
    from jobs.common.delta_io import Tables
    from jobs.common.session import build_session
    from jobs.nightly import run_nightly
    from jobs.stages import STAGES
    from jobs.synthetic_fleet import FleetSpec, write_fleet

    workdir = Path(tempfile.mkdtemp(prefix="archive-age-"))
    base = load_job_config(args.conf)
    base = dataclasses.replace(base, spark=dataclasses.replace(
        base.spark, master="local[2]", catalog="in-memory", metastore_dir="",
        warehouse_dir=str(workdir / "spark-warehouse"), show_progress=False,
        extra={**base.spark.extra, "spark.ui.enabled": "false"}))
    spark = build_session(base)
    ingest = [s for s in STAGES if s.name == "ingest"]
    results: list[dict[str, Any]] = []
    try:
        for n, size in enumerate(int(s) for s in args.archived.split(",")):
            config = dataclasses.replace(base, tables=dataclasses.replace(
                base.tables, database=f"archive_age_{n}", location=str(workdir / f"tables_{n}")))
            tables = Tables(spark, config.tables.database, config.tables.location)
            if size:
                print(f"[bench] writing {size:,} archived records ...", file=sys.stderr, flush=True)
                write_fleet(tables, FleetSpec(cluster="aged-fleet", groups=2000), size, append=False)
            runs = []
            for label in ["first", *["nothing new"] * args.again]:
                job0 = _next_job_id(spark)
                t0 = time.monotonic()
                ctx = run_nightly(spark, config, stages=ingest)
                jobs = _next_job_id(spark) - job0
                runs.append({"run": label, "run_s": round(time.monotonic() - t0, 2),
                             "ingest_s": ctx.stage_seconds["ingest"], "spark_jobs": jobs})
            results.append({"archived": size, "runs": runs})
            print(f"archive of {size:>11,} records: " + ", ".join(
                f"{r['run']} ingest {r['ingest_s']:.1f} s ({r['spark_jobs']} jobs)" for r in runs), flush=True)
            shutil.rmtree(workdir / f"tables_{n}", ignore_errors=True)
    finally:
        spark.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    print_closing({"results": results})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
