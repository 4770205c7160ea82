"""The what-if replay as a fold over each run's changed generation rows, and the replay of a stored
generation from its decoded members.

For any split of a group's history into k runs (the generation history's own amendments, late log lines,
further amendments of the last rows), the what-if rows written add up to exactly the rows of the whole
history replayed at once (``whatif_of_history``: ``history_members``, ``static_membership_counterfactual``
and ``whatif_history`` over every generation). The table is simulated as the job writes it: new or changed
rows replace their key, removed keys are deleted, and a group whose changes reach a generation already
folded into its checkpoint is replayed again from its whole history.
"""

from __future__ import annotations

import functools
import random
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

import coordinator_core as cc
from coordinator_core import messages as m
from coordinator_core.consumer_protocol import decode_member_protocol
from coordinator_core.replay import (
    StoredMember,
    WhatIfKey,
    WhatIfRow,
    WhatIfState,
    WhatIfStateVersionError,
    dump_whatif_state,
    fold_whatif,
    history_members,
    load_whatif_state,
    replay_generation,
    replay_stored_generation,
    static_membership_counterfactual,
    whatif_of_history,
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


def fold_in_runs(pieces: list[Piece], reopen: timedelta, min_open: int) -> tuple[dict[WhatIfKey, WhatIfRow], int]:
    """The what-if table after the runs, and how many runs had to replay the group from its history."""
    table: dict[Any, dict[str, Any]] = {}
    whatif: dict[WhatIfKey, WhatIfRow] = {}
    state: WhatIfState | None = None
    rebuilds = 0
    for piece in pieces:
        for key in piece.removed:
            table.pop(key, None)
        for row in piece.changed:
            table[key_of(row)] = row
        result = fold_whatif(state, piece.changed, piece.removed, reopen=reopen, min_open=min_open)
        if result.rebuild_needed:
            rebuilds += 1
            result = fold_whatif(None, list(table.values()), (), reopen=reopen, min_open=min_open)
            whatif = {}
        for key in result.removed:
            del whatif[key]
        for row in result.rows:
            whatif[row.key] = row
        assert result.state is not None
        state = load_whatif_state(dump_whatif_state(result.state))  # through the bytes, as the job carries it
    return whatif, rebuilds


def expected(pieces: list[Piece]) -> dict[WhatIfKey, WhatIfRow]:
    """One row per key, the last (a group created again reuses its generation numbers)."""
    return {row.key: row for row in whatif_of_history(final_rows(pieces))}


@functools.cache
def _sample_groups() -> list[str]:
    s = sample()
    return sorted(g for g in s.records if g and any(r.record.kind == "group_metadata" for r in s.records[g]))


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
def _history(seed: int) -> tuple[list[Any], list[Any]]:
    """``synthetic_history`` of 100 generations, built once per seed (the folds leave their input as it is)."""
    return synthetic_history(seed, group="orders-svc", generations=100)


@st.composite
def _synthetic_splits(draw: st.DrawFn) -> tuple[int, Split]:
    """One of two synthetic histories, and a split of it into runs (with late lines in half of them)."""
    seed = draw(st.sampled_from((1, 2)), label="history")
    return seed, draw(splits(*_history(seed), lines="next"))


#: No further amendments, or a source of random choices of which of the last rows each run amends again, and how.
AMENDMENTS = st.none() | st.randoms(use_true_random=False)


# One example: one group's rows made in up to 8 runs by fold_generations, their what-if (4 assignors, with
# and without static membership) replayed twice: some 20 examples a second. 200 examples: at 25, a fold that
# forgot the partition counts known before its window went unnoticed (found after 133 passing examples).
@settings(max_examples=200, deadline=None, derandomize=True)
@given(case=_sample_splits(), amendments=AMENDMENTS)
@example(case=("cgh-storm-crash-loop", Split()), amendments=None)
@example(case=("cgh-storm-crash-loop", Split(cuts=(1, 2, 3, 4, 5))), amendments=random.Random(2))
def test_any_split_of_a_sample_group_gives_the_whatif_of_one_run(case: tuple[str, Split],
                                                                 amendments: random.Random | None) -> None:
    group, split = case
    event(f"{split.k} runs")
    pieces = fold_runs(runs_of(*_group_level(group), split), group)
    if amendments is not None:
        pieces = with_amendments(pieces, amendments)
    want = expected(pieces)
    got, rebuilds = fold_in_runs(pieces, timedelta(hours=48), 4)
    assert got == want, group
    assert rebuilds == 0, group
    got, _ = fold_in_runs(pieces, timedelta(0), 1)
    assert got == want, group


def test_the_sample_has_whatif_rows_with_and_without_static_membership() -> None:
    group = "cgh-storm-crash-loop"
    rows = expected(fold_pieces(*_group_level(group), group, 1, random.Random(0)))
    steps = {static: sum(1 for key in rows if key[1] == "range" and key[2] == static) for static in (False, True)}
    assert 0 < steps[True] < steps[False]


# One example: 106 records over four days, their rows made in up to 8 runs by fold_generations, their
# what-if replayed over 100 generations three times: 0.5 to 2 s an example, so one besides the two explicit.
@settings(max_examples=1, deadline=None, derandomize=True)
@given(case=_synthetic_splits(), amendments=AMENDMENTS)
@example(case=(1, Split()), amendments=None)
@example(case=(2, Split(cuts=(18, 36, 54, 72, 90))), amendments=random.Random(2))
def test_any_split_of_a_synthetic_history_over_days_gives_the_whatif_of_one_run(
        case: tuple[int, Split], amendments: random.Random | None) -> None:
    seed, split = case
    event(f"{split.k} runs")
    group = "orders-svc"
    pieces = fold_runs(runs_of(*_history(seed), split), group)
    if amendments is not None:
        pieces = with_amendments(pieces, amendments)
    want = expected(pieces)
    assert len({key[0] for key in want}) > 50
    for reopen, min_open in ((timedelta(hours=48), 4), (timedelta(hours=1), 2), (timedelta(0), 1)):
        got, rebuilds = fold_in_runs(pieces, reopen, min_open)
        assert got == want, (reopen, min_open)
        if reopen == timedelta(hours=48) and not split.moved and amendments is None:
            assert rebuilds == 0


def test_a_generation_judged_without_its_successor_is_judged_again() -> None:
    """Static membership absorbs "members gone, then back within the session timeout": when the run ends
    between the two, the departure is replayed (as the last generation known), then withdrawn."""
    t0 = datetime(2026, 1, 1)

    def row(generation: int, second: float, hosts: str) -> dict[str, Any]:
        members = [{"member_id": f"{h}-{generation}", "group_instance_id": None, "client_id": "c", "client_host": h,
                    "subscribed_topics": ["t"], "assigned_partitions": [{"topic": "t", "partition": i}],
                    "session_timeout_ms": 45000} for i, h in enumerate(hosts)]
        return {"group_protocol": "classic", "generation": generation, "record_offset": generation,
                "outcome": "stable", "protocol_type": "consumer", "members": members,
                "rebalance_started_at": t0 + timedelta(seconds=second), "assignment_stored_at": None}

    first = fold_whatif(None, [row(1, 0, "ab"), row(2, 60, "a")])
    assert {(key[0], key[2]) for key in (r.key for r in first.rows)} == {(1, False), (2, False), (1, True), (2, True)}
    second = fold_whatif(first.state, [row(3, 70, "ab")])
    assert sorted(second.removed) == [(2, a, True) for a in sorted(("range", "roundrobin", "sticky",
                                                                    "cooperative-sticky"))]
    assert {r.key[:1] + r.key[2:] for r in second.rows} == {(3, False)}


def test_partition_counts_are_those_known_up_to_each_generation() -> None:
    def gen(n: int, partitions: int) -> SimpleNamespace:
        member = SimpleNamespace(member_id="a", group_instance_id=None, subscribed_topics=("t", "u"),
                                 assigned_partitions=tuple(SimpleNamespace(topic="t", partition=p)
                                                           for p in range(partitions)))
        return SimpleNamespace(generation=n, members=(member,))

    counts = [h.partition_counts for h in history_members([gen(1, 4), gen(2, 8), gen(3, 6)])]
    # grown at generation 2; a later, smaller assignment does not shrink the known size
    assert counts == [{"t": 4, "u": 0}, {"t": 8, "u": 0}, {"t": 8, "u": 0}]


def test_the_counterfactual_keeps_its_documented_example() -> None:
    def gen(n: int, minute: float, hosts: str) -> SimpleNamespace:
        ms = [SimpleNamespace(member_id=f"{h}-{n}", group_instance_id=None, client_id="c", client_host=h,
                              subscribed_topics=("t",), assigned_partitions=(), session_timeout_ms=45000)
              for h in hosts]
        return SimpleNamespace(generation=n, members=ms, rebalance_started_at=datetime(2026, 1, 1)
                               + timedelta(minutes=minute))

    gens = [gen(1, 0, "ab"), gen(2, 10, "a"), gen(3, 10.5, "ab"), gen(4, 30, "ab"), gen(5, 40, "abc")]
    assert [h.generation for h in static_membership_counterfactual(gens, history_members(gens))] == [1, 5]


def test_a_change_to_a_folded_generation_asks_for_the_whole_history() -> None:
    group = "orders-svc"
    records, events = synthetic_history(4, group=group, generations=60, recreate=False)
    rows = final_rows(fold_pieces(records, events, group, 1, random.Random(0)))
    first = fold_whatif(None, rows, reopen=timedelta(hours=1), min_open=2)
    assert first.state is not None and first.state.checkpoint.offset is not None
    folded = min((r for r in rows if r["record_offset"] is not None and r["outcome"] == "stable"),
                 key=lambda r: r["record_offset"])
    assert fold_whatif(first.state, [dict(folded, members=folded["members"][:1])]).rebuild_needed
    assert fold_whatif(first.state, [], [key_of(folded)]).rebuild_needed
    newest = max((r for r in rows if r["record_offset"] is not None), key=lambda r: r["record_offset"])
    assert not fold_whatif(first.state, [newest]).rebuild_needed


def test_a_state_of_another_layout_version_is_refused() -> None:
    state = fold_whatif(None, []).state
    assert state is not None
    state.version = 0
    with pytest.raises(WhatIfStateVersionError):
        load_whatif_state(dump_whatif_state(state))
    assert load_whatif_state(None) is None


# ----------------------------------------------------------------------------------------------------
# Replay from decoded members


def stored(protocol_type: str, member: m.MemberMetadata, leader: str | None = None) -> StoredMember:
    """A member as the decode stage writes it to group_members (coordinator_core.batch's member columns);
    `leader`: the record's leader member id."""
    proto = decode_member_protocol(protocol_type, member)
    sub, asg = proto.subscription, proto.assignment
    return StoredMember(
        member_id=member.member_id, group_instance_id=member.group_instance_id,
        subscription_version=sub.version if sub else None,
        subscribed_topics=tuple(sub.topics) if sub else None,
        subscription_user_data=sub.user_data if sub else None,
        owned_partitions=tuple((t, p) for t, p in sub.owned_partitions) if sub else None,
        subscription_generation=sub.generation_id if sub else None, rack_id=sub.rack_id if sub else None,
        assigned_partitions=tuple((t, p) for t, p in asg.partitions) if asg else None,
        protocol_error=str(proto.error) if proto.error else None, client_id=member.client_id,
        assignment_version=asg.version if asg else None, assignment_user_data=asg.user_data if asg else None,
        is_leader=member.member_id == leader)


def _group_metadata_values() -> list[m.GroupMetadataValue]:
    s = sample()
    values = [r.record.value for records in s.records.values() for r in records
              if r.record.kind == "group_metadata" and r.record.value is not None]
    records, _ = synthetic_history(5, generations=40)
    values += [r.record.value for r in records if r.record.kind == "group_metadata" and r.record.value is not None]
    return [v for v in values if v.members]


def test_a_stored_generation_replays_as_its_record() -> None:
    values = _group_metadata_values()
    assert len(values) > 60
    for value in values:
        got = replay_stored_generation(value.generation, value.protocol_type, value.protocol,
                                       [stored(value.protocol_type, x, value.leader) for x in value.members])
        assert got == replay_generation(value)


def test_a_stored_member_whose_bytes_did_not_decode_is_not_replayable_for_the_same_reason() -> None:
    good = cc.encode_subscription(cc.Subscription(3, ("t",), None, (), -1, None))
    asg = cc.encode_assignment(cc.Assignment(3, (cc.TopicPartition("t", 0),), None))
    for subscription in (b"\x00\x03\x00", b""):
        value = m.GroupMetadataValue("consumer", 3, "range", "a", -1, (
            m.MemberMetadata("a", None, "c", "h", 1, 1, good, asg),
            m.MemberMetadata("b", None, "c", "h", 1, 1, subscription, b"")))
        got = replay_stored_generation(3, "consumer", "range", [stored("consumer", x, "a") for x in value.members])
        assert got == replay_generation(value)
        assert (got.status, got.reason) == ("not_replayable", "inputs_missing")
