"""Reading and writing `group_state` (schemas/state.py): each gold stage owns some of its columns.

A stage reads the state of the groups it touches (a semi-join on the group key: group_state holds one row
per group of the fleet, never an archive-sized table) and writes back only its own columns, so stages that
run one after the other in a night do not overwrite each other's state. The steps of one stage hand their
columns to a `StateWrites`, which writes them all with one MERGE (one commit) at the stage's end.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from jobs.common.delta_io import Tables, cluster_partitions
from jobs.common.kept import kept
from jobs.common.per_group import GROUP_KEY
from schemas.state import GROUP_STATE


def read_state(tables: Tables, groups: DataFrame, columns: Sequence[str]) -> DataFrame:
    """(cluster, group_id, *columns) of the given groups that have a state row. Only the partitions of
    the clusters among `groups` are read (group_state holds every group of the fleet)."""
    clusters = [r[0] for r in groups.select("cluster").distinct().collect()]
    return (tables.read(GROUP_STATE).where(F.col("cluster").isin(*clusters)).select(*GROUP_KEY, *columns)
            .join(groups.select(*GROUP_KEY), on=GROUP_KEY, how="left_semi"))


def merge_state(tables: Tables, rows: DataFrame, columns: Sequence[str], run_id: str,
                pending: StateWrites | None = None) -> None:
    """Upsert `columns` of the groups in `rows` (cluster, group_id, *columns); other columns keep their
    values (a new group's row gets nulls there). With `pending`, the rows are kept and written later, with
    the other steps' columns of the same stage, by `pending.merge`."""
    if pending is not None:
        pending.add(rows, columns)
        return
    _merge_parts(tables, [(rows, tuple(columns))], run_id)


class StateWrites:
    """The group_state columns that the steps of one stage compute, written by one MERGE at the stage's end:
    one commit and one scan of the touched groups' state files instead of one per step (each MERGE costs
    its Spark jobs whatever its size: ~1.5 s apiece on a small night). Each step's rows are computed and
    kept (jobs.common.kept) when handed over, so the step can let go of the fold output they came from; kept
    as rows, not as a cached plan that reads group_state, which the MERGE would have planned again."""

    def __init__(self) -> None:
        self._parts: list[tuple[DataFrame, tuple[str, ...]]] = []
        self._releases: list[Callable[[], None]] = []

    def add(self, rows: DataFrame, columns: Sequence[str]) -> None:
        owned = {c for _, cols in self._parts for c in cols}
        if owned & set(columns):
            raise ValueError(f"group_state columns {sorted(owned & set(columns))} handed over twice in one stage")
        held, release = kept(rows.select(*GROUP_KEY, *columns))
        self._parts.append((held, tuple(columns)))
        self._releases.append(release)

    def merge(self, tables: Tables, run_id: str) -> None:
        """Write every handed-over column with one MERGE, then let go of the kept rows."""
        try:
            if self._parts:
                _merge_parts(tables, self._parts, run_id)
        finally:
            self.release()

    def release(self) -> None:
        for release in self._releases:
            release()
        self._releases.clear()
        self._parts.clear()


def _merge_parts(tables: Tables, parts: Sequence[tuple[DataFrame, tuple[str, ...]]], run_id: str) -> None:
    """One MERGE of several steps' columns: the parts are joined on the group key (full outer: a step may
    touch groups another does not), each with a flag saying it has the group, so a matched row takes a
    column from the source only where its step had the group, and keeps its own value elsewhere."""
    source: DataFrame | None = None
    for i, (rows, columns) in enumerate(parts):
        part = rows.select(*GROUP_KEY, *columns).withColumn(f"_has_{i}", F.lit(True))
        source = part if source is None else source.join(part, on=list(GROUP_KEY), how="full_outer")
    assert source is not None
    source = source.withColumn("updated_run_id", F.lit(run_id))
    update: dict[str, str | Column] = {"updated_run_id": F.col("s.updated_run_id")}
    for i, (_, columns) in enumerate(parts):
        for c in columns:
            update[c] = F.when(F.col(f"s._has_{i}"), F.col(f"s.`{c}`")).otherwise(F.col(f"t.`{c}`"))
    written = {*update, *GROUP_KEY}
    insert: dict[str, Column] = {c: F.col(f"s.`{c}`") if c in written else F.lit(None).cast(
        GROUP_STATE.schema[c].dataType) for c in GROUP_STATE.column_names}
    clusters = cluster_partitions(GROUP_STATE, source)
    if clusters == "":
        return
    if tables.holds_no_rows(GROUP_STATE):
        tables.append_first_rows(GROUP_STATE, source.alias("s").select(*[v.alias(c) for c, v in insert.items()]))
        return
    (tables.delta(GROUP_STATE).alias("t")
     .merge(source.alias("s"), clusters + "t.cluster = s.cluster AND t.group_id = s.group_id")
     .whenMatchedUpdate(set=update)
     .whenNotMatchedInsert(values=dict[str, str | Column](insert))
     .execute())


def clear_state(tables: Tables, columns: Sequence[str]) -> None:
    """Null `columns` of every group (a rebuild starts its fold from an empty state)."""
    tables.delta(GROUP_STATE).update(set={c: F.lit(None).cast(GROUP_STATE.schema[c].dataType) for c in columns})
