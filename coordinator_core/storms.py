"""Rebalance storms: windows of back-to-back rebalances of one group, who flapped, and groups that stormed
in lock-step.

Input is one :class:`Rebalance` per completed (or abandoned) generation, as the generation history
produces them. A run of rebalances of one group continues while each next rebalance starts less than ``quiet_minutes``
after the previous one ended; a quiet period of that length ends it. The run is a storm when at least
``min_rebalances`` of its rebalances start within ``window_minutes``, or when a member flaps in it: the
same member (instance id, or client id and host) joins ``flapping_min_rejoins`` times, as a crash-looping
consumer or one that keeps exceeding ``max.poll.interval.ms`` does. Thresholds come from conf/.

The dominant cause is the storm's most frequent failure (session or poll timeout, eviction, fencing,
coordinator trouble) when it has one, else its most frequent cause: in a crash loop the joins of the
restarted member are the symptom and the session timeouts the cause.

Severity (0-100) is documented so an operator can reason about the ranking::

    severity = min(100, 15 * log2(1 + rebalances)
                        + 10 * log10(1 + stalled_seconds)
                        + 5 * flapping_members
                        + 10 * (1 if lock-step with other groups else 0))

where ``stalled_seconds`` is the time the group could not consume: the summed rebalance durations for
eager protocols, and for cooperative ones only the rebalances that revoked partitions (cooperative
members keep consuming what they keep).

The rebalances come from the group's generation rows (:func:`generation_rebalances`). The nightly job
continues each group's storms run by run with :func:`fold_storms` (the rows a run changed, plus a carried
:class:`StormState`: the rows from the start of the group's last run of rebalances that new rows can still
extend or late log lines amend), and marks lock-step waves again only for the chains of storms near the
changed ones (:func:`lockstep_chains`).
"""

from __future__ import annotations

import bisect
import copy
import dataclasses
import hashlib
import math
import pickle
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from coordinator_core.advice import FAILURE_CAUSES, dominant_cause
from coordinator_core.history.model import NOT_A_COLUMN
from coordinator_core.state_codec import dump_versioned, load_versioned


@dataclass(frozen=True)
class StormThresholds:
    """When a run of rebalances is a storm. ``lockstep_seconds``: storms of different groups starting
    within this many seconds of each other, at least ``lockstep_min_groups`` of them, are one wave."""

    min_rebalances: int = 3
    window_minutes: float = 10.0
    quiet_minutes: float = 10.0
    flapping_min_rejoins: int = 3
    lockstep_seconds: float = 120.0
    lockstep_min_groups: int = 3

    def __post_init__(self) -> None:
        if self.min_rebalances < 2:
            raise ValueError("min_rebalances must be at least 2")
        if min(self.window_minutes, self.quiet_minutes, self.lockstep_seconds) <= 0:
            raise ValueError("window_minutes, quiet_minutes and lockstep_seconds must be positive")


@dataclass(frozen=True)
class MemberIdentity:
    """Who a member is across member ids: its static instance id if any, else client id and host."""

    client_id: str | None
    client_host: str | None
    group_instance_id: str | None = None

    def label(self) -> str:
        if self.group_instance_id:
            return f"instance {self.group_instance_id}"
        return f"{self.client_id or '?'}@{self.client_host or '?'}"


@dataclass(frozen=True)
class Rebalance:
    """One rebalance of one group (one generation of the history)."""

    cluster: str
    group_id: str
    generation: int
    started_at: datetime
    ended_at: datetime | None
    cause: str | None
    protocol: str | None = None
    joined: tuple[MemberIdentity, ...] = ()
    left: tuple[MemberIdentity, ...] = ()
    revoked_partitions: int | None = None
    coordinator: str | None = None  # e.g. the `__consumer_offsets` partition or broker id
    other_causes: tuple[str, ...] = ()  # further causes of the same rebalance (e.g. a timeout during a join)

    @property
    def duration_seconds(self) -> float:
        if self.ended_at is None:
            return 0.0
        return max((self.ended_at - self.started_at).total_seconds(), 0.0)

    @property
    def cooperative(self) -> bool:
        return self.protocol == "cooperative-sticky"

    @property
    def stalled_seconds(self) -> float:
        """Time the group could not consume during this rebalance (see the module docstring)."""
        if self.cooperative and self.revoked_partitions == 0:
            return 0.0
        return self.duration_seconds


@dataclass(frozen=True)
class Storm:
    """One storm window of one group: one row of ``rebalance_storms`` (its columns are these fields, in this
    order, typed by ``coordinator_core.history.model.schema_fields``; ``generations`` is the fold's own)."""

    cluster: str
    group_id: str
    window_start: datetime
    window_end: datetime
    rebalances: int
    first_generation: int
    last_generation: int
    total_rebalance_seconds: float
    stalled_seconds: float
    dominant_cause: str | None
    causes: dict[str, int]
    flapping_members: tuple[str, ...]
    lockstep_id: str | None = None
    lockstep_groups: int = 0
    severity: float = 0.0
    generations: tuple[int, ...] = field(default=(), repr=False, metadata=NOT_A_COLUMN)


def severity(rebalances: int, stalled_seconds: float, flapping_members: int, lockstep: bool) -> float:
    """The documented severity score (0-100); see the module docstring."""
    score = (15 * math.log2(1 + rebalances) + 10 * math.log10(1 + max(stalled_seconds, 0.0))
             + 5 * flapping_members + (10 if lockstep else 0))
    return round(min(100.0, score), 1)


def _flapping(rebalances: Sequence[Rebalance], min_rejoins: int) -> tuple[str, ...]:
    joins = Counter(m.label() for r in rebalances for m in r.joined)
    return tuple(sorted(label for label, n in joins.items() if n >= min_rejoins))


def _storm(rebalances: Sequence[Rebalance], t: StormThresholds) -> Storm:
    causes = Counter(r.cause or "unknown" for r in rebalances)
    failures = Counter(c for r in rebalances for c in {r.cause, *r.other_causes} if c in FAILURE_CAUSES)
    dominant = dominant_cause(causes, failures)  # the report ranks a group's causes by the same rule
    last = rebalances[-1]
    end = max((r.ended_at or r.started_at) for r in rebalances)
    flapping = _flapping(rebalances, t.flapping_min_rejoins)
    stalled = sum(r.stalled_seconds for r in rebalances)
    return Storm(
        cluster=rebalances[0].cluster,
        group_id=rebalances[0].group_id,
        window_start=rebalances[0].started_at,
        window_end=end,
        rebalances=len(rebalances),
        first_generation=rebalances[0].generation,
        last_generation=last.generation,
        total_rebalance_seconds=sum(r.duration_seconds for r in rebalances),
        stalled_seconds=stalled,
        dominant_cause=dominant,
        causes=dict(sorted(causes.items())),
        flapping_members=flapping,
        severity=severity(len(rebalances), stalled, len(flapping), False),
        generations=tuple(r.generation for r in rebalances),
    )


def group_storms(rebalances: Iterable[Rebalance], thresholds: StormThresholds | None = None) -> list[Storm]:
    """The storms of ONE group's rebalances (any order; sorted by start here).

    >>> from datetime import datetime as D, timedelta as T
    >>> t0 = D(2026, 1, 1, 12, 0)
    >>> rs = [Rebalance("c", "g", i, t0 + T(minutes=2 * i), t0 + T(minutes=2 * i, seconds=30), "poll_timeout")
    ...       for i in range(4)]
    >>> rs.append(Rebalance("c", "g", 9, t0 + T(hours=5), t0 + T(hours=5, seconds=5), "new_member"))
    >>> [(s.rebalances, s.dominant_cause, s.total_rebalance_seconds) for s in group_storms(rs)]
    [(4, 'poll_timeout', 120.0)]
    """
    t = thresholds or StormThresholds()
    ordered = sorted(rebalances, key=lambda r: (r.started_at, r.generation))
    return [_storm(run, t) for run in _runs(ordered, t) if _is_storm(run, t)]


def _runs(ordered: Sequence[Rebalance], t: StormThresholds) -> list[list[Rebalance]]:
    """Rebalances (sorted by start) cut into runs: a run ends when the next rebalance starts at least
    ``quiet_minutes`` after every rebalance of the run has ended."""
    quiet = timedelta(minutes=t.quiet_minutes)
    runs: list[list[Rebalance]] = []
    run_end: datetime | None = None
    for r in ordered:
        if runs and run_end is not None and r.started_at - run_end < quiet:
            runs[-1].append(r)
            run_end = max(run_end, r.ended_at or r.started_at)
        else:
            runs.append([r])
            run_end = r.ended_at or r.started_at
    return runs


def _is_storm(run: Sequence[Rebalance], t: StormThresholds) -> bool:
    """A run is a storm if some `min_rebalances` consecutive rebalances of it start within the window, or
    if a member flaps in it (joins `flapping_min_rejoins` times: a crash loop, a consumer that keeps
    exceeding max.poll.interval.ms), however few rebalances that took."""
    window = timedelta(minutes=t.window_minutes)
    dense = len(run) >= t.min_rebalances and any(
        run[i + t.min_rebalances - 1].started_at - run[i].started_at <= window
        for i in range(len(run) - t.min_rebalances + 1)
    )
    return dense or bool(_flapping(run, t.flapping_min_rejoins))


def detect_storms(rebalances: Iterable[Rebalance], thresholds: StormThresholds | None = None) -> list[Storm]:
    """Storms of every group, then lock-step waves across groups: storms of at least
    ``lockstep_min_groups`` different groups of one cluster starting within ``lockstep_seconds`` of each
    other share a ``lockstep_id`` (a deploy wave, a coordinator failover), which raises their severity."""
    t = thresholds or StormThresholds()
    by_group: dict[tuple[str, str], list[Rebalance]] = {}
    for r in rebalances:
        by_group.setdefault((r.cluster, r.group_id), []).append(r)
    storms = [s for key in sorted(by_group) for s in group_storms(by_group[key], t)]
    return mark_lockstep(storms, t)


def mark_lockstep(storms: Sequence[Storm], thresholds: StormThresholds | None = None) -> list[Storm]:
    """Give storms that start together (per cluster) a shared lock-step id and count."""
    t = thresholds or StormThresholds()
    out: list[Storm] = []
    gap = timedelta(seconds=t.lockstep_seconds)
    by_cluster: dict[str, list[Storm]] = {}
    for s in storms:
        by_cluster.setdefault(s.cluster, []).append(s)
    for cluster in sorted(by_cluster):
        ordered = sorted(by_cluster[cluster], key=lambda s: (s.window_start, s.group_id))
        waves: list[list[Storm]] = []
        for s in ordered:
            if waves and s.window_start - waves[-1][-1].window_start <= gap:
                waves[-1].append(s)
            else:
                waves.append([s])
        for wave in waves:
            groups = {s.group_id for s in wave}
            lockstep = len(groups) >= t.lockstep_min_groups
            wave_id = f"{cluster}@{wave[0].window_start:%Y-%m-%dT%H:%M:%S}" if lockstep else None
            out.extend(dataclasses.replace(
                s, lockstep_id=wave_id, lockstep_groups=len(groups) if lockstep else 0,
                severity=severity(s.rebalances, s.stalled_seconds, len(s.flapping_members), lockstep))
                for s in wave)
    return out


# ----------------------------------------------------------------------------------------------
# From a group's generation rows (group_generations) to its rebalances


#: A row's identity in group_generations within its group: (group_protocol, generation, record_offset).
RowKey = tuple[str, int, "int | None"]

#: Generation outcomes that are rebalances (a ``created`` row is the group's birth, a ``missing`` one a
#: KIP-848 epoch whose record was lost: neither is a rebalance).
REBALANCE_OUTCOMES = frozenset({"stable", "empty", "never_completed"})


@dataclass(frozen=True, slots=True)
class GenerationFacts:
    """What storm detection reads of one group_generations row (see :func:`generation_facts`).

    ``started_at`` is when the rebalance began as far as the row knows (its "Preparing to rebalance" line;
    without one, the earlier of the end of the join phase and the stored assignment): the rows are ordered
    by it. ``rebalance_ms`` is how long the rebalance lasted from ``started_at``: the row's rebalance_ms, or
    for a row without a start its sync phase (``sync_ms``, stabilized -> stored), the part of the pause the
    records can tell. ``settled_at`` is the last moment known to belong to the rebalance, the clock of the
    reopen horizon (as the generation history's own fold measures it). Times are naive UTC, as the tables
    hold them.
    """

    group_protocol: str
    generation: int
    record_offset: int | None
    outcome: str
    started_at: datetime | None
    settled_at: datetime | None
    rebalance_ms: int | None
    cause: str | None
    causes: tuple[str, ...]
    protocol: str | None
    members: tuple[tuple[str, MemberIdentity], ...]
    members_joined: tuple[str, ...]
    members_left: tuple[str, ...]
    revoked_partitions: int | None

    @property
    def key(self) -> RowKey:
        return (self.group_protocol, self.generation, self.record_offset)

    @property
    def order(self) -> tuple[datetime, int, str, int]:
        """The row's place among the group's rows that have a time (a total order)."""
        assert self.started_at is not None
        return (self.started_at, self.generation, self.group_protocol,
                -1 if self.record_offset is None else self.record_offset)


def _naive_utc(value: datetime | None) -> datetime | None:
    if value is None or value.tzinfo is None:
        return value
    return value.astimezone(timezone.utc).replace(tzinfo=None)


def _items(value: Any) -> tuple[Any, ...]:
    """An array column as a tuple (None: empty); never truth-tested, so numpy arrays pass too."""
    return () if value is None else tuple(value)


def generation_facts(row: Mapping[str, Any]) -> GenerationFacts:
    """The facts of one group_generations row given as plain values: a table row, or
    ``GenerationRow.to_dict()`` (members as mappings with member_id, client_id, client_host and
    group_instance_id; ``partitions_revoked_then_assigned`` may be given as its length,
    ``revoked_partitions``).

    A row without ``rebalance_started_at`` (records only: no "Preparing to rebalance" line) starts at the
    earlier of ``stabilized_at`` and ``assignment_stored_at`` (a classic generation's end of the join phase,
    from its record's current_state_timestamp; a KIP-848 epoch's target assignment) and lasts its
    ``rebalance_ms``, else its ``sync_ms``; a row with a start is as it was."""
    started_at = _naive_utc(row.get("rebalance_started_at"))
    stored_at = _naive_utc(row.get("assignment_stored_at"))
    stabilized_at = _naive_utc(row.get("stabilized_at"))
    if "revoked_partitions" in row:
        revoked = row["revoked_partitions"]
    else:
        moved = row.get("partitions_revoked_then_assigned")
        revoked = None if moved is None else len(moved)
    rebalance_ms = row.get("rebalance_ms")
    if started_at is None:
        started_at = min((t for t in (stabilized_at, stored_at) if t is not None), default=None)
        if rebalance_ms is None:
            rebalance_ms = row.get("sync_ms")
    return GenerationFacts(
        group_protocol=row["group_protocol"],
        generation=int(row["generation"]),
        record_offset=None if row.get("record_offset") is None else int(row["record_offset"]),
        outcome=row["outcome"],
        started_at=started_at,
        settled_at=stored_at or stabilized_at or started_at,
        rebalance_ms=None if rebalance_ms is None else int(rebalance_ms),
        cause=row.get("cause"),
        causes=_items(row.get("causes")),
        protocol=row.get("protocol"),
        members=tuple((m["member_id"], MemberIdentity(m["client_id"], m["client_host"], m["group_instance_id"]))
                      for m in _items(row.get("members"))),
        members_joined=_items(row.get("members_joined")),
        members_left=_items(row.get("members_left")),
        revoked_partitions=None if revoked is None else int(revoked),
    )


def _rebalances_of(cluster: str, group_id: str, ordered: Sequence[GenerationFacts],
                   previous: Mapping[str, MemberIdentity]) -> tuple[list[Rebalance], list[int]]:
    """The rebalances among rows in their order, and the index of each one's row. ``previous``: the
    members of the last row before them that had members (whose departures the first one names)."""
    out: list[Rebalance] = []
    rows: list[int] = []
    for i, f in enumerate(ordered):
        members = dict(f.members)
        if f.outcome in REBALANCE_OUTCOMES and f.started_at is not None:
            joined = tuple(members[m] for m in f.members_joined if m in members)
            left = tuple(previous[m] for m in f.members_left if m in previous)
            others = tuple(c for c in f.causes if c != f.cause)
            out.append(Rebalance(cluster, group_id, f.generation, f.started_at,
                                 f.started_at + timedelta(milliseconds=f.rebalance_ms or 0), f.cause, f.protocol,
                                 joined, left, f.revoked_partitions, other_causes=others))
            rows.append(i)
        previous = members or previous
    return out, rows


def generation_rebalances(cluster: str, group_id: str, rows: Iterable[Mapping[str, Any]]) -> list[Rebalance]:
    """One group's rebalances from its group_generations rows (any order).

    A row is a rebalance when its outcome is stable, empty or never_completed and it has a time. Rows are
    taken in the order of their start (then generation, protocol, record offset): the order the storm
    windows use, and one that new rows only ever extend (a group deleted and created again restarts its
    generation numbers; a group migrated to KIP-848 continues with group epochs). The members that left a
    rebalance are looked up in the last earlier row with members; rows without any time are not placed
    and take no part.
    """
    timed = sorted((f for f in map(generation_facts, rows) if f.started_at is not None), key=lambda f: f.order)
    return _rebalances_of(cluster, group_id, timed, {})[0]


# ----------------------------------------------------------------------------------------------
# Storms as a fold over each run's changed generation rows

#: Bumped whenever :class:`StormState` or the rules of :func:`fold_storms` change: an older state is not
#: read, its group is recomputed from its whole history instead (see ``StormFold.rebuild_needed``).
STORM_STATE_VERSION = 1

#: The last rows of a group stay in the carried window whatever their age: the generation history can
#: still amend them (a record restoring the last generation, its next one ending it).
MIN_OPEN_ROWS = 4

#: At most this many of a group's last rows are held open for amendments (the generation history's own
#: fold keeps at most 256 drafts open); a run of rebalances in progress is held whole whatever its length.
MAX_OPEN_ROWS = 256

#: Rows without any time take no part in storms; their keys are remembered (so that their deletion is
#: recognised) up to this many.
MAX_TIMELESS_ROWS = 256


class StormStateVersionError(ValueError):
    """The carried state was written by another layout version (the group is recomputed in full)."""


@dataclass
class StormState:
    """One group's storm-detection state: the rows that can still change a storm, and what the rows
    before them left behind.

    The **window** holds every row from the start of the group's last run of rebalances that reaches the
    open rows (rows whose settled time is within the reopen horizon of the newest one, and the last
    ``MIN_OPEN_ROWS``) onward: everything a later row can extend, and everything a late log line can still
    amend. Before the window everything is final: the runs there are closed (``closed_end`` is when the
    last of them ended), their storms written for good. ``emitted`` is a digest of each storm written for
    the window, so that a run writes only the storms that changed.
    """

    cluster: str
    group_id: str
    version: int = STORM_STATE_VERSION
    rows: dict[RowKey, GenerationFacts] = field(default_factory=dict)
    #: order of the last row before the window (None: the window starts at the group's first row)
    floor: tuple[datetime, int, str, int] | None = None
    #: highest record offset of the rows before the window
    floor_offset: int | None = None
    #: latest end of the rebalances before the window
    closed_end: datetime | None = None
    #: members of the last row with members before the window
    previous_members: tuple[tuple[str, MemberIdentity], ...] = ()
    #: newest settled time of any row seen
    watermark: datetime | None = None
    emitted: dict[datetime, bytes] = field(default_factory=dict)


@dataclass(frozen=True)
class StormFold:
    """One step of the storm fold: the state to carry, the storms that are new or changed (lock-step not
    yet marked), the ``window_start`` of storms that no longer exist; or ``rebuild_needed`` when the
    changes reach before the carried window (a row amended after it was final by the horizon, a rebalance
    that bridges into a closed run): then the group must be folded again from its whole history."""

    state: StormState | None
    storms: list[Storm]
    removed: list[datetime]
    rebuild_needed: bool = False


_REBUILD = StormFold(None, [], [], rebuild_needed=True)


def _storm_digest(storm: Storm) -> bytes:
    return hashlib.blake2b(pickle.dumps(dataclasses.replace(storm, generations=()), protocol=4),
                           digest_size=16).digest()


def fold_storms(  # noqa: C901 - the storm fold: open storm carried, closed by quiet gaps, flapping members counted
    state: StormState | None,
    changed: Iterable[Mapping[str, Any]],
    removed: Iterable[RowKey] = (),
    thresholds: StormThresholds | None = None,
    *,
    cluster: str | None = None,
    group_id: str | None = None,
    reopen: timedelta = timedelta(hours=48),
    min_open_rows: int = MIN_OPEN_ROWS,
    max_open_rows: int = MAX_OPEN_ROWS,
) -> StormFold:
    """Continues a group's storms from ``state`` with the generation rows a run inserted or amended
    (``changed``, as plain values, see :func:`generation_facts`) and the keys of rows it deleted.

    From an empty state with every row of the group, this is ``group_storms(generation_rebalances(rows))``;
    for any split of the rows over several calls (amendments included, as long as they stay within
    ``reopen`` of the newest row or among the last rows), the storms written add up to the same. The state
    passed in is not changed.

    >>> from datetime import datetime as D
    >>> def row(g, minute):
    ...     t = D(2026, 1, 1, 12, minute)
    ...     return {"group_protocol": "classic", "generation": g, "record_offset": g, "outcome": "stable",
    ...             "rebalance_started_at": t, "rebalance_ms": 5000, "cause": "poll_timeout"}
    >>> first = fold_storms(None, [row(g, g) for g in range(3)], cluster="c", group_id="g")
    >>> [(s.rebalances, s.last_generation) for s in first.storms]
    [(3, 2)]
    >>> second = fold_storms(first.state, [row(3, 3)])
    >>> [(s.rebalances, s.last_generation) for s in second.storms], second.removed
    ([(4, 3)], [])
    """
    t = thresholds or StormThresholds()
    if state is None:
        if cluster is None or group_id is None:
            raise ValueError("a fold from an empty state needs the cluster and group id")
        st = StormState(cluster, group_id)
    else:
        st = copy.deepcopy(state)
    for key in removed:
        if key in st.rows:
            del st.rows[key]
        elif st.floor is not None or st.floor_offset is not None:
            return _REBUILD  # a row before the window went away (or one whose key was forgotten)
    for row in changed:
        f = generation_facts(row)
        if f.key not in st.rows and f.record_offset is not None and st.floor_offset is not None \
                and f.record_offset <= st.floor_offset:
            return _REBUILD  # a row before the window was amended (records arrive in offset order)
        if f.started_at is not None and st.floor is not None and f.order <= st.floor:
            return _REBUILD  # a row now sorts among the final ones
        st.rows[f.key] = f
        if f.settled_at is not None and (st.watermark is None or f.settled_at > st.watermark):
            st.watermark = f.settled_at

    timed = sorted((f for f in st.rows.values() if f.started_at is not None), key=lambda f: f.order)
    rebalances, row_of = _rebalances_of(st.cluster, st.group_id, timed, dict(st.previous_members))
    quiet = timedelta(minutes=t.quiet_minutes)
    if rebalances and st.closed_end is not None and rebalances[0].started_at - st.closed_end < quiet:
        return _REBUILD  # the first rebalance of the window would continue the last closed run
    runs = _runs(rebalances, t)
    storms = {run[0].started_at: _storm(run, t) for run in runs if _is_storm(run, t)}
    digests = {start: _storm_digest(s) for start, s in storms.items()}
    new_or_changed = [s for start, s in storms.items() if st.emitted.get(start) != digests[start]]
    gone = [start for start in st.emitted if start not in storms]

    # --- the new window: from the first run that reaches the open rows -----------------------------------
    bounds = _run_bounds(runs, row_of)
    cut = _window_start(timed, bounds, st.watermark, reopen, min_open_rows, max_open_rows)
    if cut > 0:
        before = timed[:cut]
        st.floor = before[-1].order
        offsets = [f.record_offset for f in before if f.record_offset is not None]
        if offsets:
            st.floor_offset = max(offsets if st.floor_offset is None else [st.floor_offset, *offsets])
        ends = [r.ended_at or r.started_at for r, i in zip(rebalances, row_of, strict=True) if i < cut]
        if ends:
            st.closed_end = max(ends if st.closed_end is None else [st.closed_end, *ends])
        with_members = [f for f in before if f.members]
        if with_members:
            st.previous_members = with_members[-1].members
    timeless = sorted((f for f in st.rows.values() if f.started_at is None),
                      key=lambda f: (f.generation, f.group_protocol))[-MAX_TIMELESS_ROWS:]
    st.rows = {f.key: f for f in (*timed[cut:], *timeless)}
    kept_runs = {run[0].started_at for run, (first, _) in zip(runs, bounds, strict=True) if first >= cut}
    st.emitted = {start: digests[start] for start in storms if start in kept_runs}
    return StormFold(st, new_or_changed, gone)


def _run_bounds(runs: Sequence[Sequence[Rebalance]], row_of: Sequence[int]) -> list[tuple[int, int]]:
    """(index of its first row, index of its last row) of each run."""
    bounds = []
    start = 0
    for run in runs:
        bounds.append((row_of[start], row_of[start + len(run) - 1]))
        start += len(run)
    return bounds


def _window_start(timed: Sequence[GenerationFacts], bounds: Sequence[tuple[int, int]], watermark: datetime | None,
                  reopen: timedelta, min_open_rows: int, max_open_rows: int) -> int:
    """Index of the first row of the next window: the first open row, or the first row of the run that
    reaches it (a run is never cut; everything before the result is final)."""
    n = len(timed)
    horizon = watermark - reopen if watermark is not None else None
    first_open = next((i for i, f in enumerate(timed)
                       if horizon is None or f.settled_at is None or f.settled_at >= horizon), n)
    first_open = max(min(first_open, n - min_open_rows), n - max_open_rows, 0)
    for first, last in bounds:
        if last >= first_open:
            return min(first, first_open)
    return first_open


def storms_of_history(cluster: str, group_id: str, rows: Iterable[Mapping[str, Any]],
                      thresholds: StormThresholds | None = None) -> list[Storm]:
    """The storms of one group's whole generation history (lock-step not marked): what the fold adds up
    to."""
    return group_storms(generation_rebalances(cluster, group_id, rows), thresholds)


def dump_storm_state(state: StormState) -> bytes:
    """The state as bytes for the ``group_state.storms`` column."""
    return dump_versioned(state)


def load_storm_state(data: bytes | None) -> StormState | None:
    """The state from its bytes (None for a group without one).

    Raises:
        StormStateVersionError: written by another layout version.
    """
    return load_versioned(data, StormState, STORM_STATE_VERSION, StormStateVersionError, "storm state")


def lockstep_chains(storms: Sequence[Storm], near: Iterable[datetime],
                    thresholds: StormThresholds | None = None) -> list[Storm]:
    """The storms of ONE cluster's lock-step chains that come near ``near`` (within ``lockstep_seconds``
    of one of those times): what must be marked again when storms starting at those times were added,
    changed or removed.

    :func:`mark_lockstep` chains storms that start within ``lockstep_seconds`` of the one before; chains
    are separated by wider gaps, so marking exactly these chains gives each of their storms the marking
    that all of the cluster's storms would. (A removed storm's time reaches the chains on both sides of
    the gap it leaves.)

    >>> from datetime import datetime as D, timedelta as T
    >>> t0 = D(2026, 1, 1)
    >>> s = [Storm("c", g, t0 + T(seconds=x), t0, 3, 1, 3, 0.0, 0.0, None, {}, ()) for g, x in
    ...      [("a", 0), ("b", 60), ("c", 500), ("d", 560), ("e", 1000)]]
    >>> [x.group_id for x in lockstep_chains(s, [t0 + T(seconds=530)])]
    ['c', 'd']
    """
    t = thresholds or StormThresholds()
    gap = timedelta(seconds=t.lockstep_seconds)
    ordered = sorted(storms, key=lambda s: (s.window_start, s.group_id))
    chain_of: list[int] = []
    for i, s in enumerate(ordered):
        chain_of.append(chain_of[-1] + (s.window_start - ordered[i - 1].window_start > gap) if i else 0)
    starts = [s.window_start for s in ordered]
    touched: set[int] = set()
    for at in near:
        lo, hi = bisect.bisect_left(starts, at - gap), bisect.bisect_right(starts, at + gap)
        touched.update(chain_of[lo:hi])
    return [s for s, chain in zip(ordered, chain_of, strict=True) if chain in touched]
