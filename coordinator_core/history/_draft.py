"""The mutable working form of one generation while a group's inputs are read (internal)."""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from datetime import datetime

from coordinator_core.history.model import Evidence, GenerationMember, MemberIdChange
from coordinator_core.logs import CoordinatorEvent


@dataclass
class Draft:
    """What is known about one generation (classic) or group epoch (KIP-848) before the diff and causes.

    ``members`` is None when nothing names the members (logs only, or a gap); ``members_from_records``
    says the list is complete (a stored record), as opposed to gathered from client log lines.
    """

    group_protocol: str
    generation: int
    outcome: str
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str | None = None
    group_epoch: int | None = None
    target_assignment_epoch: int | None = None
    member_count: int | None = None
    members: list[GenerationMember] | None = None
    members_from_records: bool = False
    partition_names_resolved: bool = True
    started_at: datetime | None = None
    stabilized_at: datetime | None = None
    stored_at: datetime | None = None
    ended_at: datetime | None = None
    ended_by: str | None = None
    first_offset: int | None = None
    record_count: int = 0
    from_records: bool = False
    from_logs: bool = False
    id_changes: list[MemberIdChange] = field(default_factory=list)
    #: Facts from the records that explain the rebalance (KIP-848 member records before the epoch bump).
    record_evidence: list[Evidence] = field(default_factory=list)
    #: Causes the records state outright (a member tombstone before an epoch bump, a protocol conversion).
    record_causes: list[tuple[str, str | None]] = field(default_factory=list)
    #: Log events tied to this generation by number (B1 with the old generation, B2, B2c, epoch lines).
    numbered_events: list[CoordinatorEvent] = field(default_factory=list)
    #: KIP-848: partitions a member had to revoke during the epoch, and who got them afterwards.
    revoked_then_assigned: list[tuple[str, int, str, str]] = field(default_factory=list)
    #: KIP-848: the same moves with their record times (topic, partition, from, to, revocation requested,
    #: released, assigned): see PartitionHandover.
    handovers: list[tuple[str, int, str, str, datetime | None, datetime | None, datetime | None]] = field(
        default_factory=list)

    def __setstate__(self, state: dict[str, object]) -> None:
        """A draft pickled (in a carried group state) before a field existed gets the field's default."""
        for f in fields(self):
            if f.name not in state:
                state[f.name] = f.default_factory() if f.default_factory is not MISSING else f.default
        self.__dict__.update(state)

    @property
    def settled_at(self) -> datetime | None:
        """The last moment known to belong to this generation's rebalance."""
        return self.stored_at or self.stabilized_at or self.started_at

    @property
    def first_seen_at(self) -> datetime | None:
        return self.started_at or self.stabilized_at or self.stored_at
