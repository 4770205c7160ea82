"""Render the rebalance audit report: one self-contained HTML file (opens from disk, no server).

Plots are Plotly figures with plotly.js embedded once in the page, so the file works offline. The input is
small, already-aggregated data (pandas frames taken from the gold tables, bounded by the number of groups
shown), so this module does no Spark work and can be tested on hand-made frames.

Sections: key figures (each one a chart below shows), the fleet overview (groups by rebalances, what
rebalances cost per day and cause, storms on a timeline, the storm table with the why of each storm:
trigger member, the log line, what to change, and a link to the group's section), one section per group
shown (the why, what its rebalances cost, members per generation as a Gantt chart, durations and partitions
moved, every rebalance with its cause and evidence), and the what-if replay per group (its assignor against
the others, the rebalances static membership would have avoided, and the paused partition-seconds each would
have cost by the group's observed pause). Every time is UTC and says so; a cause has one colour on the whole
page.

Which groups get a section is decided once (`shown_groups`): the job reads the generations of exactly
those groups, and the page draws exactly those sections.

One module (~490 lines) on purpose: it is one page. The sections share the page's cell helpers (escaping,
tables, cause colours and anchors) and its stylesheet, and each is read beside the others it links to; split
by section, those private helpers would become a public API used by nothing else.
"""

from __future__ import annotations

import datetime as dt
import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs

from coordinator_core.advice import advice_for

#: One colour per cause class (every class in coordinator_core.logs.events.CAUSE_CLASSES, plus unknown, the
#: group's creation and a static member's restart without a rebalance, which the cost chart counts), so a cause
#: looks the same in every plot of the report; a test checks the set.
CAUSE_COLOURS = {
    "new_member": "#4C78A8",
    "member_left": "#72B7B2",
    "session_timeout": "#E45756",
    "poll_timeout": "#F58518",
    "not_rejoined_in_time": "#B279A2",
    "metadata_change": "#54A24B",
    "leader_rejoin": "#9D755D",
    "static_member_replaced": "#EECA3B",
    "static_member_fenced": "#FF9DA6",
    "coordinator_failover": "#BAB0AC",
    "coordinator_error": "#6B4C9A",
    "group_empty_or_dead": "#79706E",
    "offsets_expired_or_deleted": "#D67195",
    "rebalance_in_progress": "#A0CBE8",
    "member_evicted": "#B6992D",
    "cooperative_second_round": "#8CD17D",
    "group_over_capacity": "#86BCB6",
    "group_protocol_migration": "#499894",
    "group_created": "#C7C7C7",
    "static_restart": "#D4A6C8",
    "unknown": "#8C8C8C",
}

#: The assignors the what-if replay uses, in the order the report lists them.
WHATIF_ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")

#: How many groups the fleet chart draws (the KPI counts them all; the chart title says how many it shows).
FLEET_CHART_GROUPS = 25

#: What a group's rebalances cost (rebalance_cost per group: `jobs.report.cost_per_group`): its rows
#: (rebalances and static restarts), those that paused partitions, partitions paused, paused partition-seconds
#: (point figures, else low bounds) and their bounds (high: NaN when unbounded), the longest group pause in ms
#: (point, else low bound; its high bound), the rows with an inferred end.
FLEET_COST_COLUMNS = ("cost_rows", "static_restarts", "rebalances_paused", "partitions_paused",
                      "paused_partition_seconds", "paused_partition_seconds_low", "paused_partition_seconds_high",
                      "records_delayed", "longest_pause_ms", "longest_pause_high_ms", "cost_inferred")

# Columns each input frame must have (extra columns are ignored).
FLEET_COLUMNS = ("cluster", "group_id", "rebalances", "storms", "total_rebalance_seconds", "dominant_cause",
                 "assignor", *FLEET_COST_COLUMNS)
STORM_COLUMNS = ("cluster", "group_id", "window_start", "window_end", "rebalances", "total_rebalance_seconds",
                 "stalled_seconds", "dominant_cause", "flapping_members", "lockstep_id", "severity",
                 "trigger_member", "evidence", "cause_inferred")
GENERATION_COLUMNS = ("cluster", "group_id", "generation", "started_at", "ended_at", "duration_seconds", "cause",
                      "cause_inferred", "members", "partitions_moved", "trigger_member", "evidence")
WHATIF_COLUMNS = ("cluster", "group_id", "assignor", "static_membership", "generations", "partitions_moved",
                  "paused_partitions", "absorbed_generations", "paused_partition_seconds_estimate")
#: Per day (UTC) and cause: rebalances that paused partitions, their paused partition-hours (point figures,
#: else low bounds), how many count a low bound, records delayed (NaN: no rate).
COST_DAY_COLUMNS = ("day", "cause", "rebalances", "paused_partition_hours", "at_low_bound", "records_delayed")
REPLAY_COLUMNS = ("cluster", "group_id", "leader_client", "engine", "generations", "matches", "explained",
                  "unexplained", "shared_sticky_generations")

#: What to do when members of a group share their sticky assignor's state.
SHARED_STICKY_ADVICE = ("Upgrade kafka-python to 3.x (aiokafka: run one consumer per process), or run one consumer "
                        "per process: below 3.0 the sticky assignor keeps its state on the class, so every consumer "
                        "of a process sends the same previous assignment and a member new to the group claims "
                        "partitions it never owned.")

#: The words next to a cause no log line explained.
INFERRED = "inferred from the records"

#: What the cost chart's figures are, under it.
COST_NOTE = ("Paused partition-hours: each rebalance's paused partitions' pauses summed (rebalance_cost), the point "
             "figure where client lines, broker lines or records give both ends of every pause, else the low bound "
             "the records and commits allow; static_restart: a static member replaced without a rebalance. "
             "Records delayed (on hover) is an estimate, each partition's consumption rate (committed-offset "
             "progress) times its pause, since log-end offsets are not in __consumer_offsets.")

#: What the what-if's paused partition-seconds are.
WHATIF_COST_NOTE = ("Estimated paused partition-seconds, an estimate (moves × observed pause), not a measurement: "
                    "the partitions each replay pauses times the group's observed mean pause per paused partition "
                    "(its rebalance_cost rows' paused partition-seconds over their partitions paused, point figures "
                    "else low bounds); - where the group paused no partition there.")

GroupKey = tuple[str, str]


def shown_groups(fleet: pd.DataFrame, storms: pd.DataFrame, groups_shown: int) -> tuple[GroupKey, ...]:
    """The groups that get a section, as (cluster, group_id): the stormiest first (by their worst storm's
    severity), then the busiest (by rebalances); ties broken by cluster and group id, so that the job
    (which reads their generations) and the page (which draws them) agree and a run is repeatable."""
    ranked: list[GroupKey] = []
    if not storms.empty:
        worst = (storms.groupby(["cluster", "group_id"], as_index=False)["severity"].max()
                 .sort_values(["severity", "cluster", "group_id"], ascending=[False, True, True]))
        ranked += [(str(r.cluster), str(r.group_id)) for r in worst.itertuples()]
    if not fleet.empty:
        busiest = fleet.sort_values(["rebalances", "cluster", "group_id"], ascending=[False, True, True])
        ranked += [(str(r.cluster), str(r.group_id)) for r in busiest.itertuples()]
    return tuple(dict.fromkeys(ranked))[:groups_shown]


@dataclass(frozen=True)
class ReportData:
    """The report's inputs. ``generations.members`` holds, per generation, the list of member labels
    (instance id, or client id @ host); ``shown`` the groups that get a section (`shown_groups`; computed
    from fleet and storms when not given). ``storms_total`` is how many storms the table holds (the storms
    frame may carry only the most severe)."""

    fleet: pd.DataFrame
    storms: pd.DataFrame
    generations: pd.DataFrame
    whatif: pd.DataFrame
    generated_at: dt.datetime
    title: str = "Consumer group rebalance audit"
    source: str = ""
    shown: tuple[GroupKey, ...] | None = None
    storms_total: int | None = None
    groups_shown: int = field(default=8)
    #: per group and leader library: the replays that are worth a reader's eye (a leader that did not run
    #: Java, an unexplained mismatch, members sharing sticky state); empty when there are none
    replays: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(REPLAY_COLUMNS)))
    #: what rebalances cost per day and cause (`COST_DAY_COLUMNS`); empty when no rebalance paused a partition
    cost_per_day: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(COST_DAY_COLUMNS)))

    def __post_init__(self) -> None:
        for name, frame, columns in (("fleet", self.fleet, FLEET_COLUMNS), ("storms", self.storms, STORM_COLUMNS),
                                     ("generations", self.generations, GENERATION_COLUMNS),
                                     ("whatif", self.whatif, WHATIF_COLUMNS),
                                     ("replays", self.replays, REPLAY_COLUMNS),
                                     ("cost_per_day", self.cost_per_day, COST_DAY_COLUMNS)):
            missing = [c for c in columns if c not in frame.columns]
            if missing:
                raise ValueError(f"report input {name!r} lacks columns {missing}")
        if self.shown is None:
            object.__setattr__(self, "shown", shown_groups(self.fleet, self.storms, self.groups_shown))


# ----------------------------------------------------------------------------------------------
# Small helpers


def colour_map(causes: Sequence[str]) -> dict[str, str]:
    """The page-wide colour of each cause (unknown classes get unknown's grey)."""
    return {c: CAUSE_COLOURS.get(c, CAUSE_COLOURS["unknown"]) for c in causes}


def utc(value: Any, fmt: str = "%Y-%m-%d %H:%M:%S") -> str:
    """A timestamp as text with its zone (the tables hold UTC; a zone-aware value is converted)."""
    if value is None or value is pd.NaT or (isinstance(value, float) and value != value):  # noqa: PLR0124 - NaN, pandas' missing float, is the one value unequal to itself
        return "-"
    stamp = pd.Timestamp(value)
    if stamp.tzinfo is not None:
        stamp = stamp.tz_convert("UTC").tz_localize(None)
    return f"{stamp:{fmt}} UTC"


def _esc(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and value != value)  # noqa: PLR0124 - NaN, pandas' missing float, is the one value unequal to itself


def amount(value: Any) -> str:
    """A figure as a reader takes it in: 0, three decimals below 1, one below 100, else whole (with commas)."""
    if _missing(value):
        return "-"
    number = float(value)
    if number == 0:
        return "0"
    if abs(number) < 1:
        return f"{number:.3f}"
    return f"{number:,.1f}" if abs(number) < 100 else f"{number:,.0f}"


def mean_pause_per_paused_partition(fleet: pd.DataFrame) -> dict[GroupKey, float]:
    """Per group that paused partitions, its observed mean pause per paused partition (seconds): its paused
    partition-seconds (point figures, else low bounds) over its partitions paused."""
    return {(str(r.cluster), str(r.group_id)): float(r.paused_partition_seconds) / int(r.partitions_paused)
            for r in fleet.itertuples() if not _missing(r.partitions_paused) and int(r.partitions_paused) > 0}


#: The figures' plotly template, set as plotly express's default while a report is drawn (`render_report`):
#: a template named per figure afterwards was validated twice per figure (the default's, then this one),
#: half of a report's drawing time.
TEMPLATE = "plotly_white"


def _figure_html(fig: go.Figure, div_id: str) -> str:
    fig.update_layout(margin={"l": 60, "r": 20, "t": 50, "b": 40}, font={"size": 12})
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


def _anchors(data: ReportData) -> dict[GroupKey, str]:
    return {key: f"group-{i}" for i, key in enumerate(data.shown or ())}


def cause_html(cause: Any, inferred: Any) -> str:
    """A cause with its colour swatch, and "inferred from the records" when no log line explained it."""
    name = "unknown" if cause is None or cause != cause else str(cause)  # noqa: PLR0124 - NaN, pandas' missing float, is the one value unequal to itself
    swatch = f'<span class="swatch" style="background:{colour_map([name])[name]}"></span>'
    note = f' <span class="inferred">({INFERRED})</span>' if inferred is True else ""
    return f'<span class="cause-name">{swatch}<span class="cause">{_esc(name)}</span></span>{note}'


def advice_html(cause: Any, *, full: bool) -> str:
    """What to change for a cause: the setting names, and with `full` the sentence that explains them."""
    advice = advice_for(None if cause is None or cause != cause else str(cause))  # noqa: PLR0124 - NaN, pandas' missing float, is the one value unequal to itself
    if advice is None:
        return "-"
    settings = ", ".join(f"<code>{_esc(s)}</code>" for s in advice.settings)
    if full:
        return f'<span class="advice">{_esc(advice.text)}</span>' + (f" Settings: {settings}." if settings else "")
    return settings or f'<span class="advice">{_esc(advice.text.split(". ")[0])}.</span>'


def evidence_html(evidence: Any, limit: int = 480) -> str:
    if evidence is None or evidence != evidence or not str(evidence):  # noqa: PLR0124 - NaN, pandas' missing float, is the one value unequal to itself
        return '<span class="quiet-note">no log line</span>'
    text = str(evidence)
    short = text if len(text) <= limit else text[:limit - 1] + "…"
    return f'<q class="evidence" title="{_esc(text)}">{_esc(short)}</q>'


def _table(element_id: str, head: Sequence[str], rows: Sequence[Sequence[str]], css: str = "") -> str:
    """A table whose cells are already HTML."""
    th = "".join(f"<th>{h}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    cls = f' class="{css}"' if css else ""
    return f'<table id="{element_id}"{cls}><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'


# ----------------------------------------------------------------------------------------------
# Sections


def _kpis(data: ReportData) -> str:
    """Key figures, each counted as the chart or table below counts it: a group is a group id in one
    cluster (the fleet chart's rows)."""
    storms_total = len(data.storms) if data.storms_total is None else data.storms_total
    clusters = int(data.fleet["cluster"].nunique()) if not data.fleet.empty else 0
    kpis = [
        ("kpi-groups", f"{len(data.fleet):,}", "groups that rebalanced (group id × cluster)"),
        ("kpi-clusters", f"{clusters:,}", "clusters"),
        ("kpi-rebalances", f"{int(data.fleet['rebalances'].sum()):,}", "rebalances"),
        ("kpi-storms", f"{storms_total:,}", "rebalance storms"),
        ("kpi-time", f"{data.fleet['total_rebalance_seconds'].sum() / 60:,.1f} min", "time rebalancing"),
    ]
    return '<div class="kpis">' + "".join(
        f'<div class="kpi" id="{i}"><b>{v}</b>{k}</div>' for i, v, k in kpis) + "</div>"


def _fleet_section(data: ReportData) -> str:
    parts = ['<section id="fleet"><h2>Fleet overview</h2>']
    if data.fleet.empty:
        return parts[0] + "<p>No consumer group rebalanced in the data.</p></section>"
    several = _several_clusters(data)
    fleet = _labelled(data.fleet, several)
    fleet = fleet.assign(dominant_cause=fleet["dominant_cause"].fillna("unknown"))
    top = fleet.sort_values(["rebalances", "cluster", "group_id"], ascending=[False, True, True]).head(
        FLEET_CHART_GROUPS)
    top = top.assign(paused_partition_seconds=top["paused_partition_seconds"].astype(float).round(3))
    of = f"all {len(fleet)}" if len(top) == len(fleet) else f"top {len(top)} of {len(fleet)}"
    fig = px.bar(top, x="rebalances", y="group", color="dominant_cause", orientation="h",
                 color_discrete_map=colour_map(sorted(top["dominant_cause"].unique())),
                 category_orders={"group": list(top["group"])},
                 hover_data=["cluster", "storms", "total_rebalance_seconds", "paused_partition_seconds",
                             "records_delayed"],
                 labels={"rebalances": "rebalances (whole history)", "group": "consumer group",
                         "dominant_cause": "dominant cause", "storms": "storms",
                         "total_rebalance_seconds": "time rebalancing (s)", "cluster": "cluster",
                         "paused_partition_seconds": "paused partition-seconds",
                         "records_delayed": "records delayed (estimate)"},
                 title=f"Rebalances per group ({of} groups; colour: dominant cause over the whole history)")
    # px lists the categories of a horizontal bar chart bottom-up, so the first (the busiest) is on top.
    fig.update_yaxes(title=None)
    fig.update_layout(height=max(300, 28 * len(top) + 120), legend_title_text="dominant cause")
    parts.append(_figure_html(fig, "fleet-rebalances"))
    parts.append(_cost_chart(data.cost_per_day))
    if not data.storms.empty:
        storms = _labelled(data.storms, several)
        storms = storms.assign(dominant_cause=storms["dominant_cause"].fillna("unknown"))
        order = (storms.groupby("group")["severity"].max().sort_values(ascending=False, kind="stable").index)
        fig = px.timeline(storms, x_start="window_start", x_end="window_end", y="group", color="dominant_cause",
                          color_discrete_map=colour_map(sorted(storms["dominant_cause"].unique())),
                          category_orders={"group": list(order)},
                          hover_data=["rebalances", "severity", "stalled_seconds", "lockstep_id"],
                          labels={"window_start": "from (UTC)", "window_end": "to (UTC)", "group": "consumer group",
                                  "dominant_cause": "dominant cause", "stalled_seconds": "stalled (s)",
                                  "lockstep_id": "lock-step wave"},
                          title="Rebalance storms over time (most severe group on top)")
        fig.update_yaxes(title=None)  # px lists the categories bottom-up: the first is on top
        fig.update_xaxes(title="time (UTC)")
        fig.update_layout(height=max(280, 30 * storms["group"].nunique() + 140), legend_title_text="dominant cause")
        parts.append(_figure_html(fig, "fleet-storm-timeline"))
        parts.append(_storm_table(storms, _anchors(data)))
    else:
        parts.append('<p class="quiet">No rebalance storms: no group rebalanced often enough to cross the '
                     "configured thresholds.</p>")
    parts.append("</section>")
    return "".join(parts)


def _cost_chart(per_day: pd.DataFrame) -> str:
    """Paused partition-hours per day, stacked by cause, with what the figures are under it."""
    if per_day.empty:
        return ('<p class="note" id="fleet-cost-note">No rebalance paused a partition, as far as rebalance_cost '
                "measured.</p>")
    per_day = per_day.assign(cause=per_day["cause"].fillna("unknown"))
    total = float(per_day["paused_partition_hours"].sum())
    rebalances = int(per_day["rebalances"].sum())
    at_low = int(per_day["at_low_bound"].sum())
    fig = px.bar(per_day, x="day", y="paused_partition_hours", color="cause",
                 color_discrete_map=colour_map(sorted(per_day["cause"].unique())),
                 hover_data=["rebalances", "at_low_bound", "records_delayed"],
                 labels={"day": "day (UTC)", "paused_partition_hours": "paused partition-hours",
                         "cause": "cause", "rebalances": "rebalances that paused partitions",
                         "at_low_bound": "counted at their low bound", "records_delayed": "records delayed (estimate)"},
                 title=f"What rebalances cost: paused partition-hours per day by cause ({amount(total)} partition-hours"
                       f" over {rebalances:,} rebalances that paused partitions)")
    fig.update_xaxes(title="day (UTC)", tickformat="%Y-%m-%d")
    fig.update_layout(height=340, barmode="stack", legend_title_text="cause")
    low = f" {at_low:,} of the {rebalances:,} rebalances count their low bound." if at_low else ""
    return (_figure_html(fig, "fleet-cost")
            + f'<p class="note" id="fleet-cost-note">{_esc(COST_NOTE)}{_esc(low)}</p>')


def _storm_table(storms: pd.DataFrame, anchors: dict[GroupKey, str]) -> str:
    rows = []
    for s in storms.sort_values(["severity", "cluster", "group_id", "window_start"],
                                ascending=[False, True, True, True]).itertuples():
        anchor = anchors.get((s.cluster, s.group_id))
        group = f'<a href="#{anchor}">{_esc(s.group)}</a>' if anchor else _esc(s.group)
        flapping = ", ".join(s.flapping_members) if len(s.flapping_members) else "-"
        rows.append([
            group, _esc(utc(s.window_start)), _esc(utc(s.window_end, "%H:%M:%S")), _esc(s.rebalances),
            f"{s.stalled_seconds:,.0f} s", cause_html(s.dominant_cause, s.cause_inferred),
            _esc(s.trigger_member or "-"), evidence_html(s.evidence), advice_html(s.dominant_cause, full=False),
            _esc(flapping), _esc(s.lockstep_id or "-"), f"{s.severity:.0f}"])
    head = ("group", "from", "to", "rebalances", "stalled", "dominant cause", "trigger member", "evidence",
            "what to change", "flapping members", "lock-step wave", "severity")
    return _table("storm-table", head, rows)


def _why(gens: pd.DataFrame, fleet_row: pd.Series | None) -> str:
    """The group's why: its dominant cause (the fleet's rule), what to change, and who triggered most."""
    rebalances = len(gens)
    dominant = None if fleet_row is None else fleet_row["dominant_cause"]
    if dominant is None or dominant != dominant:  # noqa: PLR0124 - NaN, pandas' missing float, is the one value unequal to itself
        dominant = gens["cause"].mode().iloc[0] if rebalances else "unknown"
    of_it = gens[gens["cause"] == dominant]
    inferred = bool(len(of_it)) and bool(of_it["cause_inferred"].fillna(False).all())
    counts = gens["cause"].value_counts()
    mix = ", ".join(f"{_esc(c)} {n}" for c, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    triggers = of_it["trigger_member"].dropna().value_counts()
    trigger = (f"<li>Triggered by: {', '.join(f'{_esc(m)} ({n}×)' for m, n in triggers.head(3).items())}</li>"
               if len(triggers) else "")
    evidence = of_it["evidence"].dropna()
    line = f"<li>In its own words: {evidence_html(evidence.iloc[0])}</li>" if len(evidence) else ""
    return (f'<div class="why"><b>Why:</b> {cause_html(dominant, inferred)} &nbsp;'
            f'<span class="mix">({rebalances} rebalances: {mix})</span><ul>{trigger}{line}'
            f"<li>What to change: {advice_html(dominant, full=True)}</li></ul></div>")


def cost_line(fleet_row: pd.Series | None) -> str:
    """One sentence on what a group's rebalances cost (its fleet row's cost columns)."""
    if fleet_row is None or int(fleet_row["cost_rows"]) == 0:
        return "Cost: not measured (rebalance_cost has no row for this group)."
    rows, paused = int(fleet_row["cost_rows"]), int(fleet_row["rebalances_paused"])
    restarts = int(fleet_row["static_restarts"])
    of = f"{paused:,} of {rows:,} rebalances" + (f" (counting {restarts:,} static restart{'s' if restarts > 1 else ''})"
                                                   if restarts else "")
    if paused == 0:
        return f"Cost: none of its {rows:,} rebalances paused a partition."
    high = fleet_row["paused_partition_seconds_high"]
    longest_high = fleet_row["longest_pause_high_ms"]
    records = fleet_row["records_delayed"]
    inferred = int(fleet_row["cost_inferred"])
    low = amount(fleet_row["paused_partition_seconds_low"])
    bounds = f"at least {low}, no upper bound" if _missing(high) else f"between {low} and {amount(high)}"
    return (f"Cost: {of} paused partitions: {amount(fleet_row['paused_partition_seconds'])} paused "
            f"partition-seconds ({bounds}; point figures, else low bounds), longest group "
            f"pause {amount(float(fleet_row['longest_pause_ms']) / 1000)} s"
            + ("" if _missing(longest_high) else f" (at most {amount(float(longest_high) / 1000)} s)")
            + (", records delayed unknown (no consumption rate)" if _missing(records) else
               f", about {int(records):,} records delayed (a consumption-rate estimate)")
            + f"; {inferred:,} of {rows:,} inferred (an end from bounds or commits rather than a log line or record).")


def _group_section(data: ReportData, cluster: str, group_id: str, anchor: str) -> str:
    gens = data.generations[(data.generations["cluster"] == cluster) & (data.generations["group_id"] == group_id)]
    gens = gens.sort_values(["started_at", "generation"])
    fleet = data.fleet[(data.fleet["cluster"] == cluster) & (data.fleet["group_id"] == group_id)]
    fleet_row = fleet.iloc[0] if len(fleet) else None
    assignor = "" if fleet_row is None or fleet_row["assignor"] is None else f", assignor {fleet_row['assignor']}"
    parts = [f'<section class="group" id="{anchor}"><h2>Group {_esc(group_id)}'
             f' <span class="cluster">({_esc(cluster)}{_esc(assignor)})</span></h2>']
    if gens.empty:
        return parts[0] + "<p>No rebalances recorded.</p></section>"
    gens = gens.assign(cause=gens["cause"].fillna("unknown"))
    parts.append(_why(gens, fleet_row))
    parts.append(f'<p class="cost" id="{anchor}-cost">{_esc(cost_line(fleet_row))}</p>')
    colours = colour_map(sorted(gens["cause"].unique()))
    # Members per generation: one bar per (member, generation) spanning the generation's lifetime.
    rows = [{"member": label, "start": g.started_at, "end": g.ended_at if pd.notna(g.ended_at) else data.generated_at,
             "generation": g.generation, "cause": g.cause}
            for g in gens.itertuples() for label in g.members]
    if rows:
        members = pd.DataFrame(rows)
        fig = px.timeline(members, x_start="start", x_end="end", y="member", color="cause",
                          color_discrete_map=colours, hover_data=["generation"],
                          labels={"start": "from (UTC)", "end": "to (UTC)", "member": "member"},
                          title="Members per generation (bar colour: cause of the rebalance that started it)")
        fig.update_yaxes(title=None)
        fig.update_xaxes(title="time (UTC)")
        fig.update_layout(height=max(260, 26 * members["member"].nunique() + 140), legend_title_text="cause")
        parts.append(_figure_html(fig, f"{anchor}-gantt"))
    labels = {"generation": "generation", "duration_seconds": "rebalance duration (s)",
              "partitions_moved": "partitions moved", "started_at": "started (UTC)",
              "cause_inferred": INFERRED}
    fig = px.bar(gens, x="generation", y="duration_seconds", color="cause", color_discrete_map=colours,
                 hover_data=["started_at", "cause_inferred"], labels=labels,
                 title="Rebalance duration per generation")
    fig.update_layout(height=320, legend_title_text="cause")
    parts.append(_figure_html(fig, f"{anchor}-durations"))
    fig = px.bar(gens, x="generation", y="partitions_moved", color="cause", color_discrete_map=colours,
                 labels=labels, title="Partitions moved per rebalance")
    fig.update_layout(height=320, legend_title_text="cause")
    parts.append(_figure_html(fig, f"{anchor}-movement"))
    table = [[_esc(g.generation), _esc(utc(g.started_at)), f"{g.duration_seconds:,.1f} s"
              if pd.notna(g.duration_seconds) else "-", cause_html(g.cause, g.cause_inferred),
              _esc(g.trigger_member or "-"), evidence_html(g.evidence), _esc(g.partitions_moved)]
             for g in gens.itertuples()]
    parts.append(_table(f"{anchor}-rebalances", ("generation", "started", "duration", "cause", "trigger member",
                                                 "evidence", "partitions moved"), table, "rebalances"))
    parts.append("</section>")
    return "".join(parts)


def whatif_per_group(whatif: pd.DataFrame, fleet: pd.DataFrame) -> pd.DataFrame:
    """One row per group: the assignor it used, how many generations were replayed and how many static
    membership would have avoided (with their numbers), and per assignor the partitions moved and paused
    over the whole history and the estimated paused partition-seconds (None: no estimate), with the members
    as recorded and with static membership."""
    rows = []
    for (cluster, group_id), frame in whatif.groupby(["cluster", "group_id"], sort=False):
        recorded = frame[~frame["static_membership"].astype(bool)]
        absorbed = next((list(v) for v in frame["absorbed_generations"] if v is not None and len(v)), [])
        used = fleet.loc[(fleet["cluster"] == cluster) & (fleet["group_id"] == group_id), "assignor"]
        # Plain columns by name, the what-if figures by (assignor, recorded|static, moved|paused).
        row: dict[str | tuple[str, str, str], Any] = {"cluster": cluster, "group_id": group_id,
                               "assignor_used": used.iloc[0] if len(used) else None,
                               "generations": int(recorded["generations"].max()) if len(recorded) else 0,
                               "avoided": len(absorbed), "avoided_generations": sorted(int(g) for g in absorbed)}
        for r in frame.itertuples():
            key = "static" if r.static_membership else "recorded"
            row[(r.assignor, key, "moved")] = int(r.partitions_moved)
            row[(r.assignor, key, "paused")] = int(r.paused_partitions)
            estimate = r.paused_partition_seconds_estimate
            row[(r.assignor, key, "seconds")] = None if _missing(estimate) else float(estimate)
        rows.append(row)
    return pd.DataFrame(rows)


def _whatif_section(data: ReportData) -> str:
    title = "What if another assignor or static membership had been used? (each group's whole history)"
    parts = [f'<section id="whatif"><h2>{_esc(title)}</h2>']
    shown = list(data.shown or ())
    whatif = data.whatif[[k in set(shown) for k in zip(data.whatif["cluster"], data.whatif["group_id"],
                                                       strict=True)]]
    if whatif.empty:
        return parts[0] + "<p>No group history could be replayed.</p></section>"
    per_group = whatif_per_group(whatif, data.fleet)
    order = {k: i for i, k in enumerate(shown)}
    per_group = per_group.assign(_order=[order[(c, g)] for c, g in zip(per_group["cluster"], per_group["group_id"],
                                                                         strict=True)]).sort_values("_order")
    several = _several_clusters(data)
    per_group = _labelled(per_group, several)
    parts.append('<p class="note">Each group\'s own history replayed from its first to its last generation under '
                 "every assignor, with the members as they came and went (as recorded) and as static members "
                 "(<code>group.instance.id</code>) would have: a member back within its session timeout causes "
                 "no rebalance. Partitions paused: eager assignors stop every owned partition during a "
                 "rebalance, cooperative-sticky only the moved ones. Bold: the assignor the group used.</p>")
    other = {(r["cluster"], r["group_id"]): r["leader_client"] for r in data.replays.to_dict("records")
             if r["leader_client"] not in (None, "java", "unknown")}
    named = [f"{label} ({other[(c, g)]})" for c, g, label in zip(per_group["cluster"], per_group["group_id"],
                                                                  per_group["group"], strict=True) if (c, g) in other]
    if named:
        parts.append('<p class="note">The replay is Kafka\'s Java assignors (what a group would switch to); these '
                     f"groups' leaders ran another client library: {_esc(', '.join(named))}.</p>")
    head = ["group", "assignor used", "rebalances replayed", "avoided by static membership"]
    head += [f"{a}<br><small>moved / paused (static)</small>" for a in WHATIF_ASSIGNORS]
    rows = []
    for r in per_group.to_dict("records"):
        avoided = (f"{r['avoided']} (generations {', '.join(map(str, r['avoided_generations']))})"
                   if r["avoided"] else "0")
        cells = [_esc(r["group"]), _esc(r["assignor_used"] or "-"), _esc(r["generations"]), _esc(avoided)]
        for a in WHATIF_ASSIGNORS:
            values = [r.get((a, k, m)) for k in ("recorded", "static") for m in ("moved", "paused")]
            text = ("-" if values[0] is None else
                    f"{values[0]} / {values[1]} ({'-' if values[2] is None else values[2]} / "
                    f"{'-' if values[3] is None else values[3]})")
            cells.append(f"<b>{_esc(text)}</b>" if a == r["assignor_used"] else _esc(text))
        rows.append(cells)
    parts.append(_table("whatif-table", head, rows))
    parts.append(_whatif_cost_table(per_group, data.fleet))
    long = [{"group": r["group"], "assignor": a, "partitions_moved": r.get((a, "recorded", "moved")),
             "paused_partitions": r.get((a, "recorded", "paused")),
             "used": "used" if a == r["assignor_used"] else ""}
            for r in per_group.to_dict("records") for a in WHATIF_ASSIGNORS]
    long_frame = pd.DataFrame(long).dropna(subset=["partitions_moved"])
    for column, div, what in (("partitions_moved", "whatif-moved", "Partitions moved"),
                              ("paused_partitions", "whatif-paused", "Partitions paused")):
        fig = px.bar(long_frame, x="group", y=column, color="assignor", barmode="group", text="used",
                     category_orders={"assignor": list(WHATIF_ASSIGNORS), "group": list(per_group["group"])},
                     labels={"group": "consumer group", column: f"{what.lower()} (whole history)",
                             "assignor": "assignor"},
                     title=f"{what} over each group's whole history, per assignor (members as recorded; "
                           "label: the assignor used)")
        fig.update_traces(textposition="outside")
        fig.update_xaxes(title=None)
        parts.append(_figure_html(fig, div))
    parts.append("</section>")
    return "".join(parts)


def _whatif_cost_table(per_group: pd.DataFrame, fleet: pd.DataFrame) -> str:
    """Per shown group and assignor, the estimated paused partition-seconds (as recorded, and with static
    membership), beside the observed mean pause they multiply."""
    mean = mean_pause_per_paused_partition(fleet)
    head = ["group", "observed pause per paused partition"]
    head += [f"{a}<br><small>est. paused partition-s (static)</small>" for a in WHATIF_ASSIGNORS]
    rows = []
    for r in per_group.to_dict("records"):
        observed = mean.get((r["cluster"], r["group_id"]))
        cells = [_esc(r["group"]), "-" if observed is None else _esc(f"{amount(observed)} s")]
        for a in WHATIF_ASSIGNORS:
            recorded, static = r.get((a, "recorded", "seconds")), r.get((a, "static", "seconds"))
            text = ("-" if _missing(recorded) and _missing(static) else
                    f"{amount(recorded)} ({amount(static)})")
            cells.append(f"<b>{_esc(text)}</b>" if a == r["assignor_used"] else _esc(text))
        rows.append(cells)
    return (f'<p class="note" id="whatif-cost-note">{_esc(WHATIF_COST_NOTE)}</p>'
            + _table("whatif-cost-table", head, rows))


def _replay_section(data: ReportData) -> str:
    parts = ['<section id="replays"><h2>Assignments replayed with the leader&#39;s own client library</h2>']
    if data.replays.empty:
        return parts[0] + ("<p>Every replayed generation's leader ran Kafka's Java client and its stored assignment "
                           "is what Kafka's assignor computes (or could not be replayed: see "
                           "<code>v_assignment_mismatches</code>).</p></section>")
    parts.append('<p class="note">Each generation\'s stored assignment is replayed with the assignor of the library '
                 "its leader ran (told from the ConsumerProtocol bytes the leader wrote, confirmed by a default "
                 "client id): kafka-python's own classes for a kafka-python leader, Kafka's Java assignors "
                 "otherwise. A mismatch is explained when another library's (or client version's) algorithm is "
                 "why. Listed: groups whose leader was not a Java client, with an unexplained mismatch, or whose "
                 "members shared their sticky assignor's state.</p>")
    several = _several_clusters(data)
    head = ["group", "leader library", "replayed with", "generations", "match", "explained mismatches",
            "unexplained", "shared sticky state"]
    rows = []
    shared_any = False
    for r in _labelled(data.replays, several).to_dict("records"):
        shared = [int(g) for g in (r["shared_sticky_generations"] if r["shared_sticky_generations"] is not None
                                   else [])]
        shared_any = shared_any or bool(shared)
        rows.append([_esc(r["group"]), _esc(r["leader_client"] or "-"), _esc(r["engine"] or "-"),
                     _esc(r["generations"]), _esc(r["matches"]), _esc(r["explained"]), _esc(r["unexplained"]),
                     _esc(f"generations {', '.join(map(str, shared))}" if shared else "-")])
    parts.append(_table("replay-table", head, rows))
    if shared_any:
        parts.append(f'<div class="why"><b>Shared sticky state.</b> {_esc(SHARED_STICKY_ADVICE)}</div>')
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
.kpi { background: #f5f7fa; border-radius: 6px; padding: 12px 18px; min-width: 150px; font-size: 13px; }
.kpi b { display: block; font-size: 24px; }
table { border-collapse: collapse; font-size: 13px; margin-top: 12px; }
th, td { border-bottom: 1px solid #e4e7eb; padding: 5px 10px; text-align: left; vertical-align: top; }
th { background: #f5f7fa; }
nav a { margin-right: 12px; font-size: 13px; }
#storm-table td:nth-child(2), #storm-table td:nth-child(3) { white-space: nowrap; }
table.rebalances td:nth-child(2) { white-space: nowrap; }
.quiet { color: #2e7d32; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 5px; }
.cause-name { white-space: nowrap; }
.inferred { color: #a15c00; font-style: italic; white-space: nowrap; }
.evidence { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12px; color: #444; }
.quiet-note { color: #999; }
.why { background: #fff8e6; border-left: 4px solid #F58518; padding: 8px 14px; margin: 10px 0; font-size: 14px; }
.why ul { margin: 6px 0 0 0; padding-left: 20px; }
.mix { color: #666; font-size: 13px; }
.note { font-size: 13px; color: #555; max-width: 1100px; }
.cost { background: #eef4fa; border-left: 4px solid #4C78A8; padding: 8px 14px; margin: 10px 0; font-size: 14px; }
code { background: #f0f2f5; padding: 1px 4px; border-radius: 3px; font-size: 12px; }
"""


def render_report(data: ReportData) -> str:
    """The whole report as one HTML document (plotly.js embedded once), with a section for each group of
    ``data.shown``."""
    default = pio.templates.default
    pio.templates.default = TEMPLATE
    try:
        return _document(data)
    finally:
        pio.templates.default = default


def _document(data: ReportData) -> str:
    anchors = _anchors(data)
    several = _several_clusters(data)
    nav = "".join(f'<a href="#{anchors[(c, g)]}">{_esc(g + (f" ({c})" if several else ""))}</a>'
                  for c, g in data.shown or ())
    body = [
        f"<header><h1>{_esc(data.title)}</h1><p>generated {utc(data.generated_at, '%Y-%m-%d %H:%M')}"
        f"{' from ' + _esc(data.source) if data.source else ''}; all times UTC</p></header><main>",
        _kpis(data),
        f"<nav>{nav}</nav>",
        _fleet_section(data),
        *(_group_section(data, c, g, anchors[(c, g)]) for c, g in data.shown or ()),
        _whatif_section(data),
        _replay_section(data),
        "</main>",
    ]
    plotly_js = f'<script type="text/javascript">{get_plotlyjs()}</script>'
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{_esc(data.title)}</title>'
            f"<style>{_CSS}</style>{plotly_js}</head><body>{''.join(body)}</body></html>")
