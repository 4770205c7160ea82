"""rebalance_storms as a fold over each run's changed generation rows (jobs.storms.run_storms): for any split
of the generation rows into k = 1..3 runs, with amendments of rows written by earlier runs and rows written
then withdrawn, the table is exactly the storms of the final rows computed at once, lock-step waves
included; and a rebuild from every row gives the same table.

The expected table is built without the stage: coordinator_core's ``storms_of_history`` per group over the
final rows, then ``mark_lockstep`` over every storm of each cluster. Every split rides in the same runs
under a cluster of its own (tests/spark/gold_pieces.py), so the splits cost three runs.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession

from coordinator_core.storms import StormThresholds, mark_lockstep, storms_of_history
from jobs.common.delta_io import Tables
from jobs.storms import StormsResult, run_storms
from schemas.gold import GROUP_GENERATIONS, REBALANCE_STORMS
from schemas.state import GROUP_STATE
from tests.spark.gold_pieces import (
    as_cluster,
    changed_frame,
    comparable,
    cut,
    generation_rows,
    sample_history,  # noqa: F401 - the module fixture over the shared sample warehouse
    write_generations,
)
from tests.unit.generation_pieces import Piece, final_rows, fold_pieces, synthetic_history

pytestmark = pytest.mark.spark

#: Tight enough for the sample's scenarios (seconds apart, all within one minute) to storm, and loose enough
#: for the synthetic groups' bursts (5-50 s apart, hours between) to storm; waves span three hours, so that
#: groups storming the same afternoon march in lock-step.
THRESHOLDS = StormThresholds(min_rebalances=3, window_minutes=2, quiet_minutes=1, flapping_min_rejoins=3,
                             lockstep_seconds=3 * 3600, lockstep_min_groups=2)
#: The splits fed at the Spark level: one run, two and three (the sample), two and three (the synthetic groups,
#: the amendment after the reopen horizon in the last run of three). What only Spark can break (the wiring,
#: the MERGE keys, the state's round trip through group_state) shows in a chain of three runs; the property
#: over many random splits of k <= 6 is the core fold's hypothesis test (tests/unit/test_*_fold.py).
RUNS = 3

Splits = dict[tuple[str, str], list[Piece]]


def _sample_splits(rows: dict[str, list[dict[str, Any]]]) -> Splits:
    splits: Splits = {}
    for k in range(1, RUNS + 1):
        for group, group_rows in sorted(rows.items()):
            rng = random.Random(f"sample:{k}:{group}")
            splits[(f"sample-k{k}", group)] = as_cluster(cut(group_rows, k, rng), f"sample-k{k}")
    return splits


def _synthetic_splits() -> Splits:
    """Three groups over four days, cut by the generation fold itself, in 2 and 3 runs; in the last
    split, the oldest storm's first row is amended in the last run (after the reopen horizon: the group is
    folded again from its whole history)."""
    splits: Splits = {}
    for k in (2, RUNS):
        cluster = f"synthetic-k{k}"
        for seed in (1, 2, 3):
            group = f"svc-{seed}"
            records, events = synthetic_history(seed, group=group, generations=120)
            pieces = fold_pieces(records, events, group, k, random.Random(f"synthetic:{k}:{seed}"))
            if k == RUNS and seed == 1:
                oldest = min((r for r in final_rows(pieces) if r["record_offset"] is not None),
                             key=lambda r: r["record_offset"])
                pieces[-1].changed.append(dict(oldest, cause="coordinator_error"))
            splits[(cluster, group)] = as_cluster(pieces, cluster)
    return splits


def _expected(spark: SparkSession, splits: Splits) -> DataFrame:
    storms = []
    for (cluster, group), pieces in sorted(splits.items()):
        storms += storms_of_history(cluster, group, final_rows(pieces), THRESHOLDS)
    rows = []
    for s in mark_lockstep(storms, THRESHOLDS):
        d = {c: getattr(s, c) for c in REBALANCE_STORMS.column_names}
        d["flapping_members"] = list(s.flapping_members)
        rows.append(tuple(d[c] for c in REBALANCE_STORMS.column_names))
    return spark.createDataFrame(rows, REBALANCE_STORMS.schema)


def _fresh(spark: SparkSession, root: Any, name: str) -> Tables:
    tables = Tables(spark, name, str(root / name))
    tables.ensure_database()
    tables.ensure_all([GROUP_GENERATIONS, REBALANCE_STORMS, GROUP_STATE])
    return tables


def _run_in_pieces(tables: Tables, splits: Splits, runs: int) -> list[StormsResult]:
    results = []
    for i in range(runs):
        delivered = [(cluster, group, pieces[i]) for (cluster, group), pieces in sorted(splits.items())
                     if i < len(pieces)]
        changed = changed_frame(tables.spark, delivered).persist()
        write_generations(tables, changed)
        results.append(run_storms(tables, changed, THRESHOLDS, f"run-{i}", rebuild=False))
        changed.unpersist()
    return results


def _rebuild(tables: Tables, splits: Splits) -> None:
    final = [(cluster, group, Piece(final_rows(pieces))) for (cluster, group), pieces in sorted(splits.items())]
    changed = changed_frame(tables.spark, final)
    write_generations(tables, changed)
    run_storms(tables, changed, THRESHOLDS, "rebuild", rebuild=True)


def _assert_storms(tables: Tables, expected: DataFrame) -> None:
    assert_df_equality(comparable(tables.read(REBALANCE_STORMS)), comparable(expected), ignore_row_order=True,
                       ignore_nullable=True, ignore_metadata=True)


@pytest.fixture(scope="module")
def splits(sample_history: Tables) -> Splits:  # noqa: F811 - the fixture imported above
    return {**_sample_splits(generation_rows(sample_history)), **_synthetic_splits()}


def test_storms_of_k_runs_are_the_storms_of_one_run(spark: SparkSession, tmp_path: Any, splits: Splits) -> None:
    expected = _expected(spark, splits).persist()
    # the splits have something to find: storms in every cluster, lock-step waves, flapping members
    found = expected.collect()
    assert {r["cluster"] for r in found} == {cluster for cluster, _ in splits}
    assert any(r["lockstep_id"] for r in found) and any(r["flapping_members"] for r in found)

    incremental = _fresh(spark, tmp_path, "cgh_storms_incremental")
    results = _run_in_pieces(incremental, splits, RUNS)
    _assert_storms(incremental, expected)
    # the group amended after its horizon was folded again from its whole history, once
    assert sum(r.groups_recomputed for r in results) == 1
    held = {(r["cluster"], r["group_id"]) for r in incremental.read(GROUP_STATE).where("storms IS NOT NULL").collect()}
    assert held == set(splits)

    # A run with nothing new changes nothing.
    version = incremental.version(REBALANCE_STORMS)
    result = run_storms(incremental, changed_frame(spark, []), THRESHOLDS, "idle", rebuild=False)
    assert (result.groups, result.storms_written, result.storms_deleted) == (0, 0, 0)
    assert incremental.version(REBALANCE_STORMS) == version

    # A rebuild over the same (final) rows, in a table that held stale storms, gives the same table.
    _rebuild(incremental, splits)
    _assert_storms(incremental, expected)
