"""Leader epochs of a partition's copies: Kafka's `leader-epoch-checkpoint` file and its truncation rule.

Every replica of a partition keeps a leader epoch cache (``LeaderEpochFileCache``): which leader epoch
starts at which offset, persisted as ``leader-epoch-checkpoint`` in the partition directory
(``LeaderEpochCheckpointFile``: a version line ``0``, an entry count, then one ``epoch startOffset`` line per
entry, fields separated by white space). A v2 batch carries the epoch of the leader that wrote it
(``partitionLeaderEpoch``).

When a replica follows a new leader, it asks the leader for the end offset of its own latest epoch
(``OffsetsForLeaderEpoch``); the leader answers with the start offset of the first later epoch in its
cache (``LeaderEpochFileCache.endOffsetFor``) and the replica truncates its log there. So a record written
under epoch ``e`` at an offset at or past the start offset of any later epoch was truncated: the leader of
that later epoch rewrote the offset. That is the rule `epoch_end_offsets` / `truncated_by` apply to the
start offsets gathered from several copies (checkpoint files and the batches themselves: a batch of
epoch ``e`` at base offset ``b`` shows that ``e`` started at or before ``b``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

#: ``LeaderEpochCheckpointFile.CURRENT_VERSION``
CHECKPOINT_VERSION = 0
CHECKPOINT_FILE_NAME = "leader-epoch-checkpoint"
#: ``RecordBatch.NO_PARTITION_LEADER_EPOCH``: a legacy (magic 0/1) batch or a batch written before 0.11
NO_PARTITION_LEADER_EPOCH = -1
_WHITE_SPACE = re.compile(r"\s+")


class CheckpointError(ValueError):
    """A `leader-epoch-checkpoint` file Kafka itself would refuse to read (it fails the log directory)."""


@dataclass(frozen=True, slots=True)
class EpochStart:
    """Evidence that leader epoch `epoch` started at or before `start_offset`, and where it was read."""

    epoch: int
    start_offset: int
    source: str


def read_leader_epoch_checkpoint(text: str, location: str = "leader-epoch-checkpoint") -> list[tuple[int, int]]:
    """(epoch, start offset) entries of a `leader-epoch-checkpoint` file's text, as Kafka's
    ``CheckpointFile.CheckpointReadBuffer`` reads them: empty text is no entries; the version must be 0; the
    entry count must match; each entry line is two white-space separated integers."""
    lines = text.splitlines()
    if not lines:
        return []

    def number(line: str, what: str) -> int:
        try:
            return int(line)
        except ValueError:
            raise CheckpointError(f"malformed line in checkpoint file {location} ({what}): {line!r}") from None

    version = number(lines[0], "version")
    if version != CHECKPOINT_VERSION:
        raise CheckpointError(f"unrecognised version {version} (expected {CHECKPOINT_VERSION}) in checkpoint "
                              f"file {location}")
    if len(lines) < 2:
        return []
    expected = number(lines[1], "entry count")
    entries = []
    for line in lines[2:]:
        # Java's Pattern.split drops trailing empty strings but keeps a leading one
        fields = _WHITE_SPACE.split(line)
        while fields and fields[-1] == "":
            fields.pop()
        if len(fields) != 2:
            raise CheckpointError(f"malformed line in checkpoint file {location}: {line!r}")
        entries.append((number(fields[0], "epoch"), number(fields[1], "start offset")))
    if len(entries) != expected:
        raise CheckpointError(f"expected {expected} entries in checkpoint file {location}, found {len(entries)}")
    return entries


def epoch_starts(evidence: Iterable[EpochStart]) -> dict[int, EpochStart]:
    """The earliest start offset known for each epoch (>= 0) over all the evidence.

    An epoch's start offset is its leader's log end offset when it was elected, the same in every copy
    that has it; a copy may know it only later than that (compaction removed the epoch's first batches, the
    log start moved past it), never earlier: the smallest value seen is the best.
    """
    best: dict[int, EpochStart] = {}
    for e in evidence:
        if e.epoch < 0 or e.start_offset < 0:
            continue
        held = best.get(e.epoch)
        if held is None or (e.start_offset, e.source) < (held.start_offset, held.source):
            best[e.epoch] = e
    return best


def epoch_end_offsets(starts: dict[int, EpochStart]) -> dict[int, EpochStart | None]:
    """For each epoch, the later epoch whose start ends it (the smallest start offset among the epochs
    above it; ties: the lower epoch), or None when no later epoch is known. A record of epoch `e` at an
    offset at or past that start was truncated (``LeaderEpochFileCache.endOffsetFor``)."""
    ends: dict[int, EpochStart | None] = {}
    ordered = sorted(starts)
    for i, epoch in enumerate(ordered):
        later = [starts[e] for e in ordered[i + 1:]]
        ends[epoch] = min(later, key=lambda s: (s.start_offset, s.epoch)) if later else None
    return ends


def truncated_by(epoch: int | None, offset: int, starts: dict[int, EpochStart]) -> EpochStart | None:
    """The later epoch that truncated a record written under `epoch` at `offset` (the one starting first,
    then the lowest), or None if it was not truncated or the rule cannot tell: no epoch (a legacy batch, a
    record read from Kafka) or no later epoch known to start at or before `offset`."""
    if epoch is None or epoch < 0:
        return None
    later = [s for e, s in starts.items() if e > epoch and s.start_offset <= offset]
    return min(later, key=lambda s: (s.start_offset, s.epoch)) if later else None
