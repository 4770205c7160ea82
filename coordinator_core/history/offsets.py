"""One group's offset history: rewinds, commits by non-members, stalls, and expired or deleted offsets.

Offset commit records carry no member id and no generation, so who committed is inferred from where the
commit sits in the group's log, between its GroupMetadata (or KIP-848 epoch) records:

* The coordinator accepts a commit from a member only for the current generation (a stale generation gets
  ILLEGAL_GENERATION, an unknown member UNKNOWN_MEMBER_ID). A commit without a generation (-1: the admin
  client's ``alterConsumerGroupOffsets``, ``kafka-consumer-groups --reset-offsets``, an ``assign()``-based
  consumer) is accepted only while the group is **Empty**. So a commit that lands after a stored
  generation with no members (and before the next generation with members) comes from a non-member; the
  group's last members commit *before* their LeaveGroup, so their final commits precede the empty
  record. A group that never stored any generation is an offsets-only group whose every commit is a
  non-member's: those commits are normal and not reported.
* A commit lower than the partition's previous commit while the group had members is a ``rewind`` (a
  member sought back and committed); while the group was empty it is a ``non_member_commit`` with a
  negative ``delta`` (a reset).
* A ``stalled`` partition is one whose committed offset stays the same over at least ``stall_min_commits``
  commits spanning at least ``stall_min_ms`` within one generation with members. Auto-commit writes the
  position even when it did not move, so this shows a consumer that is alive but not advancing; whether
  messages were waiting needs the topic's end offsets, which ``__consumer_offsets`` does not hold.
* An offset tombstone is ``deleted`` when a log line names an OffsetDelete/DeleteGroups for the group;
  else ``expired`` when an offset-expiry sweep was logged within 5 s (a line naming the group, or the
  coordinator's group-less sweep line that removed something: 3.x "Removed N expired offsets", 4.x
  "Generated N tombstone records while cleaning up group metadata", which 4.x logs every check, with N = 0
  too); else ``deleted`` when the group was deleted at the same moment (its own tombstone within a second:
  DeleteGroups writes both in one batch, but so does the sweep that expires an empty group's last offsets,
  hence the sweep line first); otherwise ``expired`` (the retention sweep; the v1 ``expire_timestamp``
  confirms it; topic deletion also writes tombstones and is indistinguishable without its log line).
  Aborted transactional commits never took effect and are skipped. The caller passes the group's log
  lines and its cluster's group-less ones (a sweep line names no group).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from coordinator_core.history.classic import is_placeholder
from coordinator_core.history.consumer import CONSUMER_GROUP_KINDS
from coordinator_core.history.inputs import (
    ABORTED,
    GroupRecord,
    as_events,
    as_group_records,
    millis_between,
    record_time,
)
from coordinator_core.history.model import (
    DELETED,
    EXPIRED,
    GROUP_DELETED,
    NON_MEMBER_COMMIT,
    REWIND,
    STALLED,
    Evidence,
    OffsetEventRow,
)
from coordinator_core.logs import CoordinatorEvent
from coordinator_core.logs import events as ev

#: How close (either side) a deletion/expiry log line or the group's tombstone must be to an offset
#: tombstone to explain it.
TOMBSTONE_MATCH = timedelta(seconds=1)
LOG_MATCH = timedelta(seconds=5)

# The rows' explanations (the incremental fold, `offset_fold`, gives the same words).
#: The group's own tombstone written by an offset-expiry sweep (Kafka removes an empty group whose offsets
#: have all expired in the same sweep).
EXPLAIN_GROUP_SWEPT = ("the group's own tombstone: the offset-expiry sweep removed the group, empty and with all "
                       "its offsets expired")
EXPLAIN_GROUP_DELETED = "the group's own tombstone: the group was deleted"
EXPLAIN_WITH_GROUP = "deleted with the group (the group's tombstone is written with it)"
EXPLAIN_EXPIRE_TIMESTAMP = "expired: the commit's expire timestamp had passed"
EXPLAIN_SWEEP = "expired: an offset-expiry sweep logged at the same time"
EXPLAIN_NO_DELETION = ("tombstone with no deletion seen: retention expiry is the usual source (a topic deletion "
                       "looks the same without its log line)")


def explain_deleted(event_type: str) -> str:
    return f"deleted: {event_type} names the group"


def explain_non_member(generation: int | None, delta: int | None) -> str:
    return (f"committed while generation {generation} had no members: only a client outside the group (admin "
            "reset, assign()-based consumer) can commit then"
            + ("; it moved the offset backwards" if delta is not None and delta < 0 else ""))


def explain_rewind(delta: int, generation: int | None, members: int | None, has_generations: bool) -> str:
    return (f"committed offset went back by {-delta}"
            + (f" in generation {generation} with {members} member(s)" if has_generations else ""))


def explain_stall(count: int, offset: int, duration_ms: int, generation: int | None, members: int | None) -> str:
    return (f"{count} commits of offset {offset} over {duration_ms} ms in generation {generation} while the "
            f"group had {members} member(s)")


@dataclass
class _Run:
    """A partition's current run of commits with one offset inside one generation."""

    offset: int
    first_at: datetime | None
    last_at: datetime | None
    first_record_offset: int
    count: int
    generation: int | None
    members: int | None
    metadata: str | None


def _evidence(event: CoordinatorEvent) -> Evidence:
    return Evidence(event_type=event.event_type, at=event.timestamp, member_id=event.member_id,
                    cause_class=event.cause_class, reason=event.reason, source=event.source,
                    line_number=event.line_number, message=event.message)


def offset_row(group_id: str, kind: str, **fields: Any) -> OffsetEventRow:
    """An offset_events row: the given fields, None elsewhere (inferred unless said otherwise)."""
    values: dict[str, Any] = dict(
        group_id=group_id, kind=kind, topic=None, partition=None, at=None, ended_at=None, record_offset=None,
        offset=None, previous_offset=None, delta=None, commit_count=None, duration_ms=None, generation=None,
        group_members=None, metadata=None, inferred=True, explanation="", evidence=())
    values.update(fields)
    return OffsetEventRow(**values)


def offset_history(  # noqa: C901, PLR0912, PLR0915 - grandfathered: one pass, one branch per record kind
    records: Iterable[Any] = (),
    events: Iterable[CoordinatorEvent] = (),
    *,
    group_id: str | None = None,
    stall_min_commits: int = 3,
    stall_min_ms: int = 60_000,
) -> list[OffsetEventRow]:
    """Notable offset events of one group, in log order (stalls at the commit that ended them).

    Args:
        records: the group's records (``GroupRecord`` or ``(offset, timestamp_ms, Record)``), any order.
        events: the group's log lines; deletion and expiry lines explain tombstones.
        group_id: the group; read from the records when omitted.
        stall_min_commits / stall_min_ms: how many repeated commits over how long make a stall.
    """
    group_records = as_group_records(records)
    log_events = as_events(events)
    gid = group_id or next((str(getattr(r.record.key, "group", None) or getattr(r.record.key, "group_id", ""))
                            for r in group_records), "")
    rows: list[OffsetEventRow] = []
    has_generations = False
    generation: int | None = None
    members: int | None = None
    consumer_members: set[str] = set()
    last: dict[tuple[str, int], tuple[int, int | None]] = {}  # partition -> (offset, expire_timestamp)
    runs: dict[tuple[str, int], _Run] = {}
    group_tombstone_times = _group_tombstones(group_records)

    def close(tp: tuple[str, int]) -> None:
        run = runs.pop(tp, None)
        if run is None or run.count < stall_min_commits:
            return
        duration = millis_between(run.first_at, run.last_at)
        if duration is None or duration < stall_min_ms:
            return
        rows.append(offset_row(
            gid, STALLED, topic=tp[0], partition=tp[1], at=run.first_at, ended_at=run.last_at,
            record_offset=run.first_record_offset, offset=run.offset, commit_count=run.count, duration_ms=duration,
            generation=run.generation, group_members=run.members, metadata=run.metadata, inferred=False,
            explanation=explain_stall(run.count, run.offset, duration, run.generation, run.members)))

    def close_all() -> None:
        for tp in list(runs):
            close(tp)

    for index, record in enumerate(group_records):
        rec = record.record
        kind = rec.kind
        at = record_time(record)
        if kind in ("group_metadata", "consumer_group_metadata"):
            if rec.value is None:
                if _converted(group_records, index, kind):
                    continue
                close_all()
                rows.append(_group_tombstone_row(gid, record, at, generation, log_events))
                generation, members, has_generations = None, None, False
                continue
            if kind == "group_metadata" and is_placeholder(rec.value):
                continue
            new_generation = rec.value.generation if kind == "group_metadata" else rec.value.epoch
            new_members = len(rec.value.members) if kind == "group_metadata" else len(consumer_members)
            if (new_generation, new_members) != (generation, members):
                close_all()
            generation, members, has_generations = new_generation, new_members, True
            continue
        if kind == "consumer_group_member_metadata":
            if rec.value is None:
                consumer_members.discard(rec.key.member_id)
            else:
                consumer_members.add(rec.key.member_id)
            continue
        if kind in CONSUMER_GROUP_KINDS or kind != "offset_commit":
            continue
        if record.transaction_outcome == ABORTED:
            continue
        tp = (rec.key.topic, rec.key.partition)
        previous = last.get(tp)
        if rec.value is None:
            close(tp)
            rows.append(_tombstone_row(gid, record, at, tp, previous, generation, members, log_events,
                                       group_tombstone_times))
            last.pop(tp, None)
            continue
        offset = rec.value.offset
        previous_offset = previous[0] if previous else None
        delta = offset - previous_offset if previous_offset is not None else None
        if has_generations and members == 0:
            close(tp)
            rows.append(offset_row(gid, NON_MEMBER_COMMIT, topic=tp[0], partition=tp[1], at=at,
                             record_offset=record.offset, offset=offset, previous_offset=previous_offset,
                             delta=delta, generation=generation, group_members=0, metadata=rec.value.metadata,
                             explanation=explain_non_member(generation, delta)))
        elif delta is not None and delta < 0:
            close(tp)
            rows.append(offset_row(gid, REWIND, topic=tp[0], partition=tp[1], at=at, record_offset=record.offset,
                             offset=offset, previous_offset=previous_offset, delta=delta, generation=generation,
                             group_members=members, metadata=rec.value.metadata, inferred=False,
                             explanation=explain_rewind(delta, generation, members, has_generations)))
        run = runs.get(tp)
        if run is not None and (run.offset != offset or run.generation != generation):
            close(tp)
            run = None
        if run is None:
            if has_generations and members:
                runs[tp] = _Run(offset, at, at, record.offset, 1, generation, members, rec.value.metadata)
        else:
            run.count += 1
            run.last_at = at
        last[tp] = (offset, rec.value.expire_timestamp)
    close_all()
    return rows


def _converted(records: Sequence[GroupRecord], index: int, kind: str) -> bool:
    """A group tombstone next to the other protocol's records is a protocol conversion, not a deletion:
    the other protocol's records follow it, or were written in the same moment just before it."""
    other = CONSUMER_GROUP_KINDS if kind == "group_metadata" else {"group_metadata"}
    for later in records[index + 1:]:
        if later.record.kind in other and later.record.value is not None:
            return True
        if later.record.kind == kind:
            break
    at = record_time(records[index])
    for earlier in reversed(records[:index]):
        earlier_at = record_time(earlier)
        if at is None or earlier_at is None or at - earlier_at > TOMBSTONE_MATCH:
            break
        if earlier.record.kind in other and earlier.record.value is not None:
            return True
    return False


def _group_tombstones(records: Sequence[GroupRecord]) -> list[datetime]:
    out = []
    for i, r in enumerate(records):
        if r.record.kind in ("group_metadata", "consumer_group_metadata") and r.record.value is None:
            at = record_time(r)
            if at is not None and not _converted(records, i, r.record.kind):
                out.append(at)
    return out


def _near(events: Sequence[CoordinatorEvent], at: datetime | None, within: timedelta) -> list[CoordinatorEvent]:
    if at is None:
        return []
    return [e for e in events if e.timestamp is not None and abs(e.timestamp - at) <= within]


def _names_group(event: CoordinatorEvent, group_id: str) -> bool:
    if event.group_id is None:
        return False
    return group_id in [g.strip() for g in event.group_id.split(",")]


def _is_sweep(event: CoordinatorEvent, group_id: str) -> bool:
    """An offset-expiry sweep line that can explain the group's tombstones: one naming the group, or the
    coordinator's group-less one when it removed something (4.x logs it after every check, 0 included)."""
    if event.event_type != ev.OFFSETS_EXPIRED:
        return False
    if event.group_id is None:
        return (event.offsets_removed or 0) > 0
    return _names_group(event, group_id)


def _group_tombstone_row(gid: str, record: GroupRecord, at: datetime | None, generation: int | None,
                         events: Sequence[CoordinatorEvent]) -> OffsetEventRow:
    near = _near(events, at, LOG_MATCH)
    deleting = [e for e in near if e.event_type in (ev.GROUPS_DELETED, ev.GROUP_DEAD) and _names_group(e, gid)]
    expiring = [e for e in near if _is_sweep(e, gid)]
    common = dict(at=at, record_offset=record.offset, generation=generation, inferred=False)
    if not deleting and expiring:
        return offset_row(gid, GROUP_DELETED, explanation=EXPLAIN_GROUP_SWEPT,
                          evidence=tuple(_evidence(e) for e in expiring), **common)
    return offset_row(gid, GROUP_DELETED, explanation=EXPLAIN_GROUP_DELETED,
                      evidence=tuple(_evidence(e) for e in deleting), **common)




def _tombstone_row(gid: str, record: GroupRecord, at: datetime | None, tp: tuple[str, int],
                   previous: tuple[int, int | None] | None, generation: int | None, members: int | None,
                   events: Sequence[CoordinatorEvent], group_tombstones: Sequence[datetime]) -> OffsetEventRow:
    near = _near(events, at, LOG_MATCH)
    deleting = [e for e in near if e.event_type in (ev.OFFSETS_DELETED, ev.GROUPS_DELETED) and _names_group(e, gid)]
    expiring = [e for e in near if _is_sweep(e, gid)]
    common = dict(topic=tp[0], partition=tp[1], at=at, record_offset=record.offset,
                  previous_offset=previous[0] if previous else None, generation=generation, group_members=members)
    if deleting:
        return offset_row(gid, DELETED, inferred=False, evidence=tuple(_evidence(e) for e in deleting),
                          explanation=explain_deleted(deleting[0].event_type), **common)
    expire_timestamp = previous[1] if previous else -1
    timed_out = (expire_timestamp is not None and expire_timestamp > 0 and record.timestamp is not None
                 and record.timestamp >= expire_timestamp)
    if expiring:
        # Before the group's tombstone: the sweep writes the group's tombstone with its last offsets'.
        return offset_row(gid, EXPIRED, inferred=False, evidence=tuple(_evidence(e) for e in expiring),
                          explanation=EXPLAIN_EXPIRE_TIMESTAMP if timed_out else EXPLAIN_SWEEP, **common)
    if at is not None and any(abs(t - at) <= TOMBSTONE_MATCH for t in group_tombstones):
        return offset_row(gid, DELETED, explanation=EXPLAIN_WITH_GROUP, **common)
    if timed_out:
        return offset_row(gid, EXPIRED, inferred=False, explanation=EXPLAIN_EXPIRE_TIMESTAMP, **common)
    return offset_row(gid, EXPIRED, explanation=EXPLAIN_NO_DELETION, **common)
