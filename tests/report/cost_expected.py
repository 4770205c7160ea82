"""What the report should show of rebalance_cost, by the tests' own Spark SQL over the tables (not the report
job's code), and the check of a rendered page against it: the cost chart per day and cause, each shown
group's cost line, and the what-if's estimated paused partition-seconds.

Not tests: helpers of tests/report/test_report_frames.py and tests/spark/test_gold.py."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest
from pyspark.sql import SparkSession

from tests.report.page import cost_figures, cost_line, figures, group_sections, table_rows, text

GroupKey = tuple[str, str]


@dataclass(frozen=True)
class ExpectedCost:
    #: per group: rows_, paused, seconds, low, high, records, longest_ms, inferred, mean (pause per partition)
    per_group: dict[GroupKey, dict[str, Any]]
    #: (day as YYYY-MM-DD, cause) -> paused partition-hours
    per_day: dict[tuple[str, str], float]
    #: (cluster, group, assignor, static membership) -> partitions the what-if pauses over the group's history
    whatif_paused: dict[tuple[str, str, str, bool], int]


def expected_cost(spark: SparkSession, database: str) -> ExpectedCost:
    db = f"`{database}`"
    per_group = {(r["cluster"], r["group_id"]): r.asDict() for r in spark.sql(f"""
        SELECT cluster, group_id, count(*) AS rows_, sum(CASE WHEN partitions_paused > 0 THEN 1 ELSE 0 END) AS paused,
               sum(coalesce(partition_seconds, partition_seconds_low)) AS seconds,
               sum(partition_seconds_low) AS low,
               CASE WHEN count(partition_seconds_high) = count(*) THEN sum(partition_seconds_high) END AS high,
               sum(CASE WHEN partitions_with_rate > 0 THEN coalesce(records_delayed, records_delayed_low) END)
                   AS records,
               max(coalesce(pause_ms, pause_low_ms)) AS longest_ms,
               sum(CASE WHEN inferred THEN 1 ELSE 0 END) AS inferred,
               try_divide(sum(coalesce(partition_seconds, partition_seconds_low)), sum(partitions_paused)) AS mean
        FROM {db}.rebalance_cost GROUP BY cluster, group_id""").collect()}
    per_day = {(str(r["day"]), r["cause"]): r["hours"] for r in spark.sql(f"""
        SELECT to_date(c.rebalance_at) AS day,
               CASE WHEN c.protocol_kind = 'static_restart' THEN 'static_restart'
                    ELSE coalesce(g.cause, 'unknown') END AS cause,
               sum(coalesce(c.partition_seconds, c.partition_seconds_low)) / 3600 AS hours
        FROM {db}.rebalance_cost c LEFT JOIN {db}.group_generations g
          ON c.cluster = g.cluster AND c.group_id = g.group_id AND c.group_protocol = g.group_protocol
         AND c.generation = g.generation AND c.record_offset <=> g.record_offset
        WHERE c.partitions_paused > 0 AND c.rebalance_at IS NOT NULL GROUP BY 1, 2""").collect()}
    paused = {(r["cluster"], r["group_id"], r["assignor"], r["static_membership"]): r["paused"] for r in spark.sql(f"""
        SELECT cluster, group_id, assignor, static_membership, sum(paused_partitions) AS paused
        FROM {db}.assignor_whatif GROUP BY 1, 2, 3, 4""").collect()}
    return ExpectedCost(per_group, per_day, paused)


def _number(figure: str) -> float:
    return float(figure.replace(",", ""))


def assert_cost_shown(page: str, expected: ExpectedCost, shown: dict[str, GroupKey]) -> None:
    """The page's cost chart, cost lines and what-if estimates are what `expected` says; `shown` maps each group
    label the page uses (the group id, with its cluster when the page spans several) to its group."""
    chart = figures(page)["fleet-cost"]
    assert chart.layout["barmode"] == "stack"
    drawn = {(x[:10], t["name"]): y for t in chart.traces for x, y in zip(t["x"], t["y"], strict=True)}
    assert drawn == pytest.approx(expected.per_day)

    sections = {text(s.split("</h2>")[0]): s for s in group_sections(page).values()}
    for label, key in shown.items():
        heading = next(h for h in sections if h.startswith(f"Group {key[1]} ({key[0]}"))
        want = expected.per_group.get(key)
        line = cost_line(sections[heading])
        if want is None:
            assert line == "Cost: not measured (rebalance_cost has no row for this group).", label
            continue
        if not want["paused"]:
            assert line == f"Cost: none of its {want['rows_']} rebalances paused a partition.", label
            continue
        got = cost_figures(line)
        assert (got["paused"], got["rows"], got["inferred"]) == (want["paused"], want["rows_"], want["inferred"]), label
        for name in ("seconds", "low", "high"):
            assert got[name] == (None if want[name] is None else pytest.approx(want[name], rel=0.05, abs=0.0015)), (
                label, name)
        assert got["longest"] == pytest.approx(want["longest_ms"] / 1000, rel=0.05, abs=0.0015), label
        assert got["records"] == want["records"], label

    estimates = {r[0]: r for r in table_rows(page, "whatif-cost-table")}
    assert set(estimates) <= set(shown)
    assignors = ("range", "roundrobin", "sticky", "cooperative-sticky")
    for label, row in estimates.items():
        cluster, group_id = shown[label]
        mean = (expected.per_group.get((cluster, group_id)) or {}).get("mean")
        if mean is None:
            assert row[1:] == ["-"] * 5, label
            continue
        assert _number(row[1].removesuffix(" s")) == pytest.approx(mean, rel=0.05, abs=0.0015), label
        for cell, assignor in zip(row[2:], assignors, strict=True):
            m = re.fullmatch(r"(-|[\d.,]+) \((-|[\d.,]+)\)", cell)
            if cell == "-":
                assert (cluster, group_id, assignor, False) not in expected.whatif_paused, (label, assignor)
                continue
            assert m is not None, cell
            for figure, static in zip(m.groups(), (False, True), strict=True):
                paused = expected.whatif_paused.get((cluster, group_id, assignor, static))
                if paused is None:
                    assert figure == "-", (label, assignor, static)
                else:
                    assert _number(figure) == pytest.approx(paused * mean, rel=0.05, abs=0.0015), (
                        label, assignor, static)
