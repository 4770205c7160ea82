"""History inputs from decoded rows: what the decode stage stored, read back without decoding bytes again.

The decode stage decodes every archived record once (``coordinator_core.batch``: one row per record of
``DECODED_SCHEMA``; the job keeps them in the silver tables). A GroupMetadata row carries its members
with their ConsumerProtocol subscription and assignment already decoded; a record of key type 3 and above
carries its key and value as ``record_json``. :func:`group_record_from_row` turns such a row into the
``GroupRecord`` that the history functions take, equal in every field they read to the one built from
``decode_record`` on the same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from coordinator_core import messages as m
from coordinator_core.history.inputs import GroupRecord
from coordinator_core.history.model import GenerationMember, Partition
from coordinator_core.record_json import record_from_json
from coordinator_core.records import Record

GROUP_METADATA_TYPE = 2


@dataclass(frozen=True, slots=True)
class StoredGroupMetadata:
    """A GroupMetadata value whose members are already decoded (in place of ``GroupMetadataValue``)."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    members: tuple[GenerationMember, ...]
    #: when the group entered the state it was stored in (epoch ms; value v2+, None for v0/v1 or -1)
    current_state_timestamp: int | None = None


def _seq(values: Any) -> Any:
    """A list field as given (a list, or a numpy array out of Arrow via pandas), () for null."""
    return () if values is None else values


def _partitions(values: Any) -> tuple[Partition, ...]:
    return tuple(sorted(Partition(p["topic"], p["partition"]) for p in _seq(values)))


def stored_member(member: Mapping[str, Any]) -> GenerationMember:
    """A classic member from its decoded form (``batch.MEMBER`` fields; silver ``group_metadata.members``).

    The same values ``classic.classic_member`` derives from the member's bytes: subscribed topics, the
    assignment and the owned partitions of a ConsumerProtocol member (empty for other protocol types or
    bytes that did not decode), the client host without the leading slash, and no rebalance timeout for
    a v0 record (null there, as that version has none; -1 in rows decoded before nulls)."""
    rebalance_timeout = member["rebalance_timeout"]
    return GenerationMember(
        member_id=member["member_id"],
        group_instance_id=member["group_instance_id"],
        client_id=member["client_id"],
        client_host=(member["client_host"] or "").lstrip("/"),
        subscribed_topics=tuple(_seq(member["subscribed_topics"])),
        assigned_partitions=_partitions(member["assigned_partitions"]),
        owned_partitions=_partitions(member["owned_partitions"]),
        target_partitions=(),
        partitions_pending_revocation=(),
        member_epoch=None,
        previous_member_epoch=None,
        member_state=None,
        rebalance_timeout_ms=rebalance_timeout if rebalance_timeout is not None and rebalance_timeout >= 0 else None,
        session_timeout_ms=member["session_timeout"],
    )


def _state_timestamp(value: Any) -> int | None:
    """A stored current_state_timestamp as epoch ms: None for null and for Kafka's -1 ("none")."""
    return None if value is None or value == -1 else int(value)


def group_record_from_row(row: Mapping[str, Any]) -> GroupRecord:
    """The history input for one decoded group-level record (GroupMetadata, or key type 3+).

    ``row`` holds ``offset``, ``timestamp`` (epoch ms, None when unknown), ``record_type``,
    ``value_version``, ``group_id``, ``group_metadata`` (a GroupMetadata row's value: protocol_type,
    generation, protocol, leader, members and current_state_timestamp in epoch ms, which rows written
    before it was read back may lack; None for a tombstone) and ``record_json`` (other types), and
    optionally ``transaction_outcome``.
    """
    record_type = row["record_type"]
    if record_type == GROUP_METADATA_TYPE:
        gm = row["group_metadata"]
        value = None if gm is None else StoredGroupMetadata(
            protocol_type=gm["protocol_type"], generation=gm["generation"], protocol=gm["protocol"],
            leader=gm["leader"], members=tuple(stored_member(x) for x in _seq(gm["members"])),
            current_state_timestamp=_state_timestamp(gm.get("current_state_timestamp")))
        record = Record(record_type, m.GroupMetadataKey(row["group_id"]), row["value_version"], value)
    else:
        record = record_from_json(record_type, row["value_version"], row["record_json"])
    ts = row["timestamp"]
    return GroupRecord(int(row["offset"]), None if ts is None else int(ts), record, row.get("transaction_outcome"))
