"""Classic-protocol generations from GroupMetadata records and from coordinator log lines (internal).

A classic group's coordinator stores one GroupMetadata record when a generation's assignment is synced
(or when the join phase ends with no members), so stored records give generation, protocol, leader and
every member's subscription and assignment. The same generation is stored again when a static member is
replaced without a rebalance (KIP-345): the two records differ only in that member's id. The 3.7+ group
coordinator also writes a placeholder (protocol type "", generation 0, no members) when a group is
created; it is not a generation and is skipped.

Log lines give the times: "Preparing to rebalance ... with old generation G-1" starts generation G,
"Stabilized group ... generation G" (or "... with generation G is now empty") ends its join phase, and
"Assignment received from leader ... for generation G" its sync phase. A v2+ record (Kafka 2.1+) tells the
end of the join phase too: its ``current_state_timestamp`` (see ``stabilized_time``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from coordinator_core.consumer_protocol import decode_member_protocol
from coordinator_core.history._draft import Draft
from coordinator_core.history.decoded import StoredGroupMetadata
from coordinator_core.history.inputs import GroupRecord, millis_time, record_time
from coordinator_core.history.model import (
    CLASSIC,
    CREATED,
    EMPTY,
    GROUP_CREATED,
    NEVER_COMPLETED,
    STABLE,
    STATIC_RESTART,
    Evidence,
    GenerationMember,
    MemberIdChange,
    Partition,
)
from coordinator_core.logs import CoordinatorEvent
from coordinator_core.logs import events as ev
from coordinator_core.messages import GroupMetadataValue, MemberMetadata


def is_placeholder(value: GroupMetadataValue | StoredGroupMetadata) -> bool:
    """The 3.7+ coordinator's record for a newly created group: no generation happened."""
    return value.generation == 0 and not value.protocol_type and not value.members


def classic_member(protocol_type: str, member: MemberMetadata | GenerationMember) -> GenerationMember:
    """A stored member with its ConsumerProtocol decoded (other protocol types keep no partitions).

    A member the decode stage already decoded (``coordinator_core.history.decoded``) comes as it is."""
    if isinstance(member, GenerationMember):
        return member
    decoded = decode_member_protocol(protocol_type, member)
    subscription, assignment = decoded.subscription, decoded.assignment
    return GenerationMember(
        member_id=member.member_id,
        group_instance_id=member.group_instance_id,
        client_id=member.client_id,
        client_host=member.client_host.lstrip("/"),
        subscribed_topics=tuple(subscription.topics) if subscription else (),
        assigned_partitions=tuple(sorted(Partition(t, p) for t, p in assignment.partitions)) if assignment else (),
        owned_partitions=tuple(sorted(Partition(t, p) for t, p in subscription.owned_partitions))
        if subscription else (),
        target_partitions=(),
        partitions_pending_revocation=(),
        member_epoch=None,
        previous_member_epoch=None,
        member_state=None,
        rebalance_timeout_ms=member.rebalance_timeout
        if member.rebalance_timeout is not None and member.rebalance_timeout >= 0 else None,
        session_timeout_ms=member.session_timeout,
    )


def stabilized_time(record: GroupRecord, value: GroupMetadataValue | StoredGroupMetadata) -> datetime | None:
    """When the join phase of the record's generation ended, from the record itself: the value's
    ``current_state_timestamp`` (v2+, Kafka 2.1+), the moment the group entered the state it was stored in.
    The first record of a generation is stored in CompletingRebalance (when the leader's assignment arrives)
    or, for a generation without members, in Empty; either state began when the join phase ended, the
    instant of the broker's "Stabilized group ..." (or "... is now empty") line. None for v0/v1 records,
    Kafka's -1, and a time after the record's own (it cannot be that generation's)."""
    millis = value.current_state_timestamp
    if millis is None or millis <= 0:
        return None
    at = millis_time(millis)
    stored = record_time(record)
    return at if stored is None or (at is not None and at <= stored) else None


def draft_from_record(record: GroupRecord, value: GroupMetadataValue | StoredGroupMetadata) -> Draft:
    """The draft of a generation from its first record; a later record of the same generation goes to
    ``restore_same_generation``."""
    members = [classic_member(value.protocol_type, m) for m in value.members]
    return Draft(
        group_protocol=CLASSIC,
        generation=value.generation,
        outcome=STABLE if members else EMPTY,
        protocol_type=value.protocol_type or None,
        protocol=value.protocol,
        leader=value.leader,
        member_count=len(members),
        members=members,
        members_from_records=True,
        stabilized_at=stabilized_time(record, value),
        stored_at=record_time(record),
        first_offset=record.offset,
        record_count=1,
        from_records=True,
    )


def draft_from_placeholder(record: GroupRecord) -> Draft:
    """The placeholder of a newly created group as a ``created`` row (no rebalance, no members)."""
    at = record_time(record)
    return Draft(
        group_protocol=CLASSIC, generation=0, outcome=CREATED, members=[], member_count=0,
        members_from_records=True, stored_at=at, first_offset=record.offset, record_count=1, from_records=True,
        record_causes=[(GROUP_CREATED, None)],
        record_evidence=[Evidence(event_type="record:group_metadata", at=at, member_id=None, cause_class=GROUP_CREATED,
                                  reason="placeholder record of a newly created group (generation 0, no members)",
                                  source=None, line_number=None, message=f"offset {record.offset}")],
    )


def restore_same_generation(draft: Draft, record: GroupRecord, value: GroupMetadataValue | StoredGroupMetadata) -> None:
    """A second record of the draft's generation: keep the newest members, note replaced static members.

    The times stay the first record's: a static member replaced without a rebalance (KIP-345) is stored in
    Stable, so this record's ``current_state_timestamp`` is when the group became Stable, not when it
    stabilized."""
    newer = draft_from_record(record, value)
    old_by_instance = {m.group_instance_id: m for m in draft.members or () if m.group_instance_id}
    for member in newer.members or ():
        old = old_by_instance.get(member.group_instance_id) if member.group_instance_id else None
        if old is not None and old.member_id != member.member_id:
            draft.id_changes.append(MemberIdChange(
                kind=STATIC_RESTART, old_member_id=old.member_id, new_member_id=member.member_id,
                group_instance_id=member.group_instance_id, client_id=member.client_id,
                client_host=member.client_host, since_generation=draft.generation, at=newer.stored_at,
            ))
    draft.members = newer.members
    draft.member_count = newer.member_count
    draft.leader = newer.leader
    draft.protocol = newer.protocol
    draft.outcome = newer.outcome
    draft.record_count += 1


#: Classic broker lines numbered with the generation they belong to (B1 carries the *old* generation).
_NUMBERED = (ev.REBALANCE_PREPARED, ev.GROUP_STABILIZED, ev.GROUP_EMPTY, ev.ASSIGNMENT_RECEIVED)


def drafts_from_logs(events: Sequence[CoordinatorEvent]) -> dict[int, Draft]:
    """One draft per classic generation the broker lines number; times of its phases.

    When a coordinator failover replays a round, the last "Preparing" before the "Stabilized" line wins.
    A generation that stabilized but whose assignment was never received is ``never_completed``, unless a
    later empty/assignment line says otherwise.
    """
    drafts: dict[int, Draft] = {}

    def draft(generation: int) -> Draft:
        if generation not in drafts:
            drafts[generation] = Draft(group_protocol=CLASSIC, generation=generation, outcome=NEVER_COMPLETED,
                                       from_logs=True)
        return drafts[generation]

    for event in events:
        if event.event_type not in _NUMBERED or event.generation is None:
            continue
        if event.group_protocol not in (None, CLASSIC):
            continue
        if event.event_type == ev.REBALANCE_PREPARED:
            d = draft(event.generation + 1)
            if d.stabilized_at is None or (event.timestamp is not None and event.timestamp <= d.stabilized_at):
                d.started_at = event.timestamp
        elif event.event_type == ev.GROUP_STABILIZED:
            d = draft(event.generation)
            d.stabilized_at = event.timestamp
            d.member_count = event.member_count if event.member_count is not None else d.member_count
        elif event.event_type == ev.GROUP_EMPTY:
            d = draft(event.generation)
            d.stabilized_at = d.stored_at = event.timestamp
            d.outcome = EMPTY
            d.member_count = 0
        else:
            d = draft(event.generation)
            d.stored_at = event.timestamp
            d.outcome = STABLE
            d.leader = event.member_id or d.leader
            d.member_count = event.member_count if event.member_count is not None else d.member_count
        d.numbered_events.append(event)
    return drafts


#: Client and broker lines that name a member of a given generation (logs-only membership).
_MEMBER_OF_GENERATION = (ev.CLIENT_JOINED, ev.CLIENT_SYNCED, ev.MEMBER_LOADED)


def members_from_logs(events: Sequence[CoordinatorEvent], generation: int) -> list[GenerationMember]:
    """The members log lines place in a generation: client "Successfully joined/synced" lines and the
    broker's per-member load lines. Partial by nature (only the clients whose logs were collected)."""
    seen: dict[str, GenerationMember] = {}
    for event in events:
        if event.event_type not in _MEMBER_OF_GENERATION or event.generation != generation or not event.member_id:
            continue
        known = seen.get(event.member_id)
        seen[event.member_id] = GenerationMember(
            member_id=event.member_id,
            group_instance_id=event.group_instance_id or (known.group_instance_id if known else None),
            client_id=event.client_id or (known.client_id if known else None),
            client_host=event.host or (known.client_host if known else None),
            subscribed_topics=(), assigned_partitions=(), owned_partitions=(), target_partitions=(),
            partitions_pending_revocation=(), member_epoch=None, previous_member_epoch=None, member_state=None,
            rebalance_timeout_ms=None, session_timeout_ms=None,
        )
    return [seen[k] for k in sorted(seen)]
