"""The cluster path as documented: a real Spark standalone cluster on 127.0.0.1 (a master and a worker from the
installed Spark, executors in JVMs of their own), `scripts/package`, then the standalone `spark-submit` command
of conf/cluster.example.toml's header, read from that file, over both shipped samples. The executors' Python
workers must run the interpreter of the shipped environment (dist/cgh-env.tar.gz, unpacked by the executor),
not the driver's .venv; every table must equal a local run's (the embedded default's night on local[2], the
test session's shared sample warehouse), without the columns that name the run.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pyspark
import pytest
from pyspark.sql import SparkSession

from jobs.common.config import Config, load_config
from jobs.common.delta_io import Tables
from jobs.common.session import LOCAL_JIT_OPTIONS
from schemas import GROUP_GENERATIONS, INGEST_RUNS, OFFSET_EVENTS, REBALANCE_STORMS
from tests.spark.sample_warehouse import SampleWarehouse
from tests.spark.test_crash_drills import _assert_same_tables

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
SPARK_HOME = Path(pyspark.__file__).parent
EXAMPLE = ROOT / "conf" / "cluster.example.toml"
#: The documented command's placeholders, replaced by the test's own master and configuration.
MASTER_PLACEHOLDER = "spark://master-host:7077"
CONF_PLACEHOLDER = "--conf conf/cluster.toml"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _clean_env() -> dict[str, str]:
    """The environment of the cluster's daemons: nothing of the driver's venv (no PYSPARK_PYTHON, no .venv on
    PATH), so that an executor could not find the driver's Python by accident; everything on loopback."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV", "PYTHONPATH", "SPARK_HOME")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p)
    env["SPARK_HOME"] = str(SPARK_HOME)
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    return env


@dataclass
class StandaloneCluster:
    master_url: str
    web_url: str
    work_dir: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def alive_workers(self) -> int:
        with urllib.request.urlopen(f"{self.web_url}/json/", timeout=5) as r:
            state = json.load(r)
        return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")

    def stop(self) -> None:
        for p in reversed(self.processes):
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
        for p in reversed(self.processes):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """A master and one worker (2 cores, 2 GiB) of the installed pyspark, each in a session of its own, their
    process groups (executor JVMs and Python workers included) killed at the end. pip's pyspark has no
    sbin/start-master.sh, so the daemon classes are launched directly."""
    root = tmp_path_factory.mktemp("standalone")
    port, web_port, worker_web_port = _free_port(), _free_port(), _free_port()
    cluster = StandaloneCluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{web_port}", root / "work")
    spark_class = str(ROOT / ".venv" / "bin" / "spark-class")
    env = _clean_env()
    try:
        for name, args in (
            ("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                        "--webui-port", str(web_port)]),
            ("worker", ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "2",
                        "--memory", "2g", "--work-dir", str(cluster.work_dir), "--webui-port",
                        str(worker_web_port), cluster.master_url]),
        ):
            with open(root / f"{name}.log", "wb") as log:
                cluster.processes.append(subprocess.Popen([spark_class, *args], cwd=root, env=env, stdout=log,
                                                          stderr=subprocess.STDOUT, start_new_session=True))
        deadline = time.monotonic() + 180
        while True:
            for p, name in zip(cluster.processes, ("master", "worker"), strict=True):
                if p.poll() is not None:
                    raise AssertionError(f"the standalone {name} exited ({p.returncode}):\n"
                                         + (root / f"{name}.log").read_text()[-3000:])
            try:
                if cluster.alive_workers() == 1:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError("no worker registered with the master within 180 s:\n"
                                     + (root / "worker.log").read_text()[-3000:])
            time.sleep(1)
        yield cluster
    finally:
        cluster.stop()


def documented_standalone_command() -> str:
    """The standalone spark-submit command of conf/cluster.example.toml's header (comment lines joined)."""
    lines = [line[1:].strip() for line in EXAMPLE.read_text().splitlines() if line.startswith("#")]
    start = next(i for i, line in enumerate(lines) if line.startswith(f"spark-submit --master {MASTER_PLACEHOLDER}"))
    command = []
    for line in lines[start:]:
        command.append(line.removesuffix("\\").strip())
        if not line.endswith("\\"):
            break
    return " ".join(command)


def _toml(local: Config, root: Path, name: str) -> str:
    """conf/local.toml's inputs and thresholds, with the tables, report and Spark settings of a test warehouse.
    Both runs get the same file but for the location: master and jars_dir are ignored under spark-submit."""
    jars = load_config(None).spark.jars_dir
    logs = "".join(
        f'[[sources.logs]]\ncluster = "{s.cluster}"\nsource = "{s.source}"\npaths = {json.dumps(list(s.paths))}\n'
        f'zone = "{s.zone}"\nbroker_id = {s.broker_id}\nallow_empty = {json.dumps(s.allow_empty)}\n\n'
        for s in local.sources.logs)
    segments = "".join(f'[[sources.segments]]\ncluster = "{s.cluster}"\npath = "{s.path}"\n\n'
                       for s in local.sources.segments)
    sections = ""
    for section in ("storms", "history", "maintenance", "decode", "logs", "run"):
        values = {k: v for k, v in asdict(getattr(local, section)).items()
                  if isinstance(v, (str, int, float, bool))}
        sections += f"[{section}]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in values.items()) + "\n"
    return f'''[sources]
mode = "segments"

{segments}{logs}[tables]
database = "consumer_group_history"
location = "{root / name / "tables"}"

[spark]
master = "local[2]"
catalog = "in-memory"
warehouse_dir = "{root / name / "spark-warehouse"}"
metastore_dir = ""
shuffle_partitions = 2
jars_dir = "{jars}"
show_progress = false

[spark.extra]
"spark.ui.enabled" = "false"
"spark.databricks.delta.snapshotPartitions" = "2"
"spark.driver.memory" = "2g"
"spark.executor.extraJavaOptions" = "{" ".join(LOCAL_JIT_OPTIONS)}"

{sections}[report]
path = "{root / name / "report.html"}"
groups_shown = {local.report.groups_shown}
'''


@dataclass
class PythonWorkers:
    """What /proc shows of the Python processes whose working directory is under the worker's work dir
    (the executors' Python daemons and workers): argv[0], working directory, and the shared objects of
    site-packages they mapped (pyarrow's libraries once a worker decoded a batch)."""

    work_dir: Path
    seen: dict[int, tuple[str, str, set[str]]] = field(default_factory=dict)
    stop: threading.Event = field(default_factory=threading.Event)

    def poll(self) -> None:
        while not self.stop.is_set():
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    cwd = os.readlink(f"/proc/{pid}/cwd")
                    if not cwd.startswith(str(self.work_dir)):
                        continue
                    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                    if b"python" not in argv[0]:
                        continue
                    mapped = {line.split()[-1] for line in Path(f"/proc/{pid}/maps").read_text().splitlines()
                              if "site-packages" in line}
                except OSError:
                    continue
                _, _, before = self.seen.get(int(pid), ("", "", set()))
                self.seen[int(pid)] = (argv[0].decode(), cwd, before | mapped)
            self.stop.wait(0.3)


def _run(args: list[str] | str, log: Path, env: dict[str, str], timeout: int = 900) -> float:
    started = time.monotonic()
    with open(log, "wb") as out:
        job = subprocess.Popen(args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                               start_new_session=True, shell=isinstance(args, str), executable="/bin/bash"
                               if isinstance(args, str) else None)
        try:
            code = job.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
            raise AssertionError(f"{args} did not finish in {timeout} s:\n{log.read_text()[-5000:]}") from None
    assert code == 0, f"{args} exited {code}:\n{log.read_text()[-5000:]}"
    return time.monotonic() - started


def test_nightly_on_a_standalone_cluster_equals_a_local_run(
    cluster: StandaloneCluster, tmp_path: Path, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    package_seconds = _run([str(ROOT / "scripts" / "package")], tmp_path / "package.log", dict(os.environ))
    assert (ROOT / "dist" / "consumer_group_history.zip").is_file() and (ROOT / "dist" / "cgh-env.tar.gz").is_file()

    local_config = load_config(None)
    (tmp_path / "cluster.toml").write_text(_toml(local_config, tmp_path, "cluster"))

    command = documented_standalone_command()
    assert MASTER_PLACEHOLDER in command and command.endswith(CONF_PLACEHOLDER), command
    command = command.replace(MASTER_PLACEHOLDER, cluster.master_url).replace(
        CONF_PLACEHOLDER, f"--conf {tmp_path / 'cluster.toml'}")
    submit_env = _clean_env()
    submit_env.pop("SPARK_HOME")  # spark-submit finds its own (the .venv's pyspark, the worker's too)
    submit_env["PATH"] = f"{ROOT / '.venv' / 'bin'}{os.pathsep}{submit_env['PATH']}"
    # The test's driver and executor JVMs compile as a local run's driver does (LOCAL_JIT_OPTIONS: C2 spent
    # more CPU compiling than the test's JVMs spent running, 228 -> 188 java CPU-s for the test alone with them);
    # spark-submit gives SPARK_SUBMIT_OPTS to the client-mode driver, beside the command's own options.
    submit_env["SPARK_SUBMIT_OPTS"] = " ".join(LOCAL_JIT_OPTIONS)
    workers = PythonWorkers(cluster.work_dir)
    watcher = threading.Thread(target=workers.poll, daemon=True)
    watcher.start()
    try:
        cluster_seconds = _run(command, tmp_path / "cluster.log", submit_env)
    finally:
        workers.stop.set()
        watcher.join()

    with capsys.disabled():
        print(f"\n[cluster test] scripts/package {package_seconds:.0f} s; nightly on the standalone cluster "
              f"(spark-submit, 1 worker, 2 cores) {cluster_seconds:.0f} s wall")

    # The executors ran: one application on the worker, its executor unpacked the environment.
    apps = [d for d in cluster.work_dir.iterdir() if d.name.startswith("app-")]
    assert len(apps) == 1, f"expected one application in {cluster.work_dir}, got {apps}"
    executors = [d for d in apps[0].iterdir() if d.is_dir()]
    assert executors and all((d / "environment" / "pyvenv.cfg").is_file() for d in executors), (
        f"no unpacked environment in the executors' directories {executors}")

    # Their Python was the shipped environment's, and pyarrow was loaded from it, never from the driver's venv.
    assert workers.seen, "no Python process ran in the worker's work directory"
    for pid, (argv0, cwd, mapped) in workers.seen.items():
        assert argv0 == "./environment/bin/python" and Path(cwd).parent == apps[0], (pid, argv0, cwd)
        outside = {m for m in mapped if not m.startswith(f"{cwd}/environment/")}
        assert not outside, f"python {pid} in {cwd} mapped libraries outside its environment: {sorted(outside)}"
    pyarrow_loaders = [pid for pid, (_, cwd, mapped) in workers.seen.items()
                       if any(re.search(r"/site-packages/pyarrow/libarrow\.so", m) for m in mapped)]
    assert pyarrow_loaders, f"no executor Python loaded pyarrow's library: {workers.seen}"

    # The local run to compare with: the embedded default's night on local[2] (conf/local.toml's inputs and
    # thresholds, every stage), which the test session builds once for every test that reads it.
    spark: SparkSession = request.getfixturevalue("spark")
    warehouse: SampleWarehouse = request.getfixturevalue("sample_warehouse")
    assert (warehouse.config.sources, warehouse.config.storms, warehouse.config.history) == (
        local_config.sources, local_config.storms, local_config.history)
    got = Tables(spark, "consumer_group_history", str(tmp_path / "cluster" / "tables"))
    expected = Tables(spark, warehouse.config.tables.database, warehouse.config.tables.location)
    for spec in (GROUP_GENERATIONS, OFFSET_EVENTS, REBALANCE_STORMS):
        assert expected.read(spec).count() > 0, f"the local run wrote no {spec.name}: nothing to compare"
    assert got.read(INGEST_RUNS).count() == expected.read(INGEST_RUNS).count() == 1
    _assert_same_tables(got, expected)
