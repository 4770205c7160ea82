"""Gold: what the records and logs mean - generation history, offset events, assignment replays, what-if
replays and rebalance storms.

Every table takes its columns from a coordinator_core row type (`schema_fields`: GenerationRow,
OffsetEventRow, AssignmentReplayRow, WhatIfRow, Storm), so the library's pure functions and the tables cannot
drift apart; the comments and the non-null columns are declared here. tests/unit/test_gold_row_contracts.py
and test_history_schema.py compare the result with the tables as they were written out by hand.
"""

from __future__ import annotations

from pyspark.sql import types as T

from coordinator_core.cost import RebalanceCostRow
from coordinator_core.history import GenerationRow, OffsetEventRow
from coordinator_core.history.model import schema_fields
from coordinator_core.replay import AssignmentReplayRow, WhatIfRow
from coordinator_core.storms import Storm
from schemas._spec import TableSpec, column

_SIMPLE: dict[str, T.DataType] = {
    "string": T.StringType(),
    "bigint": T.LongType(),
    "int": T.IntegerType(),
    "double": T.DoubleType(),
    "boolean": T.BooleanType(),
    "timestamp": T.TimestampType(),
    "binary": T.BinaryType(),
}


def ddl_type(text: str) -> T.DataType:
    """A Spark type from its DDL text (string, bigint, boolean, timestamp, array<...>, struct<a:t,...>),
    parsed here so that no SparkSession is needed to declare a table."""
    parsed, rest = _parse(text.replace(" ", ""))
    if rest:
        raise ValueError(f"trailing text {rest!r} in type {text!r}")
    return parsed


def _parse(text: str) -> tuple[T.DataType, str]:
    if text.startswith("array<"):
        element, rest = _parse(text[len("array<"):])
        if not rest.startswith(">"):
            raise ValueError(f"unterminated array<> in {text!r}")
        return T.ArrayType(element, True), rest[1:]
    if text.startswith("map<"):
        key, rest = _parse(text[len("map<"):])
        value, rest = _parse(rest[1:])
        return T.MapType(key, value, True), rest[1:]
    if text.startswith("struct<"):
        rest = text[len("struct<"):]
        fields = []
        while not rest.startswith(">"):
            name, rest = rest.split(":", 1)
            field_type, rest = _parse(rest)
            fields.append(T.StructField(name, field_type, True))
            rest = rest[1:] if rest.startswith(",") else rest
        return T.StructType(fields), rest[1:]
    for name, data_type in _SIMPLE.items():
        if text.startswith(name) and not text[len(name):len(name) + 1].isalnum():
            return data_type, text[len(name):]
    raise ValueError(f"unknown type at {text!r}")


def _row_columns(row_type: type, comments: dict[str, str], not_null: tuple[str, ...] = ()) -> list[T.StructField]:
    """The row type's columns with their comments; those in `not_null` are declared NOT NULL."""
    unknown = set(not_null) - {name for name, _ in schema_fields(row_type)}
    if unknown:
        raise ValueError(f"{row_type.__name__} has no columns {sorted(unknown)}")
    return [column(name, ddl_type(ddl), comments.get(name, ""), name not in not_null)
            for name, ddl in schema_fields(row_type)]


_CLUSTER = column("cluster", T.StringType(), "Kafka cluster name.", False)

GROUP_GENERATIONS = TableSpec(
    name="group_generations",
    comment=(
        "One row per generation of a classic group (or group epoch of a KIP-848 group): members, assignment, "
        "timings, the diff with the previous generation, and the cause of the rebalance with its evidence."
    ),
    # A group deleted and created again restarts at generation 0/1, so the offset of the record that stored
    # the generation is part of the grain (null for generations known only from the logs).
    grain=("cluster", "group_id", "group_protocol", "generation", "record_offset"),
    partition_columns=("cluster",),
    # Each night amends the open rows of the groups it touched (MERGE): deletion vectors mark the replaced
    # rows instead of rewriting every file that holds one.
    properties={"delta.enableDeletionVectors": "true"},
    schema=T.StructType([_CLUSTER, *_row_columns(GenerationRow, {
        "group_id": "Consumer group id.",
        "group_protocol": "classic (JoinGroup/SyncGroup) or consumer (KIP-848).",
        "generation": "Generation id (classic) or group epoch (KIP-848).",
        "outcome": "stable, empty, created, never_completed (a gap in generations) or missing (KIP-848 gap).",
        "cause": "Why the rebalance happened (a cause class); see cause_inferred and evidence.",
        "cause_inferred": "True when no log line explained it and the cause was inferred from the records.",
        "evidence": "The coordinator log lines that explain the rebalance.",
        "record_offset": "Offset of the record that stored the generation; null when known from logs only.",
        "coordinator_loads": "Coordinator loads of the group while this generation was in force (a failover to "
                             "another broker, or a restart): broker, time, partition. No rebalance of their own; "
                             "null in rows written before the column existed.",
        "partition_handovers": "KIP-848: each partition the epoch moved from one member to another, with the times "
                               "of the records that asked the old owner to revoke it, saw it released and gave "
                               "it to the new owner (bounds of its pause). Null in rows written before the "
                               "column existed (a --rebuild fills them).",
    })]),
)

OFFSET_EVENTS = TableSpec(
    name="offset_events",
    comment=(
        "Notable offset events of a group: commits that move backwards (rewind/reset), commits by clients "
        "that are not members (admin resets), offsets that stall while the group is stable, offsets expired "
        "or deleted (tombstones)."
    ),
    grain=("cluster", "group_id", "kind", "topic", "partition", "record_offset"),
    partition_columns=("cluster",),
    schema=T.StructType([_CLUSTER, *_row_columns(OffsetEventRow, {
        "kind": "rewind, non_member_commit, stalled, expired, deleted or group_deleted.",
        "record_offset": "Offset of the record in __consumer_offsets that shows the event.",
    })]),
)

ASSIGNMENT_REPLAY = TableSpec(
    name="assignment_replay",
    comment=(
        "For each member of each consumer-protocol generation: the partitions the leader stored and the "
        "partitions Kafka's assignor computes from the same subscriptions, and whether they match."
    ),
    grain=("cluster", "group_id", "generation", "record_offset", "assignor", "member_id"),
    partition_columns=("cluster",),
    schema=T.StructType([_CLUSTER, *_row_columns(AssignmentReplayRow, {
        "group_id": "Consumer group id.",
        "generation": "Generation id.",
        "record_offset": "Offset of the GroupMetadata record.",
        "assignor": "The generation's protocol (assignor name).",
        "kafka_version": "Kafka client version whose assignor was replayed.",
        "status": "match, mismatch or not_replayable (for the whole generation).",
        "reason": "custom_assignor, other_client_version, other_client_library, inputs_missing, "
                  "not_consumer_protocol or unexplained.",
        "detail": "Human-readable detail of the reason.",
        "matching_version": "Client version whose assignor reproduces the record.",
        "partition_counts_inferred": "Partition counts inferred from the assignment.",
        "member_id": "Member id ('' when the generation could not be replayed).",
        "recorded_partitions": "Partitions the leader stored.",
        "replayed_partitions": "Partitions the replayed assignor gives.",
        "missing_partitions": "Recorded but not replayed.",
        "extra_partitions": "Replayed but not recorded.",
        "match": "Recorded equals replayed for this member.",
        "leader_client": "The client library the generation's leader ran (java, kafka-python, aiokafka, librdkafka, "
                         "franz-go, sarama, kafkajs or unknown), with its version where the client id carries it.",
        "leader_evidence": "What identified the leader's library: its protocol bytes' shapes, its client id.",
        "engine": "The code the replay ran: java (Kafka's assignors at kafka_version) or kafka-python <version> "
                  "(kafka-python's own assignor classes).",
        "findings": "What the generation's inputs show beyond the replay: shared_sticky_state (members sent the "
                    "same sticky user data: they share the assignor's state, as kafka-python before 3.0 does "
                    "for consumers of one process).",
    }, not_null=("group_id", "generation", "record_offset", "assignor", "member_id"))]),
)

ASSIGNOR_WHATIF = TableSpec(
    name="assignor_whatif",
    comment=(
        "Each group's history replayed under each assignor in sequence (each step's output fed back as the "
        "next step's owned partitions), with and without static membership: partitions moved, balance, "
        "partitions paused per rebalance."
    ),
    grain=("cluster", "group_id", "generation", "assignor", "static_membership"),
    partition_columns=("cluster",),
    # WhatIfRow is a step of one group's replay: cluster and group_id are the group's key.
    schema=T.StructType([
        _CLUSTER,
        column("group_id", T.StringType(), "Consumer group id.", False),
        *_row_columns(WhatIfRow, {
            "generation": "Generation replayed.",
            "assignor": "Assignor the history was replayed under.",
            "static_membership": "True: restarts of the same client and host within the session timeout are "
                                 "absorbed, as static members (group.instance.id) would be, so those rebalances "
                                 "do not happen.",
            "members": "Members in the generation.",
            "partitions": "Partitions assigned.",
            "partitions_moved": "Partitions whose owner changed.",
            "balance": "Max - min partitions per member.",
            "paused_partitions": "Partitions not consumed during the rebalance: all owned ones for eager "
                                 "protocols, moved ones for cooperative.",
            "error": "Why the step could not be replayed.",
        }, not_null=("generation", "assignor", "static_membership")),
    ]),
)

REBALANCE_STORMS = TableSpec(
    name="rebalance_storms",
    comment=(
        "Windows in which a group rebalanced again and again (thresholds from conf/), with the time it could "
        "not consume, the causes, the members that flapped, lock-step waves across groups, and a severity."
    ),
    grain=("cluster", "group_id", "window_start"),
    partition_columns=("cluster",),
    schema=T.StructType(_row_columns(Storm, {
        "cluster": "Kafka cluster name.",
        "group_id": "Consumer group id.",
        "window_start": "Start of the first rebalance of the storm (UTC).",
        "window_end": "End of the last rebalance of the storm (UTC).",
        "rebalances": "Rebalances in the storm.",
        "first_generation": "First generation of the storm.",
        "last_generation": "Last generation of the storm.",
        "total_rebalance_seconds": "Summed rebalance durations.",
        "stalled_seconds": "Time the group could not consume: all rebalance time for eager protocols, only "
                           "rebalances that revoked partitions for cooperative ones.",
        "dominant_cause": "Most frequent cause.",
        "causes": "Rebalances per cause.",
        "flapping_members": "Members (instance id, or client id @ host) that joined again and again.",
        "lockstep_id": "Shared id of storms of several groups that started together.",
        "lockstep_groups": "Groups in the lock-step wave (0 when none).",
        "severity": "0-100; formula in coordinator_core/storms.py and the README.",
    }, not_null=("cluster", "group_id", "window_start"))),
)

REBALANCE_COST = TableSpec(
    name="rebalance_cost",
    comment=(
        "What each rebalance cost: per generation change (and per static member replaced without one), the "
        "window, the group's pause, partitions paused, partition-seconds paused and records delayed, each with "
        "a low and high bound and the source of each end; the partitions' own pauses in `partitions` (one row "
        "each in the rebalance_cost_partitions view)."
    ),
    grain=("cluster", "group_id", "group_protocol", "generation", "record_offset", "restarted_member_id"),
    partition_columns=("cluster",),
    # Each night replaces the rows of the rebalances near its changes (MERGE).
    properties={"delta.enableDeletionVectors": "true"},
    schema=T.StructType([_CLUSTER, *_row_columns(RebalanceCostRow, {
        "group_id": "Consumer group id.",
        "group_protocol": "classic or consumer (KIP-848).",
        "generation": "The generation (or group epoch) the rebalance produced.",
        "record_offset": "Offset of the record that stored the generation (as in group_generations).",
        "restarted_member_id": "Null for a generation change; for a static member replaced without a rebalance, "
                               "its new member id.",
        "rebalance_at": "When the rebalance completed (the stored assignment, else the join end or start).",
        "protocol_kind": "eager, cooperative, consumer (KIP-848) or static_restart.",
        "window_start": "First partition's stop (a point where a source gives one, else its earliest bound).",
        "window_start_source": "client, broker, record, commits or bound (no source gives a point).",
        "window_end": "Last partition's resume (a point, else its latest known bound).",
        "pause_ms": "The group's pause: time at least one partition was paused (union of the members' pauses); "
                    "null when some end has bounds only.",
        "pause_low_ms": "The shortest group pause the bounds allow.",
        "pause_high_ms": "The longest group pause the bounds allow; null when unbounded.",
        "partition_seconds": "Sum of the partitions' pauses (seconds); null when some pause has bounds only.",
        "rate_coverage": "Share of paused partitions with a consumption rate (committed-offset progress).",
        "records_delayed": "Rate x pause summed over the partitions with a rate: an estimate (log-end offsets are "
                           "not in __consumer_offsets).",
        "inferred": "Some end comes from commits or bounds, not from a log line or a record.",
        "clock_offsets_ms": "Per member: its log clock minus the broker's (its sync line against the stored "
                            "assignment); lines of members off by over a second are shifted by it.",
        "partitions": "Each paused partition: from/to member, stop and resume (point, bounds, source), pause, "
                      "rate used, records delayed.",
    }, not_null=("group_id", "group_protocol", "generation", "protocol_kind"))]),
)

GOLD_TABLES = (GROUP_GENERATIONS, OFFSET_EVENTS, ASSIGNMENT_REPLAY, ASSIGNOR_WHATIF, REBALANCE_STORMS, REBALANCE_COST)
