"""DecodeSideOutput: the coverage counts and error rows a decoding task carries back (no Spark: the task
function runs on Arrow batches built here)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

from jobs.common.boundary import ERROR_ROW_COLUMNS, DecodeSideOutput, _decode_batches_fn, coverage_status
from tests.spark.records import group_metadata, member, offset_commit, offset_tombstone

UTC = dt.timezone.utc


def _raw_batch(records: list[tuple[bytes | None, bytes | None]]) -> pa.RecordBatch:
    n = len(records)
    return pa.RecordBatch.from_pydict(
        {
            "cluster": ["c1"] * n,
            "partition": pa.array([3] * n, pa.int32()),
            "offset": pa.array(range(n), pa.int64()),
            "timestamp": pa.array([dt.datetime(2024, 1, 1, tzinfo=UTC)] * n, pa.timestamp("us", tz="UTC")),
            "producer_id": pa.array([-1] * n, pa.int64()),
            "is_transactional": [False] * n,
            "key": pa.array([k for k, _ in records], pa.binary()),
            "value": pa.array([v for _, v in records], pa.binary()),
        }
    )


def _decoded(records: list[tuple[bytes | None, bytes | None]]) -> pa.RecordBatch:
    batches = list(_decode_batches_fn(1000)(iter([_raw_batch(records)])))
    assert len(batches) == 1
    return batches[0]


GOOD = offset_commit("g", "t", 0, 10)
TRUNCATED = (GOOD[0], GOOD[1][:-3])
RECORDS = [
    GOOD,
    offset_commit("g", "t", 1, 11, version=1),
    offset_tombstone("g", "t", 2),
    group_metadata("g", 1, [member("m1", ["t"], [("t", 0)])]),
    TRUNCATED,
    (b"\x00", b"\x00\x01"),  # a key too short to have a type
    (b"\x00\x63abc", b"\x00\x00"),  # an unknown record type
    TRUNCATED,
]


def test_coverage_status_follows_the_precedence_of_decode_coverage() -> None:
    status = coverage_status(_decoded(RECORDS)).to_pylist()
    assert status == ["decoded", "decoded", "tombstone", "decoded", "error", "error", "unknown_type", "error"]


def test_observe_counts_every_row_and_keeps_the_error_rows() -> None:
    seen = DecodeSideOutput()
    seen.observe(_decoded(RECORDS))
    assert sum(seen.coverage.values()) == len(RECORDS)
    assert seen.coverage[("c1", 1, "offset_commit", 3, "decoded")] == 1
    assert seen.coverage[("c1", 1, "offset_commit", 1, "decoded")] == 1
    assert seen.coverage[("c1", 1, "offset_commit", None, "tombstone")] == 1
    assert seen.coverage[("c1", 2, "group_metadata", 3, "decoded")] == 1
    assert seen.coverage[("c1", 1, "offset_commit", None, "error")] == 2
    assert seen.coverage[("c1", 99, "unknown", 0, "unknown_type")] == 1
    assert [row[ERROR_ROW_COLUMNS.index("offset")] for row in seen.errors] == [4, 5, 7]
    first = dict(zip(ERROR_ROW_COLUMNS, seen.errors[0], strict=True))
    assert (first["key"], first["value"], first["record_kind"]) == (TRUNCATED[0], TRUNCATED[1], "offset_commit")
    assert first["error"] and first["timestamp"] == dt.datetime(2024, 1, 1, tzinfo=UTC)
    assert not seen.overflow


def test_errors_past_the_limit_are_an_overflow_and_counts_stay_exact() -> None:
    seen = DecodeSideOutput()
    seen.observe(_decoded(RECORDS), errors_kept=2)
    assert len(seen.errors) == 2 and seen.overflow
    assert sum(seen.coverage.values()) == len(RECORDS)


def test_merge_adds_counts_and_errors_of_two_tasks() -> None:
    a, b = DecodeSideOutput(), DecodeSideOutput()
    a.observe(_decoded(RECORDS[:4]))
    b.observe(_decoded(RECORDS[4:]), errors_kept=1)
    merged = a.merge(b)
    whole = DecodeSideOutput()
    whole.observe(_decoded(RECORDS))
    assert merged.coverage == whole.coverage
    assert len(merged.errors) == 1 and merged.overflow
