"""What one nightly run costs beyond its data: Spark jobs, SQL executions, Delta commits (by operation),
and the driver's actions (`count`, `collect`, ... with the line that asked) per stage, on the samples.

    .venv/bin/python -m benchmarks.run_overhead                   # conf/local.toml into a fresh warehouse
    .venv/bin/python -m benchmarks.run_overhead --conf conf/x.toml --again 2
    .venv/bin/python -m benchmarks.run_overhead --fresh 2 --again 0    # a second first run, JVM warm
    .venv/bin/python -m benchmarks.run_overhead --fresh 2 --again 0 --touch 1   # ... then a night with one line

The nightly job runs in this process (`jobs.nightly.run_nightly`, the very stages of `python -m
jobs.nightly`) on the configuration's inputs, with its tables, Spark warehouse, metastore and report moved
to a fresh temporary directory. Then `--again` runs follow with nothing new (the fixed cost of a quiet night),
and `--touch` runs that each find one more line in a client log (`--touch-log`; the inputs' log files are then
read from copies in the work directory): a log file's last line waits for the next one, so the first such run
reads it, and on the samples its group's history, storms and cost are continued, as most real nights continue
a few groups.
Printed: the session's start, then per run and stage the seconds (the run's own timers), the Spark jobs and
SQL executions it started, the Delta commits it made per operation (read from the tables' commit files) and
the driver-side actions and writes (MERGEs, saves) with their call sites in jobs/ and the seconds the driver
waited in each (a stage's slowest sites first); last, the 1-minute load average (a figure means
little without it) and one JSON line with everything, so the next change can be compared.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: The samples' client log that `--touch` runs grow: it ends with a consumer's "Request joining group" line.
TOUCHED_LOG = "java-static-members-a.log"

#: DataFrame methods that run a Spark job and bring its answer to the driver.
ACTIONS = ("count", "collect", "first", "take", "head", "isEmpty", "toPandas", "toArrow", "toLocalIterator")


class Counters:
    """Driver-side actions per stage, by call site (see `record`)."""

    def __init__(self) -> None:
        self.stage = "setup"
        self.actions: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        #: seconds the driver waited in each action, by stage and call site (as `actions`)
        self.seconds: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)

    def record(self, method: str) -> str:
        """Count an action at its call site: the innermost frame in jobs/ or coordinator_core/ outside the
        shared helpers of jobs/common/ (a MERGE is then the stage's line that asked for it, not Tables'),
        else the innermost in jobs/common/."""
        site = "?"
        for frame in reversed(traceback.extract_stack()[:-2]):
            rel = os.path.relpath(frame.filename, ROOT)
            if rel.startswith(("jobs/", "coordinator_core/")):
                if site == "?":
                    site = f"{rel}:{frame.lineno}"
                if not rel.startswith("jobs/common/"):
                    site = f"{rel}:{frame.lineno}"
                    break
        key = f"{method} @ {site}"
        self.actions[self.stage][key] += 1
        return key


@contextmanager
def counting_actions(counters: Counters) -> Iterator[None]:
    # Spark 4's DataFrame is pyspark.sql.classic.dataframe.DataFrame (the Spark Connect one aside), which
    # overrides the base class's methods: patched there.
    # Writes count too: a Delta MERGE (`DeltaMergeBuilder.execute`) and a DataFrame write (`save`).
    from delta.tables import DeltaMergeBuilder
    from pyspark import SparkContext
    from pyspark.sql.classic.dataframe import DataFrame
    from pyspark.sql.readwriter import DataFrameWriter

    patched = [(DataFrame, name, DataFrame.__dict__[name]) for name in ACTIONS if name in DataFrame.__dict__]
    patched += [(DeltaMergeBuilder, "execute", DeltaMergeBuilder.execute),
                (DataFrameWriter, "save", DataFrameWriter.save)]
    busy = [False]

    def wrap(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
            if busy[0]:  # an action implemented by another (first -> head -> take) counts once
                return fn(self, *args, **kwargs)
            key, stage, t0 = counters.record(name), counters.stage, time.monotonic()
            busy[0] = True
            # The jobs the action starts are described by the stage's line that asked (--jobs groups them
            # so); Delta's own jobs inside it keep their descriptions.
            context = SparkContext._active_spark_context
            if context is not None:
                context.setJobDescription(key)
            try:
                return fn(self, *args, **kwargs)
            finally:
                busy[0] = False
                if context is not None:
                    context.setJobDescription(None)  # type: ignore[arg-type]
                counters.seconds[stage][key] += time.monotonic() - t0
        return counted

    for owner, name, fn in patched:
        setattr(owner, name, wrap("merge" if owner is DeltaMergeBuilder else name, fn))
    try:
        yield
    finally:
        for owner, name, fn in patched:
            setattr(owner, name, fn)


def _next_job_id(spark: Any) -> int:
    return int(spark.sparkContext._jsc.sc().dagScheduler().nextJobId())


def _next_execution_id(spark: Any) -> int:
    store = spark._jsparkSession.sharedState().statusStore()
    executions = store.executionsList()
    return max((executions.apply(i).executionId() for i in range(executions.size())), default=-1) + 1


def _jobs_by_kind(spark: Any, first: int, end: int) -> dict[str, list[float]]:
    """The Spark jobs first..end-1 grouped by what started them: the job's description (Delta names its own
    jobs: "Filtering files for query", "Compute snapshot for version", ...), else its call site; per kind
    [count, seconds from submission to completion]. Jobs the status store no longer keeps are left out."""
    store = spark.sparkContext._jsc.sc().statusStore()
    kinds: dict[str, list[float]] = {}
    for job_id in range(first, end):
        try:
            job = store.job(job_id)
        except Exception:  # noqa: BLE001 - dropped from the store (spark.ui.retainedJobs)
            continue
        description = job.description()
        kind = str(description.get()) if description.isDefined() else str(job.name())
        kind = " ".join(kind.split())[:90]
        seconds = 0.0
        if job.submissionTime().isDefined() and job.completionTime().isDefined():
            seconds = (job.completionTime().get().getTime() - job.submissionTime().get().getTime()) / 1000
        entry = kinds.setdefault(kind, [0, 0.0])
        entry[0] += 1
        entry[1] += seconds
    return kinds


def _commit_operations(table_dir: Path, after: int) -> collections.Counter[str]:
    """Operations of the commits after version `after`, from the table's commit files."""
    ops: collections.Counter[str] = collections.Counter()
    log = table_dir / "_delta_log"
    if not log.is_dir():
        return ops
    for commit in sorted(log.glob("*.json")):
        if not commit.stem.isdigit() or int(commit.stem) <= after:
            continue
        for line in commit.read_text().splitlines():
            if '"commitInfo"' in line:
                ops[json.loads(line)["commitInfo"].get("operation", "?")] += 1
    return ops


def _versions(tables_dir: Path) -> dict[str, int]:
    out = {}
    for table in sorted(p for p in tables_dir.iterdir() if (p / "_delta_log").is_dir()) if tables_dir.is_dir() else []:
        versions = [int(c.stem) for c in (table / "_delta_log").glob("*.json") if c.stem.isdigit()]
        out[table.name] = max(versions) if versions else -1
    return out


def _counting_history_steps(spark: Any, steps: dict[str, dict[str, float]]) -> None:
    """Wrap the history stage's steps (marginal_bench.HISTORY_STEPS) to add up their seconds, Spark jobs and SQL
    executions into `steps`, by step name."""
    import importlib

    from benchmarks.marginal_bench import HISTORY_STEPS

    def counted(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def step(*args: Any, **kwargs: Any) -> Any:
            jobs0, sql0, t0 = _next_job_id(spark), _next_execution_id(spark), time.monotonic()
            try:
                return function(*args, **kwargs)
            finally:
                figure = steps.setdefault(name, {"seconds": 0.0, "spark_jobs": 0, "sql_executions": 0})
                figure["seconds"] = round(figure["seconds"] + time.monotonic() - t0, 2)
                figure["spark_jobs"] += _next_job_id(spark) - jobs0
                figure["sql_executions"] += _next_execution_id(spark) - sql0
        return step

    for name, module_name, function_name in HISTORY_STEPS:
        module = importlib.import_module(module_name)
        setattr(module, function_name, counted(name, getattr(module, function_name)))


def _instrumented(stages: Any, spark: Any, counters: Counters, tables_dir: Path, figures: list[dict[str, Any]],
                  jobs: bool = False) -> tuple[Any, ...]:
    from jobs.stages import Stage

    def wrap(stage: Any) -> Any:
        def run(ctx: Any) -> None:
            counters.stage = stage.name
            jobs0, sql0, versions0 = _next_job_id(spark), _next_execution_id(spark), _versions(tables_dir)
            t0 = time.monotonic()
            try:
                stage.run(ctx)
            finally:
                seconds = time.monotonic() - t0
                commits: collections.Counter[str] = collections.Counter()
                for table in _versions(tables_dir):
                    for op, n in _commit_operations(tables_dir / table, versions0.get(table, -1)).items():
                        commits[f"{op} {table}"] += n
                figures.append({"stage": stage.name, "seconds": round(seconds, 2),
                                "spark_jobs": _next_job_id(spark) - jobs0,
                                "sql_executions": _next_execution_id(spark) - sql0,
                                "commits": dict(commits),
                                "actions": dict(counters.actions.pop(stage.name, {})),
                                "action_seconds": {k: round(v, 2) for k, v in
                                                   counters.seconds.pop(stage.name, {}).items()}})
                if jobs:
                    figures[-1]["jobs_by_kind"] = _jobs_by_kind(spark, jobs0, _next_job_id(spark))
                counters.stage = "commit"
        return Stage(stage.name, stage.writes, run)

    return tuple(wrap(s) for s in stages)


def _print_run(label: str, seconds: float, figures: list[dict[str, Any]], verbose: bool,
               steps: dict[str, dict[str, float]] | None = None) -> None:
    print(f"\n== {label}: {seconds:.1f} s as a whole (session excluded)")
    print(f"{'stage':<12} {'s':>6} {'jobs':>5} {'sql':>5} {'commits':>7} {'actions':>7}")
    for f in figures:
        print(f"{f['stage']:<12} {f['seconds']:>6.1f} {f['spark_jobs']:>5} {f['sql_executions']:>5} "
              f"{sum(f['commits'].values()):>7} {sum(f['actions'].values()):>7}")
    total = {k: sum(f[k] for f in figures) for k in ("seconds", "spark_jobs", "sql_executions")}
    print(f"{'stages':<12} {total['seconds']:>6.1f} {total['spark_jobs']:>5} {total['sql_executions']:>5} "
          f"{sum(sum(f['commits'].values()) for f in figures):>7} "
          f"{sum(sum(f['actions'].values()) for f in figures):>7}")
    for name, step in (steps or {}).items():
        print(f"  {name:<12} {step['seconds']:>4.1f} {step['spark_jobs']:>5} {step['sql_executions']:>5}"
              "   (history step)")
    if verbose:
        for f in figures:
            if f["commits"] or f["actions"]:
                print(f"  {f['stage']}:")
            for what, n in sorted(f["commits"].items()):
                print(f"    commit  {n:>3} x {what}")
            seconds: dict[str, float] = f.get("action_seconds", {})
            for what, n in sorted(f["actions"].items(), key=lambda kv: -seconds.get(kv[0], 0.0)):
                print(f"    action  {n:>3} x {what}  ({seconds.get(what, 0.0):.2f} s)")
            for kind, (n, job_seconds) in sorted(f.get("jobs_by_kind", {}).items(), key=lambda kv: -kv[1][1]):
                print(f"    job     {int(n):>3} x {kind}  ({job_seconds:.2f} s)")


def _logs_copied(config: Any, into: Path, touched_name: str) -> tuple[Any, Path]:
    """The configuration with each log source's files copied under `into` (one directory per source, the same
    file names) and read from there; and the copy of the client log named `touched_name` (of the first client
    source that has one), which `--touch` runs append to."""
    import glob
    import shutil

    sources = []
    touched = None
    for i, source in enumerate(config.sources.logs):
        directory = into / str(i)
        directory.mkdir(parents=True)
        for pattern in source.paths:
            for path in sorted(glob.glob(pattern)):
                shutil.copy2(path, directory / Path(path).name)
        sources.append(dataclasses.replace(source, paths=tuple(str(directory / Path(p).name) for p in source.paths)))
        if touched is None and source.broker_id == -1 and (directory / touched_name).is_file():
            touched = directory / touched_name
    if touched is None:
        raise SystemExit(f"--touch-log {touched_name}: no client log of that name in the configuration's log sources")
    return dataclasses.replace(config, sources=dataclasses.replace(config.sources, logs=tuple(sources))), touched


def _append_line(path: Path) -> None:
    """One log4j line that no coordinator logic reads, stamped now."""
    import datetime as dt

    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
    with open(path, "a") as log:
        log.write(f"[{now}] INFO a line appended by benchmarks.run_overhead (org.example.Unrelated)\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conf", default=str(ROOT / "conf" / "local.toml"))
    parser.add_argument("--again", type=int, default=1, help="runs with nothing new after the first (default 1)")
    parser.add_argument("--fresh", type=int, default=1,
                        help="first runs, each into a fresh warehouse of its own in the same session (default 1); "
                             "the second and later show the cost with the JVM warm, as a test process pays it")
    parser.add_argument("--touch", type=int, default=0,
                        help="runs after those, each with one line appended to a client log (default 0)")
    parser.add_argument("--touch-log", default=TOUCHED_LOG,
                        help=f"the client log file --touch appends to (default {TOUCHED_LOG}: its last line, a "
                             "static member's rejoin request, is then read and amends its group's generation)")
    parser.add_argument("--workdir", default=None, help="where the fresh warehouse goes (default: a temp dir)")
    parser.add_argument("--quiet", action="store_true", help="no per-site lines of commits and actions")
    parser.add_argument("--jobs", action="store_true",
                        help="per stage, its Spark jobs by description or call site, with their seconds")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting over the configuration's (repeatable), to compare settings")
    args = parser.parse_args(argv)

    from jobs.common.config import load_job_config
    from jobs.common.session import build_session
    from jobs.nightly import run_nightly
    from jobs.stages import STAGES

    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="run-overhead-"))
    config = load_job_config(args.conf)
    config = dataclasses.replace(
        config,
        tables=dataclasses.replace(config.tables, location=str(workdir / "tables")),
        spark=dataclasses.replace(config.spark, warehouse_dir=str(workdir / "spark-warehouse"),
                                  metastore_dir=str(workdir / "metastore_db") if config.spark.metastore_dir else ""),
        report=dataclasses.replace(config.report, path=str(workdir / "report" / "rebalance-audit.html")),
    )
    touched_log = None
    if args.touch:
        config, touched_log = _logs_copied(config, workdir / "logs", args.touch_log)
    overrides = dict(item.split("=", 1) for item in args.set)
    if overrides:
        config = dataclasses.replace(config, spark=dataclasses.replace(
            config.spark, extra={**config.spark.extra, **overrides}))
    t0 = time.monotonic()
    spark = build_session(config)
    session_seconds = time.monotonic() - t0
    print(f"session: {session_seconds:.1f} s (JVM start, jars, catalog {config.spark.catalog}); warehouse {workdir}")
    counters = Counters()
    steps: dict[str, dict[str, float]] = {}
    _counting_history_steps(spark, steps)
    runs = []
    def fresh(n: int) -> Any:
        """The configuration of the n-th fresh warehouse (a database and directory of its own)."""
        if n == 0:
            return config
        return dataclasses.replace(config, tables=dataclasses.replace(
            config.tables, database=f"{config.tables.database}_{n}", location=str(workdir / f"tables_{n}")))

    plan = [(fresh(n), f"fresh run {n + 1}" if args.fresh > 1 else "first run (fresh warehouse)")
            for n in range(args.fresh)]
    plan += [(plan[-1][0], f"run {n + 1} (nothing new)") for n in range(args.fresh, args.fresh + args.again)]
    plan += [(plan[-1][0], f"run {n + 1} (one more client log line)")
             for n in range(args.fresh + args.again, args.fresh + args.again + args.touch)]
    with counting_actions(counters):
        for run_config, label in plan:
            if "client log line" in label and touched_log is not None:
                _append_line(touched_log)
            figures: list[dict[str, Any]] = []
            stages = _instrumented(STAGES, spark, counters, Path(run_config.tables.location), figures,
                                   args.jobs)
            counters.stage = "setup"
            steps.clear()
            jobs0, sql0 = _next_job_id(spark), _next_execution_id(spark)
            t = time.monotonic()
            run_nightly(spark, run_config, stages=stages)
            seconds = time.monotonic() - t
            outside = {"spark_jobs": _next_job_id(spark) - jobs0 - sum(f["spark_jobs"] for f in figures),
                       "sql_executions": _next_execution_id(spark) - sql0 - sum(f["sql_executions"] for f in figures),
                       "actions": {k: dict(v) for k, v in counters.actions.items()}}
            counters.actions.clear()
            counters.seconds.clear()
            _print_run(label, seconds, figures, not args.quiet, steps)
            in_stages = sum(f["seconds"] for f in figures)
            print(f"  outside the stages (claim, recovery, ensure, commit): {seconds - in_stages:.1f} s, "
                  f"{outside['spark_jobs']} jobs, {outside['sql_executions']} sql")
            runs.append({"label": label, "seconds": round(seconds, 2), "stages": figures, "outside": outside,
                         "history_steps": {k: dict(v) for k, v in steps.items()}})
    spark.stop()
    load = os.getloadavg()[0]
    print(f"\nload average (1 min): {load:.2f}")
    print(json.dumps({"session_seconds": round(session_seconds, 2), "runs": runs, "load1": load}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
