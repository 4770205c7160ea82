"""Envelopes (stock log4j, Strimzi, Connect, Spring Boot, logback, Python logging, CRI, docker, JSON) and time zones.

The same Kafka message is wrapped in each layout; the expected envelope fields are written by hand.
Also: lines quoted in the reference catalogue, unrelated lines, and known non-event coordinator lines.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pytest

from coordinator_core.logs import classify_log_entry, parse_log_line

GC = "kafka.coordinator.group.GroupCoordinator"
CC = "org.apache.kafka.clients.consumer.internals.ConsumerCoordinator"
M1 = "consumer-orders-svc-1-5b0f5b53-6c2e-4a8e-9a3f-1d7c2f0e9b11"
M2 = "consumer-orders-svc-2-a41d0c77-2f8e-4d1b-8e1c-3b9f7e2a5c60"
STABILIZED = "[GroupCoordinator 3]: Stabilized group orders-svc generation 7 (__consumer_offsets-12) with 2 members"
JOINING = "[Consumer clientId=consumer-orders-svc-1, groupId=orders-svc] (Re-)joining group"


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=timezone.utc)  # type: ignore[misc]


def test_strimzi_layout_with_thread_suffix() -> None:
    event = parse_log_line(f"2023-10-05 15:07:23,881 INFO {STABILIZED} ({GC}) [executor-Rebalance]")
    assert event is not None
    assert (event.event_type, event.timestamp, event.level, event.logger, event.thread) == (
        "GROUP_STABILIZED", utc(2023, 10, 5, 15, 7, 23, 881000), "INFO", GC, "executor-Rebalance")
    assert (event.broker_id, event.group_id, event.generation, event.offsets_partition, event.member_count) == (
        3, "orders-svc", 7, 12, 2)


def test_log4j2_iso8601_layout() -> None:
    event = parse_log_line(f"2025-03-20T09:15:02,481 INFO {STABILIZED} ({GC}) [group-coordinator-event-processor-1]")
    assert event is not None
    assert (event.timestamp, event.thread) == (
        utc(2025, 3, 20, 9, 15, 2, 481000), "group-coordinator-event-processor-1")


def test_connect_layout_with_line_number_after_logger() -> None:
    event = parse_log_line(f"[2023-01-01 12:00:04,070] INFO {JOINING} ({CC}:476)")
    assert event is not None
    assert (event.event_type, event.logger, event.client_id, event.group_id) == (
        "CLIENT_JOIN_SENT", CC, "consumer-orders-svc-1", "orders-svc")


def test_connect_worker_prefix_sets_connect_protocol_type() -> None:
    event = parse_log_line(
        "[2023-01-01 12:00:04,070] INFO [Worker clientId=connect-1, groupId=connect-cluster] (Re-)joining group"
        " (org.apache.kafka.connect.runtime.distributed.WorkerCoordinator:225)")
    assert event is not None
    assert (event.event_type, event.client_id, event.group_id, event.protocol_type) == (
        "CLIENT_JOIN_SENT", "connect-1", "connect-cluster", "connect")


def test_spring_boot_layout_with_abbreviated_logger() -> None:
    event = parse_log_line(
        "2022-09-05 15:20:44.151  INFO 1 --- [main] o.a.k.c.c.internals.ConsumerCoordinator  : " + JOINING)
    assert event is not None
    assert (event.event_type, event.timestamp, event.level, event.logger, event.thread, event.client_id) == (
        "CLIENT_JOIN_SENT", utc(2022, 9, 5, 15, 20, 44, 151000), "INFO", "o.a.k.c.c.internals.ConsumerCoordinator",
        "main", "consumer-orders-svc-1")


def test_logback_layout() -> None:
    event = parse_log_line(
        "2021-06-02 17:09:25.448 [main] INFO o.a.k.c.consumer.internals.AbstractCoordinator - " + JOINING)
    assert event is not None
    assert (event.event_type, event.logger, event.thread) == (
        "CLIENT_JOIN_SENT", "o.a.k.c.consumer.internals.AbstractCoordinator", "main")


# ---- Python logging (kafka-python) --------------------------------------------------------------------------
KP_JOINING = "(Re-)joining group orders-svc"


def test_python_layout_with_thread_as_in_the_sample() -> None:
    event = parse_log_line(f"[2026-11-21 05:32:14,672] INFO [worker-1] {KP_JOINING} (kafka.coordinator)")
    assert event is not None
    assert (event.event_type, event.line_kind, event.timestamp, event.level, event.logger, event.thread,
            event.group_id, event.message) == (
        "CLIENT_JOIN_SENT", "kp_joining", utc(2026, 11, 21, 5, 32, 14, 672000), "INFO", "kafka.coordinator",
        "worker-1", "orders-svc", KP_JOINING)


@pytest.mark.parametrize(("line", "level"), [
    (f"2026-11-21 05:32:14,672 WARNING kafka.coordinator {KP_JOINING}", "WARN"),
    (f"2026-11-21 05:32:14,672 CRITICAL kafka.coordinator {KP_JOINING}", "ERROR"),
    (f"2026-11-21 05:32:14,672 - kafka.coordinator - DEBUG - {KP_JOINING}", "DEBUG"),
    (f"[2026-11-21 05:32:14,672] WARNING {KP_JOINING} (kafka.coordinator)", "WARN"),
    (f"2026-11-21 05:32:14,672 INFO     kafka.coordinator {KP_JOINING}", "INFO"),   # %(levelname)-8s
])
def test_python_layouts_without_thread_and_python_level_names(line: str, level: str) -> None:
    event = parse_log_line(line)
    assert event is not None
    assert (event.line_kind, event.timestamp, event.level, event.logger, event.thread, event.group_id) == (
        "kp_joining", utc(2026, 11, 21, 5, 32, 14, 672000), level, "kafka.coordinator", None, "orders-svc")


def test_python_layout_with_padded_level_keeps_the_thread() -> None:
    event = parse_log_line(f"[2026-11-21 05:32:14,672] INFO     [worker-1] {KP_JOINING} (kafka.coordinator)")
    assert event is not None
    assert (event.line_kind, event.thread, event.group_id) == ("kp_joining", "worker-1", "orders-svc")


def test_java_stock_line_is_not_taken_for_the_python_layout() -> None:
    event = parse_log_line(f"[2023-01-01 12:00:00,123] INFO {STABILIZED} ({GC})")
    assert event is not None
    assert (event.event_type, event.broker_id, event.thread) == ("GROUP_STABILIZED", 3, None)


def test_same_text_from_kafka_python_and_from_java_keeps_its_own_row() -> None:
    text = "Successfully joined group orders-svc with generation 7"
    java = parse_log_line(f"[2023-01-01 12:00:00,123] INFO {text} (org.apache.kafka.clients.consumer.internals"
                          ".AbstractCoordinator)")
    python = parse_log_line(f"[2023-01-01 12:00:00,123] INFO [MainThread] {text} (kafka.coordinator)")
    assert java is not None and python is not None
    assert (java.line_kind, java.generation, python.line_kind, python.generation) == (
        "c1_joined_0_10", 7, "kp_joined_generation_id", 7)


def test_python_traceback_is_the_throwable_and_names_the_exception_from_its_last_line() -> None:
    entry = (
        "[2026-11-21 05:32:14,672] ERROR [orders-svc-heartbeat] Heartbeat thread for group orders-svc failed due to"
        " unexpected error: KafkaConnectionError: socket disconnected (kafka.coordinator.heartbeat)\n"
        "Traceback (most recent call last):\n"
        '  File "/app/kafka/coordinator/base.py", line 1078, in run\n'
        "    self._run_once()\n"
        "kafka.errors.KafkaConnectionError: KafkaConnectionError: socket disconnected")
    outcome = classify_log_entry(entry)
    assert outcome.event is not None
    assert (outcome.line_kind, outcome.event.level, outcome.event.group_id, outcome.event.error) == (
        "kp_heartbeat_thread_failed", "ERROR", "orders-svc", "KafkaConnectionError")


def test_plain_python_layout_splits_a_traceback_off_the_message() -> None:
    entry = ("2026-11-21 05:32:23,000 ERROR kafka.coordinator.consumer Offset commit failed: This is likely to cause"
             " duplicate message delivery\nTraceback (most recent call last):\n"
             "kafka.errors.CommitFailedError: CommitFailedError: kicked out")
    outcome = classify_log_entry(entry)
    assert (outcome.status, outcome.line_kind) == ("known_non_event", "kp_offsets")


@pytest.mark.parametrize("wrapped", [
    f"2021-05-04T16:41:31.006683114Z stdout F [2021-05-04 16:41:31,006] INFO {STABILIZED} ({GC})",
    f"2021-05-04T16:41:31.006683114Z [2021-05-04 16:41:31,006] INFO {STABILIZED} ({GC})",
    f"kafka-1  | [2021-05-04 16:41:31,006] INFO {STABILIZED} ({GC})",
    f"[pod/kafka-0/kafka] [2021-05-04 16:41:31,006] INFO {STABILIZED} ({GC})",
    '{"log":"[2021-05-04 16:41:31,006] INFO ' + STABILIZED + ' (' + GC + ')\\n","stream":"stdout",'
    '"time":"2021-05-04T16:41:31.006683114Z"}',
])
def test_container_prefixes_are_removed(wrapped: str) -> None:
    event = parse_log_line(wrapped)
    assert event is not None
    assert (event.event_type, event.timestamp, event.logger, event.group_id, event.generation) == (
        "GROUP_STABILIZED", utc(2021, 5, 4, 16, 41, 31, 6000), GC, "orders-svc", 7)


def test_logstash_json_layout_with_offset_timestamp() -> None:
    event = parse_log_line(
        '{"@timestamp":"2022-09-05T15:20:44.151+02:00","@version":"1","message":"' + JOINING + '",'
        '"logger_name":"' + CC + '","thread_name":"main","level":"INFO","level_value":20000}')
    assert event is not None
    assert (event.event_type, event.timestamp, event.level, event.logger, event.thread, event.group_id) == (
        "CLIENT_JOIN_SENT", utc(2022, 9, 5, 13, 20, 44, 151000), "INFO", CC, "main", "orders-svc")


def test_log4j2_json_layout_with_epoch_millis_and_thrown() -> None:
    event = parse_log_line(
        '{"timeMillis":1700000000123,"thread":"main","level":"ERROR","loggerName":"' + CC + '","message":'
        '"[Consumer clientId=c1, groupId=g1] Rebalance failed.","thrown":{"name":'
        '"org.apache.kafka.common.errors.RebalanceInProgressException","message":"rebalancing"}}')
    assert event is not None
    assert (event.event_type, event.timestamp, event.level, event.error, event.group_id) == (
        "CLIENT_JOIN_FAILED", utc(2023, 11, 14, 22, 13, 20, 123000), "ERROR",
        "org.apache.kafka.common.errors.RebalanceInProgressException", "g1")


def test_ecs_json_layout_with_nested_keys() -> None:
    event = parse_log_line(
        '{"@timestamp":"2024-01-02T03:04:05.678Z","log":{"level":"WARN","logger":"' + CC + '"},"message":'
        '"[Consumer clientId=c1, groupId=g1] consumer poll timeout has expired. This means the time between'
        ' subsequent calls to poll() was longer than the configured max.poll.interval.ms, which typically implies"}')
    assert event is not None
    assert (event.event_type, event.timestamp, event.level, event.logger, event.cause_class) == (
        "CLIENT_POLL_TIMEOUT", utc(2024, 1, 2, 3, 4, 5, 678000), "WARN", CC, "poll_timeout")


# ---- time zones ----------------------------------------------------------------------------------------
LINE_AT = "[{}] INFO " + STABILIZED + " (" + GC + ")"


@pytest.mark.parametrize(("stamp", "zone", "expected"), [
    ("2024-05-06 07:08:09,123", "UTC", utc(2024, 5, 6, 7, 8, 9, 123000)),
    ("2024-05-06 07:08:09,123", "Europe/Berlin", utc(2024, 5, 6, 5, 8, 9, 123000)),  # CEST, UTC+2
    ("2024-01-15 12:00:00,000", "Europe/Berlin", utc(2024, 1, 15, 11, 0, 0)),  # CET, UTC+1
    ("2024-01-15 12:00:00,000", "Asia/Kolkata", utc(2024, 1, 15, 6, 30, 0)),  # UTC+5:30
    # the repeated hour of a DST fall-back is read as its first occurrence (EDT, UTC-4)
    ("2024-11-03 01:30:00,000", "America/New_York", utc(2024, 11, 3, 5, 30, 0)),
    ("2024-11-03 02:30:00,000", "America/New_York", utc(2024, 11, 3, 7, 30, 0)),  # EST, UTC-5
    # a timestamp that carries its own offset ignores the source zone
    ("2024-05-06T07:08:09.123+05:00", "Europe/Berlin", utc(2024, 5, 6, 2, 8, 9, 123000)),
    ("2024-05-06T07:08:09.123456789Z", "Europe/Berlin", utc(2024, 5, 6, 7, 8, 9, 123456)),
])
def test_broker_timestamps_are_read_in_the_source_zone_and_returned_in_utc(
        stamp: str, zone: str, expected: datetime) -> None:
    event = parse_log_line(LINE_AT.format(stamp), source_zone=zone)
    assert event is not None
    assert event.timestamp == expected
    assert event.timestamp.utcoffset() == timedelta(0)


def test_zone_may_be_a_tzinfo() -> None:
    event = parse_log_line(LINE_AT.format("2024-07-01 00:30:00,000"), source_zone=ZoneInfo("America/Los_Angeles"))
    assert event is not None
    assert event.timestamp == utc(2024, 7, 1, 7, 30, 0)


def test_unknown_zone_is_an_error_not_a_guess() -> None:
    with pytest.raises(ZoneInfoNotFoundError):
        parse_log_line(LINE_AT.format("2024-07-01 00:30:00,000"), source_zone="Mars/Olympus_Mons")


def test_broker_id_argument_fills_lines_without_prefix_but_not_over_the_prefix() -> None:
    no_prefix = parse_log_line(
        "[2024-01-01 00:00:00,000] INFO Group leader [member.id: a, group.instance.id: None] failed to join before"
        " rebalance timeout, while new leader b was elected. (kafka.coordinator.group.GroupMetadata)", broker_id=7)
    with_prefix = parse_log_line(LINE_AT.format("2024-01-01 00:00:00,000"), broker_id=7)
    assert no_prefix is not None and with_prefix is not None
    assert (no_prefix.broker_id, with_prefix.broker_id) == (7, 3)


# ---- lines quoted in the reference (coordinator-log-formats.md), parsed -----------------------------------
REFERENCE_LINES = [
    ("[2023-01-01 12:00:00,123] INFO [GroupCoordinator 1]: Stabilized group orders-svc generation 7"
     " (__consumer_offsets-12) with 3 members (kafka.coordinator.group.GroupCoordinator)",
     ("GROUP_STABILIZED", 1, 12, "orders-svc", 7, None, None)),
    ("[2025-03-20 09:15:02,481] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=12] Stabilized group"
     " orders-svc generation 7 with 3 members. (org.apache.kafka.coordinator.group.GroupMetadataManager)",
     ("GROUP_STABILIZED", 1, 12, "orders-svc", 7, None, None)),
    ("[2023-01-01 12:00:01,004] INFO [GroupCoordinator 1]: Preparing to rebalance group orders-svc in state"
     " PreparingRebalance with old generation 6 (__consumer_offsets-12) (reason: removing member"
     f" {M2} on heartbeat expiration) (kafka.coordinator.group.GroupCoordinator)",
     ("REBALANCE_PREPARED", 1, 12, "orders-svc", 6, M2, "session_timeout")),
    ("[2023-01-01 12:00:04,010] INFO [GroupCoordinator 1]: Stabilized group orders-svc generation 7"
     " (__consumer_offsets-12) with 2 members (kafka.coordinator.group.GroupCoordinator)",
     ("GROUP_STABILIZED", 1, 12, "orders-svc", 7, None, None)),
    ("[2023-01-01 12:05:00,300] INFO [GroupCoordinator 1]: Group orders-svc with generation 8 is now empty"
     " (__consumer_offsets-12) (kafka.coordinator.group.GroupCoordinator)",
     ("GROUP_EMPTY", 1, 12, "orders-svc", 8, None, "group_empty_or_dead")),
    ("[2023-01-01 12:00:04,052] INFO [GroupCoordinator 1]: Assignment received from leader"
     f" {M1} for group orders-svc for generation 7. The group has 2 members, 0 of which are static."
     " (kafka.coordinator.group.GroupCoordinator)",
     ("ASSIGNMENT_RECEIVED", 1, None, "orders-svc", 7, M1, None)),
    (f"[2023-01-01 12:00:01,003] INFO [GroupCoordinator 1]: Member {M2} in group orders-svc has failed, removing it"
     " from the group (kafka.coordinator.group.GroupCoordinator)",
     ("MEMBER_FAILED_SESSION_TIMEOUT", 1, None, "orders-svc", None, M2, "session_timeout")),
    ("[2023-01-01 12:10:00,777] INFO [GroupCoordinator 1]: Member MemberMetadata(memberId="
     f"{M1}, groupInstanceId=None, clientId=consumer-orders-svc-1, clientHost=/10.0.3.17, sessionTimeoutMs=45000,"
     " rebalanceTimeoutMs=300000, supportedProtocols=List(range, cooperative-sticky)) has left group orders-svc"
     " through explicit `LeaveGroup`; client reason: the consumer is being closed"
     " (kafka.coordinator.group.GroupCoordinator)",
     ("MEMBER_LEFT", 1, None, "orders-svc", None, M1, "member_left")),
    ("[2023-01-01 12:30:00,900] INFO [GroupMetadataManager brokerId=2] Finished loading offsets and group metadata"
     " from __consumer_offsets-12 in 184 milliseconds for epoch 15, of which 3 milliseconds was spent in the"
     " scheduler. (kafka.coordinator.group.GroupMetadataManager)",
     ("OFFSETS_LOADED", 2, 12, None, None, None, "coordinator_failover")),
    ("[2023-01-01 12:30:00,899] INFO [GroupCoordinator 2]: Loading group metadata for orders-svc with generation 7"
     " (kafka.coordinator.group.GroupCoordinator)",
     ("GROUP_LOADED", 2, None, "orders-svc", 7, None, "coordinator_failover")),
    ("[2025-03-20 09:15:00,112] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=12] Preparing to"
     " rebalance group orders-svc in state PreparingRebalance with old generation 6 (reason: explicit `LeaveGroup`"
     f" request for ({M2}) members.). (org.apache.kafka.coordinator.group.GroupMetadataManager)",
     ("REBALANCE_PREPARED", 1, 12, "orders-svc", 6, None, "member_left")),
    ("[2025-03-20 09:20:11,501] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=12] [GroupId"
     " orders-svc] Member Jx3aP0c9Qb2yK8vW1zL5nA fenced from the group because the member session expired."
     " (org.apache.kafka.coordinator.group.GroupMetadataManager)",
     ("CG_MEMBER_FENCED", 1, 12, "orders-svc", None, "Jx3aP0c9Qb2yK8vW1zL5nA", "session_timeout")),
    ("[2025-03-20 09:30:00,010] INFO [GroupCoordinator id=2] Finished loading of metadata from"
     " __consumer_offsets-12 with epoch 16 in 211ms where 2ms was spent in the scheduler. Loaded 5312 records which"
     " total to 1048576 bytes. (org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime)",
     ("OFFSETS_LOADED", 2, 12, None, None, None, "coordinator_failover")),
    ("[2023-01-01 12:00:04,070] INFO [Consumer clientId=consumer-orders-svc-1, groupId=orders-svc] Successfully"
     f" joined group with generation Generation{{generationId=7, memberId='{M1}', protocol='range'}}"
     " (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)",
     ("CLIENT_JOINED", None, None, "orders-svc", 7, M1, None)),
    ("[2024-02-01 08:00:00,501] INFO [Consumer clientId=consumer-orders-svc-1, groupId=orders-svc] Request joining"
     " group due to: group is already rebalancing (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)",
     ("CLIENT_REJOIN_REQUESTED", None, None, "orders-svc", None, None, "rebalance_in_progress")),
    ("[2025-03-20 09:20:05,002] INFO [Consumer clientId=consumer-orders-svc-1, groupId=orders-svc] Member"
     " Jx3aP0c9Qb2yK8vW1zL5nA with epoch 14 transitioned from RECONCILING to ACKNOWLEDGING."
     " (org.apache.kafka.clients.consumer.internals.ConsumerMembershipManager)",
     ("CLIENT_MEMBER_STATE_TRANSITION", None, None, "orders-svc", 14, "Jx3aP0c9Qb2yK8vW1zL5nA", None)),
]


@pytest.mark.parametrize(("line", "expected"), REFERENCE_LINES)
def test_reference_example_lines(line: str, expected: tuple[object, ...]) -> None:
    event = parse_log_line(line)
    assert event is not None
    assert (event.event_type, event.broker_id, event.offsets_partition, event.group_id, event.generation,
            event.member_id, event.cause_class) == expected


# ---- what is not an event ---------------------------------------------------------------------------------
@pytest.mark.parametrize("line", [
    "[2024-01-01 00:00:00,000] INFO [KafkaServer id=1] started (kafka.server.KafkaServer)",
    "[2024-01-01 00:00:00,000] INFO [ReplicaManager broker=1] Shutting down (kafka.server.ReplicaManager)",
    "[2024-01-01 00:00:00,000] INFO [SocketServer listenerType=BROKER, nodeId=1] Starting up. "
    "(kafka.network.SocketServer)",
    "[2024-01-01 00:00:00,000] INFO [Consumer clientId=c1, groupId=g1] Subscribed to topic(s): orders"
    " (org.apache.kafka.clients.consumer.KafkaConsumer)",
    "[2024-01-01 00:00:00,000] INFO [ShareCoordinator id=1] Scheduling loading of metadata from"
    " __share_group_state-0 with epoch 0 (org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime)",
    "\tat kafka.coordinator.group.GroupCoordinator.handleJoinGroup(GroupCoordinator.scala:180)",
    "some text that is no log record",
    "",
    # kafka-python's other loggers (the sample's connection, fetcher and assignor lines)
    "[2026-11-21 05:32:06,205] INFO [worker-1] <BrokerConnection client_id=c1, node_id=1 host=127.0.0.1:9092"
    " <connected> [IPv4 ('127.0.0.1', 9092)]>: Connection complete. (kafka.conn)",
    "[2026-11-21 05:32:06,205] WARNING [worker-1] Partition TopicPartition(topic='t', partition=0) is assigned to"
    " multiple consumers following sticky assignment generation 3. (kafka.coordinator.assignors.sticky"
    ".sticky_assignor)",
])
def test_unrelated_lines_are_neither_events_nor_errors(line: str) -> None:
    outcome = classify_log_entry(line)
    assert (outcome.status, outcome.event) == ("unrelated", None)


@pytest.mark.parametrize(("line", "kind"), [
    ("[2024-01-01 00:00:00,000] INFO [Consumer clientId=c1, groupId=g1] Found no committed offset for partition"
     " orders-0 (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)", "c_offsets"),
    ("[2024-01-01 00:00:00,000] INFO [Consumer clientId=c1, groupId=g1] Giving away all assigned partitions as lost"
     " since generation/memberID has been reset,indicating that consumer is in old state or no longer part of the"
     " group (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)", "c2_giving_away_lost"),
    ("[2024-01-01 00:00:00,000] INFO [GroupCoordinator 1]: Static member which joins during Stable stage and doesn't"
     " affect selectProtocol will not trigger rebalance. (kafka.coordinator.group.GroupCoordinator)",
     "b6_static_member_no_rebalance"),
    ("[2024-01-01 00:00:00,000] INFO [GroupCoordinator id=1] Started unloading metadata for __consumer_offsets-3"
     " with epoch OptionalInt[4]. (org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime)",
     "n3_unload_started"),
    # Kafka 4.3.1 (the real-broker sample)
    ("[2026-11-21 05:32:18,203] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=23] Static member"
     " which joins during Stable stage and doesn't affect the selected protocol will not trigger a rebalance."
     " (org.apache.kafka.coordinator.group.GroupMetadataManager)", "b6_static_member_no_rebalance"),
    ("[2026-11-21 05:33:14,128] INFO [GroupCoordinator id=1] Event processor closed."
     " (org.apache.kafka.coordinator.common.runtime.MultiThreadedEventProcessor)", "n3_runtime_shutdown_steps"),
    ("[2026-11-21 05:33:14,118] INFO [GroupCoordinator id=1] Closing coordinator runtime."
     " (org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime)", "n3_runtime_shutdown_steps"),
    # kafka-python 2.0.2 / 2.2.15
    ("[2026-11-21 05:32:06,309] INFO [worker-1] Starting new heartbeat thread (kafka.coordinator.heartbeat)",
     "kp_heartbeat_thread"),
    ("[2026-11-21 05:32:06,309] INFO [worker-1] Stopping heartbeat thread (kafka.coordinator.heartbeat)",
     "kp_heartbeat_thread"),
    ("[2026-11-21 05:32:06,442] INFO [worker-1] Elected group leader -- performing partition assignments using"
     " range (kafka.coordinator)", "kp_leader_elected"),
    ("[2026-11-21 05:32:14,683] INFO [orders-svc-heartbeat] LeaveGroup request for group orders-svc returned"
     " successfully (kafka.coordinator)", "kp_leave_result"),
    ("[2026-11-21 05:32:14,683] ERROR [worker-1] LeaveGroup request for group orders-svc failed with error:"
     " [Error 25] UnknownMemberIdError (kafka.coordinator)", "kp_leave_result"),
    ("[2026-11-21 05:32:22,999] INFO [worker-1] Failing OffsetCommit request since the consumer is not part of an"
     " active group (kafka.coordinator.consumer)", "kp_offsets"),
    ("[2026-11-21 05:32:22,999] ERROR [worker-1] Group coordinator lookup for group orders-svc failed:"
     " [Error 15] CoordinatorNotAvailableError (kafka.coordinator)", "kp_coordinator_lookup_failed"),
    ("[2026-11-21 05:32:22,999] ERROR [worker-1] Error sending JoinGroupRequest_v5 to node coordinator-1"
     " [KafkaConnectionError: socket disconnected] (kafka.coordinator)", "kp_request_failed"),
])
def test_known_coordinator_lines_without_an_event(line: str, kind: str) -> None:
    outcome = classify_log_entry(line)
    assert (outcome.status, outcome.line_kind, outcome.event) == ("known_non_event", kind, None)


@pytest.mark.parametrize(("line", "status"), [
    # a coordinator line whose text does not match its row (generation is not a number)
    ("[2024-01-01 00:00:00,000] INFO [GroupCoordinator 1]: Stabilized group orders-svc generation seven"
     " (__consumer_offsets-12) (kafka.coordinator.group.GroupCoordinator)", "unparsed"),
    # a text this catalogue does not know, from a coordinator logger
    ("[2024-01-01 00:00:00,000] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=3] [GroupId g]"
     " Something new happened. (org.apache.kafka.coordinator.group.GroupMetadataManager)", "unparsed"),
    ("[2024-01-01 00:00:00,000] WARN [Consumer clientId=c1, groupId=g1] A future warning"
     " (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)", "unparsed"),
    # an unknown layout around a coordinator message
    ("01/01/2024 00:00 [GroupCoordinator 1]: Stabilized group g generation 1", "unparsed"),
    # kafka-python: a text of its coordinator loggers that no row knows; Java rows are not tried on it
    ("[2026-11-21 05:32:06,309] INFO [worker-1] Some future kafka-python text (kafka.coordinator)", "unparsed"),
    ("[2026-11-21 05:32:06,309] INFO [worker-1] Request joining group due to: group is already rebalancing"
     " (kafka.coordinator)", "unparsed"),
    ("[2026-11-21 05:32:06,309] DEBUG [worker-1] Sending JoinGroup (kafka.coordinator)", "unparsed_below_info"),
    # coordinator DEBUG lines outside the catalogue are counted apart
    ("[2024-01-01 00:00:00,000] DEBUG [Consumer clientId=c1, groupId=g1] Heartbeat thread started"
     " (org.apache.kafka.clients.consumer.internals.AbstractCoordinator)", "unparsed_below_info"),
])
def test_coordinator_looking_lines_that_do_not_parse(line: str, status: str) -> None:
    outcome = classify_log_entry(line)
    assert (outcome.status, outcome.event) == (status, None)
