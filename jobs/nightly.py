"""The nightly pipeline: ingest -> decode (-> later stages), incremental, idempotent, crash-safe.

    python -m jobs.nightly [--conf conf/local.toml]
    spark-submit --master yarn --jars <delta + kafka jars> jobs/nightly.py --conf conf/cluster.toml

A run is committed by the single ingest_runs row it writes last, which records the Delta version of
every table after the run's writes. A run that dies half-way leaves no such row; the next run first
restores every derived table to the versions of the last committed run (RESTORE is a metadata
operation), then decodes every raw_offsets row archived since that run: the crashed run's archive
appends are kept (raw_offsets is append-only), its partial derived writes are undone, nothing is lost
and nothing is written twice.

Later stages (coordinator events, generations, replay, storms) plug in by appending a `Stage` to
`STAGES`: a name, the tables it writes, and a function of the `RunContext`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import secrets
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from coordinator_core.storms import StormThresholds
from jobs.common.config import Config, load_job_config
from jobs.common.delta_io import Tables
from jobs.common.progress import log, step, watching
from jobs.common.run_lock import (
    EXIT_WAREHOUSE_CLAIMED,
    RunClaim,
    WarehouseClaimed,
    explain_metastore_failure,
    metastore_refusal,
)
from jobs.common.session import build_session
from jobs.decode import (
    DecodeResult,
    TransactionState,
    add_group_metadata_members,
    group_metadata_lacks_members,
    run_decode,
)
from jobs.history import RunRange, run_generations
from jobs.ingest import IngestResult, run_ingest_kafka, run_ingest_segments
from jobs.logs import LogsResult, run_logs
from jobs.maintenance import run_maintenance
from jobs.offset_events import run_offset_events
from jobs.storms import run_storms
from jobs.views import create_views
from jobs.whatif import run_replay_and_whatif
from schemas import (
    ALL_TABLES,
    ASSIGNMENT_REPLAY,
    ASSIGNOR_WHATIF,
    CONSUMER_GROUP_RECORDS,
    COORDINATOR_EVENTS,
    DECODE_COVERAGE,
    DECODE_ERRORS,
    GROUP_GENERATIONS,
    GROUP_MEMBERS,
    GROUP_METADATA,
    HISTORY_GAPS,
    INGEST_RUNS,
    LOG_FILE_READS,
    OFFSET_COMMITS,
    OFFSET_EVENTS,
    RAW_LOG_LINES,
    RAW_OFFSETS,
    REBALANCE_STORMS,
    TableSpec,
)
from schemas.gold import GOLD_TABLES
from schemas.observability import RUN_CLAIMS
from schemas.state import GROUP_STATE

# Tables never rolled back after a crash: the archive (append-only by contract; whatever a crashed run
# archived is valid and will be decoded by the next run), gaps (keyed by where the archive stopped, so
# recording one twice is impossible) and the commit log itself.
NOT_ROLLED_BACK = {RAW_OFFSETS.name, HISTORY_GAPS.name, INGEST_RUNS.name}

# Tables the gold stages read as version ranges (change data feed).
INCREMENTAL_INPUTS = (OFFSET_COMMITS, GROUP_METADATA, GROUP_MEMBERS, CONSUMER_GROUP_RECORDS, COORDINATOR_EVENTS)


@dataclass(frozen=True)
class CommittedState:
    """What the last successful run left: decoded raw_offsets through this version; table versions."""

    run_id: str | None
    raw_version_decoded: int
    table_versions: dict[str, int]
    #: transactions after the decoded records (carried by the commit note only; None: read from the tables)
    transactions: TransactionState | None = None


@dataclass
class RunContext:
    tables: Tables
    config: Config
    run_id: str
    started_at: dt.datetime
    committed: CommittedState
    ingest: IngestResult | None = None
    decode: DecodeResult | None = None
    stage_seconds: dict[str, float] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # for later stages' summary lines
    #: persisted frames shared between stages of one run, unpersisted when the run ends
    extra_frames: dict[str, DataFrame] = field(default_factory=dict)
    #: recompute every gold table from the archive from an empty state (`--rebuild`, or the first run of a
    #: warehouse written before the gold stages carried state)
    rebuild: bool = False
    #: run_claims' version before this run claimed the warehouse (its maintenance looks after it too)
    claims_version_before: int | None = None
    #: the logs stage's per-file result (the summary aggregates it per cluster; per file with --verbose)
    logs: LogsResult | None = None
    #: generation rows written (inserted or amended) and withdrawn by this run, per cluster
    generations_by_cluster: dict[str, dict[str, int]] = field(default_factory=dict)
    #: when the run's ingest_runs row was written (the run committed)
    finished_at: dt.datetime | None = None

    def run_range(self) -> RunRange:
        """What is new for the gold stages: every table's rows after the versions the last committed run
        left (None when rebuilding: everything)."""
        return RunRange(None if self.rebuild else dict(self.committed.table_versions))


@dataclass(frozen=True)
class Stage:
    name: str
    writes: tuple[TableSpec, ...]
    run: Callable[[RunContext], None]


def _ingest_stage(ctx: RunContext) -> None:
    sources = ctx.config.sources
    if sources.mode == "segments":
        ctx.ingest = run_ingest_segments(
            ctx.tables, sources.segments, ctx.run_id, ctx.started_at, ctx.config.decode.arrow_batch_size
        )
    elif sources.mode == "kafka":
        ctx.ingest = run_ingest_kafka(ctx.tables, sources.kafka, ctx.run_id, ctx.started_at)
    else:
        ctx.ingest = IngestResult(source_mode="none")


def _decode_stage(ctx: RunContext) -> None:
    ctx.decode = run_decode(
        ctx.tables, ctx.run_id, ctx.committed.raw_version_decoded, ctx.config.decode.arrow_batch_size,
        ctx.committed.transactions,
    )


def _logs_stage(ctx: RunContext) -> None:
    if not ctx.config.sources.logs:
        return
    ctx.logs = run_logs(ctx.tables, ctx.config.sources.logs, ctx.run_id, ctx.started_at,
                        max_line_bytes=ctx.config.logs.max_line_bytes)


def _nothing_new(ctx: RunContext) -> bool:
    """No row of the gold stages' inputs changed since the last committed run (a night without records or
    log lines, or a re-run): their folds have nothing to continue. Read from the inputs' commit files (an
    operator's OPTIMIZE moves a version and changes no row)."""
    if ctx.rebuild:
        return False
    since = ctx.committed.table_versions
    return not any(ctx.tables.data_changed_since(spec, int(since.get(spec.name, 0))) for spec in INCREMENTAL_INPUTS)


def _history_stage(ctx: RunContext) -> None:
    if _nothing_new(ctx):
        ctx.extra["history"] = "nothing new since the last committed run"
        return
    reopen_hours = ctx.config.history.reopen_hours
    since = None if ctx.rebuild else dict(ctx.committed.table_versions)
    generations = run_generations(ctx.tables, ctx.run_id, ctx.run_range(), reopen_hours)
    ctx.extra_frames["changed_generations"] = generations.changed
    # (the changed rows are cached: counting them per cluster costs no read)
    for row in generations.changed.groupBy("cluster", "_deleted").count().collect():
        counts = ctx.generations_by_cluster.setdefault(row["cluster"], {"written": 0, "withdrawn": 0})
        counts["withdrawn" if row["_deleted"] else "written"] += int(row["count"])
    replay = run_replay_and_whatif(ctx.tables, generations.changed, ctx.run_id, since, reopen_hours=reopen_hours)
    with step("offset events: continue each touched group's commits, stalls and tombstones"):
        history = ctx.config.history
        offsets = run_offset_events(ctx.tables, ctx.run_id, since, reopen_hours=reopen_hours,
                                    stall_min_commits=history.stall_min_commits, stall_min_ms=history.stall_min_ms)
    late = (f"; {generations.late_events} log lines older than [history] reopen_hours not applied"
            if generations.late_events else "")
    if generations.records_unreadable:
        late += (f"; {generations.records_unreadable} group records whose stored record_json could not be read "
                 "back left out (rows kept in consumer_group_records; a rebuild after the decode stage is re-run "
                 "restores them)")
    ctx.extra["history"] = (
        f"{generations.groups} groups continued ({generations.rows_written} generation rows written or amended, "
        f"{generations.rows_deleted} withdrawn){late}; {replay.replayed_generations} generations replayed "
        f"({replay.replay_mismatches} mismatches), what-if of {replay.whatif_groups} groups "
        f"({replay.whatif_rows_written} rows written); offset events of {offsets.groups} groups "
        f"({offsets.rows_written} rows written or amended, {offsets.rows_deleted} withdrawn)"
    )


def _storms_stage(ctx: RunContext) -> None:
    changed = ctx.extra_frames.get("changed_generations")
    # No generation row stored, amended or withdrawn (the history stage had nothing new, or only offset
    # commits): no storm can change. (The changed rows are cached: asking costs no read.)
    if changed is None or (not ctx.rebuild and changed.isEmpty()):
        ctx.extra["storms"] = "no generation changed"
        return
    s = ctx.config.storms
    thresholds = StormThresholds(s.min_rebalances, s.window_minutes, s.quiet_minutes, s.flapping_min_rejoins,
                                 s.lockstep_seconds, s.lockstep_min_groups)
    result = run_storms(ctx.tables, changed, thresholds, ctx.run_id, ctx.rebuild,
                        reopen_hours=ctx.config.history.reopen_hours)
    ctx.extra["storms"] = (f"{result.groups} groups' storms continued: {result.storms_written} storms written, "
                           f"{result.storms_deleted} withdrawn")


def _maintenance_stage(ctx: RunContext) -> None:
    """Compact and vacuum the tables this run changed (jobs/maintenance.py). It changes no row, so it
    writes no table of its own: if the run dies later, its commits on derived tables are undone with the
    writes of the stages that own them, and VACUUM keeps every file of the versions that recovery restores
    and of the raw_offsets versions the next decode reads (the `since` versions)."""
    if not ctx.config.maintenance.enabled:
        return
    since = {spec.name: ctx.committed.table_versions.get(spec.name, 0) for spec in ALL_TABLES}
    since[RAW_OFFSETS.name] = ctx.committed.raw_version_decoded
    # ingest_runs gains this run's row after the stages: its latest commit is the last run's row.
    since[INGEST_RUNS.name] = ctx.tables.version(INGEST_RUNS) - 1
    specs = ALL_TABLES
    if ctx.claims_version_before is not None:
        # Two commits a run (claim, release), each rewriting its one small file: vacuumed like the others.
        specs = (*ALL_TABLES, RUN_CLAIMS)
        since[RUN_CLAIMS.name] = ctx.claims_version_before
    ctx.extra["maintenance"] = run_maintenance(ctx.tables, specs, ctx.config.maintenance, since).format()


def _report_stage(ctx: RunContext) -> None:
    views = create_views(ctx.tables.spark, ctx.tables.database)
    ctx.extra["views"] = ", ".join(views)
    from jobs.report import write_report  # plotly is loaded by the report stage only

    path = write_report(ctx.tables, Path(ctx.config.report.path), ctx.config.report.groups_shown,
                        source=f"database {ctx.tables.database}")
    ctx.extra["report"] = str(path)


STAGES: tuple[Stage, ...] = (
    Stage("ingest", (RAW_OFFSETS, HISTORY_GAPS), _ingest_stage),
    Stage(
        "decode",
        (OFFSET_COMMITS, GROUP_METADATA, GROUP_MEMBERS, CONSUMER_GROUP_RECORDS, DECODE_ERRORS, DECODE_COVERAGE),
        _decode_stage,
    ),
    # log_file_reads holds each file's read position: it is rolled back with the two tables it describes.
    Stage("logs", (RAW_LOG_LINES, COORDINATOR_EVENTS, LOG_FILE_READS), _logs_stage),
    Stage("history", (GROUP_GENERATIONS, OFFSET_EVENTS, ASSIGNMENT_REPLAY, ASSIGNOR_WHATIF, GROUP_STATE),
          _history_stage),
    Stage("storms", (REBALANCE_STORMS, GROUP_STATE), _storms_stage),
    Stage("maintenance", (), _maintenance_stage),
    Stage("report", (), _report_stage),
)


class StoppedAfterStage(RuntimeError):
    """Raised by `run_nightly(stop_after=...)`: a deliberate stop between stages (crash drills, tests)."""


def new_run_id(now: dt.datetime) -> str:
    return f"{now:%Y%m%dT%H%M%S%f}Z-{secrets.token_hex(3)}"


#: The key of the run's commit note: the userMetadata of the Delta commit that appends its ingest_runs row.
COMMIT_NOTE_KEY = "consumer_group_history.committed_run"


def commit_note(state: CommittedState) -> str:
    """The committed state, as the note of the ingest_runs commit that records the run (the row's values)."""
    return json.dumps({COMMIT_NOTE_KEY: {
        "run_id": state.run_id,
        "raw_version_decoded": state.raw_version_decoded,
        "table_versions": state.table_versions,
        "transactions": state.transactions.to_json() if state.transactions else None,
    }})


def last_committed_row(tables: Tables) -> CommittedState:
    """The committed state from the latest ingest_runs row."""
    last = tables.read(INGEST_RUNS).orderBy(F.col("run_id").desc()).limit(1).collect()
    if not last:
        return CommittedState(None, 0, {})
    row = last[0]
    return CommittedState(row["run_id"], int(row["raw_version_decoded"]), dict(row["table_versions"]))


def last_committed(tables: Tables) -> CommittedState:
    """What the last successful run left.

    Read from the note of ingest_runs' latest commit (`commit_note`: one small read of the Delta log)
    rather than from the table (a Delta state reconstruction and a query, about a second per run); from
    the table when the latest commit has no note (a table compacted or written before notes existed).
    """
    if tables.version(INGEST_RUNS) == 0:  # only the table's creation: no run committed yet
        return CommittedState(None, 0, {})
    note = tables.last_commit_note(INGEST_RUNS)
    try:
        state = json.loads(note)[COMMIT_NOTE_KEY] if note else None
    except (ValueError, TypeError, KeyError):
        state = None
    if not isinstance(state, dict):
        return last_committed_row(tables)
    return CommittedState(state["run_id"], int(state["raw_version_decoded"]),
                          {name: int(v) for name, v in state["table_versions"].items()},
                          TransactionState.from_json(state.get("transactions")))


def recover(tables: Tables, committed: CommittedState, stages: Sequence[Stage]) -> list[str]:
    """Undo the derived-table writes of a run that did not commit. Returns the tables restored."""
    restored = []
    for stage in stages:
        for spec in stage.writes:
            if spec.name in NOT_ROLLED_BACK or not tables.exists(spec):
                continue
            # A table created after the last commit (or never committed) goes back to its empty version 0.
            if tables.restore(spec, committed.table_versions.get(spec.name, 0)):
                restored.append(spec.name)
    return restored


def _ingest_runs_row(ctx: RunContext, finished_at: dt.datetime, state: CommittedState) -> tuple:
    """The run's ingest_runs row; `state` is what it commits (also the commit's note)."""
    ingest = ctx.ingest or IngestResult(source_mode="none")
    decode = ctx.decode or DecodeResult(ctx.committed.raw_version_decoded, 0, 0, [])
    return (
        ctx.run_id,
        ctx.started_at,
        finished_at,
        ingest.source_mode,
        ingest.sources,
        ingest.records_read,
        ingest.records_archived,
        decode.records_decoded,
        decode.decode_errors,
        len(ingest.history_gaps),
        [
            (p["cluster"], p["partition"], p["records_read"], p["records_archived"], p["first_offset"],
             p["last_offset"])
            for p in ingest.partitions
        ],
        [(e["file"], e["position"], e["error"]) for e in ingest.segment_errors],
        state.raw_version_decoded,
        state.table_versions,
        dict(ctx.stage_seconds),
    )


def run_nightly(
    spark: SparkSession,
    config: Config,
    stages: Sequence[Stage] = STAGES,
    stop_after: str | None = None,
    now: dt.datetime | None = None,
    rebuild: bool = False,
) -> RunContext:
    """Run every stage once and commit the run; see the module docstring for the guarantees.

    `rebuild`: empty group_state and the gold tables first and fold every group's history from the whole
    archive (after a change of the history logic). A warehouse whose last run predates group_state is
    rebuilt the same way, once."""
    started_at = (now or dt.datetime.now(dt.timezone.utc)).replace(tzinfo=None)
    tables = Tables(spark, config.tables.database, config.tables.location)
    open_catalog(tables, config)
    run_id = new_run_id(started_at)
    # Nothing is written (not even a rollback) before the warehouse is this run's alone.
    with RunClaim(tables, run_id, "jobs.nightly", config.run.lock_stale_hours) as claim:
        if claim.took_over:
            log(claim.took_over)
        ctx = _run_claimed(tables, config, run_id, started_at, stages, stop_after, rebuild, claim.version_before)
        if claim.took_over:
            ctx.extra["run claim"] = claim.took_over
        return ctx


def open_catalog(tables: Tables, config: Config) -> None:
    """The first catalog call; a metastore held by another process is said so in one line."""
    try:
        tables.ensure_database()
    except Exception as error:  # noqa: BLE001 - only Hive's failure to open the metastore is translated
        explained = explain_metastore_failure(error, config.spark)
        if explained is None:
            raise
        raise explained from error


def _run_claimed(
    tables: Tables,
    config: Config,
    run_id: str,
    started_at: dt.datetime,
    stages: Sequence[Stage],
    stop_after: str | None,
    rebuild: bool,
    claims_version_before: int | None,
) -> RunContext:
    spark = tables.spark
    # group_state, and a group_metadata of an older layout, are checked against their contracts after the
    # rollback below (see there).
    old_group_metadata = group_metadata_lacks_members(tables)
    # The rollback comes before the other tables are ensured: ensuring a table of an older layout adds its new
    # columns (a schema change, a commit of its own), which the rollback would take for a dead run's write
    # and undo again.
    tables.ensure(INGEST_RUNS)
    committed = last_committed(tables)
    restored = recover(tables, committed, stages)
    tables.ensure_all([spec for spec in ALL_TABLES
                       if spec is not GROUP_STATE and not (old_group_metadata and spec is GROUP_METADATA)])
    if restored:
        log(f"previous run did not finish; rolled back {', '.join(restored)} to run {committed.run_id}")
        # A restored table holds what the committed run left, at a new version. The gold stages read what
        # is new since the committed versions as a change feed; read across the dead run's writes and the
        # RESTORE that undid them, that feed would give the dead run's rows as inserted and deleted and the
        # restored files as inserted again. The restore's version is the table's new baseline.
        by_name = {spec.name: spec for spec in ALL_TABLES}
        committed = replace(committed, table_versions={
            **committed.table_versions, **{name: tables.version(by_name[name]) for name in restored}})
    if old_group_metadata:
        with step("group_metadata written before it kept members: decode the archived GroupMetadata once"):
            filled = add_group_metadata_members(tables, config.decode.arrow_batch_size)
        tables.ensure(GROUP_METADATA)
        log(f"group_metadata upgraded: {filled} rows have their members")
        # Every row before the upgrade was read by the committed run: the history goes on from after it.
        committed = replace(committed, table_versions={
            **committed.table_versions, GROUP_METADATA.name: tables.version(GROUP_METADATA)})
    if tables.exists(GROUP_STATE) and not tables.columns_match(GROUP_STATE):
        # The carried states' layout changed (a newer version of the project): they cannot be read on. The
        # replacement is a write of this run, undone with it if it dies (then the next run does it again).
        log("group_state was written by a version of the project with other columns: it is replaced, and the gold "
            "tables rebuilt from the archive once")
        tables.replace_empty(GROUP_STATE)
        rebuild = True
    tables.ensure(GROUP_STATE)
    ctx = RunContext(tables, config, run_id, started_at, committed, claims_version_before=claims_version_before)
    if committed.run_id is not None and GROUP_STATE.name not in committed.table_versions:
        log("the gold tables were written before they carried state: rebuilding them from the archive once")
        for spec in INCREMENTAL_INPUTS:
            tables.ensure_change_feed(spec)
        rebuild = True
    if rebuild:
        log("rebuild: group_state and the gold tables are emptied and recomputed from the whole archive")
        for spec in (*GOLD_TABLES, GROUP_STATE):
            tables.delete_where(spec, "true")
        ctx.rebuild = True
        ctx.extra["rebuild"] = "every gold table recomputed from the archive from an empty group_state"
    log(f"run {ctx.run_id}: stages {', '.join(s.name for s in stages)}")
    try:
        for stage in stages:
            log(f"stage {stage.name}: started")
            t0 = time.monotonic()
            with watching(spark.sparkContext, f"stage {stage.name}"):
                stage.run(ctx)
            ctx.stage_seconds[stage.name] = round(time.monotonic() - t0, 3)
            log(f"stage {stage.name}: done in {ctx.stage_seconds[stage.name]:.1f}s{_stage_records(ctx, stage.name)}")
            if stop_after == stage.name:
                raise StoppedAfterStage(stage.name)
    finally:
        # Frames shared between stages are cached for the run only: a long-lived session (a scheduler's
        # driver, the tests) runs many nights and would otherwise keep every night's caches.
        for frame in ctx.extra_frames.values():
            frame.unpersist()
        ctx.extra_frames.clear()
    table_versions = {spec.name: tables.version(spec) for spec in ALL_TABLES if spec is not INGEST_RUNS}
    finished_at = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    decoded = ctx.decode.raw_version_decoded if ctx.decode else committed.raw_version_decoded
    transactions = ctx.decode.transactions if ctx.decode else committed.transactions
    state = CommittedState(ctx.run_id, decoded, table_versions, transactions)
    row = _ingest_runs_row(ctx, finished_at, state)
    tables.append(INGEST_RUNS, spark.createDataFrame([row], INGEST_RUNS.schema), commit_note=commit_note(state))
    ctx.finished_at = finished_at
    return ctx


def _stage_records(ctx: RunContext, stage: str) -> str:
    """What a stage went through and at what rate, for its `done` line (stages that count records)."""
    seconds = max(ctx.stage_seconds.get(stage, 0.0), 0.001)
    if stage == "ingest" and ctx.ingest is not None:
        count, what = ctx.ingest.records_read, "records read"
    elif stage == "decode" and ctx.decode is not None:
        count, what = ctx.decode.records_decoded, "records decoded"
    elif stage == "logs" and ctx.logs is not None:
        count, what = ctx.logs.lines_read, "log lines read"
    else:
        return ""
    return f", {count} {what} ({count / seconds:.0f}/s)"


#: Decode statuses that are not errors (every other status is a record sent to decode_errors); transaction
#: markers (`control`) are no records to decode, as in the decode stage's own count.
_DECODED_STATUSES = ("decoded", "tombstone", "control")


def _segment_cluster(path: str, config: Config) -> str:
    """The cluster a segment file belongs to, from the configured segment sources (`cluster = "*"`: the first
    directory below the source's path), for segment errors, which name a file only."""
    for source in config.sources.segments:
        root = source.path.rstrip("/") + "/"
        local = path.split("://", 1)[-1]
        for candidate in (path, local, local.removeprefix("file:")):
            if candidate.startswith(root):
                return source.cluster if source.cluster != "*" else candidate[len(root):].split("/", 1)[0]
    return "?"


def cluster_summaries(ctx: RunContext) -> dict[str, dict[str, Any]]:
    """This run's counts per cluster: what it archived, decoded and read, and what went wrong where."""
    clusters: dict[str, dict[str, Any]] = {}

    def of(cluster: str) -> dict[str, Any]:
        return clusters.setdefault(cluster, {
            "partitions_read": 0, "records_read": 0, "records_archived": 0, "segment_errors": 0,
            "history_gaps": 0, "missing_offsets": 0, "records_decoded": 0, "decode_errors": 0,
            "log_files": 0, "log_lines": 0, "log_events": 0, "log_entries_unparsed": 0, "log_lines_malformed": 0,
            "log_lines_overlong": 0, "log_lines_invalid_utf8": 0, "log_files_not_read": 0,
            "generations_written": 0, "generations_withdrawn": 0,
        })

    if ctx.ingest is not None:
        for p in ctx.ingest.partitions:
            c = of(p["cluster"])
            c["partitions_read"] += 1
            c["records_read"] += int(p["records_read"])
            c["records_archived"] += int(p["records_archived"])
        for e in ctx.ingest.segment_errors:
            of(_segment_cluster(str(e["file"]), ctx.config))["segment_errors"] += 1
        for g in ctx.ingest.history_gaps:
            c = of(g["cluster"])
            c["history_gaps"] += 1
            c["missing_offsets"] += int(g["missing_offsets"])
    if ctx.decode is not None:
        for cluster, _type, _kind, _version, status, count in ctx.decode.coverage:
            c = of(cluster)
            c["records_decoded"] += int(count) if status != "control" else 0
            c["decode_errors"] += int(count) if status not in _DECODED_STATUSES else 0
    if ctx.logs is not None:
        for f in ctx.logs.files:
            c = of(f["cluster"])
            c["log_files"] += 1
            c["log_lines"] += int(f["lines"])
            c["log_events"] += int(f["events"])
            c["log_entries_unparsed"] += int(f["unparsed"])
            c["log_lines_malformed"] += int(f["malformed_lines"])
            c["log_lines_overlong"] += int(f["overlong_lines"])
            c["log_lines_invalid_utf8"] += int(f["invalid_utf8_lines"])
            c["log_files_not_read"] += int(f["status"] in ("unreadable", "waiting") or bool(f["read_error"]))
    for cluster, counts in ctx.generations_by_cluster.items():
        c = of(cluster)
        c["generations_written"] += counts["written"]
        c["generations_withdrawn"] += counts["withdrawn"]
    return dict(sorted(clusters.items()))


def format_summary(ctx: RunContext, verbose: bool = False, storms: Sequence[dict[str, Any]] = ()) -> str:
    """The human-readable end-of-run report: per stage one line per cluster; with `verbose` also per
    partition, per record kind and per log file. Segment errors and history gaps are always listed (each
    is data lost or skipped). `storms`: those this run wrote or amended (`storms_of_run`)."""
    lines = [f"run {ctx.run_id} committed"]
    ingest, decode, logs = ctx.ingest, ctx.decode, ctx.logs
    clusters = cluster_summaries(ctx)
    if ingest is not None:
        lines.append(
            f"ingest ({ingest.source_mode}): {ingest.records_read} records read, "
            f"{ingest.records_archived} newly archived"
        )
        for name, c in clusters.items():
            if c["partitions_read"] or c["segment_errors"] or c["history_gaps"]:
                lines.append(f"  {name:<20} {c['partitions_read']:>4} partitions {c['records_read']:>10} read "
                             f"{c['records_archived']:>10} archived, {c['segment_errors']} segment errors, "
                             f"{c['history_gaps']} history gaps")
        if verbose and ingest.partitions:
            lines.append("  cluster              partition       read   archived  offsets")
            for p in ingest.partitions:
                lines.append(
                    f"  {p['cluster']:<20} {p['partition']:>9} {p['records_read']:>10} "
                    f"{p['records_archived']:>10}  {p['first_offset']}..{p['last_offset']}"
                )
        for e in ingest.segment_errors:
            lines.append(f"  corrupt segment data skipped: {e['file']} @ byte {e['position']}: {e['error']}")
        for g in ingest.history_gaps:
            lines.append(
                f"  HISTORY GAP {g['cluster']}/{g['partition']}: archived up to {g['last_archived_offset']}, "
                f"earliest available {g['earliest_available_offset']} ({g['missing_offsets']} offsets lost)"
            )
    if decode is not None:
        lines.append(
            f"decode: {decode.records_decoded} records decoded (raw_offsets through version "
            f"{decode.raw_version_decoded}), {decode.decode_errors} to decode_errors"
        )
        for name, c in clusters.items():
            if c["records_decoded"] or c["decode_errors"]:
                lines.append(f"  {name:<20} {c['records_decoded']:>10} decoded {c['decode_errors']:>6} decode errors")
        if verbose and decode.coverage:
            lines.append("  cluster              type  kind                                        version  "
                         "status          records")
            for cluster, rtype, kind, version, status, count in sorted(
                decode.coverage, key=lambda r: (r[0], r[1] if r[1] is not None else -1, r[2] or "",
                                                r[3] if r[3] is not None else -1, r[4])
            ):
                lines.append(
                    f"  {cluster:<20} {'' if rtype is None else rtype:>4}  {kind or '':<43} "
                    f"{'' if version is None else version:>7}  {status:<14} {count:>8}"
                )
    if logs is not None:
        if verbose:
            lines.append(logs.format())  # its first line starts with "logs: "
        else:
            lines.append(logs.format().splitlines()[0])
            for name, c in clusters.items():
                if not c["log_files"]:
                    continue
                damaged = c["log_lines_malformed"] + c["log_lines_overlong"] + c["log_lines_invalid_utf8"]
                lines.append(f"  {name:<20} {c['log_files']:>4} files {c['log_lines']:>10} lines "
                             f"{c['log_events']:>8} events, {c['log_entries_unparsed']} unparsed, "
                             f"{damaged} damaged lines, {c['log_files_not_read']} files not read to their end")
            for path, error in logs.read_errors:
                lines.append(f"  read stopped: {path}: {error}")
    for key, value in ctx.extra.items():
        lines.append(f"{key}: {value}")
        if key != "history":
            continue
        for name, c in clusters.items():
            if c["generations_written"] or c["generations_withdrawn"]:
                lines.append(f"  {name:<20} {c['generations_written']:>6} generation rows written or amended, "
                             f"{c['generations_withdrawn']} withdrawn")
    if storms:
        lines.append(f"storms written or amended by this run: {len(storms)}")
        for storm in storms:
            lines.append(f"  {storm['cluster']:<20} {storm['group_id']}: {storm['rebalances']} rebalances from "
                         f"{storm['window_start']}, severity {storm['severity']:.0f}, "
                         f"{storm['dominant_cause']}")
    lines.append("time per stage: " + ", ".join(f"{k} {v:.1f}s" for k, v in ctx.stage_seconds.items()))
    lines.append(f"tables: database `{ctx.tables.database}` at {ctx.tables.location}")
    lines.append(f"query them: scripts/spark-sql -e \"SELECT * FROM {ctx.tables.database}.ingest_runs\"")
    return "\n".join(lines)


# -- outputs for schedulers and dashboards --------------------------------------------------------------------

#: `--fail-on-storm-severity N`: the run committed, and wrote or amended a storm of severity N or more.
#: (2 is a configuration error, 3 a run stopped by --stop-after, 75 a warehouse held by another run.)
EXIT_STORMS_FOUND = 4


def storms_of_run(ctx: RunContext) -> list[dict[str, Any]]:
    """The storms this run wrote or amended: rows of rebalance_storms that the last committed run did not
    leave as they are now (every storm after a rebuild). Most severe first."""
    columns = ("cluster", "group_id", "window_start", "window_end", "rebalances", "severity", "dominant_cause",
               "lockstep_groups")
    now = ctx.tables.read(REBALANCE_STORMS).select(*columns)
    before_version = ctx.committed.table_versions.get(REBALANCE_STORMS.name)
    if not ctx.rebuild and before_version is not None:
        now = now.subtract(ctx.tables.read(REBALANCE_STORMS, version=before_version).select(*columns))
    rows = [r.asDict() for r in now.collect()]
    for row in rows:
        for key in ("window_start", "window_end"):
            row[key] = _iso(row[key])
        row["severity"] = float(row["severity"] or 0.0)
    return sorted(rows, key=lambda r: (-r["severity"], r["cluster"], r["group_id"], r["window_start"] or ""))


def _iso(at: dt.datetime | None) -> str | None:
    """A UTC timestamp (the session's zone, naive) as ISO 8601 with its zone."""
    return None if at is None else at.replace(tzinfo=dt.timezone.utc).isoformat().replace("+00:00", "Z")


def summary_json(ctx: RunContext | None, status: str, exit_status: int, *, run_id: str | None = None,
                 error: str | None = None, storms: Sequence[dict[str, Any]] = (),
                 fail_on_storm_severity: float | None = None) -> dict[str, Any]:
    """The run summary for `--summary-json` (fields in README, "Outputs for schedulers").

    `status`: committed, failed, warehouse_claimed or stopped; `exit_status` the process's. Without a context
    (the run never started) only the run-level fields are set.
    """
    doc: dict[str, Any] = {
        "format": "consumer_group_history.run_summary/1",
        "run_id": ctx.run_id if ctx else run_id,
        "status": status,
        "exit_status": exit_status,
        "error": error,
        "started_at": _iso(ctx.started_at) if ctx else None,
        "finished_at": _iso(ctx.finished_at) if ctx else None,
        "rebuild": bool(ctx.rebuild) if ctx else False,
        "stages": {},
        "clusters": {},
        "storms": list(storms),
        "fail_on_storm_severity": fail_on_storm_severity,
        "storms_at_or_above_threshold": (sum(1 for s in storms if s["severity"] >= fail_on_storm_severity)
                                         if fail_on_storm_severity is not None else None),
        "tables": {"database": ctx.tables.database, "location": ctx.tables.location} if ctx else None,
        "report": ctx.extra.get("report") if ctx else None,
    }
    if ctx is None:
        return doc
    stages: dict[str, dict[str, Any]] = {name: {"seconds": seconds} for name, seconds in ctx.stage_seconds.items()}
    if ctx.ingest is not None and "ingest" in stages:
        stages["ingest"].update(records_read=ctx.ingest.records_read, records_archived=ctx.ingest.records_archived,
                                segment_errors=len(ctx.ingest.segment_errors),
                                history_gaps=len(ctx.ingest.history_gaps))
    if ctx.decode is not None and "decode" in stages:
        stages["decode"].update(records_decoded=ctx.decode.records_decoded, decode_errors=ctx.decode.decode_errors,
                                raw_version_decoded=ctx.decode.raw_version_decoded)
    if ctx.logs is not None and "logs" in stages:
        stages["logs"].update(files=len(ctx.logs.files), lines_read=ctx.logs.lines_read,
                              entries_archived=ctx.logs.entries_archived, events=ctx.logs.events,
                              unparsed=ctx.logs.unparsed, read_errors=len(ctx.logs.read_errors))
    for name in ("history", "storms", "maintenance"):
        if name in stages and name in ctx.extra:
            stages[name]["summary"] = ctx.extra[name]
    if "storms" in stages:
        stages["storms"].update(storms_written_or_amended=len(storms))
    doc["stages"] = stages
    clusters = cluster_summaries(ctx)
    for storm in storms:
        c = clusters.setdefault(storm["cluster"], {})
        c["storms_found"] = c.get("storms_found", 0) + 1
        c["storm_max_severity"] = max(c.get("storm_max_severity", 0.0), storm["severity"])
    for c in clusters.values():
        c.setdefault("storms_found", 0)
        c.setdefault("storm_max_severity", None)
    doc["clusters"] = clusters
    return doc


def write_atomically(path: str | os.PathLike[str], text: str) -> None:
    """Write a file that readers (a scheduler, node_exporter) never see half-written: a temporary file in the
    same directory, flushed to disk, then renamed over the target (a rename is atomic within a filesystem)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide the file from a collector running as another user
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class Metric:
    """One metric family of the textfile: name, help, and (labels, value) samples."""

    name: str
    help: str
    samples: list[tuple[dict[str, str], float]]


def _label_value(value: str) -> str:
    """A label value escaped as the exposition format asks: backslash, double quote and line feed."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _sample_value(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return str(int(value)) if float(value).is_integer() and abs(value) < 2**53 else repr(float(value))


def format_metrics(metrics: Sequence[Metric]) -> str:
    """Prometheus text exposition format (version 0.0.4): HELP and TYPE (all gauges) before each family."""
    lines = []
    for metric in metrics:
        lines.append(f"# HELP {metric.name} {metric.help.replace(chr(92), chr(92) * 2).replace(chr(10), ' ')}")
        lines.append(f"# TYPE {metric.name} gauge")
        for labels, value in metric.samples:
            rendered = ",".join(f'{k}="{_label_value(v)}"' for k, v in labels.items())
            lines.append(f"{metric.name}{{{rendered}}} {_sample_value(value)}" if rendered
                         else f"{metric.name} {_sample_value(value)}")
    return "\n".join(lines) + "\n"


def warehouse_metrics(tables: Tables, ctx: RunContext) -> list[Metric]:
    """The warehouse's state after the run, for dashboards: totals over the whole history (not this run's
    additions), so every gauge is right after any run, one with nothing new included. The gold tables are
    small; raw_offsets is counted per cluster (its partition column)."""
    gens = (tables.read(GROUP_GENERATIONS).where(F.col("outcome").isin("stable", "empty", "never_completed"))
            .groupBy("cluster", "group_id")
            .agg(F.count(F.lit(1)).alias("n"),
                 F.max(F.coalesce("rebalance_started_at", "assignment_stored_at")).alias("last")).collect())
    storms = (tables.read(REBALANCE_STORMS).groupBy("cluster", "group_id")
              .agg(F.count(F.lit(1)).alias("n"), F.max("severity").alias("severity")).collect())
    archived = {r["cluster"]: int(r["count"]) for r in tables.read(RAW_OFFSETS).groupBy("cluster").count().collect()}
    errors = {r["cluster"]: int(r["count"]) for r in tables.read(DECODE_ERRORS).groupBy("cluster").count().collect()}
    gaps = {r["cluster"]: (int(r["n"]), int(r["missing"] or 0)) for r in tables.read(HISTORY_GAPS).groupBy("cluster")
            .agg(F.count(F.lit(1)).alias("n"), F.sum("missing_offsets").alias("missing")).collect()}
    group_keys = sorted({(r["cluster"], r["group_id"]) for r in gens} | {(r["cluster"], r["group_id"]) for r in storms})
    by_gen = {(r["cluster"], r["group_id"]): r for r in gens}
    by_storm = {(r["cluster"], r["group_id"]): r for r in storms}
    clusters = sorted(set(archived) | set(errors) | set(gaps) | {c for c, _ in group_keys})

    def per_group(value: Callable[[tuple[str, str]], float | None]) -> list[tuple[dict[str, str], float]]:
        samples = [({"cluster": c, "group": g}, value((c, g))) for c, g in group_keys]
        return [(labels, v) for labels, v in samples if v is not None]

    def per_cluster(values: dict[str, float]) -> list[tuple[dict[str, str], float]]:
        return [({"cluster": c}, values.get(c, 0)) for c in clusters]

    def epoch(at: dt.datetime | None) -> float | None:
        return None if at is None else at.replace(tzinfo=dt.timezone.utc).timestamp()

    finished = epoch(ctx.finished_at) or 0.0
    return [
        Metric("cgh_last_successful_run_timestamp_seconds",
               "When the last successful nightly run committed (Unix time); alert on time() minus this.",
               [({}, finished)]),
        Metric("cgh_last_run_duration_seconds", "Wall time of the last successful nightly run's stages.",
               [({}, round(sum(ctx.stage_seconds.values()), 3))]),
        Metric("cgh_group_rebalances", "Rebalances (generations stable, empty or never completed) recorded for the "
               "group over the archived history; a total that only grows, use increase()/delta().",
               per_group(lambda k: by_gen[k]["n"] if k in by_gen else 0)),
        Metric("cgh_group_last_rebalance_timestamp_seconds", "When the group's latest recorded rebalance started "
               "(Unix time).", per_group(lambda k: epoch(by_gen[k]["last"]) if k in by_gen else None)),
        Metric("cgh_group_storms", "Rebalance storms recorded for the group (table rebalance_storms).",
               per_group(lambda k: by_storm[k]["n"] if k in by_storm else 0)),
        Metric("cgh_group_storm_max_severity", "Highest severity (0-100) of the group's storms; 0 without storms.",
               per_group(lambda k: float(by_storm[k]["severity"] or 0) if k in by_storm else 0.0)),
        Metric("cgh_records_archived", "__consumer_offsets records archived in raw_offsets (whole history).",
               per_cluster(archived)),
        Metric("cgh_decode_errors", "Archived records that could not be decoded (table decode_errors).",
               per_cluster(errors)),
        Metric("cgh_history_gaps", "Places where records were removed before they were archived (history_gaps).",
               per_cluster({c: n for c, (n, _) in gaps.items()})),
        Metric("cgh_history_gap_missing_offsets", "Offsets never archived, summed over the history gaps.",
               per_cluster({c: m for c, (_, m) in gaps.items()})),
    ]


def _severity(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"a storm severity is 0-100, found {text}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="jobs.nightly", description="Archive, decode and publish.",
        epilog=f"Exit status: 0 committed; 2 configuration error (nothing ran); 3 stopped by --stop-after; "
               f"{EXIT_STORMS_FOUND} committed, and storms at or above --fail-on-storm-severity were found; "
               f"{EXIT_WAREHOUSE_CLAIMED} warehouse held by another run (try again later); 1 any other failure.")
    parser.add_argument("--conf", default=None, help="TOML configuration (default: conf/local.toml)")
    parser.add_argument(
        "--stop-after", default=None, help="stop (as if killed) after this stage, for crash drills"
    )
    parser.add_argument(
        "--rebuild", action="store_true",
        help="recompute every gold table from the whole archive from an empty state (after a logic change)",
    )
    parser.add_argument("--verbose", action="store_true",
                        help="summary per partition, record kind and log file too (default: per cluster)")
    parser.add_argument("--summary-json", metavar="PATH", default=None,
                        help="write the run summary as JSON here (atomically), also when the run fails")
    parser.add_argument(
        "--fail-on-storm-severity", metavar="N", type=_severity, default=None,
        help=f"exit with status {EXIT_STORMS_FOUND} (after committing) when this run wrote or amended a storm of "
             "severity N (0-100) or more: a new storm, or one that grew with this night's data, alerts once, "
             "while storms already reported do not fail every later night (chart cgh_group_storm_max_severity "
             "for the standing state)")
    parser.add_argument("--metrics-file", metavar="PATH", default=None,
                        help="write metrics for node_exporter's textfile collector here (a .prom file; default: "
                             "[metrics] textfile), after every committed run")
    parser.add_argument("--debug", action="store_true", help="on a configuration error, print the traceback too")
    args = parser.parse_args(list(argv) if argv is not None else None)
    if args.metrics_file and not args.metrics_file.endswith(".prom"):
        parser.error(f"--metrics-file must name a .prom file (the textfile collector reads no other), "
                     f"found {args.metrics_file}")
    config = load_job_config(args.conf, debug=args.debug)
    metrics_path = args.metrics_file or config.metrics.textfile or None
    threshold = args.fail_on_storm_severity

    def summary(ctx: RunContext | None, status: str, exit_status: int, **kwargs: Any) -> int:
        if args.summary_json:
            doc = summary_json(ctx, status, exit_status, fail_on_storm_severity=threshold, **kwargs)
            write_atomically(args.summary_json, json.dumps(doc, indent=2, sort_keys=False) + "\n")
        return exit_status

    refused = metastore_refusal(config.spark)
    if refused:
        print(f"error: {refused}", file=sys.stderr)
        return summary(None, "warehouse_claimed", EXIT_WAREHOUSE_CLAIMED, error=refused)
    spark = build_session(config)
    try:
        ctx = run_nightly(spark, config, stop_after=args.stop_after, rebuild=args.rebuild)
        storms = storms_of_run(ctx)
        print(format_summary(ctx, verbose=args.verbose, storms=storms), flush=True)
        exit_status = 0
        errors = []
        if metrics_path:
            try:
                write_atomically(metrics_path, format_metrics(warehouse_metrics(ctx.tables, ctx)))
                log(f"metrics: {metrics_path}")
            except OSError as error:
                errors.append(f"metrics not written to {metrics_path}: {error}")
                print(f"error: {errors[-1]}", file=sys.stderr)
                exit_status = 1
        above = [s for s in storms if threshold is not None and s["severity"] >= threshold]
        if above and exit_status == 0:
            log(f"{len(above)} storms of severity {threshold:g} or more written or amended by this run: "
                f"exit status {EXIT_STORMS_FOUND} (the run is committed)")
            exit_status = EXIT_STORMS_FOUND
        return summary(ctx, "committed", exit_status, storms=storms, error="; ".join(errors) or None)
    except StoppedAfterStage as stopped:
        log(f"stopped after stage {stopped} as asked; the next run recovers")
        return summary(None, "stopped", 3, error=f"stopped after stage {stopped}")
    except WarehouseClaimed as claimed:
        if args.debug:
            traceback.print_exc()
        print(f"error: {claimed}", file=sys.stderr)
        return summary(None, "warehouse_claimed", EXIT_WAREHOUSE_CLAIMED, error=str(claimed))
    except Exception as failure:
        summary(None, "failed", 1, error=f"{type(failure).__name__}: {failure}".splitlines()[0][:2000])
        raise
    finally:
        spark.stop()


if __name__ == "__main__":
    raise SystemExit(main())
