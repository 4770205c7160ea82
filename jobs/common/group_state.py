"""Reading and writing `group_state` (schemas/state.py): each gold stage owns some of its columns.

A stage reads the state of the groups it touches (a semi-join on the group key: group_state holds one row
per group of the fleet, never an archive-sized table) and writes back only its own columns with one MERGE,
so stages that run one after the other in a night do not overwrite each other's state.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from jobs.common.delta_io import Tables, cluster_partitions
from jobs.common.per_group import GROUP_KEY
from schemas.state import GROUP_STATE


def read_state(tables: Tables, groups: DataFrame, columns: Sequence[str]) -> DataFrame:
    """(cluster, group_id, *columns) of the given groups that have a state row. Only the partitions of
    the clusters among `groups` are read (group_state holds every group of the fleet)."""
    clusters = [r[0] for r in groups.select("cluster").distinct().collect()]
    return (tables.read(GROUP_STATE).where(F.col("cluster").isin(*clusters)).select(*GROUP_KEY, *columns)
            .join(groups.select(*GROUP_KEY), on=GROUP_KEY, how="left_semi"))


def merge_state(tables: Tables, rows: DataFrame, columns: Sequence[str], run_id: str) -> None:
    """Upsert `columns` of the groups in `rows` (cluster, group_id, *columns); other columns keep their
    values (a new group's row gets nulls there)."""
    source = rows.select(*GROUP_KEY, *columns).withColumn("updated_run_id", F.lit(run_id))
    names = [*columns, "updated_run_id"]
    insert: dict[str, str | Column] = {c: F.col(f"s.`{c}`") if c in names or c in GROUP_KEY else F.lit(None).cast(
        GROUP_STATE.schema[c].dataType) for c in GROUP_STATE.column_names}
    clusters = cluster_partitions(GROUP_STATE, source)
    if clusters == "":
        return
    (tables.delta(GROUP_STATE).alias("t")
     .merge(source.alias("s"), clusters + "t.cluster = s.cluster AND t.group_id = s.group_id")
     .whenMatchedUpdate(set={c: F.col(f"s.`{c}`") for c in names})
     .whenNotMatchedInsert(values=insert)
     .execute())


def clear_state(tables: Tables, columns: Sequence[str]) -> None:
    """Null `columns` of every group (a rebuild starts its fold from an empty state)."""
    tables.delta(GROUP_STATE).update(set={c: F.lit(None).cast(GROUP_STATE.schema[c].dataType) for c in columns})
