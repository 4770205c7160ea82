"""KIP-848 ("consumer" protocol) group epochs from the records of types 3-8 and 16, and from log lines
(internal).

A KIP-848 group has no generations. Every change of membership or subscription bumps the **group epoch**
(record type 3) right after the member records that caused it (type 5 member metadata, or its tombstone
when a member leaves or is fenced); the coordinator then writes the new **target assignment** (type 7 per
changed member, then type 6 with the target assignment epoch), and each member reconciles towards it at
its own pace (type 8: member epoch, previous member epoch, state, owned partitions, partitions pending
revocation). One row per group epoch therefore carries: the member changes written before the bump, the
time the target assignment was stored, and the time every member had reached the epoch in state STABLE
("stabilized"). A partition that one member had pending revocation and another member was then given is
the KIP-848 form of "revoked, then assigned".

Partitions in these records are topic ids; a type-4 record (written up to 4.0) or the caller's
``topic_names`` maps them to names. Unmapped ids stay as the Uuid text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from coordinator_core.history._draft import Draft
from coordinator_core.history.inputs import GroupRecord, record_time
from coordinator_core.history.model import (
    CONSUMER,
    EMPTY,
    ENDED_BY_GROUP_DELETED,
    STABLE,
    Evidence,
    GenerationMember,
    Partition,
)
from coordinator_core.logs import CoordinatorEvent
from coordinator_core.logs import events as ev
from coordinator_core.messages import (
    MEMBER_STATES,
    AssignedTopicPartitions,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataValue,
    TopicIdPartitions,
)

#: Record kinds this module reads.
CONSUMER_GROUP_KINDS = frozenset({
    "consumer_group_metadata", "consumer_group_partition_metadata", "consumer_group_member_metadata",
    "consumer_group_target_assignment_metadata", "consumer_group_target_assignment_member",
    "consumer_group_current_member_assignment", "consumer_group_regular_expression",
})
_STABLE_STATE = 0


def _record_evidence(record: GroupRecord, what: str, member_id: str | None, cause: str | None) -> Evidence:
    return Evidence(event_type=f"record:{record.record.kind}", at=record_time(record), member_id=member_id,
                    cause_class=cause, reason=what, source=None, line_number=None,
                    message=f"offset {record.offset}")


class ConsumerGroupReader:
    """Feeds KIP-848 records in log order and yields one draft per group epoch."""

    def __init__(self, topic_names: Mapping[str, str] | None = None) -> None:
        self.names: dict[str, str] = dict(topic_names or {})
        self.members: dict[str, ConsumerGroupMemberMetadataValue] = {}
        self.target: dict[str, tuple[TopicIdPartitions, ...]] = {}
        self.current: dict[str, ConsumerGroupCurrentMemberAssignmentValue] = {}
        self.revoking: dict[tuple[str | None, int], str] = {}
        #: per partition pending revocation: when its owner's record first had it pending, and when the owner's
        #: record no longer had it (released)
        self.revoking_since: dict[tuple[str | None, int], datetime] = {}
        self.released: dict[tuple[str | None, int], datetime] = {}
        #: partitions of a member whose assignment record was deleted (it left, or was fenced or timed out):
        #: its id and the deletion's time, until another member is given them
        self.left_behind: dict[tuple[str | None, int], tuple[str, datetime]] = {}
        self.drafts: list[Draft] = []
        self.draft: Draft | None = None
        self.pending_causes: list[tuple[str, str | None]] = []
        self.pending_evidence: list[Evidence] = []

    def __setstate__(self, state: dict[str, object]) -> None:
        """A reader pickled (in a carried group state) before the hand-over times were kept starts them empty."""
        state.setdefault("revoking_since", {})
        state.setdefault("released", {})
        state.setdefault("left_behind", {})
        self.__dict__.update(state)

    # -- reading ---------------------------------------------------------------------------------------
    def feed(self, record: GroupRecord) -> None:  # noqa: C901 - one branch per KIP-848 record type
        rec = record.record
        kind = rec.kind
        if self.draft is not None:
            self.draft.record_count += 1
        if kind == "consumer_group_partition_metadata":
            if rec.value is not None:
                for topic in rec.value.topics:
                    if topic.topic_id is not None:
                        self.names[topic.topic_id] = topic.topic_name
        elif kind == "consumer_group_member_metadata":
            self._member_metadata(record)
        elif kind == "consumer_group_metadata":
            self._group_epoch(record)
        elif kind == "consumer_group_target_assignment_metadata":
            if rec.value is not None and self.draft is not None:
                self.draft.target_assignment_epoch = rec.value.assignment_epoch
                if rec.value.assignment_epoch == self.draft.generation and self.draft.stored_at is None:
                    self.draft.stored_at = record_time(record)
        elif kind == "consumer_group_target_assignment_member":
            if rec.value is None:
                self._end_epoch()
                self.target.pop(rec.key.member_id, None)
            else:
                self.target[rec.key.member_id] = rec.value.topic_partitions
        elif kind == "consumer_group_current_member_assignment":
            self._current_assignment(record)
        elif kind == "consumer_group_regular_expression" and rec.value is not None:
            self._end_epoch()
            self.pending_causes.append((ev.METADATA_CHANGE, None))
            self.pending_evidence.append(_record_evidence(
                record, f"regular expression {rec.key.regular_expression!r} resolved to {list(rec.value.topics)}",
                None, ev.METADATA_CHANGE))

    def _member_metadata(self, record: GroupRecord) -> None:
        rec = record.record
        member_id = rec.key.member_id
        if rec.value is None:
            if member_id in self.members:
                self._end_epoch()
            if self.members.pop(member_id, None) is not None:
                self.pending_causes.append((ev.MEMBER_LEFT_CAUSE, member_id))
                self.pending_evidence.append(_record_evidence(
                    record, "member removed (left, fenced or timed out)", member_id, ev.MEMBER_LEFT_CAUSE))
            return
        value: ConsumerGroupMemberMetadataValue = rec.value
        old = self.members.get(member_id)
        if old is None or (old.subscribed_topic_names, old.subscribed_topic_regex) != (
                value.subscribed_topic_names, value.subscribed_topic_regex):
            self._end_epoch()
        if old is None:
            self.pending_causes.append((ev.NEW_MEMBER, member_id))
            self.pending_evidence.append(_record_evidence(record, "member joined", member_id, ev.NEW_MEMBER))
        elif (old.subscribed_topic_names, old.subscribed_topic_regex) != (
                value.subscribed_topic_names, value.subscribed_topic_regex):
            self.pending_causes.append((ev.METADATA_CHANGE, member_id))
            self.pending_evidence.append(_record_evidence(
                record, f"subscription changed from {list(old.subscribed_topic_names)} to "
                f"{list(value.subscribed_topic_names)}", member_id, ev.METADATA_CHANGE))
        self.members[member_id] = value

    def _end_epoch(self) -> None:
        """A membership or subscription change starts the records of the next epoch: the current epoch's
        members are final now (the coordinator writes a leaving member's tombstones, or a joining member's
        record, just before the bump)."""
        if self.draft is not None:
            self._close()

    def _group_epoch(self, record: GroupRecord) -> None:
        rec = record.record
        if rec.value is None:
            self._end_epoch()
            if self.drafts and self.drafts[-1].ended_by is None:
                last = self.drafts[-1]
                last.ended_at, last.ended_by = record_time(record), ENDED_BY_GROUP_DELETED
            return
        epoch = rec.value.epoch
        if self.draft is not None and self.draft.generation == epoch:
            return
        self._end_epoch()
        self.draft = Draft(group_protocol=CONSUMER, generation=epoch, outcome=STABLE, protocol_type="consumer",
                           group_epoch=epoch, started_at=record_time(record), first_offset=record.offset,
                           record_count=1, from_records=True, members_from_records=True)
        self.draft.record_causes.extend(self.pending_causes)
        self.draft.record_evidence.extend(self.pending_evidence)
        self.pending_causes, self.pending_evidence = [], []

    def _current_assignment(self, record: GroupRecord) -> None:
        rec = record.record
        member_id = rec.key.member_id
        at = record_time(record)
        if rec.value is None:
            self._end_epoch()
            gone = self.current.pop(member_id, None)
            if gone is not None and at is not None:
                for e in gone.assigned_partitions:
                    for p in e.partitions:
                        self.left_behind[(e.topic_id, p)] = (member_id, at)
            return
        value: ConsumerGroupCurrentMemberAssignmentValue = rec.value
        self._track_revocations(member_id, value, at)
        for entry in value.assigned_partitions:
            for p in entry.partitions:
                self._maybe_handed_over(entry.topic_id, p, member_id, at)
        self.current[member_id] = value
        draft = self.draft
        if draft is not None and draft.stabilized_at is None and all(
                (c := self.current.get(m)) is not None and c.member_epoch == draft.generation
                and c.state == _STABLE_STATE for m in self._member_ids()):
            draft.stabilized_at = record_time(record)

    def _track_revocations(self, member_id: str, value: ConsumerGroupCurrentMemberAssignmentValue,
                           at: datetime | None) -> None:
        """Partitions the member's record has pending revocation (since when), and those it no longer holds
        after having had them pending (released: it acknowledged the revocation)."""
        pending = {(e.topic_id, p) for e in value.partitions_pending_revocation for p in e.partitions}
        owned = {(e.topic_id, p) for e in value.assigned_partitions for p in e.partitions}
        for key in sorted(pending, key=str):
            if self.revoking.get(key) != member_id:
                self.revoking[key] = member_id
                self.revoking_since.pop(key, None)
                self.released.pop(key, None)
            if at is not None:
                self.revoking_since.setdefault(key, at)
        for key, owner in self.revoking.items():
            if owner == member_id and key not in pending and key not in owned and at is not None:
                self.released.setdefault(key, at)

    def _maybe_handed_over(self, topic_id: str | None, p: int, member_id: str, at: datetime | None) -> None:
        """A partition the member's record holds: if another member had it pending revocation, or left it
        behind, the coordinator handed it over (a KIP-848 move)."""
        key = (topic_id, p)
        leaver = self.left_behind.pop(key, None)
        if leaver is not None and leaver[0] != member_id and self.draft is not None:
            # stopped by the deletion of its owner's record at the latest; nothing asked it to revoke
            self.draft.handovers.append((topic_id or "", p, leaver[0], member_id, None, leaver[1], at))
        previous_owner = self.revoking.get(key)
        if previous_owner is None or previous_owner == member_id:
            return
        del self.revoking[key]
        requested, released = self.revoking_since.pop(key, None), self.released.pop(key, None)
        if self.draft is not None:
            self.draft.revoked_then_assigned.append((topic_id or "", p, previous_owner, member_id))
            self.draft.handovers.append((topic_id or "", p, previous_owner, member_id, requested, released, at))

    def _member_ids(self) -> list[str]:
        """Members known by their metadata record or by their current assignment (a member whose
        metadata record was lost or could not be decoded still shows through its assignment)."""
        return sorted(set(self.members) | set(self.current))

    # -- output ----------------------------------------------------------------------------------------
    def topic(self, topic_id: str | None) -> str:
        return self.names.get(topic_id or "", topic_id or "")

    def _partitions(self, entries: Sequence[TopicIdPartitions | AssignedTopicPartitions]) -> tuple[Partition, ...]:
        return tuple(sorted(Partition(self.topic(e.topic_id), p) for e in entries for p in e.partitions))

    def _resolved(self) -> bool:
        ids = {e.topic_id for c in self.current.values() for e in c.assigned_partitions}
        ids |= {e.topic_id for t in self.target.values() for e in t}
        return all(i in self.names for i in ids if i is not None)

    def _close(self) -> None:
        draft = self.draft
        assert draft is not None
        members = []
        for member_id in self._member_ids():
            meta = self.members.get(member_id)
            current = self.current.get(member_id)
            classic = meta.classic_member_metadata if meta else None
            members.append(GenerationMember(
                member_id=member_id,
                group_instance_id=meta.instance_id if meta else None,
                client_id=meta.client_id if meta else None,
                client_host=meta.client_host.lstrip("/") if meta else None,
                subscribed_topics=tuple(meta.subscribed_topic_names) if meta else (),
                assigned_partitions=self._partitions(current.assigned_partitions) if current else (),
                owned_partitions=(),
                target_partitions=self._partitions(self.target.get(member_id, ())),
                partitions_pending_revocation=self._partitions(current.partitions_pending_revocation)
                if current else (),
                member_epoch=current.member_epoch if current else None,
                previous_member_epoch=current.previous_member_epoch if current else None,
                member_state=MEMBER_STATES.get(current.state, str(current.state)) if current else None,
                rebalance_timeout_ms=meta.rebalance_timeout_ms if meta and meta.rebalance_timeout_ms >= 0 else None,
                session_timeout_ms=classic.session_timeout_ms if classic else None,
            ))
        draft.members = members
        draft.member_count = len(members)
        draft.outcome = STABLE if members else EMPTY
        assignors = {m.server_assignor for m in self.members.values() if m.server_assignor}
        draft.protocol = assignors.pop() if len(assignors) == 1 else draft.protocol
        draft.partition_names_resolved = self._resolved()
        draft.revoked_then_assigned = [(self.topic(t), p, a, b) for t, p, a, b in draft.revoked_then_assigned]
        draft.handovers = [(self.topic(t), p, a, b, requested, released, assigned)
                           for t, p, a, b, requested, released, assigned in draft.handovers]
        self.drafts.append(draft)
        self.draft = None

    def finish(self) -> list[Draft]:
        if self.draft is not None:
            self._close()
        return self.drafts


def _logged_member(member_id: str) -> GenerationMember:
    return GenerationMember(member_id=member_id, group_instance_id=None, client_id=None, client_host=None,
                            subscribed_topics=(), assigned_partitions=(), owned_partitions=(), target_partitions=(),
                            partitions_pending_revocation=(), member_epoch=None, previous_member_epoch=None,
                            member_state=None, rebalance_timeout_ms=None, session_timeout_ms=None)


def drafts_from_consumer_logs(events: Sequence[CoordinatorEvent]) -> dict[int, Draft]:
    """One draft per group epoch the broker's KIP-848 lines name: the bump starts it, the target
    assignment computation stores it (and names the assignor)."""
    drafts: dict[int, Draft] = {}
    live: set[str] = set()
    seen_join = False
    for event in events:
        if event.event_type in (ev.CG_MEMBER_JOINED, ev.CG_STATIC_MEMBER_REPLACED) and event.member_id:
            live.add(event.member_id)
            live.discard(event.related_member_id or "")
            seen_join = True
        elif event.event_type in (ev.CG_MEMBER_LEFT, ev.CG_MEMBER_FENCED) and event.member_id:
            live.discard(event.member_id)
        if event.event_type not in (ev.CG_EPOCH_BUMPED, ev.CG_TARGET_ASSIGNMENT_COMPUTED) or event.generation is None:
            continue
        d = drafts.get(event.generation)
        if d is None:
            d = drafts[event.generation] = Draft(group_protocol=CONSUMER, generation=event.generation,
                                                 outcome=STABLE, protocol_type="consumer",
                                                 group_epoch=event.generation, from_logs=True)
        if event.event_type == ev.CG_EPOCH_BUMPED:
            d.started_at = d.started_at or event.timestamp
            if seen_join:
                # The members the join/leave/fence lines account for (ids only; the lines say no more).
                d.members = [_logged_member(m) for m in sorted(live)]
                d.member_count = len(live)
                d.outcome = STABLE if live else EMPTY
        else:
            d.stored_at = d.stored_at or event.timestamp
            d.target_assignment_epoch = event.generation
            d.protocol = event.protocol or d.protocol
        d.numbered_events.append(event)
    return drafts
