"""Small query results brought to the driver together.

On a small (incremental) run, each Spark job costs a few hundred milliseconds of driver work whatever
its size: planning, scheduling, and a Delta snapshot when it reads a table. Independent small results
wanted at the same point are therefore collected in one job (with adaptive query execution off, as in
the decode stage: AQE runs every shuffle as a job of its own).
"""

from __future__ import annotations

import functools

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql import types as T


def collect_together(*frames: DataFrame) -> list[list[Row]]:
    """The rows of each frame (as with `collect`), from one Spark job.

    Each frame's rows travel as one struct column of a union (the other frames' columns null), so every
    value keeps its type and each row is a Row with the frame's own field names.
    """
    types = [T.StructType(frame.schema.fields) for frame in frames]
    parts = [
        frame.select(*[
            (F.struct(*[F.col(f"`{name}`") for name in frame.columns]) if j == i else F.lit(None).cast(types[j]))
            .alias(f"_part{j}")
            for j in range(len(frames))
        ])
        for i, frame in enumerate(frames)
    ]
    rows = functools.reduce(DataFrame.unionByName, parts).collect()
    return [[row[f"_part{i}"] for row in rows if row[f"_part{i}"] is not None] for i in range(len(frames))]
