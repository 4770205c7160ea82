"""Per-group Python folds over Spark: the group key, and `per_bucket`, which runs a per-group function over
groups bucketed by hash, one pandas call per bucket.

The gold stages that fold each group in Python (the generation history, storms, assignment replay and
what-if) share it; the offset events use its buckets with a cogrouped Arrow call (jobs/offset_events/fold.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from schemas import TableSpec

#: A consumer group: group ids are unique per cluster.
GROUP_KEY = ["cluster", "group_id"]

#: What a per-group function returns: the rows it gives, as dicts of the output spec's columns.
GroupRows = list[dict[str, Any]]

BUCKET = "_bucket"
DEFAULT_BUCKETS = 16


def _frame(rows: Sequence[dict[str, Any]], spec: TableSpec) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=[f.name for f in spec.schema.fields])


def _bucketed(per_group: Callable[..., GroupRows], spec: TableSpec, cogrouped: bool) -> Callable[..., pd.DataFrame]:
    """Run a per-group function over every group of one bucket (a hash slice of the groups).

    applyInPandas per group costs milliseconds of Arrow and pandas set-up per group, more than the work
    itself for most groups; one call per bucket pays it once. The inputs are split by (cluster, group_id)
    here, each group's frames are passed to `per_group`, and all rows come back as one frame.
    """
    def run(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
        parts = [dict(iter(f.groupby(GROUP_KEY, sort=False))) if not f.empty else {} for f in frames]
        keys = list(dict.fromkeys(k for p in parts for k in p))
        rows: GroupRows = []
        for key in keys:
            rows.extend(per_group(*(p.get(key, f.iloc[0:0]) for p, f in zip(parts, frames, strict=True))))
        return _frame(rows, spec)

    # Spark checks the arity: one frame for applyInPandas, two for a cogroup.
    if cogrouped:
        return lambda left, right: run((left, right))
    return lambda frame: run((frame,))


def _with_bucket(df: DataFrame, buckets: int) -> DataFrame:
    return df.withColumn(BUCKET, F.pmod(F.xxhash64(*GROUP_KEY), F.lit(buckets)))


def per_bucket(records: DataFrame, spec: TableSpec, per_group: Callable[..., GroupRows], buckets: int = DEFAULT_BUCKETS,
               events: DataFrame | None = None) -> DataFrame:
    """`per_group` applied to every group, with one Python call per bucket of groups (see `_bucketed`)."""
    run = _bucketed(per_group, spec, cogrouped=events is not None)
    by_bucket = _with_bucket(records, buckets).groupBy("cluster", BUCKET)
    if events is None:
        out = by_bucket.applyInPandas(run, schema=spec.schema)
    else:
        out = by_bucket.cogroup(_with_bucket(events, buckets).groupBy("cluster", BUCKET)).applyInPandas(
            run, schema=spec.schema)
    return out.select(*spec.column_names)
