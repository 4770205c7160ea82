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
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta


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
    """One storm window of one group."""

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
    generations: tuple[int, ...] = field(default=(), repr=False)


def severity(rebalances: int, stalled_seconds: float, flapping_members: int, lockstep: bool) -> float:
    """The documented severity score (0-100); see the module docstring."""
    score = (15 * math.log2(1 + rebalances) + 10 * math.log10(1 + max(stalled_seconds, 0.0))
             + 5 * flapping_members + (10 if lockstep else 0))
    return round(min(100.0, score), 1)


def _flapping(rebalances: Sequence[Rebalance], min_rejoins: int) -> tuple[str, ...]:
    joins = Counter(m.label() for r in rebalances for m in r.joined)
    return tuple(sorted(label for label, n in joins.items() if n >= min_rejoins))


#: Causes that are failures, as opposed to the joins and leaves that follow them: a storm's dominant cause
#: is its most frequent failure when it has one (a crash loop is session timeouts, not new members).
FAILURE_CAUSES = frozenset({
    "session_timeout", "poll_timeout", "not_rejoined_in_time", "member_evicted", "static_member_fenced",
    "coordinator_failover", "coordinator_error", "group_over_capacity",
})


def _storm(rebalances: Sequence[Rebalance], t: StormThresholds) -> Storm:
    causes = Counter(r.cause or "unknown" for r in rebalances)
    failures = Counter(c for r in rebalances for c in {r.cause, *r.other_causes} if c in FAILURE_CAUSES)
    ranked = failures or causes
    dominant = max(sorted(ranked), key=lambda c: ranked[c])  # ties broken by name, for stable output
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
    storms: list[Storm] = []
    quiet = timedelta(minutes=t.quiet_minutes)
    window = timedelta(minutes=t.window_minutes)
    run: list[Rebalance] = []

    def close() -> None:
        # A run is a storm if some `min_rebalances` consecutive rebalances of it start within the window,
        # or if a member flaps in it (joins `flapping_min_rejoins` times: a crash loop, a consumer that
        # keeps exceeding max.poll.interval.ms), however few rebalances that took.
        dense = len(run) >= t.min_rebalances and any(
            run[i + t.min_rebalances - 1].started_at - run[i].started_at <= window
            for i in range(len(run) - t.min_rebalances + 1)
        )
        if dense or _flapping(run, t.flapping_min_rejoins):
            storms.append(_storm(run, t))

    for r in ordered:
        if run:
            previous_end = max((x.ended_at or x.started_at) for x in run)
            if r.started_at - previous_end >= quiet:
                close()
                run = []
        run.append(r)
    if run:
        close()
    return storms


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
            for s in wave:
                out.append(dataclasses.replace(
                    s, lockstep_id=wave_id, lockstep_groups=len(groups) if lockstep else 0,
                    severity=severity(s.rebalances, s.stalled_seconds, len(s.flapping_members), lockstep)))
    return out
