"""Carried state of the incremental gold stages: one row per group (grain: cluster, group_id).

The gold stages are folds: each night a group's carried state plus its *new* silver rows and log events
give the new state and the gold rows to add or amend. The state of every group lives here, written in the
same run as the gold rows it produced (and rolled back with them when a run dies). Each stage owns its own
columns and updates only those (`jobs.common.group_state.merge_state`); a full rebuild (`--rebuild`) is the
same fold from an empty table.

The Python folds keep their state as a versioned, compressed serialization of coordinator_core values
(`coordinator_core.history.state`): opaque to SQL, but small (a group's open tail, not its history).
"""

from __future__ import annotations

from pyspark.sql import types as T

from schemas._spec import TableSpec, column

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
        column("offsets", T.BinaryType(), "Offset-event fold state (per partition: last commit, stall run)."),
        column("whatif", T.BinaryType(), "What-if fold state (each assignor's last assignment)."),
        column("storms", T.BinaryType(), "Storm fold state (the trailing rebalances of an open run)."),
        column("updated_run_id", T.StringType(), "Run that last changed this row."),
    ]),
)
