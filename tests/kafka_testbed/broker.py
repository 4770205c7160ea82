"""Start and stop a single-node Apache Kafka (KRaft) broker from the Maven Central jars.

Why a real broker: the `__consumer_offsets` segments and the coordinator's `server.log` lines are the
project's input, and only a broker writes them the way production clusters do. The broker runs as one
JVM in combined mode (`process.roles=broker,controller`) on 127.0.0.1 with two free ports, its storage
formatted in a temporary directory, started exactly as the distribution's scripts would start it:
`java -cp '.cache/jars/kafka/*' kafka.Kafka server.properties`.

The configuration is chosen for tests that must be quick and must see history:

* `__consumer_offsets` segments are small (8 KiB), so its partitions roll several segments during a
  run and readers meet multi-segment partitions and segments closed while the broker runs. Kafka 4.x
  refuses `segment.bytes` (and so `offsets.topic.segment.bytes`) below 1 MiB; it has a topic config
  meant for tests, `internal.segment.bytes`, which overrides it. We therefore set
  `offsets.topic.segment.bytes` to its minimum, have the broker create `__consumer_offsets` (a
  FindCoordinator request does that) and then set `internal.segment.bytes` on the topic with Kafka's own
  `kafka-configs` command (kafka.admin.ConfigCommand) before any scenario runs;
* `log.cleaner.min.compaction.lag.ms` is a day, so the cleaner (left enabled, as in production) does not
  compact away the history the scenarios just wrote before the tests read it;
* `group.initial.rebalance.delay.ms=0` and low minimum session timeouts / heartbeat intervals (classic
  and KIP-848 groups), so a scenario that waits for a session timeout waits seconds, not minutes;
* log4j2 writes `server.log` with the stock pattern `[%d] %p %m (%c)%n` (and, like the stock config,
  controller and state-change lines to their own files) into a known directory, in UTC.

`KafkaBroker` is a context manager; `stop()` is idempotent, sends SIGTERM (controlled shutdown) and falls
back to SIGKILL, and an `atexit` hook stops brokers an interrupted test session left behind.
"""

from __future__ import annotations

import atexit
import base64
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KAFKA_JAR_DIR = ROOT / ".cache" / "jars" / "kafka"
DEFAULT_JAR_SET = "kafka"      # jvm/kafka/pom.xml: the pinned 4.x release; "kafka-3" is the 3.x one
LOOPBACK = "127.0.0.1"

# The stock Kafka 4.x layout (config/log4j2.yaml: logPattern "[%d] %p %m (%c)%n").
STOCK_LOG_PATTERN = "[%d] %p %m (%c)%n"

# Modest JVM settings: the machine has two cores shared by several people.
DEFAULT_JVM_OPTIONS = (
    "-Xms128m",
    "-Xmx768m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Djava.awt.headless=true",
    "-Duser.timezone=UTC",
)


class BrokerError(RuntimeError):
    """The broker could not be formatted, started or stopped; the message quotes its log."""


def kafka_jar_dir(jar_set: str = DEFAULT_JAR_SET) -> Path:
    """The jar directory of a jar set (jvm/<jar_set>/pom.xml), or a BrokerError that says how to fetch it."""
    path = ROOT / ".cache" / "jars" / jar_set
    if not any(path.glob("kafka-clients-*.jar")):
        raise BrokerError(
            f"no Kafka jars in {path}; run `scripts/bootstrap --kafka` "
            f"(or `python scripts/fetch_jars.py {jar_set}`)"
        )
    return path


def kafka_version(jar_set: str = DEFAULT_JAR_SET) -> str:
    """The Kafka release a jar set holds, read from the kafka-clients jar name (e.g. '4.3.1')."""
    for jar in sorted(kafka_jar_dir(jar_set).glob("kafka-clients-*.jar")):
        match = re.fullmatch(r"kafka-clients-(\d+\.\d+\.\d+)\.jar", jar.name)
        if match:
            return match.group(1)
    raise BrokerError(f"cannot tell the Kafka version from the jars of {jar_set}")


def kafka_major(jar_set: str = DEFAULT_JAR_SET) -> int:
    return int(kafka_version(jar_set).split(".")[0])


def java_command(main_class: str, *args: str, jvm_options: tuple[str, ...] = (),
                 log4j2_config: Path | None = None, jar_set: str = DEFAULT_JAR_SET) -> list[str]:
    """A `java` command line running a class from a Kafka jar set.

    `log4j2_config` is the logging configuration file: log4j2 for Kafka 4.x, log4j 1.2 (reload4j)
    properties for 3.x.
    """
    cmd = ["java", *DEFAULT_JVM_OPTIONS, *jvm_options]
    if log4j2_config is not None:
        if kafka_major(jar_set) >= 4:
            cmd.append(f"-Dlog4j2.configurationFile={log4j2_config}")
        else:
            cmd.append(f"-Dlog4j.configuration=file:{log4j2_config}")
    cmd += ["-cp", str(kafka_jar_dir(jar_set) / "*"), main_class, *args]
    return cmd


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """In a child, before exec: have the kernel send `sig` when the parent goes away (Linux prctl).

    A test run that is killed (CI time-out, Ctrl-C twice, SIGKILL) gets no chance to stop its broker or
    consumers; without this they would keep running and keep ports and CPU. Kernel semantics: the
    signal follows the death of the *thread* that started the child, so start long-lived children from
    a thread that lives as long as they should.
    """
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, int(sig), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except OSError:
        pass  # not Linux/glibc: rely on the explicit stop()


def free_port() -> int:
    """A TCP port on loopback that nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def random_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe Base64 without padding, as Kafka's Uuid prints it.

    Kafka never hands out ids whose string form starts with '-' (it would read as a command-line flag).
    """
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        if not text.startswith("-"):
            return text


def client_log_config(log_file: Path, jar_set: str = DEFAULT_JAR_SET, level: str = "INFO") -> str:
    """The logging configuration of a Java client for the jar set's logging framework."""
    if kafka_major(jar_set) >= 4:
        return client_log4j2_config(log_file, level)
    return "\n".join([
        "log4j.rootLogger=WARN, file",
        "log4j.appender.file=org.apache.log4j.FileAppender",
        f"log4j.appender.file.File={log_file}",
        "log4j.appender.file.layout=org.apache.log4j.PatternLayout",
        f"log4j.appender.file.layout.ConversionPattern={STOCK_LOG_PATTERN}",
        f"log4j.logger.org.apache.kafka.clients.consumer={level}",
        f"log4j.logger.org.apache.kafka.clients.producer={level}",
        "",
    ])


def client_log4j2_config(log_file: Path, level: str = "INFO") -> str:
    """A log4j2 configuration for a Java client (console consumer/producer) writing one file.

    The stock tools configuration logs at WARN, which hides the consumer coordinator's INFO lines
    (join, sync, revoke, assign, leave) that the coordinator-log parser needs, so we log the client
    packages at INFO in the stock layout.
    """
    return "\n".join([
        "status = warn",
        "name = cgh-client",
        "appender.file.type = File",
        "appender.file.name = file",
        f"appender.file.fileName = {log_file}",
        "appender.file.layout.type = PatternLayout",
        f"appender.file.layout.pattern = {STOCK_LOG_PATTERN}",
        "rootLogger.level = WARN",
        "rootLogger.appenderRef.file.ref = file",
        "logger.clients.name = org.apache.kafka.clients.consumer",
        f"logger.clients.level = {level}",
        "logger.producer.name = org.apache.kafka.clients.producer",
        f"logger.producer.level = {level}",
        "",
    ])


def _broker_log4j_config(log_dir: Path) -> str:
    """Kafka 3.x (reload4j): the stock config/log4j.properties layout, into fixed files (no hourly roll)."""
    lines = ["log4j.rootLogger=INFO, kafkaAppender"]
    files = {"kafkaAppender": "server.log", "controllerAppender": "controller.log",
             "stateChangeAppender": "state-change.log", "cleanerAppender": "log-cleaner.log",
             "requestAppender": "kafka-request.log"}
    for name, file_name in files.items():
        lines += [
            f"log4j.appender.{name}=org.apache.log4j.FileAppender",
            f"log4j.appender.{name}.File={log_dir / file_name}",
            f"log4j.appender.{name}.layout=org.apache.log4j.PatternLayout",
            f"log4j.appender.{name}.layout.ConversionPattern={STOCK_LOG_PATTERN}",
        ]
    lines += [
        "log4j.logger.kafka=INFO", "log4j.logger.org.apache.kafka=INFO",
        "log4j.logger.kafka.request.logger=WARN, requestAppender", "log4j.additivity.kafka.request.logger=false",
        "log4j.logger.kafka.network.RequestChannel$=WARN, requestAppender",
        "log4j.additivity.kafka.network.RequestChannel$=false",
        "log4j.logger.org.apache.kafka.controller=INFO, controllerAppender",
        "log4j.additivity.org.apache.kafka.controller=false",
        "log4j.logger.kafka.controller=INFO, controllerAppender", "log4j.additivity.kafka.controller=false",
        "log4j.logger.kafka.log.LogCleaner=INFO, cleanerAppender", "log4j.additivity.kafka.log.LogCleaner=false",
        "log4j.logger.state.change.logger=INFO, stateChangeAppender",
        "log4j.additivity.state.change.logger=false",
    ]
    return "\n".join(lines) + "\n"


def _broker_log4j2_config(log_dir: Path, log_levels: Mapping[str, str] | None = None) -> str:
    """Mirror of the stock broker log4j2 layout: server.log plus controller/state-change/cleaner files.

    `log_levels` raises (or lowers) the level of named loggers that still write to server.log.
    """
    lines = ["status = warn", "name = cgh-broker"]
    files = {
        "server": "server.log",
        "controller": "controller.log",
        "statechange": "state-change.log",
        "cleaner": "log-cleaner.log",
        "request": "kafka-request.log",
    }
    for name, file_name in files.items():
        lines += [
            f"appender.{name}.type = File",
            f"appender.{name}.name = {name}",
            f"appender.{name}.fileName = {log_dir / file_name}",
            f"appender.{name}.layout.type = PatternLayout",
            f"appender.{name}.layout.pattern = {STOCK_LOG_PATTERN}",
        ]
    lines += ["rootLogger.level = INFO", "rootLogger.appenderRef.server.ref = server"]
    routed = {
        "controller": ("org.apache.kafka.controller", "INFO", "controller"),
        "kafkacontroller": ("kafka.controller", "INFO", "controller"),
        "statechange": ("state.change.logger", "INFO", "statechange"),
        "cleaner": ("kafka.log.LogCleaner", "INFO", "cleaner"),
        "cleaner2": ("org.apache.kafka.storage.internals.log.LogCleaner", "INFO", "cleaner"),
        "request": ("kafka.request.logger", "WARN", "request"),
        "requestchannel": ("kafka.network.RequestChannel$", "WARN", "request"),
    }
    for key, (logger, level, appender) in routed.items():
        lines += [
            f"logger.{key}.name = {logger}",
            f"logger.{key}.level = {level}",
            f"logger.{key}.additivity = false",
            f"logger.{key}.appenderRef.{appender}.ref = {appender}",
        ]
    for i, (logger, level) in enumerate((log_levels or {}).items()):
        lines += [f"logger.level{i}.name = {logger}", f"logger.level{i}.level = {level}"]
    return "\n".join(lines) + "\n"


# Segment size of __consumer_offsets during tests (see the module docstring).
CONSUMER_OFFSETS_SEGMENT_BYTES = 8 * 1024

# Broker settings every test bed broker gets (see the module docstring for why).
BASE_SETTINGS: dict[str, str] = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "PLAINTEXT",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "num.partitions": "1",
    "auto.create.topics.enable": "false",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "50",
    "offsets.topic.segment.bytes": "1048576",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "4",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "group.consumer.min.session.timeout.ms": "3000",
    "group.consumer.session.timeout.ms": "8000",
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.heartbeat.interval.ms": "1000",
    "log.cleaner.min.compaction.lag.ms": str(24 * 3600 * 1000),
    "log.flush.interval.messages": "1",
}


class KafkaBroker:
    """One single-node KRaft broker (combined broker + controller) on loopback.

    Attributes:
        work_dir: holds server.properties, logging.properties, `data/` (log.dirs) and `logs/`.
        bootstrap_servers: `127.0.0.1:<port>` of the PLAINTEXT listener.
        version: the Kafka release of the jars.
    """

    def __init__(self, work_dir: Path | None = None, overrides: Mapping[str, str] | None = None,
                 jar_set: str = DEFAULT_JAR_SET, node_id: int = 1, port: int | None = None,
                 controller_port: int | None = None, quorum_voters: str | None = None,
                 cluster_id: str | None = None, jvm_options: tuple[str, ...] = (),
                 log_levels: Mapping[str, str] | None = None) -> None:
        """A single-node broker by default; a cluster (tests/kafka_testbed/cluster.py) passes the node id,
        its ports, the shared `controller.quorum.voters` and the shared cluster id."""
        self._own_work_dir = work_dir is None
        self.work_dir = Path(work_dir or tempfile.mkdtemp(prefix="cgh-kafka-"))
        self.data_dir = self.work_dir / "data"
        self.log_dir = self.work_dir / "logs"
        self.jar_set = jar_set
        self.version = kafka_version(jar_set)
        self.major = kafka_major(jar_set)
        self.node_id = node_id
        self.cluster_id = cluster_id or random_cluster_id()
        self.jvm_options = tuple(jvm_options)
        self.log_levels = dict(log_levels or {})
        self.port = port or free_port()
        self.controller_port = controller_port or free_port()
        self.bootstrap_servers = f"{LOOPBACK}:{self.port}"
        self.settings = dict(BASE_SETTINGS)
        self.settings.update({
            "listeners": f"PLAINTEXT://{LOOPBACK}:{self.port},CONTROLLER://{LOOPBACK}:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{LOOPBACK}:{self.port}",
            "node.id": str(node_id),
            "controller.quorum.voters": quorum_voters or f"{node_id}@{LOOPBACK}:{self.controller_port}",
            "log.dirs": str(self.data_dir),
        })
        if self.major < 4:
            # 3.x accepts small segments directly (no 1 MiB floor, no internal.segment.bytes) and has no
            # share groups.
            self.settings["offsets.topic.segment.bytes"] = str(CONSUMER_OFFSETS_SEGMENT_BYTES)
            for key in [k for k in self.settings if k.startswith("share.")]:
                del self.settings[key]
        self.settings.update(overrides or {})
        self._process: subprocess.Popen[bytes] | None = None
        self._stdout_path = self.log_dir / "kafka-stdout.log"

    # -- files ---------------------------------------------------------------------------------------
    @property
    def server_log(self) -> Path:
        return self.log_dir / "server.log"

    @property
    def properties_file(self) -> Path:
        return self.work_dir / "server.properties"

    def consumer_offsets_dirs(self) -> list[Path]:
        """The `__consumer_offsets-N` partition directories, in partition order."""
        dirs = [p for p in self.data_dir.glob("__consumer_offsets-*") if p.is_dir()]
        return sorted(dirs, key=lambda p: int(p.name.rsplit("-", 1)[1]))

    def consumer_offsets_segments(self, with_data_only: bool = True) -> list[Path]:
        """Every `.log` segment of `__consumer_offsets`, by partition then base offset."""
        segments: list[Path] = []
        for directory in self.consumer_offsets_dirs():
            logs = sorted(directory.glob("*.log"))
            if with_data_only and all(p.stat().st_size == 0 for p in logs):
                continue
            segments += [p for p in logs if not with_data_only or p.stat().st_size > 0]
        return segments

    def _write_config(self) -> None:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.data_dir.mkdir(exist_ok=True)
        self.log_dir.mkdir(exist_ok=True)
        body = "".join(f"{k}={v}\n" for k, v in self.settings.items())
        self.properties_file.write_text("# written by tests/kafka_testbed/broker.py\n" + body)
        if self.major >= 4:
            config = _broker_log4j2_config(self.log_dir, self.log_levels)
        else:
            config = _broker_log4j_config(self.log_dir)
        (self.work_dir / "logging.properties").write_text(config)

    # -- lifecycle -----------------------------------------------------------------------------------
    def format_storage(self) -> None:
        """`kafka-storage.sh format` for a static quorum (`controller.quorum.voters`), with the cluster id."""
        self._write_config()
        cmd = java_command(
            "kafka.tools.StorageTool", "format", "-t", self.cluster_id, "-c", str(self.properties_file),
            log4j2_config=self.work_dir / "logging.properties", jar_set=self.jar_set,
        )
        done = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=180)
        if done.returncode != 0:
            raise BrokerError(f"kafka-storage format failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")

    def start(self, timeout: float = 120.0, prepare_consumer_offsets: bool = True) -> KafkaBroker:
        """Format storage, start the JVM, wait until the broker says it has started, prepare the topic."""
        if self._process is not None:
            raise BrokerError("broker already started")
        self.format_storage()
        self.launch()
        try:
            self._wait_started(timeout)
            if prepare_consumer_offsets:
                self.prepare_consumer_offsets()
        except BaseException:
            self.stop()
            raise
        return self

    def launch(self) -> None:
        """Start the JVM on formatted storage (in its own process group) without waiting for it."""
        if self._process is not None:
            raise BrokerError("broker already started")
        cmd = java_command(
            "kafka.Kafka", str(self.properties_file),
            jvm_options=(*self.jvm_options, f"-Dkafka.logs.dir={self.log_dir}"),
            log4j2_config=self.work_dir / "logging.properties", jar_set=self.jar_set,
        )
        with open(self._stdout_path, "ab") as out:
            self._process = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                preexec_fn=lambda: die_with_parent(signal.SIGTERM),  # noqa: PLW1509 - prctl in the child, before exec
            )
        _LIVE.add(self)

    def _wait_started(self, timeout: float) -> None:
        assert self._process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise BrokerError(f"broker exited with {self._process.returncode}:\n{self._tail()}")
            if self.started_once() and _port_open(self.port):
                return
            time.sleep(0.25)
        raise BrokerError(f"broker did not start within {timeout:.0f}s:\n{self._tail()}")

    def prepare_consumer_offsets(self, segment_bytes: int = CONSUMER_OFFSETS_SEGMENT_BYTES,
                                 timeout: float = 60.0, bootstrap_servers: str | None = None) -> None:
        """Have the broker create `__consumer_offsets`, then make its segments roll every `segment_bytes`."""
        prepare_consumer_offsets(bootstrap_servers or self.bootstrap_servers, self.jar_set, segment_bytes, timeout)

    def started_once(self) -> bool:
        """The broker's server.log says it has started (at least once since it was formatted)."""
        return self.server_log.exists() and "Kafka Server started" in self.server_log.read_text(errors="replace")

    def is_running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def stop(self, timeout: float = 45.0) -> None:
        """Controlled shutdown (SIGTERM), SIGKILL after `timeout`. Safe to call twice."""
        process, self._process = self._process, None
        _LIVE.discard(self)
        if process is None or process.poll() is not None:
            return
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=15)

    def cleanup(self) -> None:
        """Stop the broker and remove the work directory if this object created it."""
        self.stop()
        if self._own_work_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def _tail(self, lines: int = 40) -> str:
        parts = []
        for path in (self._stdout_path, self.server_log):
            if path.exists():
                text = path.read_text(errors="replace").splitlines()[-lines:]
                parts.append(f"--- {path.name}\n" + "\n".join(text))
        return "\n".join(parts)

    def __enter__(self) -> KafkaBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.is_running() else "stopped"
        return f"KafkaBroker({self.version}, {self.bootstrap_servers}, {state}, {self.work_dir})"


def prepare_consumer_offsets(bootstrap_servers: str, jar_set: str = DEFAULT_JAR_SET,
                             segment_bytes: int = CONSUMER_OFFSETS_SEGMENT_BYTES, timeout: float = 60.0) -> None:
    """Have the broker(s) create `__consumer_offsets`, then (4.x) make its segments roll every `segment_bytes`."""
    from kafka import KafkaAdminClient  # test-only dependency, imported where it is needed

    admin = KafkaAdminClient(bootstrap_servers=bootstrap_servers, client_id="cgh-testbed-admin")
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                # FindCoordinator for a group makes the broker auto-create __consumer_offsets.
                admin.describe_consumer_groups(["cgh-testbed-bootstrap"])
                break
            except Exception:  # CoordinatorNotAvailable until the topic is ready
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
    finally:
        admin.close()
    if kafka_major(jar_set) < 4:
        return  # offsets.topic.segment.bytes already is small
    cmd = java_command(
        "kafka.admin.ConfigCommand", "--bootstrap-server", bootstrap_servers, "--alter",
        "--entity-type", "topics", "--entity-name", "__consumer_offsets",
        "--add-config", f"internal.segment.bytes={segment_bytes}",
        jvm_options=("-Dlog4j2.level=WARN",), jar_set=jar_set,
    )
    done = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise BrokerError(f"kafka-configs failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")


def java_hash_partition(key: str, partitions: int) -> int:
    """Kafka's partition of a group id in `__consumer_offsets`: `Utils.abs(groupId.hashCode()) % partitions`.

    String.hashCode is `s[0]*31^(n-1) + ... + s[n-1]` over UTF-16 code units in 32-bit arithmetic;
    Utils.abs maps Integer.MIN_VALUE to 0.
    """
    h = 0
    units = key.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i:i + 2], "big")) & 0xFFFFFFFF
    if h >= 0x80000000:
        h -= 0x100000000
    return (0 if h == -0x80000000 else abs(h)) % partitions


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=1):
            return True
    except OSError:
        return False


_LIVE: set[KafkaBroker] = set()


@atexit.register
def _stop_leftover_brokers() -> None:
    for broker in list(_LIVE):
        broker.stop(timeout=20)

