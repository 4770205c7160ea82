"""Render the rebalance audit report: one self-contained HTML file (opens from disk, no server).

Plots are Plotly figures with plotly.js embedded once in the page, so the file works offline. The input is
small, already-aggregated data (pandas frames taken from the gold tables, bounded by the number of groups
shown), so this module does no Spark work and can be tested on hand-made frames.

Sections: fleet overview (groups by rebalances, storms on a timeline), one section per stormiest group
(members per generation as a Gantt chart, rebalance durations and partitions moved per rebalance, causes
coloured), and the what-if summary (partitions moved under each assignor, with and without static
membership).
"""

from __future__ import annotations

import datetime as dt
import html
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs

#: One colour per cause class, so a cause looks the same in every plot of the report.
CAUSE_COLOURS = {
    "new_member": "#4C78A8",
    "member_left": "#72B7B2",
    "session_timeout": "#E45756",
    "poll_timeout": "#F58518",
    "not_rejoined_in_time": "#B279A2",
    "subscription_or_metadata_change": "#54A24B",
    "leader_rejoin": "#9D755D",
    "static_member_replaced": "#EECA3B",
    "static_member_fenced": "#FF9DA6",
    "coordinator_failover": "#BAB0AC",
    "group_empty_or_dead": "#79706E",
    "offsets_expired_or_deleted": "#D67195",
    "first_generation": "#C7C7C7",
    "unknown": "#8C8C8C",
}

# Columns each input frame must have (extra columns are ignored).
FLEET_COLUMNS = ("cluster", "group_id", "rebalances", "storms", "total_rebalance_seconds", "dominant_cause")
STORM_COLUMNS = ("cluster", "group_id", "window_start", "window_end", "rebalances", "total_rebalance_seconds",
                 "stalled_seconds", "dominant_cause", "flapping_members", "lockstep_id", "severity")
GENERATION_COLUMNS = ("cluster", "group_id", "generation", "started_at", "ended_at", "duration_seconds", "cause",
                      "cause_inferred", "members", "partitions_moved")
WHATIF_COLUMNS = ("cluster", "group_id", "assignor", "static_membership", "partitions_moved", "paused_partitions")


@dataclass(frozen=True)
class ReportData:
    """The report's inputs. ``generations.members`` holds, per generation, the list of member labels
    (instance id, or client id @ host)."""

    fleet: pd.DataFrame
    storms: pd.DataFrame
    generations: pd.DataFrame
    whatif: pd.DataFrame
    generated_at: dt.datetime
    title: str = "Consumer group rebalance audit"
    source: str = ""

    def __post_init__(self) -> None:
        for name, frame, columns in (("fleet", self.fleet, FLEET_COLUMNS), ("storms", self.storms, STORM_COLUMNS),
                                     ("generations", self.generations, GENERATION_COLUMNS),
                                     ("whatif", self.whatif, WHATIF_COLUMNS)):
            missing = [c for c in columns if c not in frame.columns]
            if missing:
                raise ValueError(f"report input {name!r} lacks columns {missing}")


def _colour_map(causes: Sequence[str]) -> dict[str, str]:
    return {c: CAUSE_COLOURS.get(c, "#8C8C8C") for c in causes}


def _figure_html(fig: go.Figure, div_id: str) -> str:
    fig.update_layout(template="plotly_white", margin={"l": 60, "r": 20, "t": 50, "b": 40}, font={"size": 12})
    return str(pio.to_html(fig, full_html=False, include_plotlyjs=False, div_id=div_id,
                           config={"displaylogo": False, "responsive": True}))


def _labelled(frame: pd.DataFrame, several_clusters: bool) -> pd.DataFrame:
    """Add a "group" column naming the group, with its cluster when the report spans several clusters
    (the same group id in two clusters is two groups)."""
    if frame.empty:
        return frame.assign(group=pd.Series(dtype=str))
    if several_clusters:
        return frame.assign(group=frame["group_id"] + " (" + frame["cluster"] + ")")
    return frame.assign(group=frame["group_id"])


def _several_clusters(data: ReportData) -> bool:
    return int(data.fleet["cluster"].nunique()) > 1 if not data.fleet.empty else False


def _fleet_section(data: ReportData) -> str:
    parts = ['<section id="fleet"><h2>Fleet overview</h2>']
    if data.fleet.empty:
        return parts[0] + "<p>No consumer group rebalanced in the data.</p></section>"
    several = _several_clusters(data)
    top = _labelled(data.fleet, several).sort_values(["rebalances", "group_id"], ascending=[False, True]).head(25)
    causes = sorted(top["dominant_cause"].fillna("unknown").unique())
    fig = px.bar(top.assign(dominant_cause=top["dominant_cause"].fillna("unknown")), x="rebalances", y="group",
                 color="dominant_cause", orientation="h", color_discrete_map=_colour_map(causes),
                 hover_data=["cluster", "storms", "total_rebalance_seconds"],
                 title="Groups by number of rebalances (colour: dominant cause)")
    fig.update_yaxes(autorange="reversed", title=None)
    fig.update_layout(height=max(300, 28 * len(top) + 120), legend_title_text="cause")
    parts.append(_figure_html(fig, "fleet-rebalances"))
    if not data.storms.empty:
        storms = _labelled(data.storms, several).assign(dominant_cause=data.storms["dominant_cause"].fillna("unknown"))
        causes = sorted(storms["dominant_cause"].unique())
        fig = px.timeline(storms, x_start="window_start", x_end="window_end", y="group", color="dominant_cause",
                          color_discrete_map=_colour_map(causes),
                          hover_data=["rebalances", "severity", "stalled_seconds", "lockstep_id"],
                          title="Rebalance storms over time")
        fig.update_yaxes(autorange="reversed", title=None)
        fig.update_layout(height=max(280, 30 * storms["group"].nunique() + 140), legend_title_text="cause")
        parts.append(_figure_html(fig, "fleet-storm-timeline"))
        parts.append(_storm_table(storms))
    else:
        parts.append('<p class="quiet">No rebalance storms: no group rebalanced often enough to cross the '
                     "configured thresholds.</p>")
    parts.append("</section>")
    return "".join(parts)


def _storm_table(storms: pd.DataFrame) -> str:
    rows = []
    for s in storms.sort_values(["severity", "group"], ascending=[False, True]).itertuples():
        flapping = ", ".join(s.flapping_members) if len(s.flapping_members) else "-"
        rows.append(
            "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in (
                s.group, f"{s.window_start:%Y-%m-%d %H:%M:%S}", f"{s.window_end:%H:%M:%S}", s.rebalances,
                f"{s.stalled_seconds:,.0f} s", s.dominant_cause, flapping, s.lockstep_id or "-", f"{s.severity:.0f}"))
            + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("group", "from", "to", "rebalances", "stalled", "dominant cause",
                                              "flapping members", "lock-step wave", "severity"))
    return f'<table id="storm-table"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _group_section(data: ReportData, cluster: str, group_id: str, index: int) -> str:
    gens = data.generations[(data.generations["cluster"] == cluster) & (data.generations["group_id"] == group_id)]
    gens = gens.sort_values("generation")
    anchor = f"group-{index}"
    parts = [f'<section class="group" id="{anchor}"><h2>Group {html.escape(group_id)}'
             f' <span class="cluster">({html.escape(cluster)})</span></h2>']
    if gens.empty:
        return parts[0] + "<p>No generations recorded.</p></section>"
    gens = gens.assign(cause=gens["cause"].fillna("unknown"))
    causes = sorted(gens["cause"].unique())
    # Members per generation: one bar per (member, generation) spanning the generation's lifetime.
    rows = []
    for g in gens.itertuples():
        end = g.ended_at if pd.notna(g.ended_at) else data.generated_at
        for label in g.members:
            rows.append({"member": label, "start": g.started_at, "end": end, "generation": g.generation,
                         "cause": g.cause})
    if rows:
        members = pd.DataFrame(rows)
        fig = px.timeline(members, x_start="start", x_end="end", y="member", color="cause",
                          color_discrete_map=_colour_map(causes), hover_data=["generation"],
                          title="Members per generation (bar colour: cause of the rebalance that started it)")
        fig.update_yaxes(title=None)
        fig.update_layout(height=max(260, 26 * members["member"].nunique() + 140), legend_title_text="cause")
        parts.append(_figure_html(fig, f"{anchor}-gantt"))
    fig = px.bar(gens, x="generation", y="duration_seconds", color="cause", color_discrete_map=_colour_map(causes),
                 hover_data=["started_at", "cause_inferred"], title="Rebalance duration per generation (seconds)")
    fig.update_layout(height=320)
    parts.append(_figure_html(fig, f"{anchor}-durations"))
    fig = px.bar(gens, x="generation", y="partitions_moved", color="cause", color_discrete_map=_colour_map(causes),
                 title="Partitions moved per rebalance")
    fig.update_layout(height=320)
    parts.append(_figure_html(fig, f"{anchor}-movement"))
    parts.append("</section>")
    return "".join(parts)


def _whatif_section(data: ReportData) -> str:
    parts = ['<section id="whatif"><h2>What if another assignor had been used?</h2>']
    if data.whatif.empty:
        return parts[0] + "<p>No group history could be replayed.</p></section>"
    totals = (data.whatif.assign(membership=data.whatif["static_membership"].map(
        {True: "with static membership", False: "as recorded"}))
        .groupby(["assignor", "membership"], as_index=False)[["partitions_moved", "paused_partitions"]].sum())
    fig = px.bar(totals, x="assignor", y="partitions_moved", color="membership", barmode="group",
                 title="Partitions moved over the whole history, per assignor")
    parts.append(_figure_html(fig, "whatif-moved"))
    fig = px.bar(totals, x="assignor", y="paused_partitions", color="membership", barmode="group",
                 title="Partition pauses (eager protocols pause all owned partitions, cooperative only moved ones)")
    parts.append(_figure_html(fig, "whatif-paused"))
    parts.append("</section>")
    return "".join(parts)


_CSS = """
body { font-family: -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; margin: 0; color: #222; }
header { background: #1f2d3d; color: #fff; padding: 18px 32px; }
header h1 { margin: 0 0 4px 0; font-size: 22px; }
header p { margin: 0; opacity: .8; font-size: 13px; }
main { padding: 8px 32px 40px 32px; max-width: 1400px; }
section { margin-top: 28px; }
h2 { border-bottom: 2px solid #e4e7eb; padding-bottom: 6px; font-size: 18px; }
.cluster { color: #888; font-weight: normal; font-size: 14px; }
.kpis { display: flex; gap: 16px; margin: 18px 0; flex-wrap: wrap; }
.kpi { background: #f5f7fa; border-radius: 6px; padding: 12px 18px; min-width: 150px; }
.kpi b { display: block; font-size: 24px; }
table { border-collapse: collapse; font-size: 13px; margin-top: 12px; }
th, td { border-bottom: 1px solid #e4e7eb; padding: 5px 10px; text-align: left; }
th { background: #f5f7fa; }
nav a { margin-right: 12px; font-size: 13px; }
.quiet { color: #2e7d32; }
"""


def render_report(data: ReportData, *, groups_shown: int = 8) -> str:
    """The whole report as one HTML document (plotly.js embedded once)."""
    storms = data.storms
    top_groups: list[tuple[str, str]] = []
    if not storms.empty:
        ranked = storms.sort_values(["severity", "group_id"], ascending=[False, True])
        for row in ranked.itertuples():
            key = (row.cluster, row.group_id)
            if key not in top_groups:
                top_groups.append(key)
    for row in data.fleet.sort_values(["rebalances", "group_id"], ascending=[False, True]).itertuples():
        if len(top_groups) >= groups_shown:
            break
        if (row.cluster, row.group_id) not in top_groups:
            top_groups.append((row.cluster, row.group_id))
    top_groups = top_groups[:groups_shown]
    kpis = [
        ("groups", f"{data.fleet['group_id'].nunique():,}"),
        ("rebalances", f"{int(data.fleet['rebalances'].sum()):,}"),
        ("storms", f"{len(storms):,}"),
        ("time rebalancing", f"{data.fleet['total_rebalance_seconds'].sum() / 60:,.1f} min"),
    ]
    several = _several_clusters(data)
    nav = "".join(f'<a href="#group-{i}">{html.escape(g + (f" ({c})" if several else ""))}</a>'
                  for i, (c, g) in enumerate(top_groups))
    body = [
        f"<header><h1>{html.escape(data.title)}</h1><p>generated {data.generated_at:%Y-%m-%d %H:%M} UTC"
        f"{' from ' + html.escape(data.source) if data.source else ''}</p></header><main>",
        '<div class="kpis">' + "".join(f'<div class="kpi"><b>{v}</b>{k}</div>' for k, v in kpis) + "</div>",
        f"<nav>{nav}</nav>",
        _fleet_section(data),
        *(_group_section(data, c, g, i) for i, (c, g) in enumerate(top_groups)),
        _whatif_section(data),
        "</main>",
    ]
    plotly_js = f'<script type="text/javascript">{get_plotlyjs()}</script>'
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(data.title)}</title>'
            f"<style>{_CSS}</style>{plotly_js}</head><body>{''.join(body)}</body></html>")
