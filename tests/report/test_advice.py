"""The cause -> advice table covers every cause class and names only real Kafka settings, and a group's
dominant cause is ranked the way the storm fold ranks a storm's."""

from __future__ import annotations

from coordinator_core.advice import CAUSE_ADVICE, advice_for, dominant_cause
from coordinator_core.logs.events import CAUSE_CLASSES

#: Consumer and broker settings as Apache Kafka's documentation spells them (consumer configs; broker:
#: offsets.retention.minutes, group.max.size).
KAFKA_SETTINGS = {
    "max.poll.interval.ms", "max.poll.records", "session.timeout.ms", "heartbeat.interval.ms",
    "group.instance.id", "partition.assignment.strategy", "metadata.max.age.ms", "auto.offset.reset",
    "group.protocol", "offsets.retention.minutes", "group.max.size",
}


def test_every_cause_class_has_advice_with_real_setting_names() -> None:
    assert set(CAUSE_ADVICE) == set(CAUSE_CLASSES) | {"unknown"}
    named = {s for advice in CAUSE_ADVICE.values() for s in advice.settings}
    assert named <= KAFKA_SETTINGS, named - KAFKA_SETTINGS
    for advice in CAUSE_ADVICE.values():
        assert all(s in advice.text for s in advice.settings), advice  # the sentence explains each setting


def test_the_advice_the_issue_asks_for() -> None:
    assert advice_for("poll_timeout").settings == ("max.poll.interval.ms", "max.poll.records")  # type: ignore[union-attr]
    session = advice_for("session_timeout")
    assert session is not None and {"session.timeout.ms", "heartbeat.interval.ms"} <= set(session.settings)
    assert "GC" in session.text
    assert "group.instance.id" in advice_for("new_member").settings  # type: ignore[union-attr]
    leave = advice_for("member_left")
    assert leave is not None and "cooperative-sticky" in leave.text
    assert "partition.assignment.strategy" in leave.settings
    assert advice_for(None) is CAUSE_ADVICE["unknown"] and advice_for("group_created") is None


def test_dominant_cause_ranks_failures_first() -> None:
    # the poll-timeout scenario: joins outnumber the failures, the failure is the cause
    assert dominant_cause({"new_member": 5, "poll_timeout": 3, "member_left": 2}, {"poll_timeout": 3}) == "poll_timeout"
    # no failure: the most frequent cause; ties by name
    assert dominant_cause({"new_member": 2, "member_left": 2}, {}) == "member_left"
    assert dominant_cause({"new_member": 1}, {"session_timeout": 2, "poll_timeout": 2}) == "poll_timeout"
    assert dominant_cause({}, {}) is None
