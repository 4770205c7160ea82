"""The histories coordinator_core reads from real segments are the histories the scenarios produced.

Expected values come from scenarios.json: what each scenario's clients reported (generation, member id,
assignment, group instance id) and what the scenario did (transactions committed or aborted, the group
deleted, static members restarted, KIP-848 members joining and leaving). The actual values are
coordinator_core's decoding of the `__consumer_offsets` segments. The causes the scenarios recorded are
checked against the broker's own server.log lines, so that the sample's `scenarios.json` can be trusted as
the expected output of the log-driven cause attribution.

Runs on the committed sample and on the live broker's segments of this session.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import coordinator_core
from tests.integration.conftest import SAMPLE_JAR_SETS, load_sample
from tests.kafka_testbed.broker import kafka_version
from tests.kafka_testbed.compare import segment_files
from tests.kafka_testbed.scenarios import scenario_names

GROUP_METADATA = 2
OFFSET_COMMIT = 1
CONSUMER_GROUP_METADATA = 3
CONSUMER_GROUP_MEMBER_METADATA = 5
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = 8


@dataclass
class Decoded:
    partition: int
    entry: Any
    record: Any | None          # None for control records


def decode_directory(directory: Path) -> tuple[dict[str, list[Decoded]], list[Decoded], dict[int, list[str]]]:
    """Records by group id, control records, and decode errors by partition."""
    by_group: dict[str, list[Decoded]] = defaultdict(list)
    controls: list[Decoded] = []
    errors: dict[int, list[str]] = defaultdict(list)
    for segment in segment_files(directory):
        partition = int(segment.parent.name.rsplit("-", 1)[1])
        for entry in coordinator_core.read_segment(segment):
            if entry.is_control:
                controls.append(Decoded(partition, entry, None))
                continue
            try:
                record = coordinator_core.decode_record(entry.key, entry.value)
            except coordinator_core.DecodeError as exc:
                errors[partition].append(f"offset {entry.offset}: {exc}")
                continue
            group = getattr(record.key, "group", None) or getattr(record.key, "group_id", None)
            by_group[group].append(Decoded(partition, entry, record))
    return by_group, controls, errors


class Data:
    def __init__(self, directory: Path, scenarios: dict[str, Any], server_log: Path, client_log_dir: Path) -> None:
        self.by_group, self.controls, self.errors = decode_directory(directory)
        self.scenarios = scenarios["scenarios"]
        self.kafka_version = scenarios["kafka_version"]
        self.server_log = server_log.read_text(encoding="utf-8", errors="replace")
        self.client_logs = "\n".join(p.read_text(encoding="utf-8", errors="replace")
                                     for p in sorted(client_log_dir.glob("*.log")))

    def log_line_with(self, *parts: str) -> bool:
        """Whether one server.log line contains every one of `parts`."""
        return any(all(p in line for p in parts) for line in self.server_log.splitlines())

    def records(self, scenario: dict[str, Any]) -> list[Decoded]:
        records = self.by_group.get(scenario["group_id"], [])
        assert records, f"no records for group {scenario['group_id']}"
        partitions = {d.partition for d in records}
        assert len(partitions) == 1, f"a group's records live in one partition, found {partitions}"
        partition = partitions.pop()
        assert not self.errors.get(partition), f"undecodable records in partition {partition}: " + \
            "; ".join(self.errors[partition][:5])
        return records


@pytest.fixture(scope="session")
def sample_data() -> dict[str, Data]:
    out = {}
    for jar_set in SAMPLE_JAR_SETS:
        sample = load_sample(jar_set)
        out[jar_set] = Data(sample.path, sample.scenarios, sample.path / "broker" / "server.log",
                            sample.path / "clients")
    return out


@pytest.fixture(scope="module")
def live_data(live_run) -> Data:  # type: ignore[no-untyped-def]
    return Data(live_run.segments_dir, live_run.scenarios, live_run.broker.server_log, live_run.client_log_dir)


@pytest.fixture(params=[*(f"sample-{j}" for j in SAMPLE_JAR_SETS), pytest.param("live", marks=pytest.mark.integration)])
def data(request: pytest.FixtureRequest) -> Data:
    if request.param == "live":
        return request.getfixturevalue("live_data")  # type: ignore[no-any-return]
    return request.getfixturevalue("sample_data")[request.param.removeprefix("sample-")]  # type: ignore[no-any-return]


CLASSIC = ["range-grow", "member-leave", "member-killed", "max-poll-exceeded", "static-members",
           "roundrobin-group", "sticky-group", "cooperative-sticky", "group-deleted", "storm-poll-timeout",
           "storm-crash-loop"]


def group_metadata_by_generation(records: list[Decoded]) -> dict[int, list[Any]]:
    out: dict[int, list[Any]] = defaultdict(list)
    for d in records:
        if d.record.record_type == GROUP_METADATA and d.record.value is not None:
            out[d.record.value.generation].append(d.record.value)
    return out


@pytest.mark.parametrize("name", CLASSIC)
def test_classic_generations_members_and_assignments(data: Data, name: str) -> None:
    scenario = data.scenarios[name]
    records = data.records(scenario)
    by_generation = group_metadata_by_generation(records)
    generations = [d.record.value.generation for d in records
                   if d.record.record_type == GROUP_METADATA and d.record.value is not None]
    assert generations == sorted(generations), "generations go backwards"
    assert sorted(by_generation) == [g["generation"] for g in scenario["generations"]]
    for expected in scenario["generations"]:
        values = by_generation[expected["generation"]]
        first = values[0]
        # A group the first JoinGroup just created is stored with no protocol type yet (generation 0).
        assert first.protocol_type == ("" if expected["cause"] == "group_created" else "consumer")
        assert first.protocol == expected["protocol"]
        member_ids = {m.client_id: m.member_id for m in first.members}
        assert member_ids == expected["member_ids"], expected["generation"]
        instance_ids = {m.client_id: m.group_instance_id for m in first.members if m.group_instance_id}
        assert instance_ids == expected["group_instance_ids"]
        if expected["members"]:
            leader_client = next(m.client_id for m in first.members if m.member_id == first.leader)
            assert leader_client in expected["members"]
        for member in first.members:
            assignment = coordinator_core.decode_assignment(member.assignment)
            got = sorted([tp[0], tp[1]] for tp in assignment.partitions)
            assert got == expected["assignment"][member.client_id], (expected["generation"], member.client_id)
            subscription = coordinator_core.decode_subscription(member.subscription)
            assert sorted(subscription.topics) == sorted(scenario["topics"])


@pytest.mark.parametrize("name", CLASSIC)
def test_causes_recorded_by_scenarios_match_the_brokers_log(data: Data, name: str) -> None:
    scenario = data.scenarios[name]
    group = scenario["group_id"]
    checked = 0
    previous: dict[str, Any] = {"member_ids": {}}
    for generation in scenario["generations"]:
        trigger = generation["trigger"]
        leavers = [trigger] if trigger is not None else sorted(previous["member_ids"])
        for cause in generation["cause"].split("+"):
            if cause in ("group_created", "cooperative_follow_up"):
                continue  # no member event: creation, or the second round the first one asked for
            if cause in ("join", "rejoin"):
                member_id = generation["member_ids"][trigger]
                assert f"member id {member_id}" in data.server_log or f"member {member_id}" in data.server_log
            elif cause in ("leave_group", "max_poll_interval_exceeded"):
                member_id = previous["member_ids"][trigger]
                # 4.x: "[Group G] Member M has left group through explicit `LeaveGroup` request; ..."
                # 3.x (Scala): "Member MemberMetadata(memberId=M, ...) has left group G through explicit
                # `LeaveGroup`; ..."
                assert data.log_line_with(member_id, "has left group", "through explicit `LeaveGroup`"), member_id
                if cause == "max_poll_interval_exceeded":
                    assert "Consumer poll timeout has expired" in data.client_logs
            elif cause == "session_timeout":
                for leaver in leavers:
                    member_id = previous["member_ids"][leaver]
                    assert data.log_line_with(f"Member {member_id} in group {group} has failed"), leaver
            else:
                raise AssertionError(f"cause {cause!r} is not in the scenarios' vocabulary")
            checked += 1
        previous = {"member_ids": dict(generation["member_ids"])}
        for restart in scenario["static_restarts"]:
            if restart["generation"] == generation["generation"]:
                previous["member_ids"][restart["client_id"]] = restart["new_member_id"]
    assert checked >= len(scenario["generations"]) // 2


def test_static_member_restart_swaps_the_member_id_without_a_new_generation(data: Data) -> None:
    scenario = data.scenarios["static-members"]
    (restart,) = scenario["static_restarts"]
    values = group_metadata_by_generation(data.records(scenario))[restart["generation"]]
    ids_over_time = [{m.group_instance_id: m.member_id for m in v.members} for v in values]
    assert ids_over_time[0][restart["group_instance_id"]] == restart["old_member_id"]
    assert ids_over_time[-1][restart["group_instance_id"]] == restart["new_member_id"]
    assert restart["generation"] + 1 == scenario["generations"][-1]["generation"]  # only the final empty one


def test_deleted_group_leaves_tombstones_for_the_group_and_every_committed_offset(data: Data) -> None:
    scenario = data.scenarios["group-deleted"]
    assert scenario["deleted"]
    records = data.records(scenario)
    last_group_record = [d for d in records if d.record.record_type == GROUP_METADATA][-1]
    assert last_group_record.entry.value is None and last_group_record.record.value is None
    last_offsets: dict[str, Any] = {}
    for d in records:
        if d.record.record_type == OFFSET_COMMIT:
            last_offsets[f"{d.record.key.topic}-{d.record.key.partition}"] = d.record.value
    assert set(last_offsets) == set(scenario["committed_offsets"])
    assert all(value is None for value in last_offsets.values())
    committed_before = {}
    for d in records:
        if d.record.record_type == OFFSET_COMMIT and d.record.value is not None:
            committed_before[f"{d.record.key.topic}-{d.record.key.partition}"] = d.record.value.offset
    assert committed_before == scenario["committed_offsets"]


def test_transactional_offset_commits_and_their_markers(data: Data) -> None:
    scenario = data.scenarios["transactions"]
    records = [d for d in data.records(scenario) if d.record.record_type == OFFSET_COMMIT]
    assert all(d.entry.is_transactional for d in records)
    producer_id = records[0].entry.producer_id
    markers = sorted((c for c in data.controls
                      if c.partition == records[0].partition and c.entry.producer_id == producer_id),
                     key=lambda c: c.entry.offset)
    outcomes = []
    previous_marker = -1
    for marker in markers:  # a transaction is everything of this producer since its previous marker
        in_txn = [d for d in records if previous_marker < d.entry.offset < marker.entry.offset]
        outcomes.append({
            "outcome": {"COMMIT": "commit", "ABORT": "abort"}[marker.entry.control_type],
            "offsets": {f"{d.record.key.topic}-{d.record.key.partition}": d.record.value.offset for d in in_txn},
            "metadata": {d.record.value.metadata for d in in_txn},
        })
        previous_marker = marker.entry.offset
    expected = [{"outcome": t["outcome"], "offsets": t["offsets"], "metadata": {t["metadata"]}}
                for t in scenario["transactions"]]
    assert outcomes == expected


def test_consumer_protocol_group_records(data: Data) -> None:
    if data.kafka_version.startswith("3."):
        assert "consumer-protocol" not in data.scenarios  # 3.x samples run classic groups only
        return
    scenario = data.scenarios["consumer-protocol"]
    records = data.records(scenario)
    reported = {mid: client for step in scenario["consumer_group_steps"] for client, mid in step["member_ids"].items()}
    assert len(reported) == 2
    member_metadata = [d for d in records if d.record.record_type == CONSUMER_GROUP_MEMBER_METADATA]
    written = {d.record.key.member_id: d.record.value.client_id for d in member_metadata if d.record.value is not None}
    assert written == reported
    # Each member left: its member metadata ends with a tombstone.
    last = {d.record.key.member_id: d.record.value for d in member_metadata}
    assert set(last) == set(reported) and all(v is None for v in last.values())
    epochs = [d.record.value.epoch for d in records
              if d.record.record_type == CONSUMER_GROUP_METADATA and d.record.value is not None]
    assert epochs == sorted(epochs) and len(set(epochs)) == len(epochs) and len(epochs) >= 3
    # Every reconciled assignment the clients reported appears as a current-assignment record.
    assigned = defaultdict(list)
    for d in records:
        if d.record.record_type == CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT and d.record.value is not None:
            partitions = sorted(p for tp in d.record.value.assigned_partitions for p in tp.partitions)
            assigned[d.record.key.member_id].append(partitions)
    for step in scenario["consumer_group_steps"]:
        for client, member_id in step["member_ids"].items():
            want = sorted(p for _, p in step["assignment"][client])
            assert want in assigned[member_id], (step["after"], client)


@pytest.mark.parametrize("jar_set", SAMPLE_JAR_SETS)
def test_sample_scenarios_document_is_complete(jar_set: str) -> None:
    sample = load_sample(jar_set)
    assert set(sample.scenarios["scenarios"]) == set(scenario_names(jar_set))
    assert set(scenario_names(jar_set)) >= set(CLASSIC) | {"transactions"}
    groups = [s["group_id"] for s in sample.scenarios["scenarios"].values()]
    assert len(groups) == len(set(groups))
    assert sample.scenarios["kafka_version"] == kafka_version(jar_set)  # the sample matches the pinned jar set
