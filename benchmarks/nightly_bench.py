"""Benchmark of the nightly pipeline on synthetic fleet traffic, on local[2].

    .venv/bin/python benchmarks/nightly_bench.py                 # 1M and 10M records
    .venv/bin/python benchmarks/nightly_bench.py --sizes 100000  # a quick look

For each size, in a fresh process (so peak memory is per size):
  1. the synthetic fleet generator writes N records into raw_offsets (timed, reported, not part of the run);
  2. floor: a plain Spark copy of that raw_offsets table into a new Delta table (the I/O floor);
  3. full: the nightly job (ingest of nothing new, then decode of all N records into every silver table);
  4. incremental: the generator appends 1% more records, and the nightly job runs again (three times by
     default: the first is the one compared with the full run, the later ones are printed beside it).
Reported: records/s of the full run, full/floor ratio, t(10M)/t(1M), incremental/full ratio, and the
peak driver memory: the Python driver's peak RSS and the JVM's peak heap in use (sampled every 0.25 s;
in local mode the JVM is driver and executors at once). Targets (issue 4): full <= 3x floor,
t(10M)/t(1M) <= 12, incremental <= 10% of full, driver memory flat in input size.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _one_size(records: int, workdir: Path, driver_memory: str, incremental_runs: int) -> dict[str, float]:
    from jobs.common.config import Config, SourcesConfig, SparkConfig, TablesConfig
    from jobs.common.delta_io import Tables
    from jobs.common.session import build_session
    from jobs.nightly import run_nightly
    from jobs.stages import STAGES
    from jobs.synthetic_fleet import FleetSpec, write_fleet
    from schemas import RAW_OFFSETS

    config = Config(
        sources=SourcesConfig(mode="none"),
        tables=TablesConfig(database="nightly_bench", location=str(workdir / "tables")),
        spark=SparkConfig(
            master="local[2]",
            catalog="in-memory",
            warehouse_dir=str(workdir / "spark-warehouse"),
            metastore_dir="",
            shuffle_partitions=8,
            show_progress=False,
            extra={"spark.ui.enabled": "false", "spark.driver.memory": driver_memory,
                   "spark.databricks.delta.snapshotPartitions": "8"},
        ),
    )
    # The archive and decode stages (issue 4); the later analysis stages have benchmarks of their own.
    stages = tuple(s for s in STAGES if s.name in ("ingest", "decode"))
    spark = build_session(config)
    memory_bean = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getMemoryMXBean()  # type: ignore[attr-defined]
    peak_heap = [0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            try:
                peak_heap[0] = max(peak_heap[0], memory_bean.getHeapMemoryUsage().getUsed())
            except Exception:  # noqa: BLE001 - the gateway closing at the end
                return
            stop.wait(0.25)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    tables = Tables(spark, config.tables.database, config.tables.location)
    spec = FleetSpec(groups=max(2000, min(20000, records // 500)))
    result: dict[str, float] = {"records": records, "groups": spec.groups}

    t0 = time.monotonic()
    write_fleet(tables, spec, records, append=False)
    result["generate_s"] = time.monotonic() - t0

    t0 = time.monotonic()
    tables.read(RAW_OFFSETS).write.format("delta").save(str(workdir / "plain_copy"))
    result["floor_s"] = time.monotonic() - t0

    t0 = time.monotonic()
    ctx = run_nightly(spark, config, stages=stages)
    result["full_s"] = time.monotonic() - t0
    assert ctx.decode is not None
    result["decoded"] = ctx.decode.records_decoded
    result["decode_errors"] = ctx.decode.decode_errors
    result["stage_decode_s"] = ctx.stage_seconds["decode"]

    # The first 1% run is the one the target counts. Later ones show how much of it is the JVM still
    # compiling code the full run did not use (its JIT work falls from run to run) and how much is the
    # fixed cost of a run.
    increment = max(1, records // 100)
    increments: list[float] = []
    for _ in range(incremental_runs):
        write_fleet(tables, spec, increment, append=True)
        t0 = time.monotonic()
        ctx = run_nightly(spark, config, stages=stages)
        increments.append(time.monotonic() - t0)
        assert ctx.decode is not None
        result["incremental_decoded"] = ctx.decode.records_decoded
    result["incremental_s"] = increments[0]
    result["incremental_runs_s"] = increments  # type: ignore[assignment]

    stop.set()
    sampler.join()
    result["peak_jvm_heap_mb"] = peak_heap[0] / 2**20
    result["peak_python_driver_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result["records_per_s"] = records / result["full_s"]
    result["full_over_floor"] = result["full_s"] / result["floor_s"]
    result["incremental_over_full"] = result["incremental_s"] / result["full_s"]
    spark.stop()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000000,10000000", help="comma-separated record counts")
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--workdir", default=None, help="where the tables go (default: a temp dir, removed)")
    parser.add_argument("--incremental-runs", type=int, default=3,
                        help="1%% runs one after another (the first is the one compared with the full run)")
    parser.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.one is not None:  # child process: one size, JSON on the last line of stdout
        result = _one_size(args.one, Path(args.workdir), args.driver_memory, max(1, args.incremental_runs))
        print(json.dumps(result))
        return 0

    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        workdir = Path(args.workdir or tempfile.mkdtemp(prefix="nightly_bench_")) / f"n{size}"
        if workdir.exists():
            shutil.rmtree(workdir)
        workdir.mkdir(parents=True)
        print(f"[bench] {size:,} records in {workdir} ...", file=sys.stderr, flush=True)
        out = subprocess.run(
            [sys.executable, __file__, "--one", str(size), "--workdir", str(workdir),
             "--driver-memory", args.driver_memory, "--incremental-runs", str(args.incremental_runs)],
            check=True, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
        ).stdout.strip().splitlines()[-1]
        results.append(json.loads(out))
        if args.workdir is None:
            shutil.rmtree(workdir.parent, ignore_errors=True)
        r = results[-1]
        print(
            f"[bench] {size:>11,} records: generate {r['generate_s']:.1f}s | floor copy {r['floor_s']:.1f}s | "
            f"nightly {r['full_s']:.1f}s ({r['records_per_s']:,.0f} records/s, {r['full_over_floor']:.2f}x floor) | "
            f"incremental 1% {r['incremental_s']:.1f}s ({100 * r['incremental_over_full']:.1f}% of full"
            + "".join(f", then {t:.1f}s" for t in r["incremental_runs_s"][1:]) + ") | "
            f"peak JVM heap {r['peak_jvm_heap_mb']:.0f} MiB, "
            f"Python driver RSS {r['peak_python_driver_rss_mb']:.0f} MiB",
            flush=True,
        )
    if len(results) >= 2:
        a, b = results[0], results[-1]
        print(f"[bench] t({b['records']:,}) / t({a['records']:,}) = {b['full_s'] / a['full_s']:.2f} "
              f"(input ratio {b['records'] / a['records']:.0f})")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
