"""The offset-event fold's vocabulary: record kinds as the fold reads them (OFFSETS_RECORD.kind), the
oracle's matching windows, and the column lists of the carried state's records and events."""

from __future__ import annotations

from coordinator_core.logs import events as ev
from jobs.common.per_group import GROUP_KEY
from schemas.gold import OFFSET_EVENTS
from schemas.state import OFFSETS_EVENT, OFFSETS_RECORD

PARTITION_KEY = [*GROUP_KEY, "topic", "partition"]
TRANSACTION_OPEN = "open"

#: Matching windows of the oracle (`coordinator_core.history.offsets`): a deletion/expiry log line within
#: 5 s of a tombstone explains it, the group's own tombstone within 1 s means "deleted with the group".
LOG_MATCH_MS = 5_000
TOMBSTONE_MATCH_MS = 1_000

# Record kinds, as the fold reads them (OFFSETS_RECORD.kind).
COMMIT = "commit"
OFFSET_TOMBSTONE = "offset_tombstone"
GENERATION = "generation"                # GroupMetadata of a generation
PLACEHOLDER = "placeholder"              # 3.7+ GroupMetadata of a newly created group: no generation
CLASSIC_TOMBSTONE = "classic_tombstone"  # GroupMetadata tombstone
EPOCH = "epoch"                          # KIP-848 ConsumerGroupMetadata (group epoch)
CONSUMER_TOMBSTONE = "consumer_tombstone"
MEMBER_JOINED = "member_joined"          # KIP-848 member metadata
MEMBER_LEFT = "member_left"
CONSUMER_RECORD = "consumer_record"      # any other KIP-848 record
CONSUMER_RECORD_TOMBSTONE = "consumer_record_tombstone"
OTHER = "other"                          # share/streams/unknown records of the group

COMMIT_KINDS = (COMMIT, OFFSET_TOMBSTONE)
GROUP_TOMBSTONES = (CLASSIC_TOMBSTONE, CONSUMER_TOMBSTONE)
CONTEXT_KINDS = (GENERATION, EPOCH)
#: The other protocol's live records, which make a classic / KIP-848 group tombstone a protocol conversion.
CONSUMER_LIVE = (EPOCH, MEMBER_JOINED, CONSUMER_RECORD)
CLASSIC_LIVE = (GENERATION, PLACEHOLDER)
GROUP_LEVEL = (GENERATION, PLACEHOLDER, CLASSIC_TOMBSTONE, EPOCH, CONSUMER_TOMBSTONE, MEMBER_JOINED, MEMBER_LEFT,
               CONSUMER_RECORD, CONSUMER_RECORD_TOMBSTONE)

EVIDENCE_TYPES = (ev.OFFSETS_DELETED, ev.GROUPS_DELETED, ev.GROUP_DEAD, ev.OFFSETS_EXPIRED)

_LONG_MIN = -(2**63)
_LONG_MAX = 2**63 - 1
_BEFORE_ALL = -1  # record offset of the carried rows: before every record

_RECORD_COLUMNS = [f.name for f in OFFSETS_RECORD.fields]
_EVENT_COLUMNS = [f.name for f in OFFSETS_EVENT.fields]
_EVIDENCE = OFFSET_EVENTS.schema["evidence"].dataType
