"""The client assignors as kafka-clients before 2.4 (Range, RoundRobin) and before 3.0 (Sticky from
0.11.0, CooperativeSticky) computed them. Expected values come from Kafka's own unit tests of those versions (named
per test) or from the behaviour change a revision made, checked against the oracle jar sets of
tests/oracle/test_assignor_oracle.py."""

from __future__ import annotations

import pytest

from coordinator_core.assignors import (
    AssignorError,
    MemberSubscription,
    StickyRevision,
    StickyRevisionBefore3_0,
    UnsupportedKafkaVersion,
    assign,
    encode_cooperative_user_data,
    encode_sticky_user_data,
    sticky_revision,
)
from coordinator_core.assignors.userdata import (
    cooperative_user_data_left_after_read,
    decode_sticky_user_data_v0,
    sticky_user_data_left_after_read,
)


def test_range_2_3_sorts_by_member_id_even_for_static_members() -> None:
    # RangeAssignorTest.testOneStaticConsumerAndOneDynamicConsumerTwoTopicsSixPartitions gives consumer-b
    # (static) the first ranges from 2.4 on; before 2.4 the assignor never saw group instance ids.
    members = [
        MemberSubscription("consumer-b", ["topic1", "topic2"], group_instance_id="instance1"),
        MemberSubscription("consumer-a", ["topic1", "topic2"]),
    ]
    counts = {"topic1": 3, "topic2": 3}
    assert assign("range", counts, members, kafka_version="2.4.0")["consumer-b"] == [
        ("topic1", 0),
        ("topic1", 1),
        ("topic2", 0),
        ("topic2", 1),
    ]
    assert assign("range", counts, members, kafka_version="2.3.1") == {
        "consumer-b": [("topic1", 2), ("topic2", 2)],
        "consumer-a": [("topic1", 0), ("topic1", 1), ("topic2", 0), ("topic2", 1)],
    }


def test_range_2_3_two_consumers_two_topics() -> None:
    # RangeAssignorTest.testTwoConsumersTwoTopicsSixPartitions (2.3.1)
    members = [
        MemberSubscription("consumer1", ["topic1", "topic2"]),
        MemberSubscription("consumer2", ["topic1", "topic2"]),
    ]
    for version in ("0.9.0.1", "2.0.1", "2.3.1"):
        assert assign("range", {"topic1": 3, "topic2": 3}, members, kafka_version=version) == {
            "consumer1": [("topic1", 0), ("topic1", 1), ("topic2", 0), ("topic2", 1)],
            "consumer2": [("topic1", 2), ("topic2", 2)],
        }


def test_range_topic_order_before_2_1_follows_put_not_compute_if_absent() -> None:
    # Two topics in one bucket of the 16-slot topic map: get/put (before 2.1) appends, computeIfAbsent
    # (2.1+) prepends, so a member's list starts with a different topic.
    members = [MemberSubscription("c", ["Aa", "BB"])]  # "Aa".hashCode() == "BB".hashCode()
    assert assign("range", {"Aa": 1, "BB": 1}, members, kafka_version="2.0.1")["c"] == [("Aa", 0), ("BB", 0)]
    assert assign("range", {"Aa": 1, "BB": 1}, members, kafka_version="2.1.0")["c"] == [("BB", 0), ("Aa", 0)]


def test_roundrobin_2_3_mixed_topics() -> None:
    # RoundRobinAssignorTest.testMultipleConsumersMixedTopics (2.3.1)
    members = [
        MemberSubscription("consumer1", ["topic1"]),
        MemberSubscription("consumer2", ["topic1", "topic2"]),
        MemberSubscription("consumer3", ["topic1"]),
    ]
    assert assign("roundrobin", {"topic1": 3, "topic2": 2}, members, kafka_version="2.3.1") == {
        "consumer1": [("topic1", 0)],
        "consumer2": [("topic1", 1), ("topic2", 0), ("topic2", 1)],
        "consumer3": [("topic1", 2)],
    }


def test_roundrobin_0_9_fails_on_a_topic_without_metadata() -> None:
    # KAFKA-3661: 0.9's RoundRobin unboxed a null partition count; 0.10.0 skips the topic
    members = [MemberSubscription("c", ["known", "unknown"])]
    with pytest.raises(AssignorError, match="NullPointerException"):
        assign("roundrobin", {"known": 2}, members, kafka_version="0.9.0.1")
    assert assign("roundrobin", {"known": 2}, members, kafka_version="0.10.0.0") == {"c": [("known", 0), ("known", 1)]}


def test_sticky_2_3_two_consumers_two_topics() -> None:
    # StickyAssignorTest.testTwoConsumersTwoTopicsSixPartitions (2.3.1)
    members = [
        MemberSubscription("consumer1", ["topic1", "topic2"]),
        MemberSubscription("consumer2", ["topic1", "topic2"]),
    ]
    assert assign("sticky", {"topic1": 3, "topic2": 3}, members, kafka_version="2.3.1") == {
        "consumer1": [("topic1", 0), ("topic1", 2), ("topic2", 1)],
        "consumer2": [("topic1", 1), ("topic2", 0), ("topic2", 2)],
    }


@pytest.mark.parametrize("version", ["2.3.1", "2.5.0"])
def test_sticky_add_consumer_one_topic(version: str) -> None:
    # StickyAssignorTest.testAddRemoveConsumerOneTopic (2.3.1): the first member's user data carries the
    # assignor's default generation -1
    counts = {"topic": 3}
    first = assign("sticky", counts, [MemberSubscription("consumer", ["topic"])], kafka_version=version)
    assert first == {"consumer": [("topic", 0), ("topic", 1), ("topic", 2)]}
    members = [
        MemberSubscription("consumer", ["topic"], encode_sticky_user_data(first["consumer"], -1)),
        MemberSubscription("consumer2", ["topic"]),
    ]
    assert assign("sticky", counts, members, kafka_version=version) == {
        "consumer": [("topic", 2), ("topic", 1)],
        "consumer2": [("topic", 0)],
    }


@pytest.mark.parametrize("version", ["0.11.0.3", "2.0.1", "2.2.2"])
def test_sticky_before_2_3_kafka_golden_cases(version: str) -> None:
    # StickyAssignorTest (0.11.0 and 2.2.2 alike): testTwoConsumersTwoTopicsSixPartitions,
    # testMultipleConsumersMixedTopicSubscriptions, testAddRemoveConsumerOneTopic (V0 user data)
    both = [
        MemberSubscription("consumer1", ["topic1", "topic2"]),
        MemberSubscription("consumer2", ["topic1", "topic2"]),
    ]
    assert assign("sticky", {"topic1": 3, "topic2": 3}, both, kafka_version=version) == {
        "consumer1": [("topic1", 0), ("topic1", 2), ("topic2", 1)],
        "consumer2": [("topic1", 1), ("topic2", 0), ("topic2", 2)],
    }
    mixed = [
        MemberSubscription("consumer1", ["topic1"]),
        MemberSubscription("consumer2", ["topic1", "topic2"]),
        MemberSubscription("consumer3", ["topic1"]),
    ]
    assert assign("sticky", {"topic1": 3, "topic2": 2}, mixed, kafka_version=version) == {
        "consumer1": [("topic1", 0), ("topic1", 2)],
        "consumer2": [("topic2", 0), ("topic2", 1)],
        "consumer3": [("topic1", 1)],
    }
    counts = {"topic": 3}
    first = assign("sticky", counts, [MemberSubscription("consumer", ["topic"])], kafka_version=version)
    assert first == {"consumer": [("topic", 0), ("topic", 1), ("topic", 2)]}
    members = [
        MemberSubscription("consumer", ["topic"], encode_sticky_user_data(first["consumer"], None)),
        MemberSubscription("consumer2", ["topic"]),
    ]
    # 2.3.1 gives consumer [topic-2, topic-1]: its user data then carries a generation
    assert assign("sticky", counts, members, kafka_version=version) == {
        "consumer": [("topic", 1), ("topic", 2)],
        "consumer2": [("topic", 0)],
    }


def test_sticky_before_2_3_keeps_a_partition_claimed_twice_in_both_lists() -> None:
    # No generations: c1 and c2 both keep their claim on topic-0; c2, the last claimant in HashMap order,
    # is taken for its holder and balancing moves "its" topic-0 to c3, so topic-0 ends up assigned twice.
    # 2.3 gives it to one claimant only (same generation: the first in HashMap order).
    members = [
        MemberSubscription("c1", ["topic"], encode_sticky_user_data([("topic", 0), ("topic", 1)], None)),
        MemberSubscription("c2", ["topic"], encode_sticky_user_data([("topic", 0), ("topic", 2)], None)),
        MemberSubscription("c3", ["topic"]),
    ]
    assert assign("sticky", {"topic": 3}, members, kafka_version="2.2.2") == {
        "c1": [("topic", 0), ("topic", 1)],
        "c2": [("topic", 2)],
        "c3": [("topic", 0)],
    }
    assert assign("sticky", {"topic": 3}, members, kafka_version="2.3.1") == {
        "c1": [("topic", 1)],
        "c2": [("topic", 2)],
        "c3": [("topic", 0)],
    }


def test_sticky_before_2_3_ignores_the_generation_of_newer_members() -> None:
    # A 2.3+ member's V1 user data read by a 2.2 leader: the V0 reader stops before the generation, so
    # b's claim in generation 9 does not outrank a's in generation 7
    members = [
        MemberSubscription("a", ["t"], encode_sticky_user_data([("t", 0), ("t", 1), ("t", 2)], 7)),
        MemberSubscription("b", ["t"], encode_sticky_user_data([("t", 3)], 9)),
    ]
    assert assign("sticky", {"t": 4}, members, kafka_version="2.2.2") == {
        "a": [("t", 1), ("t", 2)],
        "b": [("t", 3), ("t", 0)],
    }
    assert assign("sticky", {"t": 4}, members, kafka_version="2.3.1") == {
        "a": [("t", 1), ("t", 0)],
        "b": [("t", 3), ("t", 2)],
    }


def test_sticky_before_2_3_empty_user_data_list_is_a_reassignment() -> None:
    # a's user data lists no partitions but is not empty, so 2.2 does not see a fresh assignment: the
    # partitions are dealt in TopicPartition HashMap order instead of sorted, unlike without user data
    # (and unlike 2.3, which only counts claimed partitions)
    counts = {"t": 6, "u": 3}
    fresh = assign(
        "sticky",
        counts,
        [MemberSubscription("a", ["t", "u"]), MemberSubscription("b", ["t", "u"])],
        kafka_version="2.2.2",
    )
    assert fresh == {
        "a": [("t", 0), ("t", 2), ("t", 4), ("u", 0), ("u", 2)],
        "b": [("t", 1), ("t", 3), ("t", 5), ("u", 1)],
    }
    members = [
        MemberSubscription("a", ["t", "u"], encode_sticky_user_data([], None)),
        MemberSubscription("b", ["t", "u"]),
    ]
    assert assign("sticky", counts, members, kafka_version="2.2.2") == {
        "a": [("t", 5), ("t", 3), ("t", 1), ("t", 0), ("u", 0)],
        "b": [("t", 4), ("t", 2), ("u", 2), ("u", 1)],
    }
    assert assign("sticky", counts, members, kafka_version="2.3.1") == fresh


def test_sticky_before_2_3_failures() -> None:
    # KAFKA-7962 (fixed in 2.3.0): a subscribed topic without metadata is unboxed as a null partition count
    with pytest.raises(AssignorError, match="NullPointerException"):
        assign("sticky", {"t": 4}, [MemberSubscription("a", ["t", "gone"])], kafka_version="2.2.2")
    assert assign("sticky", {"t": 4}, [MemberSubscription("a", ["t", "gone"])], kafka_version="2.3.1") == {
        "a": [("t", 0), ("t", 1), ("t", 2), ("t", 3)]
    }
    # unreadable user data: no fallback before 2.3 (SchemaException)
    garbage = [MemberSubscription("a", ["t"], b"\x00\x00\x00\x01\x00"), MemberSubscription("b", ["t"])]
    with pytest.raises(AssignorError, match="SchemaException"):
        assign("sticky", {"t": 2}, garbage, kafka_version="2.2.2")
    assert assign("sticky", {"t": 2}, garbage, kafka_version="2.3.1") == {"a": [("t", 0)], "b": [("t", 1)]}
    # y still claims b-0 from a topic it left and is, in HashMap order, its last claimant: Kafka takes y
    # for b-0's holder, sets y aside (it holds all it can take, x-0 alone), then looks y up to rebalance b-0
    stale = [
        MemberSubscription("a", ["b"], encode_sticky_user_data([("b", 0), ("b", 1), ("b", 2), ("b", 3)], None)),
        MemberSubscription("y", ["x"], encode_sticky_user_data([("x", 0), ("b", 0)], None)),
        MemberSubscription("c", ["b"]),
    ]
    with pytest.raises(AssignorError, match="NullPointerException"):
        assign("sticky", {"x": 1, "b": 4}, stale, kafka_version="2.2.2")
    assert assign("sticky", {"x": 1, "b": 4}, stale, kafka_version="2.3.1") == {
        "a": [("b", 3), ("b", 2)],
        "y": [("x", 0)],
        "c": [("b", 0), ("b", 1)],
    }


@pytest.mark.parametrize("version", ["0.11.0.3", "2.0.1", "2.2.2"])
def test_sticky_before_2_3_reassignment_with_no_partition_fails(version: str) -> None:
    # Every member subscribes to nothing (a pattern matching no topic yet), so no partition exists to
    # assign; a member with user data (even an empty list) makes it a reassignment, and
    # `areSubscriptionsIdentical` took the first partition's consumer list without `hasNext()`:
    # NoSuchElementException until 2.3.0 (KAFKA-7962). Checked against Kafka's classes (oracle jar sets).
    claimed = [MemberSubscription("a", [], encode_sticky_user_data([("t", 0)], None)), MemberSubscription("b", [])]
    listed_nothing = [MemberSubscription("a", [], encode_sticky_user_data([], None)), MemberSubscription("b", [])]
    for members in (claimed, listed_nothing):
        with pytest.raises(AssignorError, match="NoSuchElementException"):
            assign("sticky", {"t": 2}, members, kafka_version=version)
        assert assign("sticky", {"t": 2}, members, kafka_version="2.3.1") == {"a": [], "b": []}
        assert assign("sticky", {"t": 2}, members, kafka_version="2.5.0") == {"a": [], "b": []}
    # no user data: a fresh assignment, which never asks whether the subscriptions are identical
    fresh = [MemberSubscription("a", []), MemberSubscription("b", [])]
    assert assign("sticky", {"t": 2}, fresh, kafka_version=version) == {"a": [], "b": []}
    # one member subscribed to something: partitions exist, nothing fails, the other gets nothing
    mixed = [
        MemberSubscription("a", [], encode_sticky_user_data([("t", 1)], None)),
        MemberSubscription("b", ["t"], encode_sticky_user_data([("t", 0)], None)),
    ]
    assert assign("sticky", {"t": 2}, mixed, kafka_version=version) == {"a": [], "b": [("t", 0), ("t", 1)]}


def test_sticky_member_subscribed_to_nothing_keeps_its_partition_on_the_constrained_path() -> None:
    # a (subscribed to nothing) comes first in HashMap order, so `allSubscriptionsEqual` only starts
    # collecting topics at b and finds the subscriptions equal: the constrained path (2.5.1+) lets a
    # keep t-1, the general path (before) gives a nothing. Checked against Kafka's classes.
    members = [
        MemberSubscription("a", [], encode_sticky_user_data([("t", 1)], None)),
        MemberSubscription("b", ["t"], encode_sticky_user_data([("t", 0)], None)),
    ]
    for version in ("2.3.1", "2.5.0"):
        assert assign("sticky", {"t": 2}, members, kafka_version=version) == {"a": [], "b": [("t", 0), ("t", 1)]}
    for version in ("2.6.3", "2.8.2", "3.3.2", "4.4.0"):
        assert assign("sticky", {"t": 2}, members, kafka_version=version) == {"a": [("t", 1)], "b": [("t", 0)]}


def test_group_without_members() -> None:
    # Not a real group (the leader is a member), but Kafka's classes answer it; so does the replay, with
    # Kafka's exceptions and never a Python one. Checked against Kafka's classes (oracle jar sets).
    for version in ("0.9.0.1", "2.3.1", "4.4.0"):
        assert assign("range", {"t": 2}, [], kafka_version=version) == {}
        with pytest.raises(AssignorError, match="IllegalArgumentException: CircularIterator"):
            assign("roundrobin", {"t": 2}, [], kafka_version=version)
    for version in ("0.11.0.3", "2.2.2", "2.3.1", "2.5.0"):
        with pytest.raises(AssignorError, match="NoSuchElementException"):
            assign("sticky", {"t": 2}, [], kafka_version=version)
    with pytest.raises(AssignorError, match="NoSuchElementException"):
        assign("cooperative-sticky", {"t": 2}, [], kafka_version="2.5.0")
    for version in ("2.6.3", "2.8.2"):  # the quotas are divided as doubles: no exception
        assert assign("sticky", {"t": 2}, [], kafka_version=version) == {}
        assert assign("cooperative-sticky", {"t": 2}, [], kafka_version=version) == {}
    for version in ("3.3.2", "4.4.0"):
        for name in ("sticky", "cooperative-sticky"):
            with pytest.raises(AssignorError, match="ArithmeticException"):
                assign(name, {"t": 2}, [], kafka_version=version)


def test_sticky_user_data_v0_reader() -> None:
    # in the order written (the writer groups by topic), repeats kept
    assert decode_sticky_user_data_v0(encode_sticky_user_data([("t", 1), ("u", 0), ("t", 1)], None)) == [
        ("t", 1),
        ("t", 1),
        ("u", 0),
    ]
    assert decode_sticky_user_data_v0(encode_sticky_user_data([("t", 1)], 5)) == [("t", 1)]  # generation ignored
    assert decode_sticky_user_data_v0(encode_sticky_user_data([], None)) == []
    with pytest.raises(AssignorError, match="SchemaException"):
        decode_sticky_user_data_v0(b"\xff\xff\xff\xff")


def test_sticky_c1_leaves_general_before_2_5_1_constrained_after() -> None:
    # StickyAssignor's javadoc "C1 leaves": the general algorithm (2.3-2.5.0) gives the javadoc's sets;
    # the 2.5.1 constrained path keeps C0/C2 and deals t0-1, t2-0, t3-1 by member id (reference V7)
    topics = ["t0", "t1", "t2", "t3"]
    members = [
        MemberSubscription("C0", topics, encode_sticky_user_data([("t0", 0), ("t1", 1), ("t3", 0)], 1)),
        MemberSubscription("C2", topics, encode_sticky_user_data([("t1", 0), ("t2", 1)], 1)),
    ]
    general = assign("sticky", dict.fromkeys(topics, 2), members, kafka_version="2.5.0")
    assert {c: set(ps) for c, ps in general.items()} == {
        "C0": {("t0", 0), ("t1", 1), ("t3", 0), ("t2", 0)},
        "C2": {("t1", 0), ("t2", 1), ("t0", 1), ("t3", 1)},
    }
    constrained = assign("sticky", dict.fromkeys(topics, 2), members, kafka_version="2.6.3")
    assert constrained == {
        "C0": [("t0", 0), ("t1", 1), ("t3", 0), ("t0", 1)],
        "C2": [("t1", 0), ("t2", 1), ("t2", 0), ("t3", 1)],
    }


def test_constrained_2_8_1_invalidates_partitions_claimed_twice_in_one_generation() -> None:
    # KAFKA-12984 (backported to 2.8.1): before, both claimants keep topic-0; after, neither does
    members = [
        MemberSubscription("c1", ["topic"], encode_sticky_user_data([("topic", 0), ("topic", 1)], 3)),
        MemberSubscription("c2", ["topic"], encode_sticky_user_data([("topic", 0), ("topic", 2)], 3)),
        MemberSubscription("c3", ["topic"]),
    ]
    before = assign("sticky", {"topic": 3}, members, kafka_version="2.8.0")
    assert ("topic", 0) in before["c1"] and ("topic", 0) in before["c2"]  # assigned twice
    after = assign("sticky", {"topic": 3}, members, kafka_version="2.8.1")
    assert after == {"c1": [("topic", 1)], "c2": [("topic", 2)], "c3": [("topic", 0)]}


def test_cooperative_sticky_withholds_moving_partitions_and_reads_no_generation_before_2_8_1() -> None:
    owned = [("t", 0), ("t", 1), ("t", 2), ("t", 3)]
    members = [
        MemberSubscription("a", ["t"], encode_cooperative_user_data(4), tuple(owned)),
        MemberSubscription("b", ["t"]),
    ]
    for version in ("2.4.0", "2.6.3", "2.8.2"):
        result = assign("cooperative-sticky", {"t": 4}, members, kafka_version=version)
        assert len(result["a"]) == 2 and result["b"] == []  # b's two partitions wait for a to revoke them


def test_general_path_2_5_1_loses_the_user_data_read_by_the_equality_check() -> None:
    # 2.5.1-2.8.x read each member's user data in allSubscriptionsEqual, moving the ByteBuffer's position;
    # when a later member's subscription differs, the general path reads those members' user data again
    # and finds it empty. In HashMap order consumer-b is read first: 2.5.0 keeps its t-1 first, 2.6.3
    # forgets it owned anything and hands it u-0 first.
    members = [
        MemberSubscription("consumer-a", ["t"], encode_sticky_user_data([("t", 2)], 2)),
        MemberSubscription("consumer-b", ["t", "u"], encode_sticky_user_data([("t", 0), ("t", 1)], 2)),
    ]
    assert assign("sticky", {"t": 3, "u": 1}, members, kafka_version="2.5.0")["consumer-b"] == [("t", 1), ("u", 0)]
    assert assign("sticky", {"t": 3, "u": 1}, members, kafka_version="2.6.3")["consumer-b"] == [("u", 0), ("t", 1)]


def test_user_data_left_after_one_read() -> None:
    v1 = encode_sticky_user_data([("t", 1)], 7)
    v0 = encode_sticky_user_data([("t", 1)], None)
    assert sticky_user_data_left_after_read(v1) == b""
    assert sticky_user_data_left_after_read(v1 + b"\x00") == b"\x00"
    assert sticky_user_data_left_after_read(v0) == b""
    assert sticky_user_data_left_after_read(None) is None
    assert sticky_user_data_left_after_read(b"\xff") == b"\xff"
    assert cooperative_user_data_left_after_read(encode_cooperative_user_data(3)) == b""
    assert cooperative_user_data_left_after_read(b"\x01") == b"\x01"


def test_revisions_by_version() -> None:
    original = StickyRevisionBefore3_0(False, False, False, False, generations=False)
    assert sticky_revision("0.11.0.0") == sticky_revision("1.1.1") == sticky_revision("2.2.2") == original
    assert sticky_revision("2.3.0") == sticky_revision("2.3.1") == StickyRevisionBefore3_0(False, False, False, False)
    assert sticky_revision("2.5.0") == StickyRevisionBefore3_0(True, False, False, False)
    assert sticky_revision("2.5.1") == StickyRevisionBefore3_0(True, True, False, False)
    assert sticky_revision("2.8.0") == StickyRevisionBefore3_0(True, True, False, False)
    assert sticky_revision("2.8.1") == StickyRevisionBefore3_0(True, True, True, True)
    assert isinstance(sticky_revision("3.0.0"), StickyRevision)


def test_what_stays_unsupported() -> None:
    members = [MemberSubscription("a", ["t"])]
    with pytest.raises(UnsupportedKafkaVersion, match="KIP-54"):
        assign("sticky", {"t": 1}, members, kafka_version="0.10.2.2")
    with pytest.raises(UnsupportedKafkaVersion, match="KIP-429"):
        assign("cooperative-sticky", {"t": 1}, members, kafka_version="2.3.1")
    with pytest.raises(UnsupportedKafkaVersion, match="consumer group protocol"):
        assign("range", {"t": 1}, members, kafka_version="0.8.2.2")
