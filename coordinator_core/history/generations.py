"""One group's generation history: one ``GenerationRow`` per classic generation or KIP-848 group epoch.

``group_history(records, events)`` works from the records alone, the log events alone, or both:

* records give the generations that completed (GroupMetadata, KIP-848 epoch records), their members and
  assignments, and the time each assignment was stored (and, from a v2+ GroupMetadata record, when the
  generation's join phase ended);
* log events give when each round started and when its join phase ended, the generations that never
  completed, and the reasons;
* both are joined by generation (or epoch) number.

Rows come in the group's order (log order of the records, else time), across protocol changes: a classic
group upgraded to the consumer protocol continues with rows of ``group_protocol == "consumer"`` whose first
row has the cause ``group_protocol_migration``.
"""

from __future__ import annotations

import copy
import hashlib
import pickle
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from coordinator_core.history import causes as cz
from coordinator_core.history._draft import Draft
from coordinator_core.history.classic import (
    draft_from_placeholder,
    draft_from_record,
    drafts_from_logs,
    is_placeholder,
    members_from_logs,
    restore_same_generation,
)
from coordinator_core.history.consumer import CONSUMER_GROUP_KINDS, drafts_from_consumer_logs
from coordinator_core.history.inputs import (
    GroupRecord,
    as_events,
    as_group_records,
    attribute_to_groups,
    committed_topic_ids,
    member_groups,
    member_scoped,
    millis_between,
    record_time,
)
from coordinator_core.history.model import (
    CLASSIC,
    CLIENT_REJOIN,
    CONSUMER,
    CREATED,
    EMPTY,
    ENDED_BY_GROUP_DELETED,
    ENDED_BY_NEXT_GENERATION,
    ENDED_BY_PROTOCOL_CHANGE,
    GROUP_CREATED,
    MISSING,
    NEVER_COMPLETED,
    STATIC_RESTART,
    UNKNOWN_CAUSE,
    CoordinatorLoad,
    GenerationMember,
    GenerationRow,
    MemberIdChange,
    PartitionHandover,
    PartitionMove,
)
from coordinator_core.history.state import MAX_REMEMBERED_CHANGES, GenerationState, RowKey, RowsContext
from coordinator_core.logs import CoordinatorEvent
from coordinator_core.logs import events as ev

#: A gap wider than this is reported as its first and last missing numbers only (a history that lost
#: thousands of generations is better told in two rows than in thousands).
MAX_GAP_ROWS = 1000


def group_history(
    records: Iterable[Any] = (),
    events: Iterable[CoordinatorEvent] = (),
    *,
    group_id: str | None = None,
    topic_names: Mapping[str, str] | None = None,
) -> list[GenerationRow]:
    """Rebuilds one group's generations from its records and/or its coordinator log events.

    The same fold the nightly job runs run by run (``fold_generations``), started from an empty state with
    every input at once.

    Args:
        records: the group's records in any order (``GroupRecord`` or ``(offset, timestamp_ms, Record)``);
            they are put in offset order. Offset commits are ignored here (see ``offset_history``).
        events: the group's parsed log lines (broker and client). Lines of other groups are dropped; lines
            with no group (partition loads) are kept, so pass only those of the group's partition.
        group_id: the group; read from the records or events when omitted.
        topic_names: topic id -> name, for KIP-848 partitions. The group's own records name most topics
            (offset commits of version 4 carry the topic id beside the name; a partition-metadata record
            written up to 4.0 lists them); this mapping, e.g. every topic of the cluster, adds the rest.

    Returns:
        One row per generation (classic) or group epoch (KIP-848), in the group's order, with gaps as
        ``never_completed`` (classic) or ``missing`` (KIP-848) rows.
    """
    return fold_generations(None, records, events, group_id=group_id, topic_names=topic_names,
                            reopen=None).rows


@dataclass(frozen=True)
class FoldResult:
    """What one step of the fold gives: the state to carry, the rows that are new or changed since the
    state was written, the row keys that no longer exist, and the log events too late to apply."""

    state: GenerationState
    rows: list[GenerationRow]
    removed: list[RowKey]
    late_events: int


#: Log lines this much older than the tail's start are still kept with it: a coordinator can log the line
#: that starts a generation a moment before the record of the previous one is appended, and client hosts'
#: clocks drift from the broker's. (Lines before the start explain nothing in the tail; they only cost room.)
EVENT_SLACK = timedelta(minutes=1)

#: Drafts kept in the tail at most, whatever the reopen horizon (a group in a storm makes thousands a day).
MAX_TAIL = 256


def fold_generations(  # noqa: C901, PLR0915 - grandfathered: the fold's one pass, splitting it is not done yet
    state: GenerationState | None,
    records: Iterable[Any] = (),
    events: Iterable[CoordinatorEvent] = (),
    *,
    group_id: str | None = None,
    topic_names: Mapping[str, str] | None = None,
    reopen: timedelta | None = timedelta(hours=48),
    max_tail: int = MAX_TAIL,
) -> FoldResult:
    """Continues a group's generation history from ``state`` with its new records and log events.

    Records come in log order after every record the state has seen (the archive appends each
    ``__consumer_offsets`` partition in offset order). Log events may come late: one at or after the
    tail's start (see ``coordinator_core.history.state``) is applied, reopening the rows it explains; an
    older one is counted in ``late_events`` and dropped. ``reopen`` (None: keep everything, as a one-shot
    rebuild does) is how far behind the newest input the tail reaches. The state passed in is not changed.
    """
    state = copy.deepcopy(state) if state is not None else GenerationState()
    new_records = as_group_records(records)
    gid = state.group_id or group_id or _group_of(new_records, events)
    state.group_id = gid
    # --- new events: the group's own, in a deterministic order; too late ones counted ---------------------
    fresh = _events_of(gid, _attributed(gid, as_events(events), new_records, state), state.offsets_partitions)
    late = 0
    if state.events_floor is not None:
        floor = state.events_floor - EVENT_SLACK
        kept = [e for e in fresh if e.timestamp is not None and e.timestamp > floor]
        late, fresh = len(fresh) - len(kept), kept
    group_events = sorted(state.events + fresh, key=_event_order)
    # --- new records: continue the record drafts -----------------------------------------------------------
    reader = state.reader
    reader.names.update(dict(topic_names or {}))
    reader.names.update(committed_topic_ids(new_records))
    classic_tail = state.classic_tail
    for record in new_records:
        kind = record.record.kind
        if kind == "group_metadata":
            value = record.record.value
            last = classic_tail[-1] if classic_tail else None
            if value is None:
                if last is not None and last.ended_by is None:
                    last.ended_at, last.ended_by = record_time(record), ENDED_BY_GROUP_DELETED
                continue
            if is_placeholder(value):
                classic_tail.append(draft_from_placeholder(record))
                continue
            if last is not None and last.generation == value.generation and last.ended_by is None:
                restore_same_generation(last, record, value)
            else:
                classic_tail.append(draft_from_record(record, value))
        elif kind in CONSUMER_GROUP_KINDS:
            reader.feed(record)
    seen = [t for t in (*(record_time(r) for r in new_records), *(e.timestamp for e in fresh)) if t is not None]
    if seen:
        state.watermark = max(seen) if state.watermark is None else max(state.watermark, *seen)

    # --- the pipeline on copies (joining log lines changes drafts) ----------------------------------------
    classic_work, reader_work = copy.deepcopy((classic_tail, reader))
    consumer_work = reader_work.finish()
    first_classic = classic_work[0].generation if classic_work else None
    first_consumer = consumer_work[0].generation if consumer_work else None
    classic_work = _with_logs(classic_work, _numbered_from(drafts_from_logs(group_events), first_classic),
                              group_events)
    consumer_work = _with_logs(consumer_work, _numbered_from(drafts_from_consumer_logs(group_events),
                                                             first_consumer), group_events)
    drafts = _merge(_with_gaps(classic_work, NEVER_COMPLETED), _with_gaps(consumer_work, MISSING))
    _set_ends(drafts)
    start = _tail_start(drafts, state.watermark, reopen, max_tail)
    rows, context = _rows(gid or "", drafts, group_events, state.context, snapshot_at=start)

    # --- rows that changed, rows that went away -----------------------------------------------------------
    changed: list[GenerationRow] = []
    digests: dict[RowKey, bytes] = {}
    kept_digests: dict[RowKey, bytes] = {}
    for i, row in enumerate(rows):
        key = row_key(row)
        digest = hashlib.blake2b(pickle.dumps(row, protocol=4), digest_size=16).digest()
        digests[key] = digest
        if state.emitted.get(key) != digest:
            changed.append(row)
        if i >= start:
            kept_digests[key] = digest
    removed = [k for k in state.emitted if k not in digests]

    # --- the new tail ----------------------------------------------------------------------------------------
    cut = next((d.first_offset for d in drafts[start:] if d.from_records and d.first_offset is not None), None)
    if start > 0 and _cut_is_clean(drafts, start, cut):
        state.classic_tail = [d for d in classic_tail if cut is not None and d.first_offset is not None
                              and d.first_offset >= cut]
        reader.drafts = [d for d in reader.drafts if cut is not None and d.first_offset is not None
                         and d.first_offset >= cut]
        state.context = context
        state.events_floor = context.last_settled if context.last_settled is not None else state.events_floor
        state.emitted = kept_digests
    else:
        state.emitted = digests
    keep_after = state.events_floor - EVENT_SLACK if state.events_floor is not None else None
    state.events = [e for e in group_events
                    if keep_after is None or (e.timestamp is not None and e.timestamp > keep_after)]
    return FoldResult(state, changed, removed, late)


def row_key(row: GenerationRow) -> RowKey:
    """A row's identity within its group (the grain of group_generations, less cluster and group)."""
    return (row.group_protocol, row.generation, row.record_offset)


def _event_order(e: CoordinatorEvent) -> tuple[Any, ...]:
    """Time, then where the line was read: the same order whichever run brought the line."""
    return (e.timestamp, e.source or "", e.line_number or 0, e.event_type, e.message)


def _numbered_from(from_logs: dict[int, Draft], first: int | None) -> dict[int, Draft]:
    """Log drafts of the tail: a generation below the tail's first one was written before the tail."""
    if first is None:
        return from_logs
    return {g: d for g, d in from_logs.items() if g >= first}


def _tail_start(drafts: list[Draft], watermark: datetime | None, reopen: timedelta | None, max_tail: int) -> int:
    """Index of the first draft to keep open: the last two always, and every one within ``reopen`` of the
    watermark, at most ``max_tail``; never a gap row (it is made from its neighbours)."""
    if reopen is None or len(drafts) <= 2:
        return 0
    latest = len(drafts) - 2
    cutoff = watermark - reopen if watermark is not None else None
    start = max(0, len(drafts) - max_tail)
    while start < latest:
        d = drafts[start]
        at = d.settled_at or d.first_seen_at
        if (d.from_records or d.from_logs) and (cutoff is None or at is None or at >= cutoff):
            break
        start += 1
    while start > 0 and not (drafts[start].from_records or drafts[start].from_logs):
        start -= 1
    return start


def _cut_is_clean(drafts: list[Draft], start: int, cut: int | None) -> bool:
    """The tail can start at ``start`` only if record drafts before it all precede ``cut`` in the log and
    those from it on all follow (log-only drafts sorted among them could break that)."""
    if cut is None:
        return False
    before = all(d.first_offset is None or d.first_offset < cut for d in drafts[:start])
    after = all(d.first_offset is None or d.first_offset >= cut for d in drafts[start:])
    return before and after


def _events_of(group_id: str | None, events: list[CoordinatorEvent], partitions: set[int]) -> list[CoordinatorEvent]:
    """The group's own lines, and group-less lines (partition loads) of the group's ``__consumer_offsets``
    partition, read from the group's own broker lines; group-less lines of other partitions are dropped.
    ``partitions`` (the ones seen so far) is updated."""
    own = [e for e in events if e.group_id == group_id]
    partitions.update(e.offsets_partition for e in own if e.offsets_partition is not None)
    return [e for e in events if e.group_id == group_id or (e.group_id is None and not member_scoped(e) and (
        not partitions or e.offsets_partition is None or e.offsets_partition in partitions))]


def _attributed(group_id: str | None, events: list[CoordinatorEvent], records: Sequence[GroupRecord],
                state: GenerationState) -> list[CoordinatorEvent]:
    """Member-scoped lines that name no group (``inputs.member_scoped``), given to this group when their member
    id is one of its members (in its records, its carried drafts or its own lines); the nightly job attributes
    them before the fold (jobs/history/inputs.py), against the whole cluster, and this does the same for direct
    callers. The others stay group-less and ``_events_of`` leaves them out."""
    if group_id is None or not any(member_scoped(e) for e in events):
        return events
    pairs = [(m.member_id, group_id) for r in records if r.record.kind == "group_metadata" and r.record.value
             is not None for m in (getattr(r.record.value, "members", None) or ())]
    pairs += [(m.member_id, group_id) for d in (*state.classic_tail, *state.reader.drafts) for m in d.members or ()]
    own = [e for e in (*state.events, *events) if e.group_id == group_id]
    return attribute_to_groups(events, member_groups(own, pairs))[0]


def _group_of(records: Sequence[Any], events: Iterable[CoordinatorEvent]) -> str | None:
    for r in records:
        key = r.record.key
        group = getattr(key, "group", None) or getattr(key, "group_id", None)
        if group:
            return str(group)
    for e in events:
        if e.group_id:
            return e.group_id
    return None


def _with_logs(drafts: list[Draft], from_logs: dict[int, Draft], events: Sequence[CoordinatorEvent]) -> list[Draft]:
    """Joins log drafts onto record drafts by number; adds the generations only the logs know."""
    for d in drafts:
        logged = from_logs.pop(d.generation, None)
        if logged is None:
            continue
        d.from_logs = True
        d.started_at = d.started_at or logged.started_at
        # A v2+ record's current_state_timestamp and the broker's "Stabilized group" line tell the same
        # instant (the line is logged right after the state change: the same millisecond or the next); the
        # record's is the state change itself. The line's stands where the record has none (v0/v1).
        d.stabilized_at = d.stabilized_at or logged.stabilized_at
        d.stored_at = d.stored_at or logged.stored_at
        d.leader = d.leader or logged.leader
        d.protocol = d.protocol or logged.protocol
        d.target_assignment_epoch = d.target_assignment_epoch or logged.target_assignment_epoch
        d.numbered_events.extend(logged.numbered_events)
    for generation, logged in from_logs.items():
        if logged.group_protocol == CLASSIC:
            members = members_from_logs(events, generation)
            logged.members = members or ([] if logged.outcome == EMPTY else None)
        drafts.append(logged)
    # Keep the records' order; a logs-only draft goes after the last draft with a lower number.
    if any(not d.from_records for d in drafts):
        drafts.sort(key=lambda d: d.generation)
    return drafts


def _with_gaps(drafts: list[Draft], outcome: str) -> list[Draft]:
    """Inserts a row for every number skipped between two known ones (never the ones before the first)."""
    out: list[Draft] = []
    for d in drafts:
        if out and d.generation > out[-1].generation + 1 and out[-1].ended_by != ENDED_BY_GROUP_DELETED:
            previous = out[-1]
            missing = list(range(previous.generation + 1, d.generation))
            if len(missing) > MAX_GAP_ROWS:
                missing = [missing[0], missing[-1]]
            out.extend(Draft(group_protocol=d.group_protocol, generation=number, outcome=outcome,
                             protocol_type=d.protocol_type, group_epoch=number if d.group_epoch else None)
                       for number in missing)
        out.append(d)
    return out


def _anchor(drafts: list[Draft]) -> list[tuple[int | None, datetime | None]]:
    """Per draft, the offset and time to order it by, a gap row taking its predecessor's."""
    anchors: list[tuple[int | None, datetime | None]] = []
    offset: int | None = None
    time: datetime | None = None
    for d in drafts:
        offset = d.first_offset if d.first_offset is not None else offset
        time = d.first_seen_at or time
        anchors.append((offset, time))
    return anchors


def _merge(classic: list[Draft], consumer: list[Draft]) -> list[Draft]:
    """The two protocols' rows in the group's order: by record offset when both sides have records,
    else by time."""
    if not classic or not consumer:
        return classic + consumer
    a, b = _anchor(classic), _anchor(consumer)
    by_offset = all(x[0] is not None for x in a + b)
    out: list[Draft] = []
    i = j = 0
    while i < len(classic) and j < len(consumer):
        ka = a[i][0] if by_offset else a[i][1]
        kb = b[j][0] if by_offset else b[j][1]
        take_classic = kb is None or (ka is not None and ka <= kb)  # type: ignore[operator]
        if take_classic:
            out.append(classic[i])
            i += 1
        else:
            out.append(consumer[j])
            j += 1
    return out + classic[i:] + consumer[j:]


# ---------------------------------------------------------------------------------------------------
# Diff and causes


def _owners(members: Sequence[GenerationMember]) -> dict[tuple[str, int], str]:
    return {(p.topic, p.partition): m.member_id for m in members for p in m.assigned_partitions}


def _id_changes(base: Draft, d: Draft, departed: dict[tuple[str | None, str | None], tuple[str, int]]
                ) -> list[MemberIdChange]:
    """Static restarts and same-client rejoins between ``base`` and ``d`` (and earlier departures)."""
    assert base.members is not None and d.members is not None
    before = {m.member_id: m for m in base.members}
    after = {m.member_id: m for m in d.members}
    joined = [after[i] for i in sorted(after.keys() - before.keys())]
    left = [before[i] for i in sorted(before.keys() - after.keys())]
    changes: list[MemberIdChange] = []
    old_by_instance = {m.group_instance_id: m for m in left if m.group_instance_id}
    paired: set[str] = set()
    for m in joined:
        old = old_by_instance.get(m.group_instance_id) if m.group_instance_id else None
        if old is not None:
            changes.append(MemberIdChange(STATIC_RESTART, old.member_id, m.member_id, m.group_instance_id,
                                          m.client_id, m.client_host, base.generation, d.stored_at))
            paired |= {old.member_id, m.member_id}

    def key(m: GenerationMember) -> tuple[str | None, str | None]:
        return (m.client_id, m.client_host)

    dynamic_left = [m for m in left if m.member_id not in paired and not m.group_instance_id]
    dynamic_joined = [m for m in joined if m.member_id not in paired and not m.group_instance_id]
    left_keys = [key(m) for m in dynamic_left]
    joined_keys = [key(m) for m in dynamic_joined]
    for m in dynamic_joined:
        k = key(m)
        if m.client_id is None or joined_keys.count(k) != 1:
            continue
        if left_keys.count(k) == 1:
            old = next(o for o in dynamic_left if key(o) == k)
            changes.append(MemberIdChange(CLIENT_REJOIN, old.member_id, m.member_id, None, m.client_id,
                                          m.client_host, base.generation, d.stored_at))
            paired.add(old.member_id)
        elif left_keys.count(k) == 0 and k in departed:
            old_id, generation = departed.pop(k)
            changes.append(MemberIdChange(CLIENT_REJOIN, old_id, m.member_id, None, m.client_id, m.client_host,
                                          generation, d.stored_at))
    for m in dynamic_left:
        if m.member_id not in paired and left_keys.count(key(m)) == 1:
            departed[key(m)] = (m.member_id, base.generation)
    return changes


def _set_ends(drafts: list[Draft]) -> None:
    """Each draft ends where the next one starts (a deleted group's last draft where it was deleted)."""
    for i, d in enumerate(drafts):
        nxt = drafts[i + 1] if i + 1 < len(drafts) else None
        if nxt is None:
            continue
        if d.ended_by == ENDED_BY_GROUP_DELETED and nxt.group_protocol == d.group_protocol:
            continue  # deleted, then created again under the same id
        d.ended_at = nxt.first_seen_at or d.ended_at
        if d.ended_at is not None and d.stored_at is not None and d.ended_at < d.stored_at:
            # The coordinator logs the next "Preparing to rebalance" before the append of this
            # generation's record completes (seen with 3.7+'s generation-0 placeholder): the log line can
            # be a millisecond older than the record. A generation cannot end before it was stored.
            d.ended_at = d.stored_at
        d.ended_by = ENDED_BY_PROTOCOL_CHANGE if nxt.group_protocol != d.group_protocol else ENDED_BY_NEXT_GENERATION


def _rows(group_id: str, drafts: list[Draft], events: Sequence[CoordinatorEvent], context: RowsContext,  # noqa: C901, PLR0912, PLR0915 - grandfathered: one pass with the row context in locals, to split later
          snapshot_at: int) -> tuple[list[GenerationRow], RowsContext]:
    """The rows of ``drafts``, continuing from ``context``; also the context as it stands before draft
    ``snapshot_at`` (where the next run's tail starts)."""
    static_events = [e for e in events if e.event_type in (ev.STATIC_MEMBER_REPLACED, ev.CG_STATIC_MEMBER_REPLACED)]
    loads = [e for e in events if e.event_type == ev.GROUP_LOADED and e.group_id == group_id and e.timestamp]
    explaining_events = cz.ExplainingEvents(events)
    rows: list[GenerationRow] = []
    base_index = -1
    last_settled: datetime | None = context.last_settled
    departed = copy.copy(context.departed)
    base: Draft | None = context.base
    revoked_by: dict[int, dict[tuple[str, int], str]] = {}   # draft index -> partition -> owner before
    if context.base_revoked:
        revoked_by[-1] = context.base_revoked
    reported: list[tuple[str, str]] = list(context.reported_changes)
    snapshot = context
    for i, d in enumerate(drafts):
        previous = drafts[i - 1] if i else context.previous
        if i == snapshot_at:
            snapshot = RowsContext(previous, base, revoked_by.get(base_index), last_settled, copy.copy(departed),
                                   reported[-MAX_REMEMBERED_CHANGES:])
        # --- members and partitions -----------------------------------------------------------------
        joined: list[str] = []
        left: list[str] = []
        kept: list[str] = []
        changes: list[MemberIdChange] = list(d.id_changes)
        moves: list[PartitionMove] = []
        kept_partitions = 0
        revoked_then_assigned: list[PartitionMove] = [
            PartitionMove(t, p, a, b, d.generation) for t, p, a, b in d.revoked_then_assigned]
        cooperative_round: int | None = 2 if revoked_then_assigned else None
        diffable = (base is not None and base.members is not None and d.members is not None
                    and base.members_from_records and d.members_from_records)
        if diffable:
            assert base is not None and base.members is not None and d.members is not None
            before_ids = {m.member_id for m in base.members}
            after_ids = {m.member_id for m in d.members}
            joined, left, kept = sorted(after_ids - before_ids), sorted(before_ids - after_ids), sorted(
                after_ids & before_ids)
            changes += _id_changes(base, d, departed)
            same_naming = base.group_protocol == d.group_protocol or (
                base.partition_names_resolved and d.partition_names_resolved)
            if same_naming:
                old, new = _owners(base.members), _owners(d.members)
                for tp in sorted(old.keys() | new.keys()):
                    if old.get(tp) == new.get(tp):
                        kept_partitions += 1
                    else:
                        moves.append(PartitionMove(tp[0], tp[1], old.get(tp), new.get(tp), None))
                subscribed = {t for m in d.members for t in m.subscribed_topics}
                revoked = {tp: owner for tp, owner in old.items() if tp not in new and tp[0] in subscribed}
                if revoked and d.members:
                    revoked_by[i] = revoked
                    cooperative_round = 1
                for tp, first_owner in sorted(revoked_by.get(base_index, {}).items()):
                    if tp in new:
                        revoked_then_assigned.append(
                            PartitionMove(tp[0], tp[1], first_owner, new[tp], base.generation))
                if base_index in revoked_by and any(tp in new for tp in revoked_by[base_index]):
                    cooperative_round = 2
        # --- causes -----------------------------------------------------------------------------------
        after = last_settled
        until = d.settled_at
        last_settled = d.settled_at or last_settled
        explaining = explaining_events.window(after, until) if until is not None and d.outcome != CREATED else []
        trigger = next((e for e in d.numbered_events
                        if e.event_type in (ev.REBALANCE_PREPARED, ev.CG_EPOCH_BUMPED)), None)
        primary, causes, trigger_member = cz.causes_from_logs(trigger, explaining)
        inferred = False
        inference: str | None = None
        if primary in (ev.METADATA_CHANGE, ev.LEADER_REJOIN) and (cooperative_round == 2 or (
                trigger is not None and "need to revoke partitions" in (trigger.reason or ""))):
            # "Updating metadata for member ..." / "Leader ... re-joining group during Stable" with the client
            # reason "need to revoke partitions ...": the member rejoins for the second round of a cooperative
            # rebalance, not for a metadata change.
            causes = [c for c in causes if c not in (primary, ev.COOPERATIVE_SECOND_ROUND)]
            primary = ev.COOPERATIVE_SECOND_ROUND
            causes.insert(0, primary)
        if primary is None and previous is not None and previous.group_protocol != d.group_protocol:
            primary, causes, inferred = ev.GROUP_PROTOCOL_MIGRATION, [ev.GROUP_PROTOCOL_MIGRATION], True
            inference = f"the group changed from the {previous.group_protocol} to the {d.group_protocol} protocol"
        if d.outcome == CREATED:
            primary, causes, trigger_member = GROUP_CREATED, [GROUP_CREATED], None
        if primary is None and d.record_causes:
            primary, trigger_member = d.record_causes[0]
            causes = []
            for c, _ in d.record_causes:
                if c not in causes:
                    causes.append(c)
            inferred = True
            inference = "from the member records written before the epoch bump"
        if primary is None:
            primary, causes, inference = _infer(d, base, previous, joined, left, changes, cooperative_round)
            inferred = True
        # Logs alone: the members the explaining lines name.
        if base is None and d.members_from_records and d.members and d.generation == 1:
            joined = sorted(m.member_id for m in d.members)   # a new group: everyone joined
        if not diffable and not d.members_from_records:
            naming = explaining + ([trigger] if trigger is not None else [])
            joined = sorted({e.member_id for e in naming if e.member_id and e.cause_class in cz.JOIN_CAUSES})
            left = sorted({e.member_id for e in naming if e.member_id and e.cause_class in cz.LEAVE_CAUSES})
        evidence = [cz.evidence_of(e) for e in explaining] + d.record_evidence
        evidence += [cz.evidence_of(e) for e in d.numbered_events]
        for e in static_events:
            pair = (e.related_member_id, e.member_id)
            if not e.member_id or not e.related_member_id:
                continue
            owner = next((c for c in changes if (c.old_member_id, c.new_member_id) == pair), None)
            in_force = e.timestamp is not None and d.settled_at is not None and d.settled_at <= e.timestamp and (
                d.ended_at is None or e.timestamp < d.ended_at)
            if owner is not None or (in_force and pair not in reported and not any(
                    (c.old_member_id, c.new_member_id) == pair for r in rows for c in r.member_id_changes)):
                if owner is None:
                    changes.append(MemberIdChange(STATIC_RESTART, e.related_member_id, e.member_id,
                                                  e.group_instance_id, e.client_id, e.host, d.generation,
                                                  e.timestamp))
                evidence.append(cz.evidence_of(e))
        evidence.sort(key=lambda x: (x.at is None, x.at.timestamp() if x.at is not None else 0.0))
        consumer_row = d.group_protocol == CONSUMER
        rows.append(GenerationRow(
            group_id=group_id,
            group_protocol=d.group_protocol,
            generation=d.generation,
            outcome=d.outcome,
            protocol_type=d.protocol_type,
            protocol=d.protocol,
            leader=d.leader,
            group_epoch=d.group_epoch,
            target_assignment_epoch=d.target_assignment_epoch,
            member_count=d.member_count if d.member_count is not None else (
                len(d.members) if d.members is not None and d.members_from_records else None),
            members=tuple(d.members or ()),
            rebalance_started_at=d.started_at,
            stabilized_at=d.stabilized_at,
            assignment_stored_at=d.stored_at,
            ended_at=d.ended_at,
            ended_by=d.ended_by,
            rebalance_ms=millis_between(d.started_at, _latest(d.stabilized_at, d.stored_at)),
            join_ms=millis_between(d.started_at, d.stored_at if consumer_row else d.stabilized_at),
            sync_ms=millis_between(d.stored_at, d.stabilized_at) if consumer_row
            else millis_between(d.stabilized_at, d.stored_at),
            lifetime_ms=millis_between(_latest(d.stabilized_at, d.stored_at), d.ended_at),
            previous_generation=previous.generation if previous is not None else None,
            members_joined=tuple(joined),
            members_left=tuple(left),
            members_kept=tuple(kept),
            member_id_changes=tuple(changes),
            static_restarts=sum(1 for c in changes if c.kind == STATIC_RESTART),
            partitions_moved=tuple(moves),
            partitions_kept=kept_partitions,
            partitions_revoked_then_assigned=tuple(revoked_then_assigned),
            cooperative_round=cooperative_round,
            cause=primary,
            causes=tuple(causes),
            cause_inferred=inferred,
            inference=inference,
            trigger_member_id=trigger_member,
            evidence=tuple(evidence),
            from_records=d.from_records,
            from_logs=d.from_logs,
            record_offset=d.first_offset,
            record_count=d.record_count,
            coordinator_loads=_loads_in_force(d, loads),
            partition_handovers=tuple(PartitionHandover(*h) for h in d.handovers),
        ))
        reported.extend((c.old_member_id, c.new_member_id) for c in changes)
        if d.members is not None and d.outcome not in (NEVER_COMPLETED, MISSING):
            base, base_index = d, i
    return rows, snapshot


def _loads_in_force(d: Draft, loads: Sequence[CoordinatorEvent]) -> tuple[CoordinatorLoad, ...]:
    """The group loads logged from the start of ``d``'s round (its first known time) until the next round
    started: rows follow each other, so each load lands in one row, the one in force when it happened."""
    begin = d.started_at or d.stabilized_at or d.stored_at
    if begin is None or not loads:
        return ()
    return tuple(CoordinatorLoad(e.broker_id, e.timestamp, e.offsets_partition, e.coordinator_epoch, e.cause_class,
                                 e.source, e.line_number)
                 for e in loads if e.timestamp is not None and begin <= e.timestamp
                 and (d.ended_at is None or e.timestamp < d.ended_at))


def _latest(a: datetime | None, b: datetime | None) -> datetime | None:
    if a is None or b is None:
        return a or b
    return max(a, b)


def _infer(d: Draft, base: Draft | None, previous: Draft | None, joined: list[str], left: list[str],
           changes: list[MemberIdChange], cooperative_round: int | None) -> tuple[str, list[str], str]:
    """The cause from the records: see the module docstring of ``causes``."""
    if d.outcome in (NEVER_COMPLETED, MISSING):
        return UNKNOWN_CAUSE, [UNKNOWN_CAUSE], (
            "generation number skipped in the stored records: the round never completed (a member joined or "
            "left during the sync phase, the leader failed) or its record was lost before archiving"
            if d.outcome == NEVER_COMPLETED else
            "group epoch never seen although later ones were (every epoch bump is written and logged, so "
            "this one's record or line was lost)")
    if base is None or base.members is None or d.members is None:
        if (previous is None and d.generation == 1) or (d.group_protocol == CONSUMER and base is None):
            return ev.NEW_MEMBER, [ev.NEW_MEMBER], "the group's first generation: its first members joined"
        return UNKNOWN_CAUSE, [UNKNOWN_CAUSE], "no earlier generation with known members to compare with"
    static_new = {c.new_member_id for c in changes if c.kind == STATIC_RESTART and c.since_generation != d.generation}
    static_old = {c.old_member_id for c in changes if c.kind == STATIC_RESTART and c.since_generation != d.generation}
    real_joined = [m for m in joined if m not in static_new]
    real_left = [m for m in left if m not in static_old]
    if real_joined and real_left:
        return ev.NEW_MEMBER, [ev.NEW_MEMBER, ev.MEMBER_LEFT_CAUSE], (
            f"members {real_joined} joined and {real_left} left (a leave, a session timeout and a poll timeout "
            "look the same in the records)")
    if real_joined:
        return ev.NEW_MEMBER, [ev.NEW_MEMBER], f"members {real_joined} joined"
    if real_left or (d.outcome == EMPTY and left):
        return ev.MEMBER_LEFT_CAUSE, [ev.MEMBER_LEFT_CAUSE], (
            f"members {real_left} left (a leave, a session timeout and a poll timeout look the same in the "
            "records)")
    if static_new:
        return ev.STATIC_MEMBER_REPLACED_CAUSE, [ev.STATIC_MEMBER_REPLACED_CAUSE], (
            f"static members restarted with new member ids {sorted(static_new)}")
    if cooperative_round == 2:
        return ev.COOPERATIVE_SECOND_ROUND, [ev.COOPERATIVE_SECOND_ROUND], (
            "same members; partitions revoked in the previous round are assigned in this one")
    before = {m.member_id: m for m in base.members}
    if any(before[m.member_id].subscribed_topics != m.subscribed_topics for m in d.members if m.member_id in before):
        return ev.METADATA_CHANGE, [ev.METADATA_CHANGE], "same members; a subscription changed"
    if base.protocol != d.protocol:
        return ev.METADATA_CHANGE, [ev.METADATA_CHANGE], (
            f"same members; the selected assignor changed from {base.protocol} to {d.protocol}")
    if _owners(base.members) != _owners(d.members):
        return ev.METADATA_CHANGE, [ev.METADATA_CHANGE], (
            "same members and subscriptions, another assignment (topic metadata changed, e.g. partitions added)")
    return UNKNOWN_CAUSE, [UNKNOWN_CAUSE], "same members, subscriptions and assignment: the records cannot tell why"
