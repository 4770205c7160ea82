"""The parsed form of one coordinator log entry, and the names it uses.

Event types are the names of section 10 of ``coordinator-log-formats.md`` plus a few extensions
(``EXTENSION_EVENT_TYPES``) for lines that carry facts the rebuild of a group's history needs but that the
catalogue left unnamed. Names are plain strings, not an Enum, because they are stored as-is in the
``coordinator_events`` table and compared in Spark SQL.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final

# --- broker, classic protocol (old Scala coordinator and new Java coordinator) ---------------------------
REBALANCE_PREPARED: Final = "REBALANCE_PREPARED"
GROUP_STABILIZED: Final = "GROUP_STABILIZED"
GROUP_EMPTY: Final = "GROUP_EMPTY"
ASSIGNMENT_RECEIVED: Final = "ASSIGNMENT_RECEIVED"
MEMBER_FAILED_SESSION_TIMEOUT: Final = "MEMBER_FAILED_SESSION_TIMEOUT"
PENDING_MEMBER_EXPIRED: Final = "PENDING_MEMBER_EXPIRED"
MEMBERS_NOT_REJOINED_REMOVED: Final = "MEMBERS_NOT_REJOINED_REMOVED"
LEADER_FAILED_TO_REJOIN: Final = "LEADER_FAILED_TO_REJOIN"
MEMBER_LEFT: Final = "MEMBER_LEFT"
PENDING_MEMBER_LEFT: Final = "PENDING_MEMBER_LEFT"
MEMBER_JOIN_NEW_ID: Final = "MEMBER_JOIN_NEW_ID"
STATIC_MEMBER_REPLACED: Final = "STATIC_MEMBER_REPLACED"
STATIC_MEMBER_FENCED: Final = "STATIC_MEMBER_FENCED"
COORDINATOR_ELECTED: Final = "COORDINATOR_ELECTED"
COORDINATOR_RESIGNED: Final = "COORDINATOR_RESIGNED"
OFFSETS_LOAD_SCHEDULED: Final = "OFFSETS_LOAD_SCHEDULED"
OFFSETS_LOADED: Final = "OFFSETS_LOADED"
OFFSETS_UNLOAD_SCHEDULED: Final = "OFFSETS_UNLOAD_SCHEDULED"
OFFSETS_UNLOADED: Final = "OFFSETS_UNLOADED"
GROUP_LOADED: Final = "GROUP_LOADED"
GROUP_UNLOADED: Final = "GROUP_UNLOADED"
OFFSETS_EXPIRED: Final = "OFFSETS_EXPIRED"
GROUP_DEAD: Final = "GROUP_DEAD"
GROUPS_DELETED: Final = "GROUPS_DELETED"
OFFSETS_DELETED: Final = "OFFSETS_DELETED"
COORDINATOR_STARTUP: Final = "COORDINATOR_STARTUP"
COORDINATOR_SHUTDOWN: Final = "COORDINATOR_SHUTDOWN"
# --- broker, KIP-848 consumer groups ------------------------------------------------------------------
CG_MEMBER_JOINED: Final = "CG_MEMBER_JOINED"
CG_STATIC_MEMBER_REPLACED: Final = "CG_STATIC_MEMBER_REPLACED"
CG_EPOCH_BUMPED: Final = "CG_EPOCH_BUMPED"
CG_TARGET_ASSIGNMENT_COMPUTED: Final = "CG_TARGET_ASSIGNMENT_COMPUTED"
CG_MEMBER_ASSIGNMENT_STATE: Final = "CG_MEMBER_ASSIGNMENT_STATE"
CG_MEMBER_LEFT: Final = "CG_MEMBER_LEFT"
CG_MEMBER_FENCED: Final = "CG_MEMBER_FENCED"
CG_CONVERTED: Final = "CG_CONVERTED"
# --- client, classic consumer -------------------------------------------------------------------------
CLIENT_JOIN_SENT: Final = "CLIENT_JOIN_SENT"
CLIENT_JOINED: Final = "CLIENT_JOINED"
CLIENT_SYNCED: Final = "CLIENT_SYNCED"
CLIENT_ASSIGNMENT_RECEIVED: Final = "CLIENT_ASSIGNMENT_RECEIVED"
CLIENT_PARTITIONS_REVOKED: Final = "CLIENT_PARTITIONS_REVOKED"
CLIENT_PARTITIONS_ASSIGNED: Final = "CLIENT_PARTITIONS_ASSIGNED"
CLIENT_PARTITIONS_LOST: Final = "CLIENT_PARTITIONS_LOST"
CLIENT_COOPERATIVE_UPDATE: Final = "CLIENT_COOPERATIVE_UPDATE"
CLIENT_REJOIN_REQUESTED: Final = "CLIENT_REJOIN_REQUESTED"
CLIENT_GENERATION_RESET: Final = "CLIENT_GENERATION_RESET"
CLIENT_HEARTBEAT_REBALANCING: Final = "CLIENT_HEARTBEAT_REBALANCING"
CLIENT_HEARTBEAT_FAILED: Final = "CLIENT_HEARTBEAT_FAILED"
CLIENT_POLL_TIMEOUT: Final = "CLIENT_POLL_TIMEOUT"
CLIENT_LEAVE_GROUP: Final = "CLIENT_LEAVE_GROUP"
CLIENT_COORDINATOR_DISCOVERED: Final = "CLIENT_COORDINATOR_DISCOVERED"
CLIENT_COORDINATOR_LOST: Final = "CLIENT_COORDINATOR_LOST"
CLIENT_JOIN_FAILED: Final = "CLIENT_JOIN_FAILED"
CLIENT_SYNC_FAILED: Final = "CLIENT_SYNC_FAILED"
CLIENT_FENCED: Final = "CLIENT_FENCED"
# --- client, new consumer (KIP-848) -------------------------------------------------------------------
CLIENT_MEMBER_STATE_TRANSITION: Final = "CLIENT_MEMBER_STATE_TRANSITION"
CLIENT_RECONCILING: Final = "CLIENT_RECONCILING"
CLIENT_FENCED_EPOCH: Final = "CLIENT_FENCED_EPOCH"
CLIENT_STALE_REJOIN: Final = "CLIENT_STALE_REJOIN"
CLIENT_LEAVING: Final = "CLIENT_LEAVING"
# --- extensions (not in section 10; see EXTENSION_EVENT_TYPES) -----------------------------------------
OFFSETS_LOAD_FAILED: Final = "OFFSETS_LOAD_FAILED"
MEMBER_LOADED: Final = "MEMBER_LOADED"
CLIENT_ASSIGNMENT_COMPUTED: Final = "CLIENT_ASSIGNMENT_COMPUTED"
#: A consumer set its fetch position of an assigned partition (to its committed offset, or by its reset
#: policy when there is none): from then on it can consume it, so this ends a rebalance's pause.
CLIENT_OFFSET_SET: Final = "CLIENT_OFFSET_SET"

#: The event types named in section 10 of the reference, in its order.
CATALOGUE_EVENT_TYPES: Final[tuple[str, ...]] = (
    REBALANCE_PREPARED, GROUP_STABILIZED, GROUP_EMPTY, ASSIGNMENT_RECEIVED, MEMBER_FAILED_SESSION_TIMEOUT,
    PENDING_MEMBER_EXPIRED, MEMBERS_NOT_REJOINED_REMOVED, LEADER_FAILED_TO_REJOIN, MEMBER_LEFT,
    PENDING_MEMBER_LEFT, MEMBER_JOIN_NEW_ID, STATIC_MEMBER_REPLACED, STATIC_MEMBER_FENCED,
    COORDINATOR_ELECTED, COORDINATOR_RESIGNED, OFFSETS_LOAD_SCHEDULED, OFFSETS_LOADED,
    OFFSETS_UNLOAD_SCHEDULED, OFFSETS_UNLOADED, GROUP_LOADED, GROUP_UNLOADED, OFFSETS_EXPIRED, GROUP_DEAD,
    GROUPS_DELETED, OFFSETS_DELETED, COORDINATOR_STARTUP, COORDINATOR_SHUTDOWN,
    CG_MEMBER_JOINED, CG_STATIC_MEMBER_REPLACED, CG_EPOCH_BUMPED, CG_TARGET_ASSIGNMENT_COMPUTED,
    CG_MEMBER_ASSIGNMENT_STATE, CG_MEMBER_LEFT, CG_MEMBER_FENCED, CG_CONVERTED,
    CLIENT_JOIN_SENT, CLIENT_JOINED, CLIENT_SYNCED, CLIENT_ASSIGNMENT_RECEIVED, CLIENT_PARTITIONS_REVOKED,
    CLIENT_PARTITIONS_ASSIGNED, CLIENT_PARTITIONS_LOST, CLIENT_COOPERATIVE_UPDATE, CLIENT_REJOIN_REQUESTED,
    CLIENT_GENERATION_RESET, CLIENT_HEARTBEAT_REBALANCING, CLIENT_HEARTBEAT_FAILED, CLIENT_POLL_TIMEOUT,
    CLIENT_LEAVE_GROUP, CLIENT_COORDINATOR_DISCOVERED, CLIENT_COORDINATOR_LOST, CLIENT_JOIN_FAILED,
    CLIENT_SYNC_FAILED, CLIENT_FENCED,
    CLIENT_MEMBER_STATE_TRANSITION, CLIENT_RECONCILING, CLIENT_FENCED_EPOCH, CLIENT_STALE_REJOIN,
    CLIENT_LEAVING,
)

#: Event types this parser adds: a failed partition load (explains a missing failover), one member
#: restored from the log at load (Scala 2.5+; gives client host and instance id), the leader's
#: computed assignment (the only client line that shows every member's assignment), and a consumer's fetch
#: position set after an assignment (when it can consume again).
EXTENSION_EVENT_TYPES: Final[tuple[str, ...]] = (OFFSETS_LOAD_FAILED, MEMBER_LOADED, CLIENT_ASSIGNMENT_COMPUTED,
                                                 CLIENT_OFFSET_SET)

ALL_EVENT_TYPES: Final[frozenset[str]] = frozenset(CATALOGUE_EVENT_TYPES + EXTENSION_EVENT_TYPES)

# --- cause classes: why a rebalance (or a membership change) happened ---------------------------------
NEW_MEMBER: Final = "new_member"
MEMBER_LEFT_CAUSE: Final = "member_left"
SESSION_TIMEOUT: Final = "session_timeout"
POLL_TIMEOUT: Final = "poll_timeout"
NOT_REJOINED_IN_TIME: Final = "not_rejoined_in_time"
METADATA_CHANGE: Final = "metadata_change"
LEADER_REJOIN: Final = "leader_rejoin"
STATIC_MEMBER_REPLACED_CAUSE: Final = "static_member_replaced"
STATIC_MEMBER_FENCED_CAUSE: Final = "static_member_fenced"
COORDINATOR_FAILOVER: Final = "coordinator_failover"
GROUP_EMPTY_OR_DEAD: Final = "group_empty_or_dead"
OFFSETS_EXPIRED_OR_DELETED: Final = "offsets_expired_or_deleted"
# finer classes for texts that fit none of the above
REBALANCE_IN_PROGRESS: Final = "rebalance_in_progress"
MEMBER_EVICTED: Final = "member_evicted"
COOPERATIVE_SECOND_ROUND: Final = "cooperative_second_round"
GROUP_OVER_CAPACITY: Final = "group_over_capacity"
GROUP_PROTOCOL_MIGRATION: Final = "group_protocol_migration"
COORDINATOR_ERROR: Final = "coordinator_error"

#: Every cause class, with what it means. ``metadata_change`` covers subscription, topic metadata and
#: selected-protocol changes; ``member_evicted`` is a client told its member id or generation is no longer
#: valid (the broker side usually shows a session timeout); ``rebalance_in_progress`` is a client that
#: learned that *another* member started the rebalance.
CAUSE_CLASSES: Final[frozenset[str]] = frozenset({
    NEW_MEMBER, MEMBER_LEFT_CAUSE, SESSION_TIMEOUT, POLL_TIMEOUT, NOT_REJOINED_IN_TIME, METADATA_CHANGE,
    LEADER_REJOIN, STATIC_MEMBER_REPLACED_CAUSE, STATIC_MEMBER_FENCED_CAUSE, COORDINATOR_FAILOVER,
    GROUP_EMPTY_OR_DEAD, OFFSETS_EXPIRED_OR_DELETED, REBALANCE_IN_PROGRESS, MEMBER_EVICTED,
    COOPERATIVE_SECOND_ROUND, GROUP_OVER_CAPACITY, GROUP_PROTOCOL_MIGRATION, COORDINATOR_ERROR,
})


@dataclass(frozen=True)
class CoordinatorEvent:
    """One coordinator log entry, parsed.

    Only ``event_type``, ``line_kind`` and ``message`` are always set; every other field is ``None`` when the
    line does not say it (a pre-2.1 "Preparing to rebalance" line has no reason, a client line no broker
    id unless it names the coordinator node). Values are as Kafka prints them, with three normalisations:
    Scala ``Some(x)``/``None`` and Java ``Optional[x]``/``null`` become ``x``/``None``, a client host loses
    its leading ``/``, and a partition list loses its brackets (4.1 added them, earlier versions have none).

    Attributes:
        event_type: a name from ``CATALOGUE_EVENT_TYPES`` or ``EXTENSION_EVENT_TYPES``.
        line_kind: the catalogue row that matched (``LINE_KINDS``), which pins the version range.
        timestamp: when the log call ran, in UTC (a zone-less broker timestamp is read in the source's zone).
        generation: the classic generation id, or the KIP-848 group/member epoch on ``CG_*`` and new-consumer
            lines (the 848 protocol has epochs where the classic one has generations).
        coordinator_epoch: the leader epoch of the ``__consumer_offsets`` partition on load/unload lines.
        related_member_id: the other member a line names: the replaced member (static replacement), the
            member holding the instance id (fencing), or the newly elected leader (leader failed to rejoin).
        member_ids: a set of member ids as printed (``Set(a, b)``, ``HashSet(...)``, ``[a, b]``); opaque.
        reason: the reason text the line gives, with any client-supplied part; on lines that only carry a
            client reason (LeaveGroup) it is that client reason.
        client_reason: the KIP-800 client-supplied reason (``not provided`` from clients that send none).
        protocol: the selected protocol (assignor) name, e.g. ``range``; the server assignor on 848 lines.
        protocol_type: the classic protocol type implied by the client's log prefix (``consumer`` for
            ``[Consumer ...]``, ``connect`` for Connect's ``[Worker ...]``).
        group_protocol: ``classic`` or ``consumer`` (KIP-848), or the group type (``share``, ``streams``)
            where the broker names it.
        partitions: topic partitions (or topic-id partitions) as printed, brackets removed; opaque.
        source: the file or stream name given to the reader.
        line_number: the 1-based number of the entry's first physical line in its source.
    """

    event_type: str
    line_kind: str
    message: str
    timestamp: datetime | None = None
    level: str | None = None
    logger: str | None = None
    thread: str | None = None
    broker_id: int | None = None
    offsets_partition: int | None = None
    coordinator_epoch: int | None = None
    group_id: str | None = None
    generation: int | None = None
    member_id: str | None = None
    group_instance_id: str | None = None
    related_member_id: str | None = None
    member_ids: str | None = None
    client_id: str | None = None
    host: str | None = None
    reason: str | None = None
    client_reason: str | None = None
    cause_class: str | None = None
    error: str | None = None
    protocol: str | None = None
    protocol_type: str | None = None
    group_protocol: str | None = None
    state: str | None = None
    previous_state: str | None = None
    member_count: int | None = None
    offsets_removed: int | None = None
    duration_ms: int | None = None
    partitions: str | None = None
    source: str | None = None
    line_number: int | None = None
