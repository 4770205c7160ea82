"""Storms as a fold over each run's changed generation rows: for any split of a group's history into k runs
(the generation history's own amendments, late log lines, further amendments of the last rows), the storms
written add up to exactly the storms of the whole history computed at once (``storms_of_history``, i.e.
``group_storms`` over ``generation_rebalances``).

The table the runs build is simulated as the job builds it: new or changed storms replace their key, removed
ones are deleted, and a group whose changes reach before its carried window is folded again from its whole
history (the rows the generation table holds after the run), its storms replaced.
"""

from __future__ import annotations

import functools
import random
from datetime import datetime, timedelta
from typing import Any, Literal

import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from coordinator_core.storms import (
    MemberIdentity,
    Rebalance,
    Storm,
    StormState,
    StormStateVersionError,
    StormThresholds,
    dump_storm_state,
    fold_storms,
    generation_rebalances,
    group_storms,
    load_storm_state,
    lockstep_chains,
    mark_lockstep,
    storms_of_history,
)
from tests.unit.generation_pieces import (
    Piece,
    Split,
    final_rows,
    fold_pieces,
    fold_runs,
    key_of,
    runs_of,
    splits,
    synthetic_history,
    with_amendments,
)
from tests.unit.test_history_sample import sample

#: The sample's scenarios last seconds: thresholds scaled as tests/spark/test_gold.py scales them.
SAMPLE_THRESHOLDS = StormThresholds(min_rebalances=12, window_minutes=2, quiet_minutes=1, flapping_min_rejoins=3,
                                    lockstep_seconds=5, lockstep_min_groups=3)
#: ... and tighter still, so that the sample's groups have several runs and storms each.
TIGHT_THRESHOLDS = StormThresholds(min_rebalances=2, window_minutes=0.2, quiet_minutes=0.05, flapping_min_rejoins=2)


def fold_in_runs(pieces: list[Piece], cluster: str, group: str, thresholds: StormThresholds,
                 reopen: timedelta, min_open_rows: int) -> tuple[dict[datetime, Storm], int]:
    """The storms table after the runs, and how many runs had to fold the group again from its history."""
    table: dict[Any, dict[str, Any]] = {}
    storms: dict[datetime, Storm] = {}
    state: StormState | None = None
    rebuilds = 0
    for piece in pieces:
        for key in piece.removed:
            table.pop(key, None)
        for row in piece.changed:
            table[key_of(row)] = row
        result = fold_storms(state, piece.changed, piece.removed, thresholds, cluster=cluster, group_id=group,
                             reopen=reopen, min_open_rows=min_open_rows)
        if result.rebuild_needed:
            rebuilds += 1
            result = fold_storms(None, list(table.values()), (), thresholds, cluster=cluster, group_id=group,
                                 reopen=reopen, min_open_rows=min_open_rows)
            storms = {}
        for start in result.removed:
            del storms[start]
        for storm in result.storms:
            storms[storm.window_start] = storm
        assert result.state is not None
        state = load_storm_state(dump_storm_state(result.state))  # through the bytes, as the job carries it
    return storms, rebuilds


def expected(pieces: list[Piece], cluster: str, group: str, thresholds: StormThresholds) -> dict[datetime, Storm]:
    return {s.window_start: s for s in storms_of_history(cluster, group, final_rows(pieces), thresholds)}


@functools.cache
def _sample_groups() -> list[str]:
    s = sample()
    return sorted(g for g in s.records if g and any(r.record.kind != "offset_commit" for r in s.records[g]))


@functools.cache
def _group_level(group: str) -> tuple[list[Any], list[Any]]:
    s = sample()
    return [r for r in s.records[group] if r.record.kind != "offset_commit"], s.group_events(group)


@st.composite
def _sample_splits(draw: st.DrawFn) -> tuple[str, Split]:
    """One of the sample's groups, and a split of its input into runs (with late lines in half of them)."""
    group = draw(st.sampled_from(_sample_groups()), label="group")
    return group, draw(splits(*_group_level(group), lines="next"))


@functools.cache
def _history(seed: int, *, recreate: bool) -> tuple[list[Any], list[Any]]:
    """``synthetic_history``, built once per seed (the folds leave their input as it is)."""
    return synthetic_history(seed, group="orders-svc", recreate=recreate)


@st.composite
def _synthetic_splits(draw: st.DrawFn, seeds: tuple[int, ...], *, lines: Literal["own", "next"],
                      recreate: bool = True) -> tuple[int, Split]:
    """One of the synthetic histories, and a split of it into runs."""
    seed = draw(st.sampled_from(seeds), label="history")
    return seed, draw(splits(*_history(seed, recreate=recreate), lines=lines))


# One example: one group's rows made in up to 8 runs by fold_generations (where most of the time goes), its
# storms folded twice: some 40 examples a second. 700 examples: at 50, a fold that did not carry its newest open
# row into the next run went unnoticed (hypothesis found it after 619 passing examples with derandomize).
@settings(max_examples=700, deadline=None, derandomize=True)
@given(case=_sample_splits(), thresholds=st.sampled_from([SAMPLE_THRESHOLDS, TIGHT_THRESHOLDS]))
@example(case=("cgh-storm-poll-timeout", Split()), thresholds=SAMPLE_THRESHOLDS)
@example(case=("cgh-storm-crash-loop", Split(cuts=(1, 2, 3, 4, 5))), thresholds=TIGHT_THRESHOLDS)
def test_any_split_of_a_sample_group_gives_the_storms_of_one_run(case: tuple[str, Split],
                                                                 thresholds: StormThresholds) -> None:
    group, split = case
    event(f"{split.k} runs")
    pieces = fold_runs(runs_of(*_group_level(group), split), group)
    want = expected(pieces, "sample", group, thresholds)
    got, rebuilds = fold_in_runs(pieces, "sample", group, thresholds, timedelta(hours=48), 4)
    assert got == want, group
    assert rebuilds == 0, group
    # A zero horizon keeps only the last row open: the window moves with every run.
    got, _ = fold_in_runs(pieces, "sample", group, thresholds, timedelta(0), 1)
    assert got == want, group


def test_the_sample_has_storms_to_find() -> None:
    found = {g for g in _sample_groups() if storms_of_history("sample", g, final_rows(
        fold_pieces(*_group_level(g), g, 1, random.Random(0))), SAMPLE_THRESHOLDS)}
    assert found == {"cgh-storm-crash-loop", "cgh-storm-poll-timeout"}


# One example: 167 to 172 records over four days, their rows made in up to 8 runs by fold_generations (30 to
# 60 ms a run), the storms folded three times: 3 to 5 examples a second, so few.
@settings(max_examples=3, deadline=None, derandomize=True)
@given(case=_synthetic_splits((1, 2), lines="next"))
@example(case=(1, Split()))
@example(case=(2, Split(cuts=(28, 56, 84, 112, 140))))
def test_any_split_of_a_synthetic_history_over_days_gives_the_storms_of_one_run(case: tuple[int, Split]) -> None:
    seed, split = case
    event(f"{split.k} runs")
    group = "orders-svc"
    pieces = fold_runs(runs_of(*_history(seed, recreate=True), split), group)
    want = expected(pieces, "c", group, StormThresholds())
    assert len(want) >= 3  # the history has storms to find
    for reopen, min_open in ((timedelta(hours=48), 4), (timedelta(hours=1), 2), (timedelta(0), 1)):
        got, rebuilds = fold_in_runs(pieces, "c", group, StormThresholds(), reopen, min_open)
        assert got == want, (reopen, min_open)
        if reopen == timedelta(hours=48):
            assert rebuilds == 0


# As above (two folds of the storms, amendments made again by each run): 3 to 5 examples a second.
@settings(max_examples=3, deadline=None, derandomize=True)
@given(case=_synthetic_splits((11, 12), lines="own", recreate=False), amendments=st.randoms(use_true_random=False))
@example(case=(11, Split()), amendments=random.Random(1))
@example(case=(12, Split(cuts=(28, 56, 84, 112, 140))), amendments=random.Random(2))
def test_any_split_with_amendments_of_the_last_rows_gives_the_storms_of_the_amended_history(
        case: tuple[int, Split], amendments: random.Random) -> None:
    """``amendments`` chooses which of the last rows each run amends again, and how."""
    seed, split = case
    event(f"{split.k} runs")
    group = "orders-svc"
    pieces = with_amendments(fold_runs(runs_of(*_history(seed, recreate=False), split), group), amendments)
    want = expected(pieces, "c", group, StormThresholds())
    for reopen, min_open in ((timedelta(hours=48), 8), (timedelta(0), 1)):
        got, _ = fold_in_runs(pieces, "c", group, StormThresholds(), reopen, min_open)
        assert got == want, (reopen, min_open)


def test_a_change_before_the_window_asks_for_the_whole_history() -> None:
    group = "orders-svc"
    records, events = synthetic_history(3, group=group, recreate=False)
    pieces = fold_pieces(records, events, group, 1, random.Random(0))
    rows = sorted((r for r in final_rows(pieces) if r["record_offset"] is not None),
                  key=lambda r: r["record_offset"])
    first = fold_storms(None, rows, (), cluster="c", group_id=group, reopen=timedelta(hours=1), min_open_rows=2)
    assert first.state is not None and first.state.floor is not None
    old = dict(rows[0], cause="coordinator_error")
    assert fold_storms(first.state, [old]).rebuild_needed
    assert fold_storms(first.state, [], [key_of(rows[0])]).rebuild_needed
    assert not fold_storms(first.state, [rows[-1]]).rebuild_needed


def test_the_first_rebalance_of_the_window_may_not_join_a_closed_run() -> None:
    t0 = datetime(2026, 1, 1)

    def row(generation: int, minute: float) -> dict[str, Any]:
        return {"group_protocol": "classic", "generation": generation, "record_offset": generation, "outcome": "stable",
                "rebalance_started_at": t0 + timedelta(minutes=minute), "rebalance_ms": 1000, "cause": "new_member"}

    first = fold_storms(None, [row(1, 0), row(2, 1), row(3, 2), row(4, 300)], (), cluster="c", group_id="g",
                        reopen=timedelta(0), min_open_rows=1)
    assert first.state is not None and first.state.closed_end is not None
    # Generation 4's start, amended by a late line to within the quiet period after the first run.
    assert fold_storms(first.state, [row(4, 5)]).rebuild_needed


def test_rebalances_come_from_the_rows_in_time_order_across_a_recreated_group() -> None:
    t0 = datetime(2026, 1, 1)
    a, b = MemberIdentity("c", "h1"), MemberIdentity("c", "h2")

    def row(generation: int, offset: int, minute: float, members: list[tuple[str, MemberIdentity]],
            joined: list[str], left: list[str]) -> dict[str, Any]:
        return {"group_protocol": "classic", "generation": generation, "record_offset": offset, "outcome": "stable",
                "rebalance_started_at": t0 + timedelta(minutes=minute), "rebalance_ms": 2000, "cause": "new_member",
                "members": [{"member_id": i, "client_id": m.client_id, "client_host": m.client_host,
                             "group_instance_id": None} for i, m in members],
                "members_joined": joined, "members_left": left}

    rows = [row(7, 10, 0, [("a1", a), ("b1", b)], ["a1", "b1"], []),
            row(1, 50, 60, [("a2", a)], ["a2"], []),                # deleted and created again: generation 1
            row(2, 60, 61, [("b2", b)], ["b2"], ["a2"])]
    got = generation_rebalances("c", "g", reversed(rows))
    assert [r.generation for r in got] == [7, 1, 2]
    assert got[2].left == (a,) and got[2].joined == (b,)
    assert got[0].ended_at == t0 + timedelta(seconds=2)


def test_the_fold_from_an_empty_state_is_group_storms() -> None:
    t0 = datetime(2026, 1, 1)
    rebalances = [Rebalance("c", "g", i, t0 + timedelta(minutes=i), t0 + timedelta(minutes=i, seconds=5),
                            "poll_timeout") for i in range(5)]
    rows = [{"group_protocol": "classic", "generation": r.generation, "record_offset": r.generation,
             "outcome": "stable", "rebalance_started_at": r.started_at, "rebalance_ms": 5000, "cause": r.cause}
            for r in rebalances]
    result = fold_storms(None, rows, (), cluster="c", group_id="g")
    assert result.storms == group_storms(rebalances) and result.removed == []


def test_a_state_of_another_layout_version_is_refused() -> None:
    state = StormState("c", "g", version=0)
    with pytest.raises(StormStateVersionError):
        load_storm_state(dump_storm_state(state))
    assert load_storm_state(None) is None


@pytest.mark.parametrize("seed", range(20))
def test_marking_the_chains_near_the_changed_storms_marks_them_as_all_storms_would(seed: int) -> None:
    """Storms of many groups of one cluster; some added, some changed, some removed: marking only the
    chains near those storms' times gives each storm the marking of all storms at once."""
    rng = random.Random(seed)
    t = StormThresholds(lockstep_seconds=60, lockstep_min_groups=2)
    t0 = datetime(2026, 1, 1)

    def storm(group: str, second: float, rebalances: int) -> Storm:
        start = t0 + timedelta(seconds=second)
        return Storm("c", group, start, start + timedelta(seconds=30), rebalances, 1, rebalances, 30.0, 30.0,
                     "poll_timeout", {"poll_timeout": rebalances}, ())

    before = {(f"g{i}", s.window_start): s for i in range(12)
              for s in [storm(f"g{i}", rng.uniform(0, 3600), rng.randint(3, 9)) for _ in range(rng.randint(1, 4))]}
    marked_before = {(s.group_id, s.window_start): s for s in mark_lockstep(list(before.values()), t)}
    after = dict(before)
    changed_times = []
    for key in rng.sample(sorted(after), 4):
        changed_times.append(key[1])
        if rng.random() < 0.5:
            del after[key]
        else:
            after[key] = storm(key[0], (key[1] - t0).total_seconds(), 20)
    for _ in range(3):
        s = storm(f"g{rng.randrange(12)}", rng.uniform(0, 3600), 4)
        after[(s.group_id, s.window_start)] = s
        changed_times.append(s.window_start)
    want = {(s.group_id, s.window_start): s for s in mark_lockstep(list(after.values()), t)}
    # the table: the old marking, the changed storms replaced, the chains near them marked again
    table = {k: marked_before[k] for k in after if k in marked_before and k[1] not in changed_times}
    table.update({k: after[k] for k in after if k not in table})
    for s in mark_lockstep(lockstep_chains(list(after.values()), changed_times, t), t):
        table[(s.group_id, s.window_start)] = s
    assert table == want
