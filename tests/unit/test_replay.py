"""Replaying a recorded GroupMetadata assignment, and the what-if replay of a history under another
assignor. Recorded assignments here are written by hand from the Range/RoundRobin rules (Kafka's own
assignors are checked against the JVM in tests/oracle); the tests check the comparison and its reasons."""

from __future__ import annotations

import random

import coordinator_core as cc
from coordinator_core import messages as m
from coordinator_core.assignors import MemberSubscription
from coordinator_core.replay import GenerationMembers, infer_partition_counts, replay_generation, whatif_history


def member(member_id: str, topics: tuple[str, ...], assigned: tuple[tuple[str, int], ...], *,
           instance: str | None = None, user_data: bytes | None = None,
           owned: tuple[tuple[str, int], ...] = (), generation: int = -1) -> m.MemberMetadata:
    sub = cc.encode_subscription(cc.Subscription(3, topics, user_data, tuple(cc.TopicPartition(*x) for x in owned),
                                                 generation, None))
    asg = cc.encode_assignment(cc.Assignment(3, tuple(cc.TopicPartition(*x) for x in assigned), None))
    return m.MemberMetadata(member_id, instance, "client", "/10.0.0.1", 300000, 45000, sub, asg)


def group(protocol: str, *members: m.MemberMetadata, protocol_type: str = "consumer") -> m.GroupMetadataValue:
    return m.GroupMetadataValue(protocol_type, 5, protocol, members[0].member_id if members else None, -1, members)


def test_range_record_matches() -> None:
    # Range: 5 partitions of t over members a, b (sorted by member id): a gets 3, b gets 2.
    g = group("range", member("b", ("t",), (("t", 3), ("t", 4))), member("a", ("t",), (("t", 0), ("t", 1), ("t", 2))))
    r = replay_generation(g)
    assert (r.status, r.reason, r.partition_counts, r.partition_counts_inferred) == ("match", None, {"t": 5}, True)
    assert {x.member_id: x.replayed for x in r.members} == {"a": (("t", 0), ("t", 1), ("t", 2)),
                                                            "b": (("t", 3), ("t", 4))}


def test_roundrobin_record_matches_with_given_partition_counts() -> None:
    # RoundRobin over t0 (2) and t1 (1), members a, b: a t0-0, t1-0; b t0-1.
    g = group("roundrobin", member("a", ("t0", "t1"), (("t0", 0), ("t1", 0))), member("b", ("t0", "t1"), (("t0", 1),)))
    r = replay_generation(g, partition_counts={"t0": 2, "t1": 1})
    assert (r.status, r.partition_counts_inferred) == ("match", False)


def test_mismatch_lists_the_differing_partitions() -> None:
    g = group("range", member("a", ("t",), (("t", 0), ("t", 2))), member("b", ("t",), (("t", 1), ("t", 3))))
    r = replay_generation(g)
    assert (r.status, r.reason) == ("mismatch", "unexplained")
    by_member = {x.member_id: x for x in r.members}
    assert (by_member["a"].missing, by_member["a"].extra) == ((("t", 2),), (("t", 1),))
    assert (by_member["b"].missing, by_member["b"].extra) == ((("t", 1),), (("t", 2),))


def test_reasons_for_records_that_cannot_be_replayed() -> None:
    a = member("a", ("t",), (("t", 0),))
    assert replay_generation(group("my-custom", a)).reason == "custom_assignor"
    assert replay_generation(group("default", a, protocol_type="connect")).reason == "not_consumer_protocol"
    assert replay_generation(m.GroupMetadataValue("consumer", 3, None, None, -1, ())).reason == "inputs_missing"
    broken = m.MemberMetadata("a", None, "c", "h", 1, 1, b"\x00\x03\x00", b"")
    r = replay_generation(group("range", broken))
    assert (r.status, r.reason) == ("not_replayable", "inputs_missing")
    assert "members[a].subscription" in (r.detail or "")


def test_other_client_version_is_named_when_it_reproduces_the_record() -> None:
    # Find inputs where the sticky assignor of kafka-clients 3.3.2 and 4.4.0 disagree, record the 3.3.2
    # result, and expect the replay to name 3.3.2. (Both revisions are checked against Kafka's own classes
    # by the assignor oracle tests.)
    rnd = random.Random(3)
    for _ in range(3000):
        counts = {"t0": rnd.randint(1, 6), "t1": rnd.randint(1, 6)}
        subs = []
        for i in range(rnd.randint(2, 4)):
            topics = tuple(sorted(rnd.sample(["t0", "t1"], rnd.randint(1, 2))))
            owned = tuple((t, p) for t in topics for p in range(counts[t]) if rnd.random() < 0.4)
            subs.append(MemberSubscription(f"m{i}", topics, None, owned, rnd.choice([1, 2]), None, None))
        old = cc.assign("cooperative-sticky", counts, subs, kafka_version="3.3.2")
        new = cc.assign("cooperative-sticky", counts, subs, kafka_version="4.4.0")
        if {k: set(v) for k, v in old.items()} != {k: set(v) for k, v in new.items()}:
            break
    else:
        raise AssertionError("no input separates the two sticky revisions")
    members = tuple(member(s.member_id, tuple(s.topics), tuple(old[s.member_id]), owned=tuple(s.owned_partitions),
                           generation=s.generation or -1) for s in subs)
    r = replay_generation(group("cooperative-sticky", *members), partition_counts=counts)
    assert (r.status, r.reason, r.matching_version) == ("mismatch", "other_client_version", "3.3.2")


def test_infer_partition_counts() -> None:
    subs = [MemberSubscription("a", ("t", "u", "v"))]
    assert infer_partition_counts(subs, [[("t", 4), ("u", 0)], [("t", 1)]]) == {"t": 5, "u": 1, "v": 0}


def history() -> list[GenerationMembers]:
    def ms(*ids: str) -> tuple[MemberSubscription, ...]:
        return tuple(MemberSubscription(i, ("t",)) for i in ids)
    return [GenerationMembers(1, ms("a"), {"t": 6}), GenerationMembers(2, ms("a", "b"), {"t": 6}),
            GenerationMembers(3, ms("a", "b", "c"), {"t": 6}), GenerationMembers(4, ms("a", "c"), {"t": 6})]


def test_whatif_eager_range_pauses_everything_owned() -> None:
    steps = whatif_history(history(), "range")
    # range on 6 partitions: [a:6] -> [a:0-2, b:3-5] -> [a:0,1 b:2,3 c:4,5] -> [a:0-2, c:3-5]
    assert [dict(s.assignment) for s in steps][-1] == {"a": (("t", 0), ("t", 1), ("t", 2)),
                                                       "c": (("t", 3), ("t", 4), ("t", 5))}
    assert [(s.partitions_moved, s.balance, s.paused_partitions) for s in steps] == [
        (0, 0, 0),  # first generation: nothing owned before
        (3, 0, 6),  # b takes 3-5 from a; a revokes all 6
        (3, 0, 6),  # a:0,1 b:2,3 c:4,5 - partition 2 goes a->b, 4 and 5 b->c; a and b revoke 3 each
        (2, 0, 4),  # b left: its 2 goes to a, its 3 to c; a and c revoke the 2 each still owned
    ]


def test_whatif_cooperative_pauses_only_what_moves() -> None:
    steps = whatif_history(history(), "cooperative-sticky")
    assert all(s.error is None for s in steps)
    assert [s.balance for s in steps] == [0, 0, 0, 0]
    assert [s.paused_partitions for s in steps] == [s.partitions_moved for s in steps]
    # sticky keeps what it can: growing 1 -> 2 -> 3 members moves 3 then 2 partitions; b leaving moves
    # only b's 2 partitions.
    assert [s.partitions_moved for s in steps] == [0, 3, 2, 2]
