"""How cgh prints answers: aligned tables (times in UTC to the millisecond) or JSON lines."""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

#: widest cell of a table (longer values end in "..."; --json prints them whole)
MAX_CELL = 100


def utc_text(moment: dt.datetime) -> str:
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def cell_text(value: Any) -> str:
    """A value as a table cell: times in UTC to the millisecond, lists comma-separated, maps as k=v."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        return utc_text(value)
    if isinstance(value, float):
        return str(round(value, 6)) if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={cell_text(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(cell_text(v) for v in value)
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def json_value(value: Any) -> Any:
    """A value as JSON: times as ISO 8601 UTC with Z, bytes as hex."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            return value.astimezone(dt.timezone.utc).isoformat().replace("+00:00", "Z")
        return value.isoformat()
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "as_tuple"):  # Decimal
        return str(value)
    return value


def rows_of(table: Any) -> tuple[list[str], list[dict[str, Any]]]:
    """Column headers and rows of a pyarrow Table; maps become dicts, timestamp columns with a zone say it
    in their header ("window_start (UTC)")."""
    import pyarrow as pa

    headers = []
    maps = []
    for f in table.schema:
        tz = getattr(f.type, "tz", None) if pa.types.is_timestamp(f.type) else None
        headers.append(f"{f.name} ({tz})" if tz else f.name)
        if pa.types.is_map(f.type):
            maps.append(f.name)
    rows = table.to_pylist()
    for row in rows:
        for name in maps:
            if row[name] is not None:
                row[name] = dict(row[name])
    return headers, rows


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], right: Iterable[int] = ()) -> str:
    """An aligned table with a header line and a rule under it; numbers (and the `right` columns) are
    right-aligned."""
    cells = [[_clip(cell_text(v)) for v in row] for row in rows]
    right_aligned = set(right) | {
        i for i in range(len(headers))
        if rows and all(isinstance(r[i], (int, float)) and not isinstance(r[i], bool) for r in rows if r[i] is not None)
        and any(r[i] is not None for r in rows)
    }
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if i in right_aligned else v.ljust(w)
                         for i, (v, w) in enumerate(zip(values, widths, strict=True))).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(c) for c in cells)])


def _clip(text: str) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= MAX_CELL else text[:MAX_CELL - 3] + "..."


def print_json_lines(rows: Iterable[dict[str, Any]], out: Any) -> None:
    for row in rows:
        out.write(json.dumps(json_value(row), ensure_ascii=False) + "\n")
