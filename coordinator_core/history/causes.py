"""Why a rebalance happened: from log lines when there are any, else inferred from the record diff
(internal).

Log lines: the classic "Preparing to rebalance ... (reason: ...)" line of the round (2.1+) names the trigger;
membership lines of the same window (session-timeout removals, LeaveGroup, joins, members dropped for not
rejoining, client rejoin requests, poll timeouts, coordinator loads, KIP-848 join/leave/fence/convert lines)
add the other causes of the round. Before 2.1 the "Preparing" line has no reason, and the first
membership line of the window is the trigger.

Inference (records only, or logs that say nothing): compare the generation with the previous one. Members
joined only: ``new_member``; left only (or the group went empty): ``member_left`` (a LeaveGroup, a session
timeout and a poll timeout look the same in the records); both: ``new_member`` first, then
``member_left``; only member ids swapped under the same ``group.instance.id``: ``static_member_replaced``;
same members, and partitions revoked in the previous round now assigned: ``cooperative_second_round``;
same members with other subscriptions, assignor or assignment: ``metadata_change``; a change of rebalance
protocol: ``group_protocol_migration``; nothing different: ``unknown``.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from datetime import datetime

from coordinator_core.history.model import Evidence
from coordinator_core.logs import CoordinatorEvent
from coordinator_core.logs import events as ev

#: Lines that explain a rebalance when they fall into its window; their ``cause_class`` is the cause.
EXPLAINING_EVENTS = frozenset({
    ev.MEMBER_FAILED_SESSION_TIMEOUT, ev.MEMBERS_NOT_REJOINED_REMOVED, ev.LEADER_FAILED_TO_REJOIN,
    ev.MEMBER_LEFT, ev.MEMBER_JOIN_NEW_ID, ev.STATIC_MEMBER_FENCED, ev.CLIENT_POLL_TIMEOUT,
    ev.CLIENT_LEAVE_GROUP, ev.CLIENT_REJOIN_REQUESTED, ev.CLIENT_FENCED, ev.GROUP_LOADED, ev.OFFSETS_LOADED,
    ev.CG_MEMBER_JOINED, ev.CG_MEMBER_LEFT, ev.CG_MEMBER_FENCED, ev.CG_CONVERTED,
})

_LOADS = frozenset({ev.GROUP_LOADED, ev.OFFSETS_LOADED})

#: Causes that say nothing about why (another member started the round) and are left out of ``causes``.
_UNINFORMATIVE = frozenset({ev.REBALANCE_IN_PROGRESS})

#: Broker lines outrank client lines when no "Preparing" line names the trigger.
_BROKER_FIRST = (ev.MEMBER_FAILED_SESSION_TIMEOUT, ev.MEMBER_LEFT, ev.MEMBERS_NOT_REJOINED_REMOVED,
                 ev.LEADER_FAILED_TO_REJOIN, ev.MEMBER_JOIN_NEW_ID, ev.CG_MEMBER_JOINED, ev.CG_MEMBER_LEFT,
                 ev.CG_MEMBER_FENCED, ev.CG_CONVERTED, ev.STATIC_MEMBER_FENCED)

#: Causes that say a member joined / went away (used to list members from logs alone).
JOIN_CAUSES = frozenset({ev.NEW_MEMBER})
LEAVE_CAUSES = frozenset({ev.MEMBER_LEFT_CAUSE, ev.SESSION_TIMEOUT, ev.POLL_TIMEOUT, ev.NOT_REJOINED_IN_TIME})


def evidence_of(event: CoordinatorEvent) -> Evidence:
    return Evidence(event_type=event.event_type, at=event.timestamp, member_id=event.member_id,
                    cause_class=event.cause_class, reason=event.reason, source=event.source,
                    line_number=event.line_number, message=event.message)


class ExplainingEvents:
    """The explaining events of a group in time order, cut into windows by binary search."""

    def __init__(self, events: Sequence[CoordinatorEvent]) -> None:
        self.events = [e for e in events if e.event_type in EXPLAINING_EVENTS and e.timestamp is not None]
        self.times: list[datetime] = [e.timestamp for e in self.events if e.timestamp is not None]

    def window(self, after: datetime | None, until: datetime | None) -> list[CoordinatorEvent]:
        """Events with ``after < timestamp <= until`` (an open bound when None).

        With no lower bound (the group's first row) partition loads are left out: a coordinator that loaded
        the partition before the group existed did not rebalance it.
        """
        start = bisect_right(self.times, after) if after is not None else 0
        end = bisect_right(self.times, until) if until is not None else len(self.times)
        found = self.events[start:end]
        if after is None:
            found = [e for e in found if e.event_type not in _LOADS]
        return found


def causes_from_logs(trigger: CoordinatorEvent | None, explaining: Sequence[CoordinatorEvent]
                     ) -> tuple[str | None, list[str], str | None]:
    """(primary cause, every cause in order, the member that triggered it) from log lines."""
    causes: list[str] = []
    primary: str | None = None
    trigger_member: str | None = None
    if trigger is not None and trigger.cause_class and trigger.cause_class not in _UNINFORMATIVE:
        primary, trigger_member = trigger.cause_class, trigger.member_id
        if trigger_member is None:
            # The new coordinator's rebalance reason ("explicit `LeaveGroup` request for (m1, m2) members")
            # names no single member; its own line for the same cause ("Member m1 has left group ...") does.
            trigger_member = next((e.member_id for e in explaining
                                   if e.cause_class == primary and e.member_id and e is not trigger), None)
    if primary is None:
        ranked = sorted((e for e in explaining if e.cause_class and e.cause_class not in _UNINFORMATIVE),
                        key=lambda e: 0 if e.event_type in _BROKER_FIRST else 1)
        if ranked:
            primary, trigger_member = ranked[0].cause_class, ranked[0].member_id
    if primary is not None:
        causes.append(primary)
    for e in explaining:
        if e.cause_class and e.cause_class not in _UNINFORMATIVE and e.cause_class not in causes:
            causes.append(e.cause_class)
    # A LeaveGroup sent because poll() stalled is a poll timeout, whichever line said it first.
    if primary == ev.MEMBER_LEFT_CAUSE and ev.POLL_TIMEOUT in causes:
        primary = ev.POLL_TIMEOUT
        causes.remove(ev.POLL_TIMEOUT)
        causes.insert(0, ev.POLL_TIMEOUT)
    return primary, causes, trigger_member
