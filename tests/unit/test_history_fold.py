"""The generation history as a fold: the real-broker samples fed in k runs (random cut points, log lines
arriving in the same run as their records, or in any later run within the reopen horizon) must leave
exactly the rows of one full rebuild (``group_history`` over every input at once).

The table the runs build is simulated as the job builds it: each run's changed rows replace the rows of the
same key, removed keys are deleted.
"""

from __future__ import annotations

import dataclasses
import functools
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from coordinator_core.history import GenerationRow, GroupRecord, group_history
from coordinator_core.history.generations import fold_generations, row_key
from coordinator_core.history.state import GenerationState, StateVersionError, dump_state, load_state
from coordinator_core.logs import CoordinatorEvent
from tests.unit.generation_pieces import Split, runs_of, splits
from tests.unit.test_history_sample import Sample, sample

ROOT = Path(__file__).resolve().parents[2]


def _groups(s: Sample) -> list[str]:
    return sorted(g for g in s.records if g and any(
        r.record.kind not in ("offset_commit",) for r in s.records[g]))


def _group_level(records: list[GroupRecord]) -> list[GroupRecord]:
    return [r for r in records if r.record.kind != "offset_commit"]


def _fold_in_runs(runs: list[tuple[list[GroupRecord], list[CoordinatorEvent]]], group: str,
                  reopen: timedelta | None) -> tuple[dict[Any, GenerationRow], int]:
    table: dict[Any, GenerationRow] = {}
    state: GenerationState | None = None
    late = 0
    for records, events in runs:
        result = fold_generations(state, records, events, group_id=group, reopen=reopen)
        for key in result.removed:
            table.pop(key, None)
        for row in result.rows:
            table[row_key(row)] = row
        late += result.late_events
        state = load_state(dump_state(result.state))   # through the bytes, as the job carries it
    return table, late


def _by_key(rows: list[GenerationRow]) -> dict[Any, GenerationRow]:
    return {row_key(r): r for r in rows}


@functools.cache
def _inputs(group: str) -> tuple[list[GroupRecord], list[CoordinatorEvent]]:
    """The group's records (but offset commits) and log lines in the sample."""
    s = sample()
    return _group_level(s.records[group]), s.group_events(group)


@functools.cache
def _one_run(group: str) -> dict[Any, GenerationRow]:
    """The group's rows of one full rebuild, by key."""
    return _by_key(group_history(*_inputs(group), group_id=group))


@st.composite
def _group_splits(draw: st.DrawFn, lines: Literal["own", "any"]) -> tuple[str, Split]:
    """One of the sample's groups, and a split of its input into runs."""
    group = draw(st.sampled_from(_groups(sample())), label="group")
    return group, draw(splits(*_inputs(group), lines=lines))


# One example folds one group of the sample (4 to 26 records, ~250 log lines) in up to 8 runs, 3 to 10 ms a
# run (most of it fold_generations copying its open tail): some 40 examples a second. 60 examples visit each
# of the 12 groups about 5 times; derandomized, so every run checks the same splits.
@settings(max_examples=60, deadline=None, derandomize=True)
@given(case=_group_splits("own"))
@example(case=("cgh-consumer-protocol", Split()))
@example(case=("cgh-consumer-protocol", Split(cuts=(5, 10, 15, 20, 24))))
def test_any_split_with_lines_in_their_run_and_a_short_tail_gives_the_full_history(case: tuple[str, Split]) -> None:
    """reopen = 0: the tail is the last two drafts, so the carried context does the work."""
    group, split = case
    event(f"{split.k} runs")
    got, late = _fold_in_runs(runs_of(*_inputs(group), split), group, timedelta(0))
    assert got == _one_run(group), group
    assert late == 0, group


# As above, with the whole sample open (48 h): some 30 examples a second.
@settings(max_examples=40, deadline=None, derandomize=True)
@given(case=_group_splits("any"))
@example(case=("cgh-storm-poll-timeout", Split()))
@example(case=("cgh-storm-poll-timeout", Split(cuts=(2, 4, 6, 8, 10))))
def test_any_split_with_lines_arriving_in_any_run_within_the_horizon_gives_the_full_history(
        case: tuple[str, Split]) -> None:
    group, split = case
    event(f"{split.k} runs")
    got, late = _fold_in_runs(runs_of(*_inputs(group), split), group, timedelta(hours=48))
    assert got == _one_run(group), group
    assert late == 0


def test_a_line_older_than_the_tail_is_counted_not_applied() -> None:
    s = sample()
    group = "cgh-storm-poll-timeout"
    records, events = _group_level(s.records[group]), s.group_events(group)
    state = fold_generations(None, records, [], group_id=group, reopen=timedelta(0)).state
    assert state.events_floor is not None
    # The group's lines, as if a log collector delivered them a day late (older than the tail's start).
    old = [dataclasses.replace(e, timestamp=e.timestamp - timedelta(days=1)) for e in events
           if e.timestamp and e.group_id == group]
    result = fold_generations(state, [], old, group_id=group, reopen=timedelta(0))
    assert result.late_events == len(old)
    assert result.rows == [] and result.removed == []


def test_nothing_new_changes_nothing() -> None:
    s = sample()
    group = "cgh-range-grow"
    records, events = _group_level(s.records[group]), s.group_events(group)
    state = fold_generations(None, records, events, group_id=group, reopen=timedelta(0)).state
    again = fold_generations(state, [], [], group_id=group, reopen=timedelta(0))
    assert again.rows == [] and again.removed == [] and again.late_events == 0


def test_the_tail_stays_bounded_as_generations_pass() -> None:
    """A long history keeps only its open tail: the state of a group with 10 generations and with 1,000
    is the same size, within the length of member ids."""
    s = sample()
    group = "cgh-storm-poll-timeout"
    records = _group_level(s.records[group])
    state = fold_generations(None, records, [], group_id=group, reopen=timedelta(0)).state
    assert len(state.classic_tail) <= 3
    assert len(dump_state(state)) < 20_000


def test_a_state_of_another_layout_version_is_refused() -> None:
    state = GenerationState(group_id="g")
    state.version = 0
    with pytest.raises(StateVersionError, match="--rebuild"):
        load_state(dump_state(state))


def test_a_state_carried_from_before_the_kip848_hand_over_times_loads_and_folds_on() -> None:
    """A group state pickled before the reader kept hand-over times (and before drafts had them) loads with
    empty maps and lists, and the fold goes on: the rows of the nights after it are whole again."""
    group = "cgh-consumer-protocol"
    records, events = _inputs(group)
    half = len(records) // 2
    state = fold_generations(None, records[:half], events, group_id=group, reopen=timedelta(0)).state
    drafts = [d for d in (*state.reader.drafts, state.reader.draft) if d is not None]
    assert drafts
    for name in ("revoking_since", "released", "left_behind"):
        del state.reader.__dict__[name]   # as an older layout pickled it
    for draft in drafts:
        del draft.__dict__["handovers"]
    loaded = load_state(dump_state(state))
    assert loaded is not None
    assert (loaded.reader.revoking_since, loaded.reader.released, loaded.reader.left_behind) == ({}, {}, {})
    assert all(d.handovers == [] for d in (*loaded.reader.drafts, loaded.reader.draft) if d is not None)
    rows = fold_generations(loaded, records[half:], [], group_id=group, reopen=timedelta(0)).rows
    assert rows and all(r.group_id == group for r in rows)
