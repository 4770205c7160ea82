"""One run at a time per warehouse (jobs/common/run_lock.py): a claim held in the Delta log that a second
run's claim conflicts with, taken over from a run that died, and Derby's one-process metastore said plainly.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from jobs.common.config import Config, SparkConfig, parse_config
from jobs.common.delta_io import Tables
from jobs.common.run_lock import (
    APP_ID,
    ClaimEvent,
    RunClaim,
    WarehouseClaimed,
    derby_in_use,
    explain_metastore_failure,
    process_start_ticks,
)
from schemas.observability import RUN_CLAIMS

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
_databases = itertools.count()


@pytest.fixture
def tables(spark: SparkSession, tmp_path: Path) -> Tables:
    t = Tables(spark, f"claims_{next(_databases)}", str(tmp_path / "tables"))
    t.ensure_database()
    return t


def _append_claim(tables: Tables, event: ClaimEvent) -> None:
    """A claim row as another run would have left it (the same write the claim does)."""
    tables.ensure(RUN_CLAIMS)
    claim = RunClaim(tables, event.run_id, event.job, 12)
    claim._append(event)


def _someone(seq: int, **changes: object) -> ClaimEvent:
    pid = os.getpid()
    now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    base = ClaimEvent(seq, "claimed", "other-run", "jobs.nightly", now, socket.gethostname(), pid,
                      process_start_ticks(pid))
    return dataclasses.replace(base, **changes)


def _latest_without_a_query(tables: Tables) -> ClaimEvent | None:
    """RunClaim.latest, asserted to have read the Delta log only (no Spark job ran for it)."""
    context = tables.spark.sparkContext
    context.setJobGroup("claim-latest", "RunClaim.latest")
    try:
        found = RunClaim(tables, "reader", "jobs.nightly", 12).latest()
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
    assert list(context.statusTracker().getJobIdsForGroup("claim-latest")) == []
    return found


def test_a_second_claim_is_refused_while_the_first_holds_and_taken_after_its_release(tables: Tables) -> None:
    # A new warehouse's claims table: nobody holds it, read from its creation commit alone.
    tables.ensure(RUN_CLAIMS)
    assert _latest_without_a_query(tables) is None
    first = RunClaim(tables, "run-1", "jobs.nightly", 12)
    first.claim()
    held = _latest_without_a_query(tables)
    assert held is not None and (held.seq, held.event, held.run_id) == (1, "claimed", "run-1")
    with pytest.raises(WarehouseClaimed) as refused:
        RunClaim(tables, "run-2", "jobs.nightly", 12).claim()
    message = str(refused.value)
    assert "run run-1 (jobs.nightly, pid" in message and "holds the warehouse" in message
    assert "\n" not in message
    first.release()
    with RunClaim(tables, "run-2", "jobs.nightly", 12) as second:
        assert second.held is not None and second.took_over is None
    rows = [(r["seq"], r["event"], r["run_id"]) for r in tables.read(RUN_CLAIMS).orderBy("seq").collect()]
    assert rows == [(1, "claimed", "run-1"), (2, "released", "run-1"), (3, "claimed", "run-2"),
                    (4, "released", "run-2")]
    # Each claim is a Delta application transaction: the table's txnVersion for APP_ID is the last seq.
    history = tables.delta(RUN_CLAIMS).history().where("operation = 'WRITE'").count()
    assert history == 4 and APP_ID in (tables.delta(RUN_CLAIMS).history(1).collect()[0]["userMetadata"] or "")


def test_the_claim_of_a_process_that_died_on_this_host_is_taken_over(tables: Tables) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    _append_claim(tables, _someone(1, pid=gone.pid, pid_started=None))
    with RunClaim(tables, "run-after", "jobs.nightly", 12) as claim:
        assert claim.took_over is not None and "that process is gone" in claim.took_over
    # A live process (this one) with the same start time is not taken for dead; a reused pid is.
    _append_claim(tables, _someone(4))  # after run-after's claim (2) and release (3)
    with pytest.raises(WarehouseClaimed):
        RunClaim(tables, "run-refused", "jobs.nightly", 12).claim()
    _append_claim(tables, _someone(5, pid_started=(process_start_ticks(os.getpid()) or 0) + 1))
    with RunClaim(tables, "run-reused-pid", "jobs.nightly", 12) as claim:
        assert "that process is gone" in (claim.took_over or "")


def test_a_claim_from_another_host_lapses_after_the_stale_hours(tables: Tables) -> None:
    now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    _append_claim(tables, _someone(1, host="broker-host-7", pid=1, at=now - dt.timedelta(hours=2)))
    with pytest.raises(WarehouseClaimed, match=r"lapses after run.lock_stale_hours = 3"):
        RunClaim(tables, "too-early", "jobs.nightly", 3).claim()
    with RunClaim(tables, "late-enough", "jobs.nightly", 1.5) as claim:
        assert "older than run.lock_stale_hours = 1.5" in (claim.took_over or "")
    assert tables.read(RUN_CLAIMS).where("run_id = 'late-enough' AND event = 'claimed'").collect()[0][
        "took_over"].startswith("took over the claim of run other-run")


def test_two_processes_claiming_one_table_location_at_once_one_wins(tmp_path: Path) -> None:
    """Two drivers (own JVMs, own in-memory catalogs, one table location) claim within milliseconds of each
    other, in two rounds (in the first both also create the claims table): exactly one wins each round, the
    other gets the one-line refusal. The same two drivers race both rounds (a JVM start is most of a
    driver's cost). The last round's winner then holds the warehouse while a `python -m jobs.nightly` on it
    is refused (its own JVM and catalog): status 75 (EX_TEMPFAIL), one line naming the holder, no table of
    the run created."""
    location = tmp_path / "tables"
    rounds = 2
    go = [tmp_path / f"go-{r}" for r in range(rounds)]
    release = tmp_path / "release"
    workers = []
    for i in (1, 2):
        outs, ready = [tmp_path / f"out-{r}-{i}" for r in range(rounds)], tmp_path / f"ready-{i}"
        cmd = [sys.executable, "-m", "tests.spark.claim_worker", "--location", str(location), "--run-id", f"w{i}",
               "--ready", str(ready), "--hold", "2", "--hold-until", str(release)]
        for g, o in zip(go, outs, strict=True):
            cmd += ["--go", str(g), "--out", str(o)]
        with open(tmp_path / f"log-{i}", "w") as log:
            workers.append((subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                             start_new_session=True), outs, ready))
    try:
        winners = _race(tmp_path, workers, go)
        # The last round's winner holds the claim: a nightly run on the warehouse is refused.
        conf = _nightly_toml(tmp_path / "nightly.toml", location,
                             f'catalog = "in-memory"\nwarehouse_dir = "{tmp_path / "sw"}"\nmetastore_dir = ""')
        job = subprocess.run([sys.executable, "-m", "jobs.nightly", "--conf", str(conf)], check=False, cwd=ROOT,
                             capture_output=True, text=True, timeout=600)
        release.touch()
        codes = [p.wait(timeout=240) for p, _, _ in workers]
    finally:
        for p, _, _ in workers:
            if p.poll() is None:
                os.killpg(p.pid, 9)
                p.wait(timeout=60)
    # the worker refused in the last round exits as a refused nightly run does
    assert sorted(codes) == [0, 75]
    assert [w.endswith(f"-round{r}") for r, w in enumerate(winners)] == [True] * rounds
    assert job.returncode == 75, job.stderr[-3000:]
    line = _one_error_line(job.stderr)
    assert f"run {winners[-1]} (claim_worker, pid" in line and "holds the warehouse" in line
    # Not even ingest_runs (beside run_claims: the lock file its first creation on a local disk takes).
    assert sorted(p.name for p in location.iterdir() if not p.name.startswith(".")) == ["run_claims"]


def _race(tmp_path: Path, workers: list[tuple[subprocess.Popen[bytes], list[Path], Path]], go: list[Path]
          ) -> list[str]:
    """The rounds of the race: each started by its go file, ended by one refusal and one win (released,
    but for the last round's, which holds on); the winners' run ids."""
    deadline = time.monotonic() + 240
    while not all(ready.exists() for _, _, ready in workers):
        assert time.monotonic() < deadline, "workers did not start"
        assert all(p.poll() is None for p, _, _ in workers), [
            (tmp_path / f"log-{i}").read_text()[-3000:] for i in (1, 2)]
        time.sleep(0.1)
    winners = []
    for r in range(len(go)):
        go[r].touch()
        deadline = time.monotonic() + 240
        last = r == len(go) - 1
        ended = [False, False]
        while not all(ended):
            texts = [outs[r].read_text() if outs[r].exists() else "" for _, outs, _ in workers]
            ended = ["refused " in t or "released" in t or (last and t.startswith("won ")) for t in texts]
            assert time.monotonic() < deadline, f"round {r} did not end"
            assert all(done or p.poll() is None for done, (p, _, _) in zip(ended, workers, strict=True)), [
                (tmp_path / f"log-{i}").read_text()[-3000:] for i in (1, 2)]
            time.sleep(0.05)
        results = [outs[r].read_text() for _, outs, _ in workers]
        won = [x for x in results if x.startswith("won ")]
        refused = [x for x in results if x.startswith("refused ")]
        assert len(won) == 1 and len(refused) == 1, results
        winner = won[0].split()[1]
        assert f"run {winner} (claim_worker, pid" in refused[0] and "holds the warehouse" in refused[0]
        winners.append(winner)
    return winners


def test_an_embedded_derby_metastore_in_use_is_named_not_a_hive_stack(tmp_path: Path) -> None:
    """A process that has the Derby metastore booted holds its dbex.lck; another process is told so."""
    metastore = tmp_path / "metastore_db"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_DERBY, str(tmp_path), str(metastore)], cwd=ROOT,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "booted"
        assert derby_in_use(str(metastore))
        # The nightly job on that metastore: one line before Spark starts, status 75.
        conf = _nightly_toml(tmp_path / "nightly.toml", tmp_path / "tables",
                             f'catalog = "hive"\nwarehouse_dir = "{tmp_path / "sw"}"\nmetastore_dir = "{metastore}"')
        started = time.monotonic()
        job = subprocess.run([sys.executable, "-m", "jobs.nightly", "--conf", str(conf)], check=False, cwd=ROOT,
                             capture_output=True, text=True, timeout=600)
        assert job.returncode == 75, job.stderr[-3000:]
        assert f"embedded Derby metastore {metastore} is in use by another process" in _one_error_line(job.stderr)
        assert time.monotonic() - started < 30 and "SparkContext" not in job.stderr
        spark_config = SparkConfig(catalog="hive", metastore_dir=str(metastore))
        hive_failure = Exception("org.apache.spark.sql.AnalysisException: java.lang.RuntimeException: Unable to "
                                 "instantiate org.apache.hadoop.hive.ql.metadata.SessionHiveMetaStoreClient")
        explained = explain_metastore_failure(hive_failure, spark_config)
        assert explained is not None and f"embedded Derby metastore {metastore} is in use" in str(explained)
        # A shared metastore is not Derby: Hive's error is not rewritten.
        shared = dataclasses.replace(spark_config, extra={"spark.hadoop.hive.metastore.uris": "thrift://m:9083"})
        assert explain_metastore_failure(hive_failure, shared) is None
    finally:
        assert holder.stdin is not None
        holder.stdin.close()  # the holder stops its session and its JVM, which lets go of the database
        holder.wait(timeout=120)
    assert not derby_in_use(str(metastore))


def _nightly_toml(path: Path, location: Path, spark_lines: str) -> Path:
    jars = parse_config({"sources": {"mode": "none"}}).spark.jars_dir
    path.write_text(f'''[sources]
mode = "none"

[tables]
database = "claims_e2e"
location = "{location}"

[spark]
master = "local[1]"
jars_dir = "{jars}"
show_progress = false
{spark_lines}
''')
    return path


def _one_error_line(stderr: str) -> str:
    errors = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in stderr and "at org.apache" not in stderr, stderr[-3000:]
    return errors[0]


# A driver with the embedded Derby metastore booted (the default local configuration), held until killed.
_HOLD_DERBY = """
import sys
from jobs.common.config import Config, SparkConfig, TablesConfig, parse_config
from jobs.common.session import build_session
root, metastore = sys.argv[1], sys.argv[2]
config = Config(tables=TablesConfig(location=root + "/tables"), spark=SparkConfig(
    master="local[1]", catalog="hive", warehouse_dir=root + "/spark-warehouse", metastore_dir=metastore,
    show_progress=False, jars_dir=parse_config({"sources": {"mode": "none"}}).spark.jars_dir,
    extra={"spark.ui.enabled": "false"}))
spark = build_session(config)
spark.sql("SHOW DATABASES").collect()
print("booted", flush=True)
sys.stdin.read()
spark.stop()
from pyspark import SparkContext
SparkContext._gateway.shutdown()
SparkContext._gateway.proc.stdin.close()
SparkContext._gateway.proc.wait(timeout=60)
"""


def test_config_key_for_the_stale_claim_is_checked() -> None:
    from jobs.common.config import ConfigError

    with pytest.raises(ConfigError, match=r"run.lock_stale_hours must be more than 0"):
        parse_config({"sources": {"mode": "none"}, "run": {"lock_stale_hours": 0}})
    assert isinstance(parse_config({"sources": {"mode": "none"}}), Config)
