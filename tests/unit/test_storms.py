"""Storm windows, flapping members, lock-step waves and the documented severity formula, on hand-built
rebalance sequences whose expected storms are worked out in the comments."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import pytest

from coordinator_core.storms import (
    MemberIdentity,
    Rebalance,
    StormThresholds,
    detect_storms,
    group_storms,
    severity,
)

T0 = datetime(2026, 11, 20, 22, 0)


def rb(group: str, generation: int, start_min: float, seconds: float, cause: str = "poll_timeout", *,
       joined: tuple[MemberIdentity, ...] = (), protocol: str = "range", revoked: int | None = None) -> Rebalance:
    start = T0 + timedelta(minutes=start_min)
    return Rebalance("prod", group, generation, start, start + timedelta(seconds=seconds), cause, protocol, joined,
                     (), revoked)


def test_quiet_group_is_not_flagged() -> None:
    # three rebalances an hour apart: never 3 within 10 minutes
    assert group_storms([rb("g", i, 60 * i, 5) for i in range(3)]) == []


def test_poll_timeout_storm() -> None:
    # 5 rebalances one minute apart, 20 s each, then quiet for hours; one storm of 5
    rebalances = [rb("g", 10 + i, i, 20) for i in range(5)] + [rb("g", 20, 300, 5, "new_member")]
    [storm] = group_storms(rebalances)
    assert (storm.rebalances, storm.first_generation, storm.last_generation) == (5, 10, 14)
    assert (storm.window_start, storm.window_end) == (T0, T0 + timedelta(minutes=4, seconds=20))
    assert (storm.total_rebalance_seconds, storm.stalled_seconds) == (100.0, 100.0)
    assert (storm.dominant_cause, storm.causes) == ("poll_timeout", {"poll_timeout": 5})
    assert storm.severity == round(15 * math.log2(6) + 10 * math.log10(101), 1)


def test_a_quiet_period_splits_storms() -> None:
    first = [rb("g", i, i, 10) for i in range(3)]
    second = [rb("g", 10 + i, 30 + i, 10, "session_timeout") for i in range(4)]  # 27+ minutes later
    storms = group_storms(first + second)
    assert [(s.rebalances, s.dominant_cause) for s in storms] == [(3, "poll_timeout"), (4, "session_timeout")]


def test_dominant_cause_and_breakdown() -> None:
    causes = ["session_timeout", "new_member", "session_timeout", "member_left"]
    [storm] = group_storms([rb("g", i, i, 5, c) for i, c in enumerate(causes)])
    assert storm.dominant_cause == "session_timeout"
    assert storm.causes == {"member_left": 1, "new_member": 1, "session_timeout": 2}


def test_flapping_members() -> None:
    crash_looping = MemberIdentity("orders-worker", "/10.0.0.7")
    other = MemberIdentity("orders-worker", "/10.0.0.8")
    static = MemberIdentity("x", "/h", "pod-3")
    rebalances = [rb("g", i, i, 5, "new_member", joined=(crash_looping,) + ((other,) if i == 0 else ())
                     + ((static,) if i < 3 else ())) for i in range(4)]
    [storm] = group_storms(rebalances)
    assert storm.flapping_members == ("instance pod-3", "orders-worker@/10.0.0.7")


def test_thresholds_come_from_the_caller() -> None:
    rebalances = [rb("g", i, 3 * i, 5) for i in range(4)]  # one every 3 minutes
    assert len(group_storms(rebalances)) == 1
    assert group_storms(rebalances, StormThresholds(min_rebalances=5)) == []
    assert group_storms(rebalances, StormThresholds(window_minutes=5)) == []  # 3 within 6 min only
    with pytest.raises(ValueError):
        StormThresholds(min_rebalances=1)


def test_cooperative_rebalances_that_revoke_nothing_do_not_stall() -> None:
    rebalances = [rb("g", i, i, 30, protocol="cooperative-sticky", revoked=0 if i % 2 else 4) for i in range(4)]
    [storm] = group_storms(rebalances)
    assert (storm.total_rebalance_seconds, storm.stalled_seconds) == (120.0, 60.0)


def test_lockstep_wave_across_groups() -> None:
    rebalances = []
    for n, group in enumerate(["a", "b", "c"]):  # three groups storm within 30 s of each other
        rebalances += [rb(group, i, n * 0.5 + i, 5, "coordinator_failover") for i in range(3)]
    rebalances += [rb("d", i, 600 + i, 5) for i in range(3)]  # alone, hours later
    storms = {s.group_id: s for s in detect_storms(rebalances)}
    assert {storms[g].lockstep_id for g in "abc"} == {"prod@2026-11-20T22:00:00"}
    assert [storms[g].lockstep_groups for g in "abcd"] == [3, 3, 3, 0]
    assert storms["d"].lockstep_id is None
    assert storms["a"].severity == severity(3, 15.0, 0, True) == severity(3, 15.0, 0, False) + 10


def test_severity_is_capped() -> None:
    assert severity(10_000, 1e9, 50, True) == 100.0


def test_a_flapping_member_makes_a_storm_even_with_few_rebalances() -> None:
    # 4 rebalances in 6 minutes is below min_rebalances=10, but one member joins three times
    flapper = MemberIdentity("worker", "/10.0.0.9")
    rebalances = [rb("g", i, 2 * i, 5, "new_member", joined=(flapper,) if i % 2 == 0 else ()) for i in range(6)]
    thresholds = StormThresholds(min_rebalances=10)
    [storm] = group_storms(rebalances, thresholds)
    assert (storm.rebalances, storm.flapping_members) == (6, ("worker@/10.0.0.9",))
    assert group_storms(rebalances[:4], thresholds) == []  # joined only twice: no storm


def test_dominant_cause_prefers_the_failure_over_the_joins_it_causes() -> None:
    # a crash loop: each restart is a new member join; the dead member's session timeout rides along
    rebalances = [Rebalance("prod", "g", i, T0 + timedelta(minutes=i), T0 + timedelta(minutes=i, seconds=9),
                            "new_member", "range", other_causes=("session_timeout",) if i else ())
                  for i in range(4)]
    [storm] = group_storms(rebalances)
    assert storm.dominant_cause == "session_timeout"
    assert storm.causes == {"new_member": 4}
