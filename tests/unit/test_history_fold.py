"""The generation history as a fold: the real-broker samples fed in k runs (random cut points, log lines
arriving in the same run as their records, or in any later run within the reopen horizon) must leave
exactly the rows of one full rebuild (``group_history`` over every input at once).

The table the runs build is simulated as the job builds it: each run's changed rows replace the rows of the
same key, removed keys are deleted.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from coordinator_core.history import GenerationRow, GroupRecord, group_history
from coordinator_core.history.generations import fold_generations, row_key
from coordinator_core.history.inputs import record_time
from coordinator_core.history.state import GenerationState, StateVersionError, dump_state, load_state
from coordinator_core.logs import CoordinatorEvent
from tests.unit.test_history_sample import Sample, sample

ROOT = Path(__file__).resolve().parents[2]


def _groups(s: Sample) -> list[str]:
    return sorted(g for g in s.records if g and any(
        r.record.kind not in ("offset_commit",) for r in s.records[g]))


def _group_level(records: list[GroupRecord]) -> list[GroupRecord]:
    return [r for r in records if r.record.kind != "offset_commit"]


def _time(r: GroupRecord) -> datetime:
    return record_time(r) or datetime(1970, 1, 1, tzinfo=timezone.utc)


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


def _split_by_time(records: list[GroupRecord], events: list[CoordinatorEvent], k: int, rng: random.Random
                   ) -> list[tuple[list[GroupRecord], list[CoordinatorEvent]]]:
    """k runs cut at random record positions; each event goes to the run of the record time it follows."""
    records = sorted(records, key=lambda r: r.offset)
    cuts = sorted(rng.sample(range(1, len(records)), min(k - 1, max(len(records) - 1, 0)))) if len(records) > 1 else []
    bounds = [0, *cuts, len(records)]
    runs = []
    for a, b in itertools.pairwise(bounds):
        runs.append((records[a:b], []))
    ends = [_time(records[b - 1]) for _, b in itertools.pairwise(bounds)]
    for e in events:
        index = next((i for i, end in enumerate(ends) if e.timestamp is not None and e.timestamp <= end), len(runs) - 1)
        runs[index][1].append(e)
    return runs


CASES = [(k, seed) for k in range(1, 7) for seed in (1, 2)]


@pytest.mark.parametrize(("k", "seed"), CASES)
def test_a_short_tail_with_lines_in_their_run_gives_the_full_history(k: int, seed: int) -> None:
    """reopen = 0: the tail is the last two drafts, so the carried context does the work."""
    s = sample()
    rng = random.Random(f"{k}:{seed}")
    for group in _groups(s):
        records, events = _group_level(s.records[group]), s.group_events(group)
        expected = _by_key(group_history(records, events, group_id=group))
        got, late = _fold_in_runs(_split_by_time(records, events, k, rng), group, timedelta(0))
        assert got == expected, group
        assert late == 0, group


@pytest.mark.parametrize(("k", "seed"), CASES)
def test_lines_arriving_in_any_later_run_within_the_horizon_give_the_full_history(k: int, seed: int) -> None:
    s = sample()
    rng = random.Random(f"late:{k}:{seed}")
    for group in _groups(s):
        records, events = _group_level(s.records[group]), s.group_events(group)
        expected = _by_key(group_history(records, events, group_id=group))
        runs = _split_by_time(records, [], k, rng)
        for e in events:
            runs[rng.randrange(len(runs))][1].append(e)
        got, late = _fold_in_runs(runs, group, timedelta(hours=48))
        assert got == expected, group
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
