"""Intermediate frames computed once and kept apart from the tables they were read from."""

from __future__ import annotations

from collections.abc import Callable

from pyspark import StorageLevel
from pyspark.sql import DataFrame


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
        checkpoint = frame.localCheckpoint(eager=True, storageLevel=StorageLevel.DISK_ONLY)

        def release() -> None:
            # The checkpoint's blocks belong to the RDD under its plan, not to Spark's cache manager.
            checkpoint._jdf.queryExecution().analyzed().rdd().unpersist(False)

        return checkpoint, release
    cached = frame.persist(StorageLevel.DISK_ONLY)
    cached.count()
    spark = frame.sparkSession
    over_cached_rows = DataFrame(spark._jsparkSession.createDataFrame(cached._jdf.rdd(), cached._jdf.schema()), spark)

    def let_go() -> None:
        cached.unpersist()

    return over_cached_rows, let_go
