"""A three-node Apache Kafka (KRaft) cluster on loopback, from the same Maven jars as the single broker.

Why: production clusters replicate `__consumer_offsets` (replication factor 3) and move a group's
coordinator when the leadership of its offsets partition moves; a single broker never does either. Each
node here is a `KafkaBroker` (tests/kafka_testbed/broker.py) in combined mode (`broker,controller`), so
the three form one controller quorum (`controller.quorum.voters` lists all three) and each keeps its own
log directory (`<work>/broker-<id>/data`) and its own `server.log` (stock layout, UTC). Heaps are small
and every JVM uses the serial collector: three brokers must fit on a 2-core CI runner.

`KafkaCluster` is a context manager. Every JVM runs in its own process group; `stop()` stops them all
(SIGTERM, then SIGKILL) and the broker module's `atexit` hook stops what an interrupted session left.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .broker import (
    DEFAULT_JAR_SET,
    LOOPBACK,
    BrokerError,
    KafkaBroker,
    free_port,
    java_hash_partition,
    prepare_consumer_offsets,
    random_cluster_id,
)

NODE_IDS = (1, 2, 3)

#: Every node of the cluster gets these on top of broker.BASE_SETTINGS.
CLUSTER_SETTINGS: dict[str, str] = {
    "offsets.topic.replication.factor": "3",
    "default.replication.factor": "3",
    "min.insync.replicas": "1",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "3",
    "share.coordinator.state.topic.min.isr": "1",
    # A stopped node is fenced by the controller within seconds (default 9 s), so leadership moves fast.
    "broker.session.timeout.ms": "6000",
    "broker.heartbeat.interval.ms": "1000",
    # No preferred-leader election while the scenarios run: a failover stays where it went.
    "auto.leader.rebalance.enable": "false",
    # Offsets of an empty group expire after the minimum retention (1 minute), checked every 5 s.
    "offsets.retention.minutes": "1",
    "offsets.retention.check.interval.ms": "5000",
}

#: Loggers whose INFO lines say nothing about groups or replication and would make each broker's server.log
#: of the captured sample several times larger: the full configuration dumped at every (re)start
#: ("KafkaConfig values: ..."), and per-segment log housekeeping (rolls, snapshots, loading local logs).
QUIET_LOGGERS = {
    "org.apache.kafka.common.config.AbstractConfig": "WARN",
    "org.apache.kafka.storage.internals.log": "WARN",
    "kafka.log.LogManager": "WARN",
}

#: Three JVMs on two cores: a third of the single broker's heap each, and the serial collector.
CLUSTER_JVM_OPTIONS = ("-Xms96m", "-Xmx320m", "-XX:+UseSerialGC", "-Xss512k")


class KafkaCluster:
    """Three combined KRaft nodes (ids 1..3) on 127.0.0.1 sharing one cluster id and controller quorum.

    Attributes:
        brokers: node id -> KafkaBroker (its `work_dir` is `<work_dir>/broker-<id>`).
        bootstrap_servers: every node's PLAINTEXT listener, comma-separated.
    """

    def __init__(self, work_dir: Path | None = None, overrides: Mapping[str, str] | None = None,
                 jar_set: str = DEFAULT_JAR_SET, node_ids: tuple[int, ...] = NODE_IDS) -> None:
        self._own_work_dir = work_dir is None
        self.work_dir = Path(work_dir or tempfile.mkdtemp(prefix="cgh-kafka-cluster-"))
        self.jar_set = jar_set
        self.cluster_id = random_cluster_id()
        ports = {n: (free_port(), free_port()) for n in node_ids}
        voters = ",".join(f"{n}@{LOOPBACK}:{ports[n][1]}" for n in node_ids)
        settings = {**CLUSTER_SETTINGS, **(overrides or {})}
        self.brokers: dict[int, KafkaBroker] = {
            n: KafkaBroker(self.work_dir / f"broker-{n}", settings, jar_set=jar_set, node_id=n, port=ports[n][0],
                           controller_port=ports[n][1], quorum_voters=voters, cluster_id=self.cluster_id,
                           jvm_options=CLUSTER_JVM_OPTIONS, log_levels=QUIET_LOGGERS)
            for n in node_ids
        }
        # JVMs die with the thread that started them (broker.die_with_parent): a node restarted from a
        # scenario's worker thread would be stopped when that thread ends. All launches go through this
        # one thread, which lives until stop().
        self._launcher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cgh-cluster-launcher")
        first = self.brokers[node_ids[0]]
        self.version = first.version
        self.major = first.major
        self.settings = first.settings
        self.bootstrap_servers = ",".join(b.bootstrap_servers for b in self.brokers.values())

    def start(self, timeout: float = 180.0) -> KafkaCluster:
        """Format every node, start all JVMs at once (the quorum needs a majority), wait, prepare the topic."""
        try:
            for broker in self.brokers.values():
                broker.format_storage()
            for broker in self.brokers.values():
                self._launch(broker)
            deadline = time.monotonic() + timeout
            for broker in self.brokers.values():
                broker._wait_started(max(1.0, deadline - time.monotonic()))
            prepare_consumer_offsets(self.bootstrap_servers, self.jar_set)
            self.wait_replicated("__consumer_offsets", max(30.0, deadline - time.monotonic()))
        except BaseException:
            self.stop()
            raise
        return self

    # -- a node's lifecycle ----------------------------------------------------------------------------
    def _launch(self, broker: KafkaBroker) -> None:
        self._launcher.submit(broker.launch).result()

    def stop_broker(self, node_id: int, timeout: float = 45.0) -> None:
        """Controlled shutdown of one node: its partitions' leadership moves to the others."""
        self.brokers[node_id].stop(timeout)

    def restart_broker(self, node_id: int, timeout: float = 120.0) -> None:
        """Start a stopped node again on its existing storage; it rejoins as a follower and catches up."""
        broker = self.brokers[node_id]
        started = broker.server_log.read_text(errors="replace").count("Kafka Server started")
        self._launch(broker)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not broker.is_running():
                raise BrokerError(f"node {node_id} exited on restart:\n{broker._tail()}")
            if broker.server_log.read_text(errors="replace").count("Kafka Server started") > started:
                return
            time.sleep(0.25)
        raise BrokerError(f"node {node_id} did not restart within {timeout:.0f}s:\n{broker._tail()}")

    def running(self) -> list[int]:
        return [n for n, b in self.brokers.items() if b.is_running()]

    # -- metadata --------------------------------------------------------------------------------------
    def partition_state(self, topic: str) -> dict[int, dict[str, object]]:
        """partition -> {"leader", "replicas", "isr"}, from a live node's metadata (kafka-python admin)."""
        from kafka import KafkaAdminClient

        servers = ",".join(self.brokers[n].bootstrap_servers for n in self.running())
        admin = KafkaAdminClient(bootstrap_servers=servers, client_id="cgh-cluster-admin")
        try:
            described = admin.describe_topics([topic])
        finally:
            admin.close()
        return {p["partition"]: {"leader": p["leader"], "replicas": list(p["replicas"]), "isr": list(p["isr"])}
                for p in described[0]["partitions"]}

    def offsets_partition_of(self, group_id: str) -> int:
        """The `__consumer_offsets` partition of a group: Kafka's `abs(groupId.hashCode()) % partitions`."""
        return java_hash_partition(group_id, int(self.settings["offsets.topic.num.partitions"]))

    def coordinator_of(self, group_id: str) -> int:
        """The node leading the group's offsets partition: its group coordinator."""
        return int(self.partition_state("__consumer_offsets")[self.offsets_partition_of(group_id)]["leader"])

    def wait_replicated(self, topic: str, timeout: float = 60.0) -> None:
        """Until every partition of `topic` has all of its replicas in sync."""
        deadline = time.monotonic() + timeout
        state: dict[int, dict[str, object]] = {}
        while time.monotonic() < deadline:
            try:
                state = self.partition_state(topic)
            except Exception:  # noqa: BLE001 - metadata not there yet
                state = {}
            if state and all(sorted(s["isr"]) == sorted(s["replicas"]) and len(s["replicas"]) == len(self.brokers)
                             for s in state.values()):
                return
            time.sleep(0.5)
        raise BrokerError(f"{topic} is not fully replicated after {timeout:.0f}s: {state}")

    def wait_leader_moved(self, partition: int, away_from: int, timeout: float = 60.0) -> int:
        """Until `__consumer_offsets-<partition>` has a live leader other than `away_from`; returns it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                leader = int(self.partition_state("__consumer_offsets")[partition]["leader"])
            except Exception:  # noqa: BLE001 - the stopped node may be the one we asked
                leader = -1
            if leader not in (-1, away_from):
                return leader
            time.sleep(0.3)
        raise BrokerError(f"__consumer_offsets-{partition} still led by {away_from} after {timeout:.0f}s")

    # -- files -----------------------------------------------------------------------------------------
    def server_logs(self) -> dict[int, Path]:
        return {n: b.server_log for n, b in self.brokers.items()}

    # -- lifecycle -------------------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop every node at once (idempotent): one by one, the last ones would wait for a lost quorum."""
        threads = [threading.Thread(target=b.stop, kwargs={"timeout": 30}, daemon=True) for b in self.brokers.values()]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        self._launcher.shutdown(wait=False)

    def cleanup(self) -> None:
        self.stop()
        if self._own_work_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def __enter__(self) -> KafkaCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"KafkaCluster({self.version}, {self.bootstrap_servers}, running={self.running()}, {self.work_dir})"
