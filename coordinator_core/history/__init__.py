"""Per-group history: one row per generation (classic) or group epoch (KIP-848), and notable offset events.

Pure functions over ONE group's inputs (its records in log order and its coordinator log events), so a
Spark job can run them per group with ``groupBy(cluster, group_id).applyInPandas``: build the inputs from
the group's rows, call the function, and return ``[row.to_dict() for row in rows]`` as a frame whose
schema is ``schema_ddl(GenerationRow)`` / ``schema_ddl(OffsetEventRow)``.

    rows = group_history(records, events)       # records only, events only, or both
    offsets = offset_history(records, events)
"""

from __future__ import annotations

from coordinator_core.history.decoded import StoredGroupMetadata, group_record_from_row, stored_member
from coordinator_core.history.generations import group_history
from coordinator_core.history.inputs import GroupRecord
from coordinator_core.history.model import (
    CLASSIC,
    CLIENT_REJOIN,
    CONSUMER,
    CREATED,
    DELETED,
    EMPTY,
    EXPIRED,
    GROUP_CREATED,
    GROUP_DELETED,
    MISSING,
    NEVER_COMPLETED,
    NON_MEMBER_COMMIT,
    REWIND,
    STABLE,
    STALLED,
    STATIC_RESTART,
    UNKNOWN_CAUSE,
    CoordinatorLoad,
    Evidence,
    GenerationMember,
    GenerationRow,
    MemberIdChange,
    OffsetEventRow,
    Partition,
    PartitionHandover,
    PartitionMove,
    schema_ddl,
    schema_fields,
    to_dict,
)
from coordinator_core.history.offsets import offset_history

__all__ = [
    "CLASSIC", "CLIENT_REJOIN", "CONSUMER", "CREATED", "DELETED", "EMPTY", "EXPIRED", "GROUP_CREATED",
    "GROUP_DELETED", "MISSING",
    "NEVER_COMPLETED", "NON_MEMBER_COMMIT", "REWIND", "STABLE", "STALLED", "STATIC_RESTART", "UNKNOWN_CAUSE",
    "CoordinatorLoad", "Evidence", "GenerationMember", "GenerationRow", "GroupRecord", "MemberIdChange",
    "OffsetEventRow",
    "Partition", "PartitionHandover", "PartitionMove", "StoredGroupMetadata", "group_history",
    "group_record_from_row", "offset_history",
    "schema_ddl", "schema_fields", "stored_member", "to_dict",
]
