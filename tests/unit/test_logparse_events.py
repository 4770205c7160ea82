"""Every catalogue line kind, built from Kafka's format strings per version range, parsed field by field.

Each case gives the message text as Kafka renders it (ids and groups made up) and the whole expected
event, written out by hand: a field left out of a case must come back ``None``. The last tests check that
every event type of section 10 of the reference (and every event-yielding row of the catalogue) has a case.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from coordinator_core.logs import CATALOGUE_EVENT_TYPES, LINE_KINDS, CoordinatorEvent, parse_log_line

TS = "2024-05-06 07:08:09,123"
UTC_TS = datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=timezone.utc)

GC = "kafka.coordinator.group.GroupCoordinator"
GC_0_10 = "kafka.coordinator.GroupCoordinator"
GMM = "kafka.coordinator.group.GroupMetadataManager"
GMM_0_10 = "kafka.coordinator.GroupMetadataManager"
GM = "kafka.coordinator.group.GroupMetadata"
GM_OBJ = "kafka.coordinator.group.GroupMetadata$"
NGMM = "org.apache.kafka.coordinator.group.GroupMetadataManager"
NCG = "org.apache.kafka.coordinator.group.classic.ClassicGroup"
SHARD = "org.apache.kafka.coordinator.group.GroupCoordinatorShard"
SERVICE = "org.apache.kafka.coordinator.group.GroupCoordinatorService"
RUNTIME = "org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime"
RUNTIME_3_6 = "org.apache.kafka.coordinator.group.runtime.CoordinatorRuntime"
CC = "org.apache.kafka.clients.consumer.internals.ConsumerCoordinator"
AC = "org.apache.kafka.clients.consumer.internals.AbstractCoordinator"
INV = "org.apache.kafka.clients.consumer.internals.ConsumerRebalanceListenerInvoker"
MM = "org.apache.kafka.clients.consumer.internals.ConsumerMembershipManager"
MM_3_9 = "org.apache.kafka.clients.consumer.internals.MembershipManagerImpl"
HB = "org.apache.kafka.clients.consumer.internals.ConsumerHeartbeatRequestManager"
HB_3_9 = "org.apache.kafka.clients.consumer.internals.HeartbeatRequestManager"

OLD = "[GroupCoordinator 1]: "
NEW = "[GroupCoordinator id=1 topic=__consumer_offsets partition=12] "
RT = "[GroupCoordinator id=2] "
GMP = "[GroupMetadataManager brokerId=2] "
GMP_0_10 = "[Group Metadata Manager on Broker 2]: "
CL = "[Consumer clientId=consumer-orders-svc-1, groupId=orders-svc] "

M1 = "consumer-orders-svc-1-5b0f5b53-6c2e-4a8e-9a3f-1d7c2f0e9b11"
M2 = "consumer-orders-svc-2-a41d0c77-2f8e-4d1b-8e1c-3b9f7e2a5c60"
K1 = "Jx3aP0c9Qb2yK8vW1zL5nA"
K2 = "Qm7rT2xW9eL4pZ1cV8bN3s"
NODE = "kafka-1:9092 (id: 2147483646 rack: null)"
GEN7 = f"Generation{{generationId=7, memberId='{M1}', protocol='range'}}"
POLL_TEXT = (
    "This means the time between subsequent calls to poll() was longer than the configured max.poll.interval.ms,"
    " which typically implies that the poll loop is spending too much time processing messages. You can address"
    " this either by increasing max.poll.interval.ms or by reducing the maximum size of batches returned in poll()"
    " with max.poll.records."
)

# Field sets that the prefix of a line gives, written out once.
B1 = {"broker_id": 1}
B2 = {"broker_id": 2}
N12 = {"broker_id": 1, "offsets_partition": 12}
R2 = {"broker_id": 2, "offsets_partition": 12}
CLF = {"client_id": "consumer-orders-svc-1", "group_id": "orders-svc", "protocol_type": "consumer"}
G = {"group_id": "orders-svc"}


def c(kind: str, event_type: str, message: str, logger: str, *, level: str = "INFO", **fields: Any) -> Any:
    """One case: the line kind expected to match, and the complete expected event."""
    expected = CoordinatorEvent(event_type=event_type, line_kind=kind, message=message, timestamp=UTC_TS,
                                level=level, logger=logger, **fields)
    return pytest.param(f"[{TS}] {level} {message} ({logger})", expected, id=f"{kind}-{len(CASES)}")


CASES: list[Any] = []


def add(*args: Any, **kwargs: Any) -> None:
    CASES.append(c(*args, **kwargs))


# ---- B1 / N1 rebalance prepared --------------------------------------------------------------------------
add("b1_restabilize", "REBALANCE_PREPARED", OLD + "Preparing to restabilize group orders-svc with old generation 6",
    GC_0_10, **B1, **G, generation=6)
add("b1_prepare_no_reason", "REBALANCE_PREPARED",
    OLD + "Preparing to rebalance group orders-svc with old generation 6 (__consumer_offsets-12)", GC,
    **B1, **G, generation=6, offsets_partition=12)
add("b1_prepare", "REBALANCE_PREPARED",
    OLD + "Preparing to rebalance group orders-svc in state PreparingRebalance with old generation 6"
    f" (__consumer_offsets-12) (reason: removing member {M2} on heartbeat expiration)", GC,
    **B1, **G, generation=6, offsets_partition=12, state="PreparingRebalance",
    reason=f"removing member {M2} on heartbeat expiration", member_id=M2, cause_class="session_timeout")
add("b1_prepare", "REBALANCE_PREPARED",
    OLD + "Preparing to rebalance group orders-svc in state PreparingRebalance with old generation 6"
    f" (__consumer_offsets-12) (reason: Adding new member {M1} with group instance id None; client reason:"
    " rebalance failed due to MemberIdRequiredException)", GC,
    **B1, **G, generation=6, offsets_partition=12, state="PreparingRebalance",
    reason=f"Adding new member {M1} with group instance id None; client reason: rebalance failed due to"
    " MemberIdRequiredException", client_reason="rebalance failed due to MemberIdRequiredException",
    member_id=M1, cause_class="new_member")
add("b1_prepare", "REBALANCE_PREPARED",
    OLD + "Preparing to rebalance group orders-svc in state PreparingRebalance with old generation 6"
    " (__consumer_offsets-12) (reason: Adding new member consumer-x-1-abc with group instanceid Some(inst-a))",
    GC, **B1, **G, generation=6, offsets_partition=12, state="PreparingRebalance",
    reason="Adding new member consumer-x-1-abc with group instanceid Some(inst-a)", member_id="consumer-x-1-abc",
    group_instance_id="inst-a", cause_class="new_member")
add("b1_prepare", "REBALANCE_PREPARED",
    NEW + "Preparing to rebalance group orders-svc in state PreparingRebalance with old generation 6"
    f" (reason: explicit `LeaveGroup` request for ({M2}) members.).", NGMM,
    **N12, **G, generation=6, state="PreparingRebalance",
    reason=f"explicit `LeaveGroup` request for ({M2}) members.", cause_class="member_left")
add("b1_prepare", "REBALANCE_PREPARED",
    NEW + "Preparing to rebalance group orders-svc in state PreparingRebalance with old generation 6"
    f" (reason: removing member {M2} on heartbeat expiration.).", NGMM,
    **N12, **G, generation=6, state="PreparingRebalance",
    reason=f"removing member {M2} on heartbeat expiration.", member_id=M2, cause_class="session_timeout")
add("b1_prepare", "REBALANCE_PREPARED",
    OLD + "Preparing to rebalance group orders-svc in state PreparingRebalance with old generation 6"
    f" (__consumer_offsets-12) (reason: Removing member {M2} on LeaveGroup; client reason: consumer poll timeout"
    " has expired.)", GC, **B1, **G, generation=6, offsets_partition=12, state="PreparingRebalance",
    reason=f"Removing member {M2} on LeaveGroup; client reason: consumer poll timeout has expired.",
    client_reason="consumer poll timeout has expired.", member_id=M2, cause_class="poll_timeout")
add("b1_prepare", "REBALANCE_PREPARED",
    OLD + "Preparing to rebalance group orders-svc in state PreparingRebalance with old generation 6"
    f" (__consumer_offsets-12) (reason: Leader {M1} re-joining group during Stable; client reason: not provided)",
    GC, **B1, **G, generation=6, offsets_partition=12, state="PreparingRebalance",
    reason=f"Leader {M1} re-joining group during Stable; client reason: not provided",
    client_reason="not provided", member_id=M1, cause_class="leader_rejoin")
add("b1_prepare", "REBALANCE_PREPARED",
    OLD + "Preparing to rebalance group orders-svc in state PreparingRebalance with old generation 6"
    f" (__consumer_offsets-12) (reason: Updating metadata for member {M1} during Stable; client reason:"
    " subscription has changed)", GC, **B1, **G, generation=6, offsets_partition=12, state="PreparingRebalance",
    reason=f"Updating metadata for member {M1} during Stable; client reason: subscription has changed",
    client_reason="subscription has changed", member_id=M1, cause_class="metadata_change")
add("b1_prepare", "REBALANCE_PREPARED",
    OLD + "Preparing to rebalance group orders-svc in state PreparingRebalance with old generation 6"
    " (__consumer_offsets-12) (reason: Freshly-loaded group is over capacity (GroupConfig(6000,1800000,3000,2)"
    ".groupMaxSize). Rebalacing in order to give a chance for consumers to commit offsets)", GC,
    **B1, **G, generation=6, offsets_partition=12, state="PreparingRebalance",
    reason="Freshly-loaded group is over capacity (GroupConfig(6000,1800000,3000,2).groupMaxSize). Rebalacing in"
    " order to give a chance for consumers to commit offsets", cause_class="group_over_capacity")
add("b1_prepare", "REBALANCE_PREPARED",
    NEW + "Preparing to rebalance group orders-svc in state PreparingRebalance with old generation 6"
    f" (reason: Error NOT_COORDINATOR when storing group assignmentduring SyncGroup (member: {M1}).).", NGMM,
    **N12, **G, generation=6, state="PreparingRebalance",
    reason=f"Error NOT_COORDINATOR when storing group assignmentduring SyncGroup (member: {M1}).",
    cause_class="coordinator_error")
add("b1_prepare", "REBALANCE_PREPARED",
    NEW + "Preparing to rebalance group orders-svc in state PreparingRebalance with old generation 6"
    " (reason: Downgrade group orders-svc from consumer to classic for member leaving.).", NGMM,
    **N12, **G, generation=6, state="PreparingRebalance",
    reason="Downgrade group orders-svc from consumer to classic for member leaving.", cause_class="member_left")
add("b1_prepare", "REBALANCE_PREPARED",
    OLD + "Preparing to rebalance group orders-svc in state PreparingRebalance with old generation 6"
    " (__consumer_offsets-12) (reason: Removing [consumer-a-1-x] on pending sync request expiration)", GC,
    **B1, **G, generation=6, offsets_partition=12, state="PreparingRebalance",
    reason="Removing [consumer-a-1-x] on pending sync request expiration", cause_class="not_rejoined_in_time")
# ---- B2 / B2b / B2c ------------------------------------------------------------------------------------------
add("b2_stabilized", "GROUP_STABILIZED", OLD + "Stabilized group orders-svc generation 7", GC_0_10,
    **B1, **G, generation=7)
add("b2_stabilized", "GROUP_STABILIZED",
    OLD + "Stabilized group orders-svc generation 7 (__consumer_offsets-12) with 3 members", GC,
    **B1, **G, generation=7, offsets_partition=12, member_count=3)
add("b2_stabilized", "GROUP_STABILIZED", NEW + "Stabilized group orders-svc generation 7 with 3 members.", NGMM,
    **N12, **G, generation=7, member_count=3)
add("b2b_empty", "GROUP_EMPTY", OLD + "Group orders-svc with generation 8 is now empty (__consumer_offsets-12)", GC,
    **B1, **G, generation=8, offsets_partition=12, cause_class="group_empty_or_dead")
add("b2b_empty", "GROUP_EMPTY", NEW + "Group orders-svc with generation 8 is now empty.", NGMM,
    **N12, **G, generation=8, cause_class="group_empty_or_dead")
add("b2c_assignment_received", "ASSIGNMENT_RECEIVED",
    OLD + "Assignment received from leader for group orders-svc for generation 7", GC, **B1, **G, generation=7)
add("b2c_assignment_received", "ASSIGNMENT_RECEIVED",
    OLD + f"Assignment received from leader {M1} for group orders-svc for generation 7. The group has 2 members,"
    " 0 of which are static.", GC, **B1, **G, generation=7, member_id=M1, member_count=2)
# ---- B3 ----------------------------------------------------------------------------------------------------------
add("b3_member_failed", "MEMBER_FAILED_SESSION_TIMEOUT",
    OLD + f"Member {M2} in group orders-svc has failed, removing it from the group", GC,
    **B1, **G, member_id=M2, cause_class="session_timeout")
add("b3_member_failed", "MEMBER_FAILED_SESSION_TIMEOUT",
    NEW + f"Member {M2} in group orders-svc has failed, removing it from the group.", NGMM,
    **N12, **G, member_id=M2, cause_class="session_timeout")
add("b3_pending_member_expired", "PENDING_MEMBER_EXPIRED",
    OLD + f"Pending member {M2} in group orders-svc has been removed after session timeout expiration.", GC,
    **B1, **G, member_id=M2, cause_class="session_timeout")
add("b3_not_rejoined_removed", "MEMBERS_NOT_REJOINED_REMOVED",
    OLD + f"Group orders-svc removed dynamic members who haven't joined: HashSet({M2})", GC,
    **B1, **G, member_ids=f"HashSet({M2})", cause_class="not_rejoined_in_time")
add("b3_not_rejoined_removed", "MEMBERS_NOT_REJOINED_REMOVED",
    OLD + f"Group orders-svc remove dynamic members who haven't joined: Set({M2})", GC,
    **B1, **G, member_ids=f"Set({M2})", cause_class="not_rejoined_in_time")
add("b3_not_rejoined_removed", "MEMBERS_NOT_REJOINED_REMOVED",
    NEW + f"Group orders-svc removed dynamic members who haven't joined: [{M2}]", NGMM,
    **N12, **G, member_ids=f"[{M2}]", cause_class="not_rejoined_in_time")
add("b3_no_members_rejoined", "MEMBERS_NOT_REJOINED_REMOVED",
    OLD + "Group orders-svc could not complete rebalance because no members rejoined", GC, level="ERROR",
    **B1, **G, cause_class="not_rejoined_in_time")
add("b3_leader_failed_new_leader", "LEADER_FAILED_TO_REJOIN",
    f"Group leader [member.id: {M1}, group.instance.id: None] failed to join before rebalance timeout, while new"
    f" leader {M2} was elected.", GM, member_id=M1, related_member_id=M2, cause_class="not_rejoined_in_time")
add("b3_leader_failed_no_member", "LEADER_FAILED_TO_REJOIN",
    f"Group leader [member.id: {M1}, group.instance.id: Some(inst-a)] failed to join before rebalance timeout,"
    " and the group couldn't proceed to next generationbecause no member joined.", GM,
    member_id=M1, group_instance_id="inst-a", cause_class="not_rejoined_in_time")
add("n1_leader_failed_new_leader", "LEADER_FAILED_TO_REJOIN",
    NEW + f"Group leader [memberId: {M1}, groupInstanceId: null] failed to join before the rebalance timeout."
    f" Member {M2} was elected as the new leader.", NCG,
    **N12, member_id=M1, related_member_id=M2, cause_class="not_rejoined_in_time")
add("n1_leader_failed_no_member", "LEADER_FAILED_TO_REJOIN",
    NEW + f"Group leader [memberId: {M1}, groupInstanceId: inst-a] failed to join before the rebalance timeout"
    " and the group couldn't proceed to the next generation because no member joined.", NCG,
    **N12, member_id=M1, group_instance_id="inst-a", cause_class="not_rejoined_in_time")
# ---- B4 / N1 LeaveGroup --------------------------------------------------------------------------------------
add("b4_member_left", "MEMBER_LEFT", OLD + f"Member {M2} in group orders-svc has left, removing it from the group",
    GC, **B1, **G, member_id=M2, cause_class="member_left")
add("b4_member_left_instance", "MEMBER_LEFT",
    OLD + f"Member[group.instance.id Some(inst-b), member.id {M2}] in group orders-svc has left, removing it from"
    " the group", GC, **B1, **G, member_id=M2, group_instance_id="inst-b", cause_class="member_left")
add("b4_member_left_instance", "MEMBER_LEFT",
    OLD + f"Member[group.instance.id None, member.id {M2}] in group orders-svc has left, removing it from the"
    " group", GC, **B1, **G, member_id=M2, cause_class="member_left")
add("b4_member_left_explicit", "MEMBER_LEFT",
    OLD + f"Member MemberMetadata(memberId={M1}, groupInstanceId=None, clientId=consumer-orders-svc-1,"
    " clientHost=/10.0.3.17, sessionTimeoutMs=45000, rebalanceTimeoutMs=300000, supportedProtocols=List(range,"
    " cooperative-sticky)) has left group orders-svc through explicit `LeaveGroup`; client reason: the consumer is"
    " being closed", GC, **B1, **G, member_id=M1, client_id="consumer-orders-svc-1", host="10.0.3.17",
    reason="the consumer is being closed", client_reason="the consumer is being closed", cause_class="member_left")
add("b4_member_left_explicit", "MEMBER_LEFT",
    OLD + f"Member MemberMetadata(memberId={M1}, groupInstanceId=Some(inst-a), clientId=consumer-orders-svc-1,"
    " clientHost=/10.0.3.17, sessionTimeoutMs=45000, rebalanceTimeoutMs=300000, supportedProtocols=List(range))"
    " has left group orders-svc through explicit `LeaveGroup` request", GC,
    **B1, **G, member_id=M1, group_instance_id="inst-a", client_id="consumer-orders-svc-1", host="10.0.3.17",
    cause_class="member_left")
add("n1_member_left", "MEMBER_LEFT",
    NEW + f"[Group orders-svc] Member {M1} has left group through explicit `LeaveGroup` request; client reason:"
    " consumer poll timeout has expired.", NGMM, **N12, **G, member_id=M1,
    reason="consumer poll timeout has expired.", client_reason="consumer poll timeout has expired.",
    cause_class="poll_timeout")
add("b4_pending_member_leaving", "PENDING_MEMBER_LEFT", OLD + f"Pending member {M2} is leaving group orders-svc.",
    GC, **B1, **G, member_id=M2, cause_class="member_left")
add("b4_pending_member_left", "PENDING_MEMBER_LEFT",
    OLD + f"Pending member with memberId={M2} has left group orders-svc through explicit `LeaveGroup` request", GC,
    **B1, **G, member_id=M2, cause_class="member_left")
add("n1_pending_member_left", "PENDING_MEMBER_LEFT",
    NEW + f"[Group orders-svc] Pending member {M2} has left group through explicit `LeaveGroup` request; client"
    " reason: not provided", NGMM, **N12, **G, member_id=M2, reason="not provided", client_reason="not provided",
    cause_class="member_left")
# ---- B5 / B6 joins and static membership -------------------------------------------------------------------
add("b5_unknown_member_join", "MEMBER_JOIN_NEW_ID",
    OLD + f"Dynamic member with unknown member id joins group orders-svc in Stable state. Created a new member id"
    f" {M1} and request the member to rejoin with this id.", GC, **B1, **G, member_id=M1, state="Stable",
    cause_class="new_member")
add("b5_unknown_member_join", "MEMBER_JOIN_NEW_ID",
    OLD + f"Dynamic Member with unknown member id joins group orders-svc in Empty state. Created a new member id"
    f" {M1} for this member and add to the group.", GC, **B1, **G, member_id=M1, state="Empty",
    cause_class="new_member")
add("b5_unknown_member_join", "MEMBER_JOIN_NEW_ID",
    OLD + f"Dynamic member with unknown member id rejoins group orders-svc in Stable state. Created a new member"
    f" id {M1} and request the member to rejoin with this id.", GC, level="DEBUG", **B1, **G, member_id=M1,
    state="Stable", cause_class="new_member")
add("b5_unknown_member_join", "MEMBER_JOIN_NEW_ID",
    NEW + f"Dynamic member with unknown member id joins group orders-svc in PreparingRebalance state. Created a new"
    f" member id {M1} and requesting the member to rejoin with this id.", NGMM, **N12, **G, member_id=M1,
    state="PreparingRebalance", cause_class="new_member")
add("n1_unknown_member_join_no_rejoin", "MEMBER_JOIN_NEW_ID",
    NEW + f"Dynamic member with unknown member id joins group orders-svc in state Stable. Created a new member id"
    f" {M1} and added the member to the group.", NGMM, **N12, **G, member_id=M1, state="Stable",
    cause_class="new_member")
add("b5_pending_member_joins", "MEMBER_JOIN_NEW_ID",
    NEW + f"Pending dynamic member with id {M1} joins group orders-svc in PreparingRebalance state. Adding to the"
    " group now.", NGMM, **N12, **G, member_id=M1, state="PreparingRebalance", cause_class="new_member")
add("b6_static_member_added", "MEMBER_JOIN_NEW_ID",
    OLD + f"Adding new static member Some(inst-a) to group orders-svc with member id {M1}.", GC,
    **B1, **G, member_id=M1, group_instance_id="inst-a", cause_class="new_member")
add("b6_static_member_new_id", "MEMBER_JOIN_NEW_ID",
    OLD + "Static member with groupInstanceId=inst-a and unknown member id joins group orders-svc in Stable state."
    f" Created a new member id {M1} for this member and add to the group.", GC,
    **B1, **G, member_id=M1, group_instance_id="inst-a", state="Stable", cause_class="new_member")
add("b6_static_member_new_id", "MEMBER_JOIN_NEW_ID",
    NEW + "Static member with groupInstanceId=inst-a and unknown member id joins group orders-svc in Empty state."
    f" Created a new member id {M1} for this member and added to the group.", NGMM,
    **N12, **G, member_id=M1, group_instance_id="inst-a", state="Empty", cause_class="new_member")
add("b6_static_member_rejoins_2_3", "STATIC_MEMBER_REPLACED",
    OLD + f"Static member Some(inst-a) with unknown member id rejoins, assigning new member id {M1}, while old"
    f" member {M2} will be removed.", GC, **B1, member_id=M1, group_instance_id="inst-a", related_member_id=M2,
    cause_class="static_member_replaced")
add("b6_static_member_rejoins", "STATIC_MEMBER_REPLACED",
    OLD + f"Static member Some(inst-a) of group orders-svc with unknown member id rejoins, assigning new member id"
    f" {M1}, while old member id {M2} will be removed.", GC, **B1, **G, member_id=M1, group_instance_id="inst-a",
    related_member_id=M2, cause_class="static_member_replaced")
add("b6_static_member_replaced", "STATIC_MEMBER_REPLACED",
    OLD + "Static member with groupInstanceId=inst-a and unknown member id joins group orders-svc in Stable state."
    f" Replacing previously mapped member {M2} with this groupInstanceId.", GC, **B1, **G,
    group_instance_id="inst-a", related_member_id=M2, state="Stable", cause_class="static_member_replaced")
add("b6_static_member_fenced", "STATIC_MEMBER_FENCED",
    OLD + f"Request memberId={M2} for static member with groupInstanceId=inst-a is fenced by current memberId={M1}"
    " during operation sync-group", GC, **B1, member_id=M2, group_instance_id="inst-a", related_member_id=M1,
    reason="sync-group", cause_class="static_member_fenced")
add("b6_static_member_fenced", "STATIC_MEMBER_FENCED",
    NEW + f"Request memberId={M2} for static member with groupInstanceId=inst-a is fenced by existing"
    f" memberId={M1} during operation heartbeat", NCG, **N12, member_id=M2, group_instance_id="inst-a",
    related_member_id=M1, reason="heartbeat", cause_class="static_member_fenced")
add("b6_static_member_fenced_2_5", "STATIC_MEMBER_FENCED",
    f"given member.id {M2} is identified as a known static member inst-a, but not matching the expected member.id"
    f" {M1} during SyncGroup, will respond with instance fenced error", GM, level="ERROR", member_id=M2,
    group_instance_id="inst-a", related_member_id=M1, reason="SyncGroup", cause_class="static_member_fenced")
add("n2_static_member_fenced", "STATIC_MEMBER_FENCED",
    NEW + f"[GroupId orders-svc] Static member {K1} with instance id inst-a is fenced by existing member {K2}.",
    NGMM, **N12, **G, member_id=K1, group_instance_id="inst-a", related_member_id=K2,
    cause_class="static_member_fenced")
add("n2_static_member_instance_owned", "STATIC_MEMBER_FENCED",
    NEW + f"[GroupId orders-svc] Static member {K1} with instance id inst-a cannot join the group because the"
    f" instance id is is owned by member {K2}.", NGMM, **N12, **G, member_id=K1, group_instance_id="inst-a",
    related_member_id=K2, cause_class="static_member_fenced")
add("n2_static_member_instance_owned", "STATIC_MEMBER_FENCED",
    NEW + f"[GroupId orders-svc] Static member {K1} with instance id inst-a cannot join the group because the"
    f" instance id is owned by member {K2}.", NGMM, **N12, **G, member_id=K1, group_instance_id="inst-a",
    related_member_id=K2, cause_class="static_member_fenced")
# ---- B7 / N3 coordinator failover ------------------------------------------------------------------------
FAIL = {"cause_class": "coordinator_failover"}
add("b7_elected", "COORDINATOR_ELECTED", OLD + "Elected as the group coordinator for partition 12 in epoch 15", GC,
    **B1, offsets_partition=12, coordinator_epoch=15, **FAIL)
add("b7_elected", "COORDINATOR_ELECTED", OLD + "Elected as the group coordinator for partition 12", GC,
    **B1, offsets_partition=12, **FAIL)
add("b7_resigned", "COORDINATOR_RESIGNED", OLD + "Resigned as the group coordinator for partition 12 in epoch 15",
    GC, **B1, offsets_partition=12, coordinator_epoch=15, **FAIL)
add("b7_load_scheduled", "OFFSETS_LOAD_SCHEDULED",
    GMP + "Scheduling loading of offsets and group metadata from __consumer_offsets-12 for epoch 15", GMM,
    **B2, offsets_partition=12, coordinator_epoch=15, **FAIL)
add("b7_load_scheduled", "OFFSETS_LOAD_SCHEDULED",
    GMP + "Scheduling loading of offsets and group metadata from __consumer_offsets-12", GMM,
    **B2, offsets_partition=12, **FAIL)
add("b7_load_started_0_10", "OFFSETS_LOAD_SCHEDULED",
    GMP_0_10 + "Loading offsets and group metadata from __consumer_offsets-12", GMM_0_10,
    **B2, offsets_partition=12, **FAIL)
add("n3_load_scheduled", "OFFSETS_LOAD_SCHEDULED",
    RT + "Scheduling loading of metadata from __consumer_offsets-12 with epoch 16", RUNTIME,
    **R2, coordinator_epoch=16, **FAIL)
add("b7_loaded", "OFFSETS_LOADED",
    GMP + "Finished loading offsets and group metadata from __consumer_offsets-12 in 184 milliseconds for epoch"
    " 15, of which 3 milliseconds was spent in the scheduler.", GMM,
    **R2, coordinator_epoch=15, duration_ms=184, **FAIL)
add("b7_loaded", "OFFSETS_LOADED",
    GMP + "Finished loading offsets and group metadata from __consumer_offsets-12 in 184 milliseconds, of which 3"
    " milliseconds was spent in the scheduler.", GMM, **R2, duration_ms=184, **FAIL)
add("b7_loaded", "OFFSETS_LOADED",
    GMP + "Finished loading offsets and group metadata from __consumer_offsets-12 in 184 milliseconds.", GMM,
    **R2, duration_ms=184, **FAIL)
add("b7_loaded_0_10", "OFFSETS_LOADED",
    GMP_0_10 + "Finished loading offsets from __consumer_offsets-12 in 31 milliseconds.", GMM_0_10,
    **R2, duration_ms=31, **FAIL)
add("n3_loaded", "OFFSETS_LOADED",
    RT + "Finished loading of metadata from __consumer_offsets-12 with epoch 16 in 211ms where 2ms was spent in the"
    " scheduler. Loaded 5312 records which total to 1048576 bytes.", RUNTIME,
    **R2, coordinator_epoch=16, duration_ms=211, **FAIL)
add("n3_loaded", "OFFSETS_LOADED", RT + "Finished loading of metadata from __consumer_offsets-12 with epoch 16.",
    RUNTIME_3_6, **R2, coordinator_epoch=16, **FAIL)
add("n3_loaded", "OFFSETS_LOADED",
    RT + "Finished loading of metadata from __consumer_offsets-12 with epoch 16 and LoadSummary=LoadSummary("
    "startTimeMs=1, endTimeMs=5, numRecords=10, numBytes=100).", RUNTIME_3_6, **R2, coordinator_epoch=16, **FAIL)
add("b7_load_error", "OFFSETS_LOAD_FAILED", GMP + "Error loading offsets from __consumer_offsets-12", GMM,
    level="ERROR", **R2, **FAIL)
add("n3_load_failed", "OFFSETS_LOAD_FAILED",
    RT + "Failed to load metadata from __consumer_offsets-12 with epoch 16 due to"
    " org.apache.kafka.common.errors.NotLeaderOrFollowerException: no leader.", RUNTIME, level="ERROR",
    **R2, coordinator_epoch=16,
    reason="org.apache.kafka.common.errors.NotLeaderOrFollowerException: no leader", **FAIL)
add("b7_unload_scheduled", "OFFSETS_UNLOAD_SCHEDULED",
    GMP + "Scheduling unloading of offsets and group metadata from __consumer_offsets-12", GMM, **R2, **FAIL)
add("n3_unload_scheduled", "OFFSETS_UNLOAD_SCHEDULED",
    RT + "Scheduling unloading of metadata for __consumer_offsets-12 with epoch OptionalInt[17]", RUNTIME,
    **R2, coordinator_epoch=17, **FAIL)
add("n3_unload_scheduled", "OFFSETS_UNLOAD_SCHEDULED",
    RT + "Scheduling unloading of metadata for __consumer_offsets-12 with epoch OptionalInt.empty", RUNTIME,
    **R2, **FAIL)
add("b7_unloaded", "OFFSETS_UNLOADED",
    GMP + "Finished unloading __consumer_offsets-12 for coordinator epoch 15. Removed 42 cached offsets and 3 cached"
    " groups.", GMM, **R2, coordinator_epoch=15, offsets_removed=42, **FAIL)
add("b7_unloaded_0_10", "OFFSETS_UNLOADED",
    GMP_0_10 + "Removed 42 cached offsets for __consumer_offsets-12 on follower transition.", GMM_0_10,
    **R2, offsets_removed=42, **FAIL)
add("n3_unloaded", "OFFSETS_UNLOADED", RT + "Finished unloading metadata for __consumer_offsets-12 with epoch 17.",
    RUNTIME, **R2, coordinator_epoch=17, **FAIL)
add("b7_group_loading", "GROUP_LOADED", "[GroupCoordinator 2]: Loading group metadata for orders-svc with"
    " generation 7", GC, **B2, **G, generation=7, **FAIL)
add("n3_group_loaded", "GROUP_LOADED", NEW + "Loaded classic group orders-svc with 3 members.", NGMM,
    **N12, **G, group_protocol="classic", member_count=3, **FAIL)
add("n3_group_loaded", "GROUP_LOADED", NEW + "Loaded generic group orders-svc with 3 members.", NGMM,
    **N12, **G, group_protocol="classic", member_count=3, **FAIL)
add("n3_group_loaded", "GROUP_LOADED", NEW + "Loaded consumer group orders-svc with 2 members.", NGMM,
    **N12, **G, group_protocol="consumer", member_count=2, **FAIL)
add("b7_member_loaded", "MEMBER_LOADED",
    f"Loaded member MemberMetadata(memberId={M1}, groupInstanceId=Some(inst-a), clientId=consumer-orders-svc-1,"
    " clientHost=/10.0.3.17, sessionTimeoutMs=45000, rebalanceTimeoutMs=300000, supportedProtocols=List(range))"
    " in group orders-svc with generation 7.", GM_OBJ, **G, member_id=M1, group_instance_id="inst-a",
    client_id="consumer-orders-svc-1", host="10.0.3.17", generation=7, **FAIL)
add("b7_static_member_loaded", "MEMBER_LOADED",
    f"Static member MemberMetadata(memberId={M1}, groupInstanceId=Some(inst-a), clientId=consumer-orders-svc-1,"
    " clientHost=/10.0.3.17, sessionTimeoutMs=10000, rebalanceTimeoutMs=300000, supportedProtocols=List(range), )"
    f".groupInstanceId of group orders-svc loaded with member id {M1} at generation 7.", GM_OBJ,
    **G, member_id=M1, group_instance_id="inst-a", client_id="consumer-orders-svc-1", host="10.0.3.17",
    generation=7, **FAIL)
add("b7_group_unloading", "GROUP_UNLOADED", OLD + "Unloading group metadata for orders-svc with generation 7", GC,
    **B1, **G, generation=7, **FAIL)
add("n3_classic_group_unloading", "GROUP_UNLOADED",
    NEW + "[GroupId=orders-svc] Unloading group metadata for generation 7.", NGMM, **N12, **G, generation=7, **FAIL)
add("n3_group_unloaded", "GROUP_UNLOADED",
    NEW + "[GroupId=orders-svc] Unloaded group metadata for group epoch 9.", NGMM, **N12, **G, generation=9, **FAIL)
# ---- B8 / N4 expiry and deletion -----------------------------------------------------------------------
GONE = {"cause_class": "offsets_expired_or_deleted"}
add("b8_offsets_expired", "OFFSETS_EXPIRED", GMP + "Removed 17 expired offsets in 2 milliseconds.", GMM,
    **B2, offsets_removed=17, duration_ms=2, **GONE)
add("n4_offsets_expired", "OFFSETS_EXPIRED",
    NEW + "Generated 17 tombstone records while cleaning up group metadata in 2 milliseconds.", SHARD,
    **N12, offsets_removed=17, duration_ms=2, **GONE)
add("b8_group_offsets_expired", "OFFSETS_EXPIRED", "Expired offsets from group 'orders-svc': Set(orders-0, orders-1)",
    GM, level="DEBUG", **G, partitions="Set(orders-0, orders-1)", **GONE)
add("b8_group_dead", "GROUP_DEAD", GMP + "Group orders-svc transitioned to Dead in generation 8", GMM,
    **B2, **G, generation=8, cause_class="group_empty_or_dead")
add("b8_groups_deleted", "GROUPS_DELETED",
    OLD + "The following groups were deleted: orders-svc, billing. A total of 4 offsets were removed.", GC,
    **B1, group_id="orders-svc, billing", offsets_removed=4, cause_class="group_empty_or_dead")
add("b8_groups_deleted", "GROUPS_DELETED", OLD + "The following groups were deleted: orders-svc", GC,
    **B1, **G, cause_class="group_empty_or_dead")
add("b8_groups_deleted", "GROUPS_DELETED",
    NEW + "The following groups were deleted: [orders-svc]. A total of 2 offsets were removed.", SHARD,
    **N12, **G, offsets_removed=2, cause_class="group_empty_or_dead")
add("b8_offsets_deleted_group", "OFFSETS_DELETED",
    OLD + "The following offsets of the group orders-svc were deleted: orders-0, orders-1. A total of 2 offsets"
    " were removed.", GC, **B1, **G, partitions="orders-0, orders-1", offsets_removed=2, **GONE)
add("b8_offsets_deleted_partitions", "OFFSETS_DELETED",
    GMP + "Removed 3 offsets associated with deleted partitions: orders-0, orders-1, orders-2.", GMM,
    **B2, partitions="orders-0, orders-1, orders-2", offsets_removed=3, **GONE)
add("n4_offsets_deleted", "OFFSETS_DELETED",
    NEW + "Generated 3 tombstone records in 1 milliseconds while deleting offsets for partitions [orders-0,"
    " orders-1].", SHARD, **N12, partitions="orders-0, orders-1", offsets_removed=3, duration_ms=1, **GONE)
add("n4_offsets_deleted", "OFFSETS_DELETED",
    NEW + "Generated 3 tombstone records in 1 milliseconds while deleting offsets for topics [orders].", SHARD,
    **N12, partitions="orders", offsets_removed=3, duration_ms=1, **GONE)
# ---- B9 ------------------------------------------------------------------------------------------------------
add("b9_starting", "COORDINATOR_STARTUP", OLD + "Starting up.", GC, **B1, **FAIL)
add("b9_startup_complete", "COORDINATOR_STARTUP", OLD + "Startup complete.", GC, **B1, **FAIL)
add("b9_shutting_down", "COORDINATOR_SHUTDOWN", OLD + "Shutting down.", GC, **B1, **FAIL)
add("b9_shutdown_complete", "COORDINATOR_SHUTDOWN", RT + "Shutdown complete.", SERVICE, **B2, **FAIL)
# ---- N2 KIP-848 consumer groups ------------------------------------------------------------------------
add("n2_member_joins", "CG_MEMBER_JOINED", NEW + f"[GroupId orders-svc] Member {K1} joins the consumer group.",
    NGMM, **N12, **G, member_id=K1, cause_class="new_member")
add("n2_member_joins", "CG_MEMBER_JOINED",
    NEW + f"[GroupId orders-svc] Member {K1} joins the consumer group using the consumer protocol.", NGMM,
    **N12, **G, member_id=K1, group_protocol="consumer", cause_class="new_member")
add("n2_static_member_joins", "CG_MEMBER_JOINED",
    NEW + f"[GroupId orders-svc] Static member {K1} with instance id inst-a joins the consumer group using the"
    " classic protocol.", NGMM, **N12, **G, member_id=K1, group_instance_id="inst-a", group_protocol="classic",
    cause_class="new_member")
add("n2_member_id_handshake", "MEMBER_JOIN_NEW_ID",
    NEW + "[GroupId orders-svc] Dynamic member with unknown member id joins the consumer group. Created a new member"
    f" id {M1} and requesting the member to rejoin with this id.", NGMM, **N12, **G, member_id=M1,
    cause_class="new_member")
add("n2_static_member_rejoins", "CG_STATIC_MEMBER_REPLACED",
    NEW + f"[GroupId orders-svc] Static member {K1} with instance id inst-a re-joins the consumer group.", NGMM,
    **N12, **G, member_id=K1, group_instance_id="inst-a", cause_class="static_member_replaced")
add("n2_static_member_replaced_3_8", "CG_STATIC_MEMBER_REPLACED",
    NEW + "[GroupId orders-svc] Static member with unknown member id and instance id inst-a re-joins the consumer"
    f" group. Created a new member {K1} to replace the existing member {K2}.", NGMM, **N12, **G, member_id=K1,
    group_instance_id="inst-a", related_member_id=K2, cause_class="static_member_replaced")
add("n2_static_member_replaced", "CG_STATIC_MEMBER_REPLACED",
    NEW + "[GroupId orders-svc] Static member with instance id inst-a re-joins the consumer group using the"
    f" consumer protocol. Created a new member {K1} to replace the existing member {K2}.", NGMM, **N12, **G,
    member_id=K1, group_instance_id="inst-a", related_member_id=K2, group_protocol="consumer",
    cause_class="static_member_replaced")
add("n2_epoch_bumped", "CG_EPOCH_BUMPED", NEW + "[GroupId orders-svc] Bumped group epoch to 14.", NGMM,
    **N12, **G, generation=14)
add("n2_epoch_bumped", "CG_EPOCH_BUMPED",
    NEW + "[GroupId orders-svc] Bumped group epoch to 14 with metadata hash -4460185436387640127.", NGMM,
    **N12, **G, generation=14)
add("n2_target_assignment", "CG_TARGET_ASSIGNMENT_COMPUTED",
    NEW + "[GroupId orders-svc] Computed a new target assignment for epoch 14 with 'uniform' assignor in 3ms.",
    NGMM, **N12, **G, generation=14, protocol="uniform", duration_ms=3)
add("n2_target_assignment", "CG_TARGET_ASSIGNMENT_COMPUTED",
    NEW + "[GroupId orders-svc] Computed a new target assignment for epoch 14 with 'range' assignor in 3ms:"
    f" {{{K1}=MemberAssignment(partitions={{aBc-0}})}}.", NGMM, **N12, **G, generation=14, protocol="range",
    duration_ms=3, partitions=f"{{{K1}=MemberAssignment(partitions={{aBc-0}})}}")
add("n2_target_assignment", "CG_TARGET_ASSIGNMENT_COMPUTED",
    NEW + f"[GroupId orders-svc] Computed a new target assignment for epoch 14: {{{K1}=[aBc-0]}}.", NGMM,
    **N12, **G, generation=14, partitions=f"{{{K1}=[aBc-0]}}")
add("n2_member_assignment_state", "CG_MEMBER_ASSIGNMENT_STATE",
    NEW + f"[GroupId orders-svc] Member {K1} new assignment state: epoch=14, previousEpoch=13, state=STABLE,"
    " assignedPartitions=[aBc-0, aBc-1] and revokedPartitions=[].", NGMM, **N12, **G, member_id=K1,
    generation=14, state="STABLE", partitions="aBc-0, aBc-1")
add("n2_member_assignment_state", "CG_MEMBER_ASSIGNMENT_STATE",
    NEW + f"[GroupId orders-svc] Member {K1} new assignment state: epoch=14, previousEpoch=13, state=STABLE,"
    " assignedPartitions=[aBc-0].", NGMM, **N12, **G, member_id=K1, generation=14, state="STABLE",
    partitions="aBc-0")
add("n2_member_transitioned", "CG_MEMBER_ASSIGNMENT_STATE",
    NEW + f"[GroupId orders-svc] Member {K1} transitioned from CurrentAssignment(memberEpoch=13, state=stable) to"
    " CurrentAssignment(memberEpoch=14, state=stable).", NGMM, **N12, **G, member_id=K1)
add("n2_member_left", "CG_MEMBER_LEFT", NEW + f"[GroupId orders-svc] Member {K1} left the consumer group.", NGMM,
    **N12, **G, member_id=K1, cause_class="member_left")
add("n2_static_member_left", "CG_MEMBER_LEFT",
    NEW + f"[GroupId orders-svc] Static Member {K1} with instance id inst-a left the consumer group.", NGMM,
    **N12, **G, member_id=K1, group_instance_id="inst-a", cause_class="member_left")
add("n2_static_member_temporarily_left", "CG_MEMBER_LEFT",
    NEW + f"[GroupId orders-svc] Static member {K1} with instance id inst-a temporarily left the consumer group.",
    NGMM, **N12, **G, member_id=K1, group_instance_id="inst-a", cause_class="member_left")
add("n2_classic_member_left", "CG_MEMBER_LEFT",
    NEW + f"[Group orders-svc] Dynamic Member {M1} has left group through explicit `LeaveGroup` request; client"
    " reason: the consumer is being closed", NGMM, **N12, **G, member_id=M1,
    reason="the consumer is being closed", client_reason="the consumer is being closed", cause_class="member_left")
add("n2_classic_static_member_left", "CG_MEMBER_LEFT",
    NEW + f"[GroupId orders-svc] Static member {M1} with instance id inst-a has left group through explicit"
    " `LeaveGroup` request; client reason: not provided", NGMM, **N12, **G, member_id=M1,
    group_instance_id="inst-a", reason="not provided", client_reason="not provided", cause_class="member_left")
add("n2_member_fenced", "CG_MEMBER_FENCED",
    NEW + f"[GroupId orders-svc] Member {K1} fenced from the group because the member session expired..", NGMM,
    **N12, **G, member_id=K1, reason="the member session expired", cause_class="session_timeout")
add("n2_member_fenced", "CG_MEMBER_FENCED",
    NEW + f"[GroupId orders-svc] Member {K1} fenced from the group because its session expired.", NGMM,
    **N12, **G, member_id=K1, reason="its session expired", cause_class="session_timeout")
add("n2_member_fenced", "CG_MEMBER_FENCED",
    NEW + f"[GroupId orders-svc] Member {K1} fenced from the group because it failed to transition from epoch 13"
    " within 300000ms.", NGMM, **N12, **G, member_id=K1,
    reason="it failed to transition from epoch 13 within 300000ms", cause_class="not_rejoined_in_time")
add("n2_member_fenced", "CG_MEMBER_FENCED",
    NEW + f"[GroupId orders-svc] Member {M1} fenced from the group because the classic member failed to join"
    " within the rebalance timeout..", NGMM, **N12, **G, member_id=M1,
    reason="the classic member failed to join within the rebalance timeout", cause_class="not_rejoined_in_time")
add("n2_converted", "CG_CONVERTED", NEW + "[GroupId orders-svc] Converted the classic group to a consumer group.",
    NGMM, **N12, **G, group_protocol="consumer", cause_class="group_protocol_migration")
add("n2_converted", "CG_CONVERTED",
    NEW + "[GroupId orders-svc] Converted the empty consumer group to a classic group.", NGMM,
    **N12, **G, group_protocol="classic", cause_class="group_protocol_migration")
# ---- C1 client join and sync ---------------------------------------------------------------------------
add("c1_joining", "CLIENT_JOIN_SENT", CL + "(Re-)joining group", CC, **CLF)
add("c1_joining", "CLIENT_JOIN_SENT", "(Re-)joining group orders-svc", AC, **G)
add("c1_joined", "CLIENT_JOINED", CL + f"Successfully joined group with generation {GEN7}", CC,
    **CLF, generation=7, member_id=M1, protocol="range")
add("c1_joined_generation_id", "CLIENT_JOINED", CL + "Successfully joined group with generation 7", AC,
    **CLF, generation=7)
add("c1_joined_0_10", "CLIENT_JOINED", "Successfully joined group orders-svc with generation 7", AC,
    **G, generation=7)
add("c1_synced", "CLIENT_SYNCED",
    CL + f"Successfully synced group in generation Generation{{generationId=7, memberId='{M1}',"
    " protocol='cooperative-sticky'}", CC, **CLF, generation=7, member_id=M1, protocol="cooperative-sticky")
add("c1_assignment_received", "CLIENT_ASSIGNMENT_RECEIVED",
    CL + "Notifying assignor about the new Assignment(partitions=[orders-0, orders-1])", CC,
    **CLF, partitions="orders-0, orders-1")
add("c1_assignment_received", "CLIENT_ASSIGNMENT_RECEIVED",
    CL + "Notifying assignor about the new Assignment(partitions=[orders-0], userDataSize=42)", CC,
    **CLF, partitions="orders-0")
add("c1_assignment_computed", "CLIENT_ASSIGNMENT_COMPUTED",
    CL + f"Finished assignment for group at generation 1: {{{M1}=Assignment(partitions=[kmo-0, kmo-1])}}", CC,
    **CLF, generation=1, partitions=f"{{{M1}=Assignment(partitions=[kmo-0, kmo-1])}}")
add("c1_coordinator_discovered", "CLIENT_COORDINATOR_DISCOVERED", CL + f"Discovered group coordinator {NODE}", CC,
    **CLF, host="kafka-1:9092", broker_id=1)
add("c1_coordinator_discovered", "CLIENT_COORDINATOR_DISCOVERED",
    f"Discovered coordinator {NODE} for group orders-svc.", AC, **G, host="kafka-1:9092", broker_id=1)
add("c1_coordinator_dead", "CLIENT_COORDINATOR_LOST", CL + f"Marking the coordinator {NODE} dead", AC,
    **CLF, host="kafka-1:9092", broker_id=1, **FAIL)
add("c1_coordinator_unavailable", "CLIENT_COORDINATOR_LOST",
    CL + f"Group coordinator {NODE} is unavailable or invalid, will attempt rediscovery", AC,
    **CLF, host="kafka-1:9092", broker_id=1, **FAIL)
add("c1_coordinator_unavailable_cause", "CLIENT_COORDINATOR_LOST",
    CL + f"Group coordinator {NODE} is unavailable or invalid due to cause: session timed out without receiving a"
    " heartbeat response.isDisconnected: false. Rediscovery will be attempted.", AC,
    **CLF, host="kafka-1:9092", broker_id=1,
    reason="session timed out without receiving a heartbeat response", **FAIL)
add("c1_coordinator_unavailable_cause", "CLIENT_COORDINATOR_LOST",
    CL + f"Group coordinator {NODE} is unavailable or invalid due to cause: coordinator unavailable."
    " isDisconnected: true. Rediscovery will be attempted.", CC,
    **CLF, host="kafka-1:9092", broker_id=1, reason="coordinator unavailable", **FAIL)
add("c6_join_fenced", "CLIENT_FENCED",
    CL + f"JoinGroup failed: The group instance id Optional[inst-a] has been fenced by another instance. Sent"
    f" generation was {GEN7}", CC, level="ERROR", **CLF, group_instance_id="inst-a", generation=7, member_id=M1,
    protocol="range", cause_class="static_member_fenced")
add("c6_sync_fenced", "CLIENT_FENCED",
    CL + f"SyncGroup failed: The group instance id Optional[inst-a] has been fenced by another instance. Sent"
    f" generation was {GEN7}", CC, level="ERROR", **CLF, group_instance_id="inst-a", generation=7, member_id=M1,
    protocol="range", cause_class="static_member_fenced")
add("c1_join_failed_loading", "CLIENT_JOIN_FAILED", CL + f"JoinGroup failed: Coordinator {NODE} is loading the group.",
    CC, **CLF, host="kafka-1:9092", broker_id=1, **FAIL)
add("c1_join_failed", "CLIENT_JOIN_FAILED",
    CL + f"JoinGroup failed: The coordinator is not aware of this member. Need to re-join the group. Sent"
    f" generation was {GEN7}", CC, **CLF, reason="The coordinator is not aware of this member.", generation=7,
    member_id=M1, protocol="range")
add("c1_join_failed_non_fatal", "CLIENT_JOIN_FAILED",
    CL + "JoinGroup failed due to non-fatal error: REBALANCE_IN_PROGRESS, which could indicate a replication timeout"
    " on the broker. Will retry.", CC, **CLF, error="REBALANCE_IN_PROGRESS")
add("c1_join_failed_exception", "CLIENT_JOIN_FAILED",
    CL + "Join group failed with org.apache.kafka.common.errors.MemberIdRequiredException: The group member needs"
    " to have a valid member id before actually entering a consumer group", AC, **CLF,
    error="org.apache.kafka.common.errors.MemberIdRequiredException",
    reason="The group member needs to have a valid member id before actually entering a consumer group",
    cause_class="new_member")
add("c1_rebalance_failed", "CLIENT_JOIN_FAILED", CL + "Rebalance failed.", CC, level="ERROR", **CLF)
add("c1_sync_failed_rebalancing", "CLIENT_SYNC_FAILED",
    CL + f"SyncGroup failed: The group began another rebalance. Need to re-join the group. Sent generation was"
    f" {GEN7}", CC, **CLF, generation=7, member_id=M1, protocol="range", cause_class="rebalance_in_progress")
add("c1_sync_failed", "CLIENT_SYNC_FAILED",
    CL + "SyncGroup failed: The coordinator is not available. Marking coordinator unknown. Sent generation was"
    f" {GEN7}", CC, **CLF, reason="The coordinator is not available.", generation=7, member_id=M1, protocol="range")
add("c1_generation_cleared", "CLIENT_SYNC_FAILED",
    CL + "Generation data was cleared by heartbeat thread to Generation{generationId=-1, memberId='',"
    " protocol='null'} and state is now UNJOINED before receiving SyncGroup response, marking this rebalance as"
    " failed and retry", CC, **CLF, generation=-1, state="UNJOINED", cause_class="member_evicted")
# ---- C2 partitions -------------------------------------------------------------------------------------
add("c2_revoke", "CLIENT_PARTITIONS_REVOKED", CL + "Revoke previously assigned partitions orders-0, orders-1", INV,
    **CLF, partitions="orders-0, orders-1")
add("c2_revoke", "CLIENT_PARTITIONS_REVOKED", CL + "Revoke previously assigned partitions [orders-0, orders-1]",
    INV, **CLF, partitions="orders-0, orders-1")
add("c2_revoking", "CLIENT_PARTITIONS_REVOKED", CL + "Revoking previously assigned partitions [orders-0]", CC,
    **CLF, partitions="orders-0")
add("c2_revoking", "CLIENT_PARTITIONS_REVOKED",
    "Revoking previously assigned partitions [orders-0] for group orders-svc", CC, **G, partitions="orders-0")
add("c2_revoking", "CLIENT_PARTITIONS_REVOKED", CL + "Revoking previously assigned partitions orders-0", MM,
    **CLF, partitions="orders-0")
add("c2_assigned", "CLIENT_PARTITIONS_ASSIGNED", CL + "Adding newly assigned partitions: orders-0, orders-1", INV,
    **CLF, partitions="orders-0, orders-1")
add("c2_assigned", "CLIENT_PARTITIONS_ASSIGNED", CL + "Adding newly assigned partitions:", CC,
    **CLF, partitions="")
add("c2_assigned", "CLIENT_PARTITIONS_ASSIGNED", CL + "Setting newly assigned partitions [orders-0]", CC,
    **CLF, partitions="orders-0")
add("c2_assigned", "CLIENT_PARTITIONS_ASSIGNED",
    "Setting newly assigned partitions [orders-0, orders-1] for group orders-svc", CC, **G,
    partitions="orders-0, orders-1")
add("c2_lost", "CLIENT_PARTITIONS_LOST", CL + "Lost previously assigned partitions orders-0", CC,
    **CLF, partitions="orders-0", cause_class="member_evicted")
CU = "org.apache.kafka.clients.consumer.internals.ConsumerUtils"
SS = "org.apache.kafka.clients.consumer.internals.SubscriptionState"
add("c2_offset_set", "CLIENT_OFFSET_SET", "Setting offset for partition orders-0 to the committed offset"
    " FetchPosition{offset=5, offsetEpoch=Optional.empty, currentLeader=LeaderAndEpoch{leader=Optional[kafka-1:9092"
    " (id: 1 rack: null isFenced: false)], epoch=0}}", CU, partitions="orders-0")   # 3.7+: no client prefix
add("c2_offset_set", "CLIENT_OFFSET_SET", CL + "Setting offset for partition orders-0 to the committed offset"
    " FetchPosition{offset=5, offsetEpoch=Optional[0], currentLeader=LeaderAndEpoch{leader=Optional[kafka-1:9092"
    " (id: 1 rack: null)], epoch=0}}", CC, **CLF, partitions="orders-0")
add("c2_offset_reset", "CLIENT_OFFSET_SET", CL + "Resetting offset for partition orders-1 to position"
    " FetchPosition{offset=0, offsetEpoch=Optional.empty, currentLeader=LeaderAndEpoch{leader=Optional[kafka-1:9092"
    " (id: 1 rack: null isFenced: false)], epoch=0}}.", SS, **CLF, partitions="orders-1")
add("c2_offset_reset", "CLIENT_OFFSET_SET", CL + "Resetting offset for partition orders-1 to offset 0.", SS, **CLF,
    partitions="orders-1")
add("c2_cooperative_update", "CLIENT_COOPERATIVE_UPDATE",
    CL + "Updating assignment with\n\tAssigned partitions:                       [orders-0, orders-2]\n\tCurrent"
    " owned partitions:                  [orders-0]\n\tAdded partitions (assigned - owned):       [orders-2]\n"
    "\tRevoked partitions (owned - assigned):     []", CC, **CLF, partitions="orders-0, orders-2")
add("c2_need_revoke", "CLIENT_REJOIN_REQUESTED", CL + "Need to revoke partitions [orders-2] and re-join the group",
    CC, **CLF, partitions="orders-2", cause_class="cooperative_second_round")
# ---- C3 ----------------------------------------------------------------------------------------------------------
add("c3_rejoin_requested", "CLIENT_REJOIN_REQUESTED", CL + "Request joining group due to: group is already"
    " rebalancing", CC, **CLF, reason="group is already rebalancing", cause_class="rebalance_in_progress")
add("c3_rejoin_requested", "CLIENT_REJOIN_REQUESTED",
    CL + f"Request joining group due to: need to re-join with the given member-id: {M1}", CC,
    **CLF, reason=f"need to re-join with the given member-id: {M1}", cause_class="new_member")
add("c3_rejoin_requested", "CLIENT_REJOIN_REQUESTED",
    CL + "Request joining group due to: encountered UNKNOWN_MEMBER_ID from HEARTBEAT response", CC,
    **CLF, reason="encountered UNKNOWN_MEMBER_ID from HEARTBEAT response", error="UNKNOWN_MEMBER_ID",
    cause_class="member_evicted")
add("c3_rejoin_requested", "CLIENT_REJOIN_REQUESTED",
    CL + "Request joining group due to: cached metadata has changed from (version2: {orders=3}) at the beginning of"
    " the rebalance to (version5: {orders=6})", CC, **CLF,
    reason="cached metadata has changed from (version2: {orders=3}) at the beginning of the rebalance to"
    " (version5: {orders=6})", cause_class="metadata_change")
add("c3_rejoin_requested", "CLIENT_REJOIN_REQUESTED",
    CL + "Request joining group due to: need to revoke partitions [orders-2] as indicated by the current assignment"
    " and re-join", CC, **CLF,
    reason="need to revoke partitions [orders-2] as indicated by the current assignment and re-join",
    cause_class="cooperative_second_round")
add("c3_rejoin_requested", "CLIENT_REJOIN_REQUESTED",
    CL + "Request joining group due to: rebalance failed due to 'The group member needs to have a valid member id"
    " before actually entering a consumer group.' (MemberIdRequiredException)", CC, **CLF,
    reason="rebalance failed due to 'The group member needs to have a valid member id before actually entering a"
    " consumer group.' (MemberIdRequiredException)", cause_class="new_member")
add("c3_rejoin_metadata_changed", "CLIENT_REJOIN_REQUESTED",
    CL + "Requesting to re-join the group and trigger rebalance since the subscription has changed from [orders] to"
    " [orders, audit]", CC, **CLF, reason="the subscription has changed from [orders] to [orders, audit]",
    cause_class="metadata_change")
add("c3_generation_reset", "CLIENT_GENERATION_RESET",
    CL + "Resetting generation and member id due to: consumer pro-actively leaving the group", CC,
    **CLF, reason="consumer pro-actively leaving the group", cause_class="member_left")
add("c3_generation_reset", "CLIENT_GENERATION_RESET",
    CL + "Resetting generation due to: encountered ILLEGAL_GENERATION from SYNC_GROUP response", CC,
    **CLF, reason="encountered ILLEGAL_GENERATION from SYNC_GROUP response", error="ILLEGAL_GENERATION",
    cause_class="member_evicted")
add("c3_generation_reset_error", "CLIENT_GENERATION_RESET",
    CL + "Resetting generation after encountering UNKNOWN_MEMBER_ID from HEARTBEAT response and requesting re-join",
    AC, level="DEBUG", **CLF, error="UNKNOWN_MEMBER_ID", cause_class="member_evicted")
# ---- C4 heartbeats ----------------------------------------------------------------------------------------
add("c4_heartbeat_rebalancing", "CLIENT_HEARTBEAT_REBALANCING",
    CL + "Attempt to heartbeat failed since group is rebalancing", AC, **CLF, cause_class="rebalance_in_progress")
add("c4_heartbeat_rebalancing", "CLIENT_HEARTBEAT_REBALANCING",
    "Attempt to heartbeat failed for group orders-svc since it is rebalancing.", AC, level="DEBUG", **G,
    cause_class="rebalance_in_progress")
add("c4_heartbeat_generation_not_current", "CLIENT_HEARTBEAT_FAILED",
    CL + "Attempt to heartbeat failed since generation 7 is not current", AC, **CLF, generation=7,
    cause_class="member_evicted")
add("c4_heartbeat_member_not_valid", "CLIENT_HEARTBEAT_FAILED",
    CL + f"Attempt to heartbeat failed for since member id {M1} is not valid.", AC, **CLF, member_id=M1,
    cause_class="member_evicted")
add("c4_heartbeat_failed_reset", "CLIENT_HEARTBEAT_FAILED",
    CL + f"Attempt to heartbeat with {GEN7} and group instance id Optional.empty failed due to UNKNOWN_MEMBER_ID,"
    " resetting generation", CC, **CLF, generation=7, member_id=M1, protocol="range", error="UNKNOWN_MEMBER_ID",
    cause_class="member_evicted")
add("c4_heartbeat_failed_stale", "CLIENT_HEARTBEAT_FAILED",
    CL + f"Attempt to heartbeat with stale {GEN7} and group instance id Optional[inst-a] failed due to"
    " ILLEGAL_GENERATION, ignoring the error", CC, **CLF, generation=7, member_id=M1, protocol="range",
    group_instance_id="inst-a", error="ILLEGAL_GENERATION")
add("c4_heartbeat_coordinator_invalid", "CLIENT_HEARTBEAT_FAILED",
    CL + f"Attempt to heartbeat failed since coordinator {NODE} is either not started or not valid", CC,
    **CLF, host="kafka-1:9092", broker_id=1, **FAIL)
# ---- C5 / C6 ---------------------------------------------------------------------------------------------
add("c5_poll_timeout", "CLIENT_POLL_TIMEOUT", CL + "consumer poll timeout has expired. " + POLL_TEXT, CC,
    level="WARN", **CLF, cause_class="poll_timeout")
add("c5_poll_timeout", "CLIENT_POLL_TIMEOUT", CL + "Consumer poll timeout has expired. " + POLL_TEXT, MM,
    level="WARN", **CLF, cause_class="poll_timeout")
add("c5_poll_timeout_leave", "CLIENT_POLL_TIMEOUT",
    CL + "This member will leave the group because consumer poll timeout has expired. " + POLL_TEXT, AC,
    level="WARN", **CLF, cause_class="poll_timeout")
add("c5_leave_group", "CLIENT_LEAVE_GROUP",
    CL + f"Member {M1} sending LeaveGroup request to coordinator {NODE} due to consumer poll timeout has expired.",
    CC, **CLF, member_id=M1, host="kafka-1:9092", broker_id=1, reason="consumer poll timeout has expired.",
    cause_class="poll_timeout")
add("c5_leave_group", "CLIENT_LEAVE_GROUP",
    CL + f"Member {M1} sending LeaveGroup request to coordinator {NODE} due to the consumer is being closed", CC,
    **CLF, member_id=M1, host="kafka-1:9092", broker_id=1, reason="the consumer is being closed",
    cause_class="member_left")
add("c5_leave_group", "CLIENT_LEAVE_GROUP", CL + f"Member {M1} sending LeaveGroup request to coordinator {NODE}",
    AC, **CLF, member_id=M1, host="kafka-1:9092", broker_id=1, cause_class="member_left")
add("c5_leave_group_1_0", "CLIENT_LEAVE_GROUP", CL + f"Sending LeaveGroup request to coordinator {NODE}", AC,
    level="DEBUG", **CLF, host="kafka-1:9092", broker_id=1, cause_class="member_left")
add("c6_heartbeat_fenced", "CLIENT_FENCED",
    "[Consumer instanceId=inst-a, clientId=consumer-orders-svc-1, groupId=orders-svc] Caught fenced"
    " group.instance.id Optional[inst-a] error in heartbeat thread", AC, level="ERROR", **CLF,
    group_instance_id="inst-a", cause_class="static_member_fenced")
add("c6_join_fenced_2_6", "CLIENT_FENCED",
    CL + f"Attempt to join group with generation Optional[inst-a] failed because the group instance id {GEN7} has"
    " been fenced by another instance", AC, level="ERROR", **CLF, cause_class="static_member_fenced")
add("c6_fatal_fenced", "CLIENT_FENCED", CL + "Received fatal exception: group.instance.id gets fenced", AC,
    level="ERROR", **CLF, cause_class="static_member_fenced")
# ---- section 7 new consumer ------------------------------------------------------------------------------
add("k_state_transition", "CLIENT_MEMBER_STATE_TRANSITION",
    CL + f"Member {K1} with epoch 14 transitioned from RECONCILING to ACKNOWLEDGING.", MM,
    **CLF, member_id=K1, generation=14, previous_state="RECONCILING", state="ACKNOWLEDGING")
add("k_state_transition", "CLIENT_MEMBER_STATE_TRANSITION",
    CL + "Member  with epoch 0 transitioned from UNSUBSCRIBED to JOINING.", MM_3_9,
    **CLF, generation=0, previous_state="UNSUBSCRIBED", state="JOINING")
add("k_fatal_state", "CLIENT_MEMBER_STATE_TRANSITION", CL + f"Member {K1} with epoch 14 transitioned to fatal state",
    MM, level="ERROR", **CLF, member_id=K1, generation=14, state="fatal")
add("k_fatal_state", "CLIENT_MEMBER_STATE_TRANSITION", CL + f"Member {K1} with epoch 14 transitioned to FATAL state",
    MM_3_9, level="ERROR", **CLF, member_id=K1, generation=14, state="FATAL")
add("k_reconciling", "CLIENT_RECONCILING",
    CL + f"Reconciling assignment with local epoch 14\n\tMember:                                    {K1}\n"
    "\tAssigned partitions:                       [orders-0, orders-1]\n\tCurrent owned partitions:"
    "                  [orders-0]\n\tAdded partitions (assigned - owned):       [orders-1]\n\tRevoked partitions"
    " (owned - assigned):     []", MM, **CLF, member_id=K1, generation=14, partitions="orders-0, orders-1")
add("k_reconciling_swapped", "CLIENT_RECONCILING",
    CL + f"Reconciling assignment with local epoch {K1}\n\tMember:                                    14\n"
    "\tAssigned partitions:                       [orders-0]\n\tCurrent owned partitions:                  []",
    MM_3_9, **CLF, member_id=K1, generation=14, partitions="orders-0")
add("k_fenced_epoch", "CLIENT_FENCED_EPOCH",
    CL + f"ConsumerGroupHeartbeatRequest failed for member {K1} because epoch 14 is fenced. in 0ms: The member"
    " epoch is fenced by the group coordinator.", HB, **CLF, member_id=K1, generation=14,
    reason="The member epoch is fenced by the group coordinator.", cause_class="member_evicted")
add("k_fenced_epoch", "CLIENT_FENCED_EPOCH",
    CL + f"GroupHeartbeatRequest failed for member {K1} because epoch 14 is fenced.", HB_3_9, **CLF, member_id=K1,
    generation=14, cause_class="member_evicted")
add("k_unknown_member", "CLIENT_FENCED_EPOCH",
    CL + f"ConsumerGroupHeartbeatRequest failed because member {K1} is unknown. in 0ms: The coordinator is not aware"
    " of this member.", HB, **CLF, member_id=K1, reason="The coordinator is not aware of this member.",
    cause_class="member_evicted")
add("k_coordinator_moved", "CLIENT_COORDINATOR_LOST",
    CL + f"ConsumerGroupHeartbeatRequest failed because the group coordinator Optional[{NODE}] is incorrect. Will"
    " attempt to find the coordinator again and retry in 100ms: This is not the correct coordinator.", HB,
    **CLF, host="kafka-1:9092", broker_id=1, **FAIL)
add("k_coordinator_loading", "CLIENT_HEARTBEAT_FAILED",
    CL + f"GroupHeartbeatRequest failed because the group coordinator Optional[{NODE}] is still loading.Will retry"
    " in 100ms: The coordinator is loading and hence can't process requests.", HB_3_9,
    **CLF, host="kafka-1:9092", broker_id=1, **FAIL)
add("k_fenced_while_leaving", "CLIENT_FENCED_EPOCH",
    CL + f"Member {K1} with epoch 14 got fenced but it is already preparing to leave the group, so it will stop"
    " sending heartbeat and won't attempt to send the leave request or rejoin.", MM, **CLF, member_id=K1,
    generation=14, cause_class="member_evicted")
add("k_static_fenced", "CLIENT_FENCED",
    CL + "GroupHeartbeatRequest failed due to fenced instance id inst-a: The instance id is fenced. This is expected"
    " in the case that the member was removed from the group by an admin client, and another member joined using"
    " the same group instance id.", HB_3_9, level="ERROR", **CLF, group_instance_id="inst-a",
    reason="The instance id is fenced", cause_class="static_member_fenced")
add("k_stale_rejoin", "CLIENT_STALE_REJOIN",
    CL + "Time between subsequent calls to poll() was longer than the configured max.poll.interval.ms, exceeded"
    f" approximately by 1532 ms. Member {K1} will rejoin the group now.", MM, level="WARN", **CLF, member_id=K1,
    duration_ms=1532, cause_class="poll_timeout")
add("k_leaving_callbacks", "CLIENT_LEAVING",
    CL + f"Member {K1} is triggering callbacks to release assignment [orders-0] and leave group", MM,
    **CLF, member_id=K1, partitions="orders-0", cause_class="member_left")
add("k_leaving_done", "CLIENT_LEAVING",
    CL + f"Member {K1} completed callback to release assignment. It will proceed to clear its assignment and send a"
    " leave group heartbeat", MM, **CLF, member_id=K1, cause_class="member_left")

# ---- kafka-python (2.0.2 and 2.2.15 format strings) in Python logging's
# `[%(asctime)s] %(levelname)s [%(threadName)s] %(message)s (%(name)s)` layout ----------------------------
KPC = "kafka.coordinator"
KPCC = "kafka.coordinator.consumer"
KPHB = "kafka.coordinator.heartbeat"
HB_THREAD = "orders-svc-heartbeat"
KP_POLL_TEXT = (
    "Consumer poll timeout has expired. This means the time between subsequent calls to poll() was longer than the"
    " configured max_poll_interval_ms, which typically implies that the poll loop is spending too much time"
    " processing messages. You can address this either by increasing max_poll_interval_ms or by reducing the"
    " maximum size of batches returned in poll() with max_poll_records."
)
TPS = "{TopicPartition(topic='orders', partition=0), TopicPartition(topic='orders', partition=1)}"


def kp(kind: str, event_type: str, message: str, logger: str, *, level: str = "INFO", event_level: str = "INFO",
       thread: str = "MainThread", **fields: Any) -> None:
    """A kafka-python case: ``level`` as Python prints it, ``event_level`` as the event carries it."""
    expected = CoordinatorEvent(event_type=event_type, line_kind=kind, message=message, timestamp=UTC_TS,
                                level=event_level, logger=logger, thread=thread, **fields)
    CASES.append(pytest.param(f"[{TS}] {level} [{thread}] {message} ({logger})", expected,
                              id=f"{kind}-{len(CASES)}"))


# The poll-timeout warning names no group: the heartbeat thread `<group id>-heartbeat` does.
kp("kp_poll_timeout", "CLIENT_POLL_TIMEOUT", KP_POLL_TEXT, KPHB, level="WARNING", event_level="WARN",
   thread=HB_THREAD, **G, cause_class="poll_timeout")
kp("kp_poll_timeout", "CLIENT_POLL_TIMEOUT", KP_POLL_TEXT, KPHB, level="WARNING", event_level="WARN",
   thread="Thread-3", cause_class="poll_timeout")
kp("kp_poll_expired", "CLIENT_POLL_TIMEOUT", "Heartbeat poll expired, leaving group", KPC, level="WARNING",
   event_level="WARN", thread=HB_THREAD, **G, cause_class="poll_timeout")
kp("kp_session_expired", "CLIENT_HEARTBEAT_FAILED", "Heartbeat session expired, marking coordinator dead", KPHB,
   level="WARNING", event_level="WARN", thread=HB_THREAD, **G, cause_class="session_timeout")
kp("kp_heartbeat_rebalancing", "CLIENT_HEARTBEAT_REBALANCING",
   "Heartbeat failed for group orders-svc because it is rebalancing", KPHB, level="WARNING", event_level="WARN",
   thread=HB_THREAD, **G, cause_class="rebalance_in_progress")
kp("kp_heartbeat_coordinator_invalid", "CLIENT_HEARTBEAT_FAILED",
   "Heartbeat failed for group orders-svc: coordinator (node coordinator-2) is either not started or not valid",
   KPHB, level="WARNING", event_level="WARN", **G, broker_id=2, cause_class="coordinator_failover")
kp("kp_heartbeat_coordinator_invalid", "CLIENT_HEARTBEAT_FAILED",
   "Heartbeat failed for group orders-svc: coordinator (node None) is either not started or not valid", KPC,
   level="WARNING", event_level="WARN", **G, cause_class="coordinator_failover")
kp("kp_heartbeat_generation", "CLIENT_HEARTBEAT_FAILED",
   "Heartbeat failed for group orders-svc: generation id is not  current.", KPHB, level="WARNING",
   event_level="WARN", **G, cause_class="member_evicted")
kp("kp_heartbeat_unknown_member", "CLIENT_HEARTBEAT_FAILED",
   "Heartbeat: local member_id was not recognized; this consumer needs to re-join", KPHB, level="WARNING",
   event_level="WARN", cause_class="member_evicted")
kp("kp_heartbeat_error", "CLIENT_HEARTBEAT_FAILED",
   "Heartbeat failed: Unhandled error: [Error 15] CoordinatorNotAvailableError", KPHB, level="ERROR",
   event_level="ERROR", error="CoordinatorNotAvailableError", reason="[Error 15] CoordinatorNotAvailableError")
kp("kp_heartbeat_error", "CLIENT_HEARTBEAT_FAILED",
   "Heartbeat failed: authorization error: [Error 30] GroupAuthorizationFailedError: orders-svc", KPC,
   level="ERROR", event_level="ERROR", thread=HB_THREAD, **G, error="GroupAuthorizationFailedError",
   reason="[Error 30] GroupAuthorizationFailedError: orders-svc")
kp("kp_heartbeat_thread_failed", "CLIENT_HEARTBEAT_FAILED",
   "Heartbeat thread for group orders-svc failed due to unexpected error: KafkaConnectionError: socket"
   " disconnected", KPHB, level="ERROR", event_level="ERROR", thread=HB_THREAD, **G, error="KafkaConnectionError",
   reason="KafkaConnectionError: socket disconnected")
kp("kp_joining", "CLIENT_JOIN_SENT", "(Re-)joining group orders-svc", KPC, **G)
kp("kp_joined", "CLIENT_JOINED", f"Successfully joined group orders-svc <Generation 7 (member_id: {M1}, protocol:"
   " range)>", KPC, **G, generation=7, member_id=M1, protocol="range")
kp("kp_joined_generation_id", "CLIENT_JOINED", "Successfully joined group orders-svc with generation 7", KPC, **G,
   generation=7)
kp("kp_member_id_received", "CLIENT_REJOIN_REQUESTED",
   f"Received member id {M1} for group orders-svc; will retry join-group", KPC, **G, member_id=M1,
   cause_class="new_member")
kp("kp_join_failed", "CLIENT_JOIN_FAILED", "Failed to join group orders-svc: [Error 79] MemberIdRequiredError", KPC,
   **G, error="MemberIdRequiredError", reason="[Error 79] MemberIdRequiredError", cause_class="new_member")
kp("kp_join_failed", "CLIENT_JOIN_FAILED", "Failed to join group orders-svc: NodeNotReadyError: coordinator-1", KPC,
   **G, error="NodeNotReadyError", reason="NodeNotReadyError: coordinator-1")
kp("kp_join_failed", "CLIENT_JOIN_FAILED", "Failed to join group orders-svc: [Error 25] UnknownMemberIdError", KPC,
   **G, error="UnknownMemberIdError", reason="[Error 25] UnknownMemberIdError", cause_class="member_evicted")
kp("kp_join_failed", "CLIENT_JOIN_FAILED", "Failed to join group orders-svc: [Error 27] RebalanceInProgressError",
   KPC, **G, error="RebalanceInProgressError", reason="[Error 27] RebalanceInProgressError",
   cause_class="rebalance_in_progress")
kp("kp_join_failed_loading", "CLIENT_JOIN_FAILED",
   "Attempt to join group orders-svc rejected since coordinator coordinator-1 is loading the group.", KPC, **G,
   cause_class="coordinator_failover")
kp("kp_join_failed_unknown_member", "CLIENT_JOIN_FAILED",
   "Attempt to join group orders-svc failed due to unknown member id", KPC, **G, cause_class="member_evicted")
kp("kp_join_failed_coordinator", "CLIENT_JOIN_FAILED",
   "Attempt to join group orders-svc failed due to obsolete coordinator information: NotCoordinatorError", KPC,
   **G, error="NotCoordinatorError", cause_class="coordinator_failover")
kp("kp_join_failed_rebalancing", "CLIENT_JOIN_FAILED",
   "Attempt to join group orders-svc failed due to RebalanceInProgressError, which could indicate a replication"
   " timeout on the broker. Will retry.", KPC, **G, error="RebalanceInProgressError")
kp("kp_join_failed_fatal", "CLIENT_JOIN_FAILED",
   "Attempt to join group orders-svc failed due to fatal error: [Error 23] InconsistentGroupProtocolError", KPC,
   level="ERROR", event_level="ERROR", **G, error="InconsistentGroupProtocolError",
   reason="[Error 23] InconsistentGroupProtocolError")
kp("kp_join_failed_fatal", "CLIENT_JOIN_FAILED",
   "Attempt to join group orders-svc failed due to group authorization error", KPC, level="ERROR",
   event_level="ERROR", **G)
kp("kp_join_failed_unexpected", "CLIENT_JOIN_FAILED", "Unexpected error in join group response: [Error -1]"
   " UnknownError", KPC, level="ERROR", event_level="ERROR", error="UnknownError", reason="[Error -1] UnknownError")
kp("kp_sync_failed_rebalancing", "CLIENT_SYNC_FAILED", "SyncGroup for group orders-svc failed due to coordinator"
   " rebalance", KPC, **G, cause_class="rebalance_in_progress")
kp("kp_sync_failed", "CLIENT_SYNC_FAILED", "SyncGroup for group orders-svc failed due to [Error 22]"
   " IllegalGenerationError", KPC, **G, error="IllegalGenerationError", reason="[Error 22] IllegalGenerationError",
   cause_class="member_evicted")
kp("kp_sync_failed_unexpected", "CLIENT_SYNC_FAILED", "Unexpected error from SyncGroup: [Error -1] UnknownError",
   KPC, level="ERROR", event_level="ERROR", error="UnknownError", reason="[Error -1] UnknownError")
kp("kp_coordinator_discovered", "CLIENT_COORDINATOR_DISCOVERED",
   "Discovered coordinator coordinator-2 for group orders-svc", KPC, **G, broker_id=2)
kp("kp_coordinator_dead", "CLIENT_COORDINATOR_LOST",
   "Marking the coordinator dead (node coordinator-2) for group orders-svc: [Error 16] NotCoordinatorError.", KPC,
   level="WARNING", event_level="WARN", **G, broker_id=2, reason="[Error 16] NotCoordinatorError",
   cause_class="coordinator_failover")
kp("kp_coordinator_dead", "CLIENT_COORDINATOR_LOST",
   "Marking the coordinator dead (node coordinator-2) for group orders-svc: Heartbeat session expired.", KPC,
   level="WARNING", event_level="WARN", thread=HB_THREAD, **G, broker_id=2, reason="Heartbeat session expired",
   cause_class="session_timeout")
kp("kp_leaving", "CLIENT_LEAVE_GROUP", "Leaving consumer group (orders-svc).", KPC, thread=HB_THREAD, **G,
   cause_class="member_left")
kp("kp_revoking", "CLIENT_PARTITIONS_REVOKED", f"Revoking previously assigned partitions {TPS} for group orders-svc",
   KPCC, **G, partitions="orders-0, orders-1")
kp("kp_revoking", "CLIENT_PARTITIONS_REVOKED", "Revoking previously assigned partitions set() for group orders-svc",
   KPCC, **G, partitions="")
kp("kp_assigned", "CLIENT_PARTITIONS_ASSIGNED", f"Setting newly assigned partitions {TPS} for group orders-svc",
   KPCC, **G, partitions="orders-0, orders-1")
kp("kp_deleted_topic_rejoin", "CLIENT_REJOIN_REQUESTED",
   "Assigned partition TopicPartition(topic='gone', partition=0) for non-subscribed topic.. Probably due to a"
   " deleted topic. Requesting Re-join", KPCC, level="WARNING", event_level="WARN",
   reason="Assigned partition TopicPartition(topic='gone', partition=0) for non-subscribed topic.",
   cause_class="metadata_change")
# ---- lines of Kafka 4.3.1 seen in the real-broker sample ---------------------------------------------------
add("k_coordinator_discovered", "CLIENT_COORDINATOR_DISCOVERED",
    CL + "Discovered group coordinator Coordinator(key='orders-svc', nodeId=1, host='127.0.0.1', port=9092,"
    " errorCode=0, errorMessage='')", "org.apache.kafka.clients.consumer.internals.CoordinatorRequestManager",
    **CLF, broker_id=1)


@pytest.mark.parametrize(("line", "expected"), CASES)
def test_line_parses_to_expected_event(line: str, expected: CoordinatorEvent) -> None:
    assert parse_log_line(line) == expected


def test_every_section_10_event_type_has_a_case() -> None:
    covered = {param.values[1].event_type for param in CASES}
    assert set(CATALOGUE_EVENT_TYPES) - covered == set()


def test_every_event_yielding_line_kind_has_a_case() -> None:
    covered = {param.values[1].line_kind for param in CASES}
    event_kinds = {kind.name for kind in LINE_KINDS if kind.event_type is not None}
    assert event_kinds - covered == set()
