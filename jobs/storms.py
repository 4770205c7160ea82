"""Gold stage: rebalance_storms from group_generations, and the audit report.

Storms are computed per touched group with coordinator_core.storms (thresholds from conf/), then the
lock-step marking runs over every storm of each cluster, because a wave involves groups the run may not
have touched. The report job reads the small gold tables, keeps the groups worth showing, and renders one
self-contained HTML file.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from coordinator_core.storms import StormThresholds
from jobs.common.delta_io import Tables
from jobs.history import GROUP_KEY, per_bucket, replace_groups
from schemas.gold import ASSIGNOR_WHATIF, GROUP_GENERATIONS, REBALANCE_STORMS

#: Generation outcomes that are rebalances (a "created" row is the group's birth, not a rebalance).
REBALANCE_OUTCOMES = ("stable", "empty", "never_completed")


def _ts(value: Any) -> dt.datetime | None:
    if value is None or (not isinstance(value, (list, tuple)) and pd.isna(value)):
        return None
    return pd.Timestamp(value).to_pydatetime()


def _rebalances(pdf: pd.DataFrame) -> list[Any]:
    from coordinator_core.storms import MemberIdentity, Rebalance

    out = []
    previous: dict[str, MemberIdentity] = {}
    for g in pdf.sort_values(["generation", "record_offset"]).itertuples(index=False):
        members = {m["member_id"]: MemberIdentity(m["client_id"], m["client_host"], m["group_instance_id"])
                   for m in (g.members if g.members is not None else [])}
        started = _ts(g.rebalance_started_at) or _ts(g.assignment_stored_at) or _ts(g.stabilized_at)
        if started is None or g.outcome not in REBALANCE_OUTCOMES:
            previous = members or previous
            continue
        duration_ms = 0 if g.rebalance_ms is None or pd.isna(g.rebalance_ms) else int(g.rebalance_ms)
        joined = tuple(members[m] for m in (g.members_joined if g.members_joined is not None else []) if m in members)
        left = tuple(previous[m] for m in (g.members_left if g.members_left is not None else []) if m in previous)
        moved = g.partitions_revoked_then_assigned
        others = tuple(c for c in (g.causes if g.causes is not None else []) if c != g.cause)
        out.append(Rebalance(g.cluster, g.group_id, int(g.generation), started,
                             started + dt.timedelta(milliseconds=duration_ms), g.cause, g.protocol, joined, left,
                             len(moved) if moved is not None else None, other_causes=others))
        previous = members or previous
    return out


def _storm_dict(s: Any) -> dict[str, Any]:
    d = asdict(s)
    d.pop("generations", None)
    d["flapping_members"] = list(d["flapping_members"])
    return d


def storm_rows(generations: DataFrame, thresholds: StormThresholds) -> DataFrame:
    """group_generations rows -> rebalance_storms rows (per group; lock-step not yet marked)."""
    def per_group(pdf: pd.DataFrame) -> list[dict[str, Any]]:
        from coordinator_core.storms import group_storms

        return [_storm_dict(s) for s in group_storms(_rebalances(pdf), thresholds)]

    return per_bucket(generations, REBALANCE_STORMS, per_group)


def lockstep_rows(storms: DataFrame, thresholds: StormThresholds) -> DataFrame:
    """Every storm of each cluster with its lock-step wave and severity recomputed."""
    def per_cluster(pdf: pd.DataFrame) -> pd.DataFrame:
        from coordinator_core.storms import Storm, mark_lockstep

        # Array and map columns arrive as numpy arrays / lists of pairs (never truth-test them).
        existing = [Storm(**{**row, "window_start": _ts(row["window_start"]), "window_end": _ts(row["window_end"]),
                             "flapping_members": tuple(row["flapping_members"]) if row["flapping_members"] is not None
                             else (),
                             "causes": dict(row["causes"]) if row["causes"] is not None else {}})
                    for row in pdf.to_dict("records")]
        return pd.DataFrame([_storm_dict(s) for s in mark_lockstep(existing, thresholds)],
                            columns=REBALANCE_STORMS.column_names)

    return (storms.groupBy("cluster").applyInPandas(per_cluster, schema=REBALANCE_STORMS.schema)
            .select(*REBALANCE_STORMS.column_names))


def run_storms(tables: Tables, groups: DataFrame, thresholds: StormThresholds) -> int:
    """Recompute the touched groups' storms, then the lock-step waves of all storms. Returns the number
    of storms in the table."""
    generations = tables.read(GROUP_GENERATIONS).join(groups, on=GROUP_KEY, how="inner")
    replace_groups(tables, REBALANCE_STORMS, groups, storm_rows(generations, thresholds))
    current = tables.read(REBALANCE_STORMS).persist()
    try:
        marked = lockstep_rows(current, thresholds).persist()
        n = marked.count()
        marked.write.format("delta").mode("overwrite").save(tables.path(REBALANCE_STORMS))
        marked.unpersist()
    finally:
        current.unpersist()
    return n


# ----------------------------------------------------------------------------------------------
# The audit report


def report_frames(tables: Tables, groups_shown: int) -> dict[str, pd.DataFrame]:
    """The report's inputs, each bounded: the fleet summary has one row per group that rebalanced; the
    generations and what-if rows only cover the `groups_shown` stormiest or busiest groups."""
    gens = tables.read(GROUP_GENERATIONS).where(F.col("outcome").isin(*REBALANCE_OUTCOMES))
    storms = tables.read(REBALANCE_STORMS)
    per_group_storms = storms.groupBy(*GROUP_KEY).agg(F.count("*").alias("storms"))
    fleet = (
        gens.groupBy(*GROUP_KEY, "cause").agg(F.count("*").alias("n"), F.sum("rebalance_ms").alias("ms"))
        .groupBy(*GROUP_KEY)
        .agg(F.sum("n").alias("rebalances"), (F.sum("ms") / 1000.0).alias("total_rebalance_seconds"),
             F.max_by("cause", "n").alias("dominant_cause"))
        .join(per_group_storms, on=GROUP_KEY, how="left")
        .fillna({"storms": 0, "total_rebalance_seconds": 0.0})
    )
    fleet_pdf = fleet.toPandas()
    storms_pdf = storms.orderBy(F.desc("severity")).limit(500).toPandas()
    ranked = list(dict.fromkeys(
        [(r.cluster, r.group_id) for r in storms_pdf.itertuples()]
        + [(r.cluster, r.group_id) for r in fleet_pdf.sort_values("rebalances", ascending=False).itertuples()]))
    shown = ranked[:groups_shown]
    spark = tables.spark
    shown_df = spark.createDataFrame(shown or [("", "")], "cluster string, group_id string")
    members_label = F.transform(
        "members", lambda m: F.when(m["group_instance_id"].isNotNull(), F.concat(F.lit("instance "),
                                                                                 m["group_instance_id"]))
        .otherwise(F.concat(F.coalesce(m["client_id"], F.lit("?")), F.lit("@"), F.coalesce(m["client_host"],
                                                                                            F.lit("?")))))
    gens_pdf = (
        gens.join(shown_df, on=GROUP_KEY, how="inner")
        .select(*GROUP_KEY, "generation", F.col("rebalance_started_at").alias("started_at"), "ended_at",
                (F.col("rebalance_ms") / 1000.0).alias("duration_seconds"), "cause", "cause_inferred",
                members_label.alias("members"), F.size("partitions_moved").alias("partitions_moved"))
        .toPandas()
    )
    whatif_pdf = (
        tables.read(ASSIGNOR_WHATIF).join(shown_df, on=GROUP_KEY, how="inner")
        .groupBy(*GROUP_KEY, "assignor", "static_membership")
        .agg(F.sum("partitions_moved").alias("partitions_moved"), F.sum("paused_partitions").alias("paused_partitions"))
        .toPandas()
    )
    return {"fleet": fleet_pdf, "storms": storms_pdf, "generations": gens_pdf, "whatif": whatif_pdf}


def write_report(tables: Tables, out_path: Path, groups_shown: int = 8, source: str = "") -> Path:
    from jobs.common.report_html import ReportData, render_report

    frames = report_frames(tables, groups_shown)
    gens = frames["generations"]
    gens["members"] = gens["members"].map(lambda v: list(v) if v is not None else [])
    storms = frames["storms"]
    storms["flapping_members"] = storms["flapping_members"].map(lambda v: list(v) if v is not None else [])
    data = ReportData(frames["fleet"], storms, gens, frames["whatif"],
                      generated_at=dt.datetime.now(dt.timezone.utc).replace(tzinfo=None), source=source)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(render_report(data, groups_shown=groups_shown), encoding="utf-8")
    return out_path
