"""The decode stage: the raw_offsets rows appended since the last run -> the silver tables (`run_decode`).

Offset commits (key types 0 and 1, nearly every record) are decoded inside the job that appends them to
offset_commits, their transaction outcomes computed beforehand from raw columns (`jobs.decode.outcomes`)
and broadcast to the tasks; the other records are decoded once into a cache read by the other tables
(`jobs.decode.rows`). Transactions left open by earlier runs are settled first (`jobs.decode.transactions`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from jobs.common.boundary import DecodeSideOutput, decode_records, side_output
from jobs.common.collect import collect_together
from jobs.common.delta_io import Tables, write_together
from jobs.common.keys import GROUP_METADATA_TYPE, OFFSET_COMMIT_TYPES, key_type_in
from jobs.common.progress import step
from jobs.common.session import session_setting
from jobs.decode.outcomes import (
    AwaitingPartition,
    archived_outcomes,
    transaction_markers,
    with_outcomes,
    without_markers,
)
from jobs.decode.rows import (
    consumer_group_record_rows,
    decode_coverage_rows,
    decode_error_rows,
    group_member_rows,
    group_metadata_rows,
    offset_commit_rows,
)
from jobs.decode.transactions import (
    RunTransactions,
    TransactionState,
    archived_transaction_state,
    run_transaction_rows,
    summarize_run_transactions,
    update_decided_producers,
    update_previously_open,
)
from schemas import (
    CONSUMER_GROUP_RECORDS,
    DECODE_COVERAGE,
    DECODE_ERRORS,
    GROUP_MEMBERS,
    GROUP_METADATA,
    OFFSET_COMMITS,
    RAW_OFFSETS,
)
from schemas.columns import CLUSTER, KEY, OFFSET, PARTITION

#: A row of decode_coverage without its run id: (cluster, record type, kind, value version, status, records).
Coverage = tuple[Any, ...]


@dataclass(frozen=True)
class DecodeResult:
    raw_version_decoded: int
    records_decoded: int
    decode_errors: int
    coverage: list[tuple[str, int | None, str | None, int | None, str, int]]
    #: the transaction state after the run, for the next one; None when not known
    transactions: TransactionState | None = None


#: Awaiting commits whose outcomes are broadcast to the decoding tasks; with more, the decoded commits are
#: cached and the outcomes joined with a shuffle (a fleet writing mostly transactional commits).
BROADCAST_OUTCOMES_LIMIT = 1_000_000

#: `spark.sql.execution.arrow.maxBytesPerBatch` while the offset commits go to Python: Spark measures the
#: Arrow batch it is filling after every row unless the limit is Int.MaxValue, and that measuring was about
#: 6% of the JVM's work in the job. The batches stay bounded by their row count (Arrow's maxRecordsPerBatch)
#: and an offset commit's size (group id, topic name, and metadata capped by offset.metadata.max.bytes).
_NO_BYTE_LIMIT = str(2**31 - 1)


@dataclass
class _CommitsWritten:
    coverage: list[tuple[Any, ...]]
    errors: DataFrame | None


def _write_offset_commits(
    tables: Tables,
    data_records: DataFrame,
    archive: DataFrame,
    batch_size: int,
    starts: list[AwaitingPartition],
    run_markers: DataFrame | None,
) -> _CommitsWritten:
    """Decode the offset-commit records among `data_records` and append them to offset_commits with their transactions
    resolved; returns their coverage counts and the records that did not decode.

    The commits are nearly all of a run's records, so they are decoded inside the job that writes them
    (no cache, no second pass): the transaction outcomes are computed first from raw columns only and
    broadcast to the tasks, and the tasks report coverage counts and undecodable records through an
    accumulator (`DecodeSideOutput`). When the outcomes are too many to broadcast, the decoded commits are
    cached instead and everything is computed from the cache.
    """
    spark = tables.spark
    commit_records = data_records.where(key_type_in(F.col(KEY), *OFFSET_COMMIT_TYPES))
    # Raw columns say which commits await a marker (`awaiting_commits`), with no need to read the keys.
    awaiting, outcomes = archived_outcomes(data_records, archive, starts, run_markers)
    if awaiting > BROADCAST_OUTCOMES_LIMIT:  # one outcome per awaiting commit
        assert outcomes is not None
        decoded = decode_records(commit_records, batch_size).persist(StorageLevel.MEMORY_AND_DISK)
        try:
            tables.append(OFFSET_COMMITS, with_outcomes(offset_commit_rows(decoded), outcomes, broadcast=False))
            coverage = [tuple(r)[1:] for r in decode_coverage_rows(decoded, None, "").collect()]
            if not any(c[4] == "error" for c in coverage):
                return _CommitsWritten(coverage, None)
            # the error rows outlive the cache: kept, with their bytes, until the stage writes them
            return _CommitsWritten(coverage, decode_error_rows(decoded).localCheckpoint())
        finally:
            decoded.unpersist()
    side = side_output(spark)
    commits = offset_commit_rows(decode_records(commit_records, batch_size, side))
    with session_setting(spark, "spark.sql.execution.arrow.maxBytesPerBatch", _NO_BYTE_LIMIT):
        tables.append(OFFSET_COMMITS, without_markers(commits) if outcomes is None
                      else with_outcomes(commits, outcomes, broadcast=True))
    seen: DecodeSideOutput = side.value
    coverage = [(*key, count) for key, count in seen.coverage.items()]
    if seen.overflow:  # more than a task may carry back: decoded again, keeping only the errors
        return _CommitsWritten(coverage, decode_error_rows(decode_records(commit_records, batch_size)))
    if seen.errors:
        return _CommitsWritten(coverage, spark.createDataFrame(seen.errors, DECODE_ERRORS.schema))
    return _CommitsWritten(coverage, None)


def run_decode(
    tables: Tables,
    run_id: str,
    after_raw_version: int,
    batch_size: int,
    transactions: TransactionState | None = None,
) -> DecodeResult:
    """Decode the raw_offsets rows appended after `after_raw_version` and write the silver tables.

    Two kinds of records, split in the JVM by key version: offset commits (nearly all) are decoded in the
    job that writes offset_commits (`_write_offset_commits`); the rest (GroupMetadata, KIP-848 and unknown
    types, keys too short to tell) is decoded once, cached, and written to the other tables.

    Adaptive query execution is off for the stage: its shuffles (outcome and member windows, small
    aggregates, Delta's MERGE) gain nothing from re-planning, while AQE runs every exchange as a Spark job
    of its own. On the 10M benchmark's 1% increment that was about 12% of the run (~45 small jobs); the
    full 10M run was the same either way.
    """
    with session_setting(tables.spark, "spark.sql.adaptive.enabled", "false"):
        return _decode_new_records(tables, run_id, after_raw_version, batch_size, transactions)


def _decode_new_records(
    tables: Tables, run_id: str, after_raw_version: int, batch_size: int, transactions: TransactionState | None
) -> DecodeResult:
    up_to = tables.version(RAW_OFFSETS)
    if up_to <= after_raw_version:
        return DecodeResult(after_raw_version, 0, 0, [], transactions)
    new_raw = tables.changes(RAW_OFFSETS, after_raw_version, up_to)
    data_records = new_raw.where(~F.col("is_control"))
    control_records = new_raw.where(F.col("is_control"))
    archive = tables.read(RAW_OFFSETS, version=up_to)

    not_commits = data_records.where(~key_type_in(F.col(KEY), *OFFSET_COMMIT_TYPES))
    others = decode_records(not_commits, batch_size).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        with step("decode GroupMetadata and other records; sum up the new records' transactions"):
            coverage, transaction_rows = collect_together(
                decode_coverage_rows(others, control_records, run_id), run_transaction_rows(new_raw)
            )
            coverage_rows: list[Coverage] = [tuple(r)[1:] for r in coverage]
            run = summarize_run_transactions(transaction_rows)
        if transactions is not None:
            before = transactions
        else:
            with step("transactions left open by earlier runs (read from the tables)"):
                before = archived_transaction_state(tables, after_raw_version)
        in_order = _settle_earlier_runs(tables, run, before, control_records)
        with step("decode offset commits into offset_commits"):
            commits = _write_offset_commits(
                tables, data_records, archive, batch_size, run.awaiting,
                transaction_markers(control_records) if in_order else None,
            )
        coverage_rows += commits.coverage
        records_decoded = sum(r[5] for r in coverage_rows if r[4] != "control")
        errors = sum(r[5] for r in coverage_rows if r[4] == "error")
        _write_other_tables(tables, run_id, others, coverage_rows, commits.errors, errors > 0)
    finally:
        others.unpersist()
    # After a backfill the next run reads the state from the tables again.
    after = run.after(before) if in_order else None
    return DecodeResult(up_to, records_decoded, errors, [tuple(r) for r in coverage_rows], after)


def _settle_earlier_runs(
    tables: Tables, run: RunTransactions, before: TransactionState, control_records: DataFrame
) -> bool:
    """Set the outcome of the commits left open by earlier runs that this run's markers decide; returns
    whether the run follows everything archived before it (`RunTransactions.follows`).

    Done before this run's commits are appended: the UPDATE then reads the offset_commits snapshot the run
    starts from (reading each new table version costs a Delta state reconstruction), and a blind append
    beside it would fail its conflict check.
    """
    if run.follows(before):
        decided = run.decided(before)
        if decided:
            with step(f"resolve {len(decided)} transactions left open by earlier runs"):
                update_decided_producers(tables, before, decided)
        return True
    if run.first_markers and tables.version(OFFSET_COMMITS) > 0:
        # Older offsets backfilled: the commits' order against the markers is worked out row by row.
        with step("resolve transactions left open by earlier runs"):
            update_previously_open(tables, transaction_markers(control_records))
    return False


def _write_other_tables(
    tables: Tables,
    run_id: str,
    others: DataFrame,
    coverage_rows: list[Coverage],
    commit_errors: DataFrame | None,
    any_errors: bool,
) -> None:
    """Write group_metadata, group_members, consumer_group_records and decode_errors from the decoded
    `others` (the records that are not offset commits; `commit_errors` are the commits that did not decode),
    and decode_coverage from `coverage_rows`.

    A table with no new rows gets no commit (each Delta commit costs seconds on a small run). The tables
    are independent of each other: written at the same time (`write_together`; a 1% run on the 10M
    benchmark tables: 2.1-2.3 s for these writes, 2.4-2.6 s one after another).
    """
    present = {(r[1], r[4]) for r in coverage_rows}
    has_group_metadata = any(t == GROUP_METADATA_TYPE and s != "error" for t, s in present)
    has_other = any(
        s in ("decoded", "decoded_trailing_bytes", "tombstone", "unknown_type")
        and (t is None or t > GROUP_METADATA_TYPE)
        for t, s in present
    )
    writes: dict[str, Callable[[], None]] = {}
    if has_group_metadata:
        writes[GROUP_METADATA.name] = partial(tables.append, GROUP_METADATA, group_metadata_rows(others))
        writes[GROUP_MEMBERS.name] = partial(tables.replace_generations, GROUP_MEMBERS, group_member_rows(others))
    if has_other:
        writes[CONSUMER_GROUP_RECORDS.name] = partial(
            tables.append, CONSUMER_GROUP_RECORDS, consumer_group_record_rows(others)
        )
    if any_errors:
        error_rows = decode_error_rows(others)
        if commit_errors is not None:
            error_rows = error_rows.unionByName(commit_errors)
        writes[DECODE_ERRORS.name] = partial(tables.append, DECODE_ERRORS, error_rows)
    writes[DECODE_COVERAGE.name] = partial(
        tables.append, DECODE_COVERAGE,
        tables.spark.createDataFrame([(run_id, *r) for r in coverage_rows], DECODE_COVERAGE.schema),
    )
    with step(", ".join(writes)):
        write_together(list(writes.values()))


# ----------------------------------------------------------------------------------------------
# Upgrade of a warehouse written by an older version


def group_metadata_lacks_members(tables: Tables) -> bool:
    """Whether group_metadata was written before it kept each record's decoded members."""
    return tables.exists(GROUP_METADATA) and "members" not in tables.delta(GROUP_METADATA).toDF().columns


def add_group_metadata_members(tables: Tables, batch_size: int) -> int:
    """Give a group_metadata table of an older version its `members` column, filled from the archive.

    The history reads each record's members from group_metadata instead of decoding the archived bytes
    again, so the rows written before the column existed get theirs once: the archived GroupMetadata
    records are decoded (the one full read, at the upgrade) and matched on (cluster, partition, offset).
    Two commits (the column, then the values); a run that dies after them is rolled back to before them by
    the next run, which does the upgrade again. Returns the rows filled.
    """
    member_type = GROUP_METADATA.schema["members"].dataType.simpleString()
    tables.spark.sql(f"ALTER TABLE delta.`{tables.path(GROUP_METADATA)}` ADD COLUMNS (members {member_type})")
    archived = tables.read(RAW_OFFSETS).where(
        ~F.col("is_control") & key_type_in(F.col(KEY), GROUP_METADATA_TYPE))
    members = (group_metadata_rows(decode_records(archived, batch_size))
               .select(CLUSTER, PARTITION, OFFSET, "members").where(F.col("members").isNotNull()))
    (tables.delta(GROUP_METADATA).alias("t")
     .merge(members.alias("s"), "t.cluster = s.cluster AND t.partition = s.partition AND t.offset = s.offset")
     .whenMatchedUpdate(set={"members": F.col("s.members")})
     .execute())
    return int(tables.read(GROUP_METADATA).where(F.col("members").isNotNull()).count())
