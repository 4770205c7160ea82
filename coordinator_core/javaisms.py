"""Java semantics that decide Kafka's results, reproduced exactly in one small module.

Kafka computes the `__consumer_offsets` partition of a group, and several assignors order or pick members
and partitions, with Java's own rules: `String.hashCode` over UTF-16 code units with int32 wrap-around,
`Utils.abs` (which maps Integer.MIN_VALUE to 0, unlike Math.abs), and so on. Python's defaults differ, so
every such rule lives here, tested against values computed by the JVM.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator
from typing import Any

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


# --------------------------------------------------------------------------------------------------------
# Ordering: java.lang.String.compareTo, java.util.Comparator chains over Java values
# --------------------------------------------------------------------------------------------------------


def java_string_sort_key(s: str) -> str:
    """A key that sorts strings as `String.compareTo` does: by UTF-16 code units, not by code points.

    Python's own `<` compares code points; the two orders differ only when a character outside the Basic
    Multilingual Plane (stored by Java as a surrogate pair, 0xD800-0xDFFF) meets one in U+E000-U+FFFF.
    Such a string is keyed by its code units, each as one (possibly lone-surrogate) character, so that
    Python's comparison of the keys is Java's comparison of the strings.
    """
    if s.isascii() or max(s) < "\U00010000":
        return s
    units = s.encode("utf-16-be", "surrogatepass")
    return "".join(chr((units[i] << 8) | units[i + 1]) for i in range(0, len(units), 2))


def java_string_compare(a: str, b: str) -> int:
    """Sign of `a.compareTo(b)` (-1, 0 or 1)."""
    ka, kb = java_string_sort_key(a), java_string_sort_key(b)
    return (ka > kb) - (ka < kb)


# --------------------------------------------------------------------------------------------------------
# hashCode() of the Java values that Kafka's assignors put in hash tables
# --------------------------------------------------------------------------------------------------------


def topic_partition_hash(topic: str, partition: int) -> int:
    """`org.apache.kafka.common.TopicPartition.hashCode()`: 31 * (31 + partition) + topic.hashCode()."""
    return to_int32(31 * (31 + partition) + java_string_hash(topic))


def integer_hash(value: int) -> int:
    """`java.lang.Integer.hashCode()` is the value itself."""
    return to_int32(value)


_B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
_B64URL_INDEX = {c: i for i, c in enumerate(_B64URL)}


def uuid_bits(uuid: str) -> tuple[int, int]:
    """(most, least) significant 64 bits, as signed longs, of a Kafka `Uuid` in its 22-character base64url
    form (`Uuid.toString()`, the form topic ids and KIP-848 member ids are written in)."""
    if len(uuid) != 22:
        raise ValueError(f"a Kafka Uuid is 22 base64url characters, got {uuid!r}")
    n = 0
    for c in uuid:
        try:
            n = (n << 6) | _B64URL_INDEX[c]
        except KeyError:
            raise ValueError(f"not a base64url character {c!r} in Uuid {uuid!r}") from None
    n >>= 4  # 22 characters carry 132 bits; the last 4 are padding
    msb, lsb = (n >> 64) & 0xFFFFFFFFFFFFFFFF, n & 0xFFFFFFFFFFFFFFFF
    return _to_int64(msb), _to_int64(lsb)


def _to_int64(n: int) -> int:
    n &= 0xFFFFFFFFFFFFFFFF
    return n - (1 << 64) if n >= (1 << 63) else n


def uuid_hash(uuid: str) -> int:
    """`org.apache.kafka.common.Uuid.hashCode()`: h = msb ^ lsb; (int)(h >> 32) ^ (int)h."""
    msb, lsb = uuid_bits(uuid)
    h = (msb ^ lsb) & 0xFFFFFFFFFFFFFFFF
    return to_int32((h >> 32) ^ h)


def uuid_sort_key(uuid: str) -> tuple[int, int]:
    """`Uuid.compareTo`: most significant bits, then least, each compared as a *signed* long."""
    return uuid_bits(uuid)


# --------------------------------------------------------------------------------------------------------
# java.util.HashMap / HashSet iteration order (JDK 8-17 sizing rules)
# --------------------------------------------------------------------------------------------------------

_MAXIMUM_CAPACITY = 1 << 30
_TREEIFY_THRESHOLD = 8
_MIN_TREEIFY_CAPACITY = 64


def spread(h: int) -> int:
    """`HashMap.hash`: the key's hashCode with its high 16 bits folded into the low ones (unsigned)."""
    h &= _UINT32_MASK
    return h ^ (h >> 16)


def table_size_for(cap: int) -> int:
    """`HashMap.tableSizeFor`: the smallest power of two >= cap (at least 1)."""
    n = 1
    while n < cap:
        n <<= 1
    return min(n, _MAXIMUM_CAPACITY)


def hash_set_capacity_from_collection(size: int) -> int:
    """Table capacity of `new HashSet<>(collection)` on JDK 8-17: HashMap(max((int)(size/.75f) + 1, 16))."""
    return table_size_for(max(int(size / 0.75) + 1, 16))


def hash_map_capacity_from_map(size: int) -> int:
    """Table capacity of `new HashMap<>(map)` (and `putAll` into an empty map) on JDK 8-17:
    tableSizeFor((int)(size / 0.75f + 1.0f)), or the default 16 when the copied map is empty."""
    if size == 0:
        return 16
    return table_size_for(int(size / 0.75 + 1.0))


class JavaHashMap:
    """Iteration order of a `java.util.HashMap` (or the HashSet backed by one) under puts and removes.

    Only the *order* is modelled; values live in an ordinary dict. Java iterates bucket by bucket
    (bucket = spread(hashCode) & (capacity - 1)) and, within a bucket, in insertion order: a resize
    splits a bucket into two while keeping relative order, and a removal does not reorder the rest. So
    the order is "sort by (bucket at the current capacity, insertion sequence)". A removed key that is
    put again goes to the end of its bucket. The capacity doubles when the size exceeds 0.75 * capacity
    after a put, and also when a put makes a bucket hold more than 8 entries while the table is smaller
    than 64 (`treeifyBin` resizes instead of treeifying). Bins that really treeify (more than 8 entries
    in one bucket of a table of at least 64) reorder in Java; that needs adversarial hash collisions and
    is not modelled.

    Args:
        hash_fn: the key's Java `hashCode()`.
        initial_capacity: the capacity argument the Java code passes (`new HashMap<>(n)`), or 16 for the
            default constructor; pass `table_capacity` instead when the table size is already known.
    """

    __slots__ = ("_bucket_sizes", "_cap", "_hash_fn", "_hashes", "_head_seq", "_next_seq", "_order", "_seq")

    def __init__(
        self,
        hash_fn: Callable[[Any], int],
        initial_capacity: int = 16,
        *,
        table_capacity: int | None = None,
    ) -> None:
        self._hash_fn = hash_fn
        self._cap = table_capacity if table_capacity is not None else table_size_for(initial_capacity)
        self._seq: dict[Any, int] = {}
        self._hashes: dict[Any, int] = {}
        self._bucket_sizes: dict[int, int] = {}
        self._next_seq = 0
        self._head_seq = 0
        self._order: list[Any] | None = None

    @property
    def capacity(self) -> int:
        return self._cap

    def __len__(self) -> int:
        return len(self._seq)

    def __contains__(self, key: object) -> bool:
        return key in self._seq

    def add(self, key: Any) -> bool:
        """`put`/`add`: True if the key was new (an existing key keeps its place)."""
        if key in self._seq:
            return False
        h = spread(self._hash_fn(key))
        self._hashes[key] = h
        bucket = h & (self._cap - 1)
        in_bucket = self._bucket_sizes.get(bucket, 0)
        self._seq[key] = self._next_seq
        self._next_seq += 1
        self._bucket_sizes[bucket] = in_bucket + 1
        self._order = None
        if in_bucket >= _TREEIFY_THRESHOLD and self._cap < _MIN_TREEIFY_CAPACITY:
            self._resize()
        if len(self._seq) > int(self._cap * 0.75):
            self._resize()
        return True

    def add_at_head(self, key: Any) -> bool:
        """`computeIfAbsent` (also `compute`/`merge`, and so `Collectors.groupingBy`) adding a new key.

        Unlike `put`, these link the new node at the *head* of its bucket, and they resize *before*
        inserting when the map is already over its threshold, never after: so `n` keys added this way
        can leave a smaller table, and a different order, than `n` puts.
        """
        if key in self._seq:
            return False
        if len(self._seq) > int(self._cap * 0.75):
            self._resize()
        h = spread(self._hash_fn(key))
        bucket = h & (self._cap - 1)
        in_bucket = self._bucket_sizes.get(bucket, 0)
        if in_bucket >= _TREEIFY_THRESHOLD - 1 and self._cap < _MIN_TREEIFY_CAPACITY:
            self._resize()
            bucket = h & (self._cap - 1)
            in_bucket = self._bucket_sizes.get(bucket, 0)
        self._hashes[key] = h
        self._head_seq -= 1
        self._seq[key] = self._head_seq
        self._bucket_sizes[bucket] = in_bucket + 1
        self._order = None
        return True

    def compute_if_absent(self, key: Any) -> bool:
        """`computeIfAbsent(key, ...)` on a key that may already be present: True if it was added.

        JDK 17's `computeIfAbsent` resizes *first* whenever the map is over its threshold, even when the
        key is already there, then links a new key at the head of its bucket (`add_at_head`). A map
        filled by `computeIfAbsent` only never resizes after an insertion, so it can sit over its
        threshold until the next call: a later call with a key already present still doubles the table
        and can reorder the keys. (E.g. two topics in one bucket of a 2-slot table, then a third call
        for either: Java splits them by the next hash bit.)
        """
        if len(self._seq) > int(self._cap * 0.75):
            self._resize()
        if key in self._seq:
            return False
        return self.add_at_head(key)

    def discard(self, key: Any) -> bool:
        """`remove`: True if the key was present."""
        if key not in self._seq:
            return False
        del self._seq[key]
        bucket = self._hashes.pop(key) & (self._cap - 1)
        self._bucket_sizes[bucket] -= 1
        self._order = None
        return True

    def clear(self) -> None:
        """`clear()` empties the table but keeps its capacity."""
        self._seq.clear()
        self._hashes.clear()
        self._bucket_sizes.clear()
        self._order = None

    def _resize(self) -> None:
        if self._cap >= _MAXIMUM_CAPACITY:
            return
        self._cap <<= 1
        mask = self._cap - 1
        sizes: dict[int, int] = {}
        for h in self._hashes.values():
            b = h & mask
            sizes[b] = sizes.get(b, 0) + 1
        self._bucket_sizes = sizes

    def order(self) -> list[Any]:
        """The keys in Java iteration order (a fresh list; cached until the next mutation)."""
        if self._order is None:
            mask = self._cap - 1
            hashes, seq = self._hashes, self._seq
            self._order = sorted(seq, key=lambda k: ((hashes[k] & mask), seq[k]))
        return list(self._order)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.order())

    def first(self) -> Any:
        """`iterator().next()`."""
        if not self._seq:
            raise KeyError("first() of an empty Java HashMap")
        if self._order is None:
            self.order()
        assert self._order is not None
        return self._order[0]


def java_hash_order(
    keys: Iterable[Any],
    hash_fn: Callable[[Any], int] = java_string_hash,
    initial_capacity: int = 16,
    *,
    table_capacity: int | None = None,
) -> list[Any]:
    """Iteration order of a HashMap/HashSet after putting `keys` in this order (duplicates ignored).

    >>> java_hash_order(["consumer1", "consumer2", "consumer3"])
    ['consumer3', 'consumer2', 'consumer1']
    """
    table = JavaHashMap(hash_fn, initial_capacity, table_capacity=table_capacity)
    for k in keys:
        table.add(k)
    return table.order()


def topic_partition_key_hash(tp: tuple[str, int]) -> int:
    """`TopicPartition.hashCode()` for a (topic, partition) tuple, for use as a JavaHashMap hash_fn."""
    return topic_partition_hash(tp[0], tp[1])


# --------------------------------------------------------------------------------------------------------
# Sizing expressions Kafka's KIP-848 assignors pass to HashMap/HashSet constructors
# --------------------------------------------------------------------------------------------------------


def _to_float32(x: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", x))[0])


def float_presized_capacity(expected_size: int) -> int:
    """`(int) (expected_size / 0.75f + 1)`: the argument the group coordinator's assignors give to
    `new HashMap<>(n)` / `new HashSet<>(n)` for `expected_size` entries, in *float* arithmetic as javac
    compiles it (each float operation is rounded to float32; division and addition of two floats done in
    double and then rounded are exactly the float results). The table is `table_size_for` of the result.

    >>> float_presized_capacity(12), table_size_for(float_presized_capacity(12))
    (17, 32)
    """
    quotient = _to_float32(_to_float32(float(expected_size)) / _to_float32(0.75))
    return int(_to_float32(quotient + 1.0))
