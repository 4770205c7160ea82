"""Java semantics reproduced by coordinator_core.javaisms, against values printed by OpenJDK 17
(java.util.HashMap/HashSet, String, org.apache.kafka.common.TopicPartition / Uuid of kafka-clients 4.4.0)."""

from __future__ import annotations

import pytest

from coordinator_core.javaisms import (
    JavaHashMap,
    integer_hash,
    java_hash_order,
    java_string_compare,
    java_string_hash,
    java_string_sort_key,
    partition_for,
    topic_partition_hash,
    topic_partition_key_hash,
    utils_abs,
    uuid_bits,
    uuid_hash,
    uuid_sort_key,
)

KEYS = [f"consumer-{i}" for i in range(20)]


def test_string_hash_utf16() -> None:
    assert java_string_hash("my-group") == -1906497762
    assert java_string_hash("é-topic") == 2028785483
    assert java_string_hash("\U0001f600x") == 54959989  # a surrogate pair hashes as two code units


def test_partition_for_and_utils_abs() -> None:
    assert partition_for("my-group") == 12
    assert utils_abs(-(1 << 31)) == 0
    assert utils_abs(-5) == 5


def test_topic_partition_hash() -> None:
    assert topic_partition_hash("topic1", 7) == -868033156
    assert topic_partition_key_hash(("orders", 0)) == -1008769370


def test_uuid_bits_hash_and_order() -> None:
    assert uuid_bits("T1-A4s3VTwiI5CTbEp6POw") == (5719431763388092168, -8582694466532503749)
    assert uuid_hash("T1-A4s3VTwiI5CTbEp6POw") == 418407434
    assert uuid_hash("T3-CU8fVTLCz5YMkLoDQsa") == 365927798
    assert uuid_sort_key("T1-A4s3VTwiI5CTbEp6POw") < uuid_sort_key("T3-CU8fVTLCz5YMkLoDQsa")
    with pytest.raises(ValueError):
        uuid_bits("too-short")


def test_string_order_is_utf16_code_units() -> None:
    # Java: "\uD83D\uDE00".compareTo("\uFF5E") < 0 although U+1F600 > U+FF5E as code points
    assert java_string_compare("\U0001f600", "\uff5e") == -1
    assert "\U0001f600" > "\uff5e"  # noqa: PLR0133 - Python compares code points, unlike Java
    assert java_string_compare("topic1", "é-topic") == -1
    assert sorted(["\uff5e", "\U0001f600", "a"], key=java_string_sort_key) == ["a", "\U0001f600", "\uff5e"]


def test_hash_map_put_order_with_resize() -> None:
    assert java_hash_order(KEYS) == [
        "consumer-11", "consumer-10", "consumer-6", "consumer-17", "consumer-5", "consumer-16", "consumer-4",
        "consumer-19", "consumer-3", "consumer-18", "consumer-2", "consumer-13", "consumer-1", "consumer-12",
        "consumer-0", "consumer-15", "consumer-14", "consumer-9", "consumer-8", "consumer-7",
    ]
    assert java_hash_order(["consumer1", "consumer2", "consumer3"]) == ["consumer3", "consumer2", "consumer1"]


def test_compute_if_absent_inserts_at_bucket_head_and_resizes_lazily() -> None:
    table = JavaHashMap(java_string_hash)
    for k in KEYS[:13]:
        table.add_at_head(k)
    assert table.capacity == 16  # 13 > 12 entries, yet no resize: computeIfAbsent checks before inserting
    assert table.order() == [
        "consumer-11", "consumer-10", "consumer-9", "consumer-8", "consumer-7", "consumer-6", "consumer-5",
        "consumer-4", "consumer-3", "consumer-2", "consumer-12", "consumer-1", "consumer-0",
    ]


def test_hash_set_of_integers_is_not_sorted() -> None:
    assert java_hash_order([3, 17, 1, 33], integer_hash) == [17, 1, 33, 3]


def test_removed_key_put_again_goes_to_the_end_of_its_bucket() -> None:
    table = JavaHashMap(topic_partition_key_hash)
    for p in range(14):
        table.add(("t", p))
    table.discard(("t", 3))
    table.add(("t", 3))
    assert table.order() == [("t", p) for p in range(13, -1, -1)]
    assert table.first() == ("t", 13)
