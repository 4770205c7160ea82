"""What one more record costs each nightly stage and history step, beside the I/O floor (issue 30).

    .venv/bin/python -m benchmarks.marginal_bench                          # 1M and 3M records, 2,000 groups
    .venv/bin/python -m benchmarks.marginal_bench --sizes 20000,60000      # a quick look

For each size, in a fresh process and a fresh warehouse (local[2], in-memory catalog):
  1. the synthetic fleet generator writes N records into raw_offsets (not timed as part of anything);
  2. the nightly job's stages (no log sources: the logs stage has nothing to read), each timed by the run
     itself, and inside the history stage its steps: generations, replay, what-if, offset events;
  3. floor: a plain Spark copy of that raw_offsets table into a new Delta table, in the same process, after
     the run (as the process's first write it would be mostly warm-up, the same at any size).
Printed per stage and step: seconds at each size, the marginal rate ((N2 - N1) / (T2 - T1): what a record
costs once the fixed cost of a run is out) and its cost as a multiple of the floor's marginal cost; then
the memory the night took at each size (`Memory`: the driver JVM's peak RSS and its heap after each garbage
collection, the Python driver's and the Python workers' peak RSS); last, the 1-minute load average (a
figure means little without it) and one JSON line with everything.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import print_closing  # noqa: E402 - after the path

#: The history stage's steps, as (module, function) that the stage calls by name.
HISTORY_STEPS = (("generations", "jobs.stages", "run_generations"), ("replay", "jobs.whatif", "_replay"),
                 ("what-if", "jobs.whatif", "_whatif"), ("offset events", "jobs.stages", "run_offset_events"))


def _timed(seconds: dict[str, float], name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = time.monotonic()
        try:
            return function(*args, **kwargs)
        finally:
            seconds[name] = seconds.get(name, 0.0) + time.monotonic() - t0

    return timed


#: The child's driver JVM logs every garbage collection here (in its workdir): heap used before and after.
GC_LOG = "gc.log"
#: A unified-logging GC line as `-Xlog:gc` writes it: "[<uptime>s]...Pause ... <before>M-><after>M(<committed>M)".
_GC_LINE = re.compile(r"^\[([0-9.]+)s\].*Pause .*? (\d+)M->(\d+)M\((\d+)M\)", re.MULTILINE)


def _rss_kib(pid: int, field: str = "VmRSS") -> int:
    """A process's resident set (or its peak, `VmHWM`) in KiB, 0 when it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _descendants(pid: int) -> list[int]:
    out = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            for child in Path(f"/proc/{pid}/task/{task}/children").read_text().split():
                out += [int(child), *_descendants(int(child))]
    except OSError:
        pass
    return out


class Memory:
    """What a night holds in memory, sampled every `every` seconds while it runs (with /proc, no Spark call):
    the driver JVM's RSS (its kernel-kept peak, VmHWM, at the end), the Python worker processes under it
    (their RSS summed at each sample), and this driver's own peak RSS. The JVM's heap comes from its GC log
    (`GC_LOG`): the largest heap after a collection is what the night kept alive (an upper bound: a young
    collection's figure includes old garbage not yet collected), the largest committed heap what it took.
    Flat from one size to the next is issue 30's aim; RSS also grows with what the heap was let grow to."""

    def __init__(self, jvm_pid: int, jvm_uptime_s: float, every: float = 0.2) -> None:
        self.jvm_pid, self.every = jvm_pid, every
        #: the JVM's uptime when the night started: earlier collections (the generator's) are not the night's
        self.since_s = jvm_uptime_s
        self.workers_peak_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(self.every):
            workers = [p for p in _descendants(self.jvm_pid) if _comm(p).startswith("python")]
            self.workers_peak_kib = max(self.workers_peak_kib, sum(_rss_kib(p) for p in workers))

    def __enter__(self) -> Memory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def figures(self, gc_log: Path) -> dict[str, float]:
        import resource

        after, committed = [0], [0]
        if gc_log.is_file():
            for m in _GC_LINE.finditer(gc_log.read_text()):
                if float(m.group(1)) >= self.since_s:
                    after.append(int(m.group(3)))
                    committed.append(int(m.group(4)))
        return {"jvm_peak_rss_mib": _rss_kib(self.jvm_pid, "VmHWM") / 1024,
                "jvm_heap_after_gc_peak_mib": float(max(after)),
                "jvm_heap_committed_peak_mib": float(max(committed)),
                "python_workers_peak_rss_mib": self.workers_peak_kib / 1024,
                "python_driver_peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _one_size(records: int, groups: int, workdir: Path, driver_memory: str,
              settings: dict[str, str] | None = None) -> dict[str, Any]:
    import importlib

    from jobs.common.config import Config, ReportConfig, SourcesConfig, SparkConfig, TablesConfig
    from jobs.common.delta_io import Tables
    from jobs.common.session import build_session, plan_for_input
    from jobs.nightly import run_nightly
    from jobs.synthetic_fleet import FleetSpec, write_fleet
    from schemas import RAW_OFFSETS

    config = Config(
        sources=SourcesConfig(mode="none"),
        tables=TablesConfig(database="marginal_bench", location=str(workdir / "tables")),
        report=ReportConfig(path=str(workdir / "report.html")),
        spark=SparkConfig(
            master="local[2]", catalog="in-memory", warehouse_dir=str(workdir / "spark-warehouse"),
            metastore_dir="", shuffle_partitions=8, show_progress=False,
            extra={"spark.ui.enabled": "false", "spark.driver.memory": driver_memory,
                   "spark.databricks.delta.snapshotPartitions": "8", **(settings or {})},
        ),
    )
    spark = build_session(config)
    tables = Tables(spark, config.tables.database, config.tables.location)
    result: dict[str, Any] = {"records": records, "groups": groups}
    t0 = time.monotonic()
    write_fleet(tables, FleetSpec(groups=groups), records, append=False)
    result["generate_s"] = time.monotonic() - t0

    steps: dict[str, float] = {}
    for name, module_name, function_name in HISTORY_STEPS:
        module = importlib.import_module(module_name)
        setattr(module, function_name, _timed(steps, name, getattr(module, function_name)))
    t0 = time.monotonic()
    jvm = spark.sparkContext._jvm
    with Memory(int(jvm.ProcessHandle.current().pid()),
                jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getUptime() / 1000) as memory:
        ctx = run_nightly(spark, config)
    result["run_s"] = time.monotonic() - t0
    result["memory"] = memory.figures(workdir / GC_LOG)
    result["stages_s"] = dict(ctx.stage_seconds)
    result["history_steps_s"] = steps
    # The floor after the run, with the JVM as warm as the stages had it (a copy as the process's first
    # Delta write costs about the same at any size: JIT and first-use costs, not I/O).
    # With the configured (compiled, adaptive) settings: the run may have left a small night's interpreted
    # ones, under which the copy took ~6x as long per record.
    plan_for_input(spark, config.spark, None)
    t0 = time.monotonic()
    tables.read(RAW_OFFSETS).write.format("delta").save(str(workdir / "plain_copy"))
    result["floor_s"] = time.monotonic() - t0
    spark.stop()
    return result


#: The memory figures printed, in order (keys of `Memory.figures`).
MEMORY_ROWS = (("jvm_heap_after_gc_peak_mib", "driver JVM heap after GC, peak"),
               ("jvm_heap_committed_peak_mib", "driver JVM heap committed, peak"),
               ("jvm_peak_rss_mib", "driver JVM RSS, peak"),
               ("python_workers_peak_rss_mib", "Python workers' RSS (sum), peak"),
               ("python_driver_peak_rss_mib", "Python driver RSS, peak"))


def _rows(results: list[dict[str, Any]]) -> list[tuple[str, list[float]]]:
    """(what, seconds per size) in the order printed."""
    rows = [("plain Delta copy (the I/O floor)", [r["floor_s"] for r in results])]
    for stage in results[0]["stages_s"]:
        rows.append((f"stage {stage}", [r["stages_s"].get(stage, 0.0) for r in results]))
        if stage == "history":
            rows += [(f"  history: {name}", [r["history_steps_s"].get(name, 0.0) for r in results])
                     for name, _, _ in HISTORY_STEPS]
    rows.append(("whole run", [r["run_s"] for r in results]))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000000,3000000", help="two comma-separated record counts")
    parser.add_argument("--groups", type=int, default=2000)
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--workdir", default=None, help="where the tables go (default: a temp dir, removed)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting for both sizes' sessions (repeatable); a planning setting named here "
                             "is kept over the one the run chooses by its input's size (plan_for_input)")
    parser.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    settings = dict(item.split("=", 1) for item in args.set)

    if args.one is not None:  # child process: one size, JSON on the last line of stdout
        print(json.dumps(_one_size(args.one, args.groups, Path(args.workdir), args.driver_memory, settings)))
        return 0

    sizes = [int(s) for s in args.sizes.split(",")]
    if len(sizes) != 2 or sizes[0] >= sizes[1]:
        parser.error("--sizes takes two record counts, the smaller first")
    results = []
    for size in sizes:
        workdir = Path(args.workdir or tempfile.mkdtemp(prefix="marginal_bench_")) / f"n{size}"
        shutil.rmtree(workdir, ignore_errors=True)
        workdir.mkdir(parents=True)
        print(f"[bench] {size:,} records, {args.groups:,} groups, in {workdir} ...", file=sys.stderr, flush=True)
        # The child's driver JVM logs its collections (JAVA_TOOL_OPTIONS: the session's own Java options stay).
        env = {**os.environ, "JAVA_TOOL_OPTIONS": f"{os.environ.get('JAVA_TOOL_OPTIONS', '')} "
                                                  f"-Xlog:gc:file={workdir / GC_LOG}".strip()}
        out = subprocess.run(
            [sys.executable, "-m", "benchmarks.marginal_bench", "--one", str(size), "--groups", str(args.groups),
             "--workdir", str(workdir), "--driver-memory", args.driver_memory,
             *[f"--set={item}" for item in args.set]],
            check=True, cwd=ROOT, stdout=subprocess.PIPE, text=True, env=env,
        ).stdout.strip().splitlines()[-1]
        results.append(json.loads(out))
        if args.workdir is None:
            shutil.rmtree(workdir.parent, ignore_errors=True)

    rows = _rows(results)
    added = sizes[1] - sizes[0]
    floor = rows[0][1][1] - rows[0][1][0]
    print(f"\n{'step':<36} {sizes[0]:>11,} {sizes[1]:>11,}   marginal rate   x floor's marginal cost")
    for what, (small, large) in rows:
        grown = large - small
        rate = f"{added / grown:>12,.0f}/s" if grown > 0.05 else "        flat"
        times = f"{grown / floor:>8.1f}x" if grown > 0.05 and floor > 0.05 else "        -"
        print(f"{what:<36} {small:>10.1f}s {large:>10.1f}s {rate}   {times}")
    print(f"\n{'memory during the night (MiB)':<36} {sizes[0]:>11,} {sizes[1]:>11,}   growth")
    for key, what in MEMORY_ROWS:
        small, large = (r["memory"][key] for r in results)
        growth = f"{large / small:>8.2f}x" if small > 0 else "        -"
        print(f"{what:<36} {small:>11,.0f} {large:>11,.0f}   {growth}")
    print_closing({"results": results})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
