"""The embedded ConsumerProtocol Subscription/Assignment v0-v3 and the sticky assignors' user data.
Bytes are laid out by hand from ConsumerProtocolSubscription.json / ConsumerProtocolAssignment.json."""

from __future__ import annotations

import pytest

import coordinator_core as cc
from coordinator_core import messages as m
from tests.unit import vectors as v

h = bytes.fromhex


def s(x: str) -> bytes:
    return len(x).to_bytes(2, "big") + x.encode()


def i32(n: int) -> bytes:
    return n.to_bytes(4, "big", signed=True)


def subscription_bytes(version: int) -> bytes:
    out = version.to_bytes(2, "big") + i32(2) + s("a") + s("b") + i32(2) + b"ud"
    if version >= 1:
        out += i32(1) + s("a") + i32(2) + i32(0) + i32(3)
    if version >= 2:
        out += i32(9)
    if version >= 3:
        out += s("rack-1")
    return out


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_versions(version: int) -> None:
    raw = subscription_bytes(version)
    sub = cc.decode_subscription(raw)
    assert sub == cc.Subscription(
        version, ("a", "b"), b"ud",
        (("a", 0), ("a", 3)) if version >= 1 else (),
        9 if version >= 2 else None,  # a field the version lacks is None
        "rack-1" if version >= 3 else None,
    )
    assert cc.encode_subscription(sub) == raw


def test_subscription_above_highest_version_parses_as_v3_and_ignores_new_fields() -> None:
    raw = b"\x00\x04" + subscription_bytes(3)[2:] + b"future-field"
    sub = cc.decode_subscription(raw)
    assert (sub.version, sub.topics, sub.rack_id, sub.generation_id) == (4, ("a", "b"), "rack-1", 9)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_assignment_versions_share_one_layout(version: int) -> None:
    raw = version.to_bytes(2, "big") + i32(2) + s("a") + i32(2) + i32(0) + i32(1) + s("b") + i32(1) + i32(7) + i32(-1)
    asg = cc.decode_assignment(raw)
    assert asg == cc.Assignment(version, (("a", 0), ("a", 1), ("b", 7)), None)
    assert asg.partitions[2].topic == "b" and asg.partitions[2].partition == 7
    assert cc.encode_assignment(asg) == raw


def test_reference_vectors() -> None:
    assert cc.decode_subscription(h(v.SUBSCRIPTION_V3)) == cc.Subscription(3, ("my-topic",), None, (), -1, None)
    assert cc.decode_assignment(h(v.ASSIGNMENT_V3)) == cc.Assignment(3, (("my-topic", 0),), None)


def test_sticky_user_data_v1_and_v0() -> None:
    ud = cc.decode_sticky_user_data(h(v.STICKY_USER_DATA_V1))
    assert ud == cc.StickyUserData((("my-topic", 0), ("my-topic", 1)), 7, 1)
    v0 = h(v.STICKY_USER_DATA_V1)[:-4]  # V0 has no generation
    assert cc.decode_sticky_user_data(v0) == cc.StickyUserData((("my-topic", 0), ("my-topic", 1)), None, 0)
    assert cc.encode_sticky_user_data([("my-topic", 0), ("my-topic", 1)], 7) == h(v.STICKY_USER_DATA_V1)
    assert cc.encode_sticky_user_data([("my-topic", 0), ("my-topic", 1)], None) == v0
    with pytest.raises(cc.DecodeError):
        cc.decode_sticky_user_data(b"\x00\x00\x00\x05")


def test_cooperative_sticky_user_data() -> None:
    assert cc.decode_cooperative_sticky_user_data(h(v.COOPERATIVE_STICKY_USER_DATA)) == 7
    assert cc.encode_cooperative_sticky_user_data(7) == h(v.COOPERATIVE_STICKY_USER_DATA)
    with pytest.raises(cc.DecodeError):
        cc.decode_cooperative_sticky_user_data(b"\x00\x07")


def test_member_protocol_decoded_only_for_consumer_groups() -> None:
    member = m.MemberMetadata("m", None, "c", "h", 1, 1, h(v.SUBSCRIPTION_V3), h(v.ASSIGNMENT_V3))
    proto = cc.decode_member_protocol("consumer", member)
    assert proto.subscription is not None and proto.subscription.topics == ("my-topic",)
    assert proto.assignment is not None and proto.assignment.partitions == (("my-topic", 0),)
    assert proto.error is None
    assert cc.decode_member_protocol("connect", member) == cc.MemberProtocol(None, None, None)
    bad = m.MemberMetadata("m", None, "c", "h", 1, 1, b"\x00\x03\x00", h(v.ASSIGNMENT_V3))
    broken = cc.decode_member_protocol("consumer", bad)
    assert broken.subscription is None and broken.assignment is not None
    assert broken.error is not None and broken.error.field_path.startswith("members[m].subscription")
