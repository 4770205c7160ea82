"""The audit report renders every section from small inputs, is one self-contained file, and says what
happened, why and what to change; a browser test (test_report_browser.py) checks it in headless Chromium,
and test_report_frames.py the job that reads the tables."""

from __future__ import annotations

import dataclasses
import re

import pandas as pd
import pytest

from coordinator_core.logs.events import CAUSE_CLASSES
from jobs.common.report_html import CAUSE_COLOURS, ReportData, render_report, shown_groups
from tests.report.page import cost_figures, cost_line, figures, group_sections, kpi, table_cells_html, table_rows, text
from tests.report.sample_data import NO_COST, SESSION_TIMEOUT_LINE, sample_report_data


def with_second_cluster(data: ReportData) -> ReportData:
    """The sample plus the same group id in a second cluster (another group, another row of the chart)."""
    fleet = pd.concat([data.fleet, pd.DataFrame([
        {"cluster": "staging", "group_id": "orders", "rebalances": 2, "storms": 0, "total_rebalance_seconds": 4.0,
         "dominant_cause": "cooperative_second_round", "assignor": "cooperative-sticky", **NO_COST}])],
        ignore_index=True)
    return ReportData(fleet, data.storms, data.generations, data.whatif, data.generated_at, source=data.source,
                      cost_per_day=data.cost_per_day)


def test_report_has_every_section_and_no_external_resources() -> None:
    page = render_report(sample_report_data())
    for element_id in ("fleet", "fleet-rebalances", "fleet-cost", "fleet-cost-note", "fleet-storm-timeline",
                       "storm-table", "group-0", "group-0-cost", "group-0-gantt", "group-0-durations",
                       "group-0-movement", "group-0-rebalances", "whatif", "whatif-table", "whatif-cost-table",
                       "whatif-moved", "whatif-paused", "replays"):
        assert f'id="{element_id}"' in page, element_id
    # no replay worth a look in the sample data: the section says every leader ran Java and matched
    assert "Every replayed generation's leader ran Kafka's Java client" in text(page.split('id="replays"')[1])
    assert "Group orders" in page and "Group billing" in page
    assert "orders-worker@/10.0.0.7" in page  # the flapping member is named
    # nothing loaded from the network: no script, stylesheet or image tag points outside the file
    assert re.search(r'<(?:script|link|img|iframe)[^>]*(?:src|href)="https?:', page) is None
    assert page.count('class="plotly-graph-div"') == 3 + 3 * 3 + 2  # fleet 3 figures, 3 groups x 3, what-if 2


def test_shown_groups_are_one_list_with_repeatable_ties() -> None:
    """Ties in rebalances are broken by cluster, then group id, whatever the frame's row order."""
    fleet = pd.DataFrame([{"cluster": c, "group_id": g, "rebalances": n} for c, g, n in
                          [("c2", "zeta", 4), ("c1", "mid", 4), ("c2", "alpha", 4), ("c1", "poll", 10),
                           ("c1", "alpha", 4)]])
    storms = pd.DataFrame([{"cluster": "c2", "group_id": "zeta", "severity": 20.0},
                           {"cluster": "c1", "group_id": "poll", "severity": 60.0},
                           {"cluster": "c2", "group_id": "zeta", "severity": 70.0}])
    expected = (("c2", "zeta"), ("c1", "poll"), ("c1", "alpha"), ("c1", "mid"))
    assert shown_groups(fleet, storms, 4) == expected
    assert shown_groups(fleet.iloc[::-1], storms.iloc[::-1], 4) == expected


def test_every_shown_group_section_has_its_rebalances() -> None:
    data = sample_report_data()
    page = render_report(data)
    sections = group_sections(page)
    assert list(sections) == ["group-0", "group-1", "group-2"]
    for (cluster, group_id), anchor in zip(data.shown or (), sections, strict=True):
        assert f"Group {group_id}" in text(sections[anchor])
        expected = data.generations[(data.generations["cluster"] == cluster)
                                    & (data.generations["group_id"] == group_id)]["generation"]
        assert [int(r[0]) for r in table_rows(page, f"{anchor}-rebalances")] == sorted(expected)


def test_kpis_count_what_the_charts_show() -> None:
    """A group is a group id in one cluster: the KPI and the fleet chart count 4 here, not 3 group ids."""
    page = render_report(with_second_cluster(sample_report_data()))
    fleet = figures(page)["fleet-rebalances"]
    bars = {y: x for t in fleet.traces for y, x in zip(t["y"], t["x"], strict=True)}
    assert len(bars) == 4
    assert kpi(page, "kpi-groups") == "4" and "group id × cluster" in page
    assert kpi(page, "kpi-rebalances") == str(sum(bars.values())) == "12"
    assert kpi(page, "kpi-clusters") == "2"
    assert "all 4 groups" in fleet.title


def test_one_colour_per_cause_on_the_whole_page() -> None:
    assert set(CAUSE_COLOURS) == set(CAUSE_CLASSES) | {"unknown", "group_created", "static_restart"}
    assert len(set(CAUSE_COLOURS.values())) == len(CAUSE_COLOURS)  # no two causes look alike
    page = render_report(with_second_cluster(sample_report_data()))
    seen: dict[str, set[str]] = {}
    for fig in figures(page).values():
        if fig.div_id.startswith("whatif"):
            continue  # coloured by assignor
        for trace in fig.traces:
            seen.setdefault(trace["name"], set()).add(trace["marker"]["color"])
    assert {"session_timeout", "poll_timeout", "new_member", "cooperative_second_round", "static_restart"} <= set(seen)
    assert seen == {cause: {CAUSE_COLOURS[cause]} for cause in seen}
    # the tables use the same colours as the charts
    for cause in ("session_timeout", "poll_timeout"):
        assert f'background:{CAUSE_COLOURS[cause]}"></span><span class="cause">{cause}<' in page


def test_bars_are_sorted_axes_are_titled_and_times_say_utc() -> None:
    page = render_report(with_second_cluster(sample_report_data()))
    figs = figures(page)
    fleet = figs["fleet-rebalances"]
    bars = {y: x for t in fleet.traces for y, x in zip(t["y"], t["x"], strict=True)}
    # Plotly draws a category axis' first category at the bottom, unless the axis is reversed.
    order = fleet.layout["yaxis"]["categoryarray"]
    top_down = order if fleet.layout["yaxis"].get("autorange") == "reversed" else order[::-1]
    assert [bars[g] for g in top_down] == sorted(bars.values(), reverse=True) == [6, 3, 2, 1]
    for fig in figs.values():
        for axis in ("xaxis", "yaxis"):
            title = fig.axis_title(axis)
            assert title is None or "_" not in title, (fig.div_id, axis, title)
        for trace in fig.traces:  # hover labels too ("label=value<br>...")
            labels = [part.split("=")[0] for part in trace.get("hovertemplate", "").split("<br>") if "=" in part]
            assert all("_" not in label for label in labels), (fig.div_id, labels)
    timelines = [f for f in figs.values() if f.div_id.endswith(("timeline", "gantt"))]
    assert len(timelines) == 4 and all(f.axis_title("xaxis") == "time (UTC)" for f in timelines)
    times = [c for r in table_rows(page, "storm-table") for c in r[1:3]] + [
        r[1] for r in table_rows(page, "group-0-rebalances")]
    assert times and all(re.fullmatch(r"(\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d UTC", t) for t in times), times
    assert "generated 2026-11-20 23:00 UTC" in page


def test_storms_and_groups_say_why_and_what_to_change() -> None:
    page = render_report(sample_report_data())
    rows = {r[0]: r for r in table_rows(page, "storm-table")}
    orders = rows["orders"]
    assert orders[5] == "session_timeout" and orders[6] == "orders-worker-7-2"
    assert orders[7] == SESSION_TIMEOUT_LINE
    assert "session.timeout.ms" in orders[8] and "heartbeat.interval.ms" in orders[8]
    billing = rows["billing"]
    assert billing[5] == "poll_timeout (inferred from the records)"
    assert "max.poll.interval.ms" in billing[8] and "max.poll.records" in billing[8]
    sections = group_sections(page)
    why = text(re.search(r'<div class="why">(.*?)</div>', sections["group-0"], re.S).group(1))  # type: ignore[union-attr]
    assert why.startswith("Why: session_timeout")
    assert "orders-worker-7-2 (1×)" in why and SESSION_TIMEOUT_LINE in why and "GC" in why
    billing_why = text(re.search(r'<div class="why">(.*?)</div>', sections["group-1"], re.S).group(1))  # type: ignore[union-attr]
    assert "poll_timeout (inferred from the records)" in billing_why and "max.poll.interval.ms" in billing_why
    # every inferred generation says so, and only those
    for anchor, inferred in (("group-0", False), ("group-1", True)):
        causes = [r[3] for r in table_rows(page, f"{anchor}-rebalances")]
        assert all(c.endswith("(inferred from the records)") == inferred for c in causes), causes


def test_storm_rows_link_to_their_group_sections() -> None:
    data = sample_report_data()
    page = render_report(data)
    sections = group_sections(page)
    links = [re.search(r'<a href="#([\w-]+)">(.*?)</a>', row[0]) for row in table_cells_html(page, "storm-table")]
    assert [(m.group(1), m.group(2)) for m in links if m] == [("group-0", "orders"), ("group-1", "billing")]
    for m in links:
        assert m is not None and f"Group {m.group(2)}" in text(sections[m.group(1)])


def test_whatif_is_per_group_with_its_assignor_and_static_membership() -> None:
    page = render_report(sample_report_data())
    assert "each group's whole history" in text(page[page.index('<section id="whatif">'):][:300])
    rows = table_rows(page, "whatif-table")
    assert rows == [["orders", "range", "6", "4 (generations 2, 3, 4, 5)", "24 / 72 (0 / 0)", "30 / 72 (- / -)", "-",
                     "12 / 12 (0 / 0)"]]
    cells = table_cells_html(page, "whatif-table")[0]
    assert cells[4].startswith("<b>") and not any(c.startswith("<b>") for c in cells[5:])  # the assignor used
    moved = figures(page)["whatif-moved"]
    assert {t["name"] for t in moved.traces} == {"range", "roundrobin", "cooperative-sticky"}
    assert [t["text"] for t in moved.traces if t["name"] == "range"] == [["used"]]


def test_what_rebalances_cost_per_day_per_group_and_in_the_whatif() -> None:
    """The cost chart stacks each day's paused partition-hours by cause (in the cause's colour) with what the
    figures are under it; each group's section says its cost in one sentence; the what-if estimates paused
    partition-seconds as paused partitions x the group's observed pause (orders: 72 s over 36 partitions)."""
    data = sample_report_data()
    page = render_report(data)
    cost = figures(page)["fleet-cost"]
    assert cost.layout["barmode"] == "stack"
    got = {t["name"]: sum(t["y"]) for t in cost.traces}
    assert got == pytest.approx({"new_member": 30 / 3600, "session_timeout": 42 / 3600, "poll_timeout": 600 / 3600,
                                 "static_restart": 300 / 3600})
    assert {t["name"]: t["marker"]["color"] for t in cost.traces} == {c: CAUSE_COLOURS[c] for c in got}
    assert "paused partition-hours per day by cause (0.270 partition-hours over 9 rebalances" in cost.title
    note = text(page.split('id="fleet-cost-note">')[1].split("</p>")[0])
    assert "else the low bound" in note and "log-end offsets are not in __consumer_offsets" in note
    assert note.endswith("2 of the 9 rebalances count their low bound.")
    # the fleet chart's hover has each group's cost
    fleet = figures(page)["fleet-rebalances"]
    assert "paused partition-seconds=" in fleet.traces[0]["hovertemplate"]

    lines = {a: cost_line(s) for a, s in group_sections(page).items()}
    assert lines["group-0"] == (
        "Cost: 6 of 6 rebalances paused partitions: 72.0 paused partition-seconds (at least 60.0, no upper bound; "
        "point figures, else low bounds), longest group pause 3.0 s, about 12,000 records delayed (a "
        "consumption-rate estimate); 2 of 6 inferred (an end from bounds or commits rather than a log line or "
        "record).")
    assert lines["group-1"].startswith(
        "Cost: 3 of 4 rebalances (counting 1 static restart) paused partitions: 900 paused partition-seconds "
        "(between 900 and 1,200;")
    assert ("longest group pause 300 s (at most 400 s), records delayed unknown (no consumption rate)"
            in lines["group-1"])
    assert lines["group-2"] == "Cost: not measured (rebalance_cost has no row for this group)."
    assert cost_figures(lines["group-1"]) == {"paused": 3, "rows": 4, "restarts": 1, "seconds": 900, "low": 900,
                                              "high": 1200, "longest": 300, "longest_high": 400, "records": None,
                                              "inferred": 0}

    whatif = text(page.split('<section id="whatif">')[1].split("</section>")[0])
    assert "Estimated paused partition-seconds, an estimate (moves × observed pause)" in whatif
    # range 72 paused partitions x 2 s, static 0; roundrobin has no static replay; cooperative-sticky 12 x 2 s
    assert table_rows(page, "whatif-cost-table") == [["orders", "2.0 s", "144 (0)", "144 (-)", "-", "24.0 (0)"]]
    assert table_cells_html(page, "whatif-cost-table")[0][2].startswith("<b>")  # the assignor used

    # nothing measured: no chart, a sentence instead, and no estimate
    empty = dataclasses.replace(data, cost_per_day=data.cost_per_day.iloc[0:0],
                                fleet=data.fleet.assign(**{k: [v] * len(data.fleet) for k, v in NO_COST.items()}),
                                whatif=data.whatif.assign(paused_partition_seconds_estimate=float("nan")))
    page = render_report(empty)
    assert 'id="fleet-cost"' not in page and "No rebalance paused a partition" in page
    assert table_rows(page, "whatif-cost-table") == [["orders", "-", "-", "-", "-", "-"]]


def test_quiet_fleet_says_so() -> None:
    data = sample_report_data()
    quiet = ReportData(data.fleet, data.storms.iloc[0:0], data.generations, data.whatif, data.generated_at)
    page = render_report(quiet)
    assert "No rebalance storms" in page and 'id="storm-table"' not in page


def test_missing_columns_are_a_clear_error() -> None:
    data = sample_report_data()
    with pytest.raises(ValueError, match=r"storms.*severity"):
        ReportData(data.fleet, data.storms.drop(columns=["severity"]), data.generations, data.whatif,
                   data.generated_at)
