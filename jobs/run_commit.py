"""How a nightly run is committed and how a run that died is undone.

A run is committed by the single ingest_runs row it writes last, which records the Delta version of every
table after the run's writes (and, as the note of that commit, the same state: `commit_note`). The next run
reads it back (`last_committed`) and first restores every derived table a dead run may have written to those
versions (`recover`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from jobs.common.delta_io import Tables, write_together
from jobs.decode.transactions import TransactionState
from jobs.ingest.replicas import ArchiveEpochs
from schemas import HISTORY_GAPS, INGEST_RUNS, RAW_OFFSETS, REPLICA_CONFLICTS

if TYPE_CHECKING:  # (jobs.stages imports CommittedState from here)
    from jobs.stages import Stage
    from schemas import TableSpec

# Tables never rolled back after a crash: the archive (append-only by contract; whatever a crashed run
# archived is valid and will be decoded by the next run), gaps (keyed by where the archive stopped, so
# recording one twice is impossible), the archive's quarantine of replica conflicts (append-only, keyed by
# the quarantined copy: the next run finds it there and does not record it again) and the commit log itself.
NOT_ROLLED_BACK = {RAW_OFFSETS.name, HISTORY_GAPS.name, REPLICA_CONFLICTS.name, INGEST_RUNS.name}


@dataclass(frozen=True)
class CommittedState:
    """What the last successful run left: decoded raw_offsets through this version; table versions."""

    run_id: str | None
    raw_version_decoded: int
    table_versions: dict[str, int]
    #: transactions after the decoded records (carried by the commit note only; None: read from the tables)
    transactions: TransactionState | None = None
    #: the archive's leader epochs (carried by the commit note only; None: the next ingest groups raw_offsets)
    archive_epochs: ArchiveEpochs | None = None


#: The key of the run's commit note: the userMetadata of the Delta commit that appends its ingest_runs row.
COMMIT_NOTE_KEY = "consumer_group_history.committed_run"


def commit_note(state: CommittedState) -> str:
    """The committed state, as the note of the ingest_runs commit that records the run (the row's values)."""
    return json.dumps({COMMIT_NOTE_KEY: {
        "run_id": state.run_id,
        "raw_version_decoded": state.raw_version_decoded,
        "table_versions": state.table_versions,
        "transactions": state.transactions.to_json() if state.transactions else None,
        "archive_epochs": state.archive_epochs.to_json() if state.archive_epochs else None,
    }})


def last_committed_row(tables: Tables) -> CommittedState:
    """The committed state from the latest ingest_runs row."""
    last = tables.read(INGEST_RUNS).orderBy(F.col("run_id").desc()).limit(1).collect()
    if not last:
        return CommittedState(None, 0, {})
    row = last[0]
    return CommittedState(row["run_id"], int(row["raw_version_decoded"]), dict(row["table_versions"]))


def last_committed(tables: Tables) -> CommittedState:
    """What the last successful run left.

    Read from the note of ingest_runs' latest commit (`commit_note`: one small read of the Delta log)
    rather than from the table (a Delta state reconstruction and a query, about a second per run); from
    the table when the latest commit has no note (a table compacted or written before notes existed).
    """
    if tables.version(INGEST_RUNS) == 0:  # only the table's creation: no run committed yet
        return CommittedState(None, 0, {})
    note = tables.last_commit_note(INGEST_RUNS)
    try:
        state = json.loads(note)[COMMIT_NOTE_KEY] if note else None
    except (ValueError, TypeError, KeyError):
        state = None
    if not isinstance(state, dict):
        return last_committed_row(tables)
    return CommittedState(state["run_id"], int(state["raw_version_decoded"]),
                          {name: int(v) for name, v in state["table_versions"].items()},
                          TransactionState.from_json(state.get("transactions")),
                          ArchiveEpochs.from_json(state.get("archive_epochs")))


def recover(tables: Tables, committed: CommittedState, stages: Sequence[Stage]) -> list[str]:
    """Undo the derived-table writes of a run that did not commit. Returns the tables restored.

    The tables are independent (each goes back to its own committed version), so they are restored
    together: a RESTORE is mostly commit work on the driver, and a run that died late changed every table."""
    specs = {spec.name: spec for stage in stages for spec in stage.writes
             if spec.name not in NOT_ROLLED_BACK and tables.exists(spec)}
    done: dict[str, bool] = {}

    def restore(spec: TableSpec) -> None:
        # A table created after the last commit (or never committed) goes back to its empty version 0.
        done[spec.name] = tables.restore(spec, committed.table_versions.get(spec.name, 0))

    write_together([partial(restore, spec) for spec in specs.values()])
    return [name for name in specs if done[name]]
