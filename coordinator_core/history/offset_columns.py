"""The offset fold over columns: `offset_fold.continue_offsets` for the night of an ordinary group, with numpy.

A fleet's night is almost all offset commits of groups that only commit and rebalance. For such a group the
record-by-record walk of `continue_offsets` (a Python dict per record, a branch per commit) cost ~5 us a
commit; here the same rule runs on arrays, and Python touches only what the rule reports (rewinds, commits
by non-members, stalls) and one entry per partition of the state.

The group's night qualifies when its new records are offset commits and offset tombstones (none in an
open transaction), classic generations and placeholders, KIP-848 epochs, members and other consumer-group
records, and other groups' kinds the fold skips; when it brings no log line; and when its state carries
nothing unsettled: no tail, provisional row, log line or group tombstone (its settled offset tombstones, still
open to late lines, are classified again as the walk does). Then the walk is:

* the group's *context* (generation or epoch, members) changes only at a GroupMetadata or
  ConsumerGroupMetadata record (an epoch's members: those joined and not left before it), and each change
  closes every partition's run: the records fall into *epochs* between changes;
* per partition (its commits and tombstones in log order, the state's last commit before them), a commit
  whose offset went back is a rewind, one made while the generation had no members a non-member commit
  (both close the partition's run); a commit continues the run when it repeats the offset in the same
  epoch, else it starts one where the generation has members; a tombstone closes the run, gets its row
  (`offset_fold.Classifier`, the walk's own) and removes the partition: the next commit has no previous;
* each run, new or carried, gives its stall row if it is long enough, as `continue_offsets` does.

`continue_offsets_columns` returns None for a night that does not qualify: the caller walks it with
`continue_offsets`. Tests hold the two to the same rows and states (tests/unit/test_offset_columns.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from coordinator_core.history.inputs import ABORTED
from coordinator_core.history.model import NON_MEMBER_COMMIT, REWIND, OffsetEventRow
from coordinator_core.history.offset_fold import (
    _MIN,
    CLASSIC_LIVE,
    COMMIT,
    CONSUMER_LIVE,
    CONSUMER_RECORD,
    CONSUMER_RECORD_TOMBSTONE,
    DEFAULT_HORIZON_MS,
    EPOCH,
    GENERATION,
    MEMBER_JOINED,
    MEMBER_LEFT,
    OFFSET_TOMBSTONE,
    OTHER,
    PLACEHOLDER,
    STATE_VERSION,
    TRANSACTION_OPEN,
    Classifier,
    OffsetFoldResult,
    _checked,
    _key,
    _key_order,
    _Run,
    _stall_row,
    _time,
    _tombstone_input,
    classify_again,
    open_tombstones,
)
from coordinator_core.history.offsets import explain_non_member, explain_rewind, offset_row

#: The record kinds a qualifying night may hold: commits and offset tombstones, either protocol's generations
#: and KIP-848 members (the fold does nothing with placeholders, other KIP-848 records and other kinds).
SIMPLE_KINDS = frozenset((COMMIT, OFFSET_TOMBSTONE, GENERATION, PLACEHOLDER, OTHER, EPOCH, MEMBER_JOINED, MEMBER_LEFT,
                          CONSUMER_RECORD, CONSUMER_RECORD_TOMBSTONE))
#: What a state must not carry for the night to qualify: records or lines still open (its settled offset
#: tombstones are classified again here, as the walk does).
_OPEN_PARTS = ("tail", "events", "provisional", "group_tombstones_ms")


@dataclass(frozen=True)
class Ints:
    """A nullable integer column: values (0 where null) and the null mask."""

    values: np.ndarray
    null: np.ndarray

    def item(self, i: int) -> int | None:
        return None if self.null[i] else int(self.values[i])

    def take(self, index: Any) -> Ints:
        """Rows by index array or slice."""
        return Ints(self.values[index], self.null[index])


@dataclass(frozen=True)
class RecordArrays:
    """A run's new records (OFFSETS_RECORD's fields) as numpy columns, for one group or a slice of several
    (`slice`); strings as object arrays (None for null), `topic` also as dictionary codes (-1 for null)."""

    record_partition: np.ndarray
    record_offset: np.ndarray
    timestamp_ms: Ints
    kind: np.ndarray
    transaction_outcome: np.ndarray
    topic: np.ndarray
    topic_code: np.ndarray
    partition: Ints
    offset: Ints
    expire_ms: Ints
    metadata: np.ndarray
    generation: Ints
    member_count: Ints
    member_id: np.ndarray

    def __len__(self) -> int:
        return len(self.record_offset)

    def slice(self, start: int, stop: int) -> RecordArrays:
        """Rows start..stop-1 (numpy views, no copy)."""
        return self.take(slice(start, stop))

    def take(self, index: Any) -> RecordArrays:
        columns: dict[str, Any] = {name: (value.take(index) if isinstance(value, Ints) else value[index])
                                   for name, value in self.__dict__.items()}
        return RecordArrays(**columns)


def _ints(column: pa.ChunkedArray | pa.Array) -> Ints:
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    null = np.asarray(array.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    values = np.asarray(pc.fill_null(array, 0).to_numpy(zero_copy_only=False), dtype=np.int64)
    return Ints(values, null)


def _strings(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    return np.asarray(array.to_numpy(zero_copy_only=False), dtype=object)


def record_arrays(table: pa.Table) -> RecordArrays:
    """The OFFSETS_RECORD columns of `table` as numpy arrays (one conversion for a whole bucket of groups)."""
    topic = table.column("topic").combine_chunks()
    codes = topic.dictionary_encode().indices if len(topic) else pa.array([], pa.int32())
    return RecordArrays(
        record_partition=np.asarray(pc.fill_null(table.column("record_partition"), 0).to_numpy(), dtype=np.int64),
        record_offset=np.asarray(pc.fill_null(table.column("record_offset"), 0).to_numpy(), dtype=np.int64),
        timestamp_ms=_ints(table.column("timestamp_ms")),
        kind=_strings(table.column("kind")),
        transaction_outcome=_strings(table.column("transaction_outcome")),
        topic=_strings(topic),
        topic_code=np.asarray(pc.fill_null(codes, -1).to_numpy(zero_copy_only=False), dtype=np.int64),
        partition=_ints(table.column("partition")),
        offset=_ints(table.column("offset")),
        expire_ms=_ints(table.column("expire_ms")),
        metadata=_strings(table.column("metadata")),
        generation=_ints(table.column("generation")),
        member_count=_ints(table.column("member_count")),
        member_id=_strings(table.column("member_id")),
    )


def record_arrays_from_dicts(records: Sequence[Mapping[str, Any]]) -> RecordArrays:
    """`record_arrays` of records as `offset_fold.fold_record` gives them (tests, and callers without Arrow)."""
    int_fields = ("record_partition", "record_offset", "timestamp_ms", "partition", "offset", "expire_ms",
                  "generation", "member_count")
    str_fields = ("kind", "transaction_outcome", "topic", "metadata", "member_id")
    columns = {name: pa.array([r[name] for r in records], pa.int64()) for name in int_fields}
    columns.update({name: pa.array([r[name] for r in records], pa.string()) for name in str_fields})
    return record_arrays(pa.table(columns))


def _same(a: Ints, b: Ints) -> np.ndarray:
    """Elementwise equality of two nullable columns (null equals null, as Python's None == None)."""
    same: np.ndarray = (a.null & b.null) | (~a.null & ~b.null & (a.values == b.values))
    return same


def _in_log_order_if_qualifying(held: Mapping[str, Any], records: RecordArrays) -> RecordArrays | None:
    """The records in log order, or None when the night is not for this fold (see the module docstring)."""
    if len(records) == 0 or any(held[part] for part in _OPEN_PARTS):
        return None
    kind = records.kind
    if not set(kind.tolist()) <= SIMPLE_KINDS:
        return None
    if np.any(records.transaction_outcome[(kind == COMMIT) | (kind == OFFSET_TOMBSTONE)] == TRANSACTION_OPEN):
        return None
    recs = records.take(np.lexsort((records.record_partition, records.record_offset)))
    ro, rp = recs.record_offset, recs.record_partition
    if np.any((ro[1:] == ro[:-1]) & (rp[1:] == rp[:-1])):
        return None  # a position given twice: the record-by-record walk settles which one counts
    walked = _walked(recs)
    if np.any(recs.partition.null[walked]) or np.any(recs.offset.null[walked & (recs.kind == COMMIT)]):
        return None
    return recs


def _walked(recs: RecordArrays) -> np.ndarray:
    """The records the walk reads per partition: commits and offset tombstones, but for aborted ones."""
    commits = (recs.kind == COMMIT) | (recs.kind == OFFSET_TOMBSTONE)
    walked: np.ndarray = commits & (recs.transaction_outcome != ABORTED)
    return walked


def _ctx(value: int | None) -> Ints:
    return Ints(np.array([0 if value is None else value], dtype=np.int64), np.array([value is None]))


def continue_offsets_columns(  # noqa: PLR0915 - one pass of array steps, in the order of the rule
    state: Mapping[str, Any] | None,
    records: RecordArrays,
    *,
    group_id: str,
    stall_min_commits: int = 3,
    stall_min_ms: int = 60_000,
    horizon_ms: int = DEFAULT_HORIZON_MS,
) -> OffsetFoldResult | None:
    """`offset_fold.continue_offsets(state, records, group_id=...)` (no log lines, no sweeps) over columns, or
    None when the night does not qualify (see the module docstring). `horizon_ms` is the same parameter as
    there: how long the night's tombstones stay open to late evidence in the state."""
    held = _checked(state)
    recs = _in_log_order_if_qualifying(held, records)
    if recs is None:
        return None
    n, kind, ro, ts = len(recs), recs.kind, recs.record_offset, recs.timestamp_ms
    walked = _walked(recs)
    times = ts.values[~ts.null]
    watermark = max([*([int(times.max())] if len(times) else []),
                     *([held["watermark_ms"]] if held["watermark_ms"] is not None else [])], default=None)

    # The group's context at each record: the last GroupMetadata generation at or before it, else the state's.
    is_gen = (kind == GENERATION) | (kind == EPOCH)
    gens = np.flatnonzero(is_gen)
    member_count, consumer_members = _context_members(recs, held["consumer_members"])
    gen, members = recs.generation.take(gens), member_count.take(gens)
    before_gen = _concat(_ctx(held["generation"]), gen.take(slice(0, -1))) if len(gens) else gen
    before_members = _concat(_ctx(held["members"]), members.take(slice(0, -1))) if len(gens) else members
    changed = ~(_same(gen, before_gen) & _same(members, before_members))
    closes_all = np.zeros(n, dtype=bool)
    closes_all[gens[changed]] = True
    epoch = np.cumsum(closes_all)            # runs never cross an epoch
    last_gen = np.maximum.accumulate(np.where(is_gen, np.arange(n), -1))
    has_ctx = last_gen >= 0
    at = np.where(has_ctx, last_gen, 0)
    held_gen, held_members = _ctx(held["generation"]), _ctx(held["members"])
    ctx_gen = Ints(np.where(has_ctx, recs.generation.values[at], held_gen.values[0]),
                   np.where(has_ctx, recs.generation.null[at], held_gen.null[0]))
    ctx_members = Ints(np.where(has_ctx, member_count.values[at], held_members.values[0]),
                       np.where(has_ctx, member_count.null[at], held_members.null[0]))
    ctx_has = has_ctx | bool(held["has_generations"])
    with_members = ctx_has & ~ctx_members.null & (ctx_members.values != 0)   # where a run may start
    no_members = ctx_has & ~ctx_members.null & (ctx_members.values == 0)     # a commit here is a non-member's

    # The walked commits and offset tombstones, per partition (topic, partition) in log order. A tombstone
    # closes the partition's run and removes it: the next commit has no previous offset.
    c = np.flatnonzero(walked)
    c = c[np.lexsort((c, recs.partition.values[c], recs.topic_code[c]))]
    topic_code, part = recs.topic_code[c], recs.partition.values[c]
    offset, tomb = recs.offset.values[c], kind[c] == OFFSET_TOMBSTONE
    first = np.ones(len(c), dtype=bool)
    first[1:] = (topic_code[1:] != topic_code[:-1]) | (part[1:] != part[:-1])
    held_parts = {(p["topic"], p["partition"]): p for p in held["partitions"]}
    starts_at = np.flatnonzero(first)
    tps = [(recs.topic[c[i]], int(part[i])) for i in starts_at]
    held_of = [held_parts.get(tp) for tp in tps]
    previous = Ints(np.empty(len(c), dtype=np.int64), np.zeros(len(c), dtype=bool))
    previous.values[1:], previous.null[1:] = offset[:-1], tomb[:-1]
    expire = recs.expire_ms.take(c)
    previous_expire = Ints(np.empty(len(c), dtype=np.int64), np.zeros(len(c), dtype=bool))
    previous_expire.values[1:], previous_expire.null[1:] = expire.values[:-1], expire.null[:-1] | tomb[:-1]
    held_run = np.zeros(len(c), dtype=bool)
    for i, p in zip(starts_at, held_of, strict=True):
        previous.values[i] = p["last_offset"] if p is not None else 0
        previous.null[i] = p is None
        previous_expire.values[i] = p["last_expire_ms"] if p is not None and p["last_expire_ms"] is not None else 0
        previous_expire.null[i] = p is None or p["last_expire_ms"] is None
        held_run[i] = p is not None and p["run_count"] is not None
    delta = offset - previous.values
    c_epoch = epoch[c]
    non_member = no_members[c] & ~tomb
    rewind = ~previous.null & (delta < 0) & ~tomb
    flagged = non_member | rewind
    # A commit continues the partition's run when it repeats the run's offset in the run's epoch; where the
    # generation has no members no run starts, so there only a carried run goes on (from the first commit).
    same_epoch = np.empty(len(c), dtype=bool)
    same_epoch[1:] = c_epoch[1:] == c_epoch[:-1]
    same_epoch[first] = held_run[first] & (c_epoch[first] == 0)
    linked = same_epoch & ~previous.null & (delta == 0) & ~flagged & ~tomb
    broken = np.cumsum(~linked)
    segment = np.cumsum(first) - 1
    broken_before = (broken - (~linked))[starts_at]           # breaks before each partition's first commit
    unbroken = (broken - broken_before[segment]) == 0
    may_start = with_members[c] & ~tomb
    continues = np.where(may_start, linked, linked & unbroken)
    starts = ~continues & may_start
    in_run = continues | starts
    run_begins = starts | (first & continues)
    ends_next = np.zeros(len(c), dtype=bool)
    ends_next[:-1] = continues[1:] & ~first[1:]
    run_ends = in_run & ~ends_next
    begins, ends = np.flatnonzero(run_begins), np.flatnonzero(run_ends)

    rows: list[OffsetEventRow] = []
    walk_ctx = (held["generation"], held["members"])
    carried_run = {tp: _carried(p, *walk_ctx) for tp, p in held_parts.items() if p["run_count"] is not None}
    runs: list[tuple[tuple[str, int], _Run, int]] = []   # (partition, run, index of its last commit)
    segment_tp = dict(zip(starts_at.tolist(), tps, strict=True))
    segment_last = np.append(starts_at[1:] - 1, len(c) - 1) if len(c) else starts_at
    # Python sees only the runs that matter: carried ones, those long enough for a stall row, and each
    # partition's last (the state may keep it open); a fleet's commits mostly start a run of one.
    carries = first[begins] & continues[begins]
    count = ends - begins + 1
    t_first, t_last = ts.take(c[begins]), ts.take(c[ends])
    stalls = (~carries & (count >= stall_min_commits) & ~t_first.null & ~t_last.null
              & (t_last.values - t_first.values >= stall_min_ms))
    keep = carries | stalls | (ends == segment_last[segment[ends]])
    for b, e in zip(begins[keep].tolist(), ends[keep].tolist(), strict=True):
        tp = segment_tp[int(starts_at[segment[b]])]
        i_first, i_last = c[b], c[e]
        if first[b] and continues[b]:
            run = carried_run.pop(tp)
            run.count += e - b + 1
            run.last_ms = ts.item(i_last)
        else:
            run = _Run(int(offset[b]), ts.item(i_first), ts.item(i_last), int(ro[i_first]), e - b + 1,
                       ctx_gen.item(i_first), ctx_members.item(i_first), recs.metadata[i_first])
        runs.append((tp, run, e))
    for tp, run in carried_run.items():       # carried runs no commit went on with: their rows as they stand
        _stall_row(group_id, tp, run, stall_min_commits, stall_min_ms, rows)
    for tp, run, _ in runs:
        _stall_row(group_id, tp, run, stall_min_commits, stall_min_ms, rows)
    for j in np.flatnonzero(flagged).tolist():
        i = c[j]
        rows.append(_flagged_row(group_id, segment_tp[int(starts_at[segment[j]])], bool(non_member[j]),
                                 ts.item(i), int(ro[i]), int(offset[j]), previous.item(j), ctx_gen.item(i),
                                 ctx_members.item(i), bool(ctx_has[i]), recs.metadata[i]))

    # Offset tombstones, classified as the walk does (no log line: this fold takes no night with one), and
    # the settled ones of earlier nights, classified again (their rows change only with new evidence).
    classifier = Classifier(group_id, [], [], [])
    tombstones = []
    for j in np.flatnonzero(tomb).tolist():
        i, tp = c[j], segment_tp[int(starts_at[segment[j]])]
        t = _tombstone_input({"record_offset": int(ro[i]), "timestamp_ms": ts.item(i)}, topic=tp[0], partition=tp[1],
                             previous_offset=previous.item(j), previous_expire_ms=previous_expire.item(j),
                             generation=ctx_gen.item(i), group_members=ctx_members.item(i))
        tombstones.append((t, classifier.classify(t)))
    rows += [row for _, row in tombstones]
    settled, reclassified = classify_again(held["tombstones"], classifier, rows)
    withdrawn = sorted(set(reclassified) - {_key(row) for row in rows}, key=_key_order)

    def within_horizon(t: int | None) -> bool:
        return watermark is None or (t is not None and t >= watermark - horizon_ms)

    # The state after the last record: each partition's last commit, and its run unless an epoch closed it
    # (none where its last record is a tombstone).
    final_epoch = int(epoch[-1])
    with_commits = set(segment_tp.values())
    partitions = {tp: _partition(tp, p["last_offset"], p["last_expire_ms"],
                                 carried_run.get(tp) if final_epoch == 0 else None)
                  for tp, p in held_parts.items() if tp not in with_commits}
    last_run = {tp: (run, e) for tp, run, e in runs}            # each partition's latest run
    for s, last in zip(starts_at.tolist(), segment_last.tolist(), strict=True):
        tp = segment_tp[s]
        if tomb[last]:
            continue
        latest = last_run.get(tp)
        still_open = latest is not None and latest[1] == last and int(c_epoch[last]) == final_epoch
        partitions[tp] = _partition(tp, int(offset[last]), recs.expire_ms.item(c[last]),
                                    latest[0] if latest is not None and still_open else None)
    last_ctx = int(gens[-1]) if len(gens) else None
    next_state = {
        "version": STATE_VERSION,
        "watermark_ms": watermark,
        "generation": recs.generation.item(last_ctx) if last_ctx is not None else held["generation"],
        "members": member_count.item(last_ctx) if last_ctx is not None else held["members"],
        "has_generations": True if last_ctx is not None else bool(held["has_generations"]),
        "consumer_members": sorted(consumer_members),
        "lookback_classic_ms": _lookback(ts, _kind_in(kind, CONSUMER_LIVE), held["lookback_classic_ms"]),
        "lookback_consumer_ms": _lookback(ts, _kind_in(kind, CLASSIC_LIVE), held["lookback_consumer_ms"]),
        "partitions": [partitions[tp] for tp in sorted(partitions)],
        "group_tombstones_ms": [],
        "tombstones": open_tombstones([*settled, *tombstones], within_horizon),
        "events": [],
        "tail": [],
        "provisional": [],
    }
    return OffsetFoldResult(rows, withdrawn, next_state)


def _flagged_row(group_id: str, tp: tuple[str, int], non_member: bool, ts: int | None, record_offset: int,
                 offset: int, previous: int | None, generation: int | None, members: int | None,
                 has_generations: bool, metadata: str | None) -> OffsetEventRow:
    """A rewind's or a non-member commit's row, as `continue_offsets` writes it."""
    delta = None if previous is None else offset - previous
    common = dict(topic=tp[0], partition=tp[1], at=_time(ts), record_offset=record_offset, offset=offset,
                  previous_offset=previous, delta=delta, generation=generation, metadata=metadata)
    if non_member:
        return offset_row(group_id, NON_MEMBER_COMMIT, group_members=0,
                          explanation=explain_non_member(generation, delta), **common)
    assert delta is not None
    return offset_row(group_id, REWIND, group_members=members, inferred=False,
                      explanation=explain_rewind(delta, generation, members, has_generations), **common)


def _partition(tp: tuple[str, int], last_offset: int, last_expire_ms: int | None, run: _Run | None) -> dict[str, Any]:
    """A partition of the state, as `offset_fold._partition_state` writes it."""
    return {"topic": tp[0], "partition": tp[1], "last_offset": last_offset, "last_expire_ms": last_expire_ms,
            "run_first_record_offset": run.first_record_offset if run else None,
            "run_first_ms": run.first_ms if run else None, "run_last_ms": run.last_ms if run else None,
            "run_count": run.count if run else None, "run_metadata": run.metadata if run else None}


def _concat(a: Ints, b: Ints) -> Ints:
    return Ints(np.concatenate([a.values, b.values]), np.concatenate([a.null, b.null]))


def _carried(p: Mapping[str, Any], generation: int | None, members: int | None) -> _Run:
    return _Run(p["last_offset"], p["run_first_ms"], p["run_last_ms"], p["run_first_record_offset"], p["run_count"],
                generation, members, p["run_metadata"])


def _kind_in(kind: np.ndarray, kinds: Sequence[str]) -> np.ndarray:
    out = np.zeros(len(kind), dtype=bool)
    for k in kinds:
        out |= kind == k
    return out


def _context_members(recs: RecordArrays, held_members: Sequence[str]) -> tuple[Ints, set[str]]:
    """Each context record's member count, as the walk sees it: a classic generation's own, a KIP-848
    epoch's the members joined and not left before it (its member records, in log order, from the carried
    set); and the KIP-848 members after the last record. A Python step over the group-level records only."""
    count = Ints(np.zeros(len(recs), dtype=np.int64), np.ones(len(recs), dtype=bool))
    gens = np.flatnonzero(recs.kind == GENERATION)
    count.values[gens], count.null[gens] = recs.member_count.values[gens], recs.member_count.null[gens]
    members = set(held_members)
    kinds, ids = recs.kind, recs.member_id
    for i in np.flatnonzero(_kind_in(kinds, (EPOCH, MEMBER_JOINED, MEMBER_LEFT))).tolist():
        if kinds[i] == MEMBER_JOINED:
            members.add(ids[i])
        elif kinds[i] == MEMBER_LEFT:
            members.discard(ids[i])
        else:
            count.values[i], count.null[i] = len(members), False
    return count, members


def _lookback(ts: Ints, live: np.ndarray, carried: int | None) -> int | None:
    """`offset_fold._lookback` over all the records: for each record of the other protocol's live kinds
    (`live`), the oldest time from it to the end (a record without a time: none older can be reached); the
    greatest of those, or the carried time capped by every record's."""
    t = np.where(ts.null, _MIN, ts.values)
    oldest_from = np.minimum.accumulate(t[::-1])[::-1]
    through = min(carried if carried is not None else _MIN, int(oldest_from[0]))
    value = max(int(oldest_from[live].max()), through) if np.any(live) else through
    return value if value > _MIN else None
