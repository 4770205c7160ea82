"""The offset-event fold on the executors: `coordinator_core.history.offset_fold.continue_offsets` once per
touched group, one Arrow call per bucket of groups (`jobs.common.per_group`'s buckets).

Two cogrouped inputs per bucket: `FOLD_INPUT` (each group's new records, and the decided outcomes of its
carried open-transaction commits, told apart by `_part`) and `FOLD_LINES` (its carried state, its new
deletion/expiry lines, and the cluster's sweep lines near its tombstones, told apart by `_part`). The state, a
deeply nested struct, travels with the few lines, not with the many records: a null struct per record cost
the JVM a null per nested field to write and Python 4 us a record to filter. Out comes
`FOLD_OUTPUT`: offset_events rows to write (`_deleted`: the row's grain to withdraw) and one state row per
group (`_part` = "state") with what it read, for the run's summary.

The bucket's records are converted to numpy columns once; an ordinary group's night (commits and
generations, nothing open: most of a fleet's) is folded over its slice of them by
`offset_columns.continue_offsets_columns`, any other by `continue_offsets`, record by record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from jobs.common.per_group import BUCKET
from schemas.gold import OFFSET_EVENTS
from schemas.state import OFFSETS_EVENT, OFFSETS_RECORD, OFFSETS_STATE

STATE, RECORD, DECIDED = "state", "record", "decided"
LINE, SWEEP = "line", "sweep"
ROW = "row"

_RECORD_FIELDS = [f.name for f in OFFSETS_RECORD.fields]
_EVENT_FIELDS = [f.name for f in OFFSETS_EVENT.fields]

FOLD_INPUT = T.StructType([
    T.StructField("cluster", T.StringType()), T.StructField("group_id", T.StringType()),
    T.StructField(BUCKET, T.IntegerType()), T.StructField("_part", T.StringType()), *OFFSETS_RECORD.fields,
])
FOLD_LINES = T.StructType([
    T.StructField("cluster", T.StringType()), T.StructField("group_id", T.StringType()),
    T.StructField(BUCKET, T.IntegerType()), T.StructField("_part", T.StringType()),
    T.StructField("offsets", OFFSETS_STATE), *OFFSETS_EVENT.fields,
])
FOLD_OUTPUT = T.StructType([
    *OFFSET_EVENTS.schema.fields, T.StructField("_deleted", T.BooleanType()), T.StructField("_part", T.StringType()),
    T.StructField("offsets", OFFSETS_STATE),
    # what the group's fold read: new records, new lines, whether it had a state, the carried tail's size
    T.StructField("_new_records", T.LongType()), T.StructField("_new_events", T.LongType()),
    T.StructField("_held", T.LongType()), T.StructField("_tail_records", T.LongType()),
])


class _Group:
    __slots__ = ("decided", "events", "records", "state", "sweeps")

    def __init__(self) -> None:
        self.state: dict[str, Any] | None = None
        self.records: list[dict[str, Any]] = []
        self.decided: dict[tuple[int, int], str] = {}
        self.events: list[dict[str, Any]] = []
        self.sweeps: list[dict[str, Any]] = []


def _columns(table: pa.Table, names: list[str]) -> list[list[Any]]:
    return [_pylist(table.column(name)) for name in names]


def _pylist(column: pa.ChunkedArray) -> list[Any]:
    """A column as Python values, several times faster than Arrow's value-by-value conversion: integers and
    booleans through numpy, strings (a few distinct values each: cluster, group, kind, topic) through their
    dictionary; nulls put back as None."""
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        encoded = column.combine_chunks().dictionary_encode()
        words = [*encoded.dictionary.to_pylist(), None]
        indices = pc.fill_null(encoded.indices, len(words) - 1).to_numpy().tolist()
        return [words[i] for i in indices]
    if not (pa.types.is_integer(column.type) or pa.types.is_boolean(column.type)):
        return column.to_pylist()
    if column.null_count == 0:
        return column.to_numpy().tolist()
    values = pc.fill_null(column, False if pa.types.is_boolean(column.type) else 0).to_numpy().tolist()
    nulls = pc.is_null(column).to_numpy().tolist()
    return [None if null else value for value, null in zip(values, nulls, strict=True)]


def _group_slices(records: pa.Table) -> dict[tuple[str, str], tuple[int, int]]:
    """(cluster, group_id) -> the [start, stop) rows of `records` (sorted by cluster and group) that are its."""
    if records.num_rows == 0:
        return {}
    clusters = records.column("cluster").combine_chunks().dictionary_encode()
    groups = records.column("group_id").combine_chunks().dictionary_encode()
    c, g = clusters.indices.to_numpy(), groups.indices.to_numpy()
    starts = np.flatnonzero(np.r_[True, (c[1:] != c[:-1]) | (g[1:] != g[:-1])])
    stops = np.append(starts[1:], len(c))
    cluster_names, group_names = clusters.dictionary.to_pylist(), groups.dictionary.to_pylist()
    return {(cluster_names[c[a]], group_names[g[a]]): (int(a), int(b))
            for a, b in zip(starts.tolist(), stops.tolist(), strict=True)}


def fold_fn(stall_min_commits: int, stall_min_ms: int, horizon_ms: int) -> Callable[[pa.Table, pa.Table], pa.Table]:
    """The function Spark calls per bucket (cogrouped `FOLD_INPUT`, `FOLD_LINES`) -> `FOLD_OUTPUT`."""
    out_schema = to_arrow_schema(FOLD_OUTPUT)

    def run(inputs: pa.Table, lines: pa.Table) -> pa.Table:
        from coordinator_core.history.offset_columns import continue_offsets_columns, record_arrays
        from coordinator_core.history.offset_fold import continue_offsets

        groups: dict[tuple[str, str], _Group] = {}

        def group(cluster: str, group_id: str) -> _Group:
            g = groups.get((cluster, group_id))
            if g is None:
                g = groups[(cluster, group_id)] = _Group()
            return g

        # Column by column (Arrow's to_pylist per column): a row-wise to_pylist of a wide, nested input cost
        # five times the fold itself.
        line_part = lines.column("_part")
        states = lines.select(["cluster", "group_id", "offsets"]).filter(pc.equal(line_part, STATE))
        for cluster, group_id, state in zip(*_columns(states, ["cluster", "group_id", "offsets"]), strict=True):
            group(cluster, group_id).state = state
        lines = lines.drop_columns(["offsets"]).filter(pc.not_equal(line_part, STATE))
        part = inputs.column("_part")
        decided = inputs.filter(pc.equal(part, DECIDED))
        for cluster, group_id, partition, offset, outcome in zip(*_columns(decided, [
                "cluster", "group_id", "record_partition", "record_offset", "transaction_outcome"]), strict=True):
            group(cluster, group_id).decided[(partition, offset)] = outcome
        records = inputs.filter(pc.equal(part, RECORD)).sort_by([("cluster", "ascending"), ("group_id", "ascending")])
        slices = _group_slices(records)
        for key in slices:
            group(*key)
        for cluster, group_id, line_kind, *values in zip(*_columns(lines, ["cluster", "group_id", "_part",
                                                                           *_EVENT_FIELDS]), strict=True):
            g = group(cluster, group_id)
            (g.sweeps if line_kind == SWEEP else g.events).append(dict(zip(_EVENT_FIELDS, values, strict=True)))
        arrays = record_arrays(records) if records.num_rows else None
        out: list[dict[str, Any]] = []
        for (cluster, group_id), g in groups.items():
            start, stop = slices.get((cluster, group_id), (0, 0))
            result = None
            if arrays is not None and stop > start and not (g.events or g.sweeps or g.decided):
                result = continue_offsets_columns(g.state, arrays.slice(start, stop), group_id=group_id,
                                                  stall_min_commits=stall_min_commits, stall_min_ms=stall_min_ms,
                                                  horizon_ms=horizon_ms)
            new_records = stop - start
            if result is None:
                g.records = [dict(zip(_RECORD_FIELDS, values, strict=True)) for values in
                             zip(*_columns(records.slice(start, new_records), _RECORD_FIELDS), strict=True)]
                result = continue_offsets(g.state, g.records, g.events, g.sweeps, g.decided, group_id=group_id,
                                          stall_min_commits=stall_min_commits, stall_min_ms=stall_min_ms,
                                          horizon_ms=horizon_ms)
            out.extend({**r.to_dict(), "cluster": cluster, "_deleted": False, "_part": ROW} for r in result.rows)
            out.extend({"cluster": cluster, "group_id": group_id, "kind": kind, "topic": topic, "partition": partition,
                        "record_offset": record_offset, "inferred": True, "explanation": "", "evidence": [],
                        "_deleted": True, "_part": ROW}
                       for kind, topic, partition, record_offset in result.withdrawn)
            out.append({"cluster": cluster, "group_id": group_id, "_part": STATE, "_deleted": False,
                        "offsets": result.state, "_new_records": new_records, "_new_events": len(g.events),
                        "_held": int(g.state is not None),
                        "_tail_records": len(g.state["tail"] or []) if g.state is not None else 0})
        return pa.Table.from_pylist(out, schema=out_schema)

    return run
