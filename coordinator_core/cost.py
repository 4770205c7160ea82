"""What each rebalance cost: how long each partition stopped being consumed, and how many records waited.

A rebalance pauses partitions. Under an eager protocol (range, roundrobin, sticky) every member revokes
everything it owns when the rebalance starts and gets its partitions back after the sync; under a
cooperative one (cooperative-sticky) only the partitions that move pause, from their revocation after the
first round's sync to their assignment in the second round; under the consumer protocol (KIP-848) a moved
partition pauses between its release by the old owner and its reconciliation by the new one; a static
member restarted within its session timeout pauses its own partitions without a new generation.

Each end of a partition's pause is taken from the best source there is, and bounded where no source gives a
point:

- client lines (the member's own "Revoke(-ing) previously assigned partitions", "Adding"/"Setting newly
  assigned partitions", and the "Setting offset for partition" (or "Resetting offset") line after the latter:
  it fetches once its position is set): milliseconds, but only for members whose logs were collected;
- broker lines: "Preparing to rebalance" starts the rebalance (members stop within a heartbeat of it);
- records: the GroupMetadata record's time is the end of the sync (members resume right after it), its
  ``current_state_timestamp`` the end of the join (every member had stopped by then);
- commits: the old owner's last commit before the join ended (it was still consuming then; auto-commit
  commits on revocation) and the new owner's first commit after the sync (it had resumed by then).

Without a start line, a classic rebalance's start is bounded by ``[max(previous end, stabilized - the
largest member rebalance timeout), stabilized]``: a row says so in its bounds rather than inventing a point.
Records delayed are the partition's consumption rate (committed-offset progress per second over the commits
before the pause) times the pause: an estimate, since log-end offsets are not in ``__consumer_offsets``.

:func:`rebalance_costs` is a pure function of one group's generation rows (as
``coordinator_core.history`` gives them), the client lines of its members and its commits near the
rebalances; the nightly job calls it per group over the rows near the night's changes.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Final

from coordinator_core.history.model import CONSUMER, EMPTY, STABLE, STATIC_RESTART, Partition, to_dict
from coordinator_core.logs import events as ev

# ---------------------------------------------------------------------------------------------------
# Vocabulary

#: ``RebalanceCostRow.protocol_kind``.
EAGER: Final = "eager"
COOPERATIVE: Final = "cooperative"
CONSUMER_PROTOCOL: Final = "consumer"
STATIC_RESTART_KIND: Final = "static_restart"

#: Where an end of a pause came from (``PartitionPause.stop_source`` / ``resume_source``).
#: ``bound``: no source gives a point, only the bounds.
SOURCE_CLIENT: Final = "client"
SOURCE_BROKER: Final = "broker"
SOURCE_RECORD: Final = "record"
SOURCE_COMMITS: Final = "commits"
SOURCE_BOUND: Final = "bound"

#: Assignors whose members keep the partitions they keep through a rebalance (KIP-429).
COOPERATIVE_ASSIGNORS: Final = frozenset({"cooperative-sticky"})

#: The client line kinds the cost reads (coordinator_core.logs event types).
PAUSE_EVENT_TYPES: Final = (ev.CLIENT_PARTITIONS_REVOKED, ev.CLIENT_PARTITIONS_LOST, ev.CLIENT_PARTITIONS_ASSIGNED,
                             ev.CLIENT_RECONCILING)
#: Lines that start consuming a partition: the classic assign callback, the new consumer's (KIP-848)
#: reconciliation of an assignment that holds it.
RESUME_EVENT_TYPES: Final = (ev.CLIENT_PARTITIONS_ASSIGNED, ev.CLIENT_RECONCILING)
#: A partition's fetch position set after its assignment (its committed offset fetched, or its reset
#: policy's offset): the consumer can fetch it from then on, so where this line follows the assign or
#: reconcile line it ends the pause. Java 3.7+ logs the committed-offset one without the client prefix (its
#: logger has no log context): it is taken for the member whose assign line in the same file last named
#: the partition.
POSITION_EVENT_TYPES: Final = (ev.CLIENT_OFFSET_SET,)
#: Lines that name the member id (and generation) a client stream runs as.
IDENTITY_EVENT_TYPES: Final = (ev.CLIENT_JOINED, ev.CLIENT_SYNCED, ev.CLIENT_REJOIN_REQUESTED,
                               ev.CLIENT_MEMBER_STATE_TRANSITION)
CLIENT_EVENT_TYPES: Final = (*PAUSE_EVENT_TYPES, *POSITION_EVENT_TYPES, *IDENTITY_EVENT_TYPES)


@dataclass(frozen=True)
class CostSettings:
    """``rate_lookback``: how far before a pause the commits that give a partition's rate are read;
    ``line_tolerance``: how far outside a pause's bounds a client line may fall and still be taken for it
    (log timestamps are the logging call's, not the protocol step's); ``skew_threshold``: a client whose
    "Successfully synced" line is this far from the stored assignment (or before it) has its lines shifted by
    the measured offset."""

    rate_lookback: timedelta = timedelta(minutes=10)
    #: commits read for a rebalance: from this long before it completed (with `rate_lookback` before that)...
    commit_horizon: timedelta = timedelta(hours=1)
    #: ...to the next generation's start, and no later than this after its sync (a partition that commits
    #: nothing for that long has no commit-bounded resume). Fixed windows keep a night's rows equal to a
    #: rebuild's: the nightly job reads exactly these commits.
    resume_horizon: timedelta = timedelta(hours=48)
    line_tolerance: timedelta = timedelta(seconds=2)
    skew_threshold: timedelta = timedelta(seconds=1)


# ---------------------------------------------------------------------------------------------------
# Rows


@dataclass(frozen=True, slots=True)
class PartitionPause:
    """One partition's pause in one rebalance (a row of ``rebalance_cost_partitions``).

    ``stopped_at``/``resumed_at`` are points where a source gives one (None otherwise), always within their
    ``_low``/``_high`` bounds; a None high bound is unbounded (no later fact). ``pause_ms`` is the point
    pause, ``pause_low_ms``/``pause_high_ms`` what the bounds allow (never negative). ``via_generation``:
    a cooperative move, revoked in that (first-round) generation and assigned in this one.
    ``rate_per_s`` is committed-offset progress per second over ``rate_commits`` commits spanning
    ``rate_window_ms`` before the pause; ``records_delayed*`` the rate times the pause (and its bounds).
    """

    topic: str
    partition: int
    from_member: str | None
    to_member: str | None
    via_generation: int | None
    stopped_at: datetime | None
    stopped_low: datetime | None
    stopped_high: datetime | None
    stop_source: str
    resumed_at: datetime | None
    resumed_low: datetime | None
    resumed_high: datetime | None
    resume_source: str
    pause_ms: int | None
    pause_low_ms: int
    pause_high_ms: int | None
    rate_per_s: float | None
    rate_window_ms: int | None
    rate_commits: int | None
    records_delayed: int | None
    records_delayed_low: int | None
    records_delayed_high: int | None
    inferred: bool


@dataclass(frozen=True, slots=True)
class RebalanceCostRow:
    """The cost of one rebalance of one group (grain: group, protocol, generation, record offset,
    restarted member: null for a generation change, the new member id for a static member replaced without
    a rebalance).

    The window runs from the first partition's stop to the last one's resume. ``pause_ms`` is the group's
    pause: the time at least one partition was paused (the union of member pauses); ``_low``/``_high``
    what the bounds allow. ``partition_seconds`` sums the partitions' pauses. ``rate_coverage`` is the share
    of paused partitions with a consumption rate; ``records_delayed`` sums over those. ``inferred``: some
    end comes from commits or bounds, not from a line or a record. ``clock_offsets_ms``: per member, how far
    its log's clock was from the broker's (its sync line against the stored assignment); lines of a member
    with a large offset were shifted by it.
    """

    group_id: str
    group_protocol: str
    generation: int
    record_offset: int | None
    restarted_member_id: str | None
    #: when the rebalance completed (the generation's stored assignment, else its join end or start)
    rebalance_at: datetime | None
    protocol: str | None
    protocol_kind: str
    window_start: datetime | None
    window_start_source: str
    window_end: datetime | None
    window_end_source: str
    pause_ms: int | None
    pause_low_ms: int
    pause_high_ms: int | None
    members_paused: int
    partitions_paused: int
    partitions_kept: int
    partition_seconds: float | None
    partition_seconds_low: float
    partition_seconds_high: float | None
    partitions_with_rate: int
    rate_coverage: float | None
    records_delayed: int | None
    records_delayed_low: int | None
    records_delayed_high: int | None
    inferred: bool
    clock_offsets_ms: dict[str, int]
    detail: str
    partitions: tuple[PartitionPause, ...]

    def to_dict(self) -> dict[str, Any]:
        return to_dict(self)


# ---------------------------------------------------------------------------------------------------
# Inputs


@dataclass(frozen=True, slots=True)
class CostMember:
    member_id: str
    group_instance_id: str | None
    client_id: str | None
    assigned: frozenset[Partition]
    rebalance_timeout_ms: int | None
    session_timeout_ms: int | None


@dataclass(frozen=True, slots=True)
class Handover:
    """KIP-848: when the records asked the old owner to revoke a partition, saw it released, and gave it to the
    new owner (``PartitionHandover`` of coordinator_core.history)."""

    from_member: str
    requested_at: datetime | None
    released_at: datetime | None
    assigned_at: datetime | None


@dataclass(frozen=True, slots=True)
class CostGeneration:
    """What the cost reads of a generation row (``GenerationRow`` or a group_generations row)."""

    group_id: str
    group_protocol: str
    generation: int
    record_offset: int | None
    outcome: str
    protocol: str | None
    members: tuple[CostMember, ...]
    started_at: datetime | None
    stabilized_at: datetime | None
    stored_at: datetime | None
    ended_at: datetime | None
    #: (old member id, new member id, group instance id, at) of static members replaced without a rebalance
    static_replacements: tuple[tuple[str, str, str | None, datetime | None], ...]
    #: KIP-848: (partition, new owner) -> its hand-over records' times (see ``Handover``)
    handovers: Mapping[tuple[Partition, str], Handover] = dataclasses.field(default_factory=dict)

    @property
    def order_time(self) -> datetime | None:
        return self.stored_at or self.stabilized_at or self.started_at

    def owners(self, at_start: bool = False) -> dict[Partition, str]:
        """Each assigned partition's owner as the generation ended, or (`at_start`) as its rebalance left it:
        a static member replaced within the generation still under its old member id."""
        renamed = {new: old for old, new, _, _ in self.static_replacements} if at_start else {}
        return {p: renamed.get(m.member_id, m.member_id) for m in self.members for p in m.assigned}

    def synced_at(self, member_id: str) -> datetime | None:
        """When the member's assignment was stored: the replacement record for a static member replaced
        within the generation, else the generation's record."""
        return next((at for _, new, _, at in self.static_replacements if new == member_id), self.stored_at)


def _get(row: Any, name: str) -> Any:
    return row.get(name) if isinstance(row, Mapping) else getattr(row, name, None)


def _naive(value: Any) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime):  # pandas Timestamp and the like
        value = value.to_pydatetime()
    assert isinstance(value, datetime)
    return value.astimezone(timezone.utc).replace(tzinfo=None) if value.tzinfo else value


def _partition(p: Any) -> Partition:
    return Partition(str(_get(p, "topic")), int(_get(p, "partition")))


def cost_generation(row: Any) -> CostGeneration:
    """A generation row (``GenerationRow``, or a mapping of group_generations columns) as the cost reads it."""
    members = [CostMember(
        member_id=str(_get(m, "member_id")), group_instance_id=_get(m, "group_instance_id"),
        client_id=_get(m, "client_id"),
        assigned=frozenset(_partition(p) for p in (_get(m, "assigned_partitions") or ())),
        rebalance_timeout_ms=_get(m, "rebalance_timeout_ms"), session_timeout_ms=_get(m, "session_timeout_ms"))
        for m in _get(row, "members") or ()]
    generation = int(_get(row, "generation"))
    replacements = tuple(
        (str(_get(c, "old_member_id")), str(_get(c, "new_member_id")), _get(c, "group_instance_id"),
         _naive(_get(c, "at")))
        for c in (_get(row, "member_id_changes") or ())
        if _get(c, "kind") == STATIC_RESTART and _get(c, "since_generation") == generation)
    offset = _get(row, "record_offset")
    handovers = {(_partition(h), str(_get(h, "to_member"))): Handover(
        str(_get(h, "from_member")), _naive(_get(h, "revocation_requested_at")), _naive(_get(h, "released_at")),
        _naive(_get(h, "assigned_at"))) for h in (_get(row, "partition_handovers") or ())}
    return CostGeneration(
        group_id=str(_get(row, "group_id")), group_protocol=str(_get(row, "group_protocol")), generation=generation,
        record_offset=None if offset is None else int(offset), outcome=str(_get(row, "outcome")),
        protocol=_get(row, "protocol"), members=tuple(members),
        started_at=_naive(_get(row, "rebalance_started_at")), stabilized_at=_naive(_get(row, "stabilized_at")),
        stored_at=_naive(_get(row, "assignment_stored_at")), ended_at=_naive(_get(row, "ended_at")),
        static_replacements=replacements, handovers=handovers)


@dataclass(frozen=True, slots=True)
class ClientLine:
    """A client's revoke/lost/assign line, attributed to the member id its client ran as (the last member id
    its own log stream named before the line)."""

    at: datetime
    stream: str
    member_id: str | None
    event_type: str
    partitions: frozenset[Partition]
    #: the log file the line came from (coordinator_events.file_id; else its source), for the position lines
    #: that carry no client prefix
    file: str = ""


@dataclass(frozen=True, slots=True)
class SyncLine:
    """A member's "Successfully synced group in generation N" line (`synced`), or its "Successfully joined"
    line (not `synced`: it marks the generation's start in the member's log, but is no clock reference)."""

    at: datetime
    stream: str
    member_id: str
    generation: int
    synced: bool = True


def parse_partitions(text: str | None) -> frozenset[Partition]:
    """``"t-0, t-1"`` (a log line's partitions as the parser keeps them, brackets removed) -> partitions."""
    out = set()
    for item in (text or "").strip().strip("[]{}").split(","):
        topic, _, number = item.strip().rpartition("-")
        if topic and number.isdigit():
            out.add(Partition(topic, int(number)))
    return frozenset(out)


def client_lines(events: Iterable[Any]) -> tuple[list[ClientLine], list[SyncLine]]:
    """A group's client events (``CoordinatorEvent`` or coordinator_events rows with ``event_type``,
    ``timestamp``, ``member_id``, ``generation``, ``partitions``, and a stream: ``source``/``log_source`` and
    ``client_id``/``thread``) -> its pause lines, each attributed to the member id its stream last named, and
    its sync lines (for the clock offsets)."""
    def stream_of(e: Any) -> str:
        source = _get(e, "source") or _get(e, "log_source") or ""
        return f"{source}|{_get(e, 'client_id') or _get(e, 'thread') or ''}"

    ordered = sorted((e for e in events if _get(e, "timestamp") is not None),
                     key=lambda e: (stream_of(e), _naive(_get(e, "timestamp")), _get(e, "line_number") or 0))
    member: dict[str, str] = {}
    pauses: list[ClientLine] = []
    syncs: list[SyncLine] = []
    for e in ordered:
        stream, kind, at = stream_of(e), _get(e, "event_type"), _naive(_get(e, "timestamp"))
        assert at is not None
        if kind in (*IDENTITY_EVENT_TYPES, ev.CLIENT_RECONCILING) and _get(e, "member_id"):
            member[stream] = str(_get(e, "member_id"))
            if kind in (ev.CLIENT_SYNCED, ev.CLIENT_JOINED) and _get(e, "generation") is not None:
                syncs.append(SyncLine(at, stream, member[stream], int(_get(e, "generation")),
                                      kind == ev.CLIENT_SYNCED))
        if kind in PAUSE_EVENT_TYPES or kind in POSITION_EVENT_TYPES:
            parts = parse_partitions(_get(e, "partitions"))
            if parts:
                pauses.append(ClientLine(at, stream, member.get(stream), str(kind), parts,
                                         str(_get(e, "file_id") or _get(e, "source") or _get(e, "log_source") or "")))
    return _positions_attributed(pauses), syncs


def _positions_attributed(lines: list[ClientLine]) -> list[ClientLine]:
    """Position lines without a member (no client prefix) taken for the member whose assign or reconcile
    line in the same file last named the partition before them; those no such line explains are dropped."""
    if not any(x.member_id is None and x.event_type in POSITION_EVENT_TYPES for x in lines):
        return lines
    last_resume: dict[tuple[str, Partition], ClientLine] = {}
    out: list[ClientLine] = []
    for x in sorted(lines, key=lambda x: x.at):
        if x.event_type in RESUME_EVENT_TYPES and x.member_id is not None:
            for p in x.partitions:
                last_resume[(x.file, p)] = x
        if x.event_type in POSITION_EVENT_TYPES and x.member_id is None:
            owner = last_resume.get((x.file, next(iter(x.partitions)))) if len(x.partitions) == 1 else None
            if owner is not None:
                out.append(dataclasses.replace(x, member_id=owner.member_id))
            continue
        out.append(x)
    return out


@dataclass(frozen=True, slots=True)
class Commit:
    at: datetime
    offset: int


_EPOCH: Final = datetime(1970, 1, 1)


def _micros(at: datetime) -> int:
    """Microseconds since the epoch of a naive UTC time (integer arithmetic: no float rounding)."""
    d = at - _EPOCH
    return (d.days * 86_400 + d.seconds) * 1_000_000 + d.microseconds


class CommitSeries(Sequence[Commit]):
    """One partition's commits in time order, held as two lists of integers: epoch microseconds (naive UTC)
    and committed offsets.

    A night brings every commit of every partition of a touched group (a fleet's records are nearly all
    commits), and a rebalance reads only the few around it. `between` finds those by binary search, and a
    `Commit` is built only for what is read: a list of Commit objects cost more to build than the whole
    cost computation."""

    __slots__ = ("_at", "_offset", "_start", "_stop")

    def __init__(self, at_us: Sequence[int], offsets: Sequence[int], start: int = 0, stop: int | None = None) -> None:
        self._at, self._offset = at_us, offsets
        self._start, self._stop = start, len(at_us) if stop is None else stop

    @classmethod
    def of(cls, commits: Iterable[Commit]) -> CommitSeries:
        """The series of `commits` in any order (sorted by time, then offset)."""
        ordered = sorted(commits, key=lambda c: (c.at, c.offset))
        return cls([_micros(c.at) for c in ordered], [c.offset for c in ordered])

    def __len__(self) -> int:
        return self._stop - self._start

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                raise ValueError("a CommitSeries is sliced with step 1 only")
            return CommitSeries(self._at, self._offset, self._start + start, self._start + max(start, stop))
        i = index + len(self) if index < 0 else index
        if not 0 <= i < len(self):
            raise IndexError(index)
        j = self._start + i
        return Commit(_EPOCH + timedelta(microseconds=int(self._at[j])), int(self._offset[j]))

    def between(self, low: datetime | None, high: datetime | None) -> CommitSeries:
        """The commits at `low` or later and at `high` or earlier (None: unbounded), as a view."""
        start = self._start if low is None else bisect.bisect_left(self._at, _micros(low), self._start, self._stop)
        stop = self._stop if high is None else bisect.bisect_right(self._at, _micros(high), start, self._stop)
        return CommitSeries(self._at, self._offset, start, max(start, stop))

    def times(self) -> list[datetime]:
        return [_EPOCH + timedelta(microseconds=int(t)) for t in self._at[self._start:self._stop]]


_NO_COMMITS: Final = CommitSeries([], [])


def _series(commits: Mapping[Partition, Sequence[Commit]]) -> dict[Partition, CommitSeries]:
    return {p: c if isinstance(c, CommitSeries) else CommitSeries.of(c) for p, c in commits.items()}


# ---------------------------------------------------------------------------------------------------
# Per partition


@dataclass
class _End:
    low: datetime | None
    high: datetime | None
    point: datetime | None = None
    source: str = SOURCE_BOUND

    def take(self, point: datetime, source: str) -> None:
        """A point from `source`; the bounds widen to hold it (a line is the member's own word)."""
        self.point, self.source = point, source
        if self.low is not None and point < self.low:
            self.low = point
        if self.high is not None and point > self.high:
            self.high = point


def _ms(a: datetime | None, b: datetime | None) -> int | None:
    return None if a is None or b is None else round((b - a).total_seconds() * 1000)


@dataclass(frozen=True)
class _Rate:
    per_s: float
    window_ms: int
    commits: int


def _rate(commits: CommitSeries, before: datetime | None, lookback: timedelta) -> _Rate | None:
    """Committed-offset progress per second over the commits in ``(before - lookback, before]``."""
    if before is None:
        return None
    window = commits.between(before - lookback, before)
    if len(window) < 2 or window[-1].at <= window[0].at:
        return None
    span = (window[-1].at - window[0].at).total_seconds()
    return _Rate(max(0, window[-1].offset - window[0].offset) / span, round(span * 1000), len(window))


def _spacing(commits: CommitSeries, before: datetime | None, lookback: timedelta) -> timedelta | None:
    """The median interval between the commits before `before` (a member's auto-commit interval)."""
    if before is None:
        return None
    times = commits.between(before - lookback, before).times()
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(times) if b > a]
    return timedelta(seconds=statistics.median(gaps)) if gaps else None


def _line_for(lines: Sequence[ClientLine], member: str | None, partition: Partition, kinds: tuple[str, ...],
              low: datetime | None, high: datetime | None, tolerance: timedelta, last: bool,
              not_after: datetime | None = None) -> ClientLine | None:
    """The member's line of one of `kinds` naming the partition, within the bounds (widened by `tolerance`)
    and no later than `not_after`: the last such line (a stop) or the first (a resume)."""
    if member is None:
        return None
    found = [x for x in lines if x.member_id == member and x.event_type in kinds and partition in x.partitions
             and (low is None or x.at >= low - tolerance) and (high is None or x.at <= high + tolerance)
             and (not_after is None or x.at <= not_after)]
    if not found:
        return None
    return found[-1] if last else found[0]


def _positioned(lines: Sequence[ClientLine], member: str | None, p: Partition, assigned: datetime) -> datetime:
    """When the member could fetch the partition after its assign line: its first position line for it
    before the member let it go again (a consumer whose offset fetch waits on a loading coordinator stays
    paused for that long), else the assign line itself (clients that log no position line)."""
    later = [x for x in lines if x.member_id == member and p in x.partitions and x.at >= assigned
             and x.event_type in (*POSITION_EVENT_TYPES, ev.CLIENT_PARTITIONS_REVOKED, ev.CLIENT_PARTITIONS_LOST)]
    first = min(later, key=lambda x: x.at, default=None)
    return first.at if first is not None and first.event_type in POSITION_EVENT_TYPES else assigned


def _pause(p: Partition, from_member: str | None, to_member: str | None, via: int | None, stop: _End,
           resume: _End | None, commits: CommitSeries, settings: CostSettings) -> PartitionPause:
    if resume is None:  # nobody took the partition over: paused from the stop on, with no end known
        resume = _End(None, None)
    rate = _rate(commits, stop.point or stop.low or stop.high, settings.rate_lookback)
    pause = _ms(stop.point, resume.point)
    low = max(0, _ms(stop.high, resume.low) or 0) if stop.high is not None and resume.low is not None else 0
    high = _ms(stop.low, resume.high)
    if high is not None:
        high = max(high, low)
    if pause is not None:
        pause = min(max(pause, low), high) if high is not None else max(pause, low)

    def delayed(ms: int | None) -> int | None:
        return None if rate is None or ms is None else round(rate.per_s * ms / 1000)

    return PartitionPause(
        topic=p.topic, partition=p.partition, from_member=from_member, to_member=to_member, via_generation=via,
        stopped_at=stop.point, stopped_low=stop.low, stopped_high=stop.high, stop_source=stop.source,
        resumed_at=resume.point, resumed_low=resume.low, resumed_high=resume.high, resume_source=resume.source,
        pause_ms=pause, pause_low_ms=low, pause_high_ms=high,
        rate_per_s=None if rate is None else rate.per_s, rate_window_ms=None if rate is None else rate.window_ms,
        rate_commits=None if rate is None else rate.commits,
        records_delayed=delayed(pause), records_delayed_low=delayed(low), records_delayed_high=delayed(high),
        inferred=stop.source in (SOURCE_COMMITS, SOURCE_BOUND) or resume.source in (SOURCE_COMMITS, SOURCE_BOUND))


# ---------------------------------------------------------------------------------------------------
# Per rebalance


def _kind(g: CostGeneration, before: CostGeneration | None = None) -> str:
    """The protocol kind (an empty generation has no protocol: the one before it tells)."""
    if g.group_protocol == CONSUMER:
        return CONSUMER_PROTOCOL
    protocol = g.protocol or (before.protocol if before is not None else None) or ""
    return COOPERATIVE if protocol in COOPERATIVE_ASSIGNORS else EAGER


def _classic_stop_bounds(g: CostGeneration, before: CostGeneration | None) -> _End:
    """When members stopped for a classic rebalance: at or after its start line; without one, after the
    previous generation's sync and within the largest rebalance timeout before the join ended; by the end of
    the join at the latest (every member had sent its JoinGroup)."""
    high = g.stabilized_at or g.stored_at
    if g.started_at is not None:
        return _End(g.started_at, high, g.started_at, SOURCE_BROKER)
    low = before.order_time if before is not None else None
    timeouts = [m.rebalance_timeout_ms for m in (*g.members, *(before.members if before else ()))
                if m.rebalance_timeout_ms]
    if high is not None and timeouts:
        floor = high - timedelta(milliseconds=max(timeouts))
        low = floor if low is None else max(low, floor)
    return _End(low, high)


def _resume_bounds(g: CostGeneration) -> _End:
    """Members resume after the sync ends: the stored record's time (a point: the SyncGroup responses go out
    with it), else the end of the join."""
    if g.stored_at is not None:
        return _End(g.stored_at, None, g.stored_at, SOURCE_RECORD)
    return _End(g.stabilized_at, None)


def _from_commits_stop(stop: _End, commits: CommitSeries) -> None:
    """The old owner's last commit within the stop's bounds: it was still consuming then (and auto-commit
    commits on revocation), so the stop is no earlier; the point when no line or start line gave one."""
    if stop.high is None:
        return
    inside = commits.between(stop.low, stop.high)
    if not inside:
        return
    last = inside[-1].at
    stop.low = last
    if stop.point is None or stop.point < last:
        stop.point, stop.source = last, SOURCE_COMMITS


def _from_commits_resume(resume: _End, commits: CommitSeries, spacing: timedelta | None) -> None:
    """The new owner's first commit after the sync: it had resumed by then (the high bound); without a
    better point, that commit less the member's commit spacing."""
    if resume.low is None:
        return
    after = commits.between(resume.low, None)
    if not after:
        return
    first = after[0].at
    resume.high = first if resume.high is None else min(resume.high, first)
    if resume.point is None:
        resume.point = max(resume.low, first - (spacing or timedelta(0)))
        resume.source = SOURCE_COMMITS
    elif resume.point > resume.high:
        resume.high = resume.point


@dataclass
class _Context:
    lines: list[ClientLine]
    commits: Mapping[Partition, CommitSeries]
    settings: CostSettings
    #: the commits the current generation may read: [its completion - horizons, next start or resume horizon]
    window: tuple[datetime, datetime] | None = None
    #: (member id, classic generation) -> the member's first line of that generation (joined or synced), on
    #: the broker's clock: its assign line for the generation comes after it
    joined: Mapping[tuple[str, int], datetime] = dataclasses.field(default_factory=dict)

    def commits_of(self, p: Partition) -> CommitSeries:
        commits = self.commits.get(p, _NO_COMMITS)
        return commits if self.window is None else commits.between(*self.window)

    def enter(self, g: CostGeneration) -> None:
        at = g.order_time
        if at is None:
            self.window = None
            return
        lo = (g.started_at or at) - self.settings.commit_horizon - self.settings.rate_lookback
        hi = at + self.settings.resume_horizon
        self.window = (lo, min(hi, g.ended_at) if g.ended_at is not None else hi)


def _departed_stop(stop: _End, commits: CommitSeries) -> None:
    """An owner that is not a member of the new generation and logged no revocation: it may have left
    cleanly at the rebalance's start, or died a session timeout before it. Its last commit before the join
    ended is the earliest it can have stopped; no point is claimed."""
    before = commits.between(None, stop.high)
    if before and (stop.low is None or before[-1].at < stop.low):
        stop.low = before[-1].at
    stop.point, stop.source = None, SOURCE_BOUND


def _classic_pause(ctx: _Context, p: Partition, from_member: str | None, to_member: str | None,
                   stop: _End, resume: _End | None, via: int | None, departed: bool = False,
                   reconciled: bool = False, generation: int | None = None) -> PartitionPause:
    """One partition's pause: the new owner's line first (it ends the pause), then the old owner's last
    revocation before it (a later one belongs to a later pause), then what the commits add.

    `reconciled` (KIP-848): the old owner goes on consuming after the epoch's record until it revokes, so
    commits tell nothing about the stop, and bound the resume only after a revocation line."""
    tol = ctx.settings.line_tolerance
    commits = ctx.commits_of(p)
    resumed = None
    if resume is not None:
        # After the new owner joined the generation, where its log says so: with rebalances a couple of
        # seconds apart, the tolerance alone would reach back to its assign line of the generation before.
        joined = ctx.joined.get((to_member, generation)) if to_member is not None and generation is not None \
            else None
        low = resume.low if joined is None or resume.low is None else max(joined, resume.low - tol)
        resumed = _line_for(ctx.lines, to_member, p, RESUME_EVENT_TYPES, low, None,
                            tol if joined is None else timedelta(0), last=False)
        if resumed is not None:
            resume.take(_positioned(ctx.lines, to_member, p, resumed.at), SOURCE_CLIENT)
    limit = stop.high if stop.high is not None or resumed is None else resumed.at
    # The last revocation before the resume: a member that revokes again soon after (it closes, or the next
    # rebalance starts) logs a later line within the tolerance, which belongs to the next pause.
    line = _line_for(ctx.lines, from_member, p, (ev.CLIENT_PARTITIONS_REVOKED, ev.CLIENT_PARTITIONS_LOST),
                     stop.low, limit, tol, last=True, not_after=None if resumed is None else resumed.at)
    if line is not None:
        stop.take(line.at, SOURCE_CLIENT)
    elif departed:
        _departed_stop(stop, commits)
    elif not reconciled or stop.high is not None:
        _from_commits_stop(stop, commits)
    # KIP-848: once the old owner is known to have let go (its revocation line, or the record of its release),
    # the partition's later commits are the new owner's.
    if resume is not None and (not reconciled or stop.source == SOURCE_CLIENT or stop.high is not None):
        if reconciled and stop.point is not None and (resume.low is None or resume.low < stop.point):
            resume.low = stop.point  # the new owner cannot have started before the old one let go
        spacing = _spacing(commits, stop.point or stop.high, ctx.settings.rate_lookback)
        _from_commits_resume(resume, commits, spacing)
    return _pause(p, from_member, to_member, via, stop, resume, commits, ctx.settings)


def _copy(end: _End) -> _End:
    return dataclasses.replace(end)


def _consumer_change(ctx: _Context, g: CostGeneration, old: dict[Partition, str], new: dict[Partition, str]
                     ) -> tuple[list[PartitionPause], int]:
    """KIP-848: the epoch's target is stored first and members reconcile after, each at its own pace (the
    new owner waits until the old one has revoked), so a moved partition stops and resumes after the epoch's
    record. The members' assignment records bound each end: the old owner stopped after it was asked to
    revoke and by the record of its release; the new owner resumed after the record that gave it the
    partition. The old owner's revoke line and the new owner's reconciliation line give the points."""
    low = g.started_at or g.stored_at
    pauses = []
    for p, owner in sorted(old.items()):
        if p not in new or new[p] == owner:
            continue
        h = g.handovers.get((p, new[p]))
        if h is not None and h.from_member == owner:
            # Without the revocation request (a member that left: it let go before its record was deleted, which
            # precedes the epoch's start) the stop's low bound is its last commit (it commits before it revokes).
            stop_low = h.requested_at
            if stop_low is None and h.released_at is not None:
                released = ctx.commits_of(p).between(None, h.released_at)
                stop_low = released[-1].at if released else None
            stop = _End(stop_low, h.released_at) if stop_low is not None or h.released_at is not None \
                else _End(low, None)
            resume = _End(h.assigned_at or low, None)
        else:  # an archive that starts mid-move, or a table row written before the hand-overs were kept
            stop, resume = _End(low, None), _End(low, None)
        pauses.append(_classic_pause(ctx, p, owner, new[p], stop, resume, None, reconciled=True))
    return pauses, sum(1 for p, owner in old.items() if new.get(p) == owner)


def _cooperative_change(ctx: _Context, g: CostGeneration, before: CostGeneration | None, old: dict[Partition, str],
                        new: dict[Partition, str], stop_bounds: _End, resume_bounds: _End,
                        pending: dict[Partition, tuple[str, CostGeneration]]) -> tuple[list[PartitionPause], int]:
    """Kept partitions go on being consumed. A partition revoked in a first round (owned before, unassigned
    now, its owner still a member) pauses from that round's sync to its assignment in the next (`pending`
    carries it between the rounds); one whose owner left moves in one round."""
    members_now = set(new.values()) | {m.member_id for m in g.members}
    # A first round's revocations are for the round right after it; a partition still unassigned then was
    # left unowned, not paused by a cooperative move.
    for p in [p for p, (_, first_round) in pending.items() if first_round is not before]:
        pending.pop(p)
    kept = 0
    for p, owner in sorted(old.items()):
        if new.get(p) == owner:
            kept += 1
        elif p not in new and owner in members_now:
            pending[p] = (owner, g)
    pauses = []
    for p, to in sorted(new.items()):
        if p in pending and old.get(p) != to:
            owner, first_round = pending.pop(p)
            # Revoked after the first round's sync, by the second round's join end at the latest.
            stop = _End(first_round.stored_at or first_round.stabilized_at, g.stabilized_at or g.stored_at)
            pauses.append(_classic_pause(ctx, p, owner, to, stop, _copy(resume_bounds), first_round.generation,
                                         generation=g.generation))
        elif p in old and old[p] != to:
            pauses.append(_classic_pause(ctx, p, old[p], to, _copy(stop_bounds), _copy(resume_bounds), None,
                                         departed=old[p] not in members_now, generation=g.generation))
        pending.pop(p, None)
    for p in [p for p, (owner, _) in pending.items() if p not in new and owner not in members_now]:
        pending.pop(p)  # its owner left before anyone took it over
    return pauses, kept


def _generation_change(ctx: _Context, g: CostGeneration, before: CostGeneration | None,
                       pending: dict[Partition, tuple[str, CostGeneration]]) -> tuple[list[PartitionPause], int]:
    """The partitions generation `g` paused (and how many it kept)."""
    kind = _kind(g, before)
    old = before.owners() if before is not None else {}
    new = g.owners(at_start=True)
    if kind == CONSUMER_PROTOCOL:
        return _consumer_change(ctx, g, old, new)
    stop_bounds = _classic_stop_bounds(g, before)
    resume_bounds = _resume_bounds(g)
    if kind == COOPERATIVE:
        return _cooperative_change(ctx, g, before, old, new, stop_bounds, resume_bounds, pending)
    # Eager: every member revokes everything it owns. Partitions nobody consumed before, or nobody after
    # (the group stopped consuming them), did not pause.
    members_now = set(new.values())
    return [_classic_pause(ctx, p, old[p], new[p], _copy(stop_bounds), _copy(resume_bounds), None,
                           departed=old[p] not in members_now, generation=g.generation)
            for p in sorted(old) if p in new], 0


def _static_restart(ctx: _Context, g: CostGeneration, old_id: str, new_id: str, at: datetime | None
                    ) -> list[PartitionPause]:
    """A static member replaced without a rebalance: the new instance takes over the old one's partitions.
    The old instance stopped within its session timeout before the replacement; the new one resumes after
    its sync (the replacement record's time)."""
    member = next((m for m in g.members if m.member_id == new_id), None)
    if member is None or at is None:
        return []
    low = at - timedelta(milliseconds=member.session_timeout_ms) if member.session_timeout_ms else None
    return [_classic_pause(ctx, p, old_id, new_id, _End(low, at), _End(at, None, at, SOURCE_RECORD), None,
                           generation=g.generation) for p in sorted(member.assigned)]


def _union_ms(intervals: Iterable[tuple[datetime, datetime]]) -> int:
    total, end = 0.0, None
    for a, b in sorted(intervals):
        if b <= a:
            continue
        if end is None or a > end:
            total += (b - a).total_seconds()
            end = b
        elif b > end:
            total += (b - end).total_seconds()
            end = b
    return round(total * 1000)


def _row(g: CostGeneration, kind: str, pauses: list[PartitionPause], kept: int, restarted: str | None,
         offsets: Mapping[str, int], detail: str) -> RebalanceCostRow:
    stops = [(p.stopped_at or p.stopped_low, p.stop_source if p.stopped_at else SOURCE_BOUND) for p in pauses]
    resumes = [(p.resumed_at or p.resumed_high or p.resumed_low, p.resume_source if p.resumed_at else SOURCE_BOUND)
               for p in pauses]
    start = min(((t, s) for t, s in stops if t is not None), default=(None, SOURCE_BOUND))
    end = max(((t, s) for t, s in resumes if t is not None), default=(None, SOURCE_BOUND))
    points = all(p.pause_ms is not None for p in pauses)
    highs = all(p.pause_high_ms is not None for p in pauses)
    with_rate = [p for p in pauses if p.rate_per_s is not None]
    pause_ms = _union_ms((p.stopped_at, p.resumed_at) for p in pauses) if points else None  # type: ignore[misc]
    low_ms = _union_ms((p.stopped_high, p.resumed_low) for p in pauses
                       if p.stopped_high is not None and p.resumed_low is not None)
    high_ms = (_union_ms((p.stopped_low, p.resumed_high) for p in pauses) if highs and all(  # type: ignore[misc]
        p.stopped_low is not None and p.resumed_high is not None for p in pauses) else None)
    if high_ms is not None:
        high_ms = max(high_ms, low_ms)
    if pause_ms is not None:
        pause_ms = max(pause_ms, low_ms) if high_ms is None else min(max(pause_ms, low_ms), high_ms)

    def total(values: list[int | None]) -> int | None:
        if not pauses:
            return 0
        return None if not with_rate or any(v is None for v in values) else sum(v for v in values if v is not None)

    return RebalanceCostRow(
        group_id=g.group_id, group_protocol=g.group_protocol, generation=g.generation, record_offset=g.record_offset,
        restarted_member_id=restarted, rebalance_at=g.order_time, protocol=g.protocol, protocol_kind=kind,
        window_start=start[0], window_start_source=start[1], window_end=end[0], window_end_source=end[1],
        pause_ms=pause_ms if pauses else 0, pause_low_ms=low_ms, pause_high_ms=high_ms if pauses else 0,
        members_paused=len({m for p in pauses for m in (p.from_member, p.to_member) if m is not None}),
        partitions_paused=len(pauses), partitions_kept=kept,
        partition_seconds=sum(p.pause_ms for p in pauses if p.pause_ms is not None) / 1000 if points else None,
        partition_seconds_low=sum(p.pause_low_ms for p in pauses) / 1000,
        partition_seconds_high=sum(p.pause_high_ms for p in pauses if p.pause_high_ms is not None) / 1000
        if highs else None,
        partitions_with_rate=len(with_rate), rate_coverage=len(with_rate) / len(pauses) if pauses else None,
        records_delayed=total([p.records_delayed for p in with_rate]),
        records_delayed_low=total([p.records_delayed_low for p in with_rate]),
        records_delayed_high=total([p.records_delayed_high for p in with_rate]),
        inferred=any(p.inferred for p in pauses), clock_offsets_ms=dict(offsets), detail=detail,
        partitions=tuple(pauses))


def _clock_offsets(syncs: Sequence[SyncLine], generations: Sequence[CostGeneration], settings: CostSettings
                   ) -> dict[str, timedelta]:
    """Per stream, the median of (its "Successfully synced" line - the stored assignment of that generation)."""
    classic = {g.generation: g for g in generations if g.group_protocol != CONSUMER}
    by_stream: dict[str, list[float]] = {}
    for s in syncs:
        if not s.synced:
            continue
        stored = classic[s.generation].synced_at(s.member_id) if s.generation in classic else None
        if stored is not None:
            by_stream.setdefault(s.stream, []).append((s.at - stored).total_seconds())
    return {stream: timedelta(seconds=statistics.median(values)) for stream, values in by_stream.items()}


def _off(offset: timedelta, settings: CostSettings) -> bool:
    """A stream whose sync line precedes the stored assignment, or follows it by too much, has a clock off."""
    return offset < timedelta(0) or offset > settings.skew_threshold


def _shifted(lines: list[ClientLine], syncs: Sequence[SyncLine], offsets: Mapping[str, timedelta],
             settings: CostSettings) -> tuple[list[ClientLine], dict[str, int]]:
    """Lines of streams whose clock is off (synced before the broker stored the assignment, or too long
    after) moved onto the broker's clock; every measured offset by member id, for the rows."""
    moved = {s for s, o in offsets.items() if _off(o, settings)}
    out = [dataclasses.replace(x, at=x.at - offsets[x.stream]) if x.stream in moved else x
           for x in lines] if moved else lines
    by_member = {s.member_id: round(offsets[s.stream].total_seconds() * 1000) for s in syncs if s.stream in offsets}
    return out, by_member


def _joined(syncs: Sequence[SyncLine], offsets: Mapping[str, timedelta], settings: CostSettings
            ) -> dict[tuple[str, int], datetime]:
    """(member id, generation) -> its first joined/synced line, moved as `_shifted` moves its stream's lines."""
    out: dict[tuple[str, int], datetime] = {}
    for s in syncs:
        o = offsets.get(s.stream)
        at = s.at - o if o is not None and _off(o, settings) else s.at
        key = (s.member_id, s.generation)
        if key not in out or at < out[key]:
            out[key] = at
    return out


def rebalance_costs(generations: Iterable[Any], events: Iterable[Any] = (),
                    commits: Mapping[Partition, Sequence[Commit]] | None = None,
                    settings: CostSettings | None = None, only: Iterable[int] | None = None) -> list[RebalanceCostRow]:
    """The cost of each rebalance of one group.

    `generations`: the group's generation rows (``GenerationRow`` or group_generations mappings), any order;
    the first one serves as the "before" of the next and gets a row only if it has no predecessor to compare
    with (a group's first generation pauses nothing). `events`: its members' client lines (see
    :func:`client_lines`); `commits`: per partition, its commits in time order. `only`: generation numbers
    to give rows for (the others are read as context); None: all.
    """
    settings = settings or CostSettings()
    gens = sorted((cost_generation(r) for r in generations),
                  key=lambda g: (g.order_time or datetime.min, g.generation))
    lines, syncs = client_lines(events)
    ctx = _Context(lines, _series(commits or {}), settings)
    wanted = None if only is None else set(only)
    rows: list[RebalanceCostRow] = []
    before: CostGeneration | None = None
    pending: dict[Partition, tuple[str, CostGeneration]] = {}
    for g in gens:
        if g.outcome not in (STABLE, EMPTY):
            continue  # created placeholders, missing epochs, join phases that never completed: no assignment
        ctx.enter(g)
        # Clocks measured on this rebalance's own syncs (this generation's and the one before), so a row
        # depends on its neighbours only, as the nightly job reads them.
        local = [x for x in (before, g) if x is not None]
        numbers = {x.generation for x in local}
        mine = [s for s in syncs if s.generation in numbers]
        offsets = _clock_offsets(mine, local, settings)
        ctx.lines, offsets_ms = _shifted(lines, mine, offsets, settings)
        ctx.joined = _joined(mine, offsets, settings)
        pauses, kept = _generation_change(ctx, g, before, pending)
        give = wanted is None or g.generation in wanted
        members = {p.from_member for p in pauses} | {p.to_member for p in pauses}
        offs = {m: o for m, o in offsets_ms.items() if m in members}
        if give:
            rows.append(_row(g, _kind(g, before), pauses, kept, None, offs, _detail(g, before, pauses, kept)))
        for old_id, new_id, instance, at in g.static_replacements:
            restart = _static_restart(ctx, g, old_id, new_id, at)
            if give:
                rows.append(_row(g, STATIC_RESTART_KIND, restart, 0, new_id,
                                 {m: o for m, o in offsets_ms.items() if m in (old_id, new_id)},
                                 f"static member {instance or '?'} replaced ({old_id} -> {new_id}) without a "
                                 f"rebalance: its {len(restart)} partitions paused while it restarted"))
        before = g
    return rows


def _detail(g: CostGeneration, before: CostGeneration | None, pauses: list[PartitionPause], kept: int) -> str:
    kind = _kind(g, before)
    if before is None:
        return "the group's first generation in the data read: nothing was consumed before it"
    if g.outcome == EMPTY:
        return f"{kind}: the group emptied: its members stopped consuming (no pause to a new owner)"
    if not pauses:
        return (f"{kind}: no partition changed hands ({kept} kept and consumed throughout)" if kind != EAGER
                else "eager: no partition was owned before this generation")
    parts = [f"{kind}: {len(pauses)} partitions paused"]
    if kind == EAGER:
        parts.append("(an eager rebalance revokes every partition)")
    elif kept:
        parts.append(f"({kept} kept and consumed throughout)")
    bounded = sum(1 for p in pauses if p.pause_ms is None)
    if bounded:
        parts.append(f"; {bounded} with bounds only (no line, start line or commit gives a point)")
    return " ".join(parts)


def partition_seconds_hours(rows: Iterable[RebalanceCostRow]) -> float:
    """Paused partition-hours of the rows (their point figures, else their low bounds)."""
    return sum((r.partition_seconds if r.partition_seconds is not None else r.partition_seconds_low)
               for r in rows) / 3600.0


def commits_by_partition(rows: Iterable[Any]) -> dict[Partition, CommitSeries]:
    """(topic, partition, at, offset) rows or mappings -> each partition's commits in time order."""
    out: dict[Partition, list[Commit]] = {}
    for r in rows:
        at, offset = _naive(_get(r, "at")), _get(r, "offset")
        if at is None or offset is None or (isinstance(offset, float) and math.isnan(offset)):
            continue
        out.setdefault(Partition(str(_get(r, "topic")), int(_get(r, "partition"))), []).append(Commit(at, int(offset)))
    return _series(out)
