"""Builders for the tests of the stages downstream of group_generations (no tests here): a group's
generation rows as a run of nightly runs delivers them, each run's inserted or amended rows and deleted
keys, made by the generation history's own fold (``fold_generations``) over the group's records and log
lines cut into k runs, optionally with further amendments of the last rows. The cut is a :class:`Split`:
drawn by hypothesis (:func:`splits`) in the property tests, from a seeded ``random.Random``
(:func:`split_runs`) elsewhere.

Histories come from the real-broker sample (samples/kafka-4.3.1, through ``tests.unit.test_history_sample``)
and from synthetic groups (:func:`synthetic_history`): long histories over days with storms of rebalances,
quiet periods, crash-looping and static members, skipped generations, a topic that grows, a group deleted
and created again, and "Preparing to rebalance" lines that move each rebalance's start before its record.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Literal

from hypothesis import strategies as st

from coordinator_core.history import GroupRecord
from coordinator_core.history.generations import fold_generations, row_key
from coordinator_core.history.inputs import record_time
from coordinator_core.history.state import GenerationState, dump_state, load_state
from coordinator_core.logs import CoordinatorEvent
from coordinator_core.logs import events as ev
from tests.unit.test_history_builders import event, generation, group_tombstone, member

RowKey = tuple[str, int, "int | None"]


@dataclass
class Piece:
    """One run's delivery: the generation rows inserted or amended (plain values, as a table row would
    give them), and the keys of rows deleted."""

    changed: list[dict[str, Any]] = field(default_factory=list)
    removed: list[RowKey] = field(default_factory=list)


def key_of(row: dict[str, Any]) -> RowKey:
    return (row["group_protocol"], row["generation"], row["record_offset"])


def plain(row: Any) -> dict[str, Any]:
    """A GenerationRow as the table holds it: plain values, naive UTC times."""
    d = row.to_dict() if not isinstance(row, dict) else dict(row)
    return {k: _naive(v) for k, v in d.items()}


def _naive(value: Any) -> Any:
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(timezone.utc).replace(tzinfo=None)
    if isinstance(value, list):
        return [_naive(v) for v in value]
    if isinstance(value, dict):
        return {k: _naive(v) for k, v in value.items()}
    return value


def _time(r: GroupRecord) -> datetime:
    return record_time(r) or datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Split:
    """A history cut into runs, as a property test draws it: a new run starts at each record position in
    ``cuts`` (records in offset order; positions between 1 and the record count - 1, ascending), and a log
    line goes to the run of the record time it follows (the last run if it follows them all), except the
    lines ``moved`` names by their index, which go to the run given."""

    cuts: tuple[int, ...] = ()
    moved: tuple[tuple[int, int], ...] = ()

    @property
    def k(self) -> int:
        """The number of runs."""
        return len(self.cuts) + 1


def runs_in_time(records: Sequence[GroupRecord], events: Sequence[CoordinatorEvent], cuts: Sequence[int]
                 ) -> list[int]:
    """For each log line, the run of the record time it follows when the records are cut at ``cuts``."""
    records = sorted(records, key=lambda r: r.offset)
    ends = [_time(records[b - 1]) for b in [*cuts, len(records)]] if records else []
    return [next((i for i, end in enumerate(ends) if e.timestamp is not None and e.timestamp <= end), len(cuts))
            for e in events]


def runs_of(records: Sequence[GroupRecord], events: Sequence[CoordinatorEvent], split: Split
            ) -> list[tuple[list[GroupRecord], list[CoordinatorEvent]]]:
    """The runs' records and log lines, as ``split`` cuts them."""
    records = sorted(records, key=lambda r: r.offset)
    assert list(split.cuts) == sorted(set(split.cuts)) and all(0 < c < len(records) for c in split.cuts), split
    bounds = [0, *split.cuts, len(records)]
    runs: list[tuple[list[GroupRecord], list[CoordinatorEvent]]] = [
        (list(records[a:b]), []) for a, b in itertools.pairwise(bounds)]
    moved = dict(split.moved)
    for i, (e, run) in enumerate(zip(events, runs_in_time(records, events, split.cuts), strict=True)):
        runs[moved.get(i, run)][1].append(e)
    return runs


def splits(records: Sequence[GroupRecord], events: Sequence[CoordinatorEvent], *,
           lines: Literal["own", "next", "any"] = "own", max_runs: int = 8) -> st.SearchStrategy[Split]:
    """Hypothesis's splits of a history into 1 to ``max_runs`` runs (no more than there are records), cut at
    any record positions. Log lines go to the run of the record time they follow (``own``); or, in
    half the splits, each to that run or the next (``next``, late lines); or each to any run (``any``).
    Shrinks towards one run, early cuts and lines in their own run."""
    n = len(records)

    @st.composite
    def draw_split(draw: st.DrawFn) -> Split:
        k = draw(st.integers(1, max(1, min(max_runs, n))), label="runs")
        cuts = tuple(sorted(draw(st.lists(st.sampled_from(range(1, n)), min_size=k - 1, max_size=k - 1, unique=True),
                                 label="cuts"))) if k > 1 else ()
        own = runs_in_time(records, events, cuts)
        to = list(own)
        # One byte per line (a single draw, fast for hundreds of lines), shrinking to 0: the line's own run.
        if lines == "next" and k > 1 and draw(st.booleans(), label="late lines"):
            later = draw(st.binary(min_size=len(own), max_size=len(own)), label="one run later if odd")
            to = [min(run + byte % 2, k - 1) for run, byte in zip(own, later, strict=True)]
        elif lines == "any" and k > 1:
            shifts = draw(st.binary(min_size=len(own), max_size=len(own)), label="runs after its own, cyclically")
            to = [(run + byte) % k for run, byte in zip(own, shifts, strict=True)]
        return Split(cuts, tuple((i, b) for i, (a, b) in enumerate(zip(own, to, strict=True)) if a != b))

    return draw_split()


def split_runs(records: Sequence[GroupRecord], events: Sequence[CoordinatorEvent], k: int, rng: random.Random,
               logs_late: bool) -> list[tuple[list[GroupRecord], list[CoordinatorEvent]]]:
    """k runs cut at random record positions; a log line goes to the run of the record time it follows, or
    (``logs_late``) to that run or the next one."""
    n = len(records)
    cuts = tuple(sorted(rng.sample(range(1, n), min(k - 1, n - 1)))) if n > 1 else ()
    moved: tuple[tuple[int, int], ...] = ()
    if logs_late:
        moved = tuple((i, rng.randrange(run, min(run + 2, len(cuts) + 1)))
                      for i, run in enumerate(runs_in_time(records, events, cuts)))
    return runs_of(records, events, Split(cuts, moved))


def fold_pieces(records: Sequence[GroupRecord], events: Sequence[CoordinatorEvent], group: str, k: int,
                rng: random.Random, *, logs_late: bool = False, reopen: timedelta | None = timedelta(hours=48)
                ) -> list[Piece]:
    """The group's history delivered in k runs by the generation fold itself (its amendments included)."""
    return fold_runs(split_runs(records, events, k, rng, logs_late), group, reopen=reopen)


def fold_runs(runs: Iterable[tuple[Sequence[GroupRecord], Sequence[CoordinatorEvent]]], group: str, *,
              reopen: timedelta | None = timedelta(hours=48)) -> list[Piece]:
    """Each run's delivery, made by the generation fold over the run's records and log lines."""
    pieces = []
    state: GenerationState | None = None
    for run_records, run_events in runs:
        result = fold_generations(state, run_records, run_events, group_id=group, reopen=reopen)
        pieces.append(Piece([plain(r) for r in result.rows], list(result.removed)))
        state = load_state(dump_state(result.state))
    return pieces


def with_amendments(pieces: list[Piece], rng: random.Random, *, how_many: int = 3) -> list[Piece]:
    """The pieces with, in each run after the first, a few of the last six rows the earlier runs delivered
    amended again (another cause, a rebalance start a little earlier, an extra cause), as late log lines
    do."""
    out: list[Piece] = []
    table: dict[RowKey, dict[str, Any]] = {}
    order: list[RowKey] = []
    for piece in pieces:
        changed = list(piece.changed)
        removed = list(piece.removed)
        earlier = [k for k in order if k not in removed][-6:]   # the last rows of the runs before
        for key in removed:
            table.pop(key, None)
        for row in changed:
            if key_of(row) not in table:
                order.append(key_of(row))
            table[key_of(row)] = row
        order = [k for k in order if k in table]
        if earlier:
            touched = {key_of(r) for r in changed}
            for key in rng.sample(earlier, min(how_many, len(earlier))):
                amended = _amend(table[key], rng)
                table[key] = amended
                if key in touched:
                    changed = [amended if key_of(r) == key else r for r in changed]
                else:
                    changed.append(amended)
        out.append(Piece(changed, removed))
    return out


def _amend(row: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    row = dict(row)
    choice = rng.randrange(3)
    if choice == 0:
        row["cause"] = rng.choice(["session_timeout", "poll_timeout", "new_member", "member_left"])
    elif choice == 1 and row.get("rebalance_started_at") is not None:
        row["rebalance_started_at"] = row["rebalance_started_at"] - timedelta(seconds=rng.randrange(1, 20))
        if row.get("rebalance_ms") is not None:
            row["rebalance_ms"] = row["rebalance_ms"] + 1000
    else:
        row["causes"] = [*(row.get("causes") or []), "coordinator_failover"]
    return row


def final_rows(pieces: Iterable[Piece]) -> list[dict[str, Any]]:
    """The group_generations rows the pieces leave (each run's rows replace their key, deleted keys go)."""
    table: dict[RowKey, dict[str, Any]] = {}
    for piece in pieces:
        for key in piece.removed:
            table.pop(key, None)
        for row in piece.changed:
            table[key_of(row)] = row
    return list(table.values())


# ----------------------------------------------------------------------------------------------------
# Synthetic groups


def synthetic_history(seed: int, *, generations: int = 160, group: str = "orders-svc", days: float = 4.0,  # noqa: C901 - builds the history step by step, one branch per kind of churn
                      recreate: bool = True) -> tuple[list[GroupRecord], list[CoordinatorEvent]]:
    """One classic group's records and broker lines over ``days``: bursts of rebalances seconds apart
    (crash loops: the same client and host back with a new member id), quiet hours between them, members
    with static instance ids, generations that never completed (skipped numbers), a topic grown from 4 to
    8 partitions half-way, a second topic subscribed by some, a group deleted and created again, and a
    "Preparing to rebalance" line (and a "Stabilized" one) before most records of its first incarnation."""
    rng = random.Random(seed)
    clients = [(f"worker-{i}", f"/10.0.0.{i}", f"pod-{i}" if i % 3 == 0 else None) for i in range(5)]
    records: list[GroupRecord] = []
    events: list[CoordinatorEvent] = []
    offset = 100
    clock = 0.0
    number = 1
    incarnation = 0
    active = {0, 1}
    ids: dict[int, str] = {}
    partitions = 4
    for step in range(generations):
        storming = (step // 12) % 3 == 1
        clock += rng.uniform(5, 50) if storming else rng.uniform(1800, 4 * 3600) * days / 4
        if step == generations // 2:
            partitions = 8
        if recreate and step == generations * 3 // 4 and incarnation == 0:
            records.append(group_tombstone(offset, clock, group))
            offset += rng.randrange(1, 4)
            clock += 600
            incarnation, number, ids = 1, 1, {}
        change = rng.random()
        if change < 0.35 and len(active) < len(clients):
            active.add(rng.choice([i for i in range(len(clients)) if i not in active]))
        elif change < 0.6 and len(active) > 1:
            active.discard(rng.choice(sorted(active)))
        elif change < 0.85 and active:
            ids.pop(rng.choice(sorted(active)), None)  # restarted: a new member id
        for i in active:
            ids.setdefault(i, f"{clients[i][0]}-{incarnation}-{step}-{rng.randrange(1 << 16):04x}")
        if rng.random() < 0.12:
            number += rng.randrange(1, 3)  # rounds that never completed
        order = sorted(active, key=lambda i: ids[i])
        rng.shuffle(order)
        topics = {i: ("orders", "audit") if i % 2 else ("orders",) for i in order}
        assigned: dict[int, list[tuple[str, int]]] = {i: [] for i in order}
        for p in range(partitions):
            assigned[order[p % len(order)]].append(("orders", p))
        audit = [i for i in order if "audit" in topics[i]]
        for p in range(2):
            if audit:
                assigned[audit[p % len(audit)]].append(("audit", p))
        members = [member(ids[i], clients[i][0], assigned=assigned[i], topics=topics[i], instance=clients[i][2],
                          host=clients[i][1]) for i in order]
        protocol = "cooperative-sticky" if incarnation == 1 and step % 2 else "range"
        # (No lines after the group is created again: the history joins lines to generations by number,
        # which the new incarnation reuses.)
        if incarnation == 0 and rng.random() < 0.8:
            started = clock - rng.uniform(0.5, 4.0)
            events.append(event(ev.REBALANCE_PREPARED, started, generation=number - 1, group_id=group))
            events.append(event(ev.GROUP_STABILIZED, clock - 0.2, generation=number, member_count=len(members),
                                group_id=group))
        records.append(generation(offset, clock, number, members, protocol=protocol, group=group))
        offset += rng.randrange(1, 5)
        if rng.random() < 0.05 and members:
            # The same generation stored again (a static member replaced without a rebalance).
            records.append(generation(offset, clock + 1, number, members[::-1], protocol=protocol, group=group))
            offset += 1
        number += 1
    return records, events


def synthetic_fleet(seeds: Sequence[int], **kwargs: Any) -> dict[str, tuple[list[GroupRecord], list[CoordinatorEvent]]]:
    """Several synthetic groups, ``svc-<seed>``."""
    return {f"svc-{seed}": synthetic_history(seed, group=f"svc-{seed}", **kwargs) for seed in seeds}


def rows_as_history(pieces: Sequence[Piece]) -> list[dict[str, Any]]:
    """Every row the pieces leave, keyed rows only once (see :func:`final_rows`), sorted by key for a stable
    order."""
    return sorted(final_rows(pieces), key=lambda r: (r["group_protocol"], r["generation"], r["record_offset"] or -1))


__all__ = ["Piece", "Split", "final_rows", "fold_pieces", "fold_runs", "key_of", "plain", "row_key", "rows_as_history",
           "runs_in_time", "runs_of", "split_runs", "splits", "synthetic_fleet", "synthetic_history", "with_amendments"]
