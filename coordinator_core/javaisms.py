"""Java semantics that decide Kafka's results, reproduced exactly in one small module.

Kafka computes the `__consumer_offsets` partition of a group, and several assignors order or pick members
and partitions, with Java's own rules: `String.hashCode` over UTF-16 code units with int32 wrap-around,
`Utils.abs` (which maps Integer.MIN_VALUE to 0, unlike Math.abs), and so on. Python's defaults differ, so
every such rule lives here, tested against values computed by the JVM.
"""

from __future__ import annotations

INT32_MIN = -(1 << 31)
_UINT32_MASK = 0xFFFFFFFF


def to_int32(n: int) -> int:
    """Wrap an arbitrary Python int to a signed 32-bit value, as Java int arithmetic does."""
    n &= _UINT32_MASK
    return n - (1 << 32) if n >= (1 << 31) else n


def java_string_hash(s: str) -> int:
    """`java.lang.String.hashCode()`: h = 31*h + c over UTF-16 code units, int32 wrap-around.

    A character outside the Basic Multilingual Plane contributes its two surrogate code units, so the
    string is walked as UTF-16, never as code points or UTF-8 bytes.

    >>> java_string_hash("my-group")
    -1906497762
    """
    h = 0
    if s.isascii():
        for ch in s.encode("ascii"):
            h = (31 * h + ch) & _UINT32_MASK
    else:
        units = s.encode("utf-16-be", "surrogatepass")
        for i in range(0, len(units), 2):
            h = (31 * h + ((units[i] << 8) | units[i + 1])) & _UINT32_MASK
    return h - (1 << 32) if h >= (1 << 31) else h


def utils_abs(n: int) -> int:
    """`org.apache.kafka.common.utils.Utils.abs`: Integer.MIN_VALUE maps to 0, not to itself."""
    return 0 if n == INT32_MIN else abs(n)


def partition_for(group_id: str, num_partitions: int = 50) -> int:
    """The `__consumer_offsets` partition holding every record of `group_id`.

    `Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions` (50 by default), as computed by both
    the old Scala coordinator and the new Java one.

    >>> partition_for("my-group")
    12
    """
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    return utils_abs(java_string_hash(group_id)) % num_partitions
