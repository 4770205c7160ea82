"""Consumer-group scenarios with real clients, each writing down the history it produced.

Every scenario drives one consumer group (its own group id and topic) through a known sequence of
events: members joining, leaving with a LeaveGroup, being killed (session timeout), exceeding
`max.poll.interval.ms`, static members restarting, transactional offset commits, a group deletion, a
KIP-848 group. The clients are kafka-python where it can (eager assignors range, roundrobin, sticky;
transactions; admin) and Kafka's own Java console consumer from the jar set where kafka-python cannot
(static membership, cooperative-sticky, `group.protocol=consumer`).

What a scenario writes down is its *own* knowledge, never a decoding of `__consumer_offsets`: what it
did (actions with UTC times), and for every generation the members it saw stable in it, as the clients
themselves reported it (kafka-python's coordinator state; the Java client's "Successfully synced group in
generation Generation{...}" / KIP-848 "transitioned ... to STABLE" log lines), the assignment each member
received, and the cause the scenario provoked. A scenario that sees a generation it cannot account for
fails (ScenarioError) rather than record a guess. Tests compare these records with what the decoder and
Kafka's dump-log tool read from the segments.

The expected history of a classic group is the list of `generations`; causes use this vocabulary:
`group_created` (generation 0: the first JoinGroup creates the group, and the Kafka 4.x coordinator
stores it, empty, before the first rebalance completes), `join` (a new member joined), `leave_group` (a
member closed and sent LeaveGroup), `session_timeout` (a member stopped heartbeating: killed, or a static
member stopped), `max_poll_interval_exceeded` (a member stopped polling and left), `rejoin` (that member
polled again), `cooperative_follow_up` (the second round of an incremental cooperative rebalance), and
`join+session_timeout` (a crash-looping member's new incarnation joined while the dead one was still in
the group; the rebalance completed when the dead one's session expired). When the last member leaves,
the generation still advances, with no members and no protocol. A static member restarting within its
session timeout is not a generation: it is listed under `static_restarts`.

Scenarios run concurrently (each on its own group), so the whole set takes about as long as the slowest
one; session timeouts are 6 s (10 s for static members) and heartbeats 1 s.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka import errors as Errors
from kafka.admin import NewTopic
from kafka.structs import OffsetAndMetadata

from .broker import DEFAULT_JAR_SET, ROOT, client_log_config, die_with_parent, java_command, kafka_major, kafka_version
from .member import ASSIGNORS, PYTHON_LOG_FORMAT, member_view

log = logging.getLogger(__name__)

SESSION_TIMEOUT_MS = 6000
STATIC_SESSION_TIMEOUT_MS = 10000
HEARTBEAT_INTERVAL_MS = 1000
DEFAULT_MAX_POLL_INTERVAL_MS = 60000
PARTITIONS_PER_TOPIC = 6
SETTLE_SECONDS = 2.0          # a group must look the same for this long to count as stable
STABLE_TIMEOUT_SECONDS = 60.0
JAVA_COOPERATIVE_STICKY = "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"
JAVA_RANGE = "org.apache.kafka.clients.consumer.RangeAssignor"


class ScenarioError(AssertionError):
    """The group did something the scenario cannot account for; its record would be a guess."""


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


# ------------------------------------------------------------------------------------------------
# What a scenario records
# ------------------------------------------------------------------------------------------------
@dataclass
class GenerationRecord:
    """One generation of a classic group, as the scenario's clients saw it."""

    generation: int
    cause: str
    trigger: str | None                      # client id of the member whose action caused it
    members: list[str]                       # client ids, sorted
    member_ids: dict[str, str]               # client id -> member id reported by the client
    group_instance_ids: dict[str, str]       # client id -> group.instance.id (static members only)
    assignment: dict[str, list[list[Any]]]   # client id -> sorted [topic, partition]
    protocol: str | None                     # the assignor the group chose, None when empty
    observed_at: str = field(default_factory=utc_now)


@dataclass
class ScenarioRecord:
    name: str
    group_id: str
    description: str
    client: str
    group_protocol: str                      # "classic" or "consumer" (KIP-848)
    protocol_type: str | None
    assignor: str | None
    topics: dict[str, int]
    generations: list[GenerationRecord] = field(default_factory=list)
    static_restarts: list[dict[str, Any]] = field(default_factory=list)
    consumer_group_steps: list[dict[str, Any]] = field(default_factory=list)   # KIP-848 groups
    transactions: list[dict[str, Any]] = field(default_factory=list)
    committed_offsets: dict[str, int] = field(default_factory=dict)           # "topic-p" -> offset, via admin
    deleted: bool = False
    coordinator_failovers: list[dict[str, Any]] = field(default_factory=list)   # multi-broker scenarios
    expired_offsets: list[dict[str, Any]] = field(default_factory=list)
    fenced_members: list[dict[str, Any]] = field(default_factory=list)
    final_state: str | None = None
    actions: list[dict[str, str]] = field(default_factory=list)
    started_at: str = field(default_factory=utc_now)
    finished_at: str | None = None

    def act(self, what: str) -> None:
        self.actions.append({"at": utc_now(), "action": what})
        log.info("[%s] %s", self.name, what)


# ------------------------------------------------------------------------------------------------
# Members
# ------------------------------------------------------------------------------------------------
@dataclass
class MemberView:
    generation: int
    member_id: str
    protocol: str | None
    stable: bool
    assignment: list[list[Any]]


class Member:
    """A group member driven by a scenario; subclasses differ in the client that runs it."""

    client_id: str
    group_instance_id: str | None = None

    def view(self) -> MemberView | None:
        raise NotImplementedError

    def history(self) -> dict[int, MemberView]:
        """Every generation this member synced into, as it reported it."""
        raise NotImplementedError

    def alive(self) -> bool:
        raise NotImplementedError


class PythonThreadMember(Member):
    """A kafka-python KafkaConsumer polling in its own thread; close() sends LeaveGroup."""

    def __init__(self, ctx: ScenarioContext, group: str, client_id: str, topics: list[str], assignor: str,
                 max_poll_interval_ms: int = DEFAULT_MAX_POLL_INTERVAL_MS) -> None:
        self.client_id = client_id
        self._consumer = KafkaConsumer(
            *topics,
            bootstrap_servers=ctx.bootstrap_servers,
            group_id=group,
            client_id=client_id,
            partition_assignment_strategy=[ASSIGNORS[assignor]],
            session_timeout_ms=SESSION_TIMEOUT_MS,
            heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
            max_poll_interval_ms=max_poll_interval_ms,
            auto_offset_reset="earliest",
            enable_auto_commit=True,
            auto_commit_interval_ms=2000,
        )
        self._lock = threading.Lock()
        self._view: MemberView | None = None
        self._history: dict[int, MemberView] = {}
        self._stop = threading.Event()
        self._stall_until = 0.0
        self._thread = threading.Thread(target=self._run, name=client_id, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                if time.monotonic() < self._stall_until:
                    time.sleep(0.05)       # not polling: this is how max.poll.interval.ms is exceeded
                    continue
                self._consumer.poll(timeout_ms=200)
                view = MemberView(**member_view(self._consumer))
                with self._lock:
                    self._view = view
                    if view.stable and view.generation > 0:
                        self._history.setdefault(view.generation, view)
        finally:
            self._consumer.close()        # commits, then LeaveGroup

    def stall(self, seconds: float) -> None:
        """Stop polling for `seconds` (the heartbeat thread keeps running, as in a slow handler)."""
        self._stall_until = time.monotonic() + seconds

    def view(self) -> MemberView | None:
        with self._lock:
            return self._view

    def history(self) -> dict[int, MemberView]:
        with self._lock:
            return dict(self._history)

    def alive(self) -> bool:
        return self._thread.is_alive()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        if self._thread.is_alive():
            raise ScenarioError(f"{self.client_id} did not close within 30 s")


class PythonProcessMember(Member):
    """A kafka-python member in a child process (tests/kafka_testbed/member.py), killed with SIGKILL."""

    def __init__(self, ctx: ScenarioContext, group: str, client_id: str, topics: list[str], assignor: str,
                 log_name: str) -> None:
        self.client_id = client_id
        cmd = [sys.executable, "-m", "tests.kafka_testbed.member", "--bootstrap-servers", ctx.bootstrap_servers,
               "--group", group, "--client-id", client_id, "--assignor", assignor,
               "--session-timeout-ms", str(SESSION_TIMEOUT_MS),
               "--heartbeat-interval-ms", str(HEARTBEAT_INTERVAL_MS),
               "--log-file", str(ctx.client_log_dir / f"{log_name}.log")]
        for topic in topics:
            cmd += ["--topic", topic]
        self._process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=ROOT,
                                         env={**os.environ, "PYTHONPATH": str(ROOT)}, text=True,
                                         preexec_fn=die_with_parent)  # noqa: PLW1509 - prctl in the child
        ctx.track(self._process)
        self._lock = threading.Lock()
        self._view: MemberView | None = None
        self._history: dict[int, MemberView] = {}
        self._reader = threading.Thread(target=self._read, name=f"{client_id}-reader", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            view = MemberView(**json.loads(line))
            with self._lock:
                self._view = view
                if view.stable and view.generation > 0:
                    self._history.setdefault(view.generation, view)

    def view(self) -> MemberView | None:
        with self._lock:
            return self._view if self.alive() else None

    def history(self) -> dict[int, MemberView]:
        with self._lock:
            return dict(self._history)

    def alive(self) -> bool:
        return self._process.poll() is None

    def kill(self) -> None:
        """SIGKILL: no LeaveGroup, no commit, sockets dropped by the kernel."""
        self._process.send_signal(signal.SIGKILL)
        self._process.wait(timeout=10)
        self._reader.join(timeout=5)


_SYNCED = re.compile(r"Successfully synced group in generation Generation\{generationId=(-?\d+), "
                     r"memberId='([^']*)', protocol='([^']*)'\}")
_REJOINING = re.compile(r"\(Re-\)joining group|Request joining group due to|Revoke previously assigned")
# The full assignment of a classic member, logged by every assignor after each SyncGroup ("Adding newly
# assigned partitions" lists only the added ones under cooperative rebalancing).
_ASSIGNED = re.compile(r"Notifying assignor about the new Assignment\(partitions=\[([^\]]*)\]")
# The target assignment a KIP-848 member reconciles to ("Reconciling assignment ..." block).
_RECONCILED = re.compile(r"^\tAssigned partitions:\s+\[([^\]]*)\]")
_CG_TRANSITION = re.compile(r"Member (\S+) with epoch (-?\d+) transitioned from (\w+) to (\w+)")
# The leader's own account of a round: every member id with the partitions it sent in SyncGroup, which
# is exactly what the coordinator stores in the round's GroupMetadata record.
_FINISHED = re.compile(r"Finished assignment for group at generation (-?\d+): \{(.*)\}")
_FINISHED_MEMBER = re.compile(r"([^\s,=]+)=Assignment\(partitions=\[([^\]]*)\]")


def _partitions(text: str) -> list[list[Any]]:
    """`[t-0, t-1]` as printed by TopicPartition.toString -> [["t", 0], ["t", 1]]."""
    out: list[list[Any]] = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        topic, _, partition = item.rpartition("-")
        out.append([topic, int(partition)])
    return sorted(out)


class JavaConsoleMember(Member):
    """Kafka's own console consumer (org.apache.kafka.tools.consumer.ConsoleConsumer) from the jar set.

    Its view of the group is read from its own INFO log, which the client writes in the stock layout to
    `<client log dir>/<log name>.log` (also part of the captured sample). SIGTERM runs its shutdown hook:
    a dynamic member commits and leaves the group, a static member commits and stays until its session
    times out (KIP-345).
    """

    def __init__(self, ctx: ScenarioContext, group: str, client_id: str, topic: str, log_name: str,
                 properties: dict[str, str]) -> None:
        self.client_id = client_id
        self.group_instance_id = properties.get("group.instance.id")
        self.log_file = ctx.client_log_dir / f"{log_name}.log"
        config = ctx.client_log_dir / f".{log_name}.logging.properties"
        config.write_text(client_log_config(self.log_file, ctx.jar_set))
        args = ["--bootstrap-server", ctx.bootstrap_servers, "--topic", topic, "--group", group]
        # 4.x renamed --consumer-property to --command-property (the old name still works, with a warning).
        flag = "--command-property" if ctx.major >= 4 else "--consumer-property"
        for key, value in {"client.id": client_id, "auto.offset.reset": "earliest",
                           "auto.commit.interval.ms": "2000", **properties}.items():
            args += [flag, f"{key}={value}"]
        self._offset = self.log_file.stat().st_size if self.log_file.exists() else 0
        self._process = subprocess.Popen(
            java_command("org.apache.kafka.tools.consumer.ConsoleConsumer", *args, log4j2_config=config,
                         jar_set=ctx.jar_set),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
            start_new_session=True, preexec_fn=die_with_parent,  # noqa: PLW1509 - prctl in the child
        )
        ctx.track(self._process)

    def _lines(self) -> list[str]:
        if not self.log_file.exists():
            return []
        with open(self.log_file, encoding="utf-8", errors="replace") as handle:
            handle.seek(self._offset)
            return handle.read().splitlines()

    def history(self) -> dict[int, MemberView]:
        history: dict[int, MemberView] = {}
        current: MemberView | None = None
        for line in self._lines():
            synced = _SYNCED.search(line)
            if synced:
                current = MemberView(int(synced.group(1)), synced.group(2), synced.group(3), True, [])
                history[current.generation] = current
                continue
            assigned = _ASSIGNED.search(line)
            if assigned and current is not None and not current.assignment:
                current.assignment = _partitions(assigned.group(1))
        return history

    def leader_assignments(self) -> dict[int, dict[str, list[list[Any]]]]:
        """The rounds this member led: generation -> member id -> the assignment it computed."""
        rounds: dict[int, dict[str, list[list[Any]]]] = {}
        for line in self._lines():
            finished = _FINISHED.search(line)
            if finished:
                rounds[int(finished.group(1))] = {
                    m.group(1): _partitions(m.group(2)) for m in _FINISHED_MEMBER.finditer(finished.group(2))
                }
        return rounds

    def view(self) -> MemberView | None:
        if not self.alive():
            return None
        last: MemberView | None = None
        stable = False
        for line in self._lines():
            synced = _SYNCED.search(line)
            if synced:
                last, stable = MemberView(int(synced.group(1)), synced.group(2), synced.group(3), True, []), True
            elif _REJOINING.search(line):
                stable = False
            elif last is not None:
                assigned = _ASSIGNED.search(line)
                if assigned:
                    last.assignment = _partitions(assigned.group(1))
        if last is None:
            return None
        last.stable = stable
        return last

    def consumer_group_view(self) -> dict[str, Any] | None:
        """For `group.protocol=consumer`: member id, last state, last reconciled assignment."""
        member_id, state, epoch, assignment = None, None, None, None
        for line in self._lines():
            transition = _CG_TRANSITION.search(line)
            if transition:
                member_id, epoch, state = transition.group(1), int(transition.group(2)), transition.group(4)
                continue
            assigned = _RECONCILED.search(line)
            if assigned:
                assignment = _partitions(assigned.group(1))
        if member_id is None:
            return None
        return {"member_id": member_id, "state": state, "epoch": epoch, "assignment": assignment or []}

    def alive(self) -> bool:
        return self._process.poll() is None

    def stop(self) -> None:
        """SIGTERM and wait: the console consumer's shutdown hook closes the consumer."""
        if self.alive():
            os.killpg(self._process.pid, signal.SIGTERM)
        self._process.wait(timeout=60)


#: Errors an admin request gets while a group's coordinator moves to another node (retried).
_COORDINATOR_MOVING = (Errors.NotCoordinatorError, Errors.CoordinatorNotAvailableError,
                       Errors.CoordinatorLoadInProgressError, Errors.KafkaConnectionError, Errors.NodeNotReadyError,
                       Errors.KafkaTimeoutError, Errors.RequestTimedOutError)


# ------------------------------------------------------------------------------------------------
# The context shared by scenarios
# ------------------------------------------------------------------------------------------------
class ScenarioContext:
    """Connection to the broker, topic set-up, process bookkeeping and the client log directory."""

    def __init__(self, bootstrap_servers: str, client_log_dir: Path, jar_set: str = DEFAULT_JAR_SET,
                 cluster: Any = None) -> None:
        """`cluster`: the KafkaCluster (tests/kafka_testbed/cluster.py) the multi-broker scenarios act on."""
        self.bootstrap_servers = bootstrap_servers
        self.cluster = cluster
        self.replication_factor = len(cluster.brokers) if cluster is not None else 1
        self.jar_set = jar_set
        self.version = kafka_version(jar_set)
        self.major = kafka_major(jar_set)
        self.client_log_dir = client_log_dir
        client_log_dir.mkdir(parents=True, exist_ok=True)
        self.admin = KafkaAdminClient(bootstrap_servers=bootstrap_servers, client_id="cgh-scenario-admin")
        self.producer = KafkaProducer(bootstrap_servers=bootstrap_servers, client_id="cgh-scenario-producer")
        self._admin_lock = threading.Lock()
        self._processes: list[subprocess.Popen[Any]] = []

    def track(self, process: subprocess.Popen[Any]) -> None:
        self._processes.append(process)

    def create_topic(self, name: str, partitions: int = PARTITIONS_PER_TOPIC, messages: int = 60) -> None:
        with self._admin_lock:
            self.admin.create_topics([NewTopic(name, partitions, self.replication_factor)])
        for i in range(messages):
            self.producer.send(name, key=f"k{i}".encode(), value=f"message {i}".encode(), partition=i % partitions)
        self.producer.flush()

    def _admin_call(self, call: Callable[[], Any], timeout: float = 30.0) -> Any:
        """An admin request, retried while a coordinator moves (a node of the cluster stopped)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                with self._admin_lock:
                    return call()
            except _COORDINATOR_MOVING:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def describe(self, group: str) -> Any:
        return self._admin_call(lambda: self.admin.describe_consumer_groups([group])[0])

    def committed_offsets(self, group: str) -> dict[str, int]:
        offsets = self._admin_call(lambda: self.admin.list_consumer_group_offsets(group))
        return {f"{tp.topic}-{tp.partition}": meta.offset for tp, meta in sorted(offsets.items())}

    def close(self) -> None:
        for process in self._processes:
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    process.kill()
                process.wait(timeout=10)
        self.producer.close()
        self.admin.close()


# ------------------------------------------------------------------------------------------------
# Observing a classic group
# ------------------------------------------------------------------------------------------------
class GroupTracker:
    """Waits for a classic group to settle and records each generation with its cause."""

    def __init__(self, ctx: ScenarioContext, record: ScenarioRecord) -> None:
        self.ctx = ctx
        self.record = record
        self.members: dict[str, Member] = {}
        self.retired: list[Member] = []       # members gone, still holding their history
        self.last_generation = 0

    def add(self, member: Member) -> Member:
        if not self.record.generations and self.ctx.major >= 4:
            # The first JoinGroup creates the group; Kafka 4.x's group coordinator stores the new, empty
            # group at generation 0 before the first rebalance completes (3.x's Scala one does not).
            self.record.generations.append(GenerationRecord(
                generation=0, cause="group_created", trigger=member.client_id, members=[], member_ids={},
                group_instance_ids={}, assignment={}, protocol=None,
            ))
        self.members[member.client_id] = member
        return member

    def remove(self, client_id: str) -> Member:
        member = self.members.pop(client_id)
        self.retired.append(member)
        return member

    def wait_stable(self, timeout: float = STABLE_TIMEOUT_SECONDS) -> int:
        """Block until every current member reports the same stable generation and the broker says
        Stable with exactly these client ids, unchanged for SETTLE_SECONDS. Returns the generation."""
        deadline = time.monotonic() + timeout
        settled_since: float | None = None
        last_key: tuple[Any, ...] | None = None
        while time.monotonic() < deadline:
            key = self._stable_key()
            if key is not None and key == last_key:
                if settled_since is not None and time.monotonic() - settled_since >= SETTLE_SECONDS:
                    return int(key[0])
            else:
                settled_since = time.monotonic() if key is not None else None
            last_key = key
            time.sleep(0.2)
        views = {cid: m.view() for cid, m in self.members.items()}
        raise ScenarioError(f"{self.record.name}: group did not settle within {timeout:.0f}s: {views}")

    def _stable_key(self) -> tuple[Any, ...] | None:
        views = {cid: m.view() for cid, m in self.members.items()}
        if not views or any(v is None or not v.stable for v in views.values()):
            return None
        generations = {v.generation for v in views.values() if v is not None}
        if len(generations) != 1:
            return None
        described = self.ctx.describe(self.record.group_id)
        if described.state != "Stable":
            return None
        if sorted(m.client_id for m in described.members) != sorted(views):
            return None
        member_ids = tuple(sorted((cid, v.member_id) for cid, v in views.items() if v is not None))
        return (generations.pop(), member_ids)

    def wait_empty(self, timeout: float = STABLE_TIMEOUT_SECONDS) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.ctx.describe(self.record.group_id).state == "Empty":
                return
            time.sleep(0.2)
        raise ScenarioError(f"{self.record.name}: group did not become Empty within {timeout:.0f}s")

    def observe(self, cause: str, trigger: str | None, intermediate_cause: str | None = None) -> int:
        """Wait until stable and record the generation(s) reached since the last one.

        Exactly one new generation is expected, except when `intermediate_cause` says the scenario
        provoked a two-round rebalance (cooperative): then the round in between must have been seen by
        at least one member, and is recorded from that member's own history.
        """
        generation = self.wait_stable()
        expected = self.last_generation + (2 if intermediate_cause else 1)
        if generation != expected:
            raise ScenarioError(
                f"{self.record.name}: after {cause} of {trigger} the group is at generation {generation}, "
                f"expected {expected} (previous {self.last_generation})"
            )
        if intermediate_cause:
            self._record(generation - 1, cause, trigger, from_history=True)
            self._record(generation, intermediate_cause, None, from_history=False)
        else:
            self._record(generation, cause, trigger, from_history=False)
        return generation

    def _record(self, generation: int, cause: str, trigger: str | None, from_history: bool) -> None:
        views: dict[str, MemberView] = {}
        missing: list[str] = []
        for cid, member in self.members.items():
            view = member.history().get(generation) if from_history else member.view()
            if view is None or view.generation != generation:
                missing.append(cid)
            else:
                views[cid] = view
        if missing and from_history:
            views.update(self._from_leader(generation, missing, views))
            missing = [cid for cid in missing if cid not in views]
        if missing:
            raise ScenarioError(f"{self.record.name}: {', '.join(missing)} did not report generation {generation}")
        protocols = {v.protocol for v in views.values()}
        if len(protocols) != 1:
            raise ScenarioError(f"{self.record.name}: members disagree on the protocol: {protocols}")
        self.record.generations.append(GenerationRecord(
            generation=generation,
            cause=cause,
            trigger=trigger,
            members=sorted(views),
            member_ids={cid: v.member_id for cid, v in sorted(views.items())},
            group_instance_ids={cid: m.group_instance_id for cid, m in sorted(self.members.items())
                                if m.group_instance_id},
            assignment={cid: v.assignment for cid, v in sorted(views.items())},
            protocol=protocols.pop(),
        ))
        self.last_generation = generation

    def _from_leader(self, generation: int, missing: list[str], seen: dict[str, MemberView]) -> dict[str, MemberView]:
        """Members that never synced into a short-lived round, as the round's leader logged them.

        In a cooperative rebalance the leader revokes and rejoins at once; a joiner whose SyncGroup
        arrives after that gets REBALANCE_IN_PROGRESS and never sees the round, although the coordinator
        stored it with the joiner as a member. The leader's "Finished assignment" line names the round's
        members (by member id, the same one the joiner keeps into the next round) and their partitions.
        """
        rounds = [m.leader_assignments().get(generation) for m in self.members.values()
                  if isinstance(m, JavaConsoleMember)]
        led = next((r for r in rounds if r), None)
        if led is None or not seen:
            return {}
        protocol = next(iter(seen.values())).protocol
        found: dict[str, MemberView] = {}
        for cid in missing:
            current = self.members[cid].view()
            if current is not None and current.member_id in led:
                found[cid] = MemberView(generation, current.member_id, protocol, True, led[current.member_id])
        return found

    def observe_empty(self, cause: str, trigger: str | None) -> None:
        """The last member left: the coordinator completes one more generation with no members."""
        self.wait_empty()
        self.last_generation += 1
        self.record.generations.append(GenerationRecord(
            generation=self.last_generation, cause=cause, trigger=trigger, members=[], member_ids={},
            group_instance_ids={}, assignment={}, protocol=None,
        ))
        self.record.final_state = "Empty"


# ------------------------------------------------------------------------------------------------
# The scenarios
# ------------------------------------------------------------------------------------------------
KAFKA_PYTHON = "kafka-python 2.2.15"


def _java_client(ctx: ScenarioContext) -> str:
    return f"Apache Kafka {ctx.version} Java consumer (org.apache.kafka.tools.consumer.ConsoleConsumer)"


def _classic(name: str, description: str, assignor: str, client: str = KAFKA_PYTHON,
             topics: Iterable[str] | None = None) -> ScenarioRecord:
    group = f"cgh-{name}"
    return ScenarioRecord(
        name=name, group_id=group, description=description, client=client, group_protocol="classic",
        protocol_type="consumer", assignor=assignor,
        topics={t: PARTITIONS_PER_TOPIC for t in (topics or [f"cgh.{name}"])},
    )


def _py(tracker: GroupTracker, client_id: str, assignor: str, **kwargs: Any) -> PythonThreadMember:
    record = tracker.record
    member = PythonThreadMember(tracker.ctx, record.group_id, client_id, list(record.topics), assignor, **kwargs)
    tracker.add(member)
    return member


def _close_all_in_order(tracker: GroupTracker, order: list[str]) -> None:
    """Close members one at a time (LeaveGroup each), recording each generation, the last one empty."""
    for i, client_id in enumerate(order):
        tracker.record.act(f"close {client_id} (LeaveGroup)")
        member = tracker.remove(client_id)
        assert isinstance(member, PythonThreadMember)
        member.close()
        if i < len(order) - 1:
            tracker.observe("leave_group", client_id)
        else:
            tracker.observe_empty("leave_group", client_id)


def scenario_range_grow(ctx: ScenarioContext) -> ScenarioRecord:
    record = _classic("range-grow", "A range group grows from 1 to 3 members, then members close one by one.",
                      "range")
    tracker = GroupTracker(ctx, record)
    for topic in record.topics:
        ctx.create_topic(topic)
    for client_id in ["range-grow-a", "range-grow-b", "range-grow-c"]:
        record.act(f"start {client_id}")
        _py(tracker, client_id, "range")
        tracker.observe("join", client_id)
    _close_all_in_order(tracker, ["range-grow-c", "range-grow-b", "range-grow-a"])
    return record


def scenario_member_leave(ctx: ScenarioContext) -> ScenarioRecord:
    record = _classic("member-leave", "Two range members; one closes (LeaveGroup) while the other keeps "
                      "consuming, then the other closes.", "range")
    tracker = GroupTracker(ctx, record)
    for topic in record.topics:
        ctx.create_topic(topic)
    for client_id in ["member-leave-a", "member-leave-b"]:
        record.act(f"start {client_id}")
        _py(tracker, client_id, "range")
        tracker.observe("join", client_id)
    _close_all_in_order(tracker, ["member-leave-b", "member-leave-a"])
    return record


def scenario_member_killed(ctx: ScenarioContext) -> ScenarioRecord:
    record = _classic("member-killed", "Two range members; one is killed with SIGKILL and is removed when its "
                      f"session ({SESSION_TIMEOUT_MS} ms) times out.", "range")
    tracker = GroupTracker(ctx, record)
    for topic in record.topics:
        ctx.create_topic(topic)
    record.act("start member-killed-a")
    _py(tracker, "member-killed-a", "range")
    tracker.observe("join", "member-killed-a")
    record.act("start member-killed-b (child process)")
    victim = PythonProcessMember(ctx, record.group_id, "member-killed-b", list(record.topics), "range",
                                 log_name="kafka-python-member-killed-b")
    tracker.add(victim)
    tracker.observe("join", "member-killed-b")
    record.act("SIGKILL member-killed-b")
    victim.kill()
    tracker.remove("member-killed-b")
    tracker.observe("session_timeout", "member-killed-b")
    _close_all_in_order(tracker, ["member-killed-a"])
    return record


def scenario_max_poll_exceeded(ctx: ScenarioContext, name: str = "max-poll-exceeded", cycles: int = 1,
                               description: str | None = None) -> ScenarioRecord:
    # kafka-python's heartbeat thread notices the expired poll interval only on its next check, a few
    # seconds late; the stall must outlast that, the rebalance without the member and SETTLE_SECONDS.
    max_poll_ms = 2000
    stall_seconds = 11.0
    record = _classic(name, description or (
        f"Two range members; one stops polling for {stall_seconds:.0f} s with max.poll.interval.ms="
        f"{max_poll_ms}, leaves the group (its heartbeat thread sends LeaveGroup), and rejoins when it polls "
        "again."), "range")
    tracker = GroupTracker(ctx, record)
    for topic in record.topics:
        ctx.create_topic(topic)
    steady, slow = f"{name}-a", f"{name}-b"
    record.act(f"start {steady}")
    _py(tracker, steady, "range")
    tracker.observe("join", steady)
    record.act(f"start {slow} (max.poll.interval.ms={max_poll_ms})")
    slow_member = _py(tracker, slow, "range", max_poll_interval_ms=max_poll_ms)
    tracker.observe("join", slow)
    for cycle in range(cycles):
        record.act(f"{slow} stops polling for {stall_seconds} s (cycle {cycle + 1})")
        slow_member.stall(stall_seconds)
        tracker.members.pop(slow)
        tracker.observe("max_poll_interval_exceeded", slow)
        tracker.members[slow] = slow_member
        tracker.observe("rejoin", slow)
    _close_all_in_order(tracker, [slow, steady])
    return record


def scenario_storm_poll_timeout(ctx: ScenarioContext) -> ScenarioRecord:
    return scenario_max_poll_exceeded(
        ctx, name="storm-poll-timeout", cycles=3,
        description="Rebalance storm: a member exceeds max.poll.interval.ms (2000 ms) again and again; "
                    "each cycle is a leave and a rejoin, so two rebalances per cycle, three cycles.")


def scenario_storm_crash_loop(ctx: ScenarioContext) -> ScenarioRecord:
    cycles = 3
    record = _classic("storm-crash-loop", "Rebalance storm: a member crash-loops. It is SIGKILLed as soon as "
                      "it has its assignment and restarted at once with the same client id; each restart "
                      "joins as a new member and the rebalance completes when the dead member's session "
                      f"times out ({cycles} crashes, then it stays down).", "range")
    tracker = GroupTracker(ctx, record)
    for topic in record.topics:
        ctx.create_topic(topic)
    record.act("start storm-crash-loop-a")
    _py(tracker, "storm-crash-loop-a", "range")
    tracker.observe("join", "storm-crash-loop-a")
    crasher: PythonProcessMember | None = None
    for cycle in range(cycles + 1):
        if crasher is not None:
            record.act(f"SIGKILL storm-crash-loop-b (crash {cycle})")
            crasher.kill()
            tracker.remove("storm-crash-loop-b")
        if cycle == cycles:
            break
        record.act(f"start storm-crash-loop-b (child process, start {cycle + 1})")
        crasher = PythonProcessMember(ctx, record.group_id, "storm-crash-loop-b", list(record.topics), "range",
                                      log_name=f"kafka-python-storm-crash-loop-b-{cycle + 1}")
        tracker.add(crasher)
        # The first start is a plain join; later ones join while the crashed member is still in the
        # group, so that rebalance also removes it on session timeout.
        tracker.observe("join" if cycle == 0 else "join+session_timeout", "storm-crash-loop-b")
    tracker.observe("session_timeout", "storm-crash-loop-b")
    _close_all_in_order(tracker, ["storm-crash-loop-a"])
    return record


def scenario_assignor(ctx: ScenarioContext, assignor: str) -> ScenarioRecord:
    name = f"{assignor}-group"
    topics = [f"cgh.{name}.x", f"cgh.{name}.y"]
    record = _classic(name, f"A {assignor} group (kafka-python) over two topics grows to 3 members, then the "
                      "middle member leaves and the rest close.", assignor, topics=topics)
    for topic in topics:
        ctx.create_topic(topic, partitions=PARTITIONS_PER_TOPIC)
    tracker = GroupTracker(ctx, record)
    for client_id in [f"{name}-a", f"{name}-b", f"{name}-c"]:
        record.act(f"start {client_id}")
        _py(tracker, client_id, assignor)
        tracker.observe("join", client_id)
    _close_all_in_order(tracker, [f"{name}-b", f"{name}-c", f"{name}-a"])
    return record


def scenario_roundrobin(ctx: ScenarioContext) -> ScenarioRecord:
    return scenario_assignor(ctx, "roundrobin")


def scenario_sticky(ctx: ScenarioContext) -> ScenarioRecord:
    return scenario_assignor(ctx, "sticky")


def scenario_cooperative_sticky(ctx: ScenarioContext) -> ScenarioRecord:
    record = _classic("cooperative-sticky", "Java consumers with the cooperative-sticky assignor: each join is "
                      "two rounds (revoke, then assign); then one member leaves and the other closes.",
                      "cooperative-sticky", client=_java_client(ctx))
    topic = next(iter(record.topics))
    ctx.create_topic(topic)
    tracker = GroupTracker(ctx, record)
    props = {"partition.assignment.strategy": JAVA_COOPERATIVE_STICKY,
             "session.timeout.ms": str(SESSION_TIMEOUT_MS), "heartbeat.interval.ms": str(HEARTBEAT_INTERVAL_MS)}
    members: dict[str, JavaConsoleMember] = {}
    for i, client_id in enumerate(["cooperative-sticky-a", "cooperative-sticky-b", "cooperative-sticky-c"]):
        record.act(f"start {client_id}")
        members[client_id] = JavaConsoleMember(ctx, record.group_id, client_id, topic, f"java-{client_id}", props)
        tracker.add(members[client_id])
        # The first member has nothing to revoke: one round. Later joins move partitions: two rounds.
        tracker.observe("join", client_id, intermediate_cause=None if i == 0 else "cooperative_follow_up")
    for client_id in ["cooperative-sticky-b", "cooperative-sticky-c", "cooperative-sticky-a"]:
        record.act(f"stop {client_id} (SIGTERM: close, LeaveGroup)")
        members[client_id].stop()
        tracker.remove(client_id)
        if tracker.members:
            # A leave frees partitions without revoking any from the others: one round.
            tracker.observe("leave_group", client_id)
        else:
            tracker.observe_empty("leave_group", client_id)
    return record


def scenario_static_members(ctx: ScenarioContext) -> ScenarioRecord:
    record = _classic("static-members", "Two static members (group.instance.id, Java consumer, range, "
                      f"session.timeout.ms={STATIC_SESSION_TIMEOUT_MS}). One restarts within its session "
                      "timeout: no rebalance, the coordinator swaps its member id. Then both stop without "
                      "leaving (static members do not send LeaveGroup) and are removed on session timeout.",
                      "range", client=_java_client(ctx))
    topic = next(iter(record.topics))
    ctx.create_topic(topic)
    tracker = GroupTracker(ctx, record)

    def start(client_id: str, instance: str, log_name: str) -> JavaConsoleMember:
        props = {"group.instance.id": instance, "partition.assignment.strategy": JAVA_RANGE,
                 "session.timeout.ms": str(STATIC_SESSION_TIMEOUT_MS),
                 "heartbeat.interval.ms": str(HEARTBEAT_INTERVAL_MS)}
        member = JavaConsoleMember(ctx, record.group_id, client_id, topic, log_name, props)
        tracker.add(member)
        return member

    record.act("start static-members-a (instance static-a)")
    a = start("static-members-a", "static-a", "java-static-members-a")
    tracker.observe("join", "static-members-a")
    record.act("start static-members-b (instance static-b)")
    b = start("static-members-b", "static-b", "java-static-members-b")
    generation = tracker.observe("join", "static-members-b")
    old_member_id = tracker.record.generations[-1].member_ids["static-members-b"]

    record.act("stop static-members-b (SIGTERM; a static member does not leave) and restart it at once")
    b.stop()
    tracker.members.pop("static-members-b")
    b2 = start("static-members-b", "static-b", "java-static-members-b-restarted")
    still = tracker.wait_stable()
    if still != generation:
        raise ScenarioError(f"static restart caused a rebalance: generation {generation} -> {still}")
    new_view = b2.view()
    assert new_view is not None
    if new_view.member_id == old_member_id:
        raise ScenarioError("the restarted static member kept its member id; expected a new one")
    record.static_restarts.append({
        "client_id": "static-members-b", "group_instance_id": "static-b", "generation": generation,
        "old_member_id": old_member_id, "new_member_id": new_view.member_id, "at": utc_now(),
    })

    record.act("stop both static members (SIGTERM, no LeaveGroup); wait for their sessions to time out")
    for client_id, member in (("static-members-a", a), ("static-members-b", b2)):
        member.stop()
        tracker.remove(client_id)
    tracker.observe_empty("session_timeout", None)
    return record


def scenario_group_deleted(ctx: ScenarioContext) -> ScenarioRecord:
    record = _classic("group-deleted", "A range group commits offsets, its only member closes, and the "
                      "empty group is deleted with the admin DeleteGroups API (tombstones for the group and "
                      "every committed offset).", "range")
    tracker = GroupTracker(ctx, record)
    for topic in record.topics:
        ctx.create_topic(topic)
    record.act("start group-deleted-a")
    _py(tracker, "group-deleted-a", "range")
    tracker.observe("join", "group-deleted-a")
    time.sleep(2.5)  # one auto-commit interval, so the group holds committed offsets
    _close_all_in_order(tracker, ["group-deleted-a"])
    record.committed_offsets = ctx.committed_offsets(record.group_id)
    if not record.committed_offsets:
        raise ScenarioError("group-deleted: no committed offsets before deletion")
    record.act("delete the group (DeleteGroups)")
    with ctx._admin_lock:
        result = ctx.admin.delete_consumer_groups([record.group_id])
    errors = [(g, e) for g, e in result if getattr(e, "errno", 0) != 0]
    if errors:
        raise ScenarioError(f"group-deleted: DeleteGroups failed: {errors}")
    record.deleted = True
    record.final_state = "Dead"
    return record


def scenario_transactions(ctx: ScenarioContext) -> ScenarioRecord:
    record = ScenarioRecord(
        name="transactions", group_id="cgh-transactions",
        description="A transactional producer (consume-transform-produce style) commits group offsets with "
                    "TxnOffsetCommit inside one committed and one aborted transaction; only the committed "
                    "offsets count.",
        client=KAFKA_PYTHON, group_protocol="classic", protocol_type=None, assignor=None,
        topics={"cgh.transactions.in": 3, "cgh.transactions.out": 1},
    )
    ctx.create_topic("cgh.transactions.in", partitions=3)
    ctx.create_topic("cgh.transactions.out", partitions=1, messages=0)
    producer = KafkaProducer(bootstrap_servers=ctx.bootstrap_servers, transactional_id="cgh-transactions-txn",
                             client_id="transactions-producer")
    try:
        record.act("init_transactions")
        producer.init_transactions()
        for outcome, offsets in (("commit", {0: 5, 1: 7}), ("abort", {0: 11, 2: 13})):
            record.act(f"begin transaction; send_offsets_to_transaction {offsets}; {outcome}")
            producer.begin_transaction()
            producer.send("cgh.transactions.out", value=f"output of a transaction to {outcome}".encode())
            producer.send_offsets_to_transaction(
                {TopicPartition("cgh.transactions.in", p): OffsetAndMetadata(o, f"txn-{outcome}", -1)
                 for p, o in offsets.items()},
                record.group_id,
            )
            # Flush first: kafka-python 2.2.15 loops forever in abort_transaction() when batches of the
            # transaction are still in flight ("ProducerBatch ... is not in deque").
            producer.flush()
            if outcome == "commit":
                producer.commit_transaction()
            else:
                producer.abort_transaction()
            record.transactions.append({
                "transactional_id": "cgh-transactions-txn", "outcome": outcome,
                "offsets": {f"cgh.transactions.in-{p}": o for p, o in offsets.items()},
                "metadata": f"txn-{outcome}", "at": utc_now(),
            })
    finally:
        producer.close()
    record.committed_offsets = ctx.committed_offsets(record.group_id)
    expected = record.transactions[0]["offsets"]
    if record.committed_offsets != expected:
        raise ScenarioError(f"transactions: broker reports {record.committed_offsets}, expected {expected}")
    record.final_state = "Empty"
    return record


def scenario_consumer_protocol(ctx: ScenarioContext) -> ScenarioRecord:
    record = ScenarioRecord(
        name="consumer-protocol", group_id="cgh-consumer-protocol",
        description="A KIP-848 group (group.protocol=consumer, server-side assignor, Java consumer): two "
                    "members join one after the other, the second leaves, then the first.",
        client=_java_client(ctx), group_protocol="consumer", protocol_type="consumer", assignor=None,
        topics={"cgh.consumer-protocol": PARTITIONS_PER_TOPIC},
    )
    topic = next(iter(record.topics))
    ctx.create_topic(topic)
    members: dict[str, JavaConsoleMember] = {}
    all_partitions = sorted([topic, p] for p in range(PARTITIONS_PER_TOPIC))

    def wait_reconciled(expected: list[str], timeout: float = STABLE_TIMEOUT_SECONDS) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        last: Any = None
        since = time.monotonic()
        while time.monotonic() < deadline:
            views = {cid: members[cid].consumer_group_view() for cid in expected}
            ok = all(v is not None and v["state"] == "STABLE" for v in views.values())
            if ok:
                owned = sorted(p for v in views.values() if v is not None for p in v["assignment"])
                ok = owned == all_partitions
            key = json.dumps(views, sort_keys=True) if ok else None
            if key is not None and key == last:
                if time.monotonic() - since >= SETTLE_SECONDS:
                    return views
            else:
                since = time.monotonic()
            last = key
            time.sleep(0.2)
        raise ScenarioError(f"consumer-protocol: members did not reconcile: {views}")

    props = {"group.protocol": "consumer"}
    active: list[str] = []
    for client_id in ["consumer-protocol-a", "consumer-protocol-b"]:
        record.act(f"start {client_id} (group.protocol=consumer)")
        members[client_id] = JavaConsoleMember(ctx, record.group_id, client_id, topic, f"java-{client_id}", props)
        active.append(client_id)
        views = wait_reconciled(active)
        record.consumer_group_steps.append({
            "after": f"join {client_id}", "members": sorted(active),
            "member_ids": {c: v["member_id"] for c, v in sorted(views.items())},
            "assignment": {c: v["assignment"] for c, v in sorted(views.items())}, "at": utc_now(),
        })
    record.act("stop consumer-protocol-b (SIGTERM: leaves with member epoch -1)")
    members["consumer-protocol-b"].stop()
    active.remove("consumer-protocol-b")
    views = wait_reconciled(active)
    record.consumer_group_steps.append({
        "after": "leave consumer-protocol-b", "members": sorted(active),
        "member_ids": {c: v["member_id"] for c, v in sorted(views.items())},
        "assignment": {c: v["assignment"] for c, v in sorted(views.items())}, "at": utc_now(),
    })
    record.act("stop consumer-protocol-a")
    members["consumer-protocol-a"].stop()
    record.consumer_group_steps.append({"after": "leave consumer-protocol-a", "members": [], "member_ids": {},
                                        "assignment": {}, "at": utc_now()})
    record.final_state = "Empty"
    return record


# ------------------------------------------------------------------------------------------------
# Multi-broker scenarios (tests/kafka_testbed/cluster.py): they need ctx.cluster
# ------------------------------------------------------------------------------------------------
def scenario_coordinator_failover(ctx: ScenarioContext) -> ScenarioRecord:
    record = _classic("coordinator-failover", "Two range members (kafka-python) are stable; the node leading the "
                      "group's __consumer_offsets partition (its group coordinator) is stopped with a controlled "
                      "shutdown, leadership moves to another replica, which loads the group; the members find the "
                      "new coordinator and the group goes on there: a third member joins, then all close. The "
                      "stopped node is restarted and catches up as a follower.", "range")
    if ctx.cluster is None:
        raise ScenarioError("coordinator-failover needs a multi-broker cluster (tests/kafka_testbed/cluster.py)")
    tracker = GroupTracker(ctx, record)
    for topic in record.topics:
        ctx.create_topic(topic)
    for client_id in ["coordinator-failover-a", "coordinator-failover-b"]:
        record.act(f"start {client_id}")
        _py(tracker, client_id, "range")
        tracker.observe("join", client_id)
    before = tracker.last_generation
    partition = ctx.cluster.offsets_partition_of(record.group_id)
    old = ctx.cluster.coordinator_of(record.group_id)
    stopped_at = utc_now()
    record.act(f"stop node {old} (controlled shutdown): it leads __consumer_offsets-{partition}, the group's "
               "coordinator")
    ctx.cluster.stop_broker(old)
    new = ctx.cluster.wait_leader_moved(partition, away_from=old)
    record.act(f"__consumer_offsets-{partition} is now led by node {new}")
    after = tracker.wait_stable()
    rebalanced = after != before
    if rebalanced:
        # Kafka keeps a stable classic group's generation when it loads it; a rebalance here would be
        # the failover's doing (e.g. a JoinGroup lost with the old coordinator).
        if after != before + 1:
            raise ScenarioError(f"coordinator-failover: generation {before} -> {after} across the failover")
        tracker._record(after, "coordinator_failover", None, from_history=False)
    failover = {"group_id": record.group_id, "partition": partition, "old_coordinator": old, "new_coordinator": new,
                "stopped_at": stopped_at, "generation_before": before, "rebalanced": rebalanced}
    record.act(f"restart node {old}")
    ctx.cluster.restart_broker(old)
    record.act("start coordinator-failover-c (the first rebalance under the new coordinator)")
    _py(tracker, "coordinator-failover-c", "range")
    failover["first_generation_after"] = tracker.observe("join", "coordinator-failover-c")
    if ctx.cluster.coordinator_of(record.group_id) != new:
        raise ScenarioError("coordinator-failover: the coordinator moved again during the scenario")
    record.coordinator_failovers.append(failover)
    _close_all_in_order(tracker, ["coordinator-failover-c", "coordinator-failover-b", "coordinator-failover-a"])
    return record


def scenario_offset_expiry(ctx: ScenarioContext) -> ScenarioRecord:
    record = _classic("offset-expiry", "One range member (kafka-python) commits offsets and closes; the empty "
                      "group's offsets expire after offsets.retention.minutes and the coordinator writes a "
                      "tombstone for each, then one for the group, which has nothing left.", "range")
    tracker = GroupTracker(ctx, record)
    for topic in record.topics:
        ctx.create_topic(topic)
    record.act("start offset-expiry-a")
    _py(tracker, "offset-expiry-a", "range")
    tracker.observe("join", "offset-expiry-a")
    time.sleep(2.5)  # one auto-commit interval
    _close_all_in_order(tracker, ["offset-expiry-a"])
    empty_at = utc_now()
    record.committed_offsets = ctx.committed_offsets(record.group_id)
    if not record.committed_offsets:
        raise ScenarioError("offset-expiry: no committed offsets before the group went empty")
    record.act("wait for the committed offsets to expire (offsets.retention.minutes after the group went empty)")
    deadline = time.monotonic() + EXPIRY_TIMEOUT_SECONDS
    while ctx.committed_offsets(record.group_id):
        if time.monotonic() > deadline:
            raise ScenarioError(f"offset-expiry: offsets still there after {EXPIRY_TIMEOUT_SECONDS} s")
        time.sleep(1.0)
    record.expired_offsets.append({"offsets": dict(record.committed_offsets), "group_empty_at": empty_at,
                                   "observed_expired_at": utc_now()})
    record.act("the committed offsets are gone (expired)")
    record.final_state = ctx.describe(record.group_id).state
    return record


def scenario_static_member_fenced(ctx: ScenarioContext) -> ScenarioRecord:
    record = _classic("static-member-fenced", "Two static members (Java consumer, range); a second instance is "
                      "started with the group.instance.id of a live one. The coordinator gives the instance id "
                      "to the newcomer without a rebalance (the group is stable, same subscription) and fences "
                      "the old member: its next heartbeat gets FENCED_INSTANCE_ID and the consumer stops with a "
                      "fatal error. Then both stop (no LeaveGroup) and time out.", "range", client=_java_client(ctx))
    topic = next(iter(record.topics))
    ctx.create_topic(topic)
    tracker = GroupTracker(ctx, record)

    def start(client_id: str, instance: str, log_name: str | None = None) -> JavaConsoleMember:
        props = {"group.instance.id": instance, "partition.assignment.strategy": JAVA_RANGE,
                 "session.timeout.ms": str(STATIC_SESSION_TIMEOUT_MS),
                 "heartbeat.interval.ms": str(HEARTBEAT_INTERVAL_MS)}
        member = JavaConsoleMember(ctx, record.group_id, client_id, topic, log_name or f"java-{client_id}", props)
        tracker.add(member)
        return member

    record.act("start static-member-fenced-a (instance fenced-a)")
    a = start("static-member-fenced-a", "fenced-a")
    tracker.observe("join", "static-member-fenced-a")
    record.act("start static-member-fenced-b (instance fenced-b)")
    b = start("static-member-fenced-b", "fenced-b")
    generation = tracker.observe("join", "static-member-fenced-b")
    old_member_id = record.generations[-1].member_ids["static-member-fenced-b"]

    # A duplicate deployment: same configuration (client id and instance id), a second process.
    record.act("start a second static-member-fenced-b (instance fenced-b) while the first still runs")
    tracker.members.pop("static-member-fenced-b")
    duplicate = start("static-member-fenced-b", "fenced-b", "java-static-member-fenced-b-duplicate")
    still = tracker.wait_stable()
    if still != generation:
        raise ScenarioError(f"static-member-fenced: the duplicate caused a rebalance: {generation} -> {still}")
    new_view = duplicate.view()
    assert new_view is not None
    # The old instance hears of it at its next heartbeat or commit, and logs it; on a loaded machine (a Spark
    # test beside this one) that took over 30 s once. Then it may exit: up to 30 s more for that.
    # The Java client says it in one of two ways, by where it learns it: a heartbeat or join names the error
    # code (FENCED_INSTANCE_ID); an offset commit that comes first (it did in CI, right after the coordinator
    # moved) logs the exception instead (FencedInstanceIdException, "Get fenced exception for
    # group.instance.id ...").
    def fenced() -> str | None:
        return next((line for line in b._lines()
                     if "FENCED_INSTANCE_ID" in line or "FencedInstanceIdException" in line), None)

    deadline = time.monotonic() + 120
    while b.alive() and fenced() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    deadline = min(deadline, time.monotonic() + 30)
    while b.alive() and time.monotonic() < deadline:
        time.sleep(0.2)
    fenced_line = fenced()
    if fenced_line is None:
        raise ScenarioError("static-member-fenced: the old instance's log says nothing about being fenced")
    exited = not b.alive()
    record.act(f"static-member-fenced-b was fenced ({'exited' if exited else 'still running'}): {fenced_line.strip()}")
    b.stop()
    record.fenced_members.append({
        "client_id": "static-member-fenced-b", "group_instance_id": "fenced-b", "generation": generation,
        "fenced_member_id": old_member_id, "by_member_id": new_view.member_id,
        "by_client_log": "java-static-member-fenced-b-duplicate.log", "exited": exited,
        "client_log_line": fenced_line.strip(),
        "at": utc_now(),
    })
    # For the records the swap is a static member's replacement in the same generation (as a restart).
    record.static_restarts.append({
        "client_id": "static-member-fenced-b", "group_instance_id": "fenced-b", "generation": generation,
        "old_member_id": old_member_id, "new_member_id": new_view.member_id, "at": utc_now(),
    })
    record.act("stop both live static members (SIGTERM, no LeaveGroup); wait for their sessions to time out")
    for client_id, member in (("static-member-fenced-a", a), ("static-member-fenced-b", duplicate)):
        member.stop()
        tracker.remove(client_id)
    tracker.observe_empty("session_timeout", None)
    return record


#: On the cluster, every scenario but offset-expiry starts this much later (see run_scenarios).
CLUSTER_START_DELAY_SECONDS = 15.0
#: offset-expiry waits this long for the cluster's retention (1 minute, checked every 5 s; cluster.py).
EXPIRY_TIMEOUT_SECONDS = 150


SCENARIOS: dict[str, Callable[[ScenarioContext], ScenarioRecord]] = {
    "range-grow": scenario_range_grow,
    "member-leave": scenario_member_leave,
    "member-killed": scenario_member_killed,
    "max-poll-exceeded": scenario_max_poll_exceeded,
    "static-members": scenario_static_members,
    "roundrobin-group": scenario_roundrobin,
    "sticky-group": scenario_sticky,
    "cooperative-sticky": scenario_cooperative_sticky,
    "group-deleted": scenario_group_deleted,
    "transactions": scenario_transactions,
    "consumer-protocol": scenario_consumer_protocol,
    "storm-poll-timeout": scenario_storm_poll_timeout,
    "storm-crash-loop": scenario_storm_crash_loop,
    "coordinator-failover": scenario_coordinator_failover,
    "offset-expiry": scenario_offset_expiry,
    "static-member-fenced": scenario_static_member_fenced,
}

#: Scenarios of the multi-broker cluster only (they stop nodes, or need the cluster's short offset retention).
CLUSTER_ONLY = ["offset-expiry", "coordinator-failover", "static-member-fenced"]
#: The existing scenarios also run on the cluster, their causes unchanged with three brokers' logs merged.
CLUSTER_ALSO = ["member-killed", "range-grow", "member-leave"]

# The slow ones first, so the pool's tail is short.
_RUN_ORDER = ["static-members", "storm-crash-loop", "storm-poll-timeout", "cooperative-sticky",
              "consumer-protocol", "member-killed", "max-poll-exceeded", "range-grow", "roundrobin-group",
              "sticky-group", "member-leave", "group-deleted", "transactions"]


def attach_python_client_log(client_log_dir: Path) -> logging.Handler:
    """kafka-python logs of the in-process members go to one file; threads are named by client id."""
    handler = logging.FileHandler(client_log_dir / "kafka-python.log")
    handler.setFormatter(logging.Formatter(PYTHON_LOG_FORMAT))
    kafka_logger = logging.getLogger("kafka")
    kafka_logger.addHandler(handler)
    kafka_logger.setLevel(logging.INFO)
    return handler


# KIP-848 groups need the 4.x coordinator; enabling them on 3.x would switch 3.x to its early-access new
# coordinator, and the 3.x sample exists to show the old one.
NEEDS_KAFKA_4 = {"consumer-protocol"}


def scenario_names(jar_set: str = DEFAULT_JAR_SET, cluster: bool = False) -> list[str]:
    """The scenarios that run against a jar set's broker (or three-node cluster), slowest first."""
    order = [*CLUSTER_ONLY, *CLUSTER_ALSO] if cluster else _RUN_ORDER
    return [n for n in order if kafka_major(jar_set) >= 4 or n not in NEEDS_KAFKA_4]


def run_scenarios(bootstrap_servers: str, client_log_dir: Path, names: Iterable[str] | None = None,
                  workers: int = 4, jar_set: str = DEFAULT_JAR_SET, cluster: Any = None) -> dict[str, Any]:
    """Run the scenarios against a broker (or a KafkaCluster, `cluster`) and return the scenarios.json document.

    Raises ScenarioError (after every scenario has finished) if any scenario failed.
    """
    names = list(names) if names is not None else None
    order = scenario_names(jar_set, cluster=cluster is not None)
    if names is not None:
        order += [n for n in names if n not in order and n in SCENARIOS]
    selected = [n for n in order if names is None or n in set(names)]
    unknown = set(names or []) - set(SCENARIOS)
    if unknown:
        raise ValueError(f"unknown scenarios: {sorted(unknown)}")
    client_log_dir.mkdir(parents=True, exist_ok=True)
    handler = attach_python_client_log(client_log_dir)
    ctx = ScenarioContext(bootstrap_servers, client_log_dir, jar_set, cluster=cluster)
    results: dict[str, ScenarioRecord] = {}
    failures: dict[str, BaseException] = {}
    started = time.monotonic()
    try:
        def run_one(name: str) -> None:
            threading.current_thread().name = f"scenario-{name}"
            if cluster is not None and name != "offset-expiry":
                # offset-expiry's group goes empty first; the others end later than it by more than a
                # check interval, so their offsets are younger than the retention when the capture stops.
                time.sleep(CLUSTER_START_DELAY_SECONDS)
            try:
                record = SCENARIOS[name](ctx)
                record.finished_at = utc_now()
                results[name] = record
            except BaseException as exc:  # reported together below
                log.exception("scenario %s failed", name)
                failures[name] = exc

        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(run_one, selected))
    finally:
        ctx.close()
        logging.getLogger("kafka").removeHandler(handler)
        handler.close()
    if failures:
        raise ScenarioError("scenarios failed: " + "; ".join(f"{n}: {e!r}" for n, e in failures.items()))
    return {
        "kafka_version": ctx.version,
        "clients": sorted({r.client for r in results.values()}),
        "run_seconds": round(time.monotonic() - started, 1),
        "scenarios": {name: asdict(results[name]) for name in selected},
    }


def main(argv: list[str] | None = None) -> int:
    """Run scenarios against an already running broker: `python -m tests.kafka_testbed.scenarios HOST:PORT DIR`."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2:
        print(main.__doc__, file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(threadName)s %(message)s")
    document = run_scenarios(args[0], Path(args[1]), names=args[2:] or None)
    (Path(args[1]) / "scenarios.json").write_text(json.dumps(document, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
