"""The audit report: read the small gold tables, keep the groups worth showing, render one HTML file.

Every frame handed to the renderer is bounded: one row per group that rebalanced (the fleet), the 500
most severe storms, one row per day and cause of what rebalances cost, and the generations and what-if
totals of the groups shown only. Which groups are
shown is decided once (`jobs.common.report_html.shown_groups`) and both the reads here and the page use
that list. A group's dominant cause follows the storms' rule (`coordinator_core.advice.dominant_cause`:
the most frequent failure, else the most frequent cause), so the fleet chart and the storm table name
the same cause for the same rebalances.

What rebalances cost comes from rebalance_cost in two aggregations: per group (joined to the fleet: paused
partition-seconds with their bounds, records delayed, the longest pause; the groups' sections and the
what-if's estimates use it) and per day and cause (the fleet's cost chart). Both count a pause's point figure
where it has one, else its low bound.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from coordinator_core.advice import FAILURE_CAUSES, dominant_cause
from coordinator_core.cost import STATIC_RESTART_KIND
from coordinator_core.storms import REBALANCE_OUTCOMES
from jobs.common.delta_io import Tables
from jobs.common.report_html import ReportData, mean_pause_per_paused_partition, render_report, shown_groups
from schemas.gold import (
    ASSIGNMENT_REPLAY,
    ASSIGNOR_WHATIF,
    GROUP_GENERATIONS,
    REBALANCE_COST,
    REBALANCE_STORMS,
    TableSpec,
)

GROUP_KEY = ("cluster", "group_id")

#: The storm table lists at most this many storms (the most severe); the KPI counts them all.
STORMS_LISTED = 500
#: The replay table lists at most this many groups (shared sticky state and unexplained mismatches first).
REPLAYS_LISTED = 200


def evidence_line(evidence: Any, cause: str | None) -> str | None:
    """The line that says, in the client's or broker's own words, why the rebalance happened: the first
    log line of the cause (a client's "Consumer poll timeout has expired ..." before the broker's
    LeaveGroup), else the first line with a cause, else the reason a record gave (an inferred cause)."""
    items = [e for e in (evidence if evidence is not None else []) if e is not None]
    if not items:
        return None

    def text(e: dict[str, Any]) -> str | None:
        if str(e.get("event_type") or "").startswith("record:"):
            return e.get("reason") or e.get("message")
        return e.get("message") or e.get("reason")

    for wanted in (lambda e: e.get("cause_class") == cause, lambda e: e.get("cause_class") is not None,
                   lambda e: True):
        for e in sorted(items, key=lambda e: (e.get("at") is None, e.get("at") or dt.datetime.min)):
            if wanted(e) and text(e):
                return str(text(e))
    return None


def _member_label(members: Column) -> Column:
    return F.transform(members, lambda m: F.when(m["group_instance_id"].isNotNull(), F.concat(
        F.lit("instance "), m["group_instance_id"])).otherwise(F.concat(
            F.coalesce(m["client_id"], F.lit("?")), F.lit("@"), F.coalesce(m["client_host"], F.lit("?")))))


def _point_else_low(column: str) -> Column:
    """A cost figure: its point where it has one, else its low bound."""
    return F.coalesce(F.col(column), F.col(f"{column}_low"))


def _with_rate() -> Column:
    """A rebalance_cost row with a consumption rate for some paused partition (records delayed say something)."""
    return F.coalesce(F.col("partitions_with_rate"), F.lit(0)) > 0


def cost_per_group(cost: DataFrame) -> DataFrame:
    """rebalance_cost per group, in one aggregation (the fleet's cost columns, `FLEET_COST_COLUMNS`): rows (rebalances
    and static restarts), those that paused partitions, paused partition-seconds (point figures, else low
    bounds) with their bounds (high: null when some row's is unbounded), records delayed (over the rows with a
    rate; null when none has one), the longest group pause (point, else low bound; and the largest high bound)
    and the rows with an inferred end."""
    every = F.count("*")
    return cost.groupBy(*GROUP_KEY).agg(
        every.alias("cost_rows"),
        F.count_if(F.col("protocol_kind") == STATIC_RESTART_KIND).alias("static_restarts"),
        F.count_if(F.col("partitions_paused") > 0).alias("rebalances_paused"),
        F.sum("partitions_paused").alias("partitions_paused"),
        F.sum(_point_else_low("partition_seconds")).alias("paused_partition_seconds"),
        F.sum("partition_seconds_low").alias("paused_partition_seconds_low"),
        F.when(F.count("partition_seconds_high") == every, F.sum("partition_seconds_high"))
        .alias("paused_partition_seconds_high"),
        F.sum(F.when(_with_rate(), _point_else_low("records_delayed"))).alias("records_delayed"),
        F.max(F.coalesce("pause_ms", "pause_low_ms")).alias("longest_pause_ms"),
        F.when(F.count("pause_high_ms") == every, F.max("pause_high_ms")).alias("longest_pause_high_ms"),
        F.count_if(F.col("inferred")).alias("cost_inferred"))


def cost_per_day(cost: DataFrame, generations: DataFrame) -> pd.DataFrame:
    """Per day (UTC, of rebalance_at) and cause (the generation's, from group_generations; "static_restart"
    for a static member's restart), the rebalances that paused partitions: how many, their paused
    partition-hours (point figures, else low bounds), how many count a low bound, and their records delayed
    (null when none has a rate). Aggregated in Spark: one row per day and cause comes back."""
    keys = ("cluster", "group_id", "group_protocol", "generation", "record_offset")
    causes = generations.select(*(F.col(k).alias(f"_g_{k}") for k in keys), F.col("cause").alias("_cause"))
    paused = cost.where((F.col("partitions_paused") > 0) & F.col("rebalance_at").isNotNull())
    joined = paused.join(causes, on=[F.col(k).eqNullSafe(F.col(f"_g_{k}")) for k in keys], how="left")
    cause = (F.when(F.col("protocol_kind") == STATIC_RESTART_KIND, F.lit(STATIC_RESTART_KIND))
             .otherwise(F.coalesce(F.col("_cause"), F.lit("unknown"))))
    frame = (joined.groupBy(F.to_date("rebalance_at").alias("day"), cause.alias("cause")).agg(
        F.count("*").alias("rebalances"),
        (F.sum(_point_else_low("partition_seconds")) / 3600.0).alias("paused_partition_hours"),
        F.count_if(F.col("partition_seconds").isNull()).alias("at_low_bound"),
        F.sum(F.when(_with_rate(), _point_else_low("records_delayed"))).alias("records_delayed"))
        .orderBy("day", "cause").toPandas())
    frame["day"] = pd.to_datetime(frame["day"])
    return frame


def fleet_frame(rebalances: DataFrame, storms: DataFrame, cost: DataFrame) -> pd.DataFrame:
    """One row per group that rebalanced: rebalances, time rebalancing, storms, the assignor it used last
    (its latest generation's protocol), its dominant cause by the storms' rule, and what its rebalances cost
    (`cost_per_group` of rebalance_cost; a group without cost rows: 0, records delayed null).

    One pass: each rebalance gives a row for its cause and one per failure among its causes, each storm a
    row; counted per (group, kind, label), then per group (two aggregations); the cost per group (bounded as
    the fleet is, one row per group) is joined to it."""
    all_causes = F.array_distinct(F.concat(F.array(F.col("cause")), F.coalesce(F.col("causes"), F.array())))
    failures = F.filter(all_causes, lambda c: c.isin(*sorted(FAILURE_CAUSES)))
    labelled = rebalances.select(
        *GROUP_KEY, "rebalance_ms", "protocol", "rebalance_started_at",
        F.explode(F.concat(
            F.array(F.struct(F.lit("cause").alias("kind"), F.coalesce("cause", F.lit("unknown")).alias("label"))),
            F.transform(failures, lambda f: F.struct(F.lit("failure").alias("kind"), f.alias("label"))))).alias("l"))
    # a rebalance's own figures count once: on its cause row
    own = F.col("l.kind") == "cause"
    counted = labelled.groupBy(*GROUP_KEY, F.col("l.kind").alias("kind"), F.col("l.label").alias("label")).agg(
        F.count("*").alias("n"),
        F.sum(F.when(own, F.col("rebalance_ms"))).alias("ms"),
        F.max_by(F.col("protocol"), F.when(own & F.col("protocol").isNotNull(), F.col("rebalance_started_at")))
        .alias("protocol"),
        F.max(F.when(own & F.col("protocol").isNotNull(), F.col("rebalance_started_at"))).alias("protocol_at"))
    storm_rows = storms.groupBy(*GROUP_KEY).agg(F.count("*").alias("n")).select(
        *GROUP_KEY, F.lit("storm").alias("kind"), F.lit(None).cast("string").alias("label"), "n",
        F.lit(None).cast("long").alias("ms"), F.lit(None).cast("string").alias("protocol"),
        F.lit(None).cast("timestamp").alias("protocol_at"))
    kind = F.col("kind")
    fleet = (counted.unionByName(storm_rows).groupBy(*GROUP_KEY).agg(
        F.sum(F.when(kind == "cause", F.col("n")).otherwise(0)).alias("rebalances"),
        (F.coalesce(F.sum("ms"), F.lit(0)) / 1000.0).alias("total_rebalance_seconds"),
        F.max_by("protocol", "protocol_at").alias("assignor"),
        F.map_from_entries(F.collect_list(F.when(kind == "cause", F.struct("label", "n")))).alias("cause_counts"),
        F.map_from_entries(F.collect_list(F.when(kind == "failure", F.struct("label", "n")))).alias("failures"),
        F.sum(F.when(kind == "storm", F.col("n")).otherwise(0)).alias("storms"))
        .where(F.col("rebalances") > 0)
        .toPandas())
    # joined here: a join in Spark cost the fleet's query a shuffle (1.5 s on the samples against 0.7 s apart)
    fleet = fleet.merge(cost_per_group(cost).toPandas(), on=list(GROUP_KEY), how="left")
    counts = ("cost_rows", "static_restarts", "rebalances_paused", "partitions_paused", "cost_inferred")
    fleet = fleet.fillna({c: 0 for c in (*counts, "paused_partition_seconds", "paused_partition_seconds_low")})
    fleet = fleet.astype({c: "int64" for c in counts})
    # a group without cost rows paused nothing that was measured: its high bound is that nothing (0) too
    fleet.loc[fleet["cost_rows"] == 0, "paused_partition_seconds_high"] = 0.0
    fleet["dominant_cause"] = [
        dominant_cause(dict(c or {}), dict(f or {}))
        for c, f in zip(fleet["cause_counts"], fleet["failures"], strict=True)]
    return fleet.drop(columns=["cause_counts", "failures"])


def storms_frame(storms: DataFrame, rebalances: DataFrame) -> pd.DataFrame:
    """The most severe storms, each with its why: the first rebalance of the storm that had its dominant
    cause gives the trigger member, the evidence line and whether the cause was inferred."""
    listed = storms.orderBy(F.desc("severity"), "cluster", "group_id", "window_start").limit(STORMS_LISTED)
    of_storm = (listed.select(*GROUP_KEY, "window_start", "first_generation", "last_generation", "dominant_cause")
                .join(rebalances.select(*GROUP_KEY, "generation", "rebalance_started_at", "cause", "causes",
                                        "cause_inferred", "trigger_member_id", "evidence"),
                      on=list(GROUP_KEY), how="inner")
                .where(F.col("generation").between(F.col("first_generation"), F.col("last_generation"))
                       & ((F.col("cause") == F.col("dominant_cause"))
                          | F.array_contains(F.coalesce("causes", F.array()), F.col("dominant_cause")))))
    first = (of_storm.groupBy(*GROUP_KEY, "window_start")
             .agg(F.min_by(F.struct("cause_inferred", "trigger_member_id", "evidence"),
                           F.struct("rebalance_started_at", "generation")).alias("why")))
    frame = (listed.join(first, on=[*GROUP_KEY, "window_start"], how="left")
             .select(*REBALANCE_STORMS.column_names, F.col("why.cause_inferred").alias("cause_inferred"),
                     F.col("why.trigger_member_id").alias("trigger_member"), F.col("why.evidence").alias("_evidence"))
             .toPandas())
    frame["evidence"] = [evidence_line(plain(e), c) for e, c in zip(frame["_evidence"], frame["dominant_cause"],
                                                                    strict=True)]
    frame["flapping_members"] = frame["flapping_members"].map(lambda v: list(v) if v is not None else [])
    return frame.drop(columns=["_evidence"]).sort_values(
        ["severity", "cluster", "group_id", "window_start"], ascending=[False, True, True, True]).reset_index(drop=True)


def plain(value: Any) -> Any:
    """Spark Rows (structs) and numpy arrays out of toPandas as dicts and lists."""
    if value is None:
        return None
    if hasattr(value, "asDict"):
        return {k: plain(v) for k, v in value.asDict().items()}
    if isinstance(value, (list, tuple)) or hasattr(value, "tolist"):
        return [plain(v) for v in list(value)]
    return value


def report_frames(tables: Tables, groups_shown: int) -> ReportData:
    """The report's inputs, each bounded (see the module docstring), with the one list of groups shown."""
    rebalances = tables.read(GROUP_GENERATIONS).where(F.col("outcome").isin(*sorted(REBALANCE_OUTCOMES)))
    storms = tables.read(REBALANCE_STORMS)
    cost = tables.read(REBALANCE_COST)
    fleet = fleet_frame(rebalances, storms, cost)
    storm_rows = storms_frame(storms, rebalances)
    storms_total = storms.count()
    shown = shown_groups(fleet, storm_rows, groups_shown)
    shown_df = tables.spark.createDataFrame(list(shown) or [("", "")], "cluster string, group_id string")
    gens = (
        rebalances.join(F.broadcast(shown_df), on=list(GROUP_KEY), how="inner")
        .select(*GROUP_KEY, "generation", F.col("rebalance_started_at").alias("started_at"), "ended_at",
                (F.col("rebalance_ms") / 1000.0).alias("duration_seconds"), "cause", "cause_inferred", "inference",
                _member_label("members").alias("members"),
                F.coalesce(F.size("partitions_moved"), F.lit(0)).alias("partitions_moved"),
                F.col("trigger_member_id").alias("trigger_member"), F.col("evidence").alias("_evidence"))
        .toPandas())
    gens["members"] = gens["members"].map(lambda v: list(v) if v is not None else [])
    gens["evidence"] = [evidence_line(plain(e), c) for e, c in zip(gens["_evidence"], gens["cause"], strict=True)]
    gens = gens.drop(columns=["_evidence"])
    whatif_rows = tables.read(ASSIGNOR_WHATIF).join(F.broadcast(shown_df), on=list(GROUP_KEY), how="inner")
    # Static membership absorbs generations: the replay with it has no row for them.
    replayed = whatif_rows.groupBy(*GROUP_KEY).agg(
        F.array_sort(F.array_except(
            F.collect_set(F.when(~F.col("static_membership"), F.col("generation"))),
            F.collect_set(F.when(F.col("static_membership"), F.col("generation"))))).alias("absorbed_generations"))
    whatif = (whatif_rows.groupBy(*GROUP_KEY, "assignor", "static_membership")
              .agg(F.countDistinct("generation").alias("generations"),
                   F.coalesce(F.sum("partitions_moved"), F.lit(0)).alias("partitions_moved"),
                   F.coalesce(F.sum("paused_partitions"), F.lit(0)).alias("paused_partitions"))
              .join(replayed, on=list(GROUP_KEY), how="left")
              .toPandas())
    whatif["absorbed_generations"] = whatif["absorbed_generations"].map(
        lambda v: [int(g) for g in v] if v is not None else [])
    whatif = whatif_estimates(whatif, fleet)
    return ReportData(fleet, storm_rows, gens, whatif,
                      generated_at=dt.datetime.now(dt.timezone.utc).replace(tzinfo=None),
                      shown=shown, storms_total=storms_total, replays=replays_frame(tables.read(ASSIGNMENT_REPLAY)),
                      cost_per_day=cost_per_day(cost, tables.read(GROUP_GENERATIONS)))


def whatif_estimates(whatif: pd.DataFrame, fleet: pd.DataFrame) -> pd.DataFrame:
    """Each what-if row with its estimated paused partition-seconds: the partitions it pauses times the group's
    observed mean pause per paused partition (`mean_pause_per_paused_partition`); null where the group paused
    no partition in rebalance_cost (nothing observed to multiply by)."""
    mean = mean_pause_per_paused_partition(fleet)
    per_row = pd.Series([mean.get((c, g)) for c, g in zip(whatif["cluster"], whatif["group_id"], strict=True)],
                        index=whatif.index, dtype="float64")
    return whatif.assign(paused_partition_seconds_estimate=whatif["paused_partitions"].astype("float64") * per_row)


def replays_frame(replay: DataFrame) -> pd.DataFrame:
    """Per group and leader library, the replays worth a reader's eye: a leader that did not run a Java client,
    an unexplained mismatch, members sharing sticky state (at most REPLAYS_LISTED groups, those first)."""
    generation = F.struct("generation", "record_offset")
    shared = F.array_contains(F.coalesce("findings", F.array().cast("array<string>")), "shared_sticky_state")
    per_group = (replay.groupBy(*GROUP_KEY, "leader_client", "engine").agg(
        F.countDistinct(generation).alias("generations"),
        F.countDistinct(F.when(F.col("status") == "match", generation)).alias("matches"),
        F.countDistinct(F.when(F.col("reason").isin("other_client_library", "other_client_version"),
                               generation)).alias("explained"),
        F.countDistinct(F.when(F.col("reason") == "unexplained", generation)).alias("unexplained"),
        F.array_sort(F.collect_set(F.when(shared, F.col("generation")))).alias("shared_sticky_generations")))
    worth = (~F.coalesce(F.col("leader_client"), F.lit("unknown")).isin("java", "unknown")
             | (F.col("unexplained") > 0) | (F.size("shared_sticky_generations") > 0))
    return (per_group.where(worth)
            .orderBy(F.size("shared_sticky_generations").desc(), F.col("unexplained").desc(), *GROUP_KEY)
            .limit(REPLAYS_LISTED).toPandas())


def write_report(tables: Tables, out_path: Path, groups_shown: int = 8, source: str = "",
                 stamp: str | None = None) -> Path:
    """Write the audit report of the whole warehouse to `out_path` (one self-contained HTML file). `stamp`
    (see `report_stamp`) is kept at its end, so the next run can tell the report is current."""
    data = dataclasses.replace(report_frames(tables, groups_shown), source=source)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    page = render_report(data)
    if stamp is not None:
        page += f"\n{stamp}\n"
    out_path.write_text(page, encoding="utf-8")
    return out_path


#: The tables the report is drawn from (a change to any of them rewrites it).
REPORT_INPUTS = (GROUP_GENERATIONS, REBALANCE_STORMS, ASSIGNOR_WHATIF, ASSIGNMENT_REPLAY, REBALANCE_COST)


def report_stamp(tables: Tables, groups_shown: int) -> str:
    """What a report was drawn from, as an HTML comment: the database and the tables' location, the groups
    shown, and each input table's version with that commit's time. A version number alone names no table: a
    warehouse deleted and rebuilt from the same input (after an upgrade of the project, say), or another
    warehouse written to the same report path, reaches the same versions with other rows, and its report
    must be drawn again."""
    inputs = {"database": tables.database, "location": tables.location, "groups_shown": groups_shown,
              "versions": {spec.name: _version_and_time(tables, spec) for spec in REPORT_INPUTS}}
    return f"<!-- cgh report inputs {json.dumps(inputs, sort_keys=True)} -->"


def _version_and_time(tables: Tables, spec: TableSpec) -> list[int | None]:
    """The table's current version and its commit's timestamp (ms; None when the commit file is gone), read
    from the table's log: no query."""
    version = tables.version(spec)
    actions = tables.commit_actions(spec, version) or []
    committed = next((a["commitInfo"].get("timestamp") for a in actions if "commitInfo" in a), None)
    return [version, committed]


def report_is_current(out_path: Path, stamp: str) -> bool:
    """Whether the report at `out_path` was drawn from what `stamp` names (then writing it again would
    only change its time: a night with nothing new keeps it)."""
    if not out_path.is_file():
        return False
    with open(out_path, "rb") as page:
        page.seek(max(0, out_path.stat().st_size - 4096))
        return stamp.encode() in page.read()

