"""A configuration is validated before Spark starts, and a config error is one line naming the file, the key
and the value: globs that match nothing, a segments path that is not there, a zone that is no IANA zone,
thresholds out of range, a TOML syntax error, a missing file. The entry points print that line (no
traceback unless --debug) and exit with status 2 before a JVM starts."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from jobs.common.config import PROJECT_ROOT, ConfigError, check_config_paths, load_config, parse_config

SAMPLE = PROJECT_ROOT / "samples"
BROKER_LOGS = str(SAMPLE / "kafka-4.3.1" / "broker" / "server.log*")


def write_conf(tmp_path: Path, text: str, name: str = "bad.toml") -> Path:
    """A config file in <tmp>/conf/, so relative paths in it resolve against <tmp> (the project root rule)."""
    conf = tmp_path / "conf" / name
    conf.parent.mkdir(parents=True, exist_ok=True)
    conf.write_text(text)
    return conf


def segments_conf(path: str = str(SAMPLE), cluster: str = "*") -> str:
    return f'[sources]\nmode = "segments"\n\n[[sources.segments]]\ncluster = "{cluster}"\npath = "{path}"\n\n'


def log_source(cluster: str, source: str, paths: list[str], extra: str = "") -> str:
    globs = ", ".join(f'"{p}"' for p in paths)
    return f'[[sources.logs]]\ncluster = "{cluster}"\nsource = "{source}"\npaths = [{globs}]\n{extra}\n'


# -- paths, checked when the file is loaded for a job -----------------------------------------------


def test_log_globs_matching_no_file_are_an_error_naming_file_key_source_and_value(tmp_path: Path) -> None:
    typo = str(SAMPLE / "kafka-4.3.1" / "brokr" / "server.log*")
    conf = write_conf(tmp_path, segments_conf() + log_source("kafka-4.3.1", "broker-1", [BROKER_LOGS])
                      + log_source("kafka-4.3.1", "broker-2", [typo]))
    with pytest.raises(ConfigError) as raised:
        load_config(conf, check_paths=True)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"{conf}: sources.logs[1].paths ")
    assert "kafka-4.3.1" in message and "broker-2" in message
    assert typo in message
    assert "allow_empty" in message  # says how to accept a source that comes and goes


def test_log_globs_matching_no_file_are_a_warning_with_allow_empty(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gone = str(tmp_path / "batch-client" / "*.log")
    conf = write_conf(tmp_path, segments_conf() + log_source("kafka-4.3.1", "batch-client", [gone],
                                                             "allow_empty = true"))
    config = load_config(conf, check_paths=True)
    assert config.sources.logs[0].allow_empty
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith(f"warning: {conf}: sources.logs[0].paths ")
    assert "batch-client" in err[0] and gone in err[0]
    # The same check, as data: the warnings are returned, errors raised.
    assert check_config_paths(config) == [err[0].removeprefix(f"warning: {conf}: ")]


def test_object_store_globs_are_not_checked_locally(tmp_path: Path) -> None:
    conf = write_conf(tmp_path, segments_conf() + log_source("c", "broker-1", ["s3a://bucket/logs/server.log*"]))
    assert load_config(conf, check_paths=True).sources.logs[0].paths == ("s3a://bucket/logs/server.log*",)


def test_a_missing_segments_path_is_an_error(tmp_path: Path) -> None:
    missing = str(tmp_path / "sampels")
    conf = write_conf(tmp_path, segments_conf(missing, cluster="prod-eu-1"))
    with pytest.raises(ConfigError) as raised:
        load_config(conf, check_paths=True)
    message = str(raised.value)
    assert message.startswith(f"{conf}: sources.segments[0].path ")
    assert "prod-eu-1" in message and missing in message


def test_a_segments_path_for_every_cluster_needs_a_subdirectory(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    conf = write_conf(tmp_path, segments_conf(str(tmp_path / "empty")))
    with pytest.raises(ConfigError, match=r"sources\.segments\[0\]\.path .*subdirector.*empty"):
        load_config(conf, check_paths=True)
    (tmp_path / "empty" / "kafka-1").mkdir()
    assert load_config(conf, check_paths=True).sources.segments[0].path == str(tmp_path / "empty")


def test_segments_paths_are_checked_only_when_segments_are_read(tmp_path: Path) -> None:
    conf = write_conf(tmp_path, '[sources]\nmode = "none"\n\n[[sources.segments]]\ncluster = "c"\npath = "nowhere"\n')
    assert load_config(conf, check_paths=True).sources.mode == "none"


def test_inline_configs_naming_paths_that_do_not_exist_still_parse() -> None:
    config = parse_config({"sources": {"mode": "segments", "segments": [{"cluster": "c", "path": "/nowhere"}],
                                       "logs": [{"cluster": "c", "source": "b", "paths": ["/nowhere/*.log"]}]}})
    assert config.sources.logs[0].paths == ("/nowhere/*.log",)
    with pytest.raises(ConfigError, match=r"^sources\.segments\[0\]\.path "):
        parse_config({"sources": {"mode": "segments", "segments": [{"cluster": "c", "path": "/nowhere"}]}},
                     check_paths=True)


def test_the_shipped_configs_load() -> None:
    local = load_config(PROJECT_ROOT / "conf" / "local.toml", check_paths=True)
    # one broker and one clients source per single-broker sample; three brokers and clients for the 3-broker one
    assert sorted((s.cluster, s.source) for s in local.sources.logs) == sorted(
        [(c, s) for c in ("kafka-4.3.1", "kafka-3.9.1") for s in ("broker-1", "clients")]
        + [("kafka-4.3.1-3brokers", s) for s in ("broker-1", "broker-2", "broker-3", "clients")])
    # The cluster example names paths of a real cluster: it parses, and only its paths fail here.
    example = load_config(PROJECT_ROOT / "conf" / "cluster.example.toml")
    assert example.sources.logs[0].zone == "Europe/Berlin"
    with pytest.raises(ConfigError, match=r"cluster\.example\.toml: sources\.logs\[0\]\.paths .*/mnt/kafka-logs"):
        load_config(PROJECT_ROOT / "conf" / "cluster.example.toml", check_paths=True)


# -- values, checked whenever a config is parsed ------------------------------------------------------


def with_log_source(**values: object) -> dict[str, object]:
    return {"sources": {"mode": "none", "logs": [{"cluster": "c", "source": "b", "paths": [], **values}]}}


def test_a_zone_that_is_no_iana_zone_is_an_error(tmp_path: Path) -> None:
    conf = write_conf(tmp_path, segments_conf() + log_source("kafka-4.3.1", "broker-1", [BROKER_LOGS],
                                                             'zone = "Mars/Olympus"'))
    with pytest.raises(ConfigError) as raised:
        load_config(conf)
    message = str(raised.value)
    assert message.startswith(f"{conf}: sources.logs[0].zone ")
    assert "'Mars/Olympus'" in message and "broker-1" in message and "kafka-4.3.1" in message


@pytest.mark.parametrize("zone", ["America", "", "../etc", "/etc/localtime", "Europe/Pariss"])
def test_other_names_that_are_no_zone_are_errors_too(zone: str) -> None:
    with pytest.raises(ConfigError, match=r"sources\.logs\[0\]\.zone "):
        parse_config(with_log_source(zone=zone))


@pytest.mark.parametrize("zone", ["UTC", "utc", "Z", "Europe/Berlin", "Etc/GMT+2"])
def test_zones_the_log_reader_accepts_are_accepted(zone: str) -> None:
    config = parse_config(with_log_source(zone=zone))
    assert config.sources.logs[0].zone == zone


def test_broker_id_is_minus_one_or_more() -> None:
    with pytest.raises(ConfigError, match=r"^sources\.logs\[0\]\.broker_id must be -1 \(a client log\) or more, "
                                          r"found -2 \(cluster c, source b\)$"):
        parse_config(with_log_source(broker_id=-2))
    assert parse_config(with_log_source(broker_id=-1)).sources.logs[0].broker_id == -1


def test_min_rebalances_out_of_range_is_one_line_naming_file_key_and_value(tmp_path: Path) -> None:
    conf = write_conf(tmp_path, segments_conf() + "[storms]\nmin_rebalances = -5\n")
    with pytest.raises(ConfigError) as raised:
        load_config(conf)
    assert str(raised.value) == f"{conf}: storms.min_rebalances must be 2 or more, found -5"


@pytest.mark.parametrize(("section", "key", "bad", "good", "rule"), [
    ("storms", "min_rebalances", 1, 2, "2 or more"),
    ("storms", "window_minutes", 0, 0.5, "more than 0"),
    ("storms", "quiet_minutes", 0, 0.05, "more than 0"),
    ("storms", "flapping_min_rejoins", 1, 2, "2 or more"),
    ("storms", "lockstep_seconds", 0, 1, "more than 0"),
    ("storms", "lockstep_min_groups", 1, 2, "2 or more"),
    ("report", "groups_shown", 0, 1, "1 or more"),
    ("spark", "shuffle_partitions", 0, 1, "1 or more"),
    ("decode", "arrow_batch_size", 0, 1, "1 or more"),
    ("run", "progress_seconds", 0, 0.5, "more than 0"),
])
def test_thresholds_out_of_range_are_errors_and_their_bounds_are_accepted(
        section: str, key: str, bad: float, good: float, rule: str) -> None:
    with pytest.raises(ConfigError, match=rf"^{section}\.{key} must be {rule}, found {bad}"):
        parse_config({"sources": {"mode": "none"}, section: {key: bad}})
    assert getattr(getattr(parse_config({"sources": {"mode": "none"}, section: {key: good}}), section), key) == good


@pytest.mark.parametrize("key", ["window_minutes", "quiet_minutes", "lockstep_seconds"])
def test_durations_that_are_not_a_number_are_errors(key: str) -> None:
    with pytest.raises(ConfigError, match=rf"^storms\.{key} must be"):
        parse_config({"sources": {"mode": "none"}, "storms": {key: float("nan")}})
    with pytest.raises(ConfigError, match=rf"^storms\.{key} must be"):
        parse_config({"sources": {"mode": "none"}, "storms": {key: float("inf")}})


def test_max_records_per_partition_is_zero_or_more() -> None:
    kafka = {"cluster": "prod", "bootstrap_servers": "b:9092", "max_records_per_partition": -1}
    with pytest.raises(ConfigError, match=r"^sources\.kafka\[0\]\.max_records_per_partition must be 0 "
                                          r"\(no cap\) or more, found -1"):
        parse_config({"sources": {"mode": "kafka", "kafka": [kafka]}})


# -- the file itself -------------------------------------------------------------------------------------


def test_a_toml_syntax_error_names_the_file_line_and_column(tmp_path: Path) -> None:
    conf = write_conf(tmp_path, '[sources]\nmode = "segments"\nmin_rebalances 3\n')
    with pytest.raises(ConfigError) as raised:
        load_config(conf)
    message = str(raised.value)
    assert message.startswith(f"{conf}: ")
    assert "line 3" in message and "column" in message
    assert "\n" not in message


def test_a_missing_file_is_an_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "conf" / "clustr.toml"
    with pytest.raises(ConfigError) as raised:
        load_config(missing)
    assert str(raised.value).startswith(f"{missing}: ")
    assert "no such file" in str(raised.value)


# -- the entry points ------------------------------------------------------------------------------------

SPARK_NOISE = ("Ivy", "ivy", "SparkContext", "WARN", "log4j", "Using Spark", "SparkSession")


def run_nightly(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "jobs.nightly", *args], check=False, cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=60)
    return done, time.monotonic() - t0


def test_the_nightly_job_prints_one_line_and_exits_2_before_spark_starts(tmp_path: Path) -> None:
    conf = write_conf(tmp_path, segments_conf() + "[storms]\nmin_rebalances = -5\n")
    done, seconds = run_nightly("--conf", str(conf))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"error: {conf}: storms.min_rebalances must be 2 or more, found -5"]
    assert done.stdout == ""
    assert seconds < 10, f"took {seconds:.1f}s: a JVM started?"


def test_the_nightly_job_checks_paths_before_spark_starts(tmp_path: Path) -> None:
    conf = write_conf(tmp_path, segments_conf(str(tmp_path / "sampels")))
    done, seconds = run_nightly("--conf", str(conf))
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert line.startswith(f"error: {conf}: sources.segments[0].path ")
    assert not any(noise in done.stderr + done.stdout for noise in SPARK_NOISE)
    assert seconds < 10


def test_the_nightly_job_with_debug_shows_the_traceback_too(tmp_path: Path) -> None:
    conf = write_conf(tmp_path, segments_conf() + "[storms]\nmin_rebalances = -5\n")
    done, _ = run_nightly("--conf", str(conf), "--debug")
    assert done.returncode == 2
    assert "Traceback (most recent call last)" in done.stderr
    assert "ConfigError" in done.stderr
    assert done.stderr.splitlines()[-1] == f"error: {conf}: storms.min_rebalances must be 2 or more, found -5"
    assert not any(noise in done.stderr for noise in SPARK_NOISE)


@pytest.mark.parametrize(("module", "extra"), [
    ("jobs.logs.stage", []),
    ("jobs.synthetic_fleet", ["--records", "10"]),
    ("jobs.common.session", ["--spark-sql-args"]),
])
def test_every_entry_point_that_loads_a_config_exits_2_with_one_line(
        module: str, extra: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    import jobs.common.session

    def no_spark(*_: object, **__: object) -> None:
        raise AssertionError("build_session called with an invalid config")

    monkeypatch.setattr(jobs.common.session, "build_session", no_spark)
    job = importlib.import_module(module)
    if hasattr(job, "build_session"):
        monkeypatch.setattr(job, "build_session", no_spark)
    if module == "jobs.common.session":
        # The query shell does not read the inputs: their paths are not its business, the values are.
        conf = write_conf(tmp_path, segments_conf() + log_source("c", "broker-1", [str(tmp_path / "none" / "*.log")])
                          + '[spark]\njars_dir = ""\n')
        assert job.main(["--conf", str(conf), *extra]) == 0
        capsys.readouterr()
        conf = write_conf(tmp_path, segments_conf() + "[storms]\nmin_rebalances = -5\n")
        expected = f"error: {conf}: storms.min_rebalances must be 2 or more"
    else:
        conf = write_conf(tmp_path, segments_conf() + log_source("c", "broker-1", [str(tmp_path / "none" / "*.log")]))
        expected = f"error: {conf}: sources.logs[0].paths "
    with pytest.raises(SystemExit) as exited:
        job.main(["--conf", str(conf), *extra])
    assert exited.value.code == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(expected)
