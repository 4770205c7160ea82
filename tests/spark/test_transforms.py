"""Each transform on tiny inline data, compared as whole frames with expected frames built by hand."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from chispa import assert_df_equality
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from jobs.common.boundary import decode_records
from jobs.decode.outcomes import (
    AwaitingPartition,
    awaiting_markers,
    markers_after,
    per_partition_condition,
    resolve_previously_open,
    resolve_transactions,
    resolved_commits,
    transaction_markers,
)
from jobs.decode.rows import (
    consumer_group_record_rows,
    decode_coverage_rows,
    decode_error_rows,
    group_member_rows,
    group_metadata_rows,
    offset_commit_rows,
)
from jobs.decode.transactions import run_transactions
from jobs.ingest.replicas import archive_watermarks, records_to_archive
from jobs.ingest.rows import history_gap_rows
from schemas import (
    CONSUMER_GROUP_RECORDS,
    DECODE_COVERAGE,
    DECODE_ERRORS,
    GROUP_MEMBERS,
    GROUP_METADATA,
    HISTORY_GAPS,
    OFFSET_COMMITS,
    RAW_OFFSETS,
)
from schemas.decoded import TOPIC_PARTITION_STRUCT  # noqa: F401  (documents the nested type below)
from tests.spark.records import group_metadata, member, offset_commit, offset_tombstone
from tests.spark.rows import RUN, raw, raw_frame, ts

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000  # = rows.BASE in epoch ms
CONTROL_KEY = {"COMMIT": struct.pack(">hh", 0, 1), "ABORT": struct.pack(">hh", 0, 0)}
CONTROL_VALUE = struct.pack(">hi", 0, 0)


def equal(actual, expected) -> None:  # type: ignore[no-untyped-def]
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True, ignore_metadata=True)


def test_offset_commit_rows(spark: SparkSession) -> None:
    raw_rows = raw_frame(
        spark,
        [
            raw(0, 10, *offset_commit("g", "t", 2, 42, version=3, commit_ms=T0 + 5, leader_epoch=7, metadata="m")),
            raw(0, 11, *offset_commit("g", "t", 3, 43, version=1, commit_ms=T0 + 6), at_ms=1),
            raw(0, 12, *offset_tombstone("g", "t", 2), at_ms=2),
            raw(0, 13, *group_metadata("g", 1, [member("m1", ["t"], [("t", 0)])]), at_ms=3),
        ],
    )
    actual = offset_commit_rows(decode_records(raw_rows))
    expected = spark.createDataFrame(
        [
            ("c1", 0, 10, ts(0), "g", "t", 2, 42, 7, "m", ts(5), None, None, 1, 3, False, -1, False, None, None),
            ("c1", 0, 11, ts(1), "g", "t", 3, 43, None, "", ts(6), None, None, 1, 1, False, -1, False, None, None),
            ("c1", 0, 12, ts(2), "g", "t", 2, None, None, None, None, None, None, 1, None, True, -1, False, None, None),
        ],
        OFFSET_COMMITS.schema,
    )
    equal(actual, expected)


def _commit(offset: int, producer: int, transactional: bool = True, outcome=None, marker=None):  # type: ignore[no-untyped-def]
    return ("c1", 0, offset, ts(offset), "g", "t", 0, offset, None, "", ts(offset), None, None, 1, 3, False,
            producer, transactional, outcome, marker)


def test_resolve_transactions_follows_kafkas_loader(spark: SparkSession) -> None:
    commits = spark.createDataFrame(
        [
            _commit(1, -1, transactional=False),  # plain commit: no outcome
            _commit(2, 70),  # committed by the marker at 4
            _commit(3, 70),
            _commit(5, 71),  # aborted by the marker at 6
            _commit(7, 70),  # after producer 70's COMMIT at 4, before its ABORT at 9: aborted
            _commit(8, 72),  # no marker: open
        ],
        OFFSET_COMMITS.schema,
    )
    markers = transaction_markers(
        raw_frame(
            spark,
            [
                raw(0, 4, CONTROL_KEY["COMMIT"], CONTROL_VALUE, producer_id=70, transactional=True,
                    control_type="COMMIT"),
                raw(0, 6, CONTROL_KEY["ABORT"], CONTROL_VALUE, producer_id=71, transactional=True,
                    control_type="ABORT"),
                raw(0, 9, CONTROL_KEY["ABORT"], CONTROL_VALUE, producer_id=70, transactional=True,
                    control_type="ABORT"),
                # same producer id in another partition does not resolve partition 0's records
                raw(1, 9, CONTROL_KEY["COMMIT"], CONTROL_VALUE, producer_id=72, transactional=True,
                    control_type="COMMIT"),
            ],
        )
    )
    expected = spark.createDataFrame(
        [
            _commit(1, -1, transactional=False),
            _commit(2, 70, outcome="committed", marker=4),
            _commit(3, 70, outcome="committed", marker=4),
            _commit(5, 71, outcome="aborted", marker=6),
            _commit(7, 70, outcome="aborted", marker=9),
            _commit(8, 72, outcome="open"),
        ],
        OFFSET_COMMITS.schema,
    )
    equal(resolve_transactions(commits, markers), expected)


def _in(partition: int, commit: tuple) -> tuple:  # type: ignore[type-arg]
    return (commit[0], partition, *commit[2:])


def _marker(partition: int, offset: int, producer: int, kind: str):  # type: ignore[no-untyped-def]
    return raw(partition, offset, CONTROL_KEY[kind], CONTROL_VALUE, producer_id=producer, transactional=True,
               control_type=kind)


def test_resolved_commits_reads_only_markers_past_each_partitions_first_awaiting_commit(spark: SparkSession) -> None:
    commits = spark.createDataFrame(
        [
            _in(0, _commit(20, 70)),  # partition 0: first awaiting commit at 20
            _in(0, _commit(25, 71)),
            _in(0, _commit(3, -1, transactional=False)),  # plain commits do not move the start
            _in(1, _commit(5, 70)),  # partition 1: first awaiting commit at 5
            _in(2, _commit(1, -1, transactional=False)),  # partition 2: nothing awaits a marker
        ],
        OFFSET_COMMITS.schema,
    )
    archive = raw_frame(
        spark,
        [
            _marker(0, 10, 70, "ABORT"),  # before partition 0's start: not a candidate
            _marker(0, 30, 70, "COMMIT"),
            _marker(0, 31, 71, "ABORT"),
            _marker(1, 4, 70, "COMMIT"),  # before partition 1's start
            _marker(1, 6, 70, "ABORT"),
            _marker(2, 9, 70, "COMMIT"),  # partition 2 awaits nothing
        ],
    )
    starts = awaiting_markers(commits)
    assert sorted(starts) == [("c1", 0, 20, 2), ("c1", 1, 5, 1)]  # (cluster, partition, first offset, commits)
    expected_markers = spark.createDataFrame(
        [("c1", 0, 70, 30, "COMMIT"), ("c1", 0, 71, 31, "ABORT"), ("c1", 1, 70, 6, "ABORT")],
        "cluster string, partition int, producer_id long, offset long, control_type string",
    )
    equal(markers_after(archive, starts), expected_markers)
    expected = spark.createDataFrame(
        [
            _in(0, _commit(20, 70, outcome="committed", marker=30)),
            _in(0, _commit(25, 71, outcome="aborted", marker=31)),
            _in(0, _commit(3, -1, transactional=False)),
            _in(1, _commit(5, 70, outcome="aborted", marker=6)),
            _in(2, _commit(1, -1, transactional=False)),
        ],
        OFFSET_COMMITS.schema,
    )
    equal(resolved_commits(commits, archive), expected)
    # the same outcomes as resolving against every marker of the archive
    equal(resolve_transactions(commits, transaction_markers(archive)), expected)


def test_resolved_commits_without_awaiting_commits_does_not_read_the_archive(spark: SparkSession) -> None:
    commits = spark.createDataFrame(
        [
            _commit(1, -1, transactional=False),
            _commit(2, None),  # read from Kafka flagged transactional with no producer id: an aborted one
        ],
        OFFSET_COMMITS.schema,
    )
    # an archive whose every read fails: the commits must be resolved without it
    archive = raw_frame(spark, [_marker(0, 5, 70, "COMMIT")]).withColumn(
        "offset", F.raise_error(F.lit("the archive was read"))
    )
    assert awaiting_markers(commits) == []
    expected = spark.createDataFrame(
        [_commit(1, -1, transactional=False), _commit(2, None, outcome="aborted")], OFFSET_COMMITS.schema
    )
    equal(resolved_commits(commits, archive), expected)
    equal(resolve_transactions(commits, transaction_markers(raw_frame(spark, []))), expected)


def test_per_partition_condition_quotes_cluster_names(spark: SparkSession) -> None:
    rows = spark.createDataFrame(
        [("it's", 0, 5), ("it's", 0, 9), ("it's", 1, 9), ("a\\b", 0, 9), ("a", 0, 9)],
        "cluster string, partition int, offset long",
    )
    condition = per_partition_condition({("it's", 0): "offset > 5", ("a\\b", 0): "offset >= 9"})
    assert sorted(tuple(r) for r in rows.where(condition).collect()) == [("a\\b", 0, 9), ("it's", 0, 9)]


def test_resolve_previously_open_takes_the_first_later_marker_of_this_run(spark: SparkSession) -> None:
    table = spark.createDataFrame(
        [
            _in(0, _commit(15, 70, outcome="open")),  # COMMIT at 20 is the first marker after it
            _in(0, _commit(25, 70, outcome="open")),  # the ABORT at 30
            _in(0, _commit(12, 71, outcome="open")),  # producer 71's only marker of this run is before it
            _in(0, _commit(13, 72, outcome="open")),  # no marker of producer 72 in this run
            _in(1, _commit(14, 70, outcome="open")),  # producer 70 wrote no marker in partition 1
            _in(0, _commit(5, 70, outcome="committed", marker=8)),  # decided by an earlier run
            _in(0, _commit(6, -1, transactional=False)),
        ],
        OFFSET_COMMITS.schema,
    )
    run_markers = transaction_markers(raw_frame(
        spark,
        [_marker(0, 20, 70, "COMMIT"), _marker(0, 30, 70, "ABORT"), _marker(0, 11, 71, "ABORT"),
         _marker(2, 40, 73, "COMMIT")],
    ))
    expected = spark.createDataFrame(
        [("c1", 0, 15, "committed", 20), ("c1", 0, 25, "aborted", 30)],
        "cluster string, partition int, offset long, transaction_outcome string, transaction_marker_offset long",
    )
    equal(resolve_previously_open(table, run_markers), expected)


def test_run_transactions_sums_up_positions_awaiting_commits_and_markers(spark: SparkSession) -> None:
    key, value = offset_commit("g", "t", 0, 1)

    def txn(partition: int, offset: int, producer: int) -> tuple:  # type: ignore[type-arg]
        return raw(partition, offset, key, value, producer_id=producer, transactional=True)

    new_raw = raw_frame(spark, [
        raw(0, 3, key, value),  # plain commit: a position only
        txn(0, 4, 70), _marker(0, 6, 70, "COMMIT"), txn(0, 8, 70), txn(0, 9, 70),  # 70: open again after 6
        _marker(0, 5, 71, "ABORT"), txn(0, 7, 71), _marker(0, 10, 71, "COMMIT"),  # 71: nothing left open
        txn(0, 11, 72),  # 72: no marker at all
        raw(1, 40, key, value), _marker(1, 41, 70, "ABORT"),  # partition 1: a marker, no commit awaiting
        raw(2, 1, key, value, cluster="c2"),
    ])
    run = run_transactions(new_raw)
    assert run.first_offsets == {("c1", 0): 3, ("c1", 1): 40, ("c2", 2): 1}
    assert run.last_offsets == {("c1", 0): 11, ("c1", 1): 41, ("c2", 2): 1}
    assert run.awaiting == [AwaitingPartition("c1", 0, 4, 5)]
    assert run.first_markers == {("c1", 0, 70): (6, "COMMIT"), ("c1", 0, 71): (5, "ABORT"),
                                 ("c1", 1, 70): (41, "ABORT")}
    # the commits after a producer's last marker: 70's from just after its marker at 6, 72's all
    assert run.open_after == {("c1", 0, 70): (7, 9), ("c1", 0, 72): (11, 11)}


def test_group_metadata_and_members_latest_record_of_a_generation_wins(spark: SparkSession) -> None:
    m1 = member("m1", ["t"], [("t", 0), ("t", 1)])
    m1_again = member("m1", ["t"], [("t", 0)])
    m2 = member("m2", ["t"], [("t", 1)], instance_id="static-2")
    m2_before_restart = member("m2-old", ["t"], [("t", 1)], instance_id="static-2")
    raw_rows = raw_frame(
        spark,
        [
            raw(4, 1, *group_metadata("g", 5, [m1, m2_before_restart], state_ms=T0 + 1), at_ms=1),
            # generation 5 written again: static member static-2 restarted and got a new member id
            raw(4, 2, *group_metadata("g", 5, [m1_again, m2], state_ms=T0 + 2), at_ms=2),
            raw(4, 3, group_metadata("g", 6, [])[0], None, at_ms=3),  # group deleted
        ],
    )
    decoded = decode_records(raw_rows)
    def stored(member_id: str, instance_id: str | None, assigned: list[tuple[str, int]]) -> tuple[Any, ...]:
        # what the history reads: the member as written, its ConsumerProtocol subscription/assignment decoded
        return (member_id, instance_id, "client-" + member_id, "/127.0.0.1", 300000, 45000, ["t"], [], assigned, None)

    expected_metadata = spark.createDataFrame(
        [
            ("c1", 4, 1, ts(1), "g", 3, False, "consumer", 5, "range", "m1", ts(1), 2, ["m1", "m2-old"],
             [stored("m1", None, [("t", 0), ("t", 1)]), stored("m2-old", "static-2", [("t", 1)])]),
            ("c1", 4, 2, ts(2), "g", 3, False, "consumer", 5, "range", "m1", ts(2), 2, ["m1", "m2"],
             [stored("m1", None, [("t", 0)]), stored("m2", "static-2", [("t", 1)])]),
            ("c1", 4, 3, ts(3), "g", None, True, None, None, None, None, None, None, None, None),
        ],
        GROUP_METADATA.schema,
    )
    equal(group_metadata_rows(decoded), expected_metadata)

    sub = bytes(m1.subscription)
    # subscription v1 has no generation: null (issue #21 item 3), not Kafka's in-memory -1
    expected_members = spark.createDataFrame(
        [
            ("c1", "g", 5, "m1", None, "client-m1", "/127.0.0.1", 300000, 45000, "consumer", "range", True,
             1, ["t"], [], None, None, None, 1, [("t", 0)], None, None, 4, 2, ts(2)),
            ("c1", "g", 5, "m2", "static-2", "client-m2", "/127.0.0.1", 300000, 45000, "consumer", "range", False,
             1, ["t"], [], None, None, None, 1, [("t", 1)], None, None, 4, 2, ts(2)),
        ],
        GROUP_MEMBERS.schema,
    )
    assert sub  # the subscription bytes were encoded by coordinator_core and decoded into columns above
    equal(group_member_rows(decoded), expected_members)


def test_other_records_errors_and_coverage(spark: SparkSession) -> None:
    raw_rows = raw_frame(
        spark,
        [
            raw(2, 1, *offset_commit("g", "t", 0, 1)),
            raw(2, 2, b"\x00", b"\x00\x01", at_ms=1),  # key too short
            raw(2, 3, b"\x00\x63abc", b"\x00\x00", at_ms=2),  # unknown future record type 99
            raw(2, 4, offset_commit("g", "t", 0, 1)[0], b"\x00\x03\x00", at_ms=3),  # truncated value
        ],
    )
    decoded = decode_records(raw_rows).cache()
    expected_other = spark.createDataFrame(
        [
            ("c1", 2, 3, ts(2), 99, "unknown", "unknown", None, None, 0, False,
             '{"key_bytes": "YWJj", "value_bytes": "AAA="}', b"\x00\x63abc", b"\x00\x00"),
        ],
        CONSUMER_GROUP_RECORDS.schema,
    )
    equal(consumer_group_record_rows(decoded), expected_other)

    errors = decode_error_rows(decoded)
    assert [f.name for f in errors.schema] == DECODE_ERRORS.column_names
    got = {(r["offset"], r["record_type"], r["error_field_path"], bytes(r["key"]), bytes(r["value"]))
           for r in errors.collect()}
    assert got == {
        (2, None, "key.record_type", b"\x00", b"\x00\x01"),
        (4, 1, got_path(errors, 4), offset_commit("g", "t", 0, 1)[0], b"\x00\x03\x00"),
    }

    control = raw_frame(spark, [raw(2, 5, CONTROL_KEY["COMMIT"], CONTROL_VALUE, producer_id=9, control_type="COMMIT")])
    expected_coverage = spark.createDataFrame(
        [
            (RUN, "c1", 1, "offset_commit", 3, "decoded", 1),
            (RUN, "c1", None, "unknown", None, "error", 1),
            (RUN, "c1", 99, "unknown", 0, "unknown_type", 1),
            (RUN, "c1", 1, "offset_commit", None, "error", 1),  # the decoder reports no version on error
            (RUN, "c1", None, "control", None, "control", 1),
        ],
        DECODE_COVERAGE.schema,
    )
    equal(decode_coverage_rows(decoded, control, RUN), expected_coverage)
    decoded.unpersist()


def got_path(errors, offset: int) -> str:  # type: ignore[no-untyped-def]
    """The field path the decoder reports for a truncated offset-commit value (checked to be non-empty)."""
    path = errors.where(f"offset = {offset}").first()["error_field_path"]
    assert path.startswith("OffsetCommitValue")
    return path


def test_records_to_archive_and_history_gaps(spark: SparkSession) -> None:
    archived = raw_frame(spark, [raw(0, 5, b"k", b"v"), raw(0, 7, b"k", b"v"), raw(1, 3, b"k", b"v")])
    watermarks = archive_watermarks(archived)
    read = raw_frame(
        spark,
        [
            raw(0, 6, b"k", b"v"),  # below the watermark but never archived (older copy): backfilled
            raw(0, 7, b"k", b"v"),  # archived already
            raw(0, 8, b"k", b"v"),  # new
            raw(0, 8, b"k", b"v"),  # the same record from a second copy: once
            raw(1, 9, b"k", b"v"),  # new, after a gap (4..8 never archived)
            raw(2, 0, b"k", b"v"),  # a partition never seen before
        ],
    )
    new = records_to_archive(read, watermarks, archived)
    equal(new, raw_frame(spark, [raw(0, 6, b"k", b"v"), raw(0, 8, b"k", b"v"), raw(1, 9, b"k", b"v"),
                                 raw(2, 0, b"k", b"v")]))

    first_available = spark.createDataFrame(
        [("c1", 0, 6, "copy"), ("c1", 1, 9, "copy"), ("c1", 2, 0, "copy")],
        "cluster string, partition int, earliest_available_offset long, source string",
    )
    expected_gaps = spark.createDataFrame([(RUN, "c1", 1, 3, 9, 5, "copy")], HISTORY_GAPS.schema)
    equal(history_gap_rows(first_available, watermarks, RUN), expected_gaps)


def test_every_transform_ends_on_its_table_schema(spark: SparkSession) -> None:
    """The contract: output columns and types equal the StructType in schemas/ (nullability aside)."""
    raw_rows = raw_frame(spark, [raw(0, 1, *offset_commit("g", "t", 0, 1))])
    decoded = decode_records(raw_rows)
    markers = transaction_markers(raw_rows)
    outputs = [
        (OFFSET_COMMITS, resolve_transactions(offset_commit_rows(decoded), markers)),
        (GROUP_METADATA, group_metadata_rows(decoded)),
        (GROUP_MEMBERS, group_member_rows(decoded)),
        (CONSUMER_GROUP_RECORDS, consumer_group_record_rows(decoded)),
        (DECODE_ERRORS, decode_error_rows(decoded)),
        (DECODE_COVERAGE, decode_coverage_rows(decoded, raw_rows.where("is_control"), RUN)),
        (HISTORY_GAPS, history_gap_rows(
            spark.createDataFrame([], "cluster string, partition int, earliest_available_offset long, source string"),
            archive_watermarks(raw_rows),
            RUN,
        )),
        (RAW_OFFSETS, records_to_archive(raw_rows, archive_watermarks(raw_rows), raw_rows)),
    ]
    for spec, frame in outputs:
        assert [f.name for f in frame.schema] == spec.column_names, spec.name
        assert [f.dataType.simpleString() for f in frame.schema] == [
            f.dataType.simpleString() for f in spec.schema
        ], spec.name


def test_segment_files_are_listed_with_partition_and_cluster(spark: SparkSession, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from jobs.common.config import SegmentSource
    from jobs.ingest.segments import list_segment_files
    from tests.spark.segment_files import Batch, write_segment

    one = [Batch(0, [offset_commit("g", "t", 0, 1)])]
    a = write_segment(tmp_path / "kafka-3.9.1", 12, one)
    b = write_segment(tmp_path / "kafka-4.1.0", 0, one)
    (tmp_path / "kafka-4.1.0" / "__consumer_offsets-0" / "00000000000000000000.index").write_bytes(b"")
    (tmp_path / "kafka-4.1.0" / "meta.properties").write_text("not a segment")
    listed = list_segment_files(spark, [SegmentSource("*", str(tmp_path))])
    expected = spark.createDataFrame(
        [("kafka-3.9.1", 12, str(a)), ("kafka-4.1.0", 0, str(b))], "cluster string, partition int, path string"
    )
    equal(listed, expected)
    named = list_segment_files(spark, [SegmentSource("prod", str(tmp_path / "kafka-3.9.1"))])
    equal(named, spark.createDataFrame([("prod", 12, str(a))], "cluster string, partition int, path string"))


def test_replace_generations_keeps_the_members_of_the_latest_record(spark: SparkSession, tables) -> None:  # type: ignore[no-untyped-def]
    tables.ensure(GROUP_MEMBERS)

    def members(offset: int, ids: list[str]):  # type: ignore[no-untyped-def]
        return spark.createDataFrame(
            [("c1", "g", 5, m, None, "c", "/h", 1, 1, "consumer", "range", m == ids[0], 1, ["t"], [], -1, None, None,
              1, [], None, None, 4, offset, ts(offset)) for m in ids],
            GROUP_MEMBERS.schema,
        )

    tables.replace_generations(GROUP_MEMBERS, members(1, ["m1", "m2-old"]))
    tables.replace_generations(GROUP_MEMBERS, members(2, ["m1", "m2"]))  # a later run: same generation
    tables.replace_generations(GROUP_MEMBERS, members(1, ["m1", "m2-old"]))  # an older record again: ignored
    equal(tables.read(GROUP_MEMBERS), members(2, ["m1", "m2"]))
