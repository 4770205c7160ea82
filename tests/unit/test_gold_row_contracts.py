"""The gold tables whose columns come from coordinator_core's row types (assignment_replay, assignor_whatif,
rebalance_storms) keep exactly the schema they had when they were written out by hand: names, types,
nullability, order and comments. The expected StructTypes below are those hand-written definitions, kept
here independently of the derivation in schemas/gold.py."""

from __future__ import annotations

import dataclasses
from datetime import datetime

import pytest
from pyspark.sql import types as T

from coordinator_core.history.model import schema_fields, to_dict
from coordinator_core.replay import (
    AssignmentReplayRow,
    StoredMember,
    WhatIfRow,
    replay_rows,
    replay_stored_generation,
)
from coordinator_core.storms import Storm
from schemas._spec import column
from schemas.gold import ASSIGNMENT_REPLAY, ASSIGNOR_WHATIF, REBALANCE_STORMS

_CLUSTER = column("cluster", T.StringType(), "Kafka cluster name.", False)
_TOPIC_PARTITION = T.StructType([T.StructField("topic", T.StringType()), T.StructField("partition", T.LongType())])

EXPECTED_ASSIGNMENT_REPLAY = T.StructType([
    _CLUSTER,
    column("group_id", T.StringType(), "Consumer group id.", False),
    column("generation", T.LongType(), "Generation id.", False),
    column("record_offset", T.LongType(), "Offset of the GroupMetadata record.", False),
    column("assignor", T.StringType(), "The generation's protocol (assignor name).", False),
    column("kafka_version", T.StringType(), "Kafka client version whose assignor was replayed."),
    column("status", T.StringType(), "match, mismatch or not_replayable (for the whole generation)."),
    column("reason", T.StringType(),
           "custom_assignor, other_client_version, other_client_library, inputs_missing, not_consumer_protocol or "
           "unexplained."),
    column("detail", T.StringType(), "Human-readable detail of the reason."),
    column("matching_version", T.StringType(), "Client version whose assignor reproduces the record."),
    column("partition_counts_inferred", T.BooleanType(), "Partition counts inferred from the assignment."),
    column("member_id", T.StringType(), "Member id ('' when the generation could not be replayed).", False),
    column("recorded_partitions", T.ArrayType(_TOPIC_PARTITION), "Partitions the leader stored."),
    column("replayed_partitions", T.ArrayType(_TOPIC_PARTITION), "Partitions the replayed assignor gives."),
    column("missing_partitions", T.ArrayType(_TOPIC_PARTITION), "Recorded but not replayed."),
    column("extra_partitions", T.ArrayType(_TOPIC_PARTITION), "Replayed but not recorded."),
    column("match", T.BooleanType(), "Recorded equals replayed for this member."),
    column("leader_client", T.StringType(),
           "The client library the generation's leader ran (java, kafka-python, aiokafka, librdkafka, franz-go, "
           "sarama, kafkajs or unknown), with its version where the client id carries it."),
    column("leader_evidence", T.ArrayType(T.StringType()),
           "What identified the leader's library: its protocol bytes' shapes, its client id."),
    column("engine", T.StringType(),
           "The code the replay ran: java (Kafka's assignors at kafka_version) or kafka-python <version> "
           "(kafka-python's own assignor classes)."),
    column("findings", T.ArrayType(T.StringType()),
           "What the generation's inputs show beyond the replay: shared_sticky_state (members sent the same sticky "
           "user data: they share the assignor's state, as kafka-python before 3.0 does for consumers of one "
           "process)."),
])

EXPECTED_ASSIGNOR_WHATIF = T.StructType([
    _CLUSTER,
    column("group_id", T.StringType(), "Consumer group id.", False),
    column("generation", T.LongType(), "Generation replayed.", False),
    column("assignor", T.StringType(), "Assignor the history was replayed under.", False),
    column("static_membership", T.BooleanType(),
           "True: restarts of the same client and host within the session timeout are absorbed, as "
           "static members (group.instance.id) would be, so those rebalances do not happen.", False),
    column("members", T.LongType(), "Members in the generation."),
    column("partitions", T.LongType(), "Partitions assigned."),
    column("partitions_moved", T.LongType(), "Partitions whose owner changed."),
    column("balance", T.LongType(), "Max - min partitions per member."),
    column("paused_partitions", T.LongType(),
           "Partitions not consumed during the rebalance: all owned ones for eager protocols, moved ones "
           "for cooperative."),
    column("error", T.StringType(), "Why the step could not be replayed."),
])

EXPECTED_REBALANCE_STORMS = T.StructType([
    _CLUSTER,
    column("group_id", T.StringType(), "Consumer group id.", False),
    column("window_start", T.TimestampType(), "Start of the first rebalance of the storm (UTC).", False),
    column("window_end", T.TimestampType(), "End of the last rebalance of the storm (UTC)."),
    column("rebalances", T.LongType(), "Rebalances in the storm."),
    column("first_generation", T.LongType(), "First generation of the storm."),
    column("last_generation", T.LongType(), "Last generation of the storm."),
    column("total_rebalance_seconds", T.DoubleType(), "Summed rebalance durations."),
    column("stalled_seconds", T.DoubleType(),
           "Time the group could not consume: all rebalance time for eager protocols, only rebalances that "
           "revoked partitions for cooperative ones."),
    column("dominant_cause", T.StringType(), "Most frequent cause."),
    column("causes", T.MapType(T.StringType(), T.LongType()), "Rebalances per cause."),
    column("flapping_members", T.ArrayType(T.StringType()),
           "Members (instance id, or client id @ host) that joined again and again."),
    column("lockstep_id", T.StringType(), "Shared id of storms of several groups that started together."),
    column("lockstep_groups", T.LongType(), "Groups in the lock-step wave (0 when none)."),
    column("severity", T.DoubleType(), "0-100; formula in coordinator_core/storms.py and the README."),
])


def _described(schema: T.StructType) -> list[tuple[str, str, bool, str]]:
    return [(f.name, f.dataType.simpleString(), f.nullable, (f.metadata or {}).get("comment", ""))
            for f in schema.fields]


@pytest.mark.parametrize(("spec", "expected"), [
    (ASSIGNMENT_REPLAY, EXPECTED_ASSIGNMENT_REPLAY),
    (ASSIGNOR_WHATIF, EXPECTED_ASSIGNOR_WHATIF),
    (REBALANCE_STORMS, EXPECTED_REBALANCE_STORMS),
], ids=lambda v: getattr(v, "name", ""))
def test_derived_schema_is_the_hand_written_one(spec, expected) -> None:
    # Field by field first (a readable diff), then the whole StructType (nested nullability, metadata).
    assert _described(spec.schema) == _described(expected)
    assert spec.schema == expected
    assert spec.schema.json() == expected.json()


def test_row_types_name_the_columns_in_table_order() -> None:
    assert [n for n, _ in schema_fields(AssignmentReplayRow)] == ASSIGNMENT_REPLAY.column_names[1:]
    assert [n for n, _ in schema_fields(WhatIfRow)] == ASSIGNOR_WHATIF.column_names[2:]
    assert [n for n, _ in schema_fields(Storm)] == REBALANCE_STORMS.column_names
    # `generations` is the fold's own bookkeeping, not a column.
    assert "generations" in [f.name for f in dataclasses.fields(Storm)]


def test_storm_to_dict_has_the_table_columns() -> None:
    storm = Storm("c", "g", datetime(2026, 1, 1), datetime(2026, 1, 1, 0, 5), 3, 1, 3, 12.5, 12.5, "session_timeout",
                  {"session_timeout": 2, "new_member": 1}, ("a@h",), generations=(1, 2, 3))
    d = to_dict(storm)
    assert list(d) == REBALANCE_STORMS.column_names
    assert (d["flapping_members"], d["causes"], d["severity"]) == (["a@h"], {"session_timeout": 2, "new_member": 1},
                                                                    0.0)


def test_replay_rows_one_per_member_or_one_when_not_replayable() -> None:
    def members(a: tuple[tuple[str, int], ...], b: tuple[tuple[str, int], ...]) -> list[StoredMember]:
        return [StoredMember("m-1", None, 1, ("t",), None, (), None, None, a, None),
                StoredMember("m-2", None, 1, ("t",), None, (), None, None, b, None)]

    # Kafka's range assignor gives the first member (by member id) of 2 the first 2 of 3 partitions.
    stored = members((("t", 0), ("t", 1)), (("t", 2),))
    rows = replay_rows("g", 17, replay_stored_generation(4, "consumer", "range", stored))
    assert [(r.member_id, r.match, r.status) for r in rows] == [("m-1", True, "match"), ("m-2", True, "match")]
    first = to_dict(rows[0])
    assert list(first) == ASSIGNMENT_REPLAY.column_names[1:]
    assert {k: first[k] for k in ("group_id", "generation", "record_offset", "assignor", "recorded_partitions")} == {
        "group_id": "g", "generation": 4, "record_offset": 17, "assignor": "range",
        "recorded_partitions": [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 1}]}

    swapped = replay_rows("g", 18, replay_stored_generation(5, "consumer", "range",
                                                            members((("t", 2),), (("t", 0), ("t", 1)))))
    assert [(r.member_id, r.match, r.status) for r in swapped] == [("m-1", False, "mismatch"),
                                                                   ("m-2", False, "mismatch")]
    assert to_dict(swapped[0])["missing_partitions"] == [{"topic": "t", "partition": 2}]
    assert to_dict(swapped[0])["extra_partitions"] == [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 1}]

    custom = replay_rows("g", 19, replay_stored_generation(6, "consumer", "my-assignor", stored))
    assert [(r.member_id, r.status, r.reason, r.recorded_partitions, r.match) for r in custom] == [
        ("", "not_replayable", "custom_assignor", None, None)]
    none = replay_rows("g", 20, replay_stored_generation(7, "consumer", None, []))
    assert (none[0].assignor, none[0].member_id, none[0].reason) == ("", "", "inputs_missing")
