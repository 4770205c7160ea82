"""The report job over real Delta tables (rows built with the schemas from schemas/gold.py): the groups it
reads generations for are the groups the page draws, a group's dominant cause follows the storms' rule,
each storm and rebalance comes with its trigger member and evidence line, the what-if is per group
(never summed across clusters) with the rebalances static membership absorbs, and what rebalances cost
(rebalance_cost) is on the page as the tables say, by queries of the test's own (empty: the page says so)."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from jobs.common.delta_io import Tables
from jobs.common.report_html import SHARED_STICKY_ADVICE
from jobs.report import REPORT_INPUTS, report_stamp, write_report
from schemas.gold import ASSIGNMENT_REPLAY, ASSIGNOR_WHATIF, GROUP_GENERATIONS, REBALANCE_COST, REBALANCE_STORMS
from tests.report.cost_expected import assert_cost_shown, expected_cost
from tests.report.page import cost_line, element, figures, group_sections, kpi, table_rows, text

pytestmark = pytest.mark.spark

T0 = dt.datetime(2026, 11, 21, 5, 32)
POLL_LINE = ("Consumer poll timeout has expired. This means the time between subsequent calls to poll() was longer "
             "than the configured max_poll_interval_ms")
LEAVE_LINE = "Member poll-b-3 has left group through explicit `LeaveGroup` request"


def evidence(event_type: str, cause: str | None, message: str, second: float) -> dict[str, Any]:
    return {"event_type": event_type, "at": T0 + dt.timedelta(seconds=second), "member_id": None,
            "cause_class": cause, "reason": None, "source": "client.log", "line_number": 1, "message": message}


def generation(cluster: str, group_id: str, n: int, cause: str, *, causes: tuple[str, ...] = (),
               inferred: bool = False, trigger: str | None = None, lines: tuple[dict[str, Any], ...] = (),
               protocol: str | None = "range", outcome: str = "stable") -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(GROUP_GENERATIONS.column_names)
    start = T0 + dt.timedelta(seconds=10 * n)
    row.update(cluster=cluster, group_id=group_id, group_protocol="classic", generation=n, outcome=outcome,
               protocol_type="consumer", protocol=protocol, members=[], rebalance_started_at=start,
               ended_at=start + dt.timedelta(seconds=10), rebalance_ms=500, members_joined=[], members_left=[],
               partitions_moved=[], cause=cause, causes=list(causes or (cause,)), cause_inferred=inferred,
               trigger_member_id=trigger, evidence=list(lines), record_offset=n)
    return row


def poll_group() -> list[dict[str, Any]]:
    """c1/poll: 5 joins, 3 poll timeouts (each with the client's leave), 2 plain leaves; the empty last
    generation has no protocol. By count new_member leads; the failure is poll_timeout."""
    rows = []
    for n in range(1, 11):
        if n in (3, 5, 7):
            rows.append(generation("c1", "poll", n, "poll_timeout", causes=("poll_timeout", "member_left"),
                                   trigger=f"poll-b-{n}", lines=(
                                       evidence("CLIENT_POLL_TIMEOUT", "poll_timeout", POLL_LINE, 10 * n - 0.1),
                                       evidence("MEMBER_LEFT", "member_left", LEAVE_LINE, 10 * n - 0.05))))
        elif n in (9, 10):
            rows.append(generation("c1", "poll", n, "member_left", trigger=f"poll-a-{n}",
                                   protocol=None if n == 10 else "range", outcome="empty" if n == 10 else "stable"))
        else:
            rows.append(generation("c1", "poll", n, "new_member", trigger=f"poll-b-{n}"))
    return rows


def tied_groups() -> list[dict[str, Any]]:
    """Four groups of 4 rebalances each, in two clusters (ties to break); c2/alpha's causes were inferred."""
    return [generation(c, g, n, "new_member", inferred=(c, g) == ("c2", "alpha"),
                       protocol="cooperative-sticky" if g == "alpha" else "range")
            for c, g in (("c2", "zeta"), ("c1", "mid"), ("c2", "alpha"), ("c1", "alpha")) for n in range(1, 5)]


def storm(cluster: str, group_id: str, first: int, last: int, dominant: str, severity: float) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(REBALANCE_STORMS.column_names)
    row.update(cluster=cluster, group_id=group_id, window_start=T0 + dt.timedelta(seconds=10 * first),
               window_end=T0 + dt.timedelta(seconds=10 * last + 10), rebalances=last - first + 1,
               first_generation=first, last_generation=last, total_rebalance_seconds=5.0, stalled_seconds=5.0,
               dominant_cause=dominant, causes={dominant: 3}, flapping_members=[], lockstep_groups=0,
               severity=severity)
    return row


def whatif(cluster: str, group_id: str, generations: range, absorbed: set[int], moved: int) -> list[dict[str, Any]]:
    rows = []
    for assignor in ("range", "cooperative-sticky"):
        for static in (False, True):
            for n in generations:
                if static and n in absorbed:
                    continue  # static membership absorbs it: the replay has no row
                rows.append({**dict.fromkeys(ASSIGNOR_WHATIF.column_names), "cluster": cluster, "group_id": group_id,
                             "generation": n, "assignor": assignor, "static_membership": static, "members": 2,
                             "partitions": 6, "partitions_moved": moved, "balance": 0,
                             "paused_partitions": 2 * moved if assignor == "range" else moved})
    return rows


def replayed(cluster: str, group_id: str, generation: int, members: int, status: str, reason: str | None,
             leader: str, engine: str, findings: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """One generation's assignment_replay rows (one per member, the generation's columns alike on each)."""
    return [{**dict.fromkeys(ASSIGNMENT_REPLAY.column_names), "cluster": cluster, "group_id": group_id,
             "generation": generation, "record_offset": 100 + generation, "assignor": "sticky", "status": status,
             "reason": reason, "member_id": f"m{i}", "match": status == "match", "leader_client": leader,
             "engine": engine, "findings": list(findings), "leader_evidence": []} for i in range(members)]


def replay_rows() -> list[dict[str, Any]]:
    """c1/poll: a kafka-python leader, generations 2 and 3 with shared sticky state; c1/mid: a Java leader whose
    generation 2 nothing explains; c1/alpha: Java, all matching (not listed); c2/zeta: a librdkafka leader whose
    mismatch its library explains."""
    kp = "kafka-python 2.2.15"
    return [*replayed("c1", "poll", 1, 1, "match", None, "kafka-python", kp),
            *replayed("c1", "poll", 2, 2, "match", None, "kafka-python", kp, ("shared_sticky_state",)),
            *replayed("c1", "poll", 3, 3, "match", None, "kafka-python", kp, ("shared_sticky_state",)),
            *replayed("c1", "mid", 1, 1, "match", None, "java", "java"),
            *replayed("c1", "mid", 2, 2, "mismatch", "unexplained", "java", "java"),
            *replayed("c1", "alpha", 1, 2, "match", None, "java", "java"),
            *replayed("c2", "zeta", 1, 2, "mismatch", "other_client_library", "librdkafka", "java")]


def cost(cluster: str, group_id: str, n: int, seconds: tuple[float | None, float, float | None], paused: int, *,
         kind: str = "eager", pause_ms: tuple[int | None, int, int | None] = (0, 0, 0),
         records: tuple[int | None, int | None] | None = None, inferred: bool = False, day: int = 0,
         restarted: str | None = None) -> dict[str, Any]:
    """A rebalance_cost row of generation `n` (record offset n, as `generation` stores it): partition-seconds
    and group pause as (point, low, high), records delayed as (point, low) when some partition had a rate."""
    row: dict[str, Any] = dict.fromkeys(REBALANCE_COST.column_names)
    row.update(cluster=cluster, group_id=group_id, group_protocol="classic", generation=n, record_offset=n,
               restarted_member_id=restarted, protocol_kind=kind, partitions_paused=paused, partitions_kept=0,
               rebalance_at=T0 + dt.timedelta(days=day, seconds=10 * n + 1), partitions=[], clock_offsets_ms={},
               partition_seconds=seconds[0], partition_seconds_low=seconds[1], partition_seconds_high=seconds[2],
               pause_ms=pause_ms[0], pause_low_ms=pause_ms[1], pause_high_ms=pause_ms[2], inferred=inferred,
               partitions_with_rate=paused if records else 0,
               rate_coverage=(1.0 if records else 0.0) if paused else None,
               records_delayed=records[0] if records else None, records_delayed_low=records[1] if records else None)
    return row


def cost_rows() -> list[dict[str, Any]]:
    """c1/poll: a rebalance that paused nothing, one with points, one with bounds only (unbounded above, records
    delayed by their low bound), one a day later, a static restart without a rate; c1/alpha: no rate at all, and a
    generation group_generations does not have (cause unknown); c1/mid: no row; c2/zeta: another cluster."""
    return [cost("c1", "poll", 1, (0.0, 0.0, 0.0), 0, records=(0, 0)),
            cost("c1", "poll", 2, (1.5, 0.5, 3.0), 6, pause_ms=(400, 100, 900), records=(100, 40)),
            cost("c1", "poll", 3, (None, 2.0, None), 6, pause_ms=(None, 800, None), records=(None, 50), inferred=True),
            cost("c1", "poll", 5, (4.0, 3.0, 6.0), 6, pause_ms=(1500, 1000, 2500), records=(200, 150), day=1),
            cost("c1", "poll", 2, (9.0, 9.0, 12.0), 3, kind="static_restart", pause_ms=(2000, 1500, 4000),
                 restarted="poll-b-new"),
            cost("c1", "alpha", 2, (0.25, 0.2, 0.5), 2, kind="cooperative", pause_ms=(125, 100, 250)),
            cost("c1", "alpha", 7, (0.1, 0.1, 0.1), 1, kind="cooperative", pause_ms=(100, 100, 100)),
            cost("c2", "zeta", 2, (0.5, 0.5, 0.5), 1, pause_ms=(500, 500, 500), records=(7, 7))]


@pytest.fixture
def warehouse(spark: SparkSession, tables: Tables) -> Tables:
    replays = (whatif("c1", "poll", range(1, 10), {4, 6, 8}, 3) + whatif("c1", "alpha", range(1, 5), set(), 1)
               + whatif("c2", "alpha", range(1, 5), set(), 10))
    for spec, rows in ((GROUP_GENERATIONS, poll_group() + tied_groups()),
                       (REBALANCE_STORMS, [storm("c1", "poll", 1, 10, "poll_timeout", 60.0)]),
                       (ASSIGNOR_WHATIF, replays), (ASSIGNMENT_REPLAY, replay_rows()),
                       (REBALANCE_COST, cost_rows())):
        tables.ensure(spec)
        tables.append(spec, spark.createDataFrame(rows, spec.schema))
    return tables


def test_the_report_reads_and_draws_the_same_groups_and_says_why(warehouse: Tables, tmp_path: Path) -> None:
    page = write_report(warehouse, tmp_path / "audit.html", groups_shown=3, source="test").read_text()
    sections = group_sections(page)
    # the stormy group, then the busiest, ties by cluster then group id: c1/alpha and c1/mid, not c2's
    headings = [text(s.split("</h2>")[0]) for s in sections.values()]
    assert headings == ["Group poll (c1, assignor range)", "Group alpha (c1, assignor cooperative-sticky)",
                        "Group mid (c1, assignor range)"]
    for anchor, expected in zip(sections, (list(range(1, 11)), [1, 2, 3, 4], [1, 2, 3, 4]), strict=True):
        assert [int(r[0]) for r in table_rows(page, f"{anchor}-rebalances")] == expected, anchor
    assert kpi(page, "kpi-groups") == "5" and kpi(page, "kpi-rebalances") == "26" and kpi(page, "kpi-storms") == "1"

    # one cause for the same rebalances: the fleet chart's and the storm table's
    (storm_row,) = table_rows(page, "storm-table")
    assert storm_row[0] == "poll (c1)" and storm_row[5] == "poll_timeout"
    assert storm_row[6] == "poll-b-3" and storm_row[7] == POLL_LINE  # the first poll timeout, in the client's words
    assert "max.poll.interval.ms" in storm_row[8]
    assert '"name":"poll_timeout"' in page.split('id="fleet-rebalances"')[1].split("</script>")[0].replace(" ", "")
    poll = table_rows(page, "group-0-rebalances")
    assert poll[2][3:6] == ["poll_timeout", "poll-b-3", POLL_LINE]
    assert poll[0][5] == "no log line"
    assert all("inferred" not in r[3] for r in poll)

    # what-if: per group and cluster, over the whole history, with the rebalances static membership avoids
    rows = {r[0]: r for r in table_rows(page, "whatif-table")}
    assert set(rows) == {"poll (c1)", "alpha (c1)"}  # c2/alpha is not shown, and not added to c1/alpha
    assert rows["poll (c1)"][1:4] == ["range", "9", "3 (generations 4, 6, 8)"]
    assert rows["poll (c1)"][4] == "27 / 54 (18 / 36)"
    assert rows["alpha (c1)"][1:4] == ["cooperative-sticky", "4", "0"]
    assert rows["alpha (c1)"][7] == "4 / 4 (4 / 4)"

    # the replays worth a look, members sharing sticky state first, then unexplained mismatches; c1/alpha (Java,
    # every generation matching) is not listed
    replay = table_rows(page, "replay-table")
    assert [r[:8] for r in replay] == [
        ["poll (c1)", "kafka-python", "kafka-python 2.2.15", "3", "3", "0", "0", "generations 2, 3"],
        ["mid (c1)", "java", "java", "2", "1", "0", "1", "-"],
        ["zeta (c2)", "librdkafka", "java", "1", "0", "1", "0", "-"]]
    assert SHARED_STICKY_ADVICE in text(page.split('id="replays"')[1])
    # the what-if says which shown group's leader ran another library than the Java assignors it replays
    whatif_section = text(page.split('id="whatif"')[1].split("</section>")[0])
    assert "these groups' leaders ran another client library: poll (c1) (kafka-python)." in whatif_section


def test_what_rebalances_cost_is_shown_as_the_table_says(warehouse: Tables, tmp_path: Path) -> None:
    """The fleet's cost per group, the cost chart per day and cause, each shown group's cost line and the what-if's
    estimates, against the test's own Spark SQL over rebalance_cost, group_generations and assignor_whatif
    (tests/report/cost_expected.py), and a few figures worked out by hand from `cost_rows`."""
    expected = expected_cost(warehouse.spark, warehouse.database)
    page = write_report(warehouse, tmp_path / "audit.html", groups_shown=3).read_text()
    # the fleet: each group's paused partition-seconds and records delayed (0 / none for c1/mid, without rows)
    fleet_chart = figures(page)["fleet-rebalances"]
    at = {name: int(i) for name, i in re.findall(r"([^>=]+)=%\{customdata\[(\d+)\]",
                                                 fleet_chart.traces[0]["hovertemplate"])}
    fleet = {(d[at["cluster"]], y.split(" (")[0]): d for t in fleet_chart.traces
             for y, d in zip(t["y"], t["customdata"], strict=True)}
    assert len(fleet) == 5
    for key, d in fleet.items():
        want = expected.per_group.get(key)
        assert d[at["paused partition-seconds"]] == pytest.approx(want["seconds"] if want else 0, abs=5e-4), key
        assert d[at["records delayed (estimate)"]] == (want["records"] if want else None), key
    # by hand: 0 + 1.5 + 2.0 (low) + 4.0 + 9.0; records 100 + 50 (low) + 200, the static restart without a rate
    assert fleet[("c1", "poll")][at["paused partition-seconds"]] == pytest.approx(16.5)
    assert fleet[("c1", "poll")][at["records delayed (estimate)"]] == 350
    assert fleet[("c1", "alpha")][at["records delayed (estimate)"]] is None  # no rate

    assert_cost_shown(page, expected, {"poll (c1)": ("c1", "poll"), "alpha (c1)": ("c1", "alpha"),
                                       "mid (c1)": ("c1", "mid")})
    drawn = {(x[:10], t["name"]) for t in figures(page)["fleet-cost"].traces for x in t["x"]}
    assert drawn == {("2026-11-21", "new_member"), ("2026-11-21", "poll_timeout"), ("2026-11-22", "poll_timeout"),
                     ("2026-11-21", "static_restart"), ("2026-11-21", "unknown")}
    note = text(element(page, "p", "fleet-cost-note"))
    assert "else the low bound" in note and note.endswith("1 of the 7 rebalances count their low bound.")
    poll = next(cost_line(s) for s in group_sections(page).values() if text(s).startswith("Group poll (c1"))
    assert poll == (
        "Cost: 4 of 5 rebalances (counting 1 static restart) paused partitions: 16.5 paused partition-seconds (at "
        "least 14.5, no upper bound; point figures, else low bounds), longest group pause 2.0 s, about 350 records "
        "delayed (a consumption-rate estimate); 1 of 5 inferred (an end from bounds or commits rather than a log "
        "line or record).")
    section = text(page.split('id="whatif"')[1].split("</section>")[0])
    assert "Estimated paused partition-seconds, an estimate (moves × observed pause)" in section
    # poll: 16.5 s over 21 paused partitions; range pauses 6 partitions in each of 9 generations: 54 x 16.5 / 21
    assert table_rows(page, "whatif-cost-table")[0][:3] == ["poll (c1)", "0.786 s", "42.4 (28.3)"]


def test_an_inferred_cause_says_so(warehouse: Tables, tmp_path: Path) -> None:
    """Also: an empty rebalance_cost (a warehouse from before the table, ensured empty by the night) is drawn
    as nothing measured; the report's stamp names the table, so a change to it rewrites the report."""
    warehouse.delete_where(REBALANCE_COST, "true")
    page = write_report(warehouse, tmp_path / "audit.html", groups_shown=5).read_text()
    anchor = next(a for a, s in group_sections(page).items() if "Group alpha (c2" in text(s.split("</h2>")[0]))
    causes = [r[3] for r in table_rows(page, f"{anchor}-rebalances")]
    assert causes == ["new_member (inferred from the records)"] * 4
    assert 'id="fleet-cost"' not in page and "No rebalance paused a partition" in page
    lines = {text(m) for m in re.findall(r'<p class="cost" id="[\w-]+-cost">(.*?)</p>', page, re.S)}
    assert lines == {"Cost: not measured (rebalance_cost has no row for this group)."}
    assert {tuple(r[1:]) for r in table_rows(page, "whatif-cost-table")} == {("-",) * 5}
    assert REBALANCE_COST in REPORT_INPUTS and '"rebalance_cost": ' in report_stamp(warehouse, 5)
