"""What a nightly run tells the people and programs around it: the console summary (one line per cluster and
stage, details with --verbose), the run summary as JSON (--summary-json) and the state of the warehouse as
Prometheus gauges (--metrics-file / [metrics] textfile, for node_exporter's textfile collector).

Kept apart from jobs.nightly, which runs the stages: these functions only read a finished RunContext (and,
for the metrics, the small gold tables) and write no table.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from jobs.common.config import Config
from jobs.common.delta_io import Tables
from schemas import (
    DECODE_ERRORS,
    GROUP_GENERATIONS,
    HISTORY_GAPS,
    RAW_OFFSETS,
    REBALANCE_COST,
    REBALANCE_STORMS,
)

if TYPE_CHECKING:
    from jobs.stages import RunContext


#: Decode statuses that are not errors (every other status is a record sent to decode_errors); transaction
#: markers (`control`) are no records to decode, as in the decode stage's own count.
#: decode_coverage statuses of records that were read (decoded_trailing_bytes: read as Kafka reads them,
#: bytes after the complete struct ignored); every other status counts as a decode error.
_DECODED_STATUSES = ("decoded", "decoded_trailing_bytes", "tombstone", "control")


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
            "history_gaps": 0, "missing_offsets": 0, "replica_conflicts": 0, "records_decoded": 0, "decode_errors": 0,
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
        for q in ctx.ingest.replica_conflicts:
            of(q["cluster"])["replica_conflicts"] += int(q["records"])
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


def format_summary(  # noqa: C901, PLR0912 - grandfathered: one section per stage, in run order
    ctx: RunContext, verbose: bool = False, storms: Sequence[dict[str, Any]] = (),
) -> str:
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
            if c["partitions_read"] or c["segment_errors"] or c["history_gaps"] or c["replica_conflicts"]:
                lines.append(f"  {name:<20} {c['partitions_read']:>4} partitions {c['records_read']:>10} read "
                             f"{c['records_archived']:>10} archived, {c['segment_errors']} segment errors, "
                             f"{c['history_gaps']} history gaps"
                             + (f", {c['replica_conflicts']} replica conflicts" if c["replica_conflicts"] else ""))
        if verbose and ingest.partitions:
            lines.append("  cluster              partition       read   archived  offsets")
            lines.extend(
                f"  {p['cluster']:<20} {p['partition']:>9} {p['records_read']:>10} "
                f"{p['records_archived']:>10}  {p['first_offset']}..{p['last_offset']}"
                for p in ingest.partitions
            )
        lines.extend(f"  corrupt segment data skipped: {e['file']} @ byte {e['position']}: {e['error']}"
                     for e in ingest.segment_errors)
        lines.extend(f"  REPLICA CONFLICT {q['cluster']}/{q['partition']}: {q['records']} copies quarantined "
                     f"({q['reason']}) in replica_conflicts" for q in ingest.replica_conflicts)
        lines.extend(
            f"  HISTORY GAP {g['cluster']}/{g['partition']}: archived up to {g['last_archived_offset']}, "
            f"earliest available {g['earliest_available_offset']} ({g['missing_offsets']} offsets lost)"
            for g in ingest.history_gaps
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
        lines.extend(f"  {storm['cluster']:<20} {storm['group_id']}: {storm['rebalances']} rebalances from "
                     f"{storm['window_start']}, severity {storm['severity']:.0f}, "
                     f"{storm['dominant_cause']}" for storm in storms)
    lines.append("time per stage: " + ", ".join(f"{k} {v:.1f}s" for k, v in ctx.stage_seconds.items()))
    lines.append(f"tables: database `{ctx.tables.database}` at {ctx.tables.location}")
    lines.append(f"query them: scripts/spark-sql -e \"SELECT * FROM {ctx.tables.database}.ingest_runs\"")
    return "\n".join(lines)


# -- outputs for schedulers and dashboards --------------------------------------------------------------------

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
                                history_gaps=len(ctx.ingest.history_gaps),
                                replica_conflicts=ctx.ingest.replica_conflicts_total)
    if ctx.decode is not None and "decode" in stages:
        stages["decode"].update(records_decoded=ctx.decode.records_decoded, decode_errors=ctx.decode.decode_errors,
                                raw_version_decoded=ctx.decode.raw_version_decoded)
    if ctx.logs is not None and "logs" in stages:
        stages["logs"].update(files=len(ctx.logs.files), lines_read=ctx.logs.lines_read,
                              entries_archived=ctx.logs.entries_archived, events=ctx.logs.events,
                              unparsed=ctx.logs.unparsed, read_errors=len(ctx.logs.read_errors))
    for name in ("history", "storms", "cost", "maintenance", "report"):
        if name in stages and name in ctx.extra:
            stages[name]["summary"] = ctx.extra[name]
    if "history" in stages and ctx.replay_counts is not None:
        stages["history"]["replay"] = ctx.replay_counts
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
    costs = {(r["cluster"], r["group_id"]): r for r in tables.read(REBALANCE_COST).groupBy("cluster", "group_id").agg(
        F.sum(F.coalesce("partition_seconds", "partition_seconds_low")).alias("seconds"),
        F.sum(F.coalesce("records_delayed", F.lit(0))).alias("delayed")).collect()}
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
        Metric("cgh_group_rebalance_paused_partition_seconds", "Partition-seconds the group's rebalances paused "
               "consumption (rebalance_cost: point figures, else their low bounds), over the archived history; "
               "use increase()/delta().",
               per_group(lambda k: round(float(costs[k]["seconds"] or 0.0), 3) if k in costs else 0.0)),
        Metric("cgh_group_records_delayed", "Records the group's rebalances held back (rebalance_cost: consumption "
               "rate x pause, an estimate), over the archived history; use increase()/delta().",
               per_group(lambda k: int(costs[k]["delayed"] or 0) if k in costs else 0)),
        Metric("cgh_records_archived", "__consumer_offsets records archived in raw_offsets (whole history).",
               per_cluster(archived)),
        Metric("cgh_decode_errors", "Archived records that could not be decoded (table decode_errors).",
               per_cluster(errors)),
        Metric("cgh_history_gaps", "Places where records were removed before they were archived (history_gaps).",
               per_cluster({c: n for c, (n, _) in gaps.items()})),
        Metric("cgh_history_gap_missing_offsets", "Offsets never archived, summed over the history gaps.",
               per_cluster({c: m for c, (_, m) in gaps.items()})),
    ]
