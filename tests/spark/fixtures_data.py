"""A small copied `__consumer_offsets` directory, written byte by byte, used by several Spark tests.

Partition 3 (group "orders"):
    0  offset commit orders/t-a/0 = 10              (v3, non-transactional)
    1  GroupMetadata orders gen 1 [m1]
    2  offset commit orders/t-a/0 = 20   } transactional, producer 7000
    3  offset commit orders/t-a/1 = 5    }
    4  COMMIT marker of producer 7000
    5  offset commit orders/t-a/0 = 25     transactional, producer 7001
    6  ABORT marker of producer 7001
    7  offset commit orders/t-a/0 = 30     transactional, producer 7002 (no marker: open)
    8  GroupMetadata orders gen 2 [m1, m2]
    9  offset-commit tombstone orders/t-a/1
Partition 7 (group "billing"):
    0  offset commit billing/t-b/0 = 100 (v1)
    1  corrupt key (1 byte)                          -> decode_errors
    2  unknown record type 99                        -> consumer_group_records (kept, counted)
    3  a batch whose CRC is broken (skipped, reported as a segment error)
    4  offset commit billing/t-b/0 = 110 (v3)
"""

from __future__ import annotations

from pathlib import Path

from tests.spark.records import group_metadata, member, offset_commit, offset_tombstone
from tests.spark.segment_files import Batch, marker, write_segment

T0 = 1_700_000_000_000


def write_sample(root: Path) -> Path:
    m1 = member("m1", ["t-a"], [("t-a", 0), ("t-a", 1)])
    m1b = member("m1", ["t-a"], [("t-a", 0)])
    m2 = member("m2", ["t-a"], [("t-a", 1)], instance_id="i-2")
    write_segment(
        root,
        3,
        [
            Batch(0, [offset_commit("orders", "t-a", 0, 10, commit_ms=T0)], timestamp_ms=T0),
            Batch(1, [group_metadata("orders", 1, [m1], state_ms=T0 + 1)], timestamp_ms=T0 + 1),
            Batch(
                2,
                [
                    offset_commit("orders", "t-a", 0, 20, commit_ms=T0 + 2),
                    offset_commit("orders", "t-a", 1, 5, commit_ms=T0 + 2),
                ],
                timestamp_ms=T0 + 2,
                producer_id=7000,
                producer_epoch=0,
                transactional=True,
            ),
            marker(4, 7000, "COMMIT", T0 + 4),
            Batch(5, [offset_commit("orders", "t-a", 0, 25, commit_ms=T0 + 5)], timestamp_ms=T0 + 5,
                  producer_id=7001, producer_epoch=0, transactional=True),
            marker(6, 7001, "ABORT", T0 + 6),
            Batch(7, [offset_commit("orders", "t-a", 0, 30, commit_ms=T0 + 7)], timestamp_ms=T0 + 7,
                  producer_id=7002, producer_epoch=0, transactional=True),
            Batch(8, [group_metadata("orders", 2, [m1b, m2], state_ms=T0 + 8)], timestamp_ms=T0 + 8),
            Batch(9, [offset_tombstone("orders", "t-a", 1)], timestamp_ms=T0 + 9),
        ],
    )
    write_segment(
        root,
        7,
        [
            Batch(0, [offset_commit("billing", "t-b", 0, 100, version=1, commit_ms=T0)], timestamp_ms=T0),
            Batch(1, [(b"\x00", b"\x00\x01")], timestamp_ms=T0 + 1),
            Batch(2, [(b"\x00\x63abc", b"\x00\x00")], timestamp_ms=T0 + 2),
            Batch(3, [offset_commit("billing", "t-b", 0, 105, commit_ms=T0 + 3)], timestamp_ms=T0 + 3),
            Batch(4, [offset_commit("billing", "t-b", 0, 110, commit_ms=T0 + 4)], timestamp_ms=T0 + 4),
        ],
        garbage_after=3,
    )
    return root
