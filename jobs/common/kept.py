"""Intermediate frames computed once and kept apart from the tables they were read from."""

from __future__ import annotations

from collections.abc import Callable

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

#: Session setting: where kept frames go, "memory" (Spark's MEMORY_AND_DISK, rows as objects in the heap) or
#: "disk" (DISK_ONLY). `jobs.common.session.plan_for_input` chooses memory for a small night and disk for a
#: large one; unset, memory. In local mode the executor is the driver, so a large night kept in memory held
#: its rows in the driver's heap (marginal_bench: 2.0 GiB after GC at 3M records, 0.9 GiB on disk), while a
#: small night's few rows read faster from memory (3M rows: written and read three times in 4.2 s from
#: memory, 7.1 s from disk).
KEPT_STORAGE = "spark.cgh.keptStorage"


def kept_in_memory(spark: SparkSession) -> bool:
    """Whether frames are kept in memory (a small night, or no size chosen)."""
    return spark.conf.get(KEPT_STORAGE, "memory") != "disk"


def _level(frame: DataFrame) -> StorageLevel | None:
    """The storage level for `frame` (None: localCheckpoint's own default, MEMORY_AND_DISK as objects)."""
    return None if kept_in_memory(frame.sparkSession) else StorageLevel.DISK_ONLY


def kept(frame: DataFrame) -> tuple[DataFrame, Callable[[], None]]:
    """`frame` computed now and kept, and how to let it go. The frame returned is rows, not a plan: no later
    plan carries `frame`'s plan, and no Delta table it read is named in it.

    Why not a cached (persisted) frame: a cached frame keeps its plan, and
    - each later plan over it nests that plan again (the offset-event fold's plans reuse several
      intermediates: the driver spent minutes and its heap rendering them as text, an OutOfMemoryError in
      QueryExecution.explainString on a standalone cluster where local runs take 40 s; tests/cluster);
    - every write into a table the plan read refreshes the cache: Delta's MERGE (and a DataFrame save) ends
      with Spark's `recacheByPlan`, which plans each cached query that reads the target again, Delta's file
      listing jobs included. A fold's output, read with the table's carried rows and then merged into that
      table, was planned again after its own MERGE (5 % of the driver's CPU in a small fleet night,
      benchmarks/driver_profile.py).

    In local mode as a local checkpoint: its blocks live in the driver's own block manager, so nothing can
    lose them. On a cluster an executor can be lost with the blocks of a local checkpoint, which has no
    lineage to recompute them from: there the frame is cached instead (lost blocks are recomputed),
    materialized at once, and the caller gets a frame over the cached rows (a LogicalRDD).
    """
    if (frame.sparkSession.sparkContext.master or "").startswith("local"):
        level = _level(frame)
        checkpoint = (frame.localCheckpoint(eager=True) if level is None
                      else frame.localCheckpoint(eager=True, storageLevel=level))

        def release() -> None:
            # The checkpoint's blocks belong to the RDD under its plan, not to Spark's cache manager.
            checkpoint._jdf.queryExecution().analyzed().rdd().unpersist(False)

        return checkpoint, release
    cached = frame.persist(_level(frame) or StorageLevel.MEMORY_AND_DISK)
    cached.count()
    spark = frame.sparkSession
    over_cached_rows = DataFrame(spark._jsparkSession.createDataFrame(cached._jdf.rdd(), cached._jdf.schema()), spark)

    def let_go() -> None:
        cached.unpersist()

    return over_cached_rows, let_go
