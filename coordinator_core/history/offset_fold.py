"""The offset history as an incremental fold: `offsets.offset_history`'s rule, continued run after run.

`offset_history` walks one group's whole archive. A nightly run has only what is new, so this module walks
the new records from a carried *state* and gives the rows to write, the rows to withdraw, and the next
state; whatever the cut of the archive into runs, the rows written add up to `offset_history`'s (the
property tests split random archives into runs and compare). One Python pass per group: the Spark stage
(`jobs.offset_events`) calls it per bucket of groups and writes what it returns.

What a later record or log line can still change stays open:

* a stall run still going on: its row is given again, grown, by every run that extends it;
* a tombstone whose explanation may come later (a deletion or expiry log line within 5 s, the group's own
  tombstone within 1 s): it is kept, with its inputs and its classification, for `horizon_ms` after the
  group's newest record or line, and classified again when new lines or group tombstones arrive;
* a record whose meaning is not settled yet: a commit of an open transaction (an abort makes it vanish) and
  a group tombstone that no later record has shown to be a protocol conversion or a deletion. The group's
  *checkpoint* is its first unsettled record: the state is the fold up to it, the records from it on are
  carried as the `tail` and read again by the next run, and the rows they gave are `provisional` (given
  again by the next run, or withdrawn). Older than the horizon, such a record counts as settled.

The state is a plain dict of `schemas.state.OFFSETS_STATE`'s fields (a typed column of group_state, so
SQL can read it), records are dicts of `OFFSETS_RECORD`'s fields, log lines dicts of `OFFSETS_EVENT`'s.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from coordinator_core.history.classic import is_placeholder
from coordinator_core.history.consumer import CONSUMER_GROUP_KINDS
from coordinator_core.history.inputs import ABORTED, GroupRecord, as_group_records
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
from coordinator_core.history.offsets import (
    EXPLAIN_EXPIRE_TIMESTAMP,
    EXPLAIN_GROUP_DELETED,
    EXPLAIN_GROUP_SWEPT,
    EXPLAIN_NO_DELETION,
    EXPLAIN_SWEEP,
    EXPLAIN_WITH_GROUP,
    explain_deleted,
    explain_non_member,
    explain_rewind,
    explain_stall,
    offset_row,
)
from coordinator_core.logs import events as ev

#: The state layout this module reads and writes; a state of another version is refused, not guessed at.
STATE_VERSION = 1
DEFAULT_HORIZON_MS = 48 * 3_600_000

#: Matching windows of the rule (`offsets.LOG_MATCH`, `offsets.TOMBSTONE_MATCH`), in the fold's units.
LOG_MATCH_MS = 5_000
TOMBSTONE_MATCH_MS = 1_000

# Record kinds as the fold reads them (OFFSETS_RECORD.kind).
COMMIT = "commit"
OFFSET_TOMBSTONE = "offset_tombstone"
GENERATION = "generation"                # GroupMetadata of a generation
PLACEHOLDER = "placeholder"              # 3.7+ GroupMetadata of a newly created group: no generation
CLASSIC_TOMBSTONE = "classic_tombstone"  # GroupMetadata tombstone
EPOCH = "epoch"                          # KIP-848 ConsumerGroupMetadata (group epoch)
CONSUMER_TOMBSTONE = "consumer_tombstone"
MEMBER_JOINED = "member_joined"          # KIP-848 member metadata
MEMBER_LEFT = "member_left"
CONSUMER_RECORD = "consumer_record"      # any other KIP-848 record
CONSUMER_RECORD_TOMBSTONE = "consumer_record_tombstone"
OTHER = "other"                          # share/streams/unknown records of the group

COMMIT_KINDS = (COMMIT, OFFSET_TOMBSTONE)
GROUP_TOMBSTONES = (CLASSIC_TOMBSTONE, CONSUMER_TOMBSTONE)
#: The other protocol's live records, which make a classic / KIP-848 group tombstone a protocol conversion.
CONSUMER_LIVE = (EPOCH, MEMBER_JOINED, CONSUMER_RECORD)
CLASSIC_LIVE = (GENERATION, PLACEHOLDER)
GROUP_LEVEL = (GENERATION, PLACEHOLDER, CLASSIC_TOMBSTONE, EPOCH, CONSUMER_TOMBSTONE, MEMBER_JOINED, MEMBER_LEFT,
               CONSUMER_RECORD, CONSUMER_RECORD_TOMBSTONE)
TRANSACTION_OPEN = "open"

#: The log lines the fold reads: deletions and expiries naming the group (and the cluster's group-less
#: expiry sweeps, passed apart).
EVIDENCE_TYPES = (ev.OFFSETS_DELETED, ev.GROUPS_DELETED, ev.GROUP_DEAD, ev.OFFSETS_EXPIRED)
_DELETING_OFFSETS = (ev.OFFSETS_DELETED, ev.GROUPS_DELETED)
_DELETING_GROUP = (ev.GROUPS_DELETED, ev.GROUP_DEAD)

#: A row's grain within its group: (kind, topic, partition, record_offset).
RowKey = tuple[str, str | None, int | None, int | None]

_MIN = -(2**63)  # "a record without a time lies on the way": no look-back time reaches past it


class StateVersionError(ValueError):
    """A carried state of a layout this code does not read."""


@dataclass
class OffsetFoldResult:
    """What one run gives for one group: rows to write (new or replacing the row of the same grain), the
    grains of rows to withdraw, and the group's next state."""

    rows: list[OffsetEventRow]
    withdrawn: list[RowKey]
    state: dict[str, Any]


def empty_state() -> dict[str, Any]:
    return {"version": STATE_VERSION, "watermark_ms": None, "generation": None, "members": None,
            "has_generations": False, "consumer_members": [], "lookback_classic_ms": None,
            "lookback_consumer_ms": None, "partitions": [], "group_tombstones_ms": [], "tombstones": [],
            "events": [], "tail": [], "provisional": []}


def _checked(state: Mapping[str, Any] | None) -> dict[str, Any]:
    if state is None:
        return empty_state()
    if state.get("version") != STATE_VERSION:
        raise StateVersionError(f"offsets state version {state.get('version')!r}: this code reads version "
                                f"{STATE_VERSION} (rebuild the gold tables with --rebuild)")
    held = empty_state()
    held.update({k: v for k, v in state.items() if v is not None})
    return held


def _micros(at: datetime) -> int:
    if at.tzinfo is None:
        at = at.replace(tzinfo=timezone.utc)
    delta = at - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _time(ms: int | None) -> datetime | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


def _event_order(e: Mapping[str, Any]) -> tuple[int, str, int]:
    return (_micros(e["at"]), e.get("file_id") or "", e.get("line_number") or 0)


@dataclass
class _Run:
    """A partition's current run of commits of one offset inside one generation with members."""

    offset: int
    first_ms: int | None
    last_ms: int | None
    first_record_offset: int
    count: int
    generation: int | None
    members: int | None
    metadata: str | None


@dataclass
class _Partition:
    last_offset: int
    last_expire_ms: int | None
    run: _Run | None = None


@dataclass
class _Walk:
    """The fold's position: the group's context and each partition's last commit and open run."""

    generation: int | None
    members: int | None
    has_generations: bool
    consumer_members: set[str]
    partitions: dict[tuple[str, int], _Partition] = field(default_factory=dict)


def _tombstone_input(record: Mapping[str, Any] | None, **fields: Any) -> dict[str, Any]:
    out = {"topic": None, "partition": None, "record_offset": None, "timestamp_ms": None, "previous_offset": None,
           "previous_expire_ms": None, "generation": None, "group_members": None}
    if record is not None:
        out.update(record_offset=record["record_offset"], timestamp_ms=record["timestamp_ms"])
    out.update(fields)
    return out


class Classifier:
    """Tombstones classified as the rule does (`offsets._tombstone_row`, `offsets._group_tombstone_row`)
    by the group's deletion/expiry lines and the cluster's sweeps within 5 s, and the group's own
    tombstones within 1 s."""

    def __init__(self, group_id: str, events: Sequence[Mapping[str, Any]], sweeps: Sequence[Mapping[str, Any]],
                 group_tombstones_ms: Sequence[int]) -> None:
        self.group_id = group_id
        self.events = [(_micros(e["at"]), e) for e in events]
        self.sweeps = [(_micros(e["at"]), e) for e in sweeps]
        self.group_tombstones_ms = sorted(group_tombstones_ms)

    def classify(self, t: Mapping[str, Any]) -> OffsetEventRow:
        ts = t["timestamp_ms"]
        near: list[Mapping[str, Any]] = []
        near_sweeps: list[Mapping[str, Any]] = []
        if ts is not None:
            near = [e for us, e in self.events if abs(us - ts * 1000) <= LOG_MATCH_MS * 1000]
            near_sweeps = [e for us, e in self.sweeps if abs(us - ts * 1000) <= LOG_MATCH_MS * 1000]
        is_group = t["topic"] is None
        deleting = [e for e in near if e["event_type"] in (_DELETING_GROUP if is_group else _DELETING_OFFSETS)]
        expiring = sorted([e for e in near if e["event_type"] == ev.OFFSETS_EXPIRED] + near_sweeps, key=_event_order)
        common: dict[str, Any] = dict(at=_time(ts), record_offset=t["record_offset"], generation=t["generation"])
        if is_group:
            if not deleting and expiring:
                return offset_row(self.group_id, GROUP_DELETED, explanation=EXPLAIN_GROUP_SWEPT, inferred=False,
                                  evidence=_evidence(expiring), **common)
            return offset_row(self.group_id, GROUP_DELETED, explanation=EXPLAIN_GROUP_DELETED, inferred=False,
                              evidence=_evidence(deleting), **common)
        common.update(topic=t["topic"], partition=t["partition"], previous_offset=t["previous_offset"],
                      group_members=t["group_members"])
        if deleting:
            return offset_row(self.group_id, DELETED, inferred=False, evidence=_evidence(deleting),
                              explanation=explain_deleted(deleting[0]["event_type"]), **common)
        expire = t["previous_expire_ms"]
        timed_out = expire is not None and expire > 0 and ts is not None and ts >= expire
        if expiring:
            return offset_row(self.group_id, EXPIRED, inferred=False, evidence=_evidence(expiring),
                              explanation=EXPLAIN_EXPIRE_TIMESTAMP if timed_out else EXPLAIN_SWEEP, **common)
        if ts is not None and any(abs(g - ts) <= TOMBSTONE_MATCH_MS for g in self.group_tombstones_ms):
            return offset_row(self.group_id, DELETED, explanation=EXPLAIN_WITH_GROUP, **common)
        if timed_out:
            return offset_row(self.group_id, EXPIRED, inferred=False, explanation=EXPLAIN_EXPIRE_TIMESTAMP, **common)
        return offset_row(self.group_id, EXPIRED, explanation=EXPLAIN_NO_DELETION, **common)


def _evidence(events: Sequence[Mapping[str, Any]]) -> tuple[Evidence, ...]:
    return tuple(Evidence(event_type=e["event_type"], at=e["at"], member_id=e.get("member_id"),
                          cause_class=e.get("cause_class"), reason=e.get("reason"), source=e.get("source"),
                          line_number=e.get("line_number"), message=e.get("message"))
                 for e in sorted(events, key=_event_order))


def _conversions(records: Sequence[Mapping[str, Any]], lookback_classic: int | None,
                 lookback_consumer: int | None) -> dict[int, tuple[bool, bool]]:
    """index of each group tombstone -> (converted, resolved), as `offsets._converted` decides it: the first
    later record of either protocol's group records (until one of its own kind) is the other protocol's, or
    a live record of the other protocol lies just before it (walking back while each record is at most 1 s
    older). The walk back may reach past the records of this run: the carried look-back time answers it."""
    out: dict[int, tuple[bool, bool]] = {}
    next_classic: str | None = None   # what a classic tombstone sees first after it: "same" or "other"
    next_consumer: str | None = None
    for i in range(len(records) - 1, -1, -1):
        kind = records[i]["kind"]
        if kind in GROUP_TOMBSTONES:
            after = next_classic if kind == CLASSIC_TOMBSTONE else next_consumer
            out[i] = (after == "other", after is not None)
        if kind in (GENERATION, PLACEHOLDER, CLASSIC_TOMBSTONE):
            next_classic = "same"
        elif kind in CONSUMER_LIVE:
            next_classic = "other"
        if kind in (EPOCH, CONSUMER_TOMBSTONE):
            next_consumer = "same"
        elif kind in CLASSIC_LIVE:
            next_consumer = "other"
    for i, (converted, resolved) in list(out.items()):
        if not converted:
            carried = lookback_classic if records[i]["kind"] == CLASSIC_TOMBSTONE else lookback_consumer
            out[i] = (_written_with_the_other_protocol(records, i, carried), resolved)
    return out


def _written_with_the_other_protocol(records: Sequence[Mapping[str, Any]], i: int, carried: int | None) -> bool:
    """A live record of the other protocol just before tombstone `i`: walking back while each record is at
    most 1 s older than it (a record without a time stops the walk), then past this run's records with the
    carried look-back time."""
    kind, ts = records[i]["kind"], records[i]["timestamp_ms"]
    if ts is None:
        return False
    other = CONSUMER_LIVE if kind == CLASSIC_TOMBSTONE else CLASSIC_LIVE
    for j in range(i - 1, -1, -1):
        earlier = records[j]["timestamp_ms"]
        if earlier is None or earlier < ts - TOMBSTONE_MATCH_MS:
            return False
        if records[j]["kind"] in other:
            return True
    return carried is not None and carried >= ts - TOMBSTONE_MATCH_MS


def _lookback(records: Sequence[Mapping[str, Any]], carried: int | None, live: Sequence[str]) -> int | None:
    """For a later tombstone's walk back: the greatest "oldest time from a live record of `live` to the
    checkpoint" over `records` (those before it) and the carried value (capped by every time on the way)."""
    if not records:
        return carried
    best: int | None = None
    oldest = None
    for r in reversed(records):
        ts = r["timestamp_ms"]
        t = _MIN if ts is None else ts
        oldest = t if oldest is None else min(oldest, t)
        if r["kind"] in live and (best is None or oldest > best):
            best = oldest
    through = min(carried if carried is not None else _MIN, oldest if oldest is not None else _MIN)
    value = through if best is None else max(best, through)
    return value if value > _MIN else None


def continue_offsets(  # noqa: C901, PLR0912, PLR0915 - one pass, one branch per record kind, as the rule
    state: Mapping[str, Any] | None,
    records: Iterable[Mapping[str, Any]] = (),
    events: Iterable[Mapping[str, Any]] = (),
    sweeps: Iterable[Mapping[str, Any]] = (),
    decided: Mapping[tuple[int, int], str] | None = None,
    *,
    group_id: str,
    stall_min_commits: int = 3,
    stall_min_ms: int = 60_000,
    horizon_ms: int = DEFAULT_HORIZON_MS,
) -> OffsetFoldResult:
    """Continue one group's offset history from `state` (None: the group's first run, or a rebuild).

    Args:
        state: the group's carried state (OFFSETS_STATE fields), as the last run left it.
        records: the group's new records (OFFSETS_RECORD fields), any order.
        events: the group's new deletion/expiry log lines (OFFSETS_EVENT fields; lines seen before are
            carried in the state, a line given twice counts once).
        sweeps: the cluster's group-less offset-expiry sweep lines that removed something, near the group's
            tombstones (new or carried), whichever run archived them.
        decided: (record_partition, record_offset) -> outcome of carried commits whose transaction was
            decided since.
        stall_min_commits / stall_min_ms: what makes a stall (as `offset_history`).
        horizon_ms: how long after the group's newest time a tombstone stays open to late lines, and an
            unsettled record is carried.
    """
    held = _checked(state)
    decided = decided or {}
    by_position: dict[tuple[int, int], Mapping[str, Any]] = {}
    for r in held["tail"]:
        key = (r["record_offset"], r["record_partition"])
        by_position[key] = {**r, "transaction_outcome": decided.get((r["record_partition"], r["record_offset"]),
                                                                    r["transaction_outcome"])}
    for r in records:
        by_position[(r["record_offset"], r["record_partition"])] = r   # read, never changed
    recs = [by_position[k] for k in sorted(by_position)]
    new_events = list(events)
    seen_lines: dict[tuple[Any, Any], Mapping[str, Any]] = {}
    for e in [*held["events"], *new_events]:
        seen_lines.setdefault((e["file_id"], e["line_number"]), e)
    all_events = sorted(seen_lines.values(), key=_event_order)

    times = [r["timestamp_ms"] for r in recs if r["timestamp_ms"] is not None]
    times += [_micros(e["at"]) // 1000 for e in new_events]
    if held["watermark_ms"] is not None:
        times.append(held["watermark_ms"])
    watermark = max(times) if times else None

    def within_horizon(ts: int | None, margin: int = 0) -> bool:
        return watermark is None or (ts is not None and ts >= watermark - horizon_ms - margin)

    conversions = _conversions(recs, held["lookback_classic_ms"], held["lookback_consumer_ms"])
    cut = len(recs)
    for i, r in enumerate(recs):
        unsettled = ((r["kind"] in COMMIT_KINDS and r["transaction_outcome"] == TRANSACTION_OPEN)
                     or (i in conversions and not any(conversions[i])))
        if unsettled and (r["timestamp_ms"] is None or within_horizon(r["timestamp_ms"])):
            cut = i
            break
    checkpoint = recs[cut]["record_offset"] if cut < len(recs) else None

    deletions_ms = [r["timestamp_ms"] for i, r in enumerate(recs)
                    if i in conversions and not conversions[i][0] and r["timestamp_ms"] is not None]
    classifier = Classifier(group_id, all_events, list(sweeps), [*held["group_tombstones_ms"], *deletions_ms])

    walk = _Walk(held["generation"], held["members"], bool(held["has_generations"]), set(held["consumer_members"]))
    for p in held["partitions"]:
        run = None
        if p["run_count"] is not None:
            run = _Run(p["last_offset"], p["run_first_ms"], p["run_last_ms"], p["run_first_record_offset"],
                       p["run_count"], walk.generation, walk.members, p["run_metadata"])
        walk.partitions[(p["topic"], p["partition"])] = _Partition(p["last_offset"], p["last_expire_ms"], run)

    rows: list[OffsetEventRow] = []
    tombstones: list[tuple[dict[str, Any], OffsetEventRow]] = []  # this run's, classified

    def close(tp: tuple[str, int]) -> None:
        part = walk.partitions.get(tp)
        if part is None or part.run is None:
            return
        _stall_row(group_id, tp, part.run, stall_min_commits, stall_min_ms, rows)
        part.run = None

    def close_all() -> None:
        for tp in walk.partitions:
            close(tp)

    at_checkpoint: _Walk | None = None
    for i, r in enumerate(recs):
        if i == cut:
            at_checkpoint = copy.deepcopy(walk)
        kind, ts = r["kind"], r["timestamp_ms"]
        if kind in GROUP_TOMBSTONES:
            if conversions[i][0]:
                continue
            close_all()
            t = _tombstone_input(r, generation=walk.generation)
            tombstones.append((t, classifier.classify(t)))
            walk.generation, walk.members, walk.has_generations = None, None, False
        elif kind in (GENERATION, EPOCH):
            generation = r["generation"]
            members = r["member_count"] if kind == GENERATION else len(walk.consumer_members)
            if (generation, members) != (walk.generation, walk.members):
                close_all()
            walk.generation, walk.members, walk.has_generations = generation, members, True
        elif kind == MEMBER_JOINED:
            walk.consumer_members.add(r["member_id"])
        elif kind == MEMBER_LEFT:
            walk.consumer_members.discard(r["member_id"])
        elif kind in COMMIT_KINDS and r["transaction_outcome"] != ABORTED:
            tp = (r["topic"], r["partition"])
            part = walk.partitions.get(tp)
            if kind == OFFSET_TOMBSTONE:
                close(tp)
                t = _tombstone_input(r, topic=tp[0], partition=tp[1],
                                     previous_offset=part.last_offset if part else None,
                                     previous_expire_ms=part.last_expire_ms if part else None,
                                     generation=walk.generation, group_members=walk.members)
                tombstones.append((t, classifier.classify(t)))
                walk.partitions.pop(tp, None)
                continue
            offset = r["offset"]
            previous = part.last_offset if part else None
            delta = offset - previous if previous is not None else None
            non_member = walk.has_generations and walk.members == 0
            if non_member or (delta is not None and delta < 0):
                close(tp)
                common = dict(topic=tp[0], partition=tp[1], at=_time(ts), record_offset=r["record_offset"],
                              offset=offset, previous_offset=previous, delta=delta, generation=walk.generation,
                              metadata=r["metadata"])
                if non_member:
                    rows.append(offset_row(group_id, NON_MEMBER_COMMIT, group_members=0,
                                           explanation=explain_non_member(walk.generation, delta), **common))
                else:
                    assert delta is not None
                    rows.append(offset_row(group_id, REWIND, group_members=walk.members, inferred=False,
                                           explanation=explain_rewind(delta, walk.generation, walk.members,
                                                                      walk.has_generations), **common))
            run = part.run if part else None
            if run is not None and (run.offset != offset or run.generation != walk.generation):
                close(tp)
                run = None
            if part is None:
                part = walk.partitions[tp] = _Partition(offset, None)
            part.last_offset, part.last_expire_ms = offset, r["expire_ms"]
            if run is None:
                if walk.has_generations and walk.members:
                    part.run = _Run(offset, ts, ts, r["record_offset"], 1, walk.generation, walk.members,
                                    r["metadata"])
            else:
                run.count += 1
                run.last_ms = ts
    if at_checkpoint is None:
        at_checkpoint = copy.deepcopy(walk)
    for tp, part in walk.partitions.items():   # open runs: their rows as they stand now
        if part.run is not None:
            _stall_row(group_id, tp, part.run, stall_min_commits, stall_min_ms, rows)

    # Tombstones: this run's, and the settled ones still open to late evidence, classified again.
    rows += [row for _, row in tombstones]
    settled_now, reclassified = classify_again(held["tombstones"], classifier, rows)

    emitted = {_key(row) for row in rows}
    provisional: set[RowKey] = set()
    if checkpoint is not None:
        provisional = {k for k in emitted if k[3] is not None and k[3] >= checkpoint}
        for tp, part in at_checkpoint.partitions.items():
            if part.run is not None and (STALLED, tp[0], tp[1], part.run.first_record_offset) in emitted:
                provisional.add((STALLED, tp[0], tp[1], part.run.first_record_offset))
    carried_keys = {(k["kind"], k["topic"], k["partition"], k["record_offset"]) for k in held["provisional"]}
    withdrawn = sorted((carried_keys | set(reclassified)) - emitted, key=_key_order)

    before = recs[:cut]
    settled_run = [x for x in tombstones if checkpoint is None or x[0]["record_offset"] < checkpoint]
    next_state = {
        "version": STATE_VERSION,
        "watermark_ms": watermark,
        "generation": at_checkpoint.generation,
        "members": at_checkpoint.members,
        "has_generations": at_checkpoint.has_generations,
        "consumer_members": sorted(at_checkpoint.consumer_members),
        "lookback_classic_ms": _lookback(before, held["lookback_classic_ms"], CONSUMER_LIVE),
        "lookback_consumer_ms": _lookback(before, held["lookback_consumer_ms"], CLASSIC_LIVE),
        "partitions": [_partition_state(tp, part) for tp, part in sorted(at_checkpoint.partitions.items())],
        "group_tombstones_ms": sorted(ts for ts in [*held["group_tombstones_ms"],
                                                    *[r["timestamp_ms"] for i, r in enumerate(before)
                                                      if i in conversions and not conversions[i][0]
                                                      and r["timestamp_ms"] is not None]]
                                      if within_horizon(ts, TOMBSTONE_MATCH_MS)),
        "tombstones": open_tombstones([*settled_now, *settled_run], within_horizon),
        "events": [e for e in all_events if within_horizon(_micros(e["at"]) // 1000, LOG_MATCH_MS)],
        "tail": recs[cut:],
        "provisional": [dict(zip(("kind", "topic", "partition", "record_offset"), k, strict=True))
                        for k in sorted(provisional, key=lambda k: (k[3], k[0], k[1] or "", k[2] or -1))],
    }
    return OffsetFoldResult(rows, withdrawn, next_state)


#: A tombstone as the classifier reads it (`_tombstone_input`), with the row it gave.
Classified = tuple[dict[str, Any], OffsetEventRow]


def classify_again(held_tombstones: Sequence[Mapping[str, Any]], classifier: Classifier,
                   rows: list[OffsetEventRow]) -> tuple[list[Classified], list[RowKey]]:
    """The settled tombstones still open to late evidence, classified again: each with its row now (a row
    that changed is added to `rows`), and the grains of those whose kind changed (their old rows go)."""
    settled: list[Classified] = []
    reclassified: list[RowKey] = []
    for s in held_tombstones:
        t = {k: s[k] for k in ("topic", "partition", "record_offset", "timestamp_ms", "previous_offset",
                               "previous_expire_ms", "generation", "group_members")}
        row = classifier.classify(t)
        settled.append((t, row))
        if (row.kind, row.explanation, len(row.evidence)) != (s["kind"], s["explanation"], s["evidence_count"]):
            rows.append(row)
            if row.kind != s["kind"]:
                reclassified.append((s["kind"], s["topic"], s["partition"], s["record_offset"]))
    return settled, reclassified


def open_tombstones(classified: Iterable[Classified], within_horizon: Callable[[int | None], bool]
                    ) -> list[dict[str, Any]]:
    """The state's tombstones: those still within the horizon, with what they were classified as."""
    kept = [(t, row) for t, row in classified if t["timestamp_ms"] is not None and within_horizon(t["timestamp_ms"])]
    return [{**t, "kind": row.kind, "explanation": row.explanation, "evidence_count": len(row.evidence)}
            for t, row in sorted(kept, key=lambda x: x[0]["record_offset"])]


def _key(row: OffsetEventRow) -> RowKey:
    return (row.kind, row.topic, row.partition, row.record_offset)


def _key_order(k: RowKey) -> tuple[int, str, str, int]:
    return (k[3] if k[3] is not None else -1, k[0], k[1] or "", k[2] if k[2] is not None else -1)


def _partition_state(tp: tuple[str, int], part: _Partition) -> dict[str, Any]:
    run = part.run
    return {"topic": tp[0], "partition": tp[1], "last_offset": part.last_offset,
            "last_expire_ms": part.last_expire_ms,
            "run_first_record_offset": run.first_record_offset if run else None,
            "run_first_ms": run.first_ms if run else None, "run_last_ms": run.last_ms if run else None,
            "run_count": run.count if run else None, "run_metadata": run.metadata if run else None}


def _stall_row(group_id: str, tp: tuple[str, int], run: _Run, min_commits: int, min_ms: int,
               rows: list[OffsetEventRow]) -> None:
    if run.count < min_commits or run.first_ms is None or run.last_ms is None:
        return
    duration = run.last_ms - run.first_ms
    if duration < min_ms:
        return
    rows.append(offset_row(group_id, STALLED, topic=tp[0], partition=tp[1], at=_time(run.first_ms),
                           ended_at=_time(run.last_ms), record_offset=run.first_record_offset, offset=run.offset,
                           commit_count=run.count, duration_ms=duration, generation=run.generation,
                           group_members=run.members, metadata=run.metadata, inferred=False,
                           explanation=explain_stall(run.count, run.offset, duration, run.generation, run.members)))


# ---------------------------------------------------------------------------------------------------
# Decoded records as the fold reads them (the Spark stage reads the same fields from the silver tables)

def fold_record(record: GroupRecord) -> dict[str, Any] | None:
    """A decoded record of the group in OFFSETS_RECORD's shape (None for a record the fold does not read)."""
    rec = record.record
    kind = rec.kind
    ts = record.timestamp if record.timestamp is not None and record.timestamp >= 0 else None
    out: dict[str, Any] = {"record_partition": 0, "record_offset": record.offset, "timestamp_ms": ts,
                           "kind": None, "transaction_outcome": record.transaction_outcome, "topic": None,
                           "partition": None, "offset": None, "expire_ms": None, "metadata": None,
                           "generation": None, "member_count": None, "member_id": None}
    if kind == "offset_commit":
        out.update(kind=OFFSET_TOMBSTONE if rec.value is None else COMMIT, topic=rec.key.topic,
                   partition=rec.key.partition)
        if rec.value is not None:
            expire = getattr(rec.value, "expire_timestamp", None)
            out.update(offset=rec.value.offset, metadata=rec.value.metadata,
                       expire_ms=expire if expire is not None and expire >= 0 else None)
    elif kind == "group_metadata":
        if rec.value is None:
            out["kind"] = CLASSIC_TOMBSTONE
        elif is_placeholder(rec.value):
            out["kind"] = PLACEHOLDER
        else:
            out.update(kind=GENERATION, generation=rec.value.generation, member_count=len(rec.value.members))
    elif kind == "consumer_group_metadata":
        out.update(kind=CONSUMER_TOMBSTONE) if rec.value is None else out.update(kind=EPOCH,
                                                                                generation=rec.value.epoch)
    elif kind == "consumer_group_member_metadata":
        out.update(kind=MEMBER_LEFT if rec.value is None else MEMBER_JOINED, member_id=rec.key.member_id)
    elif kind in CONSUMER_GROUP_KINDS:
        out["kind"] = CONSUMER_RECORD_TOMBSTONE if rec.value is None else CONSUMER_RECORD
    else:
        out["kind"] = OTHER
    return out


def fold_records(records: Iterable[Any]) -> list[dict[str, Any]]:
    """`fold_record` of each record (GroupRecord or (offset, timestamp_ms, Record) tuples), in log order."""
    return [r for r in (fold_record(g) for g in as_group_records(records)) if r is not None]
