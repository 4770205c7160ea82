"""The nightly pipeline: ingest -> decode (-> later stages), incremental, idempotent, crash-safe.

    python -m jobs.nightly [--conf conf/local.toml]
    spark-submit --master yarn --jars <delta + kafka jars> jobs/nightly.py --conf conf/cluster.toml

A run is committed by the single ingest_runs row it writes last, which records the Delta version of
every table after the run's writes. A run that dies half-way leaves no such row; the next run first
restores every derived table to the versions of the last committed run (RESTORE is a metadata
operation), then decodes every raw_offsets row archived since that run: the crashed run's archive
appends are kept (raw_offsets is append-only), its partial derived writes are undone, nothing is lost
and nothing is written twice.

The stages and what they write are in jobs.stages (a later stage plugs in by appending a `Stage` to
`STAGES`); the commit and the recovery in jobs.run_commit; this module runs them and is the command line.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import secrets
import sys
import time
import traceback
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from pyspark.sql import SparkSession

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
from jobs.common.session import build_session, plan_for_input
from jobs.decode.stage import DecodeResult, add_group_metadata_members, group_metadata_lacks_members
from jobs.ingest.segments import source_bytes
from jobs.ingest.stage import IngestResult
from jobs.run_commit import CommittedState, commit_note, last_committed, recover
from jobs.run_outputs import (
    format_metrics,
    format_summary,
    storms_of_run,
    summary_json,
    warehouse_metrics,
    write_atomically,
)
from jobs.stages import INCREMENTAL_INPUTS, STAGES, RunContext, Stage
from schemas import ALL_TABLES, GROUP_METADATA, INGEST_RUNS, RAW_OFFSETS
from schemas.gold import GOLD_TABLES
from schemas.state import GROUP_STATE

#: `--fail-on-storm-severity N`: the run committed, and wrote or amended a storm of severity N or more.
#: (2 is a configuration error, 3 a run stopped by --stop-after, 75 a warehouse held by another run.)
EXIT_STORMS_FOUND = 4


class StoppedAfterStage(RuntimeError):
    """Raised by `run_nightly(stop_after=...)`: a deliberate stop between stages (crash drills, tests)."""


def new_run_id(now: dt.datetime) -> str:
    return f"{now:%Y%m%dT%H%M%S%f}Z-{secrets.token_hex(3)}"


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
    except Exception as error:  # only Hive's failure to open the metastore is translated; the rest is raised again
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
    ctx = RunContext(tables, config, run_id, started_at, committed, claims_version_before=claims_version_before,
                     stages=tuple(s.name for s in stages))
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
    names = {s.name for s in stages}
    log(plan_for_input(spark, config.spark, *_new_input(ctx, with_sources="ingest" in names)))
    try:
        for stage in stages:
            if stage.name == "decode" and "ingest" in names:
                # what the ingest archived is known now: the later stages read that, not the sources
                log(plan_for_input(spark, config.spark, *_new_input(ctx, with_sources=False)))
            log(f"stage {stage.name}: started")
            t0 = time.monotonic()
            with watching(spark.sparkContext, f"stage {stage.name}", every=config.run.progress_seconds):
                stage.run(ctx)
            ctx.stage_seconds[stage.name] = round(time.monotonic() - t0, 3)
            log(f"stage {stage.name}: done in {ctx.stage_seconds[stage.name]:.1f}s{_stage_records(ctx, stage.name)}")
            if stop_after == stage.name:
                raise StoppedAfterStage(stage.name)
    finally:
        ctx.release()
    table_versions = {spec.name: tables.version(spec) for spec in ALL_TABLES if spec is not INGEST_RUNS}
    finished_at = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    decoded = ctx.decode.raw_version_decoded if ctx.decode else committed.raw_version_decoded
    transactions = ctx.decode.transactions if ctx.decode else committed.transactions
    epochs = ctx.ingest.archive_epochs if ctx.ingest and ctx.ingest.archive_epochs else committed.archive_epochs
    state = CommittedState(ctx.run_id, decoded, table_versions, transactions, epochs)
    row = _ingest_runs_row(ctx, finished_at, state)
    tables.append(INGEST_RUNS, spark.createDataFrame([row], INGEST_RUNS.schema), commit_note=commit_note(state))
    ctx.finished_at = finished_at
    return ctx


def _new_input(ctx: RunContext, *, with_sources: bool) -> tuple[int | None, int | None]:
    """What the run reads that is new, to plan its queries by (`plan_for_input`): bytes and rows of the
    archived records not decoded yet (raw_offsets' files added since the committed run's decode), and with
    `with_sources` the bytes of the segment files the ingest reads (None for a live read: its size is not
    known before; their records are not counted before the ingest reads them)."""
    pending, records = ctx.tables.added_since(RAW_OFFSETS, ctx.committed.raw_version_decoded)
    if not with_sources or ctx.config.sources.mode == "none":
        return pending, records
    if ctx.config.sources.mode != "segments":
        return None, records
    return pending + sum(source_bytes(ctx.tables.spark, s.path) for s in ctx.config.sources.segments), records


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
