"""The nightly pipeline's stages, in order: what each runs, which tables it writes (a run that dies is rolled
back through them), and the `RunContext` they share. jobs.nightly runs them and commits the run.

A later stage plugs in by appending a `Stage` to `STAGES`: a name, the tables it writes, and a function of
the `RunContext`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame

from coordinator_core.storms import StormThresholds
from jobs.common.config import Config
from jobs.common.delta_io import Tables
from jobs.common.group_state import StateWrites
from jobs.common.progress import step
from jobs.cost import run_cost
from jobs.decode.stage import DecodeResult, run_decode
from jobs.history.inputs import RunRange
from jobs.history.stage import run_generations
from jobs.ingest.stage import IngestResult, run_ingest_kafka, run_ingest_segments
from jobs.logs.stage import LogsResult, run_logs
from jobs.maintenance import run_maintenance
from jobs.offset_events.stage import run_offset_events
from jobs.run_commit import CommittedState
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
    REBALANCE_COST,
    REBALANCE_STORMS,
    REPLICA_CONFLICTS,
    TableSpec,
)
from schemas.observability import RUN_CLAIMS
from schemas.state import GROUP_STATE

# Tables the gold stages read as version ranges (change data feed).
INCREMENTAL_INPUTS = (OFFSET_COMMITS, GROUP_METADATA, GROUP_MEMBERS, CONSUMER_GROUP_RECORDS, COORDINATOR_EVENTS)


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
    #: frames shared between stages of one run, let go of when the run ends (by `releases`)
    extra_frames: dict[str, DataFrame] = field(default_factory=dict)
    releases: list[Callable[[], None]] = field(default_factory=list)
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
    #: the names of the stages this run runs, in order
    stages: tuple[str, ...] = ()
    #: the history stage's assignment replay: generations replayed, matched, mismatched (explained or not),
    #: with shared sticky state (jobs.whatif.ReplayResult.counts), for the JSON summary
    replay_counts: dict[str, int] | None = None
    #: group_state columns the history stage computed, handed to the storms stage when it follows, which
    #: writes them with its own: one MERGE of group_state per run (each costs ~1.5 s however small)
    pending_states: StateWrites | None = None

    def release(self) -> None:
        """Let go of what the run's stages kept for each other (a long-lived session, a scheduler's driver
        or the tests, runs many nights and would otherwise keep every night's caches)."""
        for release in self.releases:
            release()
        self.releases.clear()
        self.extra_frames.clear()
        if self.pending_states is not None:  # a run stopped between the history and storms stages
            self.pending_states.release()
            self.pending_states = None

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
            ctx.tables, sources.segments, ctx.run_id, ctx.started_at, ctx.config.decode.arrow_batch_size,
            ctx.committed.archive_epochs,
        )
    elif sources.mode == "kafka":
        ctx.ingest = run_ingest_kafka(ctx.tables, sources.kafka, ctx.run_id, ctx.started_at,
                                      ctx.committed.archive_epochs)
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
    # The three folds' group_state columns (generations, whatif, offsets) are written together: at the end
    # of the stage, or with the storms stage's column when it follows (one MERGE of group_state a run).
    states = StateWrites()
    try:
        generations = run_generations(ctx.tables, ctx.run_id, ctx.run_range(), reopen_hours, states)
        ctx.extra_frames["changed_generations"] = generations.changed
        ctx.releases.append(generations.release)
        # (the changed rows are cached: counting them per cluster costs no read)
        for row in generations.changed.groupBy("cluster", "_deleted").count().collect():
            counts = ctx.generations_by_cluster.setdefault(row["cluster"], {"written": 0, "withdrawn": 0})
            counts["withdrawn" if row["_deleted"] else "written"] += int(row["count"])
        replay = run_replay_and_whatif(ctx.tables, generations.changed, ctx.run_id, since,
                                       reopen_hours=reopen_hours, pending=states)
        with step("offset events: continue each touched group's commits, stalls and tombstones"):
            history = ctx.config.history
            offsets = run_offset_events(ctx.tables, ctx.run_id, since, reopen_hours=reopen_hours,
                                        stall_min_commits=history.stall_min_commits,
                                        stall_min_ms=history.stall_min_ms, pending=states)
    except BaseException:
        states.release()
        raise
    if "storms" in ctx.stages:
        ctx.pending_states = states
    else:
        states.merge(ctx.tables, ctx.run_id)
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
        f"{generations.rows_deleted} withdrawn){late}; what-if of {replay.whatif_groups} groups "
        f"({replay.whatif_rows_written} rows written); offset events of {offsets.groups} groups "
        f"({offsets.rows_written} rows written or amended, {offsets.rows_deleted} withdrawn)"
    )
    # The replays on a line of their own (after the history's per-cluster lines), and in the JSON summary
    ctx.extra["replay"] = replay.replay_summary()
    ctx.replay_counts = replay.counts()


def _storms_stage(ctx: RunContext) -> None:
    pending, ctx.pending_states = ctx.pending_states, None
    try:
        _continue_storms(ctx, pending)
        if pending is not None:
            pending.merge(ctx.tables, ctx.run_id)
    finally:
        if pending is not None:
            pending.release()


def _continue_storms(ctx: RunContext, pending: StateWrites | None) -> None:
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
                        reopen_hours=ctx.config.history.reopen_hours, pending=pending)
    ctx.extra["storms"] = (f"{result.groups} groups' storms continued: {result.storms_written} storms written, "
                           f"{result.storms_deleted} withdrawn")


def _cost_stage(ctx: RunContext) -> None:
    """What each rebalance near the run's changes cost (jobs/cost.py): generation rows the history stage
    changed, or client revoke/assign lines new in this run."""
    changed = ctx.extra_frames.get("changed_generations")
    if changed is None and _nothing_new(ctx):
        ctx.extra["cost"] = "no generation changed and no new client line"
        return
    with step("cost: pauses, paused partition-seconds and records delayed of the rebalances near the changes"):
        result = run_cost(ctx.tables, changed, ctx.run_range(), ctx.rebuild,
                          reopen_hours=ctx.config.history.reopen_hours)
    ctx.extra["cost"] = (f"{result.groups} groups' rebalance costs: {result.rows_written} rows written, "
                         f"{result.rows_withdrawn} withdrawn; {result.paused_partition_hours:.3f} paused "
                         f"partition-hours, ~{result.records_delayed} records delayed in them")


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
    from jobs.report import report_is_current, report_stamp, write_report  # plotly: the report stage only

    path, shown = Path(ctx.config.report.path), ctx.config.report.groups_shown
    stamp = report_stamp(ctx.tables, shown)
    if report_is_current(path, stamp):
        # a night with nothing new for the report's tables: the same report, but for its time
        ctx.extra["report"] = f"{path} (current: its tables have not changed since it was written)"
        return
    path = write_report(ctx.tables, path, shown, source=f"database {ctx.tables.database}", stamp=stamp)
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
    Stage("cost", (REBALANCE_COST,), _cost_stage),
    Stage("maintenance", (), _maintenance_stage),
    Stage("report", (), _report_stage),
)
