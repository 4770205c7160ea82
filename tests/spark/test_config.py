"""Configuration is typed and strict: unknown keys and wrong types are errors that name the key."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from jobs.common import class_archive
from jobs.common.config import PROJECT_ROOT, ConfigError, KafkaSource, load_config, parse_config
from jobs.common.session import LOCAL_GC_OPTION, LOCAL_JIT_OPTIONS, PYTHON_DAEMON_MODULE, local_jars, spark_conf
from jobs.ingest.kafka_source import kafka_options


def test_local_default_loads_and_resolves_paths_against_the_project_root() -> None:
    config = load_config(PROJECT_ROOT / "conf" / "local.toml")
    assert config.sources.mode == "segments"
    assert config.sources.segments[0].path.startswith(str(PROJECT_ROOT))
    assert config.tables.location == str(PROJECT_ROOT / "warehouse" / "tables")
    assert config.spark.catalog == "hive"


def test_cluster_example_loads() -> None:
    config = load_config(PROJECT_ROOT / "conf" / "cluster.example.toml")
    assert config.sources.mode == "kafka"
    assert config.sources.kafka[0].cluster == "prod-eu-1"
    assert config.tables.location == "s3a://data-lake/consumer-group-history"  # URIs are left alone
    assert config.spark.jars_dir == ""


def test_unknown_key_is_an_error_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"unknown configuration key tables\.locaton"):
        parse_config({"sources": {"mode": "none"}, "tables": {"locaton": "x"}})


def test_unknown_nested_key_in_an_array_of_tables_is_named() -> None:
    with pytest.raises(ConfigError, match=r"sources\.segments\[0\]\.clutser"):
        parse_config({"sources": {"mode": "segments", "segments": [{"clutser": "a", "path": "p"}]}})


def test_wrong_type_is_an_error_naming_key_and_type() -> None:
    with pytest.raises(ConfigError, match=r"spark\.shuffle_partitions: expected an integer, found '8'"):
        parse_config({"sources": {"mode": "none"}, "spark": {"shuffle_partitions": "8"}})
    with pytest.raises(ConfigError, match=r"sources\.mode: expected one of"):
        parse_config({"sources": {"mode": "files"}})


def test_a_source_mode_needs_its_sources() -> None:
    with pytest.raises(ConfigError, match="needs at least one"):
        parse_config({"sources": {"mode": "kafka"}})


def test_relative_paths_resolve_against_the_given_root(tmp_path: Path) -> None:
    config = parse_config(
        {"sources": {"mode": "segments", "segments": [{"cluster": "c", "path": "in"}]}}, root=tmp_path
    )
    assert config.sources.segments[0].path == str(tmp_path / "in")
    assert config.spark.metastore_dir == str(tmp_path / "warehouse" / "metastore_db")


def test_kafka_security_options_come_from_the_environment() -> None:
    source = KafkaSource(cluster="c", bootstrap_servers="b:9093")
    options = kafka_options(
        source,
        {"CGH_KAFKA_SECURITY_PROTOCOL": "SASL_SSL", "CGH_KAFKA_SASL_MECHANISM": "PLAIN", "HOME": "/root"},
    )
    assert options == {
        "kafka.bootstrap.servers": "b:9093",
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "PLAIN",
    }


def test_a_local_jvm_collects_garbage_for_throughput_and_keeps_the_metastore_home(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)  # started with `python -m`
    local = load_config(PROJECT_ROOT / "conf" / "local.toml").spark
    options = spark_conf(local)["spark.driver.extraJavaOptions"].split()
    quiet_log4j = f"-Dlog4j2.configurationFile=file:{PROJECT_ROOT / 'conf' / 'log4j2.properties'}"
    jars = local_jars(local.jars_dir)
    assert options == [LOCAL_GC_OPTION, *LOCAL_JIT_OPTIONS, *class_archive.java_options(jars), quiet_log4j,
                       f"-Dderby.system.home={Path(local.metastore_dir).parent}"]
    assert spark_conf(local)["spark.driver.extraClassPath"].split(":") == jars

    # Under spark-submit the JVM is already running with the options the user gave it.
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "12345")
    assert LOCAL_GC_OPTION not in spark_conf(local).get("spark.driver.extraJavaOptions", "")
    # A cluster's JVMs are the cluster's to tune: a driver started here gets only the job's log settings.
    cluster = load_config(PROJECT_ROOT / "conf" / "cluster.example.toml").spark
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT")
    assert spark_conf(replace(cluster, master="yarn"))["spark.driver.extraJavaOptions"].split() == [quiet_log4j]
    assert "spark.driver.extraClassPath" not in spark_conf(replace(cluster, master="yarn"))


def test_the_session_jvm_maps_the_class_archive_bootstrap_built(spark: SparkSession) -> None:
    """scripts/bootstrap dumps Spark's, Delta's and Kafka's classes for this checkout's local JVM: the test
    session's JVM was started with that archive and maps it (the JVM drops an archive that does not match its
    class path silently, so a stale key would only show as a slower start)."""
    jvm = spark.sparkContext._jvm  # type: ignore[attr-defined]
    jars = spark.sparkContext.getConf().get("spark.driver.extraClassPath").split(":")
    archive = class_archive.archive_path(jars)
    assert archive is not None and archive.is_file(), f"no class archive {archive}: run scripts/bootstrap"
    arguments = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert f"-XX:SharedArchiveFile={archive}" in arguments
    assert "sharing" in jvm.System.getProperty("java.vm.info")
    assert jvm.System.getProperty("java.class.path").split(":")[:len(jars)] == jars
    # The check bootstrap makes before putting an archive in place refuses one for another class path.
    java = str(Path(jvm.System.getProperty("java.home")) / "bin" / "java")
    modules = [a for a in arguments if a.startswith("--add-modules")]
    class_path = jvm.System.getProperty("java.class.path")
    class_archive.verify(archive, [java, "-cp", class_path, *modules, "Main"])
    with pytest.raises(RuntimeError, match="refuses"):
        class_archive.verify(archive, [java, "-cp", class_path.split(":", 1)[1], *modules, "Main"])


def test_the_session_jvm_runs_the_parallel_collector_and_the_raised_jit_thresholds(spark: SparkSession) -> None:
    management = spark.sparkContext._jvm.java.lang.management  # type: ignore[attr-defined]
    beans = management.ManagementFactory.getGarbageCollectorMXBeans()
    assert sorted(bean.getName() for bean in beans) == ["PS MarkSweep", "PS Scavenge"]
    # The running JVM's own values (a flag it did not take would read as the default, 5000 ...).
    hotspot = management.ManagementFactory.getPlatformMXBean(
        spark.sparkContext._jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean"))  # type: ignore[attr-defined]
    given = dict(option.removeprefix("-XX:").split("=") for option in LOCAL_JIT_OPTIONS)
    assert {name: hotspot.getVMOption(name).getValue() for name in given} == given


def test_local_python_workers_skip_rereading_unchanged_zips(spark: SparkSession) -> None:
    """The test session is local, in the project's interpreter: its workers run the project's daemon."""
    assert spark.sparkContext.getConf().get("spark.python.daemon.module") == PYTHON_DAEMON_MODULE

    def invalidation_in_worker(_: object) -> list[str]:
        import sys
        import zipimport

        patched = zipimport.zipimporter.invalidate_caches
        return [f"{sys.modules[patched.__module__].__spec__.name}.{patched.__name__}"]

    assert spark.sparkContext.parallelize([0], 1).mapPartitions(invalidation_in_worker).collect() == [
        f"{PYTHON_DAEMON_MODULE}.invalidate_if_changed"
    ]
    # Executors elsewhere may only get the project through --py-files: they keep PySpark's daemon.
    cluster = load_config(PROJECT_ROOT / "conf" / "cluster.example.toml").spark
    assert "spark.python.daemon.module" not in spark_conf(replace(cluster, master="spark://h:7077"))
