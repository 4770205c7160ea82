"""Golden cases transcribed from Apache Kafka's own assignor tests (inputs and expected outputs as facts):
clients/src/test/java/org/apache/kafka/clients/consumer/{RangeAssignorTest, RoundRobinAssignorTest,
StickyAssignorTest}.java, .../internals/AbstractStickyAssignorTest.java and the StickyAssignor javadoc,
as listed in shared/reference/assignors.md section 9 (vectors V1-V11, several verified there on a JVM)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from coordinator_core.assignors import (
    MemberSubscription,
    UnsupportedKafkaVersion,
    assign,
    decode_cooperative_user_data,
    decode_sticky_user_data,
    encode_cooperative_user_data,
    encode_sticky_user_data,
)

TP = tuple[str, int]


def _tps(text: str) -> list[TP]:
    """"t1-0, t1-3" -> [("t1", 0), ("t1", 3)] (Kafka's test strings)."""
    out: list[TP] = []
    for item in text.split(","):
        topic, _, p = item.strip().rpartition("-")
        out.append((topic, int(p)))
    return out


def _sets(assignment: Mapping[str, Sequence[TP]]) -> dict[str, set[TP]]:
    return {m: set(ps) for m, ps in assignment.items()}


def test_v1_range_javadoc() -> None:
    members = [MemberSubscription("C0", ["t0", "t1"]), MemberSubscription("C1", ["t0", "t1"])]
    assert _sets(assign("range", {"t0": 3, "t1": 3}, members)) == {
        "C0": set(_tps("t0-0, t0-1, t1-0, t1-1")), "C1": set(_tps("t0-2, t1-2"))}


@pytest.mark.parametrize("version", ["2.4.0", "3.4.1", "4.4.0"])
def test_v2_range_static_member_first(version: str) -> None:
    members = [MemberSubscription("consumer-b", ["topic1", "topic2"], group_instance_id="instance1"),
               MemberSubscription("consumer-a", ["topic1", "topic2"])]
    result = assign("range", {"topic1": 3, "topic2": 3}, members, kafka_version=version)
    assert _sets(result) == {"consumer-b": set(_tps("topic1-0, topic1-1, topic2-0, topic2-1")),
                             "consumer-a": set(_tps("topic1-2, topic2-2"))}


def _rack_layout(counts: dict[str, int], replication: int) -> dict[TP, list[str]]:
    """AbstractPartitionAssignorTest.partitionInfos: replica j of partition p of the k-th topic is on
    broker (p + j + offset_k) % 3, offset_k = partitions of the topics before it; brokers on racks a, b, c."""
    racks = ["a", "b", "c"]
    layout: dict[TP, list[str]] = {}
    offset = 0
    for topic, n in counts.items():
        for p in range(n):
            layout[(topic, p)] = [racks[(p + j + offset) % 3] for j in range(replication)]
        offset += n
    return layout


@pytest.mark.parametrize(
    ("replication", "expected"),
    [
        (1, ["t1-0, t1-3, t2-0, t2-3, t2-6", "t1-1, t1-4, t2-1, t2-4, t3-0", "t1-2, t1-5, t2-2, t2-5, t3-1"]),
        (3, ["t1-0, t1-1, t2-0, t2-1, t2-2, t3-0", "t1-2, t1-3, t2-3, t2-4, t3-1", "t1-4, t1-5, t2-5, t2-6"]),
    ],
)
def test_v3_range_rack_aware_uniform_subscription(replication: int, expected: list[str]) -> None:
    counts = {"t1": 6, "t2": 7, "t3": 2}
    members = [MemberSubscription(f"consumer{i}", ["t1", "t2", "t3"], rack_id=r) for i, r in enumerate("abc")]
    result = assign("range", counts, members, partition_racks=_rack_layout(counts, replication))
    assert result == {f"consumer{i}": _tps(e) for i, e in enumerate(expected)}


def test_v4_roundrobin_mixed_topics() -> None:
    members = [MemberSubscription("consumer1", ["topic1"]), MemberSubscription("consumer2", ["topic1", "topic2"]),
               MemberSubscription("consumer3", ["topic1"])]
    assert assign("roundrobin", {"topic1": 3, "topic2": 2}, members) == {
        "consumer1": _tps("topic1-0"), "consumer2": _tps("topic1-1, topic2-0, topic2-1"),
        "consumer3": _tps("topic1-2")}


def test_v5_roundrobin_static_member_first() -> None:
    members = [MemberSubscription("consumer-b", ["topic1", "topic2"], group_instance_id="instance1"),
               MemberSubscription("consumer-a", ["topic1", "topic2"])]
    assert assign("roundrobin", {"topic1": 3, "topic2": 3}, members) == {
        "consumer-b": _tps("topic1-0, topic1-2, topic2-1"), "consumer-a": _tps("topic1-1, topic2-0, topic2-2")}


T4 = ["t0", "t1", "t2", "t3"]
V6 = {"C0": _tps("t0-0, t1-1, t3-0"), "C1": _tps("t0-1, t2-0, t3-1"), "C2": _tps("t1-0, t2-1")}


@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky"])
def test_v6_sticky_fresh_constrained(name: str) -> None:
    members = [MemberSubscription(c, T4) for c in ["C0", "C1", "C2"]]
    assert _sets(assign(name, dict.fromkeys(T4, 2), members)) == {m: set(ps) for m, ps in V6.items()}


def test_v7_sticky_member_leaves_constrained_path_not_the_javadoc_one() -> None:
    members = [MemberSubscription(c, T4, user_data=encode_sticky_user_data(V6[c], 1), generation=1)
               for c in ["C0", "C2"]]
    assert _sets(assign("sticky", dict.fromkeys(T4, 2), members)) == {
        "C0": set(_tps("t0-0, t1-1, t3-0, t0-1")), "C2": set(_tps("t1-0, t2-1, t2-0, t3-1"))}


def _owning(name: str, owned: dict[str, list[TP]], topics: list[str], generation: int | dict[str, int] = 1,
            ) -> list[MemberSubscription]:
    gens = generation if isinstance(generation, dict) else dict.fromkeys(owned, generation)
    if name == "sticky":
        return [MemberSubscription(m, topics, user_data=encode_sticky_user_data(ps, gens[m]), generation=gens[m])
                for m, ps in owned.items()]
    return [MemberSubscription(m, topics, owned_partitions=ps, generation=gens[m]) for m, ps in owned.items()]


def test_v8_hash_order_decides_who_keeps_max_quota() -> None:
    owned = {"consumer1": _tps("topic1-0, topic2-0"), "consumer2": _tps("topic1-1, topic2-1"), "consumer3": []}
    result = assign("sticky", {"topic1": 2, "topic2": 2}, _owning("sticky", owned, ["topic1", "topic2"]))
    assert _sets(result) == {"consumer1": {("topic1", 0)}, "consumer2": {("topic1", 1), ("topic2", 1)},
                             "consumer3": {("topic2", 0)}}
    # cooperative: topic2-0 is transferring from consumer1 to consumer3, so it is withheld this round
    coop = assign("cooperative-sticky", {"topic1": 2, "topic2": 2},
                  _owning("cooperative-sticky", owned, ["topic1", "topic2"]))
    assert _sets(coop) == {"consumer1": {("topic1", 0)}, "consumer2": {("topic1", 1), ("topic2", 1)},
                           "consumer3": set()}


@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky"])
def test_v9_member_owning_min_quota_gets_the_extra(name: str) -> None:
    owned = {"consumer1": _tps("topic1-0, topic2-1"), "consumer2": _tps("topic1-1, topic2-2")}
    result = assign(name, {"topic1": 2, "topic2": 3}, _owning(name, owned, ["topic1", "topic2"]))
    assert _sets(result) == {"consumer1": set(_tps("topic1-0, topic2-1, topic2-0")),
                             "consumer2": set(_tps("topic1-1, topic2-2"))}


def test_v10_partition_claimed_twice_in_one_generation_is_invalidated() -> None:
    owned = {"consumer1": _tps("topic-0, topic-1"), "consumer2": _tps("topic-0, topic-2"), "consumer3": []}
    result = assign("sticky", {"topic": 3}, _owning("sticky", owned, ["topic"]))
    assert _sets(result) == {"consumer1": {("topic", 1)}, "consumer2": {("topic", 2)},
                             "consumer3": {("topic", 0)}}
    coop = assign("cooperative-sticky", {"topic": 3}, _owning("cooperative-sticky", owned, ["topic"]))
    assert _sets(coop) == {"consumer1": {("topic", 1)}, "consumer2": {("topic", 2)}, "consumer3": set()}


@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky"])
def test_v11_stale_generation_claims_are_dropped(name: str) -> None:
    claim = _tps("topic-0, topic-2, topic2-1")
    owned = {"consumer1": claim, "consumer2": claim}
    members = _owning(name, owned, ["topic", "topic2"], {"consumer1": 10, "consumer2": 9})
    assert _sets(assign(name, {"topic": 3, "topic2": 3}, members)) == {
        "consumer1": set(claim), "consumer2": set(_tps("topic-1, topic2-0, topic2-2"))}


def test_v12_cooperative_rounds_never_hand_an_owned_partition_directly() -> None:
    """CooperativeStickyAssignorTest.verifyValidityAndBalance: feed each result back as owned partitions;
    no round may give a partition owned by one member to another; it converges."""
    topics = ["t1", "t2", "t3"]
    counts = {"t1": 5, "t2": 7, "t3": 3}
    owned: dict[str, list[TP]] = {"a": [], "b": [], "c": []}
    subs = {"a": topics, "b": ["t1", "t2"], "c": ["t2", "t3"]}
    for round_ in range(1, 6):
        members = [MemberSubscription(m, subs[m], owned_partitions=owned[m], generation=round_) for m in owned]
        result = assign("cooperative-sticky", counts, members)
        for m, ps in result.items():
            for tp in ps:
                assert not any(tp in owned[o] for o in owned if o != m)
        revoked = any(set(owned[m]) - set(result[m]) for m in owned)
        owned = {m: list(ps) for m, ps in result.items()}
        if not revoked and round_ > 1:
            break
    assigned = [tp for ps in owned.values() for tp in ps]
    assert sorted(assigned) == sorted((t, p) for t, n in counts.items() for p in range(n))
    assert round_ <= 4


def test_sticky_user_data_round_trip_and_fallbacks() -> None:
    data = encode_sticky_user_data(_tps("t0-0, t1-1, t0-2"), 7)
    assert decode_sticky_user_data(data) == (_tps("t0-0, t0-2, t1-1"), 7)
    assert decode_sticky_user_data(encode_sticky_user_data(_tps("t0-0"), None)) == ([("t0", 0)], None)  # V0
    assert decode_sticky_user_data(None) == ([], None)
    assert decode_sticky_user_data(b"") == ([], None)
    assert decode_sticky_user_data(b"\xff\xff") == ([], -1)
    assert decode_cooperative_user_data(encode_cooperative_user_data(12)) == 12
    assert decode_cooperative_user_data(b"\x01") == -1
    assert decode_cooperative_user_data(None) is None


def test_versions_without_an_implementation_are_refused() -> None:
    members = [MemberSubscription("a", ["t"])]
    # no sticky assignor before 0.11 (KIP-54); no consumer group protocol before 0.9
    with pytest.raises(UnsupportedKafkaVersion):
        assign("sticky", {"t": 1}, members, kafka_version="0.10.2")
    with pytest.raises(UnsupportedKafkaVersion):
        assign("range", {"t": 1}, members, kafka_version="0.8.2")
    with pytest.raises(ValueError, match="unknown assignor"):
        assign("nope", {"t": 1}, members)
    with pytest.raises(ValueError, match="twice"):
        assign("range", {"t": 1}, members * 2)
