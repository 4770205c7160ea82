"""Carried state of the incremental gold stages: one row per group (grain: cluster, group_id).

The gold stages are folds: each night a group's carried state plus its *new* silver rows and log events
give the new state and the gold rows to add or amend. The state of every group lives here, written in the
same run as the gold rows it produced (and rolled back with them when a run dies). Each stage owns its own
columns and updates only those (`jobs.common.group_state.merge_state`); a full rebuild (`--rebuild`) is the
same fold from an empty table.

The Python folds keep their state as a versioned, compressed serialization of coordinator_core values
(`coordinator_core.history.state`): opaque to SQL, but small (a group's open tail, not its history). The
offset-event fold (`coordinator_core.history.offset_fold`) keeps a typed state (`OFFSETS_STATE`, a dict of
its fields on the Python side), so SQL can look into it and the stage can join its tails and tombstones
with the night's rows (decided transactions, sweep lines near them).
"""

from __future__ import annotations

from pyspark.sql import types as T

from schemas._spec import TableSpec, column


def _struct(*fields: tuple[str, T.DataType]) -> T.StructType:
    return T.StructType([T.StructField(name, data_type) for name, data_type in fields])


#: One partition's carried offset state: its last commit (offset, v1 expire timestamp) and the stall run
#: that commit belongs to, if it is still open (a run repeats one offset within one generation).
OFFSETS_PARTITION = _struct(
    ("topic", T.StringType()), ("partition", T.LongType()),
    ("last_offset", T.LongType()), ("last_expire_ms", T.LongType()),
    ("run_first_record_offset", T.LongType()), ("run_first_ms", T.LongType()), ("run_last_ms", T.LongType()),
    ("run_count", T.LongType()), ("run_metadata", T.StringType()),
)

#: A record of the group as the offset fold reads it (its kind and the few fields it uses). The records
#: after a group's checkpoint are carried in this shape and read again by the next run.
OFFSETS_RECORD = _struct(
    ("record_partition", T.IntegerType()), ("record_offset", T.LongType()), ("timestamp_ms", T.LongType()),
    ("kind", T.StringType()), ("transaction_outcome", T.StringType()),
    ("topic", T.StringType()), ("partition", T.LongType()), ("offset", T.LongType()),
    ("expire_ms", T.LongType()), ("metadata", T.StringType()),
    ("generation", T.LongType()), ("member_count", T.LongType()), ("member_id", T.StringType()),
)

#: An expired/deleted offset (topic set) or a group deletion (topic null) whose row late log lines or a
#: later group tombstone can still change, with the inputs that decide it and what the row says now.
OFFSETS_TOMBSTONE = _struct(
    ("topic", T.StringType()), ("partition", T.LongType()), ("record_offset", T.LongType()),
    ("timestamp_ms", T.LongType()), ("previous_offset", T.LongType()), ("previous_expire_ms", T.LongType()),
    ("generation", T.LongType()), ("group_members", T.LongType()),
    ("kind", T.StringType()), ("explanation", T.StringType()), ("evidence_count", T.IntegerType()),
)

#: A deletion or expiry log line of the group (coordinator_events), kept while it can explain a tombstone.
OFFSETS_EVENT = _struct(
    ("file_id", T.StringType()), ("line_number", T.LongType()), ("event_type", T.StringType()),
    ("at", T.TimestampType()), ("member_id", T.StringType()), ("cause_class", T.StringType()),
    ("reason", T.StringType()), ("source", T.StringType()), ("message", T.StringType()),
)

#: The grain of an offset_events row (cluster and group aside).
OFFSETS_ROW_KEY = _struct(
    ("kind", T.StringType()), ("topic", T.StringType()), ("partition", T.LongType()),
    ("record_offset", T.LongType()),
)

OFFSETS_STATE = _struct(
    ("version", T.IntegerType()),
    # newest record or deletion/expiry log time seen: what is older than this minus the reopen horizon
    # is final
    ("watermark_ms", T.LongType()),
    # the group at its checkpoint (the first record not settled yet, else after its last record)
    ("generation", T.LongType()), ("members", T.LongType()), ("has_generations", T.BooleanType()),
    ("consumer_members", T.ArrayType(T.StringType())),
    # for a later group tombstone's "written with the other protocol's records" test
    ("lookback_classic_ms", T.LongType()), ("lookback_consumer_ms", T.LongType()),
    ("partitions", T.ArrayType(OFFSETS_PARTITION)),
    ("group_tombstones_ms", T.ArrayType(T.LongType())),
    ("tombstones", T.ArrayType(OFFSETS_TOMBSTONE)),
    ("events", T.ArrayType(OFFSETS_EVENT)),
    # records from the checkpoint on (an open transaction's commit, a group tombstone nothing has
    # resolved yet), and the keys of the rows they produced: read again and replaced by the next run
    ("tail", T.ArrayType(OFFSETS_RECORD)),
    ("provisional", T.ArrayType(OFFSETS_ROW_KEY)),
)

GROUP_STATE = TableSpec(
    name="group_state",
    comment=(
        "Carried state of each group's incremental history: what the next run needs to continue the "
        "generation history, offset events, what-if replay and storm detection from new records only."
    ),
    grain=("cluster", "group_id"),
    partition_columns=("cluster",),
    properties={"delta.enableDeletionVectors": "true"},
    schema=T.StructType([
        column("cluster", T.StringType(), "Kafka cluster name.", False),
        column("group_id", T.StringType(), "Consumer group id.", False),
        column("generations", T.BinaryType(),
               "Generation-history fold state (versioned, zlib-compressed): the open tail of drafts and the "
               "context before it."),
        column("generations_watermark", T.TimestampType(),
               "Newest record or log time seen for the group: late log lines older than this minus "
               "[history] reopen_hours are counted, not applied."),
        column("offsets", OFFSETS_STATE,
               "Offset-event fold state (jobs.offset_events): the group's context, each partition's last commit "
               "and open stall run, tombstones still open to late evidence, and records not settled yet."),
        column("whatif", T.BinaryType(), "What-if fold state (each assignor's last assignment)."),
        column("storms", T.BinaryType(), "Storm fold state (the trailing rebalances of an open run)."),
        column("updated_run_id", T.StringType(), "Run that last changed this row."),
    ]),
)
