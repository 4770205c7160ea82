"""The nightly job as an operator and a scheduler see it (#19, items 4 and 5): `python -m jobs.nightly` run twice
in a subprocess on a copy of both sample clusters, with the Hive catalog (embedded Derby metastore) as
conf/local.toml has it, so every kind of Spark warning the first run of a warehouse used to print can show up.

Run 1 (a new warehouse, the default summary): the console has none of the silenced Spark WARN lines, no
progress bars, no line over 300 characters, and a summary with one line per cluster in each stage's section;
`--fail-on-storm-severity 0` exits 4 as the samples hold storms. Run 2 (`--verbose`, one unrelated line
appended to one client log): per-partition and per-file lines, and no storm written or amended, so status 0.
Both write `--summary-json` and `--metrics-file`; their values are compared with counts of the tables made
with delta-rs (DataFusion SQL, which reads deletion vectors) and with the sample files themselves.
prometheus_client is not installed in .venv, so the textfile is checked by a strict parser of the format here.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, QueryBuilder

from jobs.common.config import parse_config
from jobs.common.progress import tasks_line

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
CLUSTERS = ("kafka-3.9.1", "kafka-4.3.1")
STAGES = ["ingest", "decode", "logs", "history", "storms", "cost", "maintenance", "report"]
#: The loggers conf/log4j2.properties silences, as the console shows them (%c{1}), and the two lines of Utils
#: and the one of DAGScheduler it drops.
SILENCED = re.compile(r" WARN (HiveExternalCatalog|ObjectStore|HiveConf|SessionState|NativeCodeLoader|SparkStringUtils"
                      r"|MapPartitionsRDD|CaseInsensitiveStringMap): | WARN Utils: (Your hostname|Set SPARK_LOCAL_IP)"
                      r"| WARN DAGScheduler: Broadcasting large task binary")
#: Spark's console chatter that a configured log4j and show_progress = false keep out.
SPARK_CHATTER = ("Using Spark's default log4j profile", "Setting default log level", "[Stage ")
MAX_LINE = 300
#: `[run] progress_seconds` of the runs: short, so that the first run's history stage prints progress lines
#: (with the default 15 s it did only on a busy machine).
PROGRESS_SECONDS = 3
#: A client log line that no coordinator logic reads: the second run has one new line and nothing else new.
APPENDED_TO = ("kafka-3.9.1", "java-static-members-a.log")
APPENDED_LINE = "[2026-11-21 05:53:30,000] INFO an unrelated line appended by the test (org.example.Unrelated)\n"


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str
    seconds: float


def _config_text(root: Path, samples: Path) -> str:
    """conf/local.toml's settings (both clusters, their broker and client logs, the Hive catalog) with every
    path in the test's directory, one task slot (the test process beside it has the other core) and no UI."""
    jars = parse_config({"sources": {"mode": "none"}}).spark.jars_dir
    logs = "".join(
        f'[[sources.logs]]\ncluster = "{c}"\nsource = "{source}"\npaths = ["{samples / c / pattern}"]\n'
        f'zone = "UTC"\nbroker_id = {broker_id}\n\n'
        for c in CLUSTERS for source, pattern, broker_id in (("broker-1", "broker/server.log*", 1),
                                                               ("clients", "clients/*.log", -1)))
    return f'''[sources]
mode = "segments"

[[sources.segments]]
cluster = "*"
path = "{samples}"

{logs}[tables]
database = "consumer_group_history"
location = "{root / "wh" / "tables"}"

[spark]
master = "local[1]"
catalog = "hive"
warehouse_dir = "{root / "wh" / "spark-warehouse"}"
metastore_dir = "{root / "wh" / "metastore_db"}"
shuffle_partitions = 1
jars_dir = "{jars}"

[spark.extra]
"spark.ui.enabled" = "false"
"spark.driver.memory" = "2g"
"spark.databricks.delta.snapshotPartitions" = "1"

[storms]
min_rebalances = 12
window_minutes = 2
quiet_minutes = 1
flapping_min_rejoins = 3
lockstep_seconds = 5
lockstep_min_groups = 3

[report]
path = "{root / "wh" / "report" / "rebalance-audit.html"}"
groups_shown = 4

[run]
progress_seconds = {PROGRESS_SECONDS}
'''


def _nightly(conf: Path, *args: str, timeout: float = 1200) -> Run:
    """`python -m jobs.nightly` in a process group of its own, killed with its JVM if it overruns."""
    t0 = time.monotonic()
    job = subprocess.Popen([sys.executable, "-m", "jobs.nightly", "--conf", str(conf), *args], cwd=ROOT,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = job.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        out, err = job.communicate()
        raise AssertionError(f"jobs.nightly ran over {timeout}s; stderr:\n{err[-5000:]}") from None
    return Run(job.returncode, out, err, time.monotonic() - t0)


@dataclass(frozen=True)
class Runs:
    root: Path
    samples: Path
    lines_before: dict[str, int]  # log lines per cluster in the sample files, counted here
    files: dict[str, int]  # log files per cluster
    first: Run
    second: Run


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    root = tmp_path_factory.mktemp("outputs")
    samples = root / "samples"
    for c in CLUSTERS:  # the two single-broker samples this module's expected console lines are written for
        shutil.copytree(ROOT / "samples" / c, samples / c)
    lines_before = {c: sum(p.read_bytes().count(b"\n") for p in [*(samples / c / "broker").glob("server.log*"),
                                                                 *(samples / c / "clients").glob("*.log")])
                    for c in CLUSTERS}
    files = {c: len([*(samples / c / "broker").glob("server.log*"), *(samples / c / "clients").glob("*.log")])
             for c in CLUSTERS}
    conf = root / "nightly.toml"
    conf.write_text(_config_text(root, samples))
    first = _nightly(conf, "--summary-json", str(root / "first.json"), "--metrics-file", str(root / "m" / "first.prom"),
                     "--fail-on-storm-severity", "0")
    assert first.returncode in (0, 4), f"first run failed ({first.returncode}):\n{first.stderr[-5000:]}"
    with open(samples / APPENDED_TO[0] / "clients" / APPENDED_TO[1], "a") as log_file:
        log_file.write(APPENDED_LINE)
    second = _nightly(conf, "--verbose", "--summary-json", str(root / "second.json"),
                      "--metrics-file", str(root / "m" / "second.prom"), "--fail-on-storm-severity", "0")
    assert second.returncode in (0, 4), f"second run failed ({second.returncode}):\n{second.stderr[-5000:]}"
    print(f"nightly runs: {first.seconds:.0f}s, {second.seconds:.0f}s")
    for name, run in (("first", first), ("second", second)):
        (root / f"{name}.out").write_text(run.stdout)
        (root / f"{name}.err").write_text(run.stderr)
    return Runs(root, samples, lines_before, files, first, second)


def _sql(runs: Runs, table: str, query: str) -> list[dict[str, Any]]:
    """A query over one Delta table of the run's warehouse, by delta-rs (no JVM), as `t`."""
    delta = DeltaTable(str(runs.root / "wh" / "tables" / table))
    return pa.table(QueryBuilder().register("t", delta).execute(query).read_all()).to_pylist()


def _per_cluster(runs: Runs, table: str, where: str = "true") -> dict[str, int]:
    rows = _sql(runs, table, f"SELECT cluster, count(*) AS n FROM t WHERE {where} GROUP BY cluster")
    return {c: 0 for c in CLUSTERS} | {r["cluster"]: r["n"] for r in rows}


def _sections(stdout: str) -> dict[str, list[str]]:
    """The summary's sections: a line at the margin (`ingest (segments): ...`) and the indented lines after it,
    keyed by the word before the first space or colon."""
    sections: dict[str, list[str]] = {}
    current: list[str] = []
    for line in stdout.splitlines():
        if line.startswith("  "):
            current.append(line)
        else:
            current = sections.setdefault(re.split(r"[ :]", line, maxsplit=1)[0], [])
    return sections


# -- item 4: the console -------------------------------------------------------------------------------------


def test_the_console_has_no_silenced_spark_warnings_no_bars_and_no_long_lines(runs: Runs) -> None:
    for run in (runs.first, runs.second):
        lines = (run.stdout + run.stderr).splitlines()
        assert not [line for line in lines if SILENCED.search(line)]
        assert not [line for line in lines if any(chatter in line for chatter in SPARK_CHATTER)]
        assert max(map(len, lines)) <= MAX_LINE, max(lines, key=len)
        assert "logs: logs:" not in run.stdout
        assert len([line for line in run.stdout.splitlines() if line.startswith("logs: ")]) == 1
    # The job's own progress: each counting stage's last line has its records and rate.
    for stage, what in (("ingest", "records read"), ("decode", "records decoded"), ("logs", "log lines read")):
        assert re.search(rf"stage {stage}: done in [0-9.]+s, \d+ {what} \(\d+/s\)", runs.first.stderr), stage
    # The first run's history stage takes well over the PROGRESS_SECONDS between progress lines (10-15 s on a
    # quiet machine): a line says what runs at that moment (Spark tasks, or the driver's own work between jobs).
    assert re.search(r"stage history: \d+s(, Spark tasks \d+/\d+| \(driver work, no Spark tasks running\))",
                     runs.first.stderr)


def test_the_summary_is_one_line_per_cluster_per_stage_and_details_with_verbose(runs: Runs) -> None:
    first = _sections(runs.first.stdout)
    for section in ("ingest", "decode", "logs"):
        assert [line.split()[0] for line in first[section]] == list(CLUSTERS), (section, first[section])
    assert "/clients/" not in runs.first.stdout and " partition " not in runs.first.stdout

    second = _sections(runs.second.stdout)
    # Per partition: the header and one line per partition read (all of them, on a run that archives none).
    partitions = {(c, int(p.name.rsplit("-", 1)[1])) for c in CLUSTERS
                  for p in (runs.samples / c).glob("__consumer_offsets-*") if any(p.glob("*.log"))}
    header = [line.split() for line in second["ingest"]].index(["cluster", "partition", "read", "archived", "offsets"])
    assert [line.split()[0] for line in second["ingest"][:header]] == list(CLUSTERS)
    by_partition = {(line.split()[0], int(line.split()[1])) for line in second["ingest"][header + 1:]}
    assert by_partition == partitions
    # Per file: the one file that grew. A file's last line waits for the next one (the entry might go on over
    # more lines), so the first run read up to the line before the old last one, and this run that old last
    # line, n - 1 (the appended line n waits in turn).
    grown = runs.samples / APPENDED_TO[0] / "clients" / APPENDED_TO[1]
    n = grown.read_bytes().count(b"\n")
    [per_file] = [line for line in second["logs"] if str(grown) in line]
    assert re.fullmatch(rf"  {APPENDED_TO[0]:<12} {re.escape(str(grown))}: lines {n - 1}\.\.{n - 1}, \d+ events, "
                        r"0 unparsed", per_file), per_file
    assert len(second["logs"]) == 1  # no other file had a new line


# -- item 5: exit status, summary JSON, metrics ---------------------------------------------------------------


def test_exit_status_says_storms_were_written_by_this_run_only(runs: Runs) -> None:
    storms = _sql(runs, "rebalance_storms", "SELECT count(*) AS n FROM t")[0]["n"]
    assert storms > 0, "the samples hold storms"
    assert runs.first.returncode == 4
    assert "exit status 4 (the run is committed)" in runs.first.stderr
    assert runs.second.returncode == 0  # the same storms, not written or amended again


def test_the_summary_json_matches_the_tables_and_the_samples(runs: Runs) -> None:
    first = json.loads((runs.root / "first.json").read_text())
    second = json.loads((runs.root / "second.json").read_text())
    run_ids = [r["run_id"] for r in _sql(runs, "ingest_runs", "SELECT run_id FROM t ORDER BY run_id")]
    assert [first["run_id"], second["run_id"]] == run_ids
    assert (first["status"], first["exit_status"], second["status"], second["exit_status"]) == (
        "committed", 4, "committed", 0)
    assert list(first["stages"]) == STAGES
    for doc in (first, second):
        started = dt.datetime.fromisoformat(doc["started_at"])
        assert started.tzinfo is not None and started <= dt.datetime.fromisoformat(doc["finished_at"])

    archived = _per_cluster(runs, "raw_offsets")
    generations = _per_cluster(runs, "group_generations")
    decode_errors = _per_cluster(runs, "decode_errors")
    storms = _sql(runs, "rebalance_storms", "SELECT cluster, group_id, severity FROM t")
    assert sorted(first["clusters"]) == list(CLUSTERS)
    for c in CLUSTERS:
        got = first["clusters"][c]
        mine = [s["severity"] for s in storms if s["cluster"] == c]
        assert got["records_archived"] == archived[c] > 0
        assert got["generations_written"] == generations[c] > 0
        assert got["decode_errors"] == decode_errors[c]
        # every line but each file's last, which waits for the next line (see the verbose test)
        assert (got["log_files"], got["log_lines"]) == (runs.files[c], runs.lines_before[c] - runs.files[c])
        assert (got["storms_found"], got["storm_max_severity"]) == (len(mine), max(mine) if mine else None)
        assert (got["segment_errors"], got["history_gaps"]) == (0, 0)
    assert sorted((s["cluster"], s["group_id"], s["severity"]) for s in first["storms"]) == sorted(
        (s["cluster"], s["group_id"], s["severity"]) for s in storms)
    assert first["storms_at_or_above_threshold"] == len(storms)
    # The clusters' counts add up to the stages' totals (the decode stage counts no transaction markers).
    assert sum(c["records_decoded"] for c in first["clusters"].values()) == first["stages"]["decode"]["records_decoded"]
    assert sum(c["log_lines"] for c in first["clusters"].values()) == first["stages"]["logs"]["lines_read"]

    # The report ends with the stamp of what it was drawn from: its tables as they are now (the second run wrote
    # it again, or left the first run's, whose tables it did not change).
    report = runs.root / "wh" / "report" / "rebalance-audit.html"
    assert first["stages"]["report"]["summary"] == str(report)
    assert second["stages"]["report"]["summary"] in (
        str(report), f"{report} (current: its tables have not changed since it was written)")
    stamp = json.loads(report.read_text().rstrip().removesuffix("-->").rsplit("<!-- cgh report inputs ", 1)[1])

    def version_and_time(name: str) -> list[int]:
        table = DeltaTable(str(runs.root / "wh" / "tables" / name))
        return [table.version(), table.history(1)[0]["timestamp"]]

    assert stamp == {"database": "consumer_group_history", "location": str(runs.root / "wh" / "tables"),
                     "groups_shown": 4, "versions": {
                         name: version_and_time(name)
                         for name in ("group_generations", "rebalance_storms", "assignor_whatif",
                                      "assignment_replay", "rebalance_cost")}}
    # The replay's figures are assignment_replay's generations by status (the first run wrote them all)
    replayed = DeltaTable(str(runs.root / "wh" / "tables" / "assignment_replay")).to_pyarrow_table().to_pylist()
    generations = {(r["cluster"], r["group_id"], r["generation"], r["record_offset"]): r for r in replayed}
    assert first["stages"]["history"]["replay"] == {
        "generations_replayed": len(generations),
        "matches": sum(r["status"] == "match" for r in generations.values()),
        "mismatches_explained": sum(r["reason"] in ("other_client_library", "other_client_version")
                                    for r in generations.values()),
        "mismatches_unexplained": sum(r["reason"] == "unexplained" for r in generations.values()),
        "not_replayable": sum(r["status"] == "not_replayable" for r in generations.values()),
        "shared_sticky_state": sum("shared_sticky_state" in (r["findings"] or []) for r in generations.values())}
    assert first["stages"]["history"]["replay"]["shared_sticky_state"] > 0
    # The cost stage wrote every rebalance's cost in the first run (the table held no row before it).
    [written] = _sql(runs, "rebalance_cost", "SELECT count(*) AS n, count(DISTINCT cluster || group_id) AS g FROM t")
    assert written["n"] > 0 and first["stages"]["cost"]["summary"].startswith(
        f"{written['g']} groups' rebalance costs: {written['n']} rows written, 0 withdrawn"), first["stages"]["cost"]
    # The second run: one new log line, nothing archived, no storm written or amended.
    assert second["storms"] == [] and second["storms_at_or_above_threshold"] == 0
    assert {c: v["log_lines"] for c, v in second["clusters"].items()} == {APPENDED_TO[0]: 1, CLUSTERS[1]: 0}
    assert all(v["records_archived"] == 0 for v in second["clusters"].values())
    assert not [p for p in runs.root.iterdir() if p.name.endswith(".tmp")]


_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_LABEL_VALUE = r'"(?:[^"\\\n]|\\\\|\\"|\\n)*"'
_SAMPLE = re.compile(rf"({_NAME})(?:\{{((?:[a-zA-Z_][a-zA-Z0-9_]*={_LABEL_VALUE},?)*)\}})? (\S+)")
_LABEL = re.compile(rf"([a-zA-Z_][a-zA-Z0-9_]*)=({_LABEL_VALUE})")


def parse_textfile(text: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """A strict reading of the Prometheus text exposition format (0.0.4), as node_exporter's textfile
    collector needs it: a final newline; per family one HELP and one TYPE line before its samples, families
    contiguous; sample lines `name{label="value",...} value` with only \\\\, \\" and \\n escaped in values; a
    float (or NaN, +Inf, -Inf) value; no sample twice. Returns family -> labels -> value."""
    assert text.endswith("\n") and "\r" not in text
    families: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    typed: dict[str, str] = {}
    helped: set[str] = set()
    current = None
    for number, line in enumerate(text[:-1].split("\n"), 1):
        where = f"line {number}: {line!r}"
        if line.startswith("# HELP "):
            name = line.split(" ", 3)[2]
            assert re.fullmatch(_NAME, name) and name not in helped and name not in families, where
            helped.add(name)
            current = name
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert name == current and name not in typed and kind in ("gauge", "counter", "untyped"), where
            typed[name] = kind
            families[name] = {}
            continue
        assert line and not line.startswith("#"), where
        match = _SAMPLE.fullmatch(line)
        assert match, where
        name, labels_text, value_text = match.groups()
        assert name == current and name in typed, f"{where}: sample outside its family"
        labels = tuple((k, json.loads(v)) for k, v in _LABEL.findall(labels_text or ""))
        assert len({k for k, _ in labels}) == len(labels), where
        try:
            value = float(value_text) if value_text not in ("+Inf", "-Inf") else float(value_text.replace("I", "i"))
        except ValueError:
            raise AssertionError(f"{where}: not a sample value") from None
        assert labels not in families[name], f"{where}: sample twice"
        families[name][labels] = value
    return families


def test_the_textfile_parser_is_strict() -> None:
    good = '# HELP cgh_x x\n# TYPE cgh_x gauge\ncgh_x{cluster="a",group="q\\"\\\\\\n"} 1.5\n'
    assert parse_textfile(good) == {"cgh_x": {(("cluster", "a"), ("group", 'q"\\\n')): 1.5}}
    for bad in (good[:-1], good.replace("# TYPE cgh_x gauge\n", ""), good.replace('\\"', '"'),
                good + 'cgh_y{cluster="a"} 1\n', good + good.split("\n", 2)[2], good.replace("1.5", "one")):
        with pytest.raises(AssertionError):
            parse_textfile(bad)


def test_metrics_describe_the_warehouse_after_every_run(runs: Runs) -> None:
    first = parse_textfile((runs.root / "m" / "first.prom").read_text())
    second = parse_textfile((runs.root / "m" / "second.prom").read_text())
    assert all(name.startswith("cgh_") for name in second)
    outcome = "outcome IN ('stable', 'empty', 'never_completed')"
    rebalances = {(r["cluster"], r["group_id"]): r["n"] for r in _sql(
        runs, "group_generations", f"SELECT cluster, group_id, count(*) AS n FROM t WHERE {outcome} "
                                   "GROUP BY cluster, group_id")}
    storms = {(r["cluster"], r["group_id"]): (r["n"], r["s"]) for r in _sql(
        runs, "rebalance_storms", "SELECT cluster, group_id, count(*) AS n, max(severity) AS s FROM t "
                                  "GROUP BY cluster, group_id")}

    def by_group(family: str) -> dict[tuple[str, str], float]:
        return {(dict(labels)["cluster"], dict(labels)["group"]): v for labels, v in second[family].items()}

    def by_cluster(family: str) -> dict[str, float]:
        return {dict(labels)["cluster"]: v for labels, v in second[family].items()}

    assert sum(rebalances.values()) > 0 and storms
    groups = set(rebalances) | set(storms)
    assert by_group("cgh_group_storms") == {k: storms.get(k, (0, 0))[0] for k in groups}
    assert by_group("cgh_group_storm_max_severity") == {k: storms.get(k, (0, 0.0))[1] for k in groups}
    assert by_group("cgh_group_rebalances") == {k: rebalances.get(k, 0) for k in groups}
    paid = {(r["cluster"], r["group_id"]): (float(r["s"]), int(r["d"])) for r in _sql(
        runs, "rebalance_cost", "SELECT cluster, group_id, sum(coalesce(partition_seconds, partition_seconds_low)) "
                                "AS s, sum(coalesce(records_delayed, 0)) AS d FROM t GROUP BY cluster, group_id")}
    assert sum(s for s, _ in paid.values()) > 0
    assert by_group("cgh_group_rebalance_paused_partition_seconds") == pytest.approx(
        {k: paid.get(k, (0.0, 0))[0] for k in groups}, abs=0.001)
    assert by_group("cgh_group_records_delayed") == {k: paid.get(k, (0.0, 0))[1] for k in groups}
    assert by_cluster("cgh_records_archived") == _per_cluster(runs, "raw_offsets")
    assert by_cluster("cgh_decode_errors") == _per_cluster(runs, "decode_errors")
    assert by_cluster("cgh_history_gaps") == _per_cluster(runs, "history_gaps")
    [finished] = _sql(runs, "ingest_runs", "SELECT max(finished_at) AS f FROM t")
    finished_at = finished["f"] if finished["f"].tzinfo else finished["f"].replace(tzinfo=dt.timezone.utc)
    last = second["cgh_last_successful_run_timestamp_seconds"][()]
    assert math.isclose(last, finished_at.timestamp(), abs_tol=0.001)
    # A run with nothing new for the gold tables: every gauge but the run's own is what the first run wrote.
    run_level = {"cgh_last_successful_run_timestamp_seconds", "cgh_last_run_duration_seconds"}
    assert {k: v for k, v in first.items() if k not in run_level} == {
        k: v for k, v in second.items() if k not in run_level}
    assert Counter(p.suffix for p in (runs.root / "m").iterdir()) == Counter({".prom": 2})


def test_a_progress_line_has_a_rate_and_an_eta_once_tasks_finish() -> None:
    assert tasks_line("stage history", 42.4, 30, 80, 1.5) == "  stage history: 42s, Spark tasks 30/80 (1.5/s), ETA 33s"
    assert tasks_line("stage history", 15.0, 0, 8, None) == "  stage history: 15s, Spark tasks 0/8"
