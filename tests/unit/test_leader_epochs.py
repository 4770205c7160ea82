"""The leader-epoch-checkpoint reader and Kafka's truncation rule (coordinator_core.leader_epochs).

Checkpoint texts are written in the format of Kafka's LeaderEpochCheckpointFile (its Javadoc's example:
version 0, entry count, `epoch startOffset` lines) and the refusals are those of
CheckpointFile.CheckpointReadBuffer.read. The truncation cases are worked by hand from
LeaderEpochFileCache.endOffsetFor: the end offset of epoch e is the start offset of the first later epoch.
"""

from __future__ import annotations

import pytest

from coordinator_core.leader_epochs import (
    CheckpointError,
    EpochStart,
    epoch_end_offsets,
    epoch_starts,
    read_leader_epoch_checkpoint,
    truncated_by,
)


def test_a_checkpoint_file_reads_as_kafka_writes_it() -> None:
    assert read_leader_epoch_checkpoint("0\n2\n0 1\n1 2\n") == [(0, 1), (1, 2)]  # the Javadoc's example
    assert read_leader_epoch_checkpoint("0\n1\n7\t1234567890123\n") == [(7, 1234567890123)]  # any white space
    assert read_leader_epoch_checkpoint("0\n0\n") == []
    assert read_leader_epoch_checkpoint("") == []  # an empty file: no entries (Kafka reads it so)
    assert read_leader_epoch_checkpoint("0\n") == []  # version only


@pytest.mark.parametrize("text, message", [
    ("1\n1\n0 0\n", "unrecognised version 1"),
    ("0\n2\n0 0\n", "expected 2 entries"),
    ("0\n1\n0 0 0\n", "malformed line"),
    ("0\n1\n0\n", "malformed line"),
    ("0\none\n", "entry count"),
    ("0\n1\nx 0\n", "epoch"),
])
def test_a_checkpoint_kafka_refuses_is_refused_with_the_file_named(text: str, message: str) -> None:
    with pytest.raises(CheckpointError, match=message) as raised:
        read_leader_epoch_checkpoint(text, "/data/__consumer_offsets-3/leader-epoch-checkpoint")
    assert "__consumer_offsets-3" in str(raised.value)


def test_the_earliest_start_of_each_epoch_wins_and_unknown_epochs_are_ignored() -> None:
    starts = epoch_starts([
        EpochStart(1, 30, "batch in copy B"),  # B's first epoch-1 batch left after compaction
        EpochStart(1, 24, "checkpoint of B"),
        EpochStart(0, 0, "checkpoint of A"),
        EpochStart(-1, 0, "legacy batch"),
    ])
    assert starts == {0: EpochStart(0, 0, "checkpoint of A"), 1: EpochStart(1, 24, "checkpoint of B")}


def test_a_record_at_or_past_a_later_epochs_start_was_truncated() -> None:
    starts = epoch_starts([EpochStart(0, 0, "a"), EpochStart(1, 24, "b"), EpochStart(3, 40, "c")])
    ends = epoch_end_offsets(starts)
    assert ends == {0: EpochStart(1, 24, "b"), 1: EpochStart(3, 40, "c"), 3: None}
    assert truncated_by(0, 23, starts) is None
    assert truncated_by(0, 24, starts) == EpochStart(1, 24, "b")
    assert truncated_by(1, 39, starts) is None
    assert truncated_by(1, 40, starts) == EpochStart(3, 40, "c")
    assert truncated_by(2, 45, starts) == EpochStart(3, 40, "c")  # an epoch no evidence names
    assert truncated_by(3, 10_000, starts) is None  # the latest epoch: nothing later decides
    assert truncated_by(-1, 10_000, starts) is None  # a legacy batch: no epoch, the rule cannot tell
    assert truncated_by(None, 10_000, starts) is None  # read from Kafka: no epoch


def test_the_first_later_start_ends_an_epoch_even_out_of_epoch_order() -> None:
    """Evidence from several copies can show a later epoch starting before an intermediate one (the deposed
    leader of epoch 1 never wrote in the new lineage): the smallest start among the later epochs ends it."""
    starts = epoch_starts([EpochStart(0, 0, "a"), EpochStart(1, 50, "b"), EpochStart(2, 30, "c")])
    assert epoch_end_offsets(starts)[0] == EpochStart(2, 30, "c")
    assert truncated_by(0, 30, starts) == EpochStart(2, 30, "c")
    assert truncated_by(1, 50, starts) == EpochStart(2, 30, "c")
