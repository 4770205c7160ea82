"""The decode stage end to end on Kafka's edge bytes (issue #21 items 3, 5, 6): GroupMetadata v0/v1 (brokers
below inter.broker.protocol 2.1, and the synthetic fleet's v1 groups) have no state timestamp, so
`group_metadata.current_state_timestamp` is null, not 1969-12-31 23:59:59.999; v0 members have no rebalance
timeout; records with bytes after a complete struct are decoded as Kafka reads them and counted as
`decoded_trailing_bytes` in decode_coverage; truncations and empty values reach decode_errors with the field
cut short and a message that says what an empty value is."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import coordinator_core as cc
from coordinator_core.messages import GroupMetadataKey, GroupMetadataValue
from jobs.common.delta_io import Tables
from jobs.decode.stage import run_decode
from jobs.synthetic_fleet import FleetSpec, write_fleet
from schemas import (
    ALL_TABLES,
    DECODE_COVERAGE,
    DECODE_ERRORS,
    GROUP_MEMBERS,
    GROUP_METADATA,
    OFFSET_COMMITS,
    RAW_OFFSETS,
)
from tests.spark.records import group_metadata, member, offset_commit
from tests.spark.rows import raw, raw_frame

pytestmark = pytest.mark.spark

STATE_MS = 1_700_000_000_000
UTC = dt.timezone.utc


def _state_minus_one() -> tuple[bytes, bytes]:
    """A v3 GroupMetadata whose writer had no state timestamp: Kafka writes -1 and reads it back as none."""
    value = GroupMetadataValue("consumer", 0, None, None, -1, ())
    k, v = cc.encode_record(cc.Record(2, GroupMetadataKey("g-minus-one"), 3, value))
    assert v is not None
    return k, v


def _raw_rows() -> list[tuple]:  # type: ignore[type-arg]
    m1 = member("m1", ["t"], [("t", 0)])
    commit_key, commit_value = offset_commit("g1", "t", 0, 100)
    g_key, g_value = group_metadata("g-trailing", 2, [m1], version=3, state_ms=STATE_MS)
    return [
        raw(0, 0, *group_metadata("g-v0", 1, [m1], version=0, state_ms=STATE_MS)),
        raw(0, 1, *group_metadata("g-v1", 1, [m1], version=1, state_ms=STATE_MS)),
        raw(0, 2, *group_metadata("g-v2", 1, [m1], version=2, state_ms=STATE_MS)),
        raw(0, 3, *_state_minus_one()),
        raw(0, 4, commit_key, commit_value + b"\x00\x00"),  # trailing bytes after the value
        raw(0, 5, g_key + b"\x07", g_value),  # a trailing byte after the key
        raw(0, 6, commit_key, commit_value[:13]),  # offset whole, leader epoch cut after one byte
        raw(0, 7, commit_key, b""),  # an empty value, as a Go client hands over a tombstone
    ]


@pytest.fixture(scope="module")
def tables(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Tables:
    root: Path = tmp_path_factory.mktemp("edge_bytes")
    t = Tables(spark, "edge_bytes", str(root / "edge_bytes"))
    t.ensure_database()
    for spec in ALL_TABLES:
        t.ensure(spec)
    t.append(RAW_OFFSETS, raw_frame(spark, _raw_rows()))
    write_fleet(t, FleetSpec(groups=120, partitions=2), 4000, append=False)
    run_decode(t, "run-edge-bytes", 0, batch_size=500)
    return t


def test_group_metadata_without_a_state_timestamp_is_null_not_1969(tables: Tables) -> None:
    rows = {r["group_id"]: r for r in tables.read(GROUP_METADATA).where("cluster = 'c1'").collect()}
    state = dt.datetime.fromtimestamp(STATE_MS / 1000, UTC).replace(tzinfo=None)
    assert {g: (rows[g]["value_version"], rows[g]["current_state_timestamp"]) for g in
            ("g-v0", "g-v1", "g-v2", "g-minus-one", "g-trailing")} == {
        "g-v0": (0, None), "g-v1": (1, None), "g-v2": (2, state), "g-minus-one": (3, None), "g-trailing": (3, state)}
    # The synthetic fleet's v1 groups (a cluster below inter.broker.protocol 2.1) and its v2+ groups.
    fleet = tables.read(GROUP_METADATA).where("cluster = 'synthetic' AND NOT is_tombstone").collect()
    v1 = [r for r in fleet if r["value_version"] == 1]
    later = [r for r in fleet if r["value_version"] >= 2]
    assert v1 and later
    assert all(r["current_state_timestamp"] is None for r in v1)
    assert all(r["current_state_timestamp"].year >= 2025 for r in later)
    every = tables.read(GROUP_METADATA).where("current_state_timestamp < TIMESTAMP '1971-01-01'").count()
    assert every == 0


def test_v0_members_have_no_rebalance_timeout(tables: Tables) -> None:
    members = {(r["group_id"], r["member_id"]): r["rebalance_timeout"]
               for r in tables.read(GROUP_MEMBERS).where("cluster = 'c1'").collect()}
    assert members[("g-v0", "m1")] is None
    assert members[("g-v1", "m1")] == members[("g-v2", "m1")] == 300000


def test_trailing_bytes_are_decoded_and_counted_with_their_own_status(tables: Tables) -> None:
    commits = tables.read(OFFSET_COMMITS).where("cluster = 'c1' AND partition = 0").collect()
    assert [(r["offset"], r["committed_offset"], r["leader_epoch"]) for r in commits] == [(4, 100, 5)]
    coverage = {(r["record_type"], r["value_version"], r["status"]): r["records"]
                for r in tables.read(DECODE_COVERAGE).where("cluster = 'c1'").collect()}
    assert coverage == {
        (2, 0, "decoded"): 1, (2, 1, "decoded"): 1, (2, 2, "decoded"): 1, (2, 3, "decoded"): 1,
        (1, 3, "decoded_trailing_bytes"): 1, (2, 3, "decoded_trailing_bytes"): 1,
        (1, None, "error"): 2,
    }


def test_decode_errors_name_the_field_cut_short_and_the_empty_value(tables: Tables) -> None:
    errors = {r["offset"]: r for r in tables.read(DECODE_ERRORS).where("cluster = 'c1'").collect()}
    assert set(errors) == {6, 7}
    cut = errors[6]
    assert (cut["error_field_path"], cut["error_position"], cut["error"]) == (
        "OffsetCommitValue.leader_epoch", 10, "truncated input: needed 4 byte(s), 3 left")
    assert "a tombstone's value is None (null), not empty bytes" in errors[7]["error"]
