"""Tables.ensure registering a table directory that exists; Tables.upsert into a table without rows
(an append); Tables.changes: the rows appended to raw_offsets in a range of versions, read from the snapshot
when the range starts at the table's creation and from the change data feed otherwise; both ways give the
rows appended in exactly that range."""

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


def test_bytes_added_are_the_new_rows_files_and_a_small_input_is_planned_statically(
        spark: SparkSession, tables: Tables) -> None:
    """added_since sums the sizes on disk and the rows of the data files the later commits added, not a
    compaction's rewrite; plan_for_input turns adaptive execution off and the shuffle partitions
    down to the cores below SMALL_INPUT_BYTES (and SMALL_INPUT_RECORDS where the rows are counted), broadcast
    joins and generated code off, back to the configured values (and Spark's defaults) above it, and leaves
    a setting the operator named in [spark.extra] alone."""
    import os

    from jobs.common.config import SparkConfig
    from jobs.common.kept import KEPT_STORAGE, kept
    from jobs.common.session import (
        ADAPTIVE,
        BROADCAST_THRESHOLD,
        CODEGEN_FACTORY,
        SHUFFLE_PARTITIONS,
        SMALL_INPUT_BYTES,
        SMALL_INPUT_RECORDS,
        WHOLE_STAGE_CODEGEN,
        plan_for_input,
    )

    tables.ensure(RAW_OFFSETS)
    files_before = {os.path.join(d, f) for d, _, fs in os.walk(tables.path(RAW_OFFSETS)) for f in fs
                    if f.endswith(".parquet")}
    for v in range(2):
        tables.append(RAW_OFFSETS, raw_frame(spark, [raw(0, 10 * v + o, b"k", b"v" * 100) for o in range(5)])
                      .repartition(2))
    added = {os.path.join(d, f) for d, _, fs in os.walk(tables.path(RAW_OFFSETS)) for f in fs
             if f.endswith(".parquet")} - files_before
    assert len(added) >= 2
    assert tables.added_since(RAW_OFFSETS, 0) == (sum(os.path.getsize(f) for f in added), 10)
    assert tables.added_since(RAW_OFFSETS, tables.version(RAW_OFFSETS)) == (0, 0)
    assert tables.added_since(RAW_OFFSETS, tables.version(RAW_OFFSETS) - 1)[1] == 5
    tables.delta(RAW_OFFSETS).optimize().executeCompaction()  # rewrites, adds no row
    assert tables.added_since(RAW_OFFSETS, tables.version(RAW_OFFSETS) - 1) == (0, 0)

    settings = (ADAPTIVE, SHUFFLE_PARTITIONS, BROADCAST_THRESHOLD, WHOLE_STAGE_CODEGEN, CODEGEN_FACTORY)
    before = {k: spark.conf.get(k, None) for k in (*settings, KEPT_STORAGE)}
    # Spark's own defaults: a 10 MiB broadcast threshold, whole-stage codegen, codegen with interpreted fallback
    spark_default = ("10485760b", "true", "FALLBACK")

    def now() -> tuple[str, ...]:
        return tuple(spark.conf.get(k) for k in settings)

    def executed_plan() -> str:
        return str(spark.range(3).selectExpr("id + 1 AS x")._jdf.queryExecution().executedPlan().toString())

    try:
        config = SparkConfig(master="local[2]", shuffle_partitions=8)
        said = plan_for_input(spark, config, SMALL_INPUT_BYTES - 1)
        cores = str(spark.sparkContext.defaultParallelism)  # fewer than the 8 configured
        assert now() == ("false", cores, "-1", "false", "NO_CODEGEN")
        assert "queries planned statically and interpreted" in said
        assert spark.conf.get(KEPT_STORAGE) == "memory"  # a small night's kept rows stay in memory
        # A query planned now runs interpreted: no operator of its plan is in a whole-stage codegen stage, "*(n)".
        assert "*(" not in executed_plan()
        plan_for_input(spark, config, SMALL_INPUT_BYTES)
        assert now() == ("true", "8", *spark_default)
        assert spark.conf.get(KEPT_STORAGE) == "disk"  # a large night's go to disk, not the driver's heap
        kept_rows, release = kept(spark.range(5))
        assert kept_rows.count() == 5
        release()
        # Few bytes but many rows (archived rows compress well): compiled; fewer rows: interpreted again.
        said = plan_for_input(spark, config, 1, SMALL_INPUT_RECORDS)
        assert now() == ("true", "8", *spark_default) and f"{SMALL_INPUT_RECORDS:,} records" in said
        plan_for_input(spark, config, 1, SMALL_INPUT_RECORDS - 1)
        assert now() == ("false", cores, "-1", "false", "NO_CODEGEN")
        plan_for_input(spark, config, SMALL_INPUT_BYTES)
        assert "*(1) Project" in executed_plan()
        plan_for_input(spark, config, None)  # a live read: its size is not known
        assert now() == ("true", "8", *spark_default)
        operator = SparkConfig(master="local[2]", shuffle_partitions=8,
                               extra={ADAPTIVE: "true", BROADCAST_THRESHOLD: "1048576"})
        spark.conf.set(BROADCAST_THRESHOLD, "1048576")  # as build_session sets the operator's [spark.extra]
        plan_for_input(spark, operator, 1)
        assert now() == ("true", cores, "1048576", "false", "NO_CODEGEN")
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def test_the_steps_group_state_columns_are_written_by_one_merge(spark: SparkSession, tables: Tables) -> None:
    """StateWrites: the columns several steps hand over are written by one MERGE (one commit); a row takes a
    column only from the step that had its group, keeps its other columns, and a new group gets nulls."""
    from pyspark.sql import types as T

    from jobs.common.group_state import StateWrites, merge_state
    from schemas.state import GROUP_STATE

    def frame(columns: list[str], rows: list[tuple[object, ...]]):  # type: ignore[no-untyped-def]
        fields = [T.StructField("cluster", T.StringType()), T.StructField("group_id", T.StringType())]
        fields += [T.StructField(c, GROUP_STATE.schema[c].dataType) for c in columns]
        return spark.createDataFrame(rows, T.StructType(fields))

    tables.ensure(GROUP_STATE)
    merge_state(tables, frame(["generations", "whatif", "storms"], [("c", "g1", b"g1", b"w1", b"s1")]),
                ["generations", "whatif", "storms"], "r1")
    merge_state(tables, frame(["generations"], [("c", "g2", b"g2")]), ["generations"], "r1")
    before = tables.version(GROUP_STATE)

    states = StateWrites()
    states.add(frame(["generations"], [("c", "g1", b"G1"), ("c", "g3", b"G3")]), ["generations"])
    states.add(frame(["whatif"], [("c", "g2", b"W2"), ("c", "g3", b"W3")]), ["whatif"])
    with pytest.raises(ValueError, match="handed over twice"):
        states.add(frame(["whatif"], [("c", "g1", b"x")]), ["whatif"])
    states.merge(tables, "r2")

    assert tables.version(GROUP_STATE) == before + 1
    # the first write into the new table appended (nothing to match), the later ones MERGEd
    operations = [r["operation"] for r in tables.delta(GROUP_STATE).history().orderBy("version").collect()]
    assert operations == ["CREATE TABLE", "WRITE", "MERGE", "MERGE"]
    got = {r["group_id"]: (r["generations"], r["whatif"], r["storms"], r["updated_run_id"])
           for r in tables.read(GROUP_STATE).collect()}
    assert got == {
        "g1": (b"G1", b"w1", b"s1", "r2"),
        "g2": (b"g2", b"W2", None, "r2"),
        "g3": (b"G3", b"W3", None, "r2"),
    }


def test_an_upsert_into_a_table_without_rows_appends_what_a_merge_would_insert(
        spark: SparkSession, tables: Tables) -> None:
    """A new table (or one a recovery took back to its creation) has nothing to match: its upsert appends the
    rows a MERGE would insert (those not flagged deleted), one file per partition; a table with rows is
    MERGEd into."""
    from pyspark.sql import types as T

    from schemas import TableSpec

    spec = TableSpec("upsert_probe", T.StructType([T.StructField("cluster", T.StringType()),
                                                   T.StructField("key", T.IntegerType()),
                                                   T.StructField("value", T.StringType())]),
                     grain=("cluster", "key"), comment="upsert probe", partition_columns=("cluster",))
    flagged = T.StructType([*spec.schema.fields, T.StructField("_deleted", T.BooleanType())])

    def upsert(rows: list[tuple[object, ...]]) -> tuple[str, set[tuple[object, ...]]]:
        tables.upsert(spec, spark.createDataFrame(rows, flagged).repartition(3), delete_flag="_deleted")
        operation = tables.delta(spec).history(1).select("operation").first()
        return operation[0] if operation else "", {tuple(r) for r in tables.read(spec).collect()}

    tables.ensure(spec)
    assert tables.holds_no_rows(spec)
    first = [("a", 1, "x", False), ("a", 2, "gone", True), ("b", 1, "z", False), ("a", 3, "w", False)]
    assert upsert(first) == ("WRITE", {("a", 1, "x"), ("b", 1, "z"), ("a", 3, "w")})
    assert int(tables.delta(spec).detail().select("numFiles").first()[0]) == 2  # one per cluster
    assert not tables.holds_no_rows(spec)
    later = [("a", 1, "x2", False), ("b", 1, None, True), ("b", 2, "v", False)]
    assert upsert(later) == ("MERGE", {("a", 1, "x2"), ("a", 3, "w"), ("b", 2, "v")})
    # A recovery restores the table's creation: no rows, so the next upsert appends again.
    assert tables.restore(spec, 0)
    assert tables.holds_no_rows(spec)
    assert upsert(later) == ("WRITE", {("a", 1, "x2"), ("b", 2, "v")})
