"""The history stage's bucketing: one pandas call per bucket of groups must give every group exactly its
own records and events, as one call per group did (the Spark tests check the same on real tables)."""

from __future__ import annotations

from typing import Any

import pandas as pd
from pyspark.sql import types as T

from jobs.common.per_group import _bucketed
from schemas._spec import TableSpec

SPEC = TableSpec(
    name="t",
    schema=T.StructType([T.StructField(n, T.StringType()) for n in ("cluster", "group_id", "records", "events")]),
    grain=("cluster", "group_id"),
    comment="test",
)


def per_group(records: pd.DataFrame, events: pd.DataFrame) -> list[dict[str, Any]]:
    frame = records if not records.empty else events
    return [{"cluster": frame["cluster"].iloc[0], "group_id": frame["group_id"].iloc[0],
             "records": ",".join(records["x"]), "events": ",".join(events["y"])}]


def test_each_group_gets_its_own_records_and_events() -> None:
    records = pd.DataFrame({"cluster": ["c1", "c1", "c2", "c1"], "group_id": ["a", "b", "a", "a"],
                            "x": ["r1", "r2", "r3", "r4"]})
    events = pd.DataFrame({"cluster": ["c1", "c1", "c1"], "group_id": ["a", "z", "z"], "y": ["e1", "e2", "e3"]})
    out = _bucketed(per_group, SPEC, cogrouped=True)(records, events)
    assert sorted(map(tuple, out.values.tolist())) == [
        ("c1", "a", "r1,r4", "e1"),   # same group id in another cluster is another group
        ("c1", "b", "r2", ""),
        ("c1", "z", "", "e2,e3"),     # logs only
        ("c2", "a", "r3", ""),
    ]
    assert list(out.columns) == SPEC.column_names


def test_empty_bucket_and_single_input() -> None:
    empty = pd.DataFrame({"cluster": [], "group_id": [], "x": []})
    out = _bucketed(lambda r: [], SPEC, cogrouped=False)(empty)
    assert out.empty and list(out.columns) == SPEC.column_names
    one = pd.DataFrame({"cluster": ["c"], "group_id": ["g"], "x": ["r"]})
    out = _bucketed(lambda r: [{"cluster": "c", "group_id": "g", "records": str(len(r))}], SPEC, cogrouped=False)(one)
    assert out.values.tolist()[0][:3] == ["c", "g", "1"] and pd.isna(out["events"].iloc[0])  # null in Arrow
