"""The assignors of kafka-python, called as the library's own code: a leader that ran kafka-python computed its
group's assignment with these classes, not with Kafka's Java ones.

kafka-python's `range` and `roundrobin` follow Java's (without static members before 3.0); its `sticky` is
its own port of an older Java algorithm (no `constrainedAssign`, JoinGroup order, Python set order), so only
kafka-python itself reproduces what such a leader stored. The leader (`ConsumerCoordinator._perform_assignment`)
hands its assignor the JoinGroup members as a dict in the order the broker sent them, which is the order the
GroupMetadata record keeps, and cluster metadata in which, for a subscription by topic names, the group's
subscribed topics are known. The replay does the same: members in record order, a cluster of the subscribed
topics only, the member's subscription user data as it was sent.

kafka-python is a dependency of coordinator_core (its codecs read compressed batches), so the classes are the
installed version's (:data:`KAFKA_PYTHON_VERSION`): a leader of another version is replayed with this one, and
the replay says which.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from coordinator_core.assignors._model import Assignment, AssignorError, MemberSubscription


def _installed_version() -> str:
    import kafka

    return str(kafka.__version__)


#: The installed kafka-python, whose assignor classes replay a kafka-python leader.
KAFKA_PYTHON_VERSION = _installed_version()


def _assignor_classes() -> dict[str, Any]:
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    # 2.2.15 (the pinned version) has these three; cooperative-sticky came with 3.0.
    return {c.name: c for c in (RangePartitionAssignor, RoundRobinPartitionAssignor, StickyPartitionAssignor)}


_CLASSES: dict[str, Any] | None = None


def kafka_python_protocols() -> frozenset[str]:
    """The protocol names the installed kafka-python has an assignor for."""
    global _CLASSES  # noqa: PLW0603 - imported once, on first use
    if _CLASSES is None:
        _CLASSES = _assignor_classes()
    return frozenset(_CLASSES)


class _SubscribedTopics:
    """The two calls kafka-python's assignors make on its `ClusterMetadata`, answered for the group's topics."""

    def __init__(self, partitions_per_topic: Mapping[str, int]) -> None:
        self._counts = dict(partitions_per_topic)

    def topics(self, exclude_internal_topics: bool = True) -> set[str]:
        return set(self._counts)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        count = self._counts.get(topic)
        return None if count is None else set(range(count))


def assign_kafka_python(protocol: str, partitions_per_topic: Mapping[str, int],
                        subscriptions: Sequence[MemberSubscription]) -> Assignment:
    """What the installed kafka-python's `protocol` assignor gives these members (in JoinGroup order).

    Only the members' subscribed topics are in the cluster the assignor sees, as for a leader subscribed by
    topic names. Raises AssignorError when kafka-python has no such assignor or its code fails.
    """
    from kafka.coordinator.protocol import ConsumerProtocolMemberMetadata

    if protocol not in kafka_python_protocols():
        raise AssignorError(f"kafka-python {KAFKA_PYTHON_VERSION} has no {protocol!r} assignor")
    assert _CLASSES is not None
    subscribed = {t for s in subscriptions for t in s.topics}
    cluster = _SubscribedTopics({t: n for t, n in partitions_per_topic.items() if t in subscribed})
    members = {s.member_id: ConsumerProtocolMemberMetadata(0, list(s.topics), s.user_data or b"")
               for s in subscriptions}
    try:
        out = _CLASSES[protocol].assign(cluster, members)
    except Exception as error:  # the library's own failure is the replay's answer, said as such
        raise AssignorError(f"kafka-python {KAFKA_PYTHON_VERSION} {protocol}: "
                            f"{type(error).__name__}: {error}") from error
    return {member_id: [(topic, int(p)) for topic, partitions in assignment.assignment for p in partitions]
            for member_id, assignment in out.items()}
