"""The offset history as a fold: a group's records and log lines cut into k runs, folded run after run by
``continue_offsets``, must leave exactly the rows of ``offset_history`` over everything at once (the
oracle, an independent walk of the whole archive). The table is simulated as the job keeps it: each run's
rows replace the rows of the same grain, withdrawn grains are deleted.

Histories are random (hypothesis): classic generations with and without members, KIP-848 epochs and
members, protocol conversions, group deletions, commits that repeat, go back or come from non-members,
transactional commits decided in a later run (or never), offset tombstones, and deletion/expiry lines and
group-less sweeps within seconds of them, archived in any run. One example takes about a millisecond.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator_core.history import offset_history
from coordinator_core.history.inputs import GroupRecord
from coordinator_core.history.model import OffsetEventRow
from coordinator_core.history.offset_fold import (
    EVIDENCE_TYPES,
    STATE_VERSION,
    StateVersionError,
    continue_offsets,
    fold_record,
)
from coordinator_core.logs import CoordinatorEvent
from coordinator_core.logs import events as ev
from tests.unit.test_history_builders import (
    GROUP,
    cg_epoch,
    cg_member,
    cg_target_epoch,
    commit,
    event,
    generation,
    group_tombstone,
    member,
    offset_tombstone,
    placeholder,
)
from tests.unit.test_history_offsets_sweep import CASES as SWEEP_CASES
from tests.unit.test_history_offsets_sweep import outcome as sweep_outcome
from tests.unit.test_history_offsets_sweep import records as sweep_records

NO_HORIZON = 10**15
#: Stalls of 2 commits over 1 s: common in short random histories (the defaults, 3 over 60 s, are rare there).
STALL = {"stall_min_commits": 2, "stall_min_ms": 1_000}
MEMBERS = ("m-a", "m-b", "m-c")


@dataclass
class History:
    records: list[GroupRecord]
    events: list[CoordinatorEvent]


@st.composite
def histories(draw: st.DrawFn) -> History:
    """A group's archive: records in log order, seconds apart or within the 1 s and 5 s windows, and log lines
    near them."""
    records: list[GroupRecord] = []
    seconds = 0.0
    gen = epoch = 0
    for offset in range(draw(st.integers(3, 40), label="records")):
        seconds += draw(st.sampled_from([0.0, 0.3, 0.8, 1.5, 4.0, 30.0, 70.0]))
        what = draw(st.sampled_from(["commit"] * 8 + ["offset_tombstone"] * 2 + [
            "generation", "generation", "placeholder", "group_tombstone", "epoch", "epoch_tombstone", "join",
            "leave", "consumer_record"]))
        if what == "commit":
            outcome = draw(st.sampled_from([None, None, None, "committed", "aborted", "open"]))
            expire = draw(st.sampled_from([None, None, seconds + 10.0]))
            records.append(commit(offset, seconds, "orders", draw(st.integers(0, 1)),
                                  draw(st.sampled_from([5, 5, 7, 7, 10])), expire_seconds=expire, outcome=outcome,
                                  metadata=draw(st.sampled_from(["", "m"]))))
        elif what == "offset_tombstone":
            records.append(offset_tombstone(offset, seconds, "orders", draw(st.integers(0, 1))))
        elif what == "generation":
            gen += draw(st.integers(0, 1))
            count = draw(st.integers(0, 2))
            records.append(generation(offset, seconds, gen, [member(f"c-{i}", "c") for i in range(count)]))
        elif what == "placeholder":
            records.append(placeholder(offset, seconds))
        elif what == "group_tombstone":
            records.append(group_tombstone(offset, seconds))
        elif what == "epoch":
            epoch += draw(st.integers(0, 1))
            records.append(cg_epoch(offset, seconds, epoch))
        elif what == "epoch_tombstone":
            records.append(cg_epoch(offset, seconds, None))
        elif what in ("join", "leave"):
            records.append(cg_member(offset, seconds, draw(st.sampled_from(MEMBERS)),
                                     "c" if what == "join" else None))
        else:
            records.append(cg_target_epoch(offset, seconds, epoch))
    events = []
    for line in range(draw(st.integers(0, 5), label="lines")):
        near = draw(st.sampled_from(records)).timestamp / 1000.0 - records[0].timestamp / 1000.0
        when = near + draw(st.sampled_from([-6.0, -4.0, -0.5, 0.0, 0.5, 4.0, 6.0]))
        kind = draw(st.sampled_from([*EVIDENCE_TYPES, "sweep", "sweep-nothing"]))
        if kind.startswith("sweep"):
            events.append(event(ev.OFFSETS_EXPIRED, when, group_id=None, line_number=line,
                                offsets_removed=0 if kind == "sweep-nothing" else 3, source="broker.log"))
        else:
            events.append(event(kind, when, line_number=line, source="broker.log"))
    return History(records, events)


def _plan(draw: st.DrawFn, history: History) -> tuple[int, list[int], list[int], dict[int, int]]:
    """k runs: the run that archives each record (in log order), each line (any run), and the run that
    learns each transactional commit's outcome (its own run or a later one; never, for one left open)."""
    n = len(history.records)
    k = draw(st.integers(1, 5), label="runs")
    cuts = sorted(draw(st.lists(st.integers(0, n), min_size=k - 1, max_size=k - 1)))
    record_run = [sum(1 for c in cuts if c <= i) for i in range(n)]
    line_run = [draw(st.integers(0, k - 1)) for _ in history.events]
    decision = {i: draw(st.integers(record_run[i], k - 1)) for i, r in enumerate(history.records)
                if r.transaction_outcome in ("committed", "aborted")}
    return k, record_run, line_run, decision


def _group_line(e: CoordinatorEvent) -> dict[str, Any]:
    return {"file_id": e.source, "line_number": e.line_number, "event_type": e.event_type, "at": e.timestamp,
            "member_id": e.member_id, "cause_class": e.cause_class, "reason": e.reason, "source": e.source,
            "message": e.message}


def _is_sweep(e: CoordinatorEvent) -> bool:
    return e.group_id is None and e.event_type == ev.OFFSETS_EXPIRED and (e.offsets_removed or 0) > 0


def _fold_in_runs(history: History, k: int, record_run: list[int], line_run: list[int],
                  decision: dict[int, int], horizon_ms: int = NO_HORIZON) -> dict[Any, OffsetEventRow]:
    table: dict[Any, OffsetEventRow] = {}
    state: dict[str, Any] | None = None
    for run in range(k):
        records = []
        for i, r in enumerate(history.records):
            if record_run[i] != run:
                continue
            outcome = r.transaction_outcome if decision.get(i, run) <= run else "open"
            records.append(fold_record(r._replace(transaction_outcome=outcome)))
        decided = {(0, history.records[i].offset): history.records[i].transaction_outcome
                   for i, d in decision.items() if d == run and record_run[i] < run}
        lines = [e for j, e in enumerate(history.events) if line_run[j] == run]
        group_lines = [_group_line(e) for e in lines if e.group_id == GROUP and e.event_type in EVIDENCE_TYPES]
        sweeps = [_group_line(e) for j, e in enumerate(history.events) if line_run[j] <= run and _is_sweep(e)]
        new_sweeps = [e for e in lines if _is_sweep(e)]
        if state is not None and not (records or decided or group_lines or new_sweeps):
            continue   # the job folds only the groups a run touches
        result = continue_offsets(state, records, group_lines, sweeps, decided, group_id=GROUP,
                                  horizon_ms=horizon_ms, **STALL)
        for key in result.withdrawn:
            table.pop(key, None)
        for row in result.rows:
            table[(row.kind, row.topic, row.partition, row.record_offset)] = row
        state = copy.deepcopy(result.state)
    return table


def _oracle(history: History) -> dict[Any, OffsetEventRow]:
    rows = offset_history(history.records, history.events, group_id=GROUP, **STALL)
    return {(r.kind, r.topic, r.partition, r.record_offset): r for r in rows}


@st.composite
def split_histories(draw: st.DrawFn) -> tuple[History, tuple[int, list[int], list[int], dict[int, int]]]:
    history = draw(histories())
    return history, _plan(draw, history)


@settings(max_examples=400, deadline=None)
@given(split_histories())
def test_any_split_into_runs_leaves_the_rows_of_one_walk_of_the_whole_archive(case: Any) -> None:
    history, (k, record_run, line_run, decision) = case
    assert _fold_in_runs(history, k, record_run, line_run, decision) == _oracle(history)


@settings(max_examples=100, deadline=None)
@given(histories())
def test_one_run_is_the_oracle(history: History) -> None:
    n = len(history.records)
    assert _fold_in_runs(history, 1, [0] * n, [0] * len(history.events), {}) == _oracle(history)


def test_a_group_tombstone_nothing_resolves_is_carried_and_read_again() -> None:
    records = [generation(0, 0.0, 1, [member("c-1", "c")]), commit(1, 1.0, "orders", 0, 5),
               group_tombstone(2, 2.0)]
    first = continue_offsets(None, [fold_record(r) for r in records], group_id=GROUP)
    assert [r["record_offset"] for r in first.state["tail"]] == [2]
    assert first.state["provisional"] == [{"kind": "group_deleted", "topic": None, "partition": None,
                                           "record_offset": 2}]
    # A KIP-848 epoch next: the tombstone was a conversion, and its row goes.
    second = continue_offsets(first.state, [fold_record(cg_epoch(3, 2.5, 1))], group_id=GROUP)
    assert second.withdrawn == [("group_deleted", None, None, 2)]
    assert second.state["tail"] == [] and second.state["provisional"] == []


def test_an_open_transaction_past_the_horizon_counts_as_settled() -> None:
    records = [generation(0, 0.0, 1, [member("c-1", "c")]), commit(1, 1.0, "orders", 0, 5, outcome="open")]
    first = continue_offsets(None, [fold_record(r) for r in records], group_id=GROUP, horizon_ms=60_000)
    assert [r["record_offset"] for r in first.state["tail"]] == [1]
    later = continue_offsets(first.state, [fold_record(commit(2, 120.0, "orders", 1, 5))], group_id=GROUP,
                             horizon_ms=60_000)
    assert later.state["tail"] == []
    assert later.state["partitions"][0]["last_offset"] == 5


def test_a_state_of_another_version_is_refused() -> None:
    state = continue_offsets(None, [fold_record(commit(0, 0.0, "orders", 0, 5))], group_id=GROUP).state
    assert state["version"] == STATE_VERSION
    with pytest.raises(StateVersionError, match="version 2"):
        continue_offsets({**state, "version": 2}, group_id=GROUP)


@pytest.mark.parametrize("name", sorted(SWEEP_CASES))
def test_the_fold_classifies_tombstones_as_the_oracle(name: str) -> None:
    """test_history_offsets_sweep's cases (a sweep line, a deletion line, none, a sweep that removed
    nothing, one too late), with the sweep lines handed over as the job hands them: apart, group-less."""
    events, expected = SWEEP_CASES[name]
    group_lines = [_group_line(e) for e in events if e.group_id == GROUP and e.event_type in EVIDENCE_TYPES]
    sweeps = [_group_line(e) for e in events if _is_sweep(e)]
    result = continue_offsets(None, [fold_record(r) for r in sweep_records()], group_lines, sweeps, group_id=GROUP)
    got = sorted((r.record_offset, r.kind, r.inferred, r.explanation, [e.line_number for e in r.evidence])
                 for r in result.rows)
    assert got == sweep_outcome(events) == expected
