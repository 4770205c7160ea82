"""The generation fold per group (run on the executors, one pandas frame per group): the fold's input and
output rows, and the conversion of a group's decoded rows and log events into coordinator_core's inputs."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import json
import math
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd
from pyspark.sql import types as T

from jobs.common.per_group import GroupRows
from schemas.gold import GROUP_GENERATIONS, TableSpec

#: The fold's record input: one row per new group-level record, as the decode stage stored it (the decoded
#: row form `coordinator_core.history.decoded.group_record_from_row` reads), or one carried state row per
#: touched group (`offset` null, `state` set).
FOLD_RECORD_COLUMNS = ("cluster", "group_id", "partition", "offset", "timestamp_ms", "record_type",
                       "value_version", "group_metadata", "record_json", "state")


#: The fold's output: generation rows (new or amended; `_deleted` for rows that went away) and one state
#: row per group (`_kind` = "state") with its serialized fold state, watermark and late log lines.
FOLD_OUTPUT = TableSpec(
    name="_generation_fold_output",
    comment="internal: rows and states out of the generation fold",
    grain=(),
    schema=T.StructType([
        *GROUP_GENERATIONS.schema.fields,
        T.StructField("_deleted", T.BooleanType()),
        T.StructField("_kind", T.StringType()),
        T.StructField("_state", T.BinaryType()),
        T.StructField("_watermark", T.TimestampType()),
        T.StructField("_late", T.LongType()),
        T.StructField("_unreadable", T.LongType()),
    ]),
)


def _fold_fn(topic_names: Mapping[str, Mapping[str, str]], reopen_hours: float
             ) -> Callable[[pd.DataFrame, pd.DataFrame], GroupRows]:
    def run(records: pd.DataFrame, events: pd.DataFrame) -> GroupRows:
        from coordinator_core.history.generations import fold_generations
        from coordinator_core.history.state import dump_state, load_state

        if records.empty and events.empty:
            return []
        first = records if not records.empty else events
        cluster, group = first["cluster"].iloc[0], first["group_id"].iloc[0]
        is_state = records["offset"].isna() if not records.empty else pd.Series([], dtype=bool)
        held = records.loc[is_state, "state"].tolist() if not records.empty else []
        state = load_state(held[0]) if held and held[0] is not None else None
        new = records.loc[~is_state] if not records.empty else records
        records_in, unreadable = _records(new) if not new.empty else ([], 0)
        result = fold_generations(state, records_in, _events(events), group_id=group,
                                  topic_names=topic_names.get(cluster), reopen=dt.timedelta(hours=reopen_hours))
        out: GroupRows = [{**r.to_dict(), "cluster": cluster, "_deleted": False, "_kind": "row"}
                          for r in result.rows]
        # Rows without a value for every column (pandas would fill NaN, which Arrow refuses for arrays).
        empty = dict.fromkeys(FOLD_OUTPUT.column_names)
        out += [{**empty, "cluster": cluster, "group_id": group, "group_protocol": protocol, "generation": generation,
                 "record_offset": offset, "_deleted": True, "_kind": "row"}
                for protocol, generation, offset in result.removed]
        watermark = result.state.watermark
        out.append({**empty, "cluster": cluster, "group_id": group, "_kind": "state", "_deleted": False,
                    "_state": dump_state(result.state), "_late": result.late_events, "_unreadable": unreadable,
                    "_watermark": watermark.replace(tzinfo=None) if watermark is not None else None})
        return out

    return run


def _int_or_none(v: Any) -> int | None:
    # nulls of integer columns arrive as None or NaN
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else int(v)


def _records(pdf: pd.DataFrame) -> tuple[list[Any], int]:
    """The group's new records as history inputs, from the decoded rows (no bytes decoded here), and how
    many rows could not be read back."""
    from coordinator_core import DecodeError
    from coordinator_core.history import group_record_from_row

    pdf = pdf.sort_values("offset")
    out = []
    unreadable = 0
    # Column lists, not itertuples: this runs once per new group-level record.
    for offset, ts, record_type, version, group, value, record_json in zip(
        pdf["offset"].tolist(), pdf["timestamp_ms"].tolist(), pdf["record_type"].tolist(),
        pdf["value_version"].tolist(), pdf["group_id"].tolist(), pdf["group_metadata"].tolist(),
        pdf["record_json"].tolist(), strict=True,
    ):
        row = {"offset": int(offset), "timestamp": _int_or_none(ts), "record_type": int(record_type),
               "value_version": _int_or_none(version), "group_id": group,
               "group_metadata": json.loads(value) if isinstance(value, str) else None,
               "record_json": record_json}
        try:
            out.append(group_record_from_row(row))
        except DecodeError:
            unreadable += 1  # a record_json of another layout: the row stays in consumer_group_records as it is
    return out, unreadable


@functools.cache
def _event_fields() -> tuple[str, ...]:
    from coordinator_core import CoordinatorEvent

    return tuple(f.name for f in dataclasses.fields(CoordinatorEvent))


def _events(pdf: pd.DataFrame) -> list[Any]:
    from coordinator_core import CoordinatorEvent

    if pdf.empty:
        return []
    fields = _event_fields()
    out = []
    for row in pdf.to_dict("records"):
        values = {k: (None if _isna(v) else v) for k, v in row.items() if k in fields}
        ts = values.get("timestamp")
        if ts is not None:
            values["timestamp"] = pd.Timestamp(ts).to_pydatetime().replace(tzinfo=dt.timezone.utc)
        values["source"] = row.get("path") or row.get("log_source")
        for k, v in list(values.items()):
            if isinstance(v, float) and k not in ("timestamp",):
                values[k] = int(v)
        out.append(CoordinatorEvent(**values))
    return out


def _isna(v: Any) -> bool:
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False
