"""Row-set equality of DataFrames for the Spark tests, decided in Python after one plain collect per side.

chispa's `assert_df_equality(..., ignore_row_order=True)` sorts both sides in Spark first: a range-partition
sampling job, a shuffle and a collect per side, which on a warehouse of small tables costs more than the
tables' reads. Here each side is collected once, unsorted, and the rows are compared as multisets (the same
verdict: equal schemas, nullability and metadata aside, and the same rows as often). A split or cluster
comparison can collect a table once and compare its parts (`rows_by`).

Not tests: a helper.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from chispa.schema_comparer import assert_schema_equality
from pyspark.sql import DataFrame, Row

#: Rows of a difference shown in a failure message, per side, and the characters shown of each (a state
#: column's compressed bytes run to kilobytes).
SHOWN = 8
SHOWN_CHARS = 400


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS]}... ({len(text)} characters)"


def hashable(value: Any) -> Hashable:
    """A collected value as a hashable one with the same equality: rows and lists as tuples, maps as their
    entries sorted by key (a map's order means nothing), bytearrays as bytes."""
    if isinstance(value, Row | list | tuple):
        return tuple(hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted(((hashable(k), hashable(v)) for k, v in value.items()), key=repr))
    if isinstance(value, bytearray):
        return bytes(value)
    return value  # type: ignore[no-any-return]


def assert_same_row_sets(got: Iterable[Any], want: Iterable[Any], what: str = "rows",
                         columns: list[str] | None = None) -> None:
    """The two collections of rows (Rows or tuples) are equal as multisets; else an AssertionError that shows
    the rows missing from `got` and those it has in excess."""
    have, wanted = Counter(map(hashable, got)), Counter(map(hashable, want))
    if have == wanted:
        return
    missing, extra = wanted - have, have - wanted
    header = f" (columns {', '.join(columns)})" if columns else ""

    def show(rows: Counter[Hashable]) -> str:
        listed = sorted(rows.elements(), key=repr)
        more = f"\n    ... and {len(listed) - SHOWN} more" if len(listed) > SHOWN else ""
        return "".join(f"\n    {_cut(repr(row))}" for row in listed[:SHOWN]) + more

    raise AssertionError(
        f"{what} differ{header}: {sum(missing.values())} expected rows missing, {sum(extra.values())} unexpected"
        f"\n  missing:{show(missing) or ' none'}\n  unexpected:{show(extra) or ' none'}")


def assert_same_rows(got: DataFrame, want: DataFrame, what: str = "rows", *, ignore_nullable: bool = True,
                     ignore_metadata: bool = True) -> None:
    """`got` and `want` have the same schema (by default nullability and metadata aside) and the same rows, in
    any order (what chispa's assert_df_equality with ignore_row_order and the same flags decides)."""
    assert_schema_equality(got.schema, want.schema, ignore_nullable=ignore_nullable, ignore_metadata=ignore_metadata)
    assert_same_row_sets(got.collect(), want.collect(), what, got.columns)


def rows_by(df: DataFrame, key: Callable[[Row], Hashable]) -> dict[Hashable, list[Row]]:
    """The frame's rows collected once, grouped by `key` (a cluster, say)."""
    out: dict[Hashable, list[Row]] = {}
    for row in df.collect():
        out.setdefault(key(row), []).append(row)
    return out
