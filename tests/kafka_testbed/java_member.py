"""A Java group member that reports the client's own rebalance measure (jvm/rebalance-member).

`RebalanceMember` runs Kafka's KafkaConsumer from the jar set in its own JVM, logs the client's INFO lines in
the stock layout to `<client log dir>/<log name>.log` (what the cost stage reads), and prints on stdout what
the client itself knows: each rebalance callback with its partitions, generation and member id, and the
`consumer-coordinator-metrics` rebalance metrics (`rebalance-total`, `rebalance-latency-total`,
`rebalance-latency-max`, `last-rebalance-seconds-ago`) as the client recorded them. Tests hold the cost
table against that, not against lines the code under test parses.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from jvm_oracle.harness import ROOT, compile_sources, jar_dir
from tests.kafka_testbed.broker import DEFAULT_JAR_SET, DEFAULT_JVM_OPTIONS, client_log_config, die_with_parent

SOURCES = ROOT / "jvm" / "rebalance-member" / "src" / "main" / "java"
#: the client setting a partition's fetch position (3.7+ without the client prefix), read from the member's
#: own log file by this module, not by the parser under test
_POSITION = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\] \w+ (?:\[Consumer [^\]]*\] )?"
                       r"(?:Setting|Resetting) offset for partition (\S+) to ")
MAIN_CLASS = "cgh.testbed.RebalanceMember"


@dataclass(frozen=True)
class ClientEvent:
    """One line of the member's stdout: a callback (`revoked`, `lost`, `assigned`), a `rebalance` seen after
    a poll (its end lies in `(since, at]`), or `closed`."""

    event: str
    at_ms: int
    member_id: str | None = None
    generation: int | None = None
    partitions: frozenset[tuple[str, int]] = frozenset()
    metrics: dict[str, float | None] = field(default_factory=dict)
    since_ms: int | None = None

    @staticmethod
    def parse(line: str) -> ClientEvent:
        doc = json.loads(line)
        parts = set()
        for name in doc.get("partitions", []):
            topic, _, number = name.rpartition("-")
            parts.add((topic, int(number)))
        return ClientEvent(doc["event"], doc["at"], doc.get("member_id"), doc.get("generation"),
                           frozenset(parts), doc.get("metrics", {}), doc.get("since"))


class RebalanceMember:
    """One member process. `close()` closes the consumer (a static member keeps its place in the group until
    its session times out); the process is killed if it does not exit."""

    def __init__(self, bootstrap_servers: str, group: str, client_id: str, topic: str, log_dir: Path,
                 log_name: str, protocol: str = "classic", assignor: str = "range",
                 group_instance_id: str | None = None, jar_set: str = DEFAULT_JAR_SET) -> None:
        self.client_id = client_id
        self.log_file = log_dir / f"{log_name}.log"
        #: the member's stdout, kept beside its log (what the client said, to read after a failed test)
        self.events_file = log_dir / f"{log_name}.events.jsonl"
        config = log_dir / f".{log_name}.logging.properties"
        config.write_text(client_log_config(self.log_file, jar_set))
        classes = compile_sources(SOURCES, jar_set)
        command = ["java", *DEFAULT_JVM_OPTIONS, f"-Dlog4j2.configurationFile={config}",
                   f"-Dlog4j.configuration=file:{config}", "-cp", f"{classes}:{jar_dir(jar_set)}/*", MAIN_CLASS,
                   bootstrap_servers, group, client_id, topic, protocol, assignor, group_instance_id or "-"]
        self.events: list[ClientEvent] = []
        self._changed = threading.Condition()
        self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, text=True,
                                         preexec_fn=die_with_parent)  # noqa: PLW1509 - prctl in the child
        self._reader = threading.Thread(target=self._read, name=f"member-{client_id}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._process.stdout is not None
        with open(self.events_file, "w", encoding="utf-8") as kept:
            for line in self._process.stdout:
                if line.startswith("{"):
                    kept.write(line)
                    kept.flush()
                    with self._changed:
                        self.events.append(ClientEvent.parse(line))
                        self._changed.notify_all()

    def wait_for(self, what: str, predicate: Callable[[ClientEvent], bool], timeout: float = 60.0) -> ClientEvent:
        """The first event (since the process started) that satisfies `predicate`, waiting for it."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = next((e for e in self.events if predicate(e)), None)
                if found is not None:
                    return found
                left = deadline - time.monotonic()
                if left <= 0 or (self._process.poll() is not None and not self._reader.is_alive()):
                    raise AssertionError(f"{self.client_id}: no {what} within {timeout} s; "
                                         f"events: {[e.event for e in self.events]}")
                self._changed.wait(min(left, 0.5))

    def assigned(self) -> set[tuple[str, int]]:
        """The partitions the member owns after its callbacks so far (eager: each assignment is whole;
        cooperative and consumer protocol: additions and revocations)."""
        owned: set[tuple[str, int]] = set()
        for e in self.events:
            if e.event == "assigned":
                owned |= e.partitions
            elif e.event in ("revoked", "lost"):
                owned -= e.partitions
        return owned

    def close(self, timeout: float = 60.0) -> None:
        if self._process.poll() is None:
            assert self._process.stdin is not None
            try:
                self._process.stdin.write("close\n")
                self._process.stdin.close()
            except BrokenPipeError:
                pass
            try:
                self._process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=10)
        self._reader.join(timeout=10)

    def kill(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait(timeout=10)

    def positions(self) -> list[tuple[int, tuple[str, int]]]:
        """(epoch ms, partition) of each line of its log saying it set a partition's fetch position."""
        out = []
        for line in self.log_file.read_text(errors="replace").splitlines() if self.log_file.exists() else ():
            m = _POSITION.match(line)
            if m:
                at = dt.datetime.strptime(m[1], "%Y-%m-%d %H:%M:%S").replace(tzinfo=dt.UTC)
                topic, _, number = m[3].rpartition("-")
                out.append((round(at.timestamp() * 1000) + int(m[2]), (topic, int(number))))
        return out

    def latencies(self) -> list[tuple[ClientEvent, float]]:
        """Each rebalance the client recorded, as (the event that first showed it, its latency in ms): the growth
        of `rebalance-latency-total` where `rebalance-total` grew by exactly one (two rebalances between
        readings cannot be told apart and are left out)."""
        out: list[tuple[ClientEvent, float]] = []
        seen_total, seen_latency = 0.0, 0.0
        for e in self.events:
            total, latency = e.metrics.get("rebalance-total"), e.metrics.get("rebalance-latency-total")
            if total is None or latency is None or total <= seen_total:
                continue
            if total - seen_total == 1:
                out.append((e, latency - seen_latency))
            seen_total, seen_latency = total, latency
        return out
