"""What a rebalance cost, held against Kafka's Java clients' own measure of it, on a real broker.

Four groups of Kafka's own KafkaConsumer (jvm/rebalance-member, from the jar set) run on the shared broker:

* an eager range group growing from one member to three;
* a cooperative-sticky group growing from one member to two (KIP-429: kept partitions never pause);
* two static members (KIP-345), one closed and restarted within its session timeout: no rebalance, only the
  restarted member's partitions pause;
* a KIP-848 group (``group.protocol=consumer``) adding a second member.

Each member prints what the client itself knows: its rebalance listener's callbacks (when, which partitions,
its member id and generation) and its ``consumer-coordinator-metrics`` rebalance metrics. The latency of each
rebalance is the growth of ``rebalance-latency-total`` over one step of ``rebalance-total`` (classic: from the
JoinGroup request, sent after an eager revocation, to the successful SyncGroup; consumer protocol: the time in
the RECONCILING state); ``rebalance-latency-max`` only gives it as a windowed maximum.

The cost is computed by ``coordinator_core.cost`` (the rule the nightly stage applies per group) from the
broker's segments and the clients' log files, as an operator would collect them. Held against the clients:

* every paused partition's pause equals the old owner's revoke callback to the new owner's assign callback
  (a few ms apart from the log lines the cost reads);
* each client-measured rebalance lies within the pause the table gives its partitions: eager, a member's own
  partitions stop before its JoinGroup and resume after its SyncGroup; cooperative, a moved partition stops
  before the old owner's second-round JoinGroup and resumes after its SyncGroup; consumer protocol, the stop
  falls in the old owner's reconciliation and the resume in the new owner's;
* the static member's partner records no rebalance while the table pauses only the restarted member's
  partitions;
* from the records alone (client logs withheld) the bounds hold every true pause (a KIP-848 move's stop
  bounded by the old owner's release record, its resume by the new owner's assignment record).

The rows are computed in Python, not through Spark: the stage's wiring, MERGE and state are tested on the
samples (tests/spark); what this test adds is the clients' own word on a live broker.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from coordinator_core.cost import (
    CONSUMER_PROTOCOL,
    COOPERATIVE,
    EAGER,
    SOURCE_CLIENT,
    STATIC_RESTART_KIND,
    PartitionPause,
    RebalanceCostRow,
    commits_by_partition,
    rebalance_costs,
)
from coordinator_core.history import group_history
from tests.kafka_testbed.broker import KafkaBroker
from tests.kafka_testbed.java_member import ClientEvent, RebalanceMember
from tests.unit.test_history_sample import Sample, load_sample

pytestmark = pytest.mark.integration

EAGER_GROUP = "cgh-cost-eager-grow"
COOPERATIVE_GROUP = "cgh-cost-cooperative-grow"
STATIC_GROUP = "cgh-cost-static-restart"
CONSUMER_GROUP = "cgh-cost-consumer-grow"

#: how far a callback may be from the log line the cost reads for it (the line is logged as the callback
#: is invoked; the new consumer runs callbacks in the application thread, on its next poll)
CALLBACK_MS = {"classic": 60, "consumer": 150}
#: how far apart two clients' reactions to one broker response may be logged
SAME_INSTANT_MS = 100
#: how far a client-measured rebalance's ends may fall outside the pause (one clock, ms-rounded on both sides)
EDGE_MS = 25
#: what an eager pause may add to the member's measured latency: the revocation (an auto-commit, synchronous)
#: before the JoinGroup, and the assign callback's line after the SyncGroup
EAGER_SLACK_MS = 1000


@dataclass
class Scenario:
    group: str
    protocol: str
    members: dict[str, list[RebalanceMember]]   # client id -> its processes, in start order
    notes: dict[str, Any]

    def processes(self) -> list[RebalanceMember]:
        return [p for ps in self.members.values() for p in ps]


def _ms(at: dt.datetime | None) -> int:
    assert at is not None
    return round(at.replace(tzinfo=dt.UTC).timestamp() * 1000)


class Bed:
    def __init__(self, broker: KafkaBroker, client_dir: Path) -> None:
        self.broker, self.client_dir = broker, client_dir
        self.started: list[RebalanceMember] = []   # every process, also those of a scenario that failed

    def member(self, scenario: Scenario, client_id: str, topic: str, assignor: str = "range",
               instance: str | None = None) -> RebalanceMember:
        runs = scenario.members.setdefault(client_id, [])
        process = RebalanceMember(self.broker.bootstrap_servers, scenario.group, client_id, topic, self.client_dir,
                                  f"java-{scenario.group}-{client_id}-{len(runs)}", protocol=scenario.protocol,
                                  assignor=assignor if scenario.protocol == "classic" else "-",
                                  group_instance_id=instance)
        runs.append(process)
        self.started.append(process)
        return process


def _owns(member: RebalanceMember, partitions: int) -> Callable[[ClientEvent], bool]:
    return lambda e: e.event in ("assigned", "rebalance") and len(member.assigned()) == partitions


def _settled(members: list[RebalanceMember], generation_at_least: int, timeout: float = 60.0) -> None:
    """Every member has synced a generation >= `generation_at_least` and all at the same one."""
    for m in members:
        m.wait_for(f"generation {generation_at_least}", lambda e: e.event == "assigned"
                   and (e.generation or 0) >= generation_at_least, timeout)


def eager_grow(bed: Bed, topic: str) -> Scenario:
    s = Scenario(EAGER_GROUP, "classic", {}, {})
    a = bed.member(s, "a", topic)
    a.wait_for("first assignment", lambda e: e.event == "assigned" and len(e.partitions) == 6)
    b = bed.member(s, "b", topic)
    _settled([a, b], 2)
    c = bed.member(s, "c", topic)
    _settled([a, b, c], 3)
    return s


def cooperative_grow(bed: Bed, topic: str) -> Scenario:
    s = Scenario(COOPERATIVE_GROUP, "classic", {}, {})
    a = bed.member(s, "a", topic, "cooperative-sticky")
    a.wait_for("first assignment", lambda e: e.event == "assigned" and len(e.partitions) == 4)
    b = bed.member(s, "b", topic, "cooperative-sticky")
    b.wait_for("its partitions", lambda e: e.event == "assigned" and len(e.partitions) == 2)
    _settled([a, b], 3)
    return s


def static_restart(bed: Bed, topic: str) -> Scenario:
    s = Scenario(STATIC_GROUP, "classic", {}, {})
    one = bed.member(s, "s1", topic, instance="instance-1")
    one.wait_for("first assignment", lambda e: e.event == "assigned" and len(e.partitions) == 4)
    two = bed.member(s, "s2", topic, instance="instance-2")
    _settled([one, two], 2)
    s.notes["partner_before"] = two.events[-1].metrics.get("rebalance-total")
    one.close()  # a static member does not leave: the coordinator keeps its place for its session (10 s)
    again = bed.member(s, "s1", topic, instance="instance-1")
    again.wait_for("its partitions back", lambda e: e.event == "assigned" and len(e.partitions) == 2)
    s.notes["partner_after"] = max(e.metrics.get("rebalance-total") or 0 for e in two.events)
    return s


def consumer_grow(bed: Bed, topic: str) -> Scenario:
    s = Scenario(CONSUMER_GROUP, "consumer", {}, {})
    a = bed.member(s, "a", topic)
    a.wait_for("first assignment", lambda e: e.event == "assigned" and len(e.partitions) == 4)
    b = bed.member(s, "b", topic)
    b.wait_for("its partitions", lambda e: e.event == "assigned" and len(e.partitions) == 2)
    # its reconciliation recorded as finished (after the callback, in the background thread)
    b.wait_for("the rebalance's end", lambda e: e.event == "rebalance" and (e.metrics.get("rebalance-total") or 0) >= 2)
    return s


SCENARIOS: dict[str, tuple[Callable[[Bed, str], Scenario], int]] = {
    EAGER_GROUP: (eager_grow, 6), COOPERATIVE_GROUP: (cooperative_grow, 4),
    STATIC_GROUP: (static_restart, 4), CONSUMER_GROUP: (consumer_grow, 4)}


@dataclass
class Computed:
    scenario: Scenario
    with_logs: list[RebalanceCostRow]
    alone: dict[tuple[int, str | None], RebalanceCostRow]   # (generation, restarted member) -> records-only row


@pytest.fixture(scope="module")
def bed(kafka_broker: KafkaBroker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Computed]]:
    root = tmp_path_factory.mktemp("cost_testbed")
    (root / "clients").mkdir()
    admin = KafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap_servers, client_id="cgh-cost-testbed")
    admin.create_topics([NewTopic(f"{group}-topic", partitions, 1) for group, (_, partitions) in SCENARIOS.items()])
    admin.close()
    test_bed = Bed(kafka_broker, root / "clients")
    scenarios: dict[str, Scenario] = {}
    failures: list[BaseException] = []

    def run(group: str) -> None:
        try:
            scenarios[group] = SCENARIOS[group][0](test_bed, f"{group}-topic")
        except (AssertionError, OSError, ValueError) as failure:  # reported once every scenario has stopped
            failures.append(failure)

    threads = [threading.Thread(target=run, args=(g,), name=g) for g in SCENARIOS]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        if failures:
            raise failures[0]
        # Members close one by one: the groups' later rebalances are compared too.
        for s in scenarios.values():
            for process in s.processes()[::-1]:
                process.close()
        for segment in kafka_broker.consumer_offsets_segments(with_data_only=True):
            target = root / segment.parent.name / segment.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(segment, target)
        (root / "broker").mkdir()
        shutil.copyfile(kafka_broker.server_log, root / "broker" / "server.log")
        (root / "scenarios.json").write_text(json.dumps({"scenarios": {}}))
        sample = load_sample(root)
        yield {group: _compute(sample, s) for group, s in scenarios.items()}
    finally:
        for process in test_bed.started:
            process.kill()


def _compute(sample: Sample, s: Scenario) -> Computed:
    records = sample.records[s.group]
    commits = commits_by_partition(
        {"topic": r.record.key.topic, "partition": r.record.key.partition, "offset": r.record.value.offset,
         "at": dt.datetime.fromtimestamp(r.timestamp / 1000, dt.UTC).replace(tzinfo=None)}
        for r in records if r.record.record_type in (0, 1) and r.record.value is not None)
    events = sample.group_events(s.group)
    with_logs = rebalance_costs(group_history(records, events, group_id=s.group), events, commits)
    alone = {(r.generation, r.restarted_member_id): r
             for r in rebalance_costs(group_history(records, [], group_id=s.group), (), commits)}
    return Computed(s, with_logs, alone)


# ---------------------------------------------------------------------------------------------------
# The clients' word


def _callbacks(s: Scenario) -> dict[str, list[ClientEvent]]:
    """member id -> its callbacks, in order (a restarted static member has a new member id)."""
    out: dict[str, list[ClientEvent]] = defaultdict(list)
    for process in s.processes():
        for e in process.events:
            if e.event in ("revoked", "lost", "assigned") and e.member_id:
                out[e.member_id].append(e)
    return out


def _positions(s: Scenario) -> dict[str, list[tuple[int, tuple[str, int]]]]:
    """member id -> the fetch positions its process's log says it set (each process is one member id)."""
    out: dict[str, list[tuple[int, tuple[str, int]]]] = {}
    for process in s.processes():
        for member_id in {e.member_id for e in process.events if e.member_id}:
            out[member_id] = process.positions()
    return out


def _true_pause(s: Scenario, row: RebalanceCostRow, p: PartitionPause) -> tuple[int, int] | None:
    """(stop, resume) in epoch ms, in the client's own word: the new owner's first assign callback naming the
    partition after the broker stored the rebalance's assignment (a restarted static member: its first, under
    its new member id), or the position its log sets for it right after (before its next revoke callback),
    and the old owner's last revoke callback naming it before that. (Rows are found by time, not by the
    generation a callback reads from `groupMetadata()`, which can still be the previous one.)"""
    calls = _callbacks(s)
    key = (p.topic, p.partition)
    after = _ms(row.rebalance_at) - SAME_INSTANT_MS if row.protocol_kind != STATIC_RESTART_KIND else 0
    resumed = [e.at_ms for e in calls.get(p.to_member or "", []) if e.event == "assigned"
               and key in e.partitions and e.at_ms >= after]
    if not resumed:
        return None
    let_go = [e.at_ms for e in calls.get(p.to_member or "", []) if e.event in ("revoked", "lost")
              and key in e.partitions and e.at_ms >= resumed[0]]
    positioned = [at for at, tp in _positions(s).get(p.to_member or "", []) if tp == key
                  and resumed[0] - CALLBACK_MS[s.protocol] <= at <= min(let_go, default=at)]
    if positioned:
        resumed = [max(resumed[0], positioned[0])]
    stops = [e.at_ms for e in calls.get(p.from_member or "", []) if e.event in ("revoked", "lost")
             and key in e.partitions and e.at_ms <= resumed[0]]
    return (stops[-1], resumed[0]) if stops else None


@pytest.mark.parametrize("group", list(SCENARIOS))
def test_every_pause_equals_the_clients_callbacks_and_records_alone_bracket_it(
        bed: dict[str, Computed], group: str) -> None:
    c = bed[group]
    tolerance = CALLBACK_MS[c.scenario.protocol]
    compared = 0
    for row in c.with_logs:
        alone = {(p.topic, p.partition): p for p in c.alone[(row.generation, row.restarted_member_id)].partitions}
        for p in row.partitions:
            truth = _true_pause(c.scenario, row, p)
            if truth is None:
                continue
            where = f"{group} generation {row.generation} {row.protocol_kind} {p.topic}-{p.partition}: {p}"
            assert (p.stop_source, p.resume_source) == (SOURCE_CLIENT, SOURCE_CLIENT), where
            assert abs(_ms(p.stopped_at) - truth[0]) <= tolerance, (truth, where)
            assert abs(_ms(p.resumed_at) - truth[1]) <= tolerance, (truth, where)
            true_ms = truth[1] - truth[0]
            other = alone[(p.topic, p.partition)]
            assert other.pause_low_ms <= true_ms + tolerance, (true_ms, other)
            assert other.pause_high_ms is None or true_ms <= other.pause_high_ms + tolerance, (true_ms, other)
            if c.scenario.protocol == "consumer":
                # the members' assignment records: the old owner's release bounds the stop, the new owner's
                # assignment the resume (no commit follows here to bound it above: nothing is produced)
                assert other.stopped_high is not None and other.resumed_low is not None, other
                assert other.resumed_low >= other.stopped_high, other
            compared += 1
    # growth, and the closes after it
    assert compared >= {EAGER_GROUP: 12, COOPERATIVE_GROUP: 2, STATIC_GROUP: 2, CONSUMER_GROUP: 2}[group], compared


def _row_ending(c: Computed, at_ms: int, kind: str) -> RebalanceCostRow | None:
    """The rebalance whose stored assignment a client's assign callback at `at_ms` follows (within a second)."""
    rows = [r for r in c.with_logs if r.protocol_kind == kind and r.restarted_member_id is None
            and r.rebalance_at is not None
            and _ms(r.rebalance_at) - SAME_INSTANT_MS <= at_ms <= _ms(r.rebalance_at) + 1000]
    return max(rows, key=lambda r: _ms(r.rebalance_at)) if rows else None


def test_eager_pauses_cover_each_members_own_rebalance_latency(bed: dict[str, Computed]) -> None:
    c = bed[EAGER_GROUP]
    checked, seen = 0, []
    for process in c.scenario.processes():
        for event, latency in process.latencies():
            seen.append((process.client_id, event.event, event.generation, latency))
            row = _row_ending(c, event.at_ms, EAGER)
            own = [p for p in row.partitions if p.from_member == p.to_member == event.member_id] if row else []
            if not own:   # its first generation: nothing to pause
                continue
            start, end = event.at_ms - latency, event.at_ms   # the assign callback follows the SyncGroup
            for p in own:
                where = (process.client_id, event.generation, latency, p)
                assert _ms(p.stopped_at) <= start + EDGE_MS and _ms(p.resumed_at) >= end - EDGE_MS, where
                assert p.pause_ms is not None and latency - EDGE_MS <= p.pause_ms <= latency + EAGER_SLACK_MS, where
            assert row is not None and _ms(row.window_start) <= start + EDGE_MS and _ms(row.window_end) >= end - EDGE_MS
            checked += 1
    # a in generations 2 and 3, b in 3 (and the rebalances of the closes)
    assert checked >= 3, (seen, [(r.generation, [(p.partition, p.from_member, p.to_member) for p in r.partitions])
                                 for r in c.with_logs])
    assert {r.protocol_kind for r in c.with_logs if r.partitions} == {EAGER}


def test_cooperative_kept_partitions_never_pause_and_moves_cover_the_second_round(bed: dict[str, Computed]) -> None:
    c = bed[COOPERATIVE_GROUP]
    (a,) = c.scenario.members["a"]
    (b,) = c.scenario.members["b"]
    b_got = next(e for e in b.events if e.event == "assigned" and e.partitions)
    moved = next(e for e in a.events if e.event == "revoked")
    assert moved.partitions == b_got.partitions and len(moved.partitions) == 2
    row = _row_ending(c, b_got.at_ms, COOPERATIVE)
    assert row is not None, (b_got, [(r.generation, r.rebalance_at) for r in c.with_logs])
    assert {(p.topic, p.partition) for p in row.partitions} == set(moved.partitions)
    assert all(p.from_member == moved.member_id and p.via_generation == row.generation - 1
               for p in row.partitions), (moved, row.partitions)
    # the first round: a kept two partitions and consumed them; the client measured a rebalance all the same
    first = [r for r in c.with_logs if r.generation == row.generation - 1]
    assert first and all(not r.partitions for r in first) and row.partitions_kept >= 2
    round_two = min(a.latencies(), key=lambda x: abs(x[0].at_ms - b_got.at_ms))
    assert abs(round_two[0].at_ms - b_got.at_ms) <= SAME_INSTANT_MS, (round_two, b_got)
    start, end = round_two[0].at_ms - round_two[1], round_two[0].at_ms
    for p in row.partitions:
        where = (round_two, p)
        assert _ms(p.stopped_at) <= start + EDGE_MS and _ms(p.resumed_at) >= end - EDGE_MS, where
        assert p.pause_ms is not None and round_two[1] - EDGE_MS <= p.pause_ms <= round_two[1] + EAGER_SLACK_MS, where


def test_a_static_restart_pauses_only_its_partitions_without_a_rebalance(bed: dict[str, Computed]) -> None:
    c = bed[STATIC_GROUP]
    old, new = c.scenario.members["s1"]
    # The partner's client recorded no rebalance between the close and the return: none happened.
    assert c.scenario.notes["partner_before"] == c.scenario.notes["partner_after"]
    closed = [e for e in old.events if e.event == "revoked"][-1]   # at its close (the first: s2's join)
    back = next(e for e in new.events if e.event == "assigned" and e.partitions)
    assert closed.partitions == back.partitions
    (row,) = [r for r in c.with_logs if r.protocol_kind == STATIC_RESTART_KIND]
    assert row.restarted_member_id == back.member_id
    assert {(p.topic, p.partition) for p in row.partitions} == set(back.partitions)
    assert not [r for r in c.with_logs if r.restarted_member_id is None and r.rebalance_at is not None
                and closed.at_ms <= _ms(r.rebalance_at) <= back.at_ms]
    (rejoin, latency), *_ = new.latencies()
    for p in row.partitions:
        assert (p.from_member, p.to_member) == (closed.member_id, back.member_id)
        # the new process's JoinGroup/SyncGroup lies within the pause, which also holds the restart itself
        assert _ms(p.stopped_at) <= rejoin.at_ms - latency + EDGE_MS and _ms(p.resumed_at) >= rejoin.at_ms - EDGE_MS
        assert p.pause_ms is not None and p.pause_ms >= latency


def test_consumer_protocol_moves_stop_and_resume_within_the_members_reconciliations(
        bed: dict[str, Computed]) -> None:
    c = bed[CONSUMER_GROUP]
    (a,) = c.scenario.members["a"]
    (b,) = c.scenario.members["b"]
    moved = next(e for e in a.events if e.event == "revoked")
    rows = [r for r in c.with_logs if r.protocol_kind == CONSUMER_PROTOCOL
            and {(p.topic, p.partition) for p in r.partitions} & set(moved.partitions)
            and any(p.to_member in {e.member_id for e in b.events} for p in r.partitions)]
    assert rows, [(r.generation, r.partitions) for r in c.with_logs]
    paused = {(p.topic, p.partition): p for r in rows for p in r.partitions}
    assert set(paused) == set(moved.partitions)   # a's kept partitions never paused

    def window(member: RebalanceMember, after_ms: int) -> tuple[int, int]:
        """The first reconciliation the client recorded as ended after `after_ms`: its start at the earliest
        and its end at the latest, the end known to lie between two polls' checks."""
        for e, latency in member.latencies():
            if e.event == "rebalance" and e.at_ms >= after_ms:
                assert e.since_ms is not None
                return round(e.since_ms - latency), e.at_ms
        raise AssertionError(f"no reconciliation of {member.client_id} after {after_ms}")

    for key, p in paused.items():
        a_start, a_end = window(a, moved.at_ms)
        b_start, b_end = window(b, _ms(p.resumed_at) - CALLBACK_MS["consumer"])
        assert a_start - EDGE_MS <= _ms(p.stopped_at) <= a_end + EDGE_MS, (key, p, a_start, a_end)
        assert b_start - EDGE_MS <= _ms(p.resumed_at) <= b_end + EDGE_MS, (key, p, b_start, b_end)
