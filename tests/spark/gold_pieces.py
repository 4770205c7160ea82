"""Feeding generation rows to the stages downstream of group_generations in pieces, for the property tests
of the incremental storms, assignment replay and what-if stages (no tests here).

The generation rows come from the real sample (samples/kafka-4.3.1's cluster of the shared sample
warehouse: `sample_history`) and from synthetic groups (tests.unit.generation_pieces, the generation
fold itself delivering them run by run). Each way of cutting one history into runs is a *split* and gets a
cluster name of its own, so that every split rides in the same runs: run i delivers piece i of every split
(a split of k pieces has none after run k-1). A run writes its pieces to group_generations as the history
stage does (upsert with `_deleted`) and hands the same frame to the stage under test.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from jobs.common.delta_io import Tables
from schemas.gold import GROUP_GENERATIONS
from tests.spark.sample_warehouse import SampleWarehouse
from tests.unit.generation_pieces import Piece, key_of

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "kafka-4.3.1"
SAMPLE_CLUSTER = "kafka-4.3.1"

#: group_generations rows with the `_deleted` flag: what the history stage hands the later stages.
CHANGED_GENERATIONS = T.StructType([*GROUP_GENERATIONS.schema.fields, T.StructField("_deleted", T.BooleanType())])


@pytest.fixture(scope="module")
def sample_history(spark: SparkSession, sample_warehouse: SampleWarehouse) -> Tables:
    """The silver tables and group_generations of a real broker's capture: the shared sample warehouse (the
    embedded default's night, built once per test session), of which these tests read SAMPLE_CLUSTER."""
    return sample_warehouse.tables(spark)


def generation_rows(tables: Tables, cluster: str = SAMPLE_CLUSTER) -> dict[str, list[dict[str, Any]]]:
    """group -> the cluster's group_generations rows as plain values (the sample's: a few dozen)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for row in tables.read(GROUP_GENERATIONS).where(F.col("cluster") == cluster).collect():
        d = row.asDict(recursive=True)
        out.setdefault(d["group_id"], []).append(d)
    return out


def settled(row: dict[str, Any]) -> Any:
    return row.get("assignment_stored_at") or row.get("stabilized_at") or row.get("rebalance_started_at")


def arrival_order(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """A group's rows in the order a history delivers them: by time, then generation (rows without any time
    after the row before them in generation order)."""
    by_generation = sorted(rows, key=lambda r: (r["group_protocol"], r["generation"], r["record_offset"] or -1))
    placed: list[tuple[Any, int, dict[str, Any]]] = []
    last: Any = None
    for i, r in enumerate(by_generation):
        last = settled(r) or last
        placed.append((last, i, r))
    return [r for _, _, r in sorted(placed, key=lambda x: (x[0] is None, x[0] or 0, x[1]))]


def cut(rows: Sequence[dict[str, Any]], k: int, rng: random.Random, *, amend: bool = True,
        ghost: bool = True) -> list[Piece]:
    """One group's final rows delivered in k runs at random cuts, with (``amend``) a few rows of the
    earlier runs delivered again, amended (their last version is the final one), and (``ghost``) a row
    that one run writes and a later one withdraws (a generation known from the logs only, until its
    record gives it its offset)."""
    ordered = arrival_order(rows)
    n = len(ordered)
    cuts = sorted(rng.sample(range(1, n), min(k - 1, n - 1))) if n > 1 else []
    bounds = [0, *cuts, n]
    pieces = [Piece([dict(r) for r in ordered[a:b]], []) for a, b in itertools.pairwise(bounds)]
    while len(pieces) < k:
        pieces.append(Piece())
    final = {key_of(r): r for r in ordered}
    if amend:
        for i in range(1, k):
            earlier = [r for p in pieces[:i] for r in p.changed][-4:]
            for row in rng.sample(earlier, min(2, len(earlier))):
                # an earlier version goes out in the earlier run; the amended one is the final one
                older = dict(row, cause="unknown", causes=["unknown"], cause_inferred=True)
                for p in pieces[:i]:
                    p.changed = [older if key_of(r) == key_of(row) else r for r in p.changed]
                if all(key_of(r) != key_of(row) for r in pieces[i].changed):
                    pieces[i].changed.append(dict(final[key_of(row)]))
    if ghost and k > 1 and n:
        first = pieces[0].changed[-1] if pieces[0].changed else ordered[0]
        at = settled(first)
        ghost_row = {c: None for c in GROUP_GENERATIONS.column_names}
        ghost_row.update(cluster=first["cluster"], group_id=first["group_id"], group_protocol="classic",
                         generation=-7, record_offset=None, outcome="never_completed", members=[],
                         rebalance_started_at=at, stabilized_at=at, rebalance_ms=0, cause="unknown",
                         causes=["unknown"], cause_inferred=True, members_joined=[], members_left=[],
                         members_kept=[], member_id_changes=[], static_restarts=0, partitions_moved=[],
                         partitions_kept=0, partitions_revoked_then_assigned=[], evidence=[], from_records=False,
                         from_logs=True, record_count=0)
        pieces[0].changed.append(ghost_row)
        pieces[1].removed.append(key_of(ghost_row))
    return pieces


def as_cluster(pieces: Sequence[Piece], cluster: str) -> list[Piece]:
    return [Piece([dict(r, cluster=cluster) for r in p.changed], list(p.removed)) for p in pieces]


def changed_frame(spark: SparkSession, cluster_pieces: Sequence[tuple[str, str, Piece]]) -> DataFrame:
    """One run's changed generation rows of every (cluster, group, piece) it delivers."""
    rows: list[dict[str, Any]] = []
    empty = dict.fromkeys(GROUP_GENERATIONS.column_names)
    for cluster, group, piece in cluster_pieces:
        rows += [{**empty, **r, "cluster": cluster, "group_id": group, "_deleted": False} for r in piece.changed]
        rows += [{**empty, "cluster": cluster, "group_id": group, "group_protocol": p, "generation": g,
                  "record_offset": o, "_deleted": True} for p, g, o in piece.removed]
    names = [f.name for f in CHANGED_GENERATIONS.fields]
    return spark.createDataFrame([tuple(r.get(n) for n in names) for r in rows], CHANGED_GENERATIONS)


def write_generations(tables: Tables, changed: DataFrame) -> None:
    """What the history stage does with a run's changed rows."""
    tables.upsert(GROUP_GENERATIONS, changed, delete_flag="_deleted")


def comparable(df: DataFrame) -> DataFrame:
    """Map columns as sorted entry arrays (Spark cannot sort rows by a map)."""
    return df.select(*[F.sort_array(F.map_entries(f.name)).alias(f.name) if isinstance(f.dataType, T.MapType)
                       else F.col(f.name) for f in df.schema.fields])
