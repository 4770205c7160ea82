"""The nightly job end to end on segment files written byte by byte (tests/spark/fixtures_data.py):
the tables it publishes, idempotency, incremental runs, crash consistency and bad input."""

from __future__ import annotations

import dataclasses
import datetime as dt
import shutil
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import jobs.decode.transactions as decode_transactions
from jobs.common.config import Config, SegmentSource, SourcesConfig, TablesConfig
from jobs.common.delta_io import Tables
from jobs.decode.transactions import archived_transaction_state
from jobs.ingest import replicas
from jobs.nightly import StoppedAfterStage, run_nightly
from jobs.run_commit import last_committed, last_committed_row
from jobs.stages import STAGES
from schemas import (
    ALL_TABLES,
    CONSUMER_GROUP_RECORDS,
    DECODE_COVERAGE,
    DECODE_ERRORS,
    GROUP_MEMBERS,
    GROUP_METADATA,
    HISTORY_GAPS,
    INGEST_RUNS,
    OFFSET_COMMITS,
    RAW_OFFSETS,
    TableSpec,
)
from tests.spark.fixtures_data import T0, write_sample
from tests.spark.records import offset_commit
from tests.spark.same_rows import assert_same_rows
from tests.spark.segment_files import Batch, marker, write_segment

# The archive and decode stages this file tests (later stages have their own tests).
ARCHIVE_STAGES = tuple(s for s in STAGES if s.name in ("ingest", "decode"))

pytestmark = pytest.mark.spark

# Columns that name the run rather than the data: excluded when comparing two histories of runs.
LINEAGE = {"ingest_run_id", "ingested_at", "run_id"}
DATA_TABLES = (RAW_OFFSETS, OFFSET_COMMITS, GROUP_METADATA, GROUP_MEMBERS, CONSUMER_GROUP_RECORDS,
               DECODE_ERRORS, DECODE_COVERAGE, HISTORY_GAPS)
_counter = iter(range(10**6))


def ts(ms: int) -> dt.datetime:
    return dt.datetime(2023, 11, 14, 22, 13, 20) + dt.timedelta(milliseconds=ms)


def segment_config(root: Path, source_dir: Path) -> Config:
    n = next(_counter)
    return Config(
        sources=SourcesConfig(mode="segments", segments=(SegmentSource("test", str(source_dir)),)),
        tables=TablesConfig(database=f"cgh_nightly_{n}", location=str(root / f"tables_{n}")),
    )


def tables_of(spark: SparkSession, config: Config) -> Tables:
    return Tables(spark, config.tables.database, config.tables.location)


def contents(tables: Tables, spec: TableSpec) -> DataFrame:
    return tables.read(spec).select(*[c for c in spec.column_names if c not in LINEAGE])


def assert_same_tables(a: Tables, b: Tables) -> None:
    for spec in DATA_TABLES:
        assert_same_rows(contents(a, spec), contents(b, spec), f"table {spec.name}", ignore_nullable=False,
                         ignore_metadata=False)


@pytest.fixture(scope="module")
def sample_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_sample(tmp_path_factory.mktemp("segments"))


@pytest.fixture(scope="module")
def clean_run(spark: SparkSession, sample_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Config:
    """One ordinary run over the sample directory: the reference other tests compare with."""
    config = segment_config(tmp_path_factory.mktemp("clean"), sample_dir)
    run_nightly(spark, config, stages=ARCHIVE_STAGES)
    return config


def test_offset_commits_with_transaction_outcomes(spark: SparkSession, clean_run: Config) -> None:
    tables = tables_of(spark, clean_run)
    actual = spark.table(f"{clean_run.tables.database}.offset_commits")  # registered in the catalog
    v3, no_epoch = 5, None

    def row(p, o, g, t, tp, off, epoch, version, pid, txn, outcome=None, marker_at=None, at=None):  # type: ignore[no-untyped-def]
        at = o if at is None else at
        return ("test", p, o, ts(at), g, t, tp, off, epoch, "", ts(at), None, None, 1, version, False, pid, txn,
                outcome, marker_at)

    expected = spark.createDataFrame(
        [
            row(3, 0, "orders", "t-a", 0, 10, v3, 3, -1, False),
            row(3, 2, "orders", "t-a", 0, 20, v3, 3, 7000, True, "committed", 4),
            row(3, 3, "orders", "t-a", 1, 5, v3, 3, 7000, True, "committed", 4, at=2),
            row(3, 5, "orders", "t-a", 0, 25, v3, 3, 7001, True, "aborted", 6),
            row(3, 7, "orders", "t-a", 0, 30, v3, 3, 7002, True, "open"),
            ("test", 3, 9, ts(9), "orders", "t-a", 1, None, None, None, None, None, None, 1, None, True, -1, False,
             None, None),
            row(7, 0, "billing", "t-b", 0, 100, no_epoch, 1, -1, False),
            row(7, 4, "billing", "t-b", 0, 110, v3, 3, -1, False),
        ],
        OFFSET_COMMITS.schema,
    )
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True, ignore_metadata=True)
    assert tables.read(OFFSET_COMMITS).schema == actual.schema


def test_groups_members_and_quarantine(spark: SparkSession, clean_run: Config) -> None:
    tables = tables_of(spark, clean_run)
    metadata = tables.read(GROUP_METADATA).select("partition", "offset", "group_id", "generation", "leader",
                                                  "member_ids")
    assert sorted(map(tuple, metadata.collect())) == [(3, 1, "orders", 1, "m1", ["m1"]),
                                                      (3, 8, "orders", 2, "m1", ["m1", "m2"])]
    members = tables.read(GROUP_MEMBERS).select(
        "group_id", "generation", "member_id", "group_instance_id", "is_leader",
        F.transform("assigned_partitions", lambda p: F.concat_ws("-", p["topic"], p["partition"])).alias("assigned"),
        "source_offset",
    )
    assert sorted(map(tuple, members.collect())) == [
        ("orders", 1, "m1", None, True, ["t-a-0", "t-a-1"], 1),
        ("orders", 2, "m1", None, True, ["t-a-0"], 8),
        ("orders", 2, "m2", "i-2", False, ["t-a-1"], 8),
    ]
    errors = tables.read(DECODE_ERRORS).select("partition", "offset", "error_field_path", "key", "value")
    assert [tuple(r) for r in errors.collect()] == [
        (7, 1, "key.record_type", bytearray(b"\x00"), bytearray(b"\x00\x01"))]
    unknown = tables.read(CONSUMER_GROUP_RECORDS).select("partition", "offset", "record_type", "record_kind", "key")
    assert [tuple(r) for r in unknown.collect()] == [(7, 2, 99, "unknown", bytearray(b"\x00\x63abc"))]


def test_run_is_committed_with_its_summary(spark: SparkSession, clean_run: Config) -> None:
    run = tables_of(spark, clean_run).read(INGEST_RUNS).collect()
    assert len(run) == 1
    r = run[0]
    assert (r["source_mode"], r["records_read"], r["records_archived"], r["records_decoded"], r["decode_errors"],
            r["history_gaps"]) == ("segments", 14, 14, 12, 1, 0)
    assert [(p["partition"], p["records_read"], p["first_offset"], p["last_offset"]) for p in r["partitions"]] == [
        (3, 10, 0, 9), (7, 4, 0, 4)]
    # the batch with the broken CRC was skipped and reported, with its file and byte position
    assert [(e["file"].endswith("__consumer_offsets-7/00000000000000000000.log"), e["error"].split(":")[0])
            for e in r["segment_errors"]] == [(True, "crc_mismatch")]
    assert set(r["table_versions"]) == {s.name for s in ALL_TABLES} - {"ingest_runs"}
    assert set(r["stage_seconds"]) == {"ingest", "decode"}


def test_the_committed_state_is_read_from_the_commit_note_or_else_from_the_row(
    spark: SparkSession, clean_run: Config
) -> None:
    tables = tables_of(spark, clean_run)
    from_row = last_committed_row(tables)
    assert from_row.run_id is not None and from_row.raw_version_decoded > 0
    assert tables.last_commit_note(INGEST_RUNS) is not None
    from_note = last_committed(tables)
    # the note holds the row's values, and the transaction state that only it carries
    assert (dataclasses.replace(from_note, transactions=None, archive_epochs=None) == from_row
            and from_row.transactions is None and from_row.archive_epochs is None)
    # that state is what the tables hold: the last offset of each partition, the producers with open commits
    # (the note's offset ranges cover the open commits; they may start earlier, just after a marker)
    assert from_note.transactions is not None
    archived = archived_transaction_state(tables, from_row.raw_version_decoded)
    assert from_note.transactions.last_offsets == archived.last_offsets == {("test", 3): 9, ("test", 7): 4}
    assert from_note.transactions.open_producers.keys() == archived.open_producers.keys() == {("test", 3, 7002)}
    for producer, (lo, hi) in archived.open_producers.items():
        noted_lo, noted_hi = from_note.transactions.open_producers[producer]
        assert noted_lo <= lo and hi == noted_hi
    # a later commit without a note (a compaction, a table written before notes): the row is read instead
    spark.sql(f"ALTER TABLE delta.`{tables.path(INGEST_RUNS)}` SET TBLPROPERTIES ('cgh.test' = 'no note')")
    assert tables.last_commit_note(INGEST_RUNS) is None
    assert last_committed(tables) == from_row


def test_tables_are_created_from_the_contract(spark: SparkSession, clean_run: Config) -> None:
    db = clean_run.tables.database
    for spec in ALL_TABLES:
        table = spark.table(f"{db}.{spec.name}")
        assert [(f.name, f.dataType) for f in table.schema] == [(f.name, f.dataType) for f in spec.schema]
        described = {r["col_name"]: r["comment"] for r in spark.sql(f"DESCRIBE TABLE {db}.{spec.name}").collect()}
        assert described[spec.column_names[0]] == spec.schema.fields[0].metadata["comment"]


def test_rerun_of_the_same_input_changes_nothing(
    spark: SparkSession, clean_run: Config, tmp_path: Path, sample_dir: Path
) -> None:
    # A copy of the clean run's warehouse (Delta tables are directories): its first run is the clean run.
    config = segment_config(tmp_path, sample_dir)
    shutil.copytree(clean_run.tables.location, config.tables.location)
    tables = tables_of(spark, config)
    versions = {spec.name: tables.version(spec) for spec in DATA_TABLES}
    run_nightly(spark, config, stages=ARCHIVE_STAGES)
    assert {spec.name: tables.version(spec) for spec in DATA_TABLES} == versions  # not even a commit
    assert_same_tables(tables, tables_of(spark, clean_run))
    second = tables.read(INGEST_RUNS).orderBy("run_id").collect()[1]
    assert (second["records_read"], second["records_archived"], second["records_decoded"]) == (14, 0, 0)


def test_a_run_stopped_after_ingest_then_one_dying_in_decode_then_a_normal_run_equal_the_clean_run(
    spark: SparkSession, clean_run: Config, tmp_path: Path, sample_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One warehouse, two deaths in a row (as tests/spark/test_crash_drills.py chains its kills): a run stopped
    between two stages, then a run that dies in the middle of decode, then a run that finishes: the tables of
    the clean run."""
    config = segment_config(tmp_path, sample_dir)
    tables = tables_of(spark, config)
    # 1. Between two stages: after ingest, the run not committed.
    with pytest.raises(StoppedAfterStage):
        run_nightly(spark, config, stages=ARCHIVE_STAGES, stop_after="ingest")
    assert tables.read(INGEST_RUNS).count() == 0  # not committed
    # 2. In the middle of decode: offset_commits, group_metadata and group_members written, then an executor lost.
    real_append = Tables.append

    def dying_append(self: Tables, spec: TableSpec, rows: DataFrame, *args: Any, **kwargs: Any) -> None:
        if spec is DECODE_ERRORS:
            raise RuntimeError("executor lost (simulated)")
        real_append(self, spec, rows, *args, **kwargs)

    monkeypatch.setattr(Tables, "append", dying_append)
    with pytest.raises(RuntimeError, match="simulated"):
        run_nightly(spark, config, stages=ARCHIVE_STAGES)
    monkeypatch.setattr(Tables, "append", real_append)
    assert tables.read(OFFSET_COMMITS).count() == 8  # the partial writes are there ...
    assert tables.read(INGEST_RUNS).count() == 0
    # 3. A run that finishes.
    run_nightly(spark, config, stages=ARCHIVE_STAGES)
    assert_same_tables(tables, tables_of(spark, clean_run))  # ... and were rolled back and redone once


def test_the_archives_epochs_are_carried_from_run_to_run_and_a_run_groups_only_what_was_archived_since(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ingest's epochs and watermarks are the whole archive's (what grouping raw_offsets gives), while a
    run groups only the rows archived since the last committed run: its own, and a dead run's."""
    source = write_sample(tmp_path / "copy")
    config = segment_config(tmp_path, source)
    tables = tables_of(spark, config)
    ingest_only = [s for s in STAGES if s.name == "ingest"]
    grouped: list[int] = []
    real_grouping = replicas.archive_epochs

    def counted(raw: DataFrame) -> DataFrame:
        grouped.append(raw.count())
        return real_grouping(raw)

    monkeypatch.setattr(replicas, "archive_epochs", counted)

    def whole_archive() -> list[tuple[Any, ...]]:
        return sorted((tuple(r) for r in real_grouping(tables.read(RAW_OFFSETS)).collect()),
                      key=lambda r: (r[0], r[1], -1 if r[2] is None else r[2]))

    ctx = run_nightly(spark, config, stages=ingest_only)
    first = last_committed(tables).archive_epochs
    assert first is not None and list(first.rows) == whole_archive()
    assert ctx.ingest is not None and grouped == [0, ctx.ingest.records_archived]  # the empty archive, its rows
    # A run dies after archiving two records of a new leader epoch; the next run archives one more.
    write_segment(source, 3, [Batch(10, [offset_commit("orders", "t-a", 0, 40, commit_ms=T0 + 10),
                                         offset_commit("orders", "t-a", 1, 9, commit_ms=T0 + 10)],
                                    timestamp_ms=T0 + 10, leader_epoch=4)])
    with pytest.raises(StoppedAfterStage):
        run_nightly(spark, config, stages=ingest_only, stop_after="ingest")
    write_segment(source, 7, [Batch(5, [offset_commit("billing", "t-b", 0, 120, commit_ms=T0 + 11)],
                                    timestamp_ms=T0 + 11, leader_epoch=2)])
    grouped.clear()
    ctx = run_nightly(spark, config, stages=ingest_only)
    assert ctx.ingest is not None and ctx.ingest.records_archived == 1
    carried = last_committed(tables).archive_epochs
    assert carried is not None and carried.raw_version == tables.version(RAW_OFFSETS)
    assert list(carried.rows) == whole_archive()
    assert ("test", 3, 4, 10, 11) in carried.rows and ("test", 7, 2, 5, 5) in carried.rows
    # the dead run's two rows (read before the run's own archive), then the run's own row
    assert grouped == [2, 1]


def test_incremental_run_decodes_only_new_records_and_resolves_open_transactions(
    spark: SparkSession, tmp_path: Path
) -> None:
    source = write_sample(tmp_path / "copy")
    config = segment_config(tmp_path, source)
    run_nightly(spark, config, stages=ARCHIVE_STAGES)
    # The next copy of partition 3 has a new segment: producer 7002's COMMIT and one more plain commit.
    write_segment(source, 3, [marker(10, 7002, "COMMIT", T0 + 10),
                              Batch(11, [offset_commit("orders", "t-a", 0, 31, commit_ms=T0 + 11)],
                                    timestamp_ms=T0 + 11)])
    tables = tables_of(spark, config)
    members_version = tables.version(GROUP_MEMBERS)
    ctx = run_nightly(spark, config, stages=ARCHIVE_STAGES)
    assert ctx.ingest is not None and ctx.decode is not None
    assert (ctx.ingest.records_read, ctx.ingest.records_archived) == (16, 2)
    assert ctx.decode.records_decoded == 1  # the new commit; the marker is counted as a control record
    assert tables.version(GROUP_MEMBERS) == members_version  # no group metadata touched: no write
    commits = tables.read(OFFSET_COMMITS).where("partition = 3 AND offset IN (7, 11)").orderBy("offset")
    assert [tuple(r) for r in commits.select("offset", "committed_offset", "transaction_outcome",
                                             "transaction_marker_offset").collect()] == [
        (7, 30, "committed", 10), (11, 31, None, None)]


def test_transactions_across_runs_and_an_older_segment_backfilled(spark: SparkSession, tmp_path: Path) -> None:
    """The run's own markers decide the commits left open only when its records come after the archive;
    a backfill of older offsets is resolved by offset order, and the run after it reads the transaction
    state from the tables (the backfill run commits none)."""
    source = tmp_path / "copy"
    txn: dict[str, Any] = {"producer_id": 9001, "producer_epoch": 0, "transactional": True}
    write_segment(source, 3, [Batch(10, [offset_commit("orders", "t-a", 0, 40, commit_ms=T0 + 10)],
                                    timestamp_ms=T0 + 10, **txn)])
    config = segment_config(tmp_path, source)
    tables = tables_of(spark, config)

    def outcomes() -> list[tuple[Any, ...]]:
        rows = tables.read(OFFSET_COMMITS).orderBy("offset")
        return [tuple(r) for r in rows.select("offset", "transaction_outcome", "transaction_marker_offset").collect()]

    run_nightly(spark, config, stages=ARCHIVE_STAGES)
    assert outcomes() == [(10, "open", None)]
    assert last_committed(tables).transactions is not None
    # An older segment copied later: a commit of the same producer and its COMMIT, both before offset 10.
    # The COMMIT at 1 is this run's first marker of producer 9001, but it does not follow offset 10.
    write_segment(source, 3, [Batch(0, [offset_commit("orders", "t-a", 0, 38, commit_ms=T0)], timestamp_ms=T0,
                                    **txn),
                              marker(1, 9001, "COMMIT", T0 + 1)])
    run_nightly(spark, config, stages=ARCHIVE_STAGES)
    assert outcomes() == [(0, "committed", 1), (10, "open", None)]
    assert last_committed(tables).transactions is None
    # In order again: the ABORT at 11 ends the transaction of offset 10.
    write_segment(source, 3, [marker(11, 9001, "ABORT", T0 + 11)])
    run_nightly(spark, config, stages=ARCHIVE_STAGES)
    assert outcomes() == [(0, "committed", 1), (10, "aborted", 11)]
    state = last_committed(tables).transactions
    assert state is not None and state.open_producers == {} and state.last_offsets == {("test", 3): 11}


@pytest.mark.parametrize("by_update", [True, False], ids=["update", "merge"])
def test_transactions_of_several_producers_decided_in_a_later_run(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, by_update: bool
) -> None:
    """Producers left open in two partitions: the next run's markers decide two of them (their every open
    commit, and none of another producer's); the third stays open. Set by one UPDATE naming the producers,
    or, past DECIDED_BY_UPDATE_LIMIT, by a MERGE keyed by producer: the same outcomes."""
    if not by_update:
        monkeypatch.setattr(decode_transactions, "DECIDED_BY_UPDATE_LIMIT", 0)

    def commit(offset: int, group: str, topic: str, committed: int, producer: int) -> Batch:
        return Batch(offset, [offset_commit(group, topic, 0, committed, commit_ms=T0)], timestamp_ms=T0,
                     producer_id=producer, producer_epoch=0, transactional=True)

    source = tmp_path / "copy"
    write_segment(source, 3, [commit(0, "orders", "t-a", 40, 501), commit(1, "orders", "t-a", 41, 503),
                              commit(2, "orders", "t-a", 42, 501)])
    write_segment(source, 5, [commit(0, "billing", "t-b", 7, 502)])
    config = segment_config(tmp_path, source)
    tables = tables_of(spark, config)

    def outcomes() -> list[tuple[Any, ...]]:
        rows = tables.read(OFFSET_COMMITS).orderBy("partition", "offset")
        return [tuple(r) for r in rows.select("partition", "offset", "transaction_outcome",
                                              "transaction_marker_offset").collect()]

    run_nightly(spark, config, stages=ARCHIVE_STAGES)
    assert outcomes() == [(3, 0, "open", None), (3, 1, "open", None), (3, 2, "open", None), (5, 0, "open", None)]
    # The next run: the markers, and new commits appended while the decided ones are updated, among them a
    # new transaction of producer 501 that its earlier COMMIT does not decide.
    write_segment(source, 3, [marker(3, 501, "COMMIT", T0 + 3), commit(4, "orders", "t-a", 43, 501),
                              Batch(5, [offset_commit("orders", "t-a", 0, 44, commit_ms=T0)], timestamp_ms=T0)])
    write_segment(source, 5, [marker(1, 502, "ABORT", T0 + 1)])
    run_nightly(spark, config, stages=ARCHIVE_STAGES)
    assert outcomes() == [(3, 0, "committed", 3), (3, 1, "open", None), (3, 2, "committed", 3),
                          (3, 4, "open", None), (3, 5, None, None), (5, 0, "aborted", 1)]
    state = last_committed(tables).transactions
    assert state is not None and state.open_producers == {("test", 3, 503): (1, 1), ("test", 3, 501): (4, 4)}
