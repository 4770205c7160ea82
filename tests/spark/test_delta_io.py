"""Tables.ensure registering a table directory that exists; Tables.changes: the rows appended to
raw_offsets in a range of versions, read from the snapshot when the range starts at the table's creation
and from the change data feed otherwise; both ways give the rows appended in exactly that range."""

from __future__ import annotations

import dataclasses

import pytest
from chispa import assert_df_equality
from pyspark.sql import SparkSession

from jobs.common.delta_io import Tables
from schemas import OFFSET_COMMITS, RAW_OFFSETS
from tests.spark.records import offset_commit
from tests.spark.rows import raw, raw_frame

pytestmark = pytest.mark.spark


def _plan(frame) -> str:  # type: ignore[no-untyped-def]
    return frame._jdf.queryExecution().executedPlan().toString()  # type: ignore[no-any-return]


def test_changes_are_the_rows_appended_in_the_range_read_either_way(spark: SparkSession, tables: Tables) -> None:
    tables.ensure(RAW_OFFSETS)
    batches = [[raw(p, o, *offset_commit(f"g{v}", "t", p, o)) for p in (0, 1) for o in range(3 * v, 3 * v + 3)]
               for v in range(3)]
    for rows in batches:
        tables.append(RAW_OFFSETS, raw_frame(spark, rows))
    assert tables.version(RAW_OFFSETS) == 3  # version 0 created the table empty; 1-3 are the appends

    def expected(*versions: int):  # type: ignore[no-untyped-def]
        return raw_frame(spark, [r for v in versions for r in batches[v - 1]])

    from_start = tables.changes(RAW_OFFSETS, 0, 2)
    # pinned at version 2: the third append is not in it
    assert_df_equality(from_start, expected(1, 2), ignore_row_order=True, ignore_nullable=True)
    assert "DeltaCDFRelation" not in _plan(from_start)  # a scan of the table's files

    later = tables.changes(RAW_OFFSETS, 1, 3)
    assert_df_equality(later, expected(2, 3), ignore_row_order=True, ignore_nullable=True)
    assert "DeltaCDFRelation" in _plan(later)
    assert_df_equality(tables.changes(RAW_OFFSETS, 0, 3), expected(1, 2, 3), ignore_row_order=True,
                       ignore_nullable=True)


def test_an_existing_table_is_registered_as_it_is(spark: SparkSession, tables: Tables) -> None:
    """A table directory written under an earlier spec (other statistics columns) and a catalog that does
    not know it (a new metastore): ensure registers it, keeping its own properties; a directory whose
    columns are another table's is refused with both column lists."""
    earlier = dataclasses.replace(
        OFFSET_COMMITS, properties={**OFFSET_COMMITS.properties, "delta.dataSkippingStatsColumns": "partition,offset"}
    )
    tables.ensure(earlier)
    other_catalog = Tables(spark, tables.database + "_other", tables.location)
    other_catalog.ensure_database()
    other_catalog.ensure(OFFSET_COMMITS)
    registered = spark.sql(f"SHOW TBLPROPERTIES {other_catalog.name(OFFSET_COMMITS)}").collect()
    assert {r["key"]: r["value"] for r in registered}["delta.dataSkippingStatsColumns"] == "partition,offset"
    assert spark.table(other_catalog.name(OFFSET_COMMITS)).columns == OFFSET_COMMITS.column_names

    misplaced = dataclasses.replace(RAW_OFFSETS, name=OFFSET_COMMITS.name)  # raw_offsets' columns
    wrong = Tables(spark, tables.database + "_wrong", tables.location + "_wrong")
    wrong.ensure_database()
    wrong.ensure(misplaced)
    with pytest.raises(ValueError, match="whose columns are not offset_commits'"):
        Tables(spark, tables.database + "_wrong2", wrong.location).ensure(OFFSET_COMMITS)
