"""cgh, the JVM-free reader, against a warehouse the real pipeline wrote.

The nightly job runs once (in this module's Spark session) on both captured samples: kafka-3.9.1 with its
broker and client logs, kafka-4.3.1 with no logs at all, so that the one warehouse holds causes explained by
log lines and causes inferred from the records. Expected values come from Spark reading the same Delta
tables, and from what the sample's scenarios did (scenarios.json: which generation a poll timeout ended).
cgh itself never imports pyspark; the test that proves it runs cgh in a process of its own.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import doctest
import itertools
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import jobs.cli.warehouse
from jobs import cli
from jobs.cli.warehouse import CliError, parse_since
from jobs.common.config import (
    PROJECT_ROOT,
    LogSource,
    ReportConfig,
    SegmentSource,
    SourcesConfig,
    TablesConfig,
    load_config,
)
from jobs.nightly import run_nightly
from jobs.stages import STAGES
from tests.spark.conftest import spark, spark_root  # noqa: F401 - the project's Spark session fixture

pytestmark = pytest.mark.spark

SAMPLES = PROJECT_ROOT / "samples"
LOGGED = "kafka-3.9.1"      # broker and client logs read: causes come from log lines
UNLOGGED = "kafka-4.3.1"    # no logs read: causes inferred from the records
UTC = dt.timezone.utc


@pytest.fixture(scope="module")
def warehouse(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:  # noqa: F811
    """The tables directory of one nightly run (ingest to storms) on the samples."""
    root = tmp_path_factory.mktemp("cgh_warehouse")
    sample = SAMPLES / LOGGED
    logs = (LogSource(LOGGED, "broker-1", (str(sample / "broker" / "server.log*"),), "UTC", 1),
            LogSource(LOGGED, "clients", (str(sample / "clients" / "*.log"),)))
    config = dataclasses.replace(
        load_config(),  # conf/local.toml: the storm thresholds scaled to the samples
        sources=SourcesConfig(mode="segments", segments=(SegmentSource("*", str(SAMPLES)),), logs=logs),
        tables=TablesConfig(database="cgh_cli", location=str(root / "tables")),
        report=ReportConfig(path=str(root / "report.html")),
    )
    run_nightly(spark, config, stages=tuple(s for s in STAGES if s.name not in ("maintenance", "report")))
    return root / "tables"


def run_cgh(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """cgh in this process: (exit status, stdout, stderr)."""
    capsys.readouterr()
    status = cli.main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def iso(moment: dt.datetime | None) -> str | None:
    """A time as cgh --json prints it. Spark (session time zone UTC) hands back naive UTC datetimes."""
    return None if moment is None else moment.replace(tzinfo=UTC).isoformat().replace("+00:00", "Z")


def spark_rows(spark: SparkSession, tables: Path, name: str) -> list[dict[str, Any]]:  # noqa: F811
    return [r.asDict(recursive=True) for r in spark.read.format("delta").load(str(tables / name)).collect()]


def scenario(cluster: str, name: str) -> dict[str, Any]:
    return json.loads((SAMPLES / cluster / "scenarios.json").read_text())["scenarios"][name]


# ---------------------------------------------------------------------------------------------------
# cgh group


def test_every_group_timeline_is_what_spark_reads(spark: SparkSession, warehouse: Path,  # noqa: F811
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    generations = spark_rows(spark, warehouse, "group_generations")
    groups = sorted({(g["cluster"], g["group_id"]) for g in generations})
    assert len(groups) >= 20  # both samples, a dozen scenarios each
    for cluster, group_id in groups:
        expected = sorted(
            ({"generation": g["generation"], "group_protocol": g["group_protocol"], "outcome": g["outcome"],
              "at": iso(g["rebalance_started_at"] or g["stabilized_at"] or g["assignment_stored_at"]),
              "member_count": g["member_count"], "members_joined": g["members_joined"],
              "members_left": g["members_left"], "cause": g["cause"], "cause_inferred": g["cause_inferred"],
              "inference": g["inference"], "trigger_member_id": g["trigger_member_id"],
              "partitions_moved": sorted((m["topic"], m["partition"], m["from_member"], m["to_member"])
                                         for m in g["partitions_moved"])}
             for g in generations if (g["cluster"], g["group_id"]) == (cluster, group_id)),
            key=lambda g: (g["at"] or "~", g["group_protocol"], g["generation"]))
        status, out, err = run_cgh(capsys, "--tables", str(warehouse), "group", group_id, "--cluster", cluster,
                                   "--json")
        assert (status, err) == (0, "")
        actual = [{**{k: row[k] for k in expected[0] if k != "partitions_moved"},
                   "partitions_moved": sorted((m["topic"], m["partition"], m["from_member"], m["to_member"])
                                              for m in row["partitions_moved"])}
                  for row in json_lines(out)]
        assert {row["cluster"] for row in json_lines(out)} == {cluster}
        assert actual == expected, (cluster, group_id)


def test_a_poll_timeout_is_named_with_the_clients_own_words(warehouse: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """storm-poll-timeout: member b stopped polling for longer than max.poll.interval.ms three times
    (scenarios.json: generations whose cause is max_poll_interval_exceeded); each time it left the group."""
    story = scenario(LOGGED, "storm-poll-timeout")
    by_generation = {g["generation"]: g for g in story["generations"]}
    timed_out = sorted(n for n, g in by_generation.items() if g["cause"] == "max_poll_interval_exceeded")
    assert timed_out == [3, 5, 7]
    status, out, _ = run_cgh(capsys, "--tables", str(warehouse), "group", story["group_id"], "--cluster", LOGGED,
                             "--json")
    rows = {row["generation"]: row for row in json_lines(out)}
    assert status == 0 and sorted(rows) == sorted(by_generation)
    for n in timed_out:
        left = by_generation[n - 1]["member_ids"][by_generation[n]["trigger"]]  # its member id until then
        row = rows[n]
        assert (row["cause"], row["cause_inferred"], row["members_left"], row["trigger_member_id"]) == \
            ("poll_timeout", False, [left], left)
        line = row["evidence_line"]
        assert "Consumer poll timeout has expired" in line["message"] and "max_poll_interval_ms" in line["message"]
        assert line["source"].endswith(".log") and "/clients/" in line["source"]
    assert {n for n, row in rows.items() if row["cause"] == "poll_timeout"} == set(timed_out)

    status, text, _ = run_cgh(capsys, "--tables", str(warehouse), "group", story["group_id"], "--cluster", LOGGED)
    assert status == 0
    lines = text.splitlines()
    assert lines[0] == f"group {story['group_id']} on {LOGGED}: {len(rows)} generations, assignor range"
    assert lines[1].split() == ["generation", "at", "(UTC)", "outcome", "members", "joined", "left", "moved",
                                "rebalance", "s", "cause"]
    for n in timed_out:
        at = rows[n]["at"].replace("T", " ").removesuffix("Z")[:23]
        row_line = next(i for i, line in enumerate(lines) if line.split()[:3] == [str(n), *at.split()])
        assert lines[row_line].endswith("poll_timeout")
        block = list(itertools.takewhile(lambda b: b.startswith("    "), lines[row_line + 1:]))
        assert f"    left      {rows[n]['members_left'][0]}" in block
        # An eager rebalance paused every partition: the cost line says how long, and how many.
        assert any(b.startswith("    cost      eager: paused ") for b in block), block
        assert any(b.startswith("    evidence  kafka-python.log:") and "Consumer poll timeout has expired" in b
                   for b in block)


def test_each_generation_says_which_library_replayed_it_and_the_shared_sticky_state(
        spark: SparkSession, warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    """sticky-group ran kafka-python 2.2.15 (scenarios.json): its generations are replayed with kafka-python's own
    sticky, and those with two members or more sent one shared sticky state (kafka-python < 3.0 keeps it on the
    class). The replay each line shows is the one Spark reads from assignment_replay."""
    story = scenario(LOGGED, "sticky-group")
    assert story["client"] == "kafka-python 2.2.15"
    replays = {(r["generation"], r["record_offset"]): r for r in spark_rows(spark, warehouse, "assignment_replay")
               if (r["cluster"], r["group_id"]) == (LOGGED, story["group_id"])}
    status, out, _ = run_cgh(capsys, "--tables", str(warehouse), "group", story["group_id"], "--cluster", LOGGED,
                             "--json")
    rows = [row for row in json_lines(out) if row["member_count"]]
    assert status == 0 and [row["generation"] for row in rows] == [g["generation"] for g in story["generations"]
                                                                  if g["members"]]
    for row in rows:
        stored = replays[(row["generation"], row["record_offset"])]
        assert row["replay"] == {c: stored[c] for c in ("status", "reason", "detail", "leader_client", "engine",
                                                        "findings")}
        assert (row["replay"]["status"], row["replay"]["engine"]) == ("match", "kafka-python 2.2.15")
    shared = {row["generation"] for row in rows if "shared_sticky_state" in row["replay"]["findings"]}
    assert shared == {g["generation"] for g in story["generations"] if len(g["members"]) >= 2}

    status, text, _ = run_cgh(capsys, "--tables", str(warehouse), "group", story["group_id"], "--cluster", LOGGED)
    lines = text.splitlines()
    assert sum("replay    match (leader kafka-python, replayed with kafka-python 2.2.15)" in line
               for line in lines) == len(rows)
    assert sum(line.strip().startswith("finding   shared_sticky_state") for line in lines) == len(shared)


def test_causes_without_log_lines_are_said_to_be_inferred(spark: SparkSession, warehouse: Path,  # noqa: F811
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    inferred = [g for g in spark_rows(spark, warehouse, "group_generations")
                if g["cluster"] == UNLOGGED and g["group_id"] == "cgh-storm-crash-loop" and g["cause_inferred"]]
    assert inferred, "no logs were read for this cluster, so its causes come from the records"
    status, text, _ = run_cgh(capsys, "--tables", str(warehouse), "group", "cgh-storm-crash-loop",
                              "--cluster", UNLOGGED)
    assert status == 0
    assert f", {len(inferred)} with an inferred cause" in text.splitlines()[0]
    lines = text.splitlines()
    for g in inferred:
        row_line = next(i for i, line in enumerate(lines) if line.split()[:1] == [str(g["generation"])])
        assert lines[row_line].endswith(f"  {g['cause']} (inferred)")
        details = []  # the indented lines under the generation's row
        for line in lines[row_line + 1:]:
            if not line.startswith("    "):
                break
            details.append(line)
        if g["inference"]:  # how: which members joined and left, from the records
            assert f"    inferred  {g['inference']}" in details


def test_since_keeps_the_later_generations(spark: SparkSession, warehouse: Path,  # noqa: F811
                                           capsys: pytest.CaptureFixture[str]) -> None:
    generations = [g for g in spark_rows(spark, warehouse, "group_generations")
                   if g["cluster"] == LOGGED and g["group_id"] == "cgh-storm-poll-timeout"]
    starts = sorted(g["rebalance_started_at"] for g in generations if g["rebalance_started_at"])
    since = starts[len(starts) // 2]
    expected = sorted(g["generation"] for g in generations
                      if (g["rebalance_started_at"] or g["stabilized_at"] or g["assignment_stored_at"]) >= since)
    assert 0 < len(expected) < len(generations)
    for text in (since.strftime("%Y-%m-%dT%H:%M:%S.%f"),                                      # UTC by default
                 since.replace(tzinfo=UTC).astimezone(dt.timezone(dt.timedelta(hours=2))).isoformat()):  # offset
        status, out, _ = run_cgh(capsys, "--tables", str(warehouse), "group", "cgh-storm-poll-timeout",
                                 "--cluster", LOGGED, "--since", text, "--json")
        assert status == 0 and sorted(r["generation"] for r in json_lines(out)) == expected
    # the sample is from 2026-11-21: nothing in the last hour, and that is an answer, not an error
    status, out, err = run_cgh(capsys, "--tables", str(warehouse), "group", "cgh-storm-poll-timeout", "--since", "1h")
    assert (status, err) == (0, "") and out.startswith("group cgh-storm-poll-timeout: no generations since ")


def test_an_unknown_group_is_status_1_with_close_names(warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cgh(capsys, "--tables", str(warehouse), "group", "cgh-storm-poll")
    assert (status, out) == (1, "")
    assert err.count("\n") == 1 and "no group 'cgh-storm-poll'" in err
    assert "close names: " in err and "cgh-storm-poll-timeout" in err.split("close names: ")[1]
    status, _, err = run_cgh(capsys, "--tables", str(warehouse), "group", "cgh-storm-poll-timeout",
                             "--cluster", "kafka-0.8")
    assert status == 1 and f"(it has on: {LOGGED}, {UNLOGGED})" in err


# ---------------------------------------------------------------------------------------------------
# cgh storms, sql, tables


def test_storms_are_what_spark_reads_most_severe_first(spark: SparkSession, warehouse: Path,  # noqa: F811
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    storms = spark.read.format("delta").load(str(warehouse / "rebalance_storms"))
    expected = [
        {**r.asDict(recursive=True), "window_start": iso(r["window_start"]), "window_end": iso(r["window_end"])}
        for r in storms.select(
            "cluster", "group_id", "window_start", "window_end", "rebalances", "first_generation",
            "last_generation", F.round("stalled_seconds", 1).alias("stalled_seconds"), "dominant_cause", "causes",
            "flapping_members", "lockstep_id", "lockstep_groups", F.round("severity", 1).alias("severity"),
        ).orderBy(F.desc("severity"), "window_start", "cluster", "group_id").collect()
    ]
    status, out, _ = run_cgh(capsys, "--tables", str(warehouse), "storms", "--json")
    assert status == 0 and json_lines(out) == expected
    # the flapping member of the poll-timeout scenario: member b, rejoining after each timeout
    poll = [s for s in expected if (s["cluster"], s["group_id"]) == (LOGGED, "cgh-storm-poll-timeout")]
    assert [(s["dominant_cause"], s["flapping_members"]) for s in poll] == \
        [("poll_timeout", ["storm-poll-timeout-b@127.0.0.1"])]

    status, out, _ = run_cgh(capsys, "--tables", str(warehouse), "storms", "--cluster", LOGGED, "--json")
    assert json_lines(out) == [s for s in expected if s["cluster"] == LOGGED]
    ends = sorted(s["window_end"] for s in expected)
    status, out, _ = run_cgh(capsys, "--tables", str(warehouse), "storms", "--since", ends[-1], "--json")
    assert json_lines(out) == [s for s in expected if s["window_end"] >= ends[-1]]

    status, text, _ = run_cgh(capsys, "--tables", str(warehouse), "storms")
    lines = text.splitlines()
    assert lines[0] == f"{len(expected)} rebalance storms, most severe first"
    header, rule, body = lines[1], lines[2], lines[3:]
    assert header.split("  ")[0] == "cluster" and "start (UTC)" in header and "severity" in header
    # aligned: every column starts where its rule of dashes starts
    starts = [i for i in range(len(rule)) if rule[i] == "-" and (i == 0 or rule[i - 1] == " ")]
    assert len(body) == len(expected)
    for line, storm in zip(body, expected, strict=True):
        assert line[starts[0]:].startswith(storm["cluster"]) and line[starts[1]:].startswith(storm["group_id"])
        assert line[starts[2]:].startswith(storm["window_start"].replace("T", " ")[:23])


def test_sql_prints_headers_and_reads_what_spark_reads(spark: SparkSession, warehouse: Path,  # noqa: F811
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    query = ("SELECT cluster, cause, count(*) AS rebalances FROM group_generations "
             "WHERE cause IS NOT NULL GROUP BY cluster, cause ORDER BY cluster, cause")
    expected = [r.asDict() for r in spark.read.format("delta").load(str(warehouse / "group_generations"))
                .where(F.col("cause").isNotNull()).groupBy("cluster", "cause").agg(F.count("*").alias("rebalances"))
                .orderBy("cluster", "cause").collect()]
    status, out, _ = run_cgh(capsys, "--tables", str(warehouse), "sql", query, "--json")
    assert status == 0 and json_lines(out) == expected
    status, text, _ = run_cgh(capsys, "--tables", str(warehouse), "sql", query)
    lines = text.splitlines()
    assert lines[0].split() == ["cluster", "cause", "rebalances"] and set(lines[1]) == {"-", " "}
    assert [line.split() for line in lines[2:-1]] == \
        [[r["cluster"], r["cause"], str(r["rebalances"])] for r in expected]
    assert lines[-1] == f"({len(expected)} rows)"


def test_tables_lists_every_table_with_its_rows(spark: SparkSession, warehouse: Path,  # noqa: F811
                                               capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cgh(capsys, "--tables", str(warehouse), "tables", "--json")
    listed = {r["table"]: r["rows"] for r in json_lines(out)}
    on_disk = sorted(p.name for p in warehouse.iterdir() if (p / "_delta_log").is_dir())
    assert status == 0 and sorted(listed) == on_disk and "group_generations" in listed
    assert listed == {name: spark.read.format("delta").load(str(warehouse / name)).count() for name in on_disk}


def test_rows_removed_with_deletion_vectors_are_not_returned(
        spark: SparkSession, warehouse: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    """group_generations is amended each night with MERGE, which marks replaced rows in deletion vectors
    (delta.enableDeletionVectors): a reader that ignored them would show both the old and the new row."""
    copy = tmp_path / "tables" / "group_generations"
    shutil.copytree(warehouse / "group_generations", copy)
    spark.sql(f"DELETE FROM delta.`{copy}` WHERE cluster = '{LOGGED}' AND group_id = 'cgh-storm-poll-timeout' "
              "AND generation = 3")
    log = "".join(p.read_text() for p in sorted((copy / "_delta_log").glob("*.json")))
    assert '"deletionVector":{' in log, "the DELETE wrote a deletion vector, not a rewritten file"
    left = sorted(g["generation"] for g in spark_rows(spark, copy.parent, "group_generations")
                  if g["cluster"] == LOGGED and g["group_id"] == "cgh-storm-poll-timeout")
    assert 3 not in left and len(left) >= 9
    status, out, _ = run_cgh(capsys, "--tables", str(copy.parent), "group", "cgh-storm-poll-timeout",
                             "--cluster", LOGGED, "--json")
    assert status == 0 and sorted(r["generation"] for r in json_lines(out)) == left
    status, out, _ = run_cgh(capsys, "--tables", str(copy.parent), "sql",
                             "SELECT count(*) AS n FROM group_generations", "--json")
    assert json_lines(out) == [{"n": spark.read.format("delta").load(str(copy)).count()}]


# ---------------------------------------------------------------------------------------------------
# Finding the tables, errors, no JVM


def test_the_tables_come_from_the_config(warehouse: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`[tables] location` relative to the project root (the config directory's parent), as for the jobs."""
    project = tmp_path / "project"
    (project / "conf").mkdir(parents=True)
    os.symlink(warehouse, project / "tables-here")
    conf = project / "conf" / "mine.toml"
    conf.write_text('[sources]\nmode = "none"\n\n[tables]\nlocation = "tables-here"\n')
    status, via_conf, _ = run_cgh(capsys, "--conf", str(conf), "storms", "--json")
    status_direct, direct, _ = run_cgh(capsys, "storms", "--json", "--tables", str(warehouse))
    assert (status, status_direct) == (0, 0) and json_lines(via_conf) == json_lines(direct) != []


@pytest.mark.parametrize("argv, message", [
    (["--tables", "{tmp}/nothing", "storms"],
     "cgh: error: no tables directory at {tmp}/nothing (--tables): scripts/nightly creates it"),
    (["--tables", "{tmp}", "storms"], "cgh: error: no Delta tables in {tmp} (--tables): scripts/nightly creates them"),
    (["--conf", "{tmp}/missing.toml", "storms"], "cgh: error: {tmp}/missing.toml: no such file"),
    (["--conf", "{tmp}/bad.toml", "storms"],
     "cgh: error: {tmp}/bad.toml: unknown configuration key tables.place (known keys here: database, location)"),
    (["--tables", "{warehouse}", "storms", "--since", "last week"], "cgh: error: --since 'last week': expected an ISO"),
    (["--tables", "{warehouse}", "sql", "SELEC 1"], "cgh: error: query failed: SQL error: ParserError("),
    (["--tables", "{warehouse}", "sql", "SELECT * FROM storms"],
     "cgh: error: query failed: Error during planning: table 'datafusion.public.storms' not found (tables in "),
])
def test_usage_and_config_errors_are_one_line_and_status_2(argv: list[str], message: str, warehouse: Path,
                                                          tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad.toml").write_text('[tables]\nplace = "x"\n')
    fill = {"tmp": str(tmp_path), "warehouse": str(warehouse)}
    status, out, err = run_cgh(capsys, *(a.format(**fill) for a in argv))
    assert (status, out) == (2, "")
    assert err.startswith(message.format(**fill)) and err.count("\n") == 1


def test_the_installed_command_starts_no_jvm(warehouse: Path) -> None:
    """The console script as installed (.venv/bin/cgh), and every command in one process that then checks
    that neither pyspark nor py4j was imported."""
    script = Path(sys.executable).parent / "cgh"
    started = time.monotonic()
    done = subprocess.run([str(script), "--tables", str(warehouse), "storms", "--json"], check=False,
                          capture_output=True, text=True, timeout=120, cwd=PROJECT_ROOT)
    seconds = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert {s["group_id"] for s in json_lines(done.stdout)} >= {"cgh-storm-poll-timeout", "cgh-storm-crash-loop"}
    print(f"cgh storms: {seconds:.2f} s wall")  # the first answer's time (2 s on a quiet machine is the aim)
    check = (
        "import sys\n"
        "from jobs.cli import main\n"
        f"t = {str(warehouse)!r}\n"
        "for argv in (['group', 'cgh-storm-poll-timeout'], ['storms'], ['tables'],\n"
        "             ['sql', 'SELECT count(*) FROM group_generations']):\n"
        "    assert main(['--tables', t, *argv]) == 0, argv\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j', 'delta'))\n"
        "print('JVM-side modules:', loaded)\n"
        "sys.exit(1 if loaded else 0)\n"
    )
    done = subprocess.run([sys.executable, "-c", check], check=False, capture_output=True, text=True, timeout=120,
                          cwd=PROJECT_ROOT)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "JVM-side modules: []" in done.stdout


def test_since_accepts_dates_times_and_ages() -> None:
    now = dt.datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
    assert parse_since("7d", now) == dt.datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
    assert parse_since("24h", now) == dt.datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
    assert parse_since("90m", now) == dt.datetime(2026, 11, 27, 10, 30, tzinfo=UTC)
    assert parse_since("2026-11-21") == dt.datetime(2026, 11, 21, tzinfo=UTC)
    assert parse_since("2026-11-21 05:53") == dt.datetime(2026, 11, 21, 5, 53, tzinfo=UTC)
    assert parse_since("2026-11-21T05:53:15.5Z") == dt.datetime(2026, 11, 21, 5, 53, 15, 500000, tzinfo=UTC)
    assert parse_since("2026-11-21T07:53+02:00") == dt.datetime(2026, 11, 21, 5, 53, tzinfo=UTC)
    with pytest.raises(CliError, match="--since '7 days'"):
        parse_since("7 days")
    assert doctest.testmod(jobs.cli.warehouse).failed == 0  # the examples in parse_since's docstring
