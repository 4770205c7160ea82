"""The offset fold over columns (`continue_offsets_columns`) against the record-by-record fold
(`continue_offsets`): for every run of a split history that it takes, the same rows, withdrawn grains and
next state; for an ordinary group's nights (commits, generations, placeholders, decided transactions, no
log lines) it takes every run. The record-by-record fold is itself held to the oracle, `offset_history`,
by tests/unit/test_offset_fold.py.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator_core.history.inputs import GroupRecord
from coordinator_core.history.offset_columns import continue_offsets_columns, record_arrays_from_dicts
from coordinator_core.history.offset_fold import OffsetFoldResult, continue_offsets, fold_record
from tests.unit.test_history_builders import (
    GROUP,
    cg_epoch,
    cg_member,
    cg_target_epoch,
    commit,
    generation,
    member,
    offset_tombstone,
    placeholder,
)
from tests.unit.test_offset_fold import STALL, History, _plan, histories


def _same_result(columns: OffsetFoldResult, rows: OffsetFoldResult) -> None:
    def key(r: Any) -> tuple:
        return (r.record_offset, r.kind, r.topic or "", r.partition or -1)

    assert sorted(columns.rows, key=key) == sorted(rows.rows, key=key)
    assert columns.withdrawn == rows.withdrawn
    assert columns.state == rows.state


def _runs(draw: st.DrawFn, n: int) -> list[int]:
    """The run (of 1 to 5) that archives each of `n` records, in log order."""
    k = draw(st.integers(1, 5), label="runs")
    cuts = sorted(draw(st.lists(st.integers(0, n), min_size=k - 1, max_size=k - 1)))
    return [sum(1 for c in cuts if c <= i) for i in range(n)]


def _every_run_taken_and_equal(records: list[GroupRecord], record_run: list[int]) -> None:
    """Each run's new records folded from the state the walk left: the columnar fold takes every run and
    gives the walk's rows, withdrawn grains and state."""
    state: dict[str, Any] | None = None
    for run in range(max(record_run) + 1):
        new = [fold_record(r) for i, r in enumerate(records) if record_run[i] == run]
        if not new:
            continue
        expected = continue_offsets(state, new, group_id=GROUP, **STALL)
        got = continue_offsets_columns(copy.deepcopy(state), record_arrays_from_dicts(new), group_id=GROUP, **STALL)
        assert got is not None, f"run {run} was not taken"
        _same_result(got, expected)
        state = copy.deepcopy(expected.state)


@st.composite
def ordinary_histories(draw: st.DrawFn) -> tuple[list[GroupRecord], list[int]]:
    """An ordinary group's archive (commits that repeat, advance and go back on three partitions, generations
    with and without members, placeholders, aborted and committed transactions, offset tombstones: deleted or
    expired offsets, whose rows stay open to late log lines for the horizon), and the run of each record."""
    records: list[GroupRecord] = []
    seconds, gen = 0.0, 0
    for offset in range(draw(st.integers(1, 60), label="records")):
        seconds += draw(st.sampled_from([0.0, 0.4, 0.8, 1.5, 4.0, 30.0, 40_000.0]))
        what = draw(st.sampled_from(["commit"] * 10 + ["generation", "generation", "placeholder", "tombstone"]))
        if what == "tombstone":
            records.append(offset_tombstone(offset, seconds, draw(st.sampled_from(["orders", "payments"])),
                                            draw(st.integers(0, 1))))
            continue
        if what == "commit":
            records.append(commit(offset, seconds, draw(st.sampled_from(["orders", "payments"])),
                                  draw(st.integers(0, 1)), draw(st.sampled_from([5, 5, 5, 7, 7, 10, 3])),
                                  expire_seconds=draw(st.sampled_from([None, seconds + 10.0])),
                                  outcome=draw(st.sampled_from([None, None, "committed", "aborted"])),
                                  metadata=draw(st.sampled_from(["", "m"]))))
        elif what == "generation":
            gen += draw(st.integers(0, 1))
            records.append(generation(offset, seconds, gen,
                                      [member(f"c-{i}", "c") for i in range(draw(st.integers(0, 2)))]))
        else:
            records.append(placeholder(offset, seconds))
    return records, _runs(draw, len(records))


@settings(max_examples=200, deadline=None)
@given(ordinary_histories())
def test_an_ordinary_groups_nights_fold_over_columns_as_record_by_record(case: Any) -> None:
    _every_run_taken_and_equal(*case)


@st.composite
def consumer_protocol_histories(draw: st.DrawFn) -> tuple[list[GroupRecord], list[int]]:
    """A KIP-848 group's archive: commits, epochs (bumped or repeated), members joining and leaving (one may
    leave twice or join again), other consumer-group records, and a classic generation (a group converted
    from the classic protocol), and the run of each record."""
    records: list[GroupRecord] = []
    seconds, epoch = 0.0, 0
    for offset in range(draw(st.integers(1, 60), label="records")):
        seconds += draw(st.sampled_from([0.0, 0.4, 0.8, 1.5, 4.0, 30.0]))
        what = draw(st.sampled_from(["commit"] * 10 + ["epoch", "epoch", "join", "join", "leave", "target",
                                                      "generation"]))
        if what == "commit":
            records.append(commit(offset, seconds, "orders", draw(st.integers(0, 2)),
                                  draw(st.sampled_from([5, 5, 5, 7, 7, 10, 3])),
                                  outcome=draw(st.sampled_from([None, None, "committed", "aborted"]))))
        elif what == "epoch":
            epoch += draw(st.integers(0, 1))
            records.append(cg_epoch(offset, seconds, epoch))
        elif what in ("join", "leave"):
            records.append(cg_member(offset, seconds, draw(st.sampled_from(["m-1", "m-2", "m-3"])),
                                     "c" if what == "join" else None))
        elif what == "target":
            records.append(cg_target_epoch(offset, seconds, epoch))
        else:
            records.append(generation(offset, seconds, draw(st.integers(1, 3)), [member("c-1", "c")]))
    return records, _runs(draw, len(records))


@settings(max_examples=120, deadline=None)
@given(consumer_protocol_histories())
def test_a_consumer_protocol_groups_nights_fold_over_columns_as_record_by_record(case: Any) -> None:
    """KIP-848 groups (4.x's default for new consumers) are ordinary too: each epoch's member count is the
    members joined and not left before it, carried from night to night in the state."""
    _every_run_taken_and_equal(*case)


@settings(max_examples=150, deadline=None)
@given(histories(), st.data())
def test_whatever_night_it_takes_it_folds_as_record_by_record(history: History, data: st.DataObject) -> None:
    """The general histories (KIP-848 records, tombstones, open transactions, lines): a run it takes, it folds
    the same; the others it leaves (None) to the record-by-record fold."""
    k, record_run, _, decision = _plan(data.draw, history)
    state: dict[str, Any] | None = None
    for run in range(k):
        new = []
        for i, r in enumerate(history.records):
            if record_run[i] == run:
                outcome = r.transaction_outcome if decision.get(i, run) <= run else "open"
                new.append(fold_record(r._replace(transaction_outcome=outcome)))
        decided = {(0, history.records[i].offset): history.records[i].transaction_outcome
                   for i, d in decision.items() if d == run and record_run[i] < run}
        expected = continue_offsets(state, new, (), (), decided, group_id=GROUP, **STALL)
        if new and not decided:
            got = continue_offsets_columns(copy.deepcopy(state), record_arrays_from_dicts(new), group_id=GROUP,
                                           **STALL)
            if got is not None:
                _same_result(got, expected)
        state = copy.deepcopy(expected.state)


def test_a_night_with_a_group_tombstone_or_an_open_transaction_is_left_to_the_walk() -> None:
    base = [generation(0, 0.0, 1, [member("c-1", "c")]), commit(1, 1.0, "orders", 0, 5)]
    assert continue_offsets_columns(None, record_arrays_from_dicts([fold_record(r) for r in base]),
                                    group_id=GROUP) is not None
    opened = [*base, commit(2, 2.0, "orders", 0, 6, outcome="open")]
    assert continue_offsets_columns(None, record_arrays_from_dicts([fold_record(r) for r in opened]),
                                    group_id=GROUP) is None


def test_a_long_night_folds_at_array_speed() -> None:
    """Not a timing: the shape of a fleet's night (2,000 commits on 20 partitions, a rebalance) is taken."""
    rng = np.random.default_rng(7)
    records = [generation(0, 0.0, 1, [member("c-1", "c"), member("c-2", "c")])]
    offsets = [0] * 20
    for i in range(1, 2001):
        p = i % 20
        offsets[p] += int(rng.integers(0, 3))
        records.append(commit(i, i * 0.25, "orders", p, offsets[p]))
    records.append(generation(2001, 600.0, 2, [member("c-1", "c")]))
    new = [fold_record(r) for r in records]
    got = continue_offsets_columns(None, record_arrays_from_dicts(new), group_id=GROUP)
    assert got is not None
    _same_result(got, continue_offsets(None, new, group_id=GROUP))
