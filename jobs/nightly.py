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
import secrets
import sys
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
from jobs.history.inputs import RunRange
from jobs.history.stage import run_generations
from jobs.ingest import IngestResult, run_ingest_kafka, run_ingest_segments
from jobs.logs import LogsResult, run_logs
from jobs.maintenance import run_maintenance
from jobs.offset_events import run_offset_events
from jobs.run_outputs import (
    format_metrics,
    format_summary,
    storms_of_run,
    summary_json,
    warehouse_metrics,
    write_atomically,
)
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
    REPLICA_CONFLICTS,
    TableSpec,
)
from schemas.gold import GOLD_TABLES
from schemas.observability import RUN_CLAIMS
from schemas.state import GROUP_STATE

#: `--fail-on-storm-severity N`: the run committed, and wrote or amended a storm of severity N or more.
#: (2 is a configuration error, 3 a run stopped by --stop-after, 75 a warehouse held by another run.)
EXIT_STORMS_FOUND = 4


# Tables never rolled back after a crash: the archive (append-only by contract; whatever a crashed run
# archived is valid and will be decoded by the next run), gaps (keyed by where the archive stopped, so
# recording one twice is impossible), the archive's quarantine of replica conflicts (append-only, keyed by
# the quarantined copy: the next run finds it there and does not record it again) and the commit log itself.
NOT_ROLLED_BACK = {RAW_OFFSETS.name, HISTORY_GAPS.name, REPLICA_CONFLICTS.name, INGEST_RUNS.name}

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
    if generations.events_unattributed:
        late += (f"; {generations.events_unattributed} new member log lines name no group and no group's records or "
                 "lines name their member id yet (kept group-less in coordinator_events; a later run that names the "
                 "member hands them to its group)")
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
    Stage("ingest", (RAW_OFFSETS, HISTORY_GAPS, REPLICA_CONFLICTS), _ingest_stage),
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
