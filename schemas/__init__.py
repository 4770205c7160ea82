"""The contract of every Delta table: one `TableSpec` (StructType, grain, partitioning, comments) each."""

from __future__ import annotations

from schemas._spec import TableSpec
from schemas.bronze import RAW_OFFSETS, REPLICA_CONFLICTS
from schemas.decoded import DECODED_RECORD
from schemas.gold import (
    ASSIGNMENT_REPLAY,
    ASSIGNOR_WHATIF,
    GOLD_TABLES,
    GROUP_GENERATIONS,
    OFFSET_EVENTS,
    REBALANCE_COST,
    REBALANCE_STORMS,
)
from schemas.logs import COORDINATOR_EVENTS, LOG_FILE_READS, RAW_LOG_LINES
from schemas.observability import DECODE_COVERAGE, HISTORY_GAPS, INGEST_RUNS
from schemas.silver import CONSUMER_GROUP_RECORDS, DECODE_ERRORS, GROUP_MEMBERS, GROUP_METADATA, OFFSET_COMMITS
from schemas.state import GROUP_STATE

ALL_TABLES: tuple[TableSpec, ...] = (
    RAW_OFFSETS,
    REPLICA_CONFLICTS,
    OFFSET_COMMITS,
    GROUP_METADATA,
    GROUP_MEMBERS,
    CONSUMER_GROUP_RECORDS,
    DECODE_ERRORS,
    INGEST_RUNS,
    DECODE_COVERAGE,
    HISTORY_GAPS,
    RAW_LOG_LINES,
    COORDINATOR_EVENTS,
    LOG_FILE_READS,
    *GOLD_TABLES,
    GROUP_STATE,
)

__all__ = [
    "ALL_TABLES",
    "ASSIGNMENT_REPLAY",
    "ASSIGNOR_WHATIF",
    "CONSUMER_GROUP_RECORDS",
    "COORDINATOR_EVENTS",
    "DECODED_RECORD",
    "DECODE_COVERAGE",
    "DECODE_ERRORS",
    "GROUP_GENERATIONS",
    "GROUP_MEMBERS",
    "GROUP_METADATA",
    "GROUP_STATE",
    "HISTORY_GAPS",
    "INGEST_RUNS",
    "LOG_FILE_READS",
    "OFFSET_COMMITS",
    "OFFSET_EVENTS",
    "RAW_LOG_LINES",
    "RAW_OFFSETS",
    "REBALANCE_COST",
    "REBALANCE_STORMS",
    "REPLICA_CONFLICTS",
    "TableSpec",
]
