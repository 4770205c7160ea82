"""What to change for each cause of a rebalance, and which cause stands for a group's rebalances.

The audit report shows, next to every cause, the consumer or broker settings an operator would look at
first. The table is here, next to the cause classes (``coordinator_core.logs.events.CAUSE_CLASSES``), so
that a new cause class comes with its advice and a test catches one without. Setting names are the Java
client's and broker's (``max.poll.interval.ms``); kafka-python spells the same settings with underscores
(``max_poll_interval_ms``), librdkafka like Java.

>>> CAUSE_ADVICE["poll_timeout"].settings
('max.poll.interval.ms', 'max.poll.records')
>>> dominant_cause({"new_member": 5, "poll_timeout": 3, "member_left": 2}, {"poll_timeout": 3})
'poll_timeout'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from coordinator_core.history.model import UNKNOWN_CAUSE

#: Causes that are failures, as opposed to the joins and leaves that follow them: a group's or storm's
#: dominant cause is its most frequent failure when it has one (a crash loop is session timeouts, not
#: new members). The storm fold (``coordinator_core.storms``) ranks a storm's causes with it.
FAILURE_CAUSES: Final[frozenset[str]] = frozenset({
    "session_timeout", "poll_timeout", "not_rejoined_in_time", "member_evicted", "static_member_fenced",
    "coordinator_failover", "coordinator_error", "group_over_capacity",
})


@dataclass(frozen=True)
class Advice:
    """What to do about one cause: a sentence for the operator and the exact setting names it names
    (consumer settings unless the sentence says broker)."""

    text: str
    settings: tuple[str, ...] = ()


#: One entry per cause class (and ``unknown``); ``group_created`` is a group's birth, not a rebalance.
CAUSE_ADVICE: Final[Mapping[str, Advice]] = {
    "poll_timeout": Advice(
        "The consumer spent longer than max.poll.interval.ms between two poll() calls and left the group. "
        "Raise max.poll.interval.ms above the slowest batch's processing time, or lower max.poll.records so "
        "each batch is done in time.", ("max.poll.interval.ms", "max.poll.records")),
    "session_timeout": Advice(
        "The coordinator heard no heartbeat within session.timeout.ms: a crashed or frozen consumer (long "
        "GC pauses, CPU starvation, network). Look at GC logs and restarts; raise session.timeout.ms (keep "
        "heartbeat.interval.ms at most a third of it). KIP-848 groups take the broker's "
        "group.consumer.session.timeout.ms.", ("session.timeout.ms", "heartbeat.interval.ms")),
    "not_rejoined_in_time": Advice(
        "A member did not rejoin within the rebalance timeout (the Java consumer's max.poll.interval.ms): it "
        "was busy processing when the rebalance began. Raise max.poll.interval.ms or lower max.poll.records.",
        ("max.poll.interval.ms", "max.poll.records")),
    "member_evicted": Advice(
        "The client was told its member id or generation is no longer valid: it was removed after a session "
        "or poll timeout. Check session.timeout.ms and max.poll.interval.ms against GC pauses and batch "
        "processing time.", ("session.timeout.ms", "max.poll.interval.ms")),
    "new_member": Advice(
        "A member joined. Expected when scaling out; when the same clients come back again and again "
        "(restarts, crash loops, rolling deploys), give each instance a stable group.instance.id (static "
        "membership): a restart within session.timeout.ms then causes no rebalance.",
        ("group.instance.id", "session.timeout.ms")),
    "member_left": Advice(
        "A member left (LeaveGroup), typically on shutdown or deploy. With static membership "
        "(group.instance.id) a restarting member does not leave; with the cooperative-sticky assignor "
        "(partition.assignment.strategy) the others keep consuming their partitions during the rebalance.",
        ("group.instance.id", "partition.assignment.strategy")),
    "metadata_change": Advice(
        "The subscription or topic metadata changed (partitions added, a topic matching a pattern created). "
        "Expected after such changes; frequent ones point at a pattern subscription that matches churning "
        "topics. Changes are noticed every metadata.max.age.ms.", ("metadata.max.age.ms",)),
    "leader_rejoin": Advice(
        "The group leader rejoined (its metadata or subscription changed, or it restarted). A restarting "
        "leader rebalances no more with static membership (group.instance.id).", ("group.instance.id",)),
    "static_member_replaced": Advice(
        "A static member restarted with the same group.instance.id; usually absorbed without moving "
        "partitions. If two live instances share an id they replace each other: make group.instance.id "
        "unique per instance.", ("group.instance.id",)),
    "static_member_fenced": Advice(
        "A second consumer used a group.instance.id already in the group and was fenced: two instances "
        "share one id. Make group.instance.id unique per instance.", ("group.instance.id",)),
    "coordinator_failover": Advice(
        "The group coordinator moved (broker restart or leadership change of the __consumer_offsets "
        "partition). Nothing to change on the consumers; look at the brokers' health and restarts."),
    "coordinator_error": Advice(
        "The coordinator answered with an error (not available, not coordinator, loading). Look at the "
        "brokers' logs for the __consumer_offsets partition of the group."),
    "group_empty_or_dead": Advice(
        "Every member left: the application stopped, or all instances restarted together. Expected on "
        "shutdown; a rolling restart with static membership (group.instance.id) keeps the group alive.",
        ("group.instance.id",)),
    "offsets_expired_or_deleted": Advice(
        "Committed offsets expired or were deleted while the group was empty; consumers restart from "
        "auto.offset.reset. The broker keeps them for offsets.retention.minutes after the group empties.",
        ("offsets.retention.minutes", "auto.offset.reset")),
    "rebalance_in_progress": Advice(
        "This client learned that another member started the rebalance: the cause is that member's (see "
        "the group's other rebalances)."),
    "cooperative_second_round": Advice(
        "The second round of an incremental cooperative rebalance, which assigns the partitions revoked in "
        "the first: expected with cooperative-sticky, nothing to change."),
    "group_over_capacity": Advice(
        "The group reached the broker's group.max.size and refused a member. Raise group.max.size (broker) "
        "or run fewer consumers.", ("group.max.size",)),
    "group_protocol_migration": Advice(
        "The group moved between the classic and the KIP-848 consumer protocol (the consumers' "
        "group.protocol). Expected once during a migration; repeated ones mean members with different "
        "group.protocol settings.", ("group.protocol",)),
    UNKNOWN_CAUSE: Advice(
        "Neither the logs nor the records explain this rebalance (same members, subscriptions and "
        "assignment). Archiving the coordinator's broker logs with the segments usually names the cause."),
}

def advice_for(cause: str | None) -> Advice | None:
    """The advice for a cause class (None for a group's creation or a cause it does not know)."""
    return CAUSE_ADVICE.get(cause or UNKNOWN_CAUSE)


def dominant_cause(causes: Mapping[str, int], failures: Mapping[str, int]) -> str | None:
    """The cause that stands for a set of rebalances: the most frequent failure (``failures``: rebalances
    per failure cause, counting each rebalance's every cause) when there is one, else the most frequent
    first cause (``causes``); ties broken by name, so the answer is stable. The storm fold ranks a
    storm's causes the same way, so a group and its storm name the same cause."""
    ranked = {c: n for c, n in failures.items() if c in FAILURE_CAUSES and n > 0} or {
        c: n for c, n in causes.items() if n > 0}
    if not ranked:
        return None
    return min(ranked, key=lambda c: (-ranked[c], c))
