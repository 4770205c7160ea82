"""run_decode's ways of writing offset commits give the same tables: decoded in the writing job with
broadcast transaction outcomes and an accumulator side output (the normal way), with the undecodable
commits decoded again when a task has more than it may carry back, and through a cache when the
outcomes are too many to broadcast. Each is also checked against values known from how the input was built."""

from __future__ import annotations

from pathlib import Path

import pytest
from chispa import assert_df_equality
from pyspark.sql import SparkSession

import jobs.decode.stage as decode_stage
from jobs.common import boundary
from jobs.common.delta_io import Tables
from jobs.decode.stage import run_decode
from jobs.stages import STAGES
from schemas import ALL_TABLES, DECODE_COVERAGE, DECODE_ERRORS, OFFSET_COMMITS, RAW_OFFSETS
from tests.spark.records import group_metadata, member, offset_commit, offset_tombstone
from tests.spark.rows import raw, raw_frame
from tests.spark.test_transforms import CONTROL_KEY, CONTROL_VALUE

pytestmark = pytest.mark.spark


def _marker(partition: int, offset: int, producer: int, kind: str) -> tuple:  # type: ignore[type-arg]
    return raw(partition, offset, CONTROL_KEY[kind], CONTROL_VALUE, producer_id=producer, transactional=True,
               control_type=kind)


def _truncated(partition: int, offset: int) -> tuple:  # type: ignore[type-arg]
    """An offset commit whose value lost its last bytes: the key says offset commit, the value fails."""
    key, value = offset_commit("g1", "t", offset % 3, offset)
    return raw(partition, offset, key, value[:-3])


#: Positions of the corrupt offset commits (key versions 0/1 with values that do not decode).
CORRUPT_COMMITS = [(0, 3), (0, 9), (1, 2)]
#: Outcomes known from the markers written below: (partition, offset) -> (outcome, marker offset).
OUTCOMES = {(0, 1): ("committed", 2), (0, 5): ("aborted", 6), (1, 4): ("open", None)}


def _raw_rows() -> list[tuple]:  # type: ignore[type-arg]
    m1 = member("m1", ["t"], [("t", 0)])
    return [
        raw(0, 0, *offset_commit("g1", "t", 0, 100)),
        raw(0, 1, *offset_commit("g1", "t", 1, 101), producer_id=70, transactional=True),
        _marker(0, 2, 70, "COMMIT"),
        _truncated(0, 3),
        raw(0, 4, *offset_tombstone("g1", "t", 2)),
        raw(0, 5, *offset_commit("g1", "t", 2, 102), producer_id=71, transactional=True),
        _marker(0, 6, 71, "ABORT"),
        raw(0, 7, *group_metadata("g1", 1, [m1])),
        raw(0, 8, b"\x00", b"\x00\x01"),  # a 1-byte key: not an offset commit, does not decode either
        _truncated(0, 9),
        raw(0, 10, b"\x00\x63abc", b"\x00\x00"),  # an unknown record type
        raw(1, 0, *offset_commit("g2", "u", 0, 7, version=1)),
        raw(1, 1, *offset_commit("g2", "u", 1, 8, version=4)),
        _truncated(1, 2),
        raw(1, 3, *group_metadata("g2", 4, [m1])),
        raw(1, 4, *offset_commit("g2", "u", 0, 9), producer_id=72, transactional=True),  # no marker yet
    ]


def _decoded_tables(spark: SparkSession, root: Path, name: str) -> Tables:
    tables = Tables(spark, name, str(root / name))
    tables.ensure_database()
    for spec in ALL_TABLES:
        tables.ensure(spec)
    tables.append(RAW_OFFSETS, raw_frame(spark, _raw_rows()))
    run_decode(tables, f"run-{name}", 0, batch_size=4)  # several batches per task
    return tables


#: What the decode stage writes, but decode_coverage (compared without its run id, below).
COMPARED = tuple(s for s in next(st for st in STAGES if st.name == "decode").writes if s is not DECODE_COVERAGE)
assert OFFSET_COMMITS in COMPARED and DECODE_ERRORS in COMPARED


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("decode_paths")


@pytest.fixture(scope="module")
def normal(spark: SparkSession, root: Path) -> Tables:
    return _decoded_tables(spark, root, "paths_normal")


def _coverage(tables: Tables) -> list[tuple]:  # type: ignore[type-arg]
    rows = tables.read(DECODE_COVERAGE).drop("run_id").collect()
    return sorted((tuple(r) for r in rows), key=repr)


def test_normal_path_matches_the_input(spark: SparkSession, normal: Tables) -> None:
    commits = {(r["partition"], r["offset"]): r for r in normal.read(OFFSET_COMMITS).collect()}
    # every offset-commit record but the corrupt ones, tombstone included
    assert set(commits) == {(0, 0), (0, 1), (0, 4), (0, 5), (1, 0), (1, 1), (1, 4)}
    for position, row in commits.items():
        assert (row["transaction_outcome"], row["transaction_marker_offset"]) == OUTCOMES.get(position, (None, None))
    errors = sorted((r["partition"], r["offset"], r["record_kind"]) for r in normal.read(DECODE_ERRORS).collect())
    assert errors == sorted([(p, o, "offset_commit") for p, o in CORRUPT_COMMITS] + [(0, 8, "unknown")])
    for r in normal.read(DECODE_ERRORS).where("partition = 0 AND offset = 3").collect():
        assert bytes(r["value"]) == bytes(_truncated(0, 3)[6]) and r["record_timestamp"] is not None
    counts = {}
    for cluster, record_type, kind, version, status, records in _coverage(normal):
        assert cluster == "c1"
        counts[(record_type, kind, version, status)] = records
    assert counts == {
        (1, "offset_commit", 3, "decoded"): 4,
        (1, "offset_commit", 1, "decoded"): 1,
        (1, "offset_commit", 4, "decoded"): 1,
        (1, "offset_commit", None, "tombstone"): 1,
        (1, "offset_commit", None, "error"): 3,  # the value did not decode: no version
        (2, "group_metadata", 3, "decoded"): 2,
        (None, "unknown", None, "error"): 1,
        (99, "unknown", 0, "unknown_type"): 1,
        (None, "control", None, "control"): 2,
    }


@pytest.mark.parametrize(
    "setting",
    [
        pytest.param(("jobs.common.boundary", "ERRORS_KEPT_PER_TASK", 0), id="errors-decoded-again"),
        pytest.param(("jobs.decode.stage", "BROADCAST_OUTCOMES_LIMIT", 0), id="outcomes-not-broadcast"),
    ],
)
def test_other_paths_write_the_same_tables(
    spark: SparkSession, root: Path, normal: Tables, monkeypatch: pytest.MonkeyPatch, setting: tuple[str, str, int]
) -> None:
    module, name, value = setting
    monkeypatch.setattr(boundary if module == "jobs.common.boundary" else decode_stage, name, value)
    other = _decoded_tables(spark, root, f"paths_{name.lower()}")
    for spec in COMPARED:
        assert_df_equality(other.read(spec).drop("ingest_run_id"), normal.read(spec).drop("ingest_run_id"),
                           ignore_row_order=True, ignore_nullable=True)
    assert _coverage(other) == _coverage(normal)
