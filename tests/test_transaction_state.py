"""The transaction state a run hands to the next (jobs.decode.transactions: TransactionState, RunTransactions): pure
logic, no Spark. Each expected state below is worked out by hand from Kafka's rule: a transactional
commit is decided by the first COMMIT/ABORT marker of its producer after it in its partition."""

from __future__ import annotations

import json
from typing import Any

from jobs.decode.outcomes import AwaitingPartition
from jobs.decode.transactions import RunTransactions, TransactionState

BEFORE = TransactionState(
    last_offsets={("c1", 0): 100, ("c1", 1): 50},
    open_producers={("c1", 0, 70): (90, 95), ("c1", 0, 71): (98, 98), ("c1", 1, 70): (49, 50)},
)


def run(first_offsets: dict[tuple[str, int], int], **kwargs: Any) -> RunTransactions:
    values: dict[str, Any] = {"last_offsets": {}, "awaiting": [], "first_markers": {}, "open_after": {}, **kwargs}
    return RunTransactions(first_offsets=first_offsets, **values)


def test_a_run_follows_the_archive_only_when_every_partition_starts_past_it() -> None:
    assert run({("c1", 0): 101, ("c1", 1): 51, ("c1", 2): 0}).follows(BEFORE)  # partition 2: new
    assert not run({("c1", 0): 101, ("c1", 1): 50}).follows(BEFORE)  # offset 50 is archived already
    assert not run({("c1", 0): 7}).follows(BEFORE)  # an older segment backfilled


def test_the_first_marker_of_an_open_producer_decides_its_open_commits() -> None:
    this_run = run(
        {("c1", 0): 101},
        first_markers={("c1", 0, 70): (105, "ABORT"), ("c1", 0, 72): (103, "COMMIT"), ("c1", 2, 71): (7, "COMMIT")},
    )
    # 72 had nothing open; 71 wrote its marker in another partition; 70 in partition 1 wrote none
    assert this_run.decided(BEFORE) == {("c1", 0, 70): ("aborted", 105)}


def test_the_state_after_a_run() -> None:
    this_run = run(
        {("c1", 0): 101, ("c1", 3): 0},
        last_offsets={("c1", 0): 120, ("c1", 3): 4},
        awaiting=[AwaitingPartition("c1", 0, 102, 3)],
        first_markers={("c1", 0, 70): (105, "COMMIT"), ("c1", 0, 73): (110, "COMMIT")},
        # 70 was decided and opened a new transaction; 71 (still open) committed more; 74 is new
        open_after={("c1", 0, 70): (106, 118), ("c1", 0, 71): (111, 112), ("c1", 3, 74): (2, 4)},
    )
    assert this_run.after(BEFORE) == TransactionState(
        last_offsets={("c1", 0): 120, ("c1", 1): 50, ("c1", 3): 4},
        open_producers={("c1", 0, 70): (106, 118), ("c1", 0, 71): (98, 112), ("c1", 1, 70): (49, 50),
                        ("c1", 3, 74): (2, 4)},
    )


def test_the_state_goes_through_json_and_is_dropped_when_too_large() -> None:
    data = BEFORE.to_json()
    assert TransactionState.from_json(json.loads(json.dumps(data))) == BEFORE
    for broken in (None, "x", {"last_offsets": [["c1", 0]]}, {"last_offsets": [], "open_producers": [[1]]}):
        assert TransactionState.from_json(broken) is None
    many = TransactionState({}, {("c", 0, x): (x, x) for x in range(10_001)})
    assert many.to_json() is None  # the next run reads it from the tables instead
