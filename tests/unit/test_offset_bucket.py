"""The offset fold's bucket function (`jobs.offset_events.fold.fold_fn`, what Spark calls per bucket of groups):
each group of the bucket gets its own records, lines, state and decided outcomes, whichever fold takes it
(over columns for an ordinary night, record by record otherwise), and its rows and state are what
`continue_offsets` gives that group alone."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema

from coordinator_core.history.offset_fold import continue_offsets, fold_record
from coordinator_core.logs import events as ev
from jobs.offset_events.fold import DECIDED, FOLD_INPUT, FOLD_LINES, LINE, RECORD, ROW, STATE, fold_fn
from tests.unit.test_history_builders import commit, event, generation, member, offset_tombstone
from tests.unit.test_offset_fold import _group_line

STALL = {"stall_min_commits": 2, "stall_min_ms": 1_000}
HORIZON = 48 * 3_600_000


def _records(group: str, records: list[Any]) -> list[dict[str, Any]]:
    return [{"cluster": "c", "group_id": group, "_bucket": 0, "_part": RECORD, **fold_record(r)} for r in records]


def test_every_group_of_a_bucket_folds_as_it_would_alone() -> None:
    ordinary = [generation(0, 0.0, 1, [member("c-1", "c")]), commit(1, 1.0, "orders", 0, 5),
                commit(2, 2.0, "orders", 0, 5), commit(3, 4.0, "orders", 0, 5), commit(4, 5.0, "orders", 1, 9),
                commit(5, 6.0, "orders", 1, 3)]
    with_line = [generation(0, 0.0, 1, [member("c-1", "c")]), commit(1, 1.0, "orders", 0, 5),
                 offset_tombstone(2, 3.0, "orders", 0)]
    line = _group_line(event(ev.OFFSETS_DELETED, 3.5, group_id="with-line", line_number=7, source="broker.log"))
    # a group whose commit's transaction stayed open in its first run, decided (committed) in this one
    first = continue_offsets(None, [fold_record(commit(0, 0.0, "orders", 0, 4, outcome="open"))],
                             group_id="decided", **STALL, horizon_ms=HORIZON)
    assert first.state["tail"]
    rows = [*_records("ordinary", ordinary), *_records("with-line", with_line),
            {"cluster": "c", "group_id": "decided", "_bucket": 0, "_part": DECIDED, "record_partition": 0,
             "record_offset": 0, "transaction_outcome": "committed"}]
    # interleaved, as a bucket arrives
    rows = rows[::2] + rows[1::2]
    inputs = pa.Table.from_pylist(rows, schema=to_arrow_schema(FOLD_INPUT))
    # the carried state travels with the lines (few rows), not with the records
    lines = pa.Table.from_pylist([{"cluster": "c", "group_id": "decided", "_bucket": 0, "_part": STATE,
                                   "offsets": first.state},
                                  {"cluster": "c", "group_id": "with-line", "_bucket": 0, "_part": LINE, **line}],
                                 schema=to_arrow_schema(FOLD_LINES))
    out = fold_fn(STALL["stall_min_commits"], STALL["stall_min_ms"], HORIZON)(inputs, lines).to_pylist()

    expected = {
        "ordinary": continue_offsets(None, [fold_record(r) for r in ordinary], group_id="ordinary", **STALL,
                                     horizon_ms=HORIZON),
        "with-line": continue_offsets(None, [fold_record(r) for r in with_line], [line], group_id="with-line",
                                      **STALL, horizon_ms=HORIZON),
        "decided": continue_offsets(first.state, [], decided={(0, 0): "committed"}, group_id="decided", **STALL,
                                    horizon_ms=HORIZON),
    }
    for group, result in expected.items():
        got_rows = sorted((r["kind"], r["topic"] or "", r["partition"] or -1, r["record_offset"], r["explanation"])
                          for r in out if r["group_id"] == group and r["_part"] == ROW and not r["_deleted"])
        assert got_rows == sorted((r.kind, r.topic or "", r.partition or -1, r.record_offset, r.explanation)
                                  for r in result.rows), group
        (state,) = [r for r in out if r["group_id"] == group and r["_part"] == STATE]
        assert state["offsets"]["partitions"] == result.state["partitions"], group
        assert state["offsets"]["tail"] == result.state["tail"], group
        assert state["_new_records"] == {"ordinary": 6, "with-line": 3, "decided": 0}[group]
    kinds = {r["kind"] for r in out if r["_part"] == ROW}
    assert {"stalled", "rewind", "deleted"} <= kinds
