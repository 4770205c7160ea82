"""jobs.common.keys: the record type read from a raw key's first two bytes, as Kafka's key schemas number them
(group-coordinator/src/main/resources/common/message: OffsetCommitKey validVersions 0-1, GroupMetadataKey 2,
ConsumerGroupMetadataKey 3), with keys too short or null never matching."""

from __future__ import annotations

import struct

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from jobs.common.keys import GROUP_METADATA_TYPE, OFFSET_COMMIT_TYPES, key_type_in

KEYS = [
    b"\x00\x00\x00\x01g\x00\x01t\x00\x00\x00\x00",  # offset commit, key version 0 (Kafka 0.8.2)
    b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x00",  # offset commit, key version 1
    b"\x00\x02\x00\x01g",  # GroupMetadata
    b"\x00\x03\x00\x01g",  # ConsumerGroupMetadata (KIP-848)
    b"\x01\x00\x00\x01g",  # type 256: the high byte counts
    b"\x00",  # too short to tell
    b"",
    None,
]


def _type(key: bytes | None) -> int | None:
    return struct.unpack(">h", key[:2])[0] if key is not None and len(key) >= 2 else None


def test_the_core_numbers_the_types_as_kafka_does() -> None:
    assert OFFSET_COMMIT_TYPES == (0, 1)
    assert GROUP_METADATA_TYPE == 2


def test_key_type_in_matches_the_first_two_bytes_and_is_false_for_short_or_null_keys(spark: SparkSession) -> None:
    frame = spark.createDataFrame([(i, k) for i, k in enumerate(KEYS)], "i int, key binary")
    chosen = {"commits": OFFSET_COMMIT_TYPES, "group_metadata": (GROUP_METADATA_TYPE,), "mixed": (2, 3, 256)}
    rows = frame.select(
        "i", *[key_type_in(F.col("key"), *types).alias(name) for name, types in chosen.items()]
    ).orderBy("i").collect()
    assert frame.schema["key"].dataType == T.BinaryType()
    for row in rows:
        key_type = _type(KEYS[row["i"]])
        for name, types in chosen.items():
            assert row[name] is (key_type in types), (KEYS[row["i"]], name)
