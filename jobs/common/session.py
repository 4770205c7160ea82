"""The one place a SparkSession is built: Delta configured, local jars, catalog and warehouse.

`spark_conf(config)` is the single source of the settings; `build_session` applies them and
`scripts/spark-sql` passes the very same ones to the `spark-sql` shell (`python -m jobs.common.session
--spark-sql-args`), so the shell sees the tables the jobs wrote.

Under `spark-submit` the JVM is already running: the master comes from `--master` and the jars from
`--jars`/`--packages`, so those two are only set here when the job was started with `python -m`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from jobs.common import class_archive
from jobs.common.config import Config, SparkConfig, load_job_config
from jobs.common.kept import KEPT_STORAGE

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"


def local_jars(jars_dir: str) -> list[str]:
    """The jars scripts/bootstrap copied from Maven Central (Delta, Spark's Kafka source)."""
    if not jars_dir:
        return []
    directory = Path(jars_dir)
    jars = sorted(str(p) for p in directory.glob("*.jar"))
    if not jars:
        raise FileNotFoundError(
            f"no jars in {directory}: run scripts/bootstrap (it resolves jvm/spark/pom.xml from Maven Central)"
        )
    return jars


#: The garbage collector of a local-mode JVM, which is driver and executors at once. A nightly run is a
#: batch job, so throughput beats pause times; G1 (the JVM's default) spent ~2 CPU-s of a 1% run on its
#: concurrent marking and refinement threads. On the 10M benchmark (local[2], each collector in its own JVM): full
#: decode 45.2/33.4 s against 50.6/38.4 s with G1, warm 1% runs 5.1-6.9 s against 5.7-8.3 s. On a cluster,
#: executors' JVM options are the cluster's (`spark.executor.extraJavaOptions`, see conf/cluster.example.toml).
LOCAL_GC_OPTION = "-XX:+UseParallelGC"

#: The JIT compiler of a local-mode JVM: C2 (the optimising tier) compiles a method after 10x the default
#: invocations and loop iterations. A nightly run plans and runs a few hundred small queries: Catalyst,
#: Delta and the scheduler run thousands of methods just often enough to reach C2's default thresholds, so C2
#: spent more CPU compiling than the driver spent planning (threads' CPU on the samples, one 2-core machine:
#: a first run 53 of its 117 CPU-s in the compiler threads, each later run of the same JVM 11-20 s of
#: 47-58). The methods a large night spends its time in (per-row reading, writing, shuffling) pass the raised
#: thresholds within its first seconds and are compiled as before. Figures in issue 29's closing notes;
#: C1 alone (TieredStopAtLevel=1) was slower from the second run on, 30x thresholds slower in wall time.
LOCAL_JIT_OPTIONS = ("-XX:Tier4InvocationThreshold=50000", "-XX:Tier4MinInvocationThreshold=6000",
                     "-XX:Tier4CompileThreshold=150000", "-XX:Tier4BackEdgeThreshold=400000")

#: The jobs' log4j2 settings (Spark's WARN lines that mean nothing to an operator silenced, each with its
#: reason). Given to the driver JVM of local runs; under spark-submit with --driver-java-options (README).
LOG4J2_PROPERTIES = Path(__file__).resolve().parents[2] / "conf" / "log4j2.properties"


def log4j2_option() -> list[str]:
    """The driver JVM option naming conf/log4j2.properties, when the project's conf/ is there (an installed
    wheel has none: then Spark's defaults apply and `_quiet_expected_warnings` still lowers two loggers)."""
    return [f"-Dlog4j2.configurationFile=file:{LOG4J2_PROPERTIES}"] if LOG4J2_PROPERTIES.is_file() else []


def launched_by_spark_submit() -> bool:
    """True when the Python driver was started by spark-submit (the JVM gateway already exists)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


#: PySpark's worker daemon without its per-task re-read of every zip on the worker's path (see the module).
PYTHON_DAEMON_MODULE = "jobs.common.python_daemon"


def local_workers_run_this_interpreter(spark: SparkConfig) -> bool:
    """True when Python workers are local processes of the driver's own interpreter (`build_session` points
    PYSPARK_PYTHON at it), so they import the project the way the driver did, before any task runs.
    Executors elsewhere, or another interpreter, may only get the project through `--py-files`, which a
    worker sees after it has started: those keep PySpark's own daemon."""
    return (
        spark.master.startswith("local")
        and not launched_by_spark_submit()
        and os.environ.get("PYSPARK_PYTHON", sys.executable) == sys.executable
    )


def spark_conf(spark: SparkConfig, *, for_shell: bool = False) -> dict[str, str]:
    """Every Spark setting the jobs rely on, as plain key/value pairs."""
    conf: dict[str, str] = {
        "spark.sql.extensions": DELTA_EXTENSION,
        "spark.sql.catalog.spark_catalog": DELTA_CATALOG,
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": str(spark.shuffle_partitions),
        "spark.sql.warehouse.dir": spark.warehouse_dir,
        "spark.sql.catalogImplementation": spark.catalog,
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.ui.showConsoleProgress": "true" if spark.show_progress else "false",
        # Delta: no surprise schema changes.
        "spark.databricks.delta.schema.autoMerge.enabled": "false",
        # Delta 4.0 also lists a small table's files in each commit's checksum (.crc) file, and when the
        # previous checksum lacks them (a table's creation, its first write) lists the previous snapshot's
        # files with a Spark job to do so. Nothing in Delta 4.0 reads that list back (only its verification
        # modes do), so each such commit paid a state reconstruction for nothing: 6.7 % of the driver JVM's
        # CPU in a sample night into a new warehouse (benchmarks/driver_profile.py's recording).
        "spark.databricks.delta.allFilesInCrc.enabled": "false",
        # Spark's runtime bloom filters: where one side of a join is a filtered table scan, Spark may first
        # aggregate that side's join keys into a bloom filter and filter the other side with it. Without a
        # row count from the scan (Delta gives none) the filter is sized for a million keys: a 1 MB bit
        # array built by a job of its own, carried as a literal in the plan and so serialized into every
        # task and read back for every row tested. Our joins pair a table with a night's few touched groups
        # (broadcast where we know it is small), where it prunes nothing worth that: with it, a warm
        # night continuing one group spent 8.0 s in the cost stage's MERGE into rebalance_cost (bit arrays
        # built, serialized and read in executor tasks: 14 % of the driver JVM's samples) against 2.7 s
        # without, the whole night 23.0 -> 16.3 s, its driver JVM's CPU 24.5 -> 16.6 s (issue 29's notes).
        "spark.sql.optimizer.runtime.bloomFilter.enabled": "false",
        # Spark's Kafka source lists partitions with the AdminClient by default, which leaves internal
        # topics out, so `__consumer_offsets` would have no partitions; the consumer-based offset reader
        # assigns them as asked.
        "spark.sql.streaming.kafka.useDeprecatedOffsetFetching": "true",
        # Compiled query code is cached by its source; the default 100 entries are fewer than the distinct
        # classes one nightly run generates (its own queries plus Delta's: state reconstruction, data
        # skipping, MERGE), so every run compiled ~320 classes again. With room for them, a warm run of
        # the 10M benchmark's 1% increment compiles ~25 (~4 CPU-s less on local[2]).
        "spark.sql.codegen.cache.maxEntries": "2000",
        # Every table is partitioned by cluster. Without concurrent writers Spark sorts each write task's
        # rows by the partition column first, holding them all in the sorter's memory; with them a task
        # keeps one open file per cluster (and sorts only past this many clusters). On the 10M benchmark's
        # full run: ~3 CPU-s less, and the offset commits no longer sit in memory before they are written.
        "spark.sql.maxConcurrentOutputFileWriters": "4",
        # The driver keeps a record of every finished query, job and stage for the UI and the history
        # server (with the UI off too), the query's plan text included: ~0.4 MB for a gold-stage query.
        # One nightly run issues a few hundred; a driver that runs many nights (the tests run ~30 runs in
        # one session) filled a 1 GiB heap with the default 1000 of each and died of GC overhead.
        "spark.sql.ui.retainedExecutions": "100",
        "spark.ui.retainedJobs": "200",
        "spark.ui.retainedStages": "200",
    }
    jars = local_jars(spark.jars_dir) if for_shell or not launched_by_spark_submit() else []
    driver_java_options = []
    if spark.master.startswith("local") and (for_shell or not launched_by_spark_submit()):
        driver_java_options += [LOCAL_GC_OPTION, *LOCAL_JIT_OPTIONS]
        # The local JVM is driver and executors at once: Delta's and Kafka's jars on its class path are
        # loaded by the application class loader, whose classes the class archive can hold (see the module).
        if jars:
            conf["spark.driver.extraClassPath"] = os.pathsep.join(jars)
        driver_java_options += class_archive.java_options(jars)
    if for_shell or not launched_by_spark_submit():
        driver_java_options += log4j2_option()
    if spark.catalog == "hive" and spark.metastore_dir and "://" not in spark.metastore_dir:
        # Embedded Derby metastore at a fixed place, so every process (job, spark-sql) shares one catalog.
        conf["spark.hadoop.javax.jdo.option.ConnectionURL"] = (
            f"jdbc:derby:;databaseName={spark.metastore_dir};create=true"
        )
        driver_java_options.append(f"-Dderby.system.home={Path(spark.metastore_dir).parent}")
    if driver_java_options:
        conf["spark.driver.extraJavaOptions"] = " ".join(driver_java_options)
    if not for_shell and local_workers_run_this_interpreter(spark):
        conf["spark.python.daemon.module"] = PYTHON_DAEMON_MODULE
    if jars:
        conf["spark.jars"] = ",".join(jars)
    conf.update(spark.extra)
    return conf


def build_session(config: Config) -> SparkSession:
    """Build (or return) the SparkSession for a job. Jobs call this once and pass the session on."""
    builder = SparkSession.builder.appName(config.spark.app_name)
    if not launched_by_spark_submit():
        # Python workers run the driver's interpreter (the project's venv), which has pyarrow and
        # coordinator_core; the system python on PATH may have neither.
        # (PySpark reads PYSPARK_PYTHON when the context starts; an explicit setting is kept.)
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = builder.master(config.spark.master)
    for key, value in spark_conf(config.spark).items():
        builder = builder.config(key, value)
    if config.spark.catalog == "hive":
        builder = builder.enableHiveSupport()
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    _quiet_expected_warnings(spark)
    return spark


#: Loggers whose WARN lines come in every run and tell an operator nothing: the jobs let go of their locally
#: checkpointed intermediates on purpose ("lineage truncated, cannot be recomputed after unpersisting"), and
#: Delta hands the change data feed options over twice ("Converting duplicated key ...").
_EXPECTED_WARNINGS = ("org.apache.spark.rdd.MapPartitionsRDD", "org.apache.spark.sql.util.CaseInsensitiveStringMap")


def driver_jvm(spark: SparkSession) -> Any:
    """The py4j view of the driver's JVM, for the Hadoop FileSystem and log4j calls Python has no API for.
    pyspark types it Optional (it is None on executors and after the context stopped); py4j views are untyped."""
    jvm = spark.sparkContext._jvm
    if jvm is None:
        raise RuntimeError("the SparkContext has no JVM gateway (stopped, or this is not the driver)")
    return jvm


def _quiet_expected_warnings(spark: SparkSession) -> None:
    jvm = driver_jvm(spark)
    for name in _EXPECTED_WARNINGS:
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(name, jvm.org.apache.logging.log4j.Level.ERROR)


#: A run whose new input is smaller than this (bytes of the segment files or archived rows it reads) plans its
#: queries statically: no adaptive execution, and no more shuffle partitions than the cores. On such input
#: every Spark job costs its scheduling, not its data, and adaptive execution runs each shuffle of a query
#: as a job of its own and plans again after it: a first nightly run on the samples made 588 Spark jobs with
#: it and 320 without (benchmarks/run_overhead.py). No broadcast joins either: a static plan broadcasts the
#: small side of a join with a job of its own (and the night's tables are all small), where a sort-merge
#: join is a stage of the same job: 318 -> 274 jobs, a warm first run 82-89 s -> 77 s. And no generated
#: code: the driver spent a quarter of a warm sample night generating and compiling Java for queries that
#: then ran over a few thousand rows (JFR: 24 % of its samples under codegen, 11 % in one regex of Spark's
#: CodeFormatter alone); interpreted operators and expressions (whole-stage codegen off, Spark's
#: `factoryMode` NO_CODEGEN, the path its own tests check results against) took a first run in a process
#: 152 -> 111 s and a warm one 68-72 -> 57-63 s, measured side by side. Larger nights keep the configured
#: settings, where coalescing, skew handling, broadcasting and compiled code pay.
SMALL_INPUT_BYTES = 32 << 20
#: ... and, where the rows are counted (the archived records not decoded yet: the stages after the ingest
#: read those), fewer than this many. Archived rows compress well (the synthetic fleet's to ~14 bytes a
#: record), so 32 MiB of them held 2.3M records, and nights far past the point where compiled code pays ran
#: interpreted: on the 2-core machine (benchmarks/marginal_bench.py, 2,000 groups, compiled = the configured
#: settings given with --set) a whole night took 50 s interpreted / 60 s compiled at 100k records and 59 /
#: 63-66 s at 300k, each further record costing 45 us interpreted and 14-32 us compiled (offset events: 16
#: against 3-7 us): about even at 500k, and compiled code ahead beyond.
SMALL_INPUT_RECORDS = 500_000
ADAPTIVE = "spark.sql.adaptive.enabled"
SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
BROADCAST_THRESHOLD = "spark.sql.autoBroadcastJoinThreshold"
WHOLE_STAGE_CODEGEN = "spark.sql.codegen.wholeStage"
CODEGEN_FACTORY = "spark.sql.codegen.factoryMode"


def plan_for_input(spark: SparkSession, config: SparkConfig, new_bytes: int | None,
                   new_records: int | None = None) -> str:
    """Choose the session's query planning settings for input of `new_bytes` (None: unknown, e.g. a live
    read: the configured settings) and, when known, `new_records`, and say which, in a few words. A setting
    named in `[spark.extra]` is the operator's and is never changed."""
    small = (new_bytes is not None and new_bytes < SMALL_INPUT_BYTES
             and (new_records is None or new_records < SMALL_INPUT_RECORDS))
    # as `spark_conf` sets them (None: Spark's default)
    wanted: dict[str, str | None] = {ADAPTIVE: "true", SHUFFLE_PARTITIONS: str(config.shuffle_partitions),
                                     BROADCAST_THRESHOLD: None, WHOLE_STAGE_CODEGEN: None, CODEGEN_FACTORY: None,
                                     KEPT_STORAGE: "disk"}
    if small:
        cores = max(1, spark.sparkContext.defaultParallelism)
        wanted = {ADAPTIVE: "false", SHUFFLE_PARTITIONS: str(min(config.shuffle_partitions, cores)),
                  BROADCAST_THRESHOLD: "-1", WHOLE_STAGE_CODEGEN: "false", CODEGEN_FACTORY: "NO_CODEGEN",
                  KEPT_STORAGE: "memory"}
    for key, value in wanted.items():
        if key in config.extra:
            continue
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)
    size = "unknown" if new_bytes is None else f"{new_bytes / (1 << 20):.1f} MiB"
    if new_records is not None:
        size += f", {new_records:,} records"
    return (f"new input {size}: " + ("small, queries planned statically and interpreted" if small
                                     else "adaptive query execution")
            + f" ({ADAPTIVE}={spark.conf.get(ADAPTIVE)}, {SHUFFLE_PARTITIONS}={spark.conf.get(SHUFFLE_PARTITIONS)})")


@contextmanager
def session_setting(spark: SparkSession, key: str, value: str) -> Iterator[None]:
    """A runtime SQL setting for the duration of a block (the stages run one after another), then the
    session's own value again."""
    before = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


def spark_sql_args(config: Config) -> list[str]:
    """Arguments for the `spark-sql` shell equivalent to `build_session`."""
    args = ["--master", "local[*]" if config.spark.master.startswith("local") else config.spark.master]
    for key, value in spark_conf(config.spark, for_shell=True).items():
        if key == "spark.ui.showConsoleProgress":
            continue
        args += ["--conf", f"{key}={value}"]
    args += ["--database", config.tables.database]
    return args


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conf", default=None, help="TOML configuration (default conf/local.toml)")
    parser.add_argument("--spark-sql-args", action="store_true", help="print spark-sql arguments, NUL-separated")
    parser.add_argument("--debug", action="store_true", help="on a configuration error, print the traceback too")
    args = parser.parse_args(argv)
    # The query shell reads the tables, not the inputs: a log glob matching nothing today is no reason to
    # refuse it (the values are still checked).
    config = load_job_config(args.conf, debug=args.debug, check_paths=False)
    if args.spark_sql_args:
        sys.stdout.write("\0".join(spark_sql_args(config)))
        return 0
    parser.print_help()
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
