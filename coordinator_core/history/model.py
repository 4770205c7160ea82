"""Row types of a group's history, and their table shape in plain Python terms.

Every row type is a frozen dataclass whose fields are flat values (str, int, bool, datetime) or tuples of
small frozen dataclasses. ``to_dict()`` turns a row into plain Python values (nested tuples become lists of
dicts), which is what a pandas frame returned from ``applyInPandas`` holds; ``schema_ddl(RowType)`` gives
the matching Spark DDL string (``"group_id string, generation bigint, members array<struct<...>>"``)
without importing pyspark, so the job can pass it to ``applyInPandas(fn, schema=...)`` and the
``schemas/`` contract can be checked against it. Integers are ``bigint`` throughout: generations, epochs
and partitions fit in 32 bits, but one integer type keeps the shape rules trivial. Floats are ``double``,
``dict[K, V]`` a ``map<K,V>``. A field declared with ``metadata=NOT_A_COLUMN`` is the producer's own
bookkeeping: it is neither a column nor in ``to_dict()``.

Other row types of the core (``coordinator_core.replay.AssignmentReplayRow``/``WhatIfRow``,
``coordinator_core.storms.Storm``) follow the same rules, so ``schemas/gold.py`` derives every gold table's
columns from them.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final, Union

# ---------------------------------------------------------------------------------------------------
# Vocabulary

#: ``GenerationRow.group_protocol``: the rebalance protocol of the row (KIP-848 groups are ``consumer``).
CLASSIC: Final = "classic"
CONSUMER: Final = "consumer"

#: ``GenerationRow.outcome``.
#: ``stable``: a generation (or group epoch) with members and a stored assignment.
#: ``empty``: the rebalance completed with no members (the generation is bumped all the same).
#: ``never_completed``: a classic generation number that was reached in a join phase but whose assignment
#:   was never stored (a member joined during CompletingRebalance, the leader failed to sync), seen as a
#:   gap in stored generation numbers or as a "Stabilized" line without an "Assignment received" one.
#: ``missing``: a KIP-848 group epoch with no record although later epochs have one. Every epoch bump is
#:   written, so this is data lost (compacted or not archived), not a rebalance that failed.
#: ``created``: the 3.7+ group coordinator's placeholder record for a newly created classic group
#:   (generation 0, no protocol, no members), written when the first JoinGroup created the group. No
#:   rebalance happened; the row marks when the group came to be.
CREATED: Final = "created"
STABLE: Final = "stable"
EMPTY: Final = "empty"
NEVER_COMPLETED: Final = "never_completed"
MISSING: Final = "missing"

#: ``MemberIdChange.kind``.
#: ``static_restart``: same ``group.instance.id``, new member id (KIP-345 replacement; within one
#:   generation when the coordinator rewrote the stored group without a rebalance).
#: ``client_rejoin``: a dynamic member left and a member with the same client id and client host came back
#:   with a new member id: evicted (session or poll timeout, fenced) or restarted. Paired only when the
#:   (client id, host) pair is unique on both sides, since clients that share a client id are common.
STATIC_RESTART: Final = "static_restart"
CLIENT_REJOIN: Final = "client_rejoin"

#: ``GenerationRow.ended_by``.
ENDED_BY_NEXT_GENERATION: Final = "next_generation"
ENDED_BY_GROUP_DELETED: Final = "group_deleted"
ENDED_BY_PROTOCOL_CHANGE: Final = "protocol_change"

#: ``GenerationRow.cause`` values come from ``coordinator_core.logs.events.CAUSE_CLASSES`` plus the two
#: below: a rebalance the records cannot
#: explain (same members, same subscriptions, same assignment).
UNKNOWN_CAUSE: Final = "unknown"
#: The cause of a ``created`` row.
GROUP_CREATED: Final = "group_created"


# ---------------------------------------------------------------------------------------------------
# Nested structs


@dataclasses.dataclass(frozen=True, slots=True, order=True)
class Partition:
    """A topic partition. ``topic`` is the topic name, or the topic id (Uuid text) of a KIP-848 record
    whose id no partition-metadata record named."""

    topic: str
    partition: int


@dataclasses.dataclass(frozen=True, slots=True)
class GenerationMember:
    """A member as the generation (or group epoch) left it.

    Attributes:
        assigned_partitions: classic: the assignment stored for the generation; KIP-848: the partitions the
            member owns (its current assignment) at the end of the epoch.
        target_partitions: KIP-848 only: what the epoch's target assignment gives the member.
        owned_partitions: classic only: what the member said it owned when it joined (subscription v1+);
            non-empty only for cooperative assignors.
        member_epoch / previous_member_epoch / member_state: KIP-848 only (``STABLE``,
            ``UNREVOKED_PARTITIONS``, ``UNRELEASED_PARTITIONS``, ``UNKNOWN``).
    """

    member_id: str
    group_instance_id: str | None
    client_id: str | None
    client_host: str | None
    subscribed_topics: tuple[str, ...]
    assigned_partitions: tuple[Partition, ...]
    owned_partitions: tuple[Partition, ...]
    target_partitions: tuple[Partition, ...]
    partitions_pending_revocation: tuple[Partition, ...]
    member_epoch: int | None
    previous_member_epoch: int | None
    member_state: str | None
    rebalance_timeout_ms: int | None
    session_timeout_ms: int | None


@dataclasses.dataclass(frozen=True, slots=True)
class MemberIdChange:
    """One member identity carried across a new member id (see ``STATIC_RESTART``, ``CLIENT_REJOIN``).

    ``since_generation`` is the generation the old member id was last seen in (the same generation for a
    static restart the coordinator absorbed without a rebalance)."""

    kind: str
    old_member_id: str
    new_member_id: str
    group_instance_id: str | None
    client_id: str | None
    client_host: str | None
    since_generation: int | None
    at: datetime | None


@dataclasses.dataclass(frozen=True, slots=True)
class PartitionMove:
    """A partition whose owner changed. ``from_member`` None: it was unassigned (new partition, or revoked
    in the first round of a cooperative rebalance); ``to_member`` None: nobody owns it now.
    ``via_generation`` is set for a cooperative move: the first-round generation that revoked it."""

    topic: str
    partition: int
    from_member: str | None
    to_member: str | None
    via_generation: int | None


@dataclasses.dataclass(frozen=True, slots=True)
class Evidence:
    """A log line (or, with ``event_type`` ``record:<kind>``, a record) that supports the row's cause."""

    event_type: str
    at: datetime | None
    member_id: str | None
    cause_class: str | None
    reason: str | None
    source: str | None
    line_number: int | None
    message: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class CoordinatorLoad:
    """A coordinator loading the group from its ``__consumer_offsets`` partition ("Loaded classic group ...",
    "Loading group metadata for ..."): a failover to another replica, or the same broker after a restart.
    ``broker_id`` is the broker that logged the load (the new coordinator)."""

    broker_id: int | None
    at: datetime | None
    offsets_partition: int | None
    coordinator_epoch: int | None
    cause_class: str | None
    source: str | None
    line_number: int | None


@dataclasses.dataclass(frozen=True, slots=True)
class PartitionHandover:
    """KIP-848: a partition the coordinator moved from one member to another, with the times of the
    ``ConsumerGroupCurrentMemberAssignment`` records that moved it. ``revocation_requested_at``: the old owner's
    record first had it pending revocation (the member learns in its next heartbeat response);
    ``released_at``: the old owner's next record without it (written when the member acknowledged, after its
    revocation callback: it had stopped by then); ``assigned_at``: the new owner's record with it (written
    before the heartbeat response that gives it: the member resumes after it). None where the record was not
    read (an archive that starts mid-move)."""

    topic: str
    partition: int
    from_member: str
    to_member: str
    revocation_requested_at: datetime | None
    released_at: datetime | None
    assigned_at: datetime | None


# ---------------------------------------------------------------------------------------------------
# Rows


@dataclasses.dataclass(frozen=True, slots=True)
class GenerationRow:
    """One generation of a classic group, or one group epoch of a KIP-848 group (grain: group, protocol,
    generation).

    Times are UTC. ``rebalance_started_at`` is the "Preparing to rebalance" line (classic) or the epoch bump;
    ``stabilized_at`` the end of the join phase (classic "Stabilized"/"is now empty") or, for KIP-848, the
    moment every member reached the epoch in state STABLE; ``assignment_stored_at`` the GroupMetadata record
    (or target-assignment record) timestamp, else the "Assignment received" line; ``ended_at`` the next row's
    start. Durations are milliseconds: ``rebalance_ms`` started -> the later of stabilized and stored (the
    pause the group paid), ``join_ms`` started -> stabilized, ``sync_ms`` stabilized -> stored, ``lifetime_ms``
    the later of stabilized and stored -> ended. KIP-848 rows store the target assignment before members
    reconcile, so there ``join_ms`` is started -> stored and ``sync_ms`` stored -> stabilized.

    The diff is against the previous row of the same group (whatever its protocol). ``cause`` is the first
    trigger, ``causes`` every cause class seen for the rebalance (a join that also flushed a timed-out
    member gives ``("new_member", "session_timeout")``). ``cause_inferred`` says the cause comes from the
    record diff, not a log line; ``inference`` says how.
    """

    group_id: str
    group_protocol: str
    generation: int
    outcome: str
    protocol_type: str | None
    protocol: str | None
    leader: str | None
    group_epoch: int | None
    target_assignment_epoch: int | None
    member_count: int | None
    members: tuple[GenerationMember, ...]
    rebalance_started_at: datetime | None
    stabilized_at: datetime | None
    assignment_stored_at: datetime | None
    ended_at: datetime | None
    ended_by: str | None
    rebalance_ms: int | None
    join_ms: int | None
    sync_ms: int | None
    lifetime_ms: int | None
    previous_generation: int | None
    members_joined: tuple[str, ...]
    members_left: tuple[str, ...]
    members_kept: tuple[str, ...]
    member_id_changes: tuple[MemberIdChange, ...]
    static_restarts: int
    partitions_moved: tuple[PartitionMove, ...]
    partitions_kept: int
    partitions_revoked_then_assigned: tuple[PartitionMove, ...]
    cooperative_round: int | None
    cause: str | None
    causes: tuple[str, ...]
    cause_inferred: bool
    inference: str | None
    trigger_member_id: str | None
    evidence: tuple[Evidence, ...]
    from_records: bool
    from_logs: bool
    record_offset: int | None
    record_count: int
    #: Coordinator loads of the group while this generation was in force (a coordinator failover, or a
    #: restart): Kafka loads a stable group as it was, with no rebalance, so this is where the move is told;
    #: ``cause`` is untouched (the load did not start a rebalance). Last, so older tables gain it as a column.
    coordinator_loads: tuple[CoordinatorLoad, ...] = ()
    #: KIP-848 only: each partition the epoch moved, with the record times of its hand-over (see
    #: ``PartitionHandover``). After the loads, so older tables gain it as a column (null in their rows).
    partition_handovers: tuple[PartitionHandover, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return to_dict(self)


#: ``OffsetEventRow.kind``.
#: ``rewind``: a commit lower than the partition's previous commit while the group had members (a
#:   consumer seeking back and committing).
#: ``non_member_commit``: a commit while the group had no members (Empty): an admin offset reset
#:   (``kafka-consumer-groups --reset-offsets``, ``Admin.alterConsumerGroupOffsets``) or an ``assign()``-based
#:   client; ``delta`` < 0 is a reset backwards.
#: ``stalled``: the committed offset stayed the same over several commits within one stable generation.
#: ``expired`` / ``deleted``: an offset tombstone from the retention sweep, or from DeleteGroups /
#:   OffsetDelete / topic deletion; ``group_deleted``: the group's own tombstone.
REWIND: Final = "rewind"
NON_MEMBER_COMMIT: Final = "non_member_commit"
STALLED: Final = "stalled"
EXPIRED: Final = "expired"
DELETED: Final = "deleted"
GROUP_DELETED: Final = "group_deleted"


@dataclasses.dataclass(frozen=True, slots=True)
class OffsetEventRow:
    """One notable event in a group's committed offsets (grain: group, record offset, kind).

    ``topic``/``partition`` are None for ``group_deleted``. For ``stalled`` rows ``at`` is the first commit
    of the stall, ``ended_at`` the last, ``commit_count`` how many commits repeated the offset.
    ``generation`` is the generation in force when the commit landed (None before any); ``group_members``
    how many members it had.
    """

    group_id: str
    kind: str
    topic: str | None
    partition: int | None
    at: datetime | None
    ended_at: datetime | None
    record_offset: int | None
    offset: int | None
    previous_offset: int | None
    delta: int | None
    commit_count: int | None
    duration_ms: int | None
    generation: int | None
    group_members: int | None
    metadata: str | None
    inferred: bool
    explanation: str
    evidence: tuple[Evidence, ...]

    def to_dict(self) -> dict[str, Any]:
        return to_dict(self)


# ---------------------------------------------------------------------------------------------------
# Plain-Python shape

#: ``dataclasses.field(metadata=NOT_A_COLUMN)``: a field the row carries for its producer, not a column.
NOT_A_COLUMN: Final[Mapping[str, bool]] = types.MappingProxyType({"column": False})


def _columns(row_type: Any) -> list[dataclasses.Field[Any]]:
    return [f for f in dataclasses.fields(row_type) if f.metadata.get("column", True)]


_COLUMN_NAMES: dict[type, tuple[str, ...]] = {}


def _column_names(row_type: type) -> tuple[str, ...]:
    names = _COLUMN_NAMES.get(row_type)
    if names is None:
        names = _COLUMN_NAMES[row_type] = tuple(f.name for f in _columns(row_type))
    return names


def to_dict(row: Any) -> dict[str, Any]:
    """A row (or nested struct) as plain values: tuples of structs become lists of dicts, tuples of
    scalars lists. Fields that are not columns (``NOT_A_COLUMN``) are left out. (Every row a fold writes
    passes here: the field names are looked up once per row type, and plain values pass straight through.)"""
    return {name: _plain(getattr(row, name)) for name in _column_names(type(row))}


_PLAIN: Final = (str, int, float, datetime, type(None))


def _plain(value: Any) -> Any:
    if isinstance(value, _PLAIN):
        return value
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_dict(value)
    return value


_SCALARS: Final[dict[Any, str]] = {str: "string", int: "bigint", bool: "boolean", float: "double",
                                   datetime: "timestamp"}


def _sql_type(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        members = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(members) != 1:
            raise TypeError(f"unsupported union {hint!r}")
        return _sql_type(members[0])
    if origin is tuple:
        args = typing.get_args(hint)
        if len(args) != 2 or args[1] is not Ellipsis:
            raise TypeError(f"only tuple[X, ...] is supported, not {hint!r}")
        return f"array<{_sql_type(args[0])}>"
    if origin in (dict, Mapping):
        key, value = typing.get_args(hint)
        return f"map<{_sql_type(key)},{_sql_type(value)}>"
    if dataclasses.is_dataclass(hint):
        inner = ",".join(f"{name}:{t}" for name, t in schema_fields(hint))
        return f"struct<{inner}>"
    if hint in _SCALARS:
        return _SCALARS[hint]
    raise TypeError(f"unsupported field type {hint!r}")


def schema_fields(row_type: Any) -> tuple[tuple[str, str], ...]:
    """``(column name, Spark SQL type)`` per field of a row type, in field order (``NOT_A_COLUMN`` fields
    left out)."""
    hints = typing.get_type_hints(row_type)
    return tuple((f.name, _sql_type(hints[f.name])) for f in _columns(row_type))


def schema_ddl(row_type: Any) -> str:
    """The row type as a Spark DDL schema string (what ``applyInPandas(schema=...)`` accepts)."""
    return ", ".join(f"{name} {t}" for name, t in schema_fields(row_type))
