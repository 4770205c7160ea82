"""Bad bytes give a DecodeError with a field path and position, never another exception, and never a
silent misread: every truncation of every golden vector, impossible lengths, and hypothesis-generated
random and mutated input. Trailing garbage after a complete struct is read as Kafka reads it (ignored) and
counted (issue #21 item 5)."""

from __future__ import annotations

import contextlib
import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import coordinator_core as cc
from tests.unit import vectors as v
from tests.unit.test_records_golden import KIP848_CASES

h = bytes.fromhex

GOLDEN: list[tuple[bytes, bytes]] = [(h(v.OFFSET_KEY_T1), h(c[1])) for c in v.OFFSET_VALUES] + [
    (h(v.GROUP_KEY), h(v.GROUP_VALUE_V3)),
    (h(v.GROUP_KEY), h(v.EMPTY_GROUP_VALUE_V3)),
    (h("0005" "0001") + b"g" + h("0002") + b"m1", h(v.KIP848_MEMBER_WITH_CLASSIC)),
] + [(c[0].to_bytes(2, "big") + c[1], c[2]) for c in KIP848_CASES]


@pytest.mark.parametrize("key,value", GOLDEN, ids=[f"golden{i}" for i in range(len(GOLDEN))])
def test_every_value_truncation_raises_decode_error(key: bytes, value: bytes) -> None:
    for cut in range(len(value)):
        with pytest.raises(cc.DecodeError) as err:
            cc.decode_record(key, value[:cut])
        assert err.value.field_path, f"no field path for a cut at {cut}"


@pytest.mark.parametrize("key,value", GOLDEN, ids=[f"golden{i}" for i in range(len(GOLDEN))])
def test_every_key_truncation_raises_decode_error(key: bytes, value: bytes) -> None:
    for cut in range(len(key)):
        with pytest.raises(cc.DecodeError):
            cc.decode_record(key[:cut], value)


@pytest.mark.parametrize("key,value", GOLDEN, ids=[f"golden{i}" for i in range(len(GOLDEN))])
def test_trailing_garbage_is_read_as_kafka_reads_it_and_counted(key: bytes, value: bytes) -> None:
    # Kafka's CoordinatorRecordSerde reads the key and the value with `message.read(accessor, version)`,
    # which stops after the struct: the bytes after it change nothing but the count.
    clean = cc.decode_record(key, value)
    assert clean.trailing_bytes == 0
    for got, count in ((cc.decode_record(key, value + b"\x00"), 1), (cc.decode_record(key + b"\x00\x07", value), 2),
                       (cc.decode_record(key + b"\x01", value + b"\xff\xff\xff"), 4)):
        assert (got.record_type, got.key, got.value_version, got.value) == (
            clean.record_type, clean.key, clean.value_version, clean.value)
        assert got.trailing_bytes == count


def test_error_names_the_field_and_position() -> None:
    value = h(v.OFFSET_VALUES[3][1])[:-3]  # v3 cut inside commitTimestamp
    with pytest.raises(cc.DecodeError) as err:
        cc.decode_record(h(v.OFFSET_KEY_T1), value)
    assert err.value.field_path == "OffsetCommitValue.commit_timestamp"
    assert err.value.position == 16
    assert "needed 8 byte(s), 5 left" in str(err.value)


def test_impossible_lengths() -> None:
    # group length 0x7fff in a 26-byte key
    with pytest.raises(cc.DecodeError, match="runs past the end"):
        cc.decode_record(h("0001" "7fff") + b"x" * 20, None)
    # negative string length in a non-nullable key field
    with pytest.raises(cc.DecodeError, match="invalid string length -2"):
        cc.decode_record(h("0002" "fffe"), None)
    # member array count far larger than the bytes left
    value = h(v.EMPTY_GROUP_VALUE_V3)[:-4] + h("7fffffff")
    with pytest.raises(cc.DecodeError, match="array length"):
        cc.decode_record(h(v.GROUP_KEY), value)
    with pytest.raises(cc.DecodeError, match="negative value version"):
        cc.decode_record(h(v.OFFSET_KEY_T1), h("ffff") + h(v.OFFSET_VALUES[0][1])[2:])


def test_consumer_protocol_bad_input() -> None:
    sub = h(v.SUBSCRIPTION_V3)
    for cut in range(len(sub)):
        with pytest.raises(cc.DecodeError):
            cc.decode_subscription(sub[:cut])
    # ConsumerProtocol.deserializeSubscription ignores bytes after the struct: read, and counted.
    assert cc.decode_subscription(sub + b"\x01") == dataclasses.replace(cc.decode_subscription(sub), trailing_bytes=1)
    with pytest.raises(cc.DecodeError, match="negative"):
        cc.decode_assignment(b"\xff\xff")


def _decodes_or_decode_error(key: bytes, value: bytes | None) -> None:
    try:
        cc.decode_record(key, value)
    except cc.DecodeError as e:
        assert isinstance(e.field_path, str) and isinstance(e.position, int)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=64), st.one_of(st.none(), st.binary(max_size=256)))
def test_random_bytes_raise_only_decode_error(key: bytes, value: bytes | None) -> None:
    _decodes_or_decode_error(key, value)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(GOLDEN), st.data())
def test_mutated_golden_records_raise_only_decode_error(pair: tuple[bytes, bytes], data: st.DataObject) -> None:
    key, value = pair
    target = data.draw(st.sampled_from(["key", "value"]))
    buf = bytearray(key if target == "key" else value)
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from(["flip", "insert", "delete"]))
        pos = data.draw(st.integers(0, max(len(buf) - 1, 0)))
        if op == "flip" and buf:
            buf[pos] ^= data.draw(st.integers(1, 255))
        elif op == "insert":
            buf[pos:pos] = data.draw(st.binary(min_size=1, max_size=4))
        elif buf:
            del buf[pos]
    if target == "key":
        _decodes_or_decode_error(bytes(buf), value)
    else:
        _decodes_or_decode_error(key, bytes(buf))


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=128))
def test_random_consumer_protocol_bytes(data: bytes) -> None:
    for fn in (cc.decode_subscription, cc.decode_assignment, cc.decode_sticky_user_data):
        with contextlib.suppress(cc.DecodeError):
            fn(data)
