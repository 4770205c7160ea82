"""The carried state of one group's generation-history fold, and its serialized form.

The history is a fold: ``fold_generations(state, new_records, new_events)`` continues a group's history
from what an earlier call left. What it must carry is small and bounded by the *open* part of the
history, never by its age:

* the **tail**: the drafts that new input can still change (the last two always, since the next record
  can restore the last generation or end it; and every draft whose time is within ``reopen`` of the
  newest input, since a late log line can still explain it), kept as the records built them (before
  log lines are joined), together with the group's log events after the tail's start;
* the **context** before the tail: what the row pass needs from everything earlier (the previous and the
  base generation, departed members, the last settled time, partitions revoked in a first cooperative
  round, member-id changes already reported);
* the KIP-848 record reader, whose member and assignment maps continue across runs;
* a digest of each row already written for the tail, so that a night writes only rows that changed.

Serialized with pickle (the values are coordinator_core's own dataclasses) and zlib, behind a version
number: a state written by another layout version is refused, and the job's ``--rebuild`` recomputes
every group from the archive.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from coordinator_core.history._draft import Draft
from coordinator_core.history.consumer import ConsumerGroupReader
from coordinator_core.logs import CoordinatorEvent
from coordinator_core.state_codec import dump_versioned, load_versioned

#: Bumped whenever the state's layout or the fold's rules change: old states must then be rebuilt.
STATE_VERSION = 1

#: A row's identity in group_generations (besides cluster and group): protocol, generation, record offset.
RowKey = tuple[str, int, "int | None"]

#: How many reported member-id changes the context remembers (a static-replacement line is matched
#: against the changes of rows near it in time; older ones can no longer match).
MAX_REMEMBERED_CHANGES = 256


class StateVersionError(ValueError):
    """The carried state was written by another layout version: rebuild the history (``--rebuild``)."""


@dataclass
class RowsContext:
    """What the row pass knows when it reaches the first draft of the tail."""

    previous: Draft | None = None
    base: Draft | None = None
    base_revoked: dict[tuple[str, int], str] | None = None
    last_settled: datetime | None = None
    departed: dict[tuple[str | None, str | None], tuple[str, int]] = field(default_factory=dict)
    reported_changes: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class GenerationState:
    """One group's fold state (see the module docstring)."""

    group_id: str | None = None
    version: int = STATE_VERSION
    classic_tail: list[Draft] = field(default_factory=list)
    reader: ConsumerGroupReader = field(default_factory=ConsumerGroupReader)
    events: list[CoordinatorEvent] = field(default_factory=list)
    context: RowsContext = field(default_factory=RowsContext)
    #: digest of every row written for the tail's drafts
    emitted: dict[RowKey, bytes] = field(default_factory=dict)
    #: newest record or event time seen
    watermark: datetime | None = None
    #: log events at or before this time can no longer change any row (they fall before the tail)
    events_floor: datetime | None = None
    #: ``__consumer_offsets`` partitions the group's own broker lines named (for group-less lines)
    offsets_partitions: set[int] = field(default_factory=set)


def dump_state(state: GenerationState) -> bytes:
    """The state as bytes for the ``group_state.generations`` column."""
    return dump_versioned(state)


def load_state(data: bytes | None) -> GenerationState | None:
    """The state from its bytes (None for a group without one)."""
    return load_versioned(data, GenerationState, STATE_VERSION, StateVersionError, "group state",
                          ": run the nightly job with --rebuild to recompute the history from the archive")
