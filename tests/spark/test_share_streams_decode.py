"""The decode stage over share-group (KIP-932) and streams-group (KIP-1071) records written by Kafka's own
generated classes (the record oracle, Kafka 4.3.1): every one lands in consumer_group_records with its
family and its decoded fields, none in decode_errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from coordinator_core.record_json import record_from_json
from coordinator_core.records import RECORD_TYPES
from jobs.common.delta_io import Tables
from jobs.decode.stage import run_decode
from jvm_oracle.harness import run_java
from schemas import ALL_TABLES, CONSUMER_GROUP_RECORDS, DECODE_COVERAGE, DECODE_ERRORS, RAW_OFFSETS
from tests.oracle.test_record_codec_oracle import SHARE_AND_STREAMS_TYPES, SOURCE, kafka_json
from tests.spark.rows import raw, raw_frame

pytestmark = [pytest.mark.spark, pytest.mark.oracle]

PER_TYPE = 3


@pytest.fixture(scope="module")
def oracle_records() -> list[dict]:  # type: ignore[type-arg]
    out = run_java(SOURCE, "kafka", "cgh.oracle.RecordCodecOracle", str(PER_TYPE), "20261127")
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    return [line for line in lines if line.get("type") in SHARE_AND_STREAMS_TYPES]


@pytest.fixture(scope="module")
def decoded(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory,
            oracle_records: list[dict]) -> Tables:  # type: ignore[type-arg]
    root: Path = tmp_path_factory.mktemp("share_streams")
    tables = Tables(spark, "share_streams", str(root / "t"))
    tables.ensure_database()
    for spec in ALL_TABLES:
        tables.ensure(spec)
    rows = [raw(0, i, bytes.fromhex(r["key"]), bytes.fromhex(r["value"])) for i, r in enumerate(oracle_records)]
    # A tombstone per type (the key of its first record, a null value), as the coordinator deletes them.
    first = {r["type"]: r for r in reversed(oracle_records)}
    rows += [raw(1, i, bytes.fromhex(r["key"]), None) for i, r in enumerate(first.values())]
    tables.append(RAW_OFFSETS, raw_frame(spark, rows))
    run_decode(tables, "run-share-streams", 0, batch_size=8)
    return tables


def test_every_share_and_streams_record_is_a_consumer_group_records_row(
        decoded: Tables, oracle_records: list[dict]) -> None:  # type: ignore[type-arg]
    assert len(oracle_records) == PER_TYPE * len(SHARE_AND_STREAMS_TYPES)
    assert decoded.read(DECODE_ERRORS).count() == 0
    rows = {(r["partition"], r["offset"]): r for r in decoded.read(CONSUMER_GROUP_RECORDS).collect()}
    assert len(rows) == len(oracle_records) + len(SHARE_AND_STREAMS_TYPES)
    for i, want in enumerate(oracle_records):
        row = rows[(0, i)]
        t = RECORD_TYPES[want["type"]]
        assert (row["record_type"], row["record_kind"], row["value_version"], row["is_tombstone"]) == (
            want["type"], t.name, want["version"], False)
        assert row["group_family"] == ("share" if t.name.startswith("share_group_") else "streams")
        assert (row["group_id"], row["member_id"]) == (want["keyJson"]["groupId"], want["keyJson"].get("memberId"))
        assert (row["key"], row["value"]) == (None, None)  # raw bytes are kept for unknown types only
        # record_json holds the decoded fields (no opaque value bytes), and they are Kafka's.
        doc = json.loads(row["record_json"])
        assert "value_bytes" not in doc and isinstance(doc["value"], dict)
        rec = record_from_json(row["record_type"], row["value_version"], row["record_json"])
        assert t.value is not None
        assert kafka_json(rec.value, t.value, want["version"]) == want["valueJson"], want
    tombstones = [rows[(1, i)] for i in range(len(SHARE_AND_STREAMS_TYPES))]
    assert all(r["is_tombstone"] and r["value_version"] is None and json.loads(r["record_json"])["value"] is None
               for r in tombstones)
    assert sorted(r["record_type"] for r in tombstones) == sorted(SHARE_AND_STREAMS_TYPES)


def test_coverage_counts_them_as_decoded(decoded: Tables) -> None:
    counts = {(r["record_type"], r["record_kind"], r["value_version"], r["status"]): r["records"]
              for r in decoded.read(DECODE_COVERAGE).collect()}
    want = {}
    for rt in SHARE_AND_STREAMS_TYPES:
        want[(rt, RECORD_TYPES[rt].name, 0, "decoded")] = PER_TYPE
        want[(rt, RECORD_TYPES[rt].name, None, "tombstone")] = 1
    assert counts == want
