"""The offset-event fold's vocabulary as the Spark side reads it: record kinds (OFFSETS_RECORD.kind), the
rule's matching windows and the lines it reads, all defined by the fold itself
(`coordinator_core.history.offset_fold`), and the column lists of the carried records and lines."""

from __future__ import annotations

from coordinator_core.history.offset_fold import (
    CLASSIC_TOMBSTONE,
    COMMIT,
    CONSUMER_RECORD,
    CONSUMER_RECORD_TOMBSTONE,
    CONSUMER_TOMBSTONE,
    EPOCH,
    EVIDENCE_TYPES,
    GENERATION,
    LOG_MATCH_MS,
    MEMBER_JOINED,
    MEMBER_LEFT,
    OFFSET_TOMBSTONE,
    OTHER,
    PLACEHOLDER,
)
from schemas.state import OFFSETS_RECORD

__all__ = ["CLASSIC_TOMBSTONE", "COMMIT", "CONSUMER_RECORD", "CONSUMER_RECORD_TOMBSTONE", "CONSUMER_TOMBSTONE",
           "EPOCH", "EVIDENCE_TYPES", "GENERATION", "LOG_MATCH_MS", "MEMBER_JOINED", "MEMBER_LEFT",
           "OFFSET_TOMBSTONE", "OTHER", "PLACEHOLDER", "_RECORD_COLUMNS"]

_RECORD_COLUMNS = [f.name for f in OFFSETS_RECORD.fields]
