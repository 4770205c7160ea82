"""The catalogue of coordinator log lines, declared as data.

Every rebalance-relevant line Kafka writes is one ``LineKind``: its event type, the Kafka versions that
write it, and a pattern with named fields. The reference parser (``parser.py``) and the column-wise
classifier (``bulk.py``, which the logs stage runs in its scan tasks) read the same table, so a new Kafka
version is a new row, not a new branch of code. Patterns use only syntax that Python's ``re`` and RE2 read
alike: the parser runs ``python_pattern`` with ``re``, ``bulk`` runs it with Arrow's RE2 kernels (no pattern
runs in the JVM). Named groups are written the Java way, ``(?<name>...)``, and ``python_pattern`` rewrites
them to ``(?P<name>...)``, which both engines read.
Java group names allow no underscore, so pattern fields are camelCase; ``EVENT_FIELD_OF_GROUP`` maps them
onto the snake_case fields of ``CoordinatorEvent``.

A line is parsed in three steps, each a table here: the envelope (timestamp, level, logger, message; see
``envelope.py``), the log-context prefix of the message (``MESSAGE_PREFIXES``: broker id, the
``__consumer_offsets`` partition, client id and group id), then the rest of the message against
``LINE_KINDS`` in order (first match wins; a specific row comes before a general one). Rows whose
``event_type`` is ``None`` are coordinator lines known to carry no event: they are recognised so they are
not counted as unparsed. ``REASON_RULES`` then turn a reason text into a cause class.

kafka-python writes its own texts (``kp_*`` rows): they carry ``loggers`` and are the only rows tried on
lines of those loggers, so a Java row never claims a kafka-python line or the reverse. A client line that
does not name its group takes it from the thread name when ``THREAD_NAMES`` knows the thread.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

from coordinator_core.logs import events as ev

#: Pattern for each ``{placeholder}`` of a template. Each placeholder appears at most once per template,
#: because neither Java nor Python allows a group name twice in one pattern.
FIELD_PATTERNS: Final[dict[str, str]] = {
    "group": r"(?<groupId>.+?)",
    "group_list": r"(?<groupList>.+?)",
    "generation": r"(?<generation>-?\d+)",
    "epoch": r"(?<generation>-?\d+)",
    "member": r"(?<memberId>\S+)",
    "member_opt": r"(?<memberId>\S*)",
    "instance": r"(?<instanceId>\S+)",
    "related": r"(?<relatedMemberId>\S+)",
    "member_ids": r"(?<memberIds>.*)",
    "state": r"(?<state>\w+)",
    "previous_state": r"(?<previousState>\w+)",
    "reason": r"(?<reason>.+?(?:; client reason: (?<clientReason>.*))?)",
    "reason_lazy": r"(?<reason>.*?)",
    "client_reason": r"(?<clientReason>.*)",
    "partition": r"(?<partition>\d+)",
    "offsets_tp": r"__consumer_offsets-(?<partition>\d+)",
    "coordinator_epoch": r"(?:OptionalInt\[)?(?<coordinatorEpoch>-?\d+)\]?",
    "member_count": r"(?<memberCount>\d+)",
    "offsets_removed": r"(?<offsetsRemoved>\d+)",
    "duration": r"(?<durationMs>\d+)",
    "partitions": r"(?<partitions>.*)",
    "partitions_lazy": r"(?<partitions>.*?)",
    "partition_list": r"(?<partitions>\[[^\]]*\]|.*?)",
    "partitions_line": r"(?<partitions>[^\]\n]*)",
    "error": r"(?<error>[\w.$]+)",
    "protocol": r"(?<protocol>[^']*)",
    "group_protocol": r"(?<groupProtocol>\w+)",
    "node": (r"(?:Optional\[)?(?<host>[^\s\[\]()]+) \(id: (?<coordinatorNodeId>-?\d+) rack: [^)]*\)\]?"),
    "generation_obj": (
        r"Generation\{generationId=(?<generation>-?\d+), memberId='(?<memberId>[^']*)',"
        r" protocol='(?<protocol>[^']*)'\}"
    ),
    "sent_generation": (
        r"(?:Generation\{generationId=)?(?<generation>-?\d+)"
        r"(?:, memberId='(?<memberId>[^']*)', protocol='(?<protocol>[^']*)'\})?"
    ),
    # kafka-python renders its own values: ``<Generation 3 (member_id: m, protocol: range)>``, the
    # coordinator as ``coordinator-<broker id>``, partition sets as Python ``set`` reprs of
    # ``TopicPartition(topic='t', partition=0)``, and errors as ``[Error 79] MemberIdRequiredError`` (broker
    # errors) or ``NodeNotReadyError: coordinator-1`` (client errors with arguments).
    "python_generation": (
        r"<Generation (?<generation>-?\d+) \(member_id: (?<memberId>[^,]*), protocol: (?<protocol>[^)>]*)\)>"
    ),
    "python_node": r"(?:(?:coordinator-)?(?<coordinatorNodeId>\d+)|None)",
    "python_partitions": r"(?<partitions>set\(\)|\{[^{}]*\})",
    "python_error": r"(?<reason>(?:\[Error -?\d+\] )?(?<error>[A-Za-z_]\w*)(?:: .*)?)",
    "member_metadata": (
        r"MemberMetadata\(memberId=(?<memberId>[^,]+), groupInstanceId=(?<instanceId>[^,]+),"
        r" clientId=(?<clientId>.*?), clientHost=(?<host>[^,]*), sessionTimeoutMs=\d+,"
        r" rebalanceTimeoutMs=\d+, supportedProtocols=List\(.*?\)(?:, )?\)"
    ),
}

#: Pattern group name -> ``CoordinatorEvent`` field. ``coordinatorNodeId`` is the client's id for the
#: coordinator connection (``Integer.MAX_VALUE - brokerId``) and becomes ``broker_id``; ``groupList``
#: (GROUPS_DELETED) becomes ``group_id``.
EVENT_FIELD_OF_GROUP: Final[dict[str, str]] = {
    "brokerId": "broker_id",
    "partition": "offsets_partition",
    "coordinatorEpoch": "coordinator_epoch",
    "groupId": "group_id",
    "groupList": "group_id",
    "generation": "generation",
    "memberId": "member_id",
    "instanceId": "group_instance_id",
    "relatedMemberId": "related_member_id",
    "memberIds": "member_ids",
    "clientId": "client_id",
    "host": "host",
    "coordinatorNodeId": "broker_id",
    "reason": "reason",
    "clientReason": "client_reason",
    "error": "error",
    "protocol": "protocol",
    "groupProtocol": "group_protocol",
    "state": "state",
    "previousState": "previous_state",
    "memberCount": "member_count",
    "offsetsRemoved": "offsets_removed",
    "durationMs": "duration_ms",
    "partitions": "partitions",
}

_PLACEHOLDER = re.compile(r"(?<!\\)\{([a-z_]+)\}")
_JAVA_NAMED_GROUP = re.compile(r"\(\?<([A-Za-z][A-Za-z0-9]*)>")
#: A named group, written the Java way ``(?<name>`` or Python's ``(?P<name>``.
_ANY_NAMED_GROUP = re.compile(r"\(\?P?<[A-Za-z]\w*>")
_LITERAL_ESCAPES = frozenset("\\.^$*+?()[]{}|/-'`=:,; <>#&%!\"@~")


def expand_template(template: str) -> str:
    """Replaces each ``{placeholder}`` of a template by its field pattern (Java syntax)."""

    def replace(match: re.Match[str]) -> str:
        return FIELD_PATTERNS[match.group(1)]

    return _PLACEHOLDER.sub(replace, template)


def to_python_pattern(java_pattern: str) -> str:
    """Rewrites Java named groups ``(?<name>`` into Python's ``(?P<name>``; nothing else differs."""
    return _JAVA_NAMED_GROUP.sub(r"(?P<\1>", java_pattern)


def unnamed_groups(java_pattern: str) -> str:
    """A pattern with its named groups made plain ``(?:``, for RE2 and for alternations of several patterns
    (one alternation may repeat a group name; RE2 and Python refuse that)."""
    return _ANY_NAMED_GROUP.sub("(?:", java_pattern)


def literal_prefix(template: str) -> str:
    """The fixed text every match of a template starts with: a cheap pre-filter (``startswith``)."""
    out: list[str] = []
    i = 0
    while i < len(template):
        char = template[i]
        if char == "\\" and i + 1 < len(template) and template[i + 1] in _LITERAL_ESCAPES:
            literal, width = template[i + 1], 2
        elif char in "\\.^$*+?()[]{}|":
            break
        else:
            literal, width = char, 1
        following = template[i + width] if i + width < len(template) else ""
        if following in ("?", "*", "{"):
            break
        out.append(literal)
        i += width
    return "".join(out)


@dataclass(frozen=True)
class LineKind:
    """One row of the catalogue: a log line Kafka writes, and what it means.

    Attributes:
        name: stable id of the row (stored as ``line_kind``), prefixed by the reference section (b1, n2, c3).
        event_type: the event it yields, or ``None`` for a known coordinator line that is not an event.
        versions: the Kafka versions (and coordinator or client) that write it, as in the reference.
        template: the message text after the log-context prefix, as a regex with ``{placeholders}``.
        cause: the cause class when the line alone says it (a session-timeout removal); a reason text, when
            there is one and a ``REASON_RULES`` row matches it, takes precedence.
        prefixes: names of ``MESSAGE_PREFIXES`` the line must carry (generic texts such as ``Starting up.``).
        multiline: the message spans lines (cooperative "Updating assignment with" blocks).
        loggers: the full logger names the line must come from, for a client whose texts are its own
            (kafka-python). A line from one of these loggers is matched against such rows only, so a
            kafka-python text that happens to read like a Java one keeps its own row.
    """

    name: str
    event_type: str | None
    versions: str
    template: str
    cause: str | None = None
    prefixes: frozenset[str] | None = None
    multiline: bool = False
    loggers: frozenset[str] | None = None
    pattern: str = field(init=False)
    literal_prefix: str = field(init=False)

    def __post_init__(self) -> None:
        flags = "(?s)" if self.multiline else ""
        object.__setattr__(self, "pattern", f"{flags}^{expand_template(self.template)}$")
        object.__setattr__(self, "literal_prefix", literal_prefix(self.template))

    @property
    def python_pattern(self) -> str:
        """The pattern in Python ``re`` syntax."""
        return to_python_pattern(self.pattern)

    def group_index(self, group_name: str) -> int:
        """The group number of a named field, for Spark SQL's ``regexp_extract(col, pattern, idx)``."""
        return re.compile(self.python_pattern).groupindex[group_name]


@dataclass(frozen=True)
class MessagePrefix:
    """A log-context prefix that Kafka's ``LogContext``/``logIdent`` puts before the message text."""

    name: str
    pattern: str
    protocol_type: str | None = None

    @property
    def python_pattern(self) -> str:
        """The pattern in Python ``re`` syntax."""
        return to_python_pattern(self.pattern)


#: Prefixes in the order they are tried; the message text after the prefix is matched against LINE_KINDS.
MESSAGE_PREFIXES: Final[tuple[MessagePrefix, ...]] = (
    MessagePrefix("scala_group_coordinator", r"^\[GroupCoordinator (?<brokerId>\d+)\]: "),
    MessagePrefix(
        "java_group_coordinator_shard",
        r"^\[GroupCoordinator id=(?<brokerId>\d+) topic=__consumer_offsets partition=(?<partition>\d+)\] ",
    ),
    MessagePrefix("java_group_coordinator", r"^\[GroupCoordinator id=(?<brokerId>\d+)\] "),
    MessagePrefix("scala_group_metadata_manager", r"^\[GroupMetadataManager brokerId=(?<brokerId>\d+)\] "),
    MessagePrefix("scala_group_metadata_manager_0_10",
    r"^\[Group Metadata Manager on Broker (?<brokerId>\d+)\]: "),
    MessagePrefix(
        "consumer_client",
        r"^\[Consumer (?:instanceId=(?<instanceId>[^,\]]*), )?clientId=(?<clientId>[^,\]]*),"
        r" groupId=(?<groupId>[^\]]*)\] ",
        protocol_type="consumer",
    ),
    MessagePrefix(
        "connect_worker",
        r"^\[Worker (?:instanceId=(?<instanceId>[^,\]]*), )?clientId=(?<clientId>[^,\]]*),"
        r" groupId=(?<groupId>[^\]]*)\] ",
        protocol_type="connect",
    ),
)

_BROKER_COORDINATOR_PREFIXES: Final = frozenset({"scala_group_coordinator", "java_group_coordinator"})

#: Thread names that name the group, tried in order on a client line whose text does not (kafka-python's
#: poll-timeout and session-expiry warnings): kafka-python's heartbeat thread is ``<group id>-heartbeat``,
#: the Java consumer's ``kafka-coordinator-heartbeat-thread | <group id>``.
THREAD_NAMES: Final[tuple[MessagePrefix, ...]] = (
    MessagePrefix("java_heartbeat_thread", r"^kafka-coordinator-heartbeat-thread \| (?<groupId>.+)$"),
    MessagePrefix("kafka_python_heartbeat_thread", r"^(?<groupId>.+)-heartbeat$"),
)

#: kafka-python's coordinator loggers: ``kafka.coordinator`` (base.py), ``kafka.coordinator.consumer``
#: (consumer.py) and ``kafka.coordinator.heartbeat`` (the heartbeat thread's lines from 2.1 on, and
#: heartbeat.py). Python loggers are module names, not classes, so they are listed whole.
KAFKA_PYTHON_LOGGERS: Final = frozenset({"kafka.coordinator", "kafka.coordinator.consumer",
                                         "kafka.coordinator.heartbeat"})

# Shorthands that keep the table below readable.
_K = LineKind
_B_CLASSIC = "old Scala coordinator"
_N_CLASSIC = "new Java coordinator"


def _kp(name: str, event_type: str | None, versions: str, template: str, cause: str | None = None) -> LineKind:
    """A kafka-python row: ``versions`` are the kafka-python releases read (2.0.2 and 2.2.15)."""
    return LineKind(name, event_type, f"kafka-python {versions}", template, cause, loggers=KAFKA_PYTHON_LOGGERS)

#: The catalogue, in matching order.
LINE_KINDS: Final[tuple[LineKind, ...]] = (
    # ---- B1 / N1: rebalance prepared ------------------------------------------------------------------
    _K("b1_restabilize", ev.REBALANCE_PREPARED, f"0.9-0.10 {_B_CLASSIC}",
       r"Preparing to restabilize group {group} with old generation {generation}"),
    _K("b1_prepare_no_reason", ev.REBALANCE_PREPARED, f"0.11-2.0 {_B_CLASSIC}",
       r"Preparing to rebalance group {group} with old generation {generation} \({offsets_tp}\)"),
    _K("b1_prepare", ev.REBALANCE_PREPARED,
       f"2.1-4.0 {_B_CLASSIC}; 3.6+ {_N_CLASSIC} (no partition, final '.')",
       r"Preparing to rebalance group {group} in state {state} with old generation {generation}"
       r"(?: \({offsets_tp}\))? \(reason: {reason}\)\.?"),
    # ---- B2 / B2b / B2c ---------------------------------------------------------------------------------
    _K("b2_stabilized", ev.GROUP_STABILIZED, "0.9+ both coordinators (partition 0.11+, member count 2.8+)",
       r"Stabilized group {group} generation {generation}(?: \({offsets_tp}\))?(?: with {member_count}"
       r" members)?\.?"),
    _K("b2b_empty", ev.GROUP_EMPTY, "0.10+ both coordinators",
       r"Group {group} with generation {generation} is now empty(?: \({offsets_tp}\))?\.?",
       ev.GROUP_EMPTY_OR_DEAD),
    _K("b2c_assignment_received", ev.ASSIGNMENT_RECEIVED,
       "0.10+ both coordinators (leader 3.0+, counts 2.8+)",
       r"Assignment received from leader(?: {member})? for group {group} for generation {generation}"
       r"(?:\. The group has {member_count} members, \d+ of which are static\.)?"),
    # ---- B3: failures and timeouts ----------------------------------------------------------------------
    _K("b3_member_failed", ev.MEMBER_FAILED_SESSION_TIMEOUT, "0.10+ both coordinators (INFO from 0.11.0.1)",
       r"Member {member} in group {group} has failed(?:, removing it from the group)?\.?",
       ev.SESSION_TIMEOUT),
    _K("b3_pending_member_expired", ev.PENDING_MEMBER_EXPIRED, "2.2+ both coordinators",
       r"Pending member {member} in group {group} has been removed after session timeout expiration\.?",
       ev.SESSION_TIMEOUT),
    _K("b3_not_rejoined_removed", ev.MEMBERS_NOT_REJOINED_REMOVED, "2.7+ both coordinators ('remove' in 2.7)",
       r"Group {group} removed? dynamic members who haven't joined: {member_ids}", ev.NOT_REJOINED_IN_TIME),
    _K("b3_no_members_rejoined", ev.MEMBERS_NOT_REJOINED_REMOVED, "2.3+ both coordinators (ERROR)",
       r"Group {group} could not complete rebalance because no members rejoined\.?", ev.NOT_REJOINED_IN_TIME),
    _K("b3_leader_failed_new_leader", ev.LEADER_FAILED_TO_REJOIN, f"2.3-4.0 {_B_CLASSIC} (GroupMetadata)",
       r"Group leader \[member\.id: {member}, group\.instance\.id: {instance}\] failed to join before"
       r" rebalance"
       r" timeout, while new leader {related} was elected\.", ev.NOT_REJOINED_IN_TIME),
    _K("b3_leader_failed_no_member", ev.LEADER_FAILED_TO_REJOIN, f"2.3-4.0 {_B_CLASSIC} (GroupMetadata)",
       r"Group leader \[member\.id: {member}, group\.instance\.id: {instance}\] failed to join before"
       r" rebalance"
       r" timeout, and the group couldn't proceed to next generation ?because no member joined\.",
       ev.NOT_REJOINED_IN_TIME),
    _K("n1_leader_failed_new_leader", ev.LEADER_FAILED_TO_REJOIN, f"3.7+ {_N_CLASSIC} (ClassicGroup)",
       r"Group leader \[memberId: {member}, groupInstanceId: {instance}\] failed to join before the rebalance"
       r" timeout\. Member {related} was elected as the new leader\.", ev.NOT_REJOINED_IN_TIME),
    _K("n1_leader_failed_no_member", ev.LEADER_FAILED_TO_REJOIN, f"3.7+ {_N_CLASSIC} (ClassicGroup)",
       r"Group leader \[memberId: {member}, groupInstanceId: {instance}\] failed to join before the rebalance"
       r" timeout and the group couldn't proceed to the next generation because no member joined\.",
       ev.NOT_REJOINED_IN_TIME),
    # ---- B4 / N1: LeaveGroup ------------------------------------------------------------------------------
    _K("b4_member_left", ev.MEMBER_LEFT, f"0.11.0.1-2.3 {_B_CLASSIC} (DEBUG before 2.2)",
       r"Member {member} in group {group} has left, removing it from the group", ev.MEMBER_LEFT_CAUSE),
    _K("b4_member_left_instance", ev.MEMBER_LEFT, f"2.4-2.8 {_B_CLASSIC}",
       r"Member\[group\.instance\.id {instance}, member\.id {member}\] in group {group} has left, removing it"
       r" from the group", ev.MEMBER_LEFT_CAUSE),
    _K("b4_member_left_explicit", ev.MEMBER_LEFT, f"3.0-4.0 {_B_CLASSIC} (client reason 3.2+)",
       r"Member {member_metadata} has left group {group} through explicit `LeaveGroup`(?: request)?"
       r"(?:; client reason: {client_reason})?", ev.MEMBER_LEFT_CAUSE),
    _K("n1_member_left", ev.MEMBER_LEFT, f"3.7+ {_N_CLASSIC}",
       r"\[Group {group}\] Member {member} has left group through explicit `LeaveGroup` request;"
       r" client reason: {client_reason}", ev.MEMBER_LEFT_CAUSE),
    _K("b4_pending_member_leaving", ev.PENDING_MEMBER_LEFT, f"2.2-2.8 {_B_CLASSIC}",
       r"Pending member {member} is leaving group {group}\.", ev.MEMBER_LEFT_CAUSE),
    _K("b4_pending_member_left", ev.PENDING_MEMBER_LEFT, f"3.0-4.0 {_B_CLASSIC}",
       r"Pending member with memberId={member} has left group {group} through explicit `LeaveGroup` request"
       r"(?:; client reason: {client_reason})?", ev.MEMBER_LEFT_CAUSE),
    _K("n1_pending_member_left", ev.PENDING_MEMBER_LEFT, f"3.7+ {_N_CLASSIC}",
       r"\[Group {group}\] Pending member {member} has left group through explicit `LeaveGroup` request;"
       r" client reason: {client_reason}", ev.MEMBER_LEFT_CAUSE),
    # ---- B5 / B6 / N1: joins, static membership ---------------------------------------------------------
    _K("b5_unknown_member_join", ev.MEMBER_JOIN_NEW_ID,
       f"2.4+ {_B_CLASSIC} ('rejoins' and DEBUG in 2.4); 3.7+ {_N_CLASSIC} ('requesting', 'added')",
       r"(?:Static|Dynamic) [Mm]ember with unknown member id (?:re)?joins group {group} in {state} state\."
       r" Created a new member id {member}(?: and request(?:ing)? the member to rejoin with this id"
       r"| for this member and add(?:ed)? to the group)\.", ev.NEW_MEMBER),
    _K("n1_unknown_member_join_no_rejoin", ev.MEMBER_JOIN_NEW_ID,
       f"3.7+ {_N_CLASSIC} (clients without KIP-394)",
       r"Dynamic member with unknown member id joins group {group} in state {state}\. Created a new member id"
       r" {member} and added the member to the group\.", ev.NEW_MEMBER),
    _K("b5_pending_member_joins", ev.MEMBER_JOIN_NEW_ID, "3.0+ both coordinators (DEBUG before 4.0)",
       r"Pending dynamic member with id {member} joins group {group} in {state} state\. Adding to the group"
       r" now\.",
       ev.NEW_MEMBER),
    _K("b6_static_member_added", ev.MEMBER_JOIN_NEW_ID, f"2.5-2.8 {_B_CLASSIC}",
       r"Adding new static member {instance} to group {group} with member id {member}\.", ev.NEW_MEMBER),
    _K("b6_static_member_new_id", ev.MEMBER_JOIN_NEW_ID, "3.0+ both coordinators",
       r"Static member with groupInstanceId={instance} and unknown member id joins group {group} in {state}"
       r" state\. Created a new member id {member} for this member and add(?:ed)? to the group\.",
       ev.NEW_MEMBER),
    _K("b6_static_member_rejoins_2_3", ev.STATIC_MEMBER_REPLACED, f"2.3-2.4 {_B_CLASSIC}",
       r"Static member {instance} with unknown member id rejoins, assigning new member id {member}, while old"
       r" member {related} will be removed\.", ev.STATIC_MEMBER_REPLACED_CAUSE),
    _K("b6_static_member_rejoins", ev.STATIC_MEMBER_REPLACED, f"2.5-2.8 {_B_CLASSIC}",
       r"Static member {instance} of group {group} with unknown member id rejoins, assigning new member id"
       r" {member}, while old member id {related} will be removed\.", ev.STATIC_MEMBER_REPLACED_CAUSE),
    _K("b6_static_member_replaced", ev.STATIC_MEMBER_REPLACED, "3.0+ both coordinators",
       r"Static member with groupInstanceId={instance} and unknown member id joins group {group} in {state}"
       r" state\. Replacing previously mapped member {related} with this groupInstanceId\.",
       ev.STATIC_MEMBER_REPLACED_CAUSE),
    _K("b6_static_member_fenced", ev.STATIC_MEMBER_FENCED,
       f"3.0+ {_B_CLASSIC} ('current'); 3.7+ {_N_CLASSIC} ('existing', ClassicGroup)",
       r"Request memberId={member} for static member with groupInstanceId={instance} is fenced by"
       r" (?:current|existing) memberId={related} during operation {reason}", ev.STATIC_MEMBER_FENCED_CAUSE),
    _K("b6_static_member_fenced_2_5", ev.STATIC_MEMBER_FENCED, f"2.5-2.8 {_B_CLASSIC} (ERROR, GroupMetadata)",
       r"given member\.id {member} is identified as a known static member {instance}, but not matching the"
       r" expected member\.id {related} during {reason}, will respond with instance fenced error",
       ev.STATIC_MEMBER_FENCED_CAUSE),
    _K("b6_static_member_no_rebalance", None, "2.3+ both coordinators ('a rebalance' in 4.3.1's new coordinator)",
       r"Static member (?:which )?joins during \w+ stage .*will not trigger (?:a )?rebalance\."),
    # ---- B7 / N3: coordinator failover -----------------------------------------------------------------
    _K("b7_elected", ev.COORDINATOR_ELECTED, f"2.8+ {_B_CLASSIC} (epoch 2.8.1+)",
       r"Elected as the group coordinator for partition {partition}(?: in epoch {coordinator_epoch})?",
       ev.COORDINATOR_FAILOVER),
    _K("b7_resigned", ev.COORDINATOR_RESIGNED, f"2.8+ {_B_CLASSIC} (epoch 2.8.1+)",
       r"Resigned as the group coordinator for partition {partition}(?: in epoch {coordinator_epoch})?",
       ev.COORDINATOR_FAILOVER),
    _K("b7_load_scheduled", ev.OFFSETS_LOAD_SCHEDULED, f"1.0+ {_B_CLASSIC} (epoch 2.8.1+)",
       r"Scheduling loading of offsets and group metadata from {offsets_tp}(?: for epoch"
       r" {coordinator_epoch})?",
       ev.COORDINATOR_FAILOVER),
    _K("b7_load_started_0_10", ev.OFFSETS_LOAD_SCHEDULED, f"0.10-0.11 {_B_CLASSIC}",
       r"Loading offsets and group metadata from {offsets_tp}", ev.COORDINATOR_FAILOVER),
    _K("n3_load_scheduled", ev.OFFSETS_LOAD_SCHEDULED, "3.6+ CoordinatorRuntime",
       r"Scheduling loading of metadata from {offsets_tp} with epoch {coordinator_epoch}",
       ev.COORDINATOR_FAILOVER),
    _K("b7_loaded", ev.OFFSETS_LOADED, f"1.0+ {_B_CLASSIC} (scheduler time 2.6+, epoch 2.8.1+)",
       r"Finished loading offsets and group metadata from {offsets_tp} in {duration} milliseconds"
       r"(?: for epoch {coordinator_epoch})?(?:, of which \d+ milliseconds was spent in the scheduler)?\.",
       ev.COORDINATOR_FAILOVER),
    _K("b7_loaded_0_10", ev.OFFSETS_LOADED, f"0.10-0.11 {_B_CLASSIC}",
       r"Finished loading offsets from {offsets_tp} in {duration} milliseconds\.", ev.COORDINATOR_FAILOVER),
    _K("n3_loaded", ev.OFFSETS_LOADED, "3.6+ CoordinatorRuntime (LoadSummary 3.7, timings 3.8+)",
       r"Finished loading of metadata from {offsets_tp} with epoch {coordinator_epoch}(?: in {duration}ms"
       r" where"
       r" \d+ms was spent in the scheduler\. Loaded \d+ records which total to \d+ bytes| and"
       r" LoadSummary=.*)?\.",
       ev.COORDINATOR_FAILOVER),
    _K("b7_load_error", ev.OFFSETS_LOAD_FAILED, f"1.0+ {_B_CLASSIC} (ERROR, stack trace)",
       r"Error loading offsets from {offsets_tp}", ev.COORDINATOR_FAILOVER),
    _K("n3_load_failed", ev.OFFSETS_LOAD_FAILED, "3.6+ CoordinatorRuntime (ERROR)",
       r"Failed to load metadata from {offsets_tp} with epoch {coordinator_epoch} due to {reason_lazy}\.",
       ev.COORDINATOR_FAILOVER),
    _K("b7_already_loading", None, f"1.0+ {_B_CLASSIC}",
       r"(?:Already loading offsets and group metadata from __consumer_offsets-\d+|Offset load from"
       r" __consumer_offsets-\d+ already in progress\.)"),
    _K("n3_already_loading_or_active", None, "3.6+ CoordinatorRuntime",
       r"The coordinator {offsets_tp} is already (?:loading metadata|active)\."),
    _K("b7_stale_epoch", None, f"2.8.1+ {_B_CLASSIC}",
       r"Not (?:loading|removing) offsets and group metadata (?:for|from) {offsets_tp} in epoch .*"),
    _K("n3_stale_epoch", None, "3.6+ CoordinatorRuntime",
       r"Ignor(?:ing|ed) (?:loading|unloading) metadata (?:from|for) {offsets_tp} .*"),
    _K("n3_state_machine_resync", None, "3.8+ CoordinatorRuntime (ERROR)",
       r"The state machine of the coordinator {offsets_tp} is out of sync with the underlying log\..*"),
    _K("b7_unload_scheduled", ev.OFFSETS_UNLOAD_SCHEDULED, f"1.0+ {_B_CLASSIC}",
       r"Scheduling unloading of offsets and group metadata from {offsets_tp}", ev.COORDINATOR_FAILOVER),
    _K("n3_unload_scheduled", ev.OFFSETS_UNLOAD_SCHEDULED, "3.6+ CoordinatorRuntime",
       r"Scheduling unloading of metadata for {offsets_tp} with epoch"
       r" (?:{coordinator_epoch}|OptionalInt\.empty)",
       ev.COORDINATOR_FAILOVER),
    _K("n3_unload_started", None, "3.6+ CoordinatorRuntime",
       r"Started unloading metadata for {offsets_tp} with epoch .*"),
    _K("b7_unloaded", ev.OFFSETS_UNLOADED, f"1.0+ {_B_CLASSIC} (epoch 2.8.1+)",
       r"Finished unloading {offsets_tp}(?: for coordinator epoch {coordinator_epoch})?\. Removed"
       r" {offsets_removed} cached offsets and \d+ cached groups\.", ev.COORDINATOR_FAILOVER),
    _K("b7_unloaded_0_10", ev.OFFSETS_UNLOADED, f"0.10-0.11 {_B_CLASSIC}",
       r"Removed {offsets_removed} cached offsets for {offsets_tp} on follower transition\.",
       ev.COORDINATOR_FAILOVER),
    _K("n3_unloaded", ev.OFFSETS_UNLOADED, "3.6+ CoordinatorRuntime",
       r"Finished unloading metadata for {offsets_tp} with epoch"
       r" (?:{coordinator_epoch}|OptionalInt\.empty)\.",
       ev.COORDINATOR_FAILOVER),
    _K("b7_group_loading", ev.GROUP_LOADED, f"0.10-4.0 {_B_CLASSIC}",
       r"Loading group metadata for {group} with generation {generation}", ev.COORDINATOR_FAILOVER),
    _K("n3_group_loaded", ev.GROUP_LOADED, f"3.6+ {_N_CLASSIC} ('generic' 3.6, share/streams 4.1+)",
       r"Loaded {group_protocol} group {group} with {member_count} members\.", ev.COORDINATOR_FAILOVER),
    _K("b7_member_loaded", ev.MEMBER_LOADED, f"2.8-4.0 {_B_CLASSIC} (GroupMetadata$)",
       r"Loaded member {member_metadata} in group {group} with generation {generation}\.",
       ev.COORDINATOR_FAILOVER),
    _K("b7_static_member_loaded", ev.MEMBER_LOADED, f"2.5-2.7 {_B_CLASSIC} (GroupMetadata$)",
       r"Static member {member_metadata}\.groupInstanceId of group {group} loaded with member id \S+ at"
       r" generation"
       r" {generation}\.", ev.COORDINATOR_FAILOVER),
    _K("b7_group_unloading", ev.GROUP_UNLOADED, f"0.10-4.0 {_B_CLASSIC}",
       r"Unloading group metadata for {group} with generation {generation}", ev.COORDINATOR_FAILOVER),
    _K("n3_classic_group_unloading", ev.GROUP_UNLOADED, f"3.7+ {_N_CLASSIC}",
       r"\[GroupId={group}\] Unloading group metadata for generation {generation}\.",
       ev.COORDINATOR_FAILOVER),
    _K("n3_group_unloaded", ev.GROUP_UNLOADED, f"3.7+ {_N_CLASSIC} (consumer, share, streams groups)",
       r"\[GroupId={group}\] Unloaded group metadata for group epoch {generation}\.",
       ev.COORDINATOR_FAILOVER),
    # ---- B8 / N4: expiry and deletion ------------------------------------------------------------------
    _K("b8_offsets_expired", ev.OFFSETS_EXPIRED, f"0.10+ {_B_CLASSIC}",
       r"Removed {offsets_removed} expired offsets in {duration} milliseconds\.",
       ev.OFFSETS_EXPIRED_OR_DELETED),
    _K("n4_offsets_expired", ev.OFFSETS_EXPIRED, f"3.7+ {_N_CLASSIC} (GroupCoordinatorShard)",
       r"Generated {offsets_removed} tombstone records while cleaning up group metadata in {duration}"
       r" milliseconds\.", ev.OFFSETS_EXPIRED_OR_DELETED),
    _K("b8_group_offsets_expired", ev.OFFSETS_EXPIRED, f"2.1+ {_B_CLASSIC} (DEBUG, GroupMetadata)",
       r"Expired offsets from group '{group}': {partitions}", ev.OFFSETS_EXPIRED_OR_DELETED),
    _K("b8_group_dead", ev.GROUP_DEAD, f"0.10+ {_B_CLASSIC}",
       r"Group {group} transitioned to Dead in generation {generation}", ev.GROUP_EMPTY_OR_DEAD),
    _K("b8_groups_deleted", ev.GROUPS_DELETED, "1.1+ both coordinators (offset count 2.0+)",
       r"The following groups were deleted: {group_list}(?:\. A total of {offsets_removed} offsets were"
       r" removed\.)?",
       ev.GROUP_EMPTY_OR_DEAD),
    _K("b8_offsets_deleted_group", ev.OFFSETS_DELETED, f"2.4+ {_B_CLASSIC}",
       r"The following offsets of the group {group} were deleted: {partitions_lazy}\. A total of"
       r" {offsets_removed}"
       r" offsets were removed\.", ev.OFFSETS_EXPIRED_OR_DELETED),
    _K("b8_offsets_deleted_partitions", ev.OFFSETS_DELETED, f"2.0+ {_B_CLASSIC}",
       r"Removed {offsets_removed} offsets associated with deleted partitions: {partitions_lazy}\.",
       ev.OFFSETS_EXPIRED_OR_DELETED),
    _K("n4_offsets_deleted", ev.OFFSETS_DELETED, f"3.8+ {_N_CLASSIC} ('topics' 4.3+)",
       r"Generated {offsets_removed} tombstone records in {duration} milliseconds while deleting offsets for"
       r" (?:partitions|topics) {partitions_lazy}\.", ev.OFFSETS_EXPIRED_OR_DELETED),
    _K("b8_simple_group_created", None, "4.0 Scala; 4.0+ OffsetMetadataManager",
       r"(?:Creating simple consumer group .+ via manual offset commit\."
       r"|\[GroupId .+\] Creating a simple consumer group via manual offset commit\.)"),
    _K("b8_failed_to_write_empty", None, f"0.10+ {_B_CLASSIC} (WARN)",
       r"Failed to write empty metadata for group .*"),
    _K("b8_group_dead_skip", None, f"2.3+ {_B_CLASSIC}", r"Group .+ is dead, skipping rebalance stage"),
    _K("b3_heartbeat_notice", None, f"2.2+ {_B_CLASSIC}",
       r"(?:Received notification of heartbeat expiration for member .*|Member id .+ was not found in .+"
       r" during"
       r" heartbeat (?:expiration|completion check)\.?)"),
    _K("b2c_empty_assignment", None, "2.5+ both coordinators (WARN)",
       r"(?:Setting empty assignments for members .*|Sending empty assignment to member .*)"),
    # ---- B9: lifetime ---------------------------------------------------------------------------------
    _K("b9_starting", ev.COORDINATOR_STARTUP, "all", r"Starting up\.", ev.COORDINATOR_FAILOVER,
       prefixes=_BROKER_COORDINATOR_PREFIXES),
    _K("b9_startup_complete", ev.COORDINATOR_STARTUP, "all", r"Startup complete\.", ev.COORDINATOR_FAILOVER,
       prefixes=_BROKER_COORDINATOR_PREFIXES),
    _K("b9_shutting_down", ev.COORDINATOR_SHUTDOWN, "all", r"Shutting down\.", ev.COORDINATOR_FAILOVER,
       prefixes=_BROKER_COORDINATOR_PREFIXES),
    _K("b9_shutdown_complete", ev.COORDINATOR_SHUTDOWN, "all", r"Shutdown complete\.",
       ev.COORDINATOR_FAILOVER,
       prefixes=_BROKER_COORDINATOR_PREFIXES),
    _K("n3_runtime_shutdown_steps", None, "4.x CoordinatorRuntime, MultiThreadedEventProcessor (seen in 4.3.1)",
       r"(?:Closing coordinator runtime|Shutting down event processor|Event processor closed|Coordinator runtime"
       r" closed)\.", prefixes=frozenset({"java_group_coordinator"})),
    # ---- N2: KIP-848 consumer groups -------------------------------------------------------------------
    _K("n2_member_joins", ev.CG_MEMBER_JOINED, "3.6+ (protocol named 3.9+)",
       r"\[GroupId {group}\] Member {member} joins the consumer group(?: using the {group_protocol}"
       r" protocol)?\.",
       ev.NEW_MEMBER),
    _K("n2_static_member_joins", ev.CG_MEMBER_JOINED, "3.7+ (protocol named 3.9+)",
       r"\[GroupId {group}\] Static member {member} with instance id {instance} joins the consumer group"
       r"(?: using the {group_protocol} protocol)?\.", ev.NEW_MEMBER),
    _K("n2_member_id_handshake", ev.MEMBER_JOIN_NEW_ID, "3.8+ (classic member of a consumer group)",
       r"\[GroupId {group}\] Dynamic member with unknown member id joins the consumer group\. Created a new"
       r" member"
       r" id {member} and requesting the member to rejoin with this id\.", ev.NEW_MEMBER),
    _K("n2_static_member_rejoins", ev.CG_STATIC_MEMBER_REPLACED, "3.7",
       r"\[GroupId {group}\] Static member {member} with instance id {instance} re-joins the consumer"
       r" group\.",
       ev.STATIC_MEMBER_REPLACED_CAUSE),
    _K("n2_static_member_replaced_3_8", ev.CG_STATIC_MEMBER_REPLACED, "3.8",
       r"\[GroupId {group}\] Static member with unknown member id and instance id {instance} re-joins the"
       r" consumer"
       r" group\. Created a new member {member} to replace the existing member {related}\.",
       ev.STATIC_MEMBER_REPLACED_CAUSE),
    _K("n2_static_member_replaced", ev.CG_STATIC_MEMBER_REPLACED, "3.9+",
       r"\[GroupId {group}\] Static member with instance id {instance} re-joins the consumer group using the"
       r" {group_protocol} protocol\. Created a new member {member} to replace the existing member"
       r" {related}\.",
       ev.STATIC_MEMBER_REPLACED_CAUSE),
    _K("n2_static_member_fenced", ev.STATIC_MEMBER_FENCED, "3.7+",
       r"\[GroupId {group}\] Static member {member} with instance id {instance} is fenced by existing member"
       r" {related}\.", ev.STATIC_MEMBER_FENCED_CAUSE),
    _K("n2_static_member_instance_owned", ev.STATIC_MEMBER_FENCED, "3.7+ ('is is' before 4.0)",
       r"\[GroupId {group}\] Static member {member} with instance id {instance} cannot join the group"
       r" because the"
       r" instance id is(?: is)? owned by member {related}\.", ev.STATIC_MEMBER_FENCED_CAUSE),
    _K("n2_epoch_bumped", ev.CG_EPOCH_BUMPED, "3.6+ (metadata hash 4.1+)",
       r"\[GroupId {group}\] Bumped group epoch to {epoch}(?: with metadata hash -?\d+)?\."),
    _K("n2_target_assignment", ev.CG_TARGET_ASSIGNMENT_COMPUTED,
       "3.6+ (assignor 3.7+, time 3.8+, assignment printed before 4.0)",
       r"\[GroupId {group}\] Computed a new target assignment for epoch {epoch}(?: with '{protocol}'"
       r" assignor)?"
       r"(?: in {duration}ms)?(?:: {partitions})?\."),
    _K("n2_member_assignment_state", ev.CG_MEMBER_ASSIGNMENT_STATE, "3.8+ (INFO 3.8-3.9, DEBUG 4.0+)",
       r"\[GroupId {group}\] Member {member} new assignment state: epoch={epoch}, previousEpoch=-?\d+,"
       r" state={state}, assignedPartitions={partitions_lazy}(?: and revokedPartitions=.*)?\."),
    _K("n2_member_transitioned", ev.CG_MEMBER_ASSIGNMENT_STATE, "3.6-3.7",
       r"\[GroupId {group}\] Member {member} transitioned from .+ to .+\."),
    _K("n2_member_left", ev.CG_MEMBER_LEFT, "3.6+",
       r"\[GroupId {group}\] Member {member} left the consumer group\.", ev.MEMBER_LEFT_CAUSE),
    _K("n2_static_member_left", ev.CG_MEMBER_LEFT, "3.7+ ('Static Member' before 4.0)",
       r"\[GroupId {group}\] Static [Mm]ember {member} with instance id {instance} left the consumer group\.",
       ev.MEMBER_LEFT_CAUSE),
    _K("n2_static_member_temporarily_left", ev.CG_MEMBER_LEFT, "3.7+ ('Static Member' before 4.0)",
       r"\[GroupId {group}\] Static [Mm]ember {member} with instance id {instance} temporarily left the"
       r" consumer"
       r" group\.", ev.MEMBER_LEFT_CAUSE),
    _K("n2_classic_member_left", ev.CG_MEMBER_LEFT, "3.8+ ('[Group' and 'Member' before 4.0)",
       r"\[Group(?:Id)? {group}\] Dynamic [Mm]ember {member} has left group through explicit `LeaveGroup`"
       r" request;"
       r" client reason: {client_reason}", ev.MEMBER_LEFT_CAUSE),
    _K("n2_classic_static_member_left", ev.CG_MEMBER_LEFT, "3.8+ ('[Group' and 'Member' before 4.0)",
       r"\[Group(?:Id)? {group}\] Static [Mm]ember {member} with instance id {instance} has left group"
       r" through"
       r" explicit `LeaveGroup` request; client reason: {client_reason}", ev.MEMBER_LEFT_CAUSE),
    _K("n2_member_fenced", ev.CG_MEMBER_FENCED, "3.6+ ('expired..' in 3.8-3.9)",
       r"\[GroupId {group}\] Member {member} fenced from the group because (?<reason>.+?)\.\.?"),
    _K("n2_converted", ev.CG_CONVERTED, "4.0+",
       r"\[GroupId {group}\] Converted the (?:empty )?(?:classic|consumer) group to a {group_protocol}"
       r" group\.",
       ev.GROUP_PROTOCOL_MIGRATION),
    _K("n2_subscription_metadata", None, "3.8+ (INFO 3.8-3.9)",
       r"\[GroupId .+\] Computed new (?:subscription metadata|metadata hash): .*"),
    _K("n2_cannot_migrate", None, "3.8+", r"\[GroupId .+\] Cannot (?:upgrade|downgrade) .*"),
    # ---- C1: client join and sync ----------------------------------------------------------------------
    _K("c1_joining", ev.CLIENT_JOIN_SENT, "0.10+ (group named before 1.0)",
       r"\(Re-\)joining group(?: {group})?"),
    _K("c1_joined", ev.CLIENT_JOINED, "2.6.1+",
       r"Successfully joined group with generation {generation_obj}"),
    _K("c1_joined_generation_id", ev.CLIENT_JOINED, "1.0-2.6.0",
       r"Successfully joined group with generation {generation}"),
    _K("c1_joined_0_10", ev.CLIENT_JOINED, "0.10-0.11",
       r"Successfully joined group {group} with generation {generation}"),
    _K("c1_synced", ev.CLIENT_SYNCED, "2.6.1+", r"Successfully synced group in generation {generation_obj}"),
    _K("c1_assignment_received", ev.CLIENT_ASSIGNMENT_RECEIVED, "2.6+",
       r"Notifying assignor about the new Assignment\(partitions=\[{partitions}\](?:, userDataSize=\d+)?\)"),
    _K("c1_assignment_computed", ev.CLIENT_ASSIGNMENT_COMPUTED, "2.4+ (leader only)",
       r"Finished assignment for group at generation {generation}: {partitions}"),
    _K("c1_static_leader_skipped", None, "3.2+",
       r"Skipped assignment for returning static leader at generation \d+\..*"),
    _K("c1_coordinator_discovered", ev.CLIENT_COORDINATOR_DISCOVERED, "0.10+ ('group coordinator' 1.0.1+)",
       r"Discovered (?:group )?coordinator {node}(?: for group {group})?\.?"),
    _K("c1_coordinator_dead", ev.CLIENT_COORDINATOR_LOST, "0.10-1.0.1",
       r"Marking the coordinator {node} dead(?: for group {group})?\.?", ev.COORDINATOR_FAILOVER),
    _K("c1_coordinator_unavailable", ev.CLIENT_COORDINATOR_LOST, "1.0.2-2.6",
       r"Group coordinator {node} is unavailable or invalid, will attempt rediscovery",
       ev.COORDINATOR_FAILOVER),
    _K("c1_coordinator_unavailable_cause", ev.CLIENT_COORDINATOR_LOST,
       "2.7+ (no space before isDisconnected <3.3)",
       r"Group coordinator {node} is unavailable or invalid due to cause: {reason_lazy}\. ?isDisconnected:"
       r" (?:true|false)\. Rediscovery will be attempted\.", ev.COORDINATOR_FAILOVER),
    _K("k_coordinator_discovered", ev.CLIENT_COORDINATOR_DISCOVERED,
       "4.x new consumer (CoordinatorRequestManager; seen in 4.3.1; nodeId is the broker id)",
       r"Discovered group coordinator Coordinator\(key='{group}', nodeId=(?<coordinatorNodeId>\d+), host='[^']*',"
       r" port=\d+, errorCode=0, errorMessage='[^']*'\)"),
    _K("c1_coordinator_disconnect", None, "3.1+", r"Requesting disconnect from last known coordinator .*"),
    _K("c6_join_fenced", ev.CLIENT_FENCED, "2.7+ (ERROR)",
       r"JoinGroup failed: The group instance id {instance} has been fenced by another instance\. Sent"
       r" generation"
       r" was {sent_generation}", ev.STATIC_MEMBER_FENCED_CAUSE),
    _K("c6_sync_fenced", ev.CLIENT_FENCED, "2.7+ (ERROR)",
       r"SyncGroup failed: The group instance id {instance} has been fenced by another instance\. Sent"
       r" generation"
       r" was {sent_generation}", ev.STATIC_MEMBER_FENCED_CAUSE),
    _K("c1_join_failed_loading", ev.CLIENT_JOIN_FAILED, "2.7+",
       r"JoinGroup failed: Coordinator {node} is loading the group\.", ev.COORDINATOR_FAILOVER),
    _K("c1_join_failed", ev.CLIENT_JOIN_FAILED, "2.7+",
       r"JoinGroup failed: {reason_lazy} (?:Need to re-join the group|Marking coordinator unknown)\. Sent"
       r" generation was {sent_generation}"),
    _K("c1_join_failed_non_fatal", ev.CLIENT_JOIN_FAILED, "2.8+",
       r"JoinGroup failed due to non-fatal error: {error}, which could indicate a replication timeout on the"
       r" broker\. Will retry\."),
    _K("c1_join_failed_exception", ev.CLIENT_JOIN_FAILED, "2.2-2.6",
       r"Join group failed with {error}: {reason}"),
    _K("c1_rebalance_failed", ev.CLIENT_JOIN_FAILED, "2.6.1-2.8 (stack trace)", r"Rebalance failed\."),
    _K("c1_sync_failed_rebalancing", ev.CLIENT_SYNC_FAILED, "2.7+",
       r"SyncGroup failed: The group began another rebalance\. Need to re-join the group\. Sent generation"
       r" was"
       r" {sent_generation}", ev.REBALANCE_IN_PROGRESS),
    _K("c1_sync_failed", ev.CLIENT_SYNC_FAILED, "2.7+",
       r"SyncGroup failed: {reason_lazy} (?:Need to re-join the group|Marking coordinator unknown)\. Sent"
       r" generation was {sent_generation}"),
    _K("c1_generation_cleared", ev.CLIENT_SYNC_FAILED, "2.7+",
       r"Generation data was cleared by heartbeat thread to {sent_generation} and state is now {state} before"
       r" receiving SyncGroup response, marking this rebalance as failed and retry", ev.MEMBER_EVICTED),
    # ---- C2: partitions --------------------------------------------------------------------------------
    _K("c2_revoking", ev.CLIENT_PARTITIONS_REVOKED, "1.0-2.3 classic; 3.7+ new consumer",
       r"Revoking previously assigned partitions ?{partition_list}(?: for group {group})?"),
    _K("c2_revoke", ev.CLIENT_PARTITIONS_REVOKED,
       "2.4+ (brackets 4.1+; ConsumerRebalanceListenerInvoker 3.7+)",
       r"Revoke previously assigned partitions ?{partition_list}"),
    _K("c2_assigned", ev.CLIENT_PARTITIONS_ASSIGNED, "0.10+ ('Setting' before 2.4, 'Adding' 2.4+)",
       r"(?:Setting|Adding) newly assigned partitions:? ?{partition_list}(?: for group {group})?"),
    _K("c2_lost", ev.CLIENT_PARTITIONS_LOST, "2.4+", r"Lost previously assigned partitions ?{partition_list}",
       ev.MEMBER_EVICTED),
    # A partition's fetch position after its assignment: the consumer can fetch it from then on. 3.7+ logs the
    # committed-offset line from ConsumerUtils without the client prefix (attributed by its file, see
    # coordinator_core.cost); the reset from SubscriptionState, with it.
    _K("c2_offset_set", ev.CLIENT_OFFSET_SET, "0.10+ (ConsumerCoordinator to 3.6; ConsumerUtils, no prefix, 3.7+)",
       r"Setting offset for partition {partitions_lazy} to the committed offset .*"),
    _K("c2_offset_reset", ev.CLIENT_OFFSET_SET, "2.0+ (SubscriptionState; 'to position FetchPosition{...}' 2.4+)",
       r"Resetting offset for partition {partitions_lazy} to (?:position|offset) .*"),
    _K("c2_giving_away_lost", None, "2.4+",
       r"Giving away all assigned partitions as lost since generation(?:/memberID)? has been reset,"
       r" ?indicating"
       r" that consumer is .*"),
    _K("c2_pause_flag", None, "3.2+", r"The pause flag in partitions .* will be removed due to .*"),
    _K("c2_cooperative_update", ev.CLIENT_COOPERATIVE_UPDATE, "2.4+ classic; 3.7 new consumer (multi-line)",
       r"Updating assignment with\s+(?:Assigned partitions|now assigned partitions):\s*\[{partitions_line}\]"
       r"(?:\s.*)?", multiline=True),
    _K("c2_need_revoke", ev.CLIENT_REJOIN_REQUESTED, "2.7-2.8 (DEBUG 2.4-2.6)",
       r"Need to revoke partitions {partition_list} and re-join the group", ev.COOPERATIVE_SECOND_ROUND),
    # ---- C3: why the client rejoins --------------------------------------------------------------------
    _K("c3_rejoin_requested", ev.CLIENT_REJOIN_REQUESTED, "3.0+", r"Request joining group due to: {reason}"),
    _K("c3_rejoin_metadata_changed", ev.CLIENT_REJOIN_REQUESTED, "2.7-2.8",
       r"Requesting to re-join the group and trigger rebalance since {reason}", ev.METADATA_CHANGE),
    _K("c3_generation_reset", ev.CLIENT_GENERATION_RESET, "3.0+ ('and member id' 3.2+)",
       r"Resetting generation (?:and member id )?due to: {reason}"),
    _K("c3_generation_reset_error", ev.CLIENT_GENERATION_RESET, "2.4-2.8 (DEBUG)",
       r"Resetting generation after encountering {error} from \w+ response(?: and requesting re-join)?",
       ev.MEMBER_EVICTED),
    # ---- C4: heartbeats --------------------------------------------------------------------------------
    _K("c4_heartbeat_rebalancing", ev.CLIENT_HEARTBEAT_REBALANCING, "0.10-2.8 (INFO 2.0+)",
       r"Attempt to heartbeat failed (?:for group {group} since it|since group) is rebalancing\.?",
       ev.REBALANCE_IN_PROGRESS),
    _K("c4_heartbeat_generation_not_current", ev.CLIENT_HEARTBEAT_FAILED, "2.0-2.5",
       r"Attempt to heartbeat failed since generation {generation} is not current", ev.MEMBER_EVICTED),
    _K("c4_heartbeat_member_not_valid", ev.CLIENT_HEARTBEAT_FAILED, "2.0-2.5 ('for since' sic)",
       r"Attempt to heartbeat failed for since member id {member} is not valid\.", ev.MEMBER_EVICTED),
    _K("c4_heartbeat_failed_reset", ev.CLIENT_HEARTBEAT_FAILED, "2.6+",
       r"Attempt to heartbeat with {generation_obj} and group instance id {instance} failed due to {error},"
       r" resetting generation", ev.MEMBER_EVICTED),
    _K("c4_heartbeat_failed_stale", ev.CLIENT_HEARTBEAT_FAILED, "2.6+",
       r"Attempt to heartbeat with stale {generation_obj} and group instance id {instance} failed due to"
       r" {error},"
       r" ignoring the error"),
    _K("c4_heartbeat_coordinator_invalid", ev.CLIENT_HEARTBEAT_FAILED, "2.0+ (final '.' before 2.5)",
       r"Attempt to heartbeat failed since coordinator {node} is either not started or not valid\.?",
       ev.COORDINATOR_FAILOVER),
    # ---- C5: poll timeout and leaving ------------------------------------------------------------------
    _K("c5_poll_timeout", ev.CLIENT_POLL_TIMEOUT, "3.0+ classic, 3.7+ new consumer ('Consumer' 3.8+) (WARN)",
       r"[Cc]onsumer poll timeout has expired\. This means the time between subsequent calls to poll\(\) was"
       r" longer"
       r" than the configured max\.poll\.interval\.ms.*", ev.POLL_TIMEOUT),
    _K("c5_poll_timeout_leave", ev.CLIENT_POLL_TIMEOUT, "2.1-2.3 (WARN)",
       r"This member will leave the group because consumer poll timeout has expired\..*", ev.POLL_TIMEOUT),
    _K("c5_leave_group", ev.CLIENT_LEAVE_GROUP, "2.2+ (reason 2.4+)",
       r"Member {member} sending LeaveGroup request to coordinator {node}(?: due to {reason})?",
       ev.MEMBER_LEFT_CAUSE),
    _K("c5_leave_group_1_0", ev.CLIENT_LEAVE_GROUP, "1.0-2.1",
       r"Sending LeaveGroup request to coordinator {node}(?: for group {group})?", ev.MEMBER_LEFT_CAUSE),
    _K("c5_leave_group_failed", None, "2.4+ (ERROR)",
       r"LeaveGroup request (?:with .+ )?failed with error: .*"),
    # ---- C6: fencing -----------------------------------------------------------------------------------
    _K("c6_heartbeat_fenced", ev.CLIENT_FENCED, "2.3+ (ERROR; Optional[...] 2.4+)",
       r"Caught fenced group\.instance\.id {instance} error in heartbeat thread",
       ev.STATIC_MEMBER_FENCED_CAUSE),
    _K("c6_join_fenced_2_6", ev.CLIENT_FENCED, "2.6 (ERROR)",
       r"Attempt to join group with generation .+ failed because the group instance id .+ has been fenced by"
       r" another instance", ev.STATIC_MEMBER_FENCED_CAUSE),
    _K("c6_fatal_fenced", ev.CLIENT_FENCED, "2.3-2.5 (ERROR)",
       r"Received fatal exception: group\.instance\.id gets fenced", ev.STATIC_MEMBER_FENCED_CAUSE),
    # ---- section 7: new consumer (KIP-848) -------------------------------------------------------------
    _K("k_state_transition", ev.CLIENT_MEMBER_STATE_TRANSITION, "3.9+ (TRACE 3.7-3.8)",
       r"Member {member_opt} with epoch {epoch} transitioned from {previous_state} to {state}\."),
    _K("k_fatal_state", ev.CLIENT_MEMBER_STATE_TRANSITION, "3.7+ (ERROR)",
       r"Member {member_opt} with epoch {epoch} transitioned to {state} state\.?"),
    _K("k_reconciling", ev.CLIENT_RECONCILING, "3.8+ (multi-line)",
       r"Reconciling assignment with local epoch {epoch}\s+Member:\s+{member_opt}\s+Assigned partitions:\s+"
       r"\[{partitions_line}\](?:\s.*)?", multiline=True),
    _K("k_reconciling_swapped", ev.CLIENT_RECONCILING, "3.8.0 (member id and epoch swapped)",
       r"Reconciling assignment with local epoch {member_opt}\s+Member:\s+{epoch}\s+Assigned partitions:\s+"
       r"\[{partitions_line}\](?:\s.*)?", multiline=True),
    _K("k_fenced_epoch", ev.CLIENT_FENCED_EPOCH, "3.7+ ('ConsumerGroupHeartbeatRequest' 4.0+)",
       r"(?:Consumer)?GroupHeartbeatRequest failed for member {member} because epoch {epoch} is fenced\."
       r"(?: in \d+ms: {reason})?", ev.MEMBER_EVICTED),
    _K("k_unknown_member", ev.CLIENT_FENCED_EPOCH, "3.7+",
       r"(?:Consumer)?GroupHeartbeatRequest failed because member {member} is unknown\.(?: in \d+ms:"
       r" {reason})?",
       ev.MEMBER_EVICTED),
    _K("k_coordinator_moved", ev.CLIENT_COORDINATOR_LOST, "3.7+",
       r"(?:Consumer)?GroupHeartbeatRequest failed because the group coordinator (?:{node}|Optional\.empty)"
       r" is"
       r" (?:incorrect|not available)\..*", ev.COORDINATOR_FAILOVER),
    _K("k_coordinator_loading", ev.CLIENT_HEARTBEAT_FAILED, "3.7+ ('loading.Will' before 4.0)",
       r"(?:Consumer)?GroupHeartbeatRequest failed because the group coordinator (?:{node}|Optional\.empty)"
       r" is"
       r" still loading\..*", ev.COORDINATOR_FAILOVER),
    _K("k_fenced_while_leaving", ev.CLIENT_FENCED_EPOCH, "3.8+",
       r"Member {member_opt} with epoch {epoch} got fenced but it is already preparing to leave the group,"
       r" so it"
       r" will stop sending heartbeat and won't attempt to (?:send the leave request or )?rejoin\.?",
       ev.MEMBER_EVICTED),
    _K("k_static_fenced", ev.CLIENT_FENCED, "3.9+ (ERROR)",
       r"(?:Consumer)?GroupHeartbeatRequest failed due to fenced instance id {instance}: {reason_lazy}\."
       r" This is"
       r" expected in the case that the member was removed from the group by an admin client, and another"
       r" member"
       r" joined using the same group instance id\.", ev.STATIC_MEMBER_FENCED_CAUSE),
    _K("k_stale_rejoin", ev.CLIENT_STALE_REJOIN, "3.8+ (WARN)",
       r"Time between subsequent calls to poll\(\) was longer than the configured max\.poll\.interval\.ms,"
       r" exceeded approximately by {duration} ms\. Member {member_opt} will rejoin the group now\.",
       ev.POLL_TIMEOUT),
    _K("k_leaving_callbacks", ev.CLIENT_LEAVING, "3.9+ (DEBUG 3.8)",
       r"Member {member_opt} is triggering callbacks to release assignment {partition_list} and leave group",
       ev.MEMBER_LEFT_CAUSE),
    _K("k_leaving_done", ev.CLIENT_LEAVING, "3.9+ (DEBUG 3.8)",
       r"Member {member_opt} completed callback to release assignment\. It will proceed to clear its"
       r" assignment"
       r" and send a leave group heartbeat", ev.MEMBER_LEFT_CAUSE),
    _K("k_heartbeat_interval", None, "4.4",
       r"Member \S* received heartbeat interval \d+ms from the group coordinator"),
    # ---- kafka-python (loggers kafka.coordinator, .consumer, .heartbeat; its own texts and renderings) ----
    _kp("kp_poll_timeout", ev.CLIENT_POLL_TIMEOUT, "2.2.15 (WARNING, heartbeat thread; then leaves the group)",
        r"Consumer poll timeout has expired\. This means the time between subsequent calls to poll\(\) was"
        r" longer than the configured max_poll_interval_ms.*", ev.POLL_TIMEOUT),
    _kp("kp_poll_expired", ev.CLIENT_POLL_TIMEOUT, "2.0.2 (WARNING, heartbeat thread)",
        r"Heartbeat poll expired, leaving group", ev.POLL_TIMEOUT),
    _kp("kp_session_expired", ev.CLIENT_HEARTBEAT_FAILED, "2.0.2, 2.2.15 (WARNING, heartbeat thread)",
        r"Heartbeat session expired, marking coordinator dead", ev.SESSION_TIMEOUT),
    _kp("kp_heartbeat_rebalancing", ev.CLIENT_HEARTBEAT_REBALANCING, "2.0.2, 2.2.15 (WARNING)",
        r"Heartbeat failed for group {group} because it is rebalancing", ev.REBALANCE_IN_PROGRESS),
    _kp("kp_heartbeat_coordinator_invalid", ev.CLIENT_HEARTBEAT_FAILED, "2.0.2, 2.2.15 (WARNING)",
        r"Heartbeat failed for group {group}: coordinator \(node {python_node}\) is either not started or"
        r" not valid", ev.COORDINATOR_FAILOVER),
    _kp("kp_heartbeat_generation", ev.CLIENT_HEARTBEAT_FAILED, "2.0.2, 2.2.15 (WARNING; 'not  current' sic)",
        r"Heartbeat failed for group {group}: generation id is not +current\.", ev.MEMBER_EVICTED),
    _kp("kp_heartbeat_unknown_member", ev.CLIENT_HEARTBEAT_FAILED, "2.0.2, 2.2.15 (WARNING)",
        r"Heartbeat: local member_id was not recognized; this consumer needs to re-join", ev.MEMBER_EVICTED),
    _kp("kp_heartbeat_error", ev.CLIENT_HEARTBEAT_FAILED, "2.0.2, 2.2.15 (ERROR)",
        r"Heartbeat failed: (?:authorization error|Unhandled error): {python_error}"),
    _kp("kp_heartbeat_thread_failed", ev.CLIENT_HEARTBEAT_FAILED, "2.0.2, 2.2.15 (ERROR; traceback 2.2)",
        r"Heartbeat thread for group {group} failed due to unexpected error: {python_error}"),
    _kp("kp_heartbeat_thread", None, "2.0.2, 2.2.15",
        r"(?:Starting new heartbeat thread|Stopping heartbeat thread|Heartbeat thread did not fully terminate"
        r" during close|heartbeat_interval_ms is high relative to session_timeout_ms .*)"),
    _kp("kp_joining", ev.CLIENT_JOIN_SENT, "2.0.2, 2.2.15", r"\(Re-\)joining group {group}"),
    _kp("kp_joined", ev.CLIENT_JOINED, "2.2.15",
        r"Successfully joined group {group} {python_generation}"),
    _kp("kp_joined_generation_id", ev.CLIENT_JOINED, "2.0.2",
        r"Successfully joined group {group} with generation {generation}"),
    _kp("kp_leader_elected", None, "2.0.2, 2.2.15",
        r"Elected group leader -- performing partition assignments using .*"),
    _kp("kp_member_id_received", ev.CLIENT_REJOIN_REQUESTED, "2.2.15 (KIP-394 member id handshake)",
        r"Received member id {member} for group {group}; will retry join-group", ev.NEW_MEMBER),
    _kp("kp_join_failed", ev.CLIENT_JOIN_FAILED, "2.2.15",
        r"Failed to join group {group}: {python_error}"),
    _kp("kp_join_failed_loading", ev.CLIENT_JOIN_FAILED, "2.2.15 (DEBUG 2.0.2)",
        r"Attempt to join group {group} rejected since coordinator .+ is loading the group\.",
        ev.COORDINATOR_FAILOVER),
    _kp("kp_join_failed_unknown_member", ev.CLIENT_JOIN_FAILED, "2.2.15 (DEBUG 2.0.2)",
        r"Attempt to join group {group} failed due to unknown member id", ev.MEMBER_EVICTED),
    _kp("kp_join_failed_coordinator", ev.CLIENT_JOIN_FAILED, "2.2.15 (DEBUG 2.0.2)",
        r"Attempt to join group {group} failed due to obsolete coordinator information: {error}",
        ev.COORDINATOR_FAILOVER),
    _kp("kp_join_failed_rebalancing", ev.CLIENT_JOIN_FAILED, "2.2.15",
        r"Attempt to join group {group} failed due to {error}, which could indicate a replication timeout on"
        r" the broker\. Will retry\."),
    _kp("kp_join_failed_fatal", ev.CLIENT_JOIN_FAILED, "2.0.2, 2.2.15 (ERROR)",
        r"Attempt to join group {group} failed due to (?:fatal error: {python_error}|group authorization"
        r" error)"),
    _kp("kp_join_failed_unexpected", ev.CLIENT_JOIN_FAILED, "2.0.2, 2.2.15 (ERROR)",
        r"Unexpected error in join group response: {python_error}"),
    _kp("kp_sync_failed_rebalancing", ev.CLIENT_SYNC_FAILED, "2.2.15 (DEBUG 2.0.2)",
        r"SyncGroup for group {group} failed due to coordinator rebalance", ev.REBALANCE_IN_PROGRESS),
    _kp("kp_sync_failed", ev.CLIENT_SYNC_FAILED, "2.2.15 (DEBUG 2.0.2)",
        r"SyncGroup for group {group} failed due to {python_error}"),
    _kp("kp_sync_failed_unexpected", ev.CLIENT_SYNC_FAILED, "2.0.2, 2.2.15 (ERROR)",
        r"Unexpected error from SyncGroup: {python_error}"),
    _kp("kp_coordinator_discovered", ev.CLIENT_COORDINATOR_DISCOVERED, "2.0.2, 2.2.15",
        r"Discovered coordinator {python_node} for group {group}"),
    _kp("kp_coordinator_dead", ev.CLIENT_COORDINATOR_LOST, "2.0.2, 2.2.15 (WARNING)",
        r"Marking the coordinator dead \(node {python_node}\) for group {group}: {reason_lazy}\.",
        ev.COORDINATOR_FAILOVER),
    _kp("kp_coordinator_lookup_failed", None, "2.0.2, 2.2.15 (ERROR; 'coordinator' 2.0.2)",
        r"Group [Cc]oordinator (?:lookup for group .+ failed|Request failed): .*"),
    _kp("kp_request_failed", None, "2.0.2, 2.2.15 (ERROR; then marks the coordinator dead)",
        r"Error sending \w+ to node .*"),
    _kp("kp_leaving", ev.CLIENT_LEAVE_GROUP, "2.0.2, 2.2.15 (a poll timeout's leave too; no KIP-800 reason)",
        r"Leaving consumer group \({group}\)\.", ev.MEMBER_LEFT_CAUSE),
    _kp("kp_leave_result", None, "2.2.15 (success DEBUG in 2.0.2; failure ERROR)",
        r"LeaveGroup request (?:for group .+ returned successfully|for group .+ failed with error: .*|failed: .*)"),
    _kp("kp_revoking", ev.CLIENT_PARTITIONS_REVOKED, "2.0.2, 2.2.15 (every round: eager only)",
        r"Revoking previously assigned partitions {python_partitions} for group {group}"),
    _kp("kp_assigned", ev.CLIENT_PARTITIONS_ASSIGNED, "2.0.2, 2.2.15",
        r"Setting newly assigned partitions {python_partitions} for group {group}"),
    _kp("kp_deleted_topic_rejoin", ev.CLIENT_REJOIN_REQUESTED, "2.0.2, 2.2.15 (WARNING)",
        r"{reason_lazy}\. Probably due to a deleted topic\. Requesting Re-join", ev.METADATA_CHANGE),
    _kp("kp_offsets", None, "2.0.2, 2.2.15",
        r"(?:Offset commit failed: |Failing OffsetCommit request since |OffsetCommit for group |Group .+ failed to"
        r" commit partition |Not authorized to commit |Unknown error fetching offsets|OffsetFetchRequest -- unknown"
        r" topic |Auto offset commit failed for group |Broker version \(.*\) does not support offset commits"
        r"|group_id is None: disabling auto-commit|User provided (?:subscription )?(?:rebalance )?listener ).*"),
    # ---- client lines of the coordinator loggers that are about offsets, not membership ----------------
    _K("c_offsets", None, "all clients",
       r"(?:Found no committed offset for partition |Failing OffsetCommit request since |Offset commit failed on"
       r" partition |(?:Asynchronous|Synchronous)"
       r" auto-commit of offsets |Committing offsets|User provided listener ).*"),
)

# ---- cause classes from reason texts ---------------------------------------------------------------


@dataclass(frozen=True)
class ReasonRule:
    """A reason text that names a cause. Rules are searched (not anchored) in the reason, in order.

    The first rule that matches gives the cause class; the first one that captures ``memberId`` /
    ``instanceId`` / ``error`` fills those fields when the line itself did not.
    """

    name: str
    cause: str | None
    pattern: str

    @property
    def python_pattern(self) -> str:
        """The pattern in Python ``re`` syntax."""
        return to_python_pattern(self.pattern)


REASON_RULES: Final[tuple[ReasonRule, ...]] = (
    ReasonRule("poll_timeout", ev.POLL_TIMEOUT, r"poll timeout has expired"),
    ReasonRule("heartbeat_expiration", ev.SESSION_TIMEOUT,
               r"^[Rr]emoving member (?<memberId>\S+) on heartbeat expiration"),
    ReasonRule("session_expired", ev.SESSION_TIMEOUT, r"session expired"),
    ReasonRule("leave_group", ev.MEMBER_LEFT_CAUSE, r"^[Rr]emoving member (?<memberId>\S+?) on LeaveGroup"),
    ReasonRule("static_replacement", ev.STATIC_MEMBER_REPLACED_CAUSE, r"for static member replacement"),
    ReasonRule("explicit_leave", ev.MEMBER_LEFT_CAUSE,
               r"explicit `LeaveGroup` request|pro-actively leaving|is being closed|for member leaving"),
    ReasonRule("new_member", ev.NEW_MEMBER,
               r"^[Aa]dding new member (?<memberId>\S+?)(?: with group instance ?id"
               r" (?<instanceId>[^;\s]+))?(?:;|$)"),
    ReasonRule("member_id_required", ev.NEW_MEMBER,
               r"need to re-join with the given member-id|MemberIdRequired|needs to have a valid member id"),
    ReasonRule("leader_rejoin", ev.LEADER_REJOIN, r"^[Ll]eader (?<memberId>\S+) re-joining group"),
    ReasonRule("static_metadata", ev.METADATA_CHANGE,
               r"^Updating metadata for static member (?<memberId>\S+) with instance id"
               r" (?<instanceId>[^;\s]+)"),
    ReasonRule("static_protocol_change", ev.METADATA_CHANGE,
               r"selectedProtocol will change because static member (?<memberId>\S+) with instance id"
               r" (?<instanceId>\S+) joined"),
    ReasonRule("member_metadata", ev.METADATA_CHANGE, r"^Updating metadata for member (?<memberId>[^;\s]+)"),
    ReasonRule("metadata_changed", ev.METADATA_CHANGE,
               r"metadata has changed|subscription has changed|does not match the current subscription"),
    ReasonRule("member_joining", None, r"^Member (?<memberId>\S+) (?:is )?joining group during"),
    ReasonRule("pending_sync_expired", ev.NOT_REJOINED_IN_TIME, r"on pending sync request expiration"),
    ReasonRule("rebalance_timeout", ev.NOT_REJOINED_IN_TIME,
               r"failed to (?:join|sync) within|failed to transition from epoch|failed to revoke partitions"),
    ReasonRule("over_capacity", ev.GROUP_OVER_CAPACITY, r"Freshly-loaded group"),
    ReasonRule("protocol_migration", ev.GROUP_PROTOCOL_MIGRATION, r"^Downgrade group|Converted the"),
    ReasonRule("store_error", ev.COORDINATOR_ERROR, r"when storing group assignment ?during SyncGroup"),
    ReasonRule("already_rebalancing", ev.REBALANCE_IN_PROGRESS,
               r"group is already rebalancing|began another rebalance|RebalanceInProgressError"),
    ReasonRule("revoke_and_rejoin", ev.COOPERATIVE_SECOND_ROUND, r"need to revoke partitions"),
    ReasonRule("static_fenced", ev.STATIC_MEMBER_FENCED_CAUSE,
               r"fenced instance id|instance id is(?: is)? owned by"),
    ReasonRule("member_evicted", ev.MEMBER_EVICTED,
               r"encountered (?<error>[A-Z_]+) from [A-Z_]+ response|was modified by heartbeat thread"
               r"|UnknownMemberIdError|IllegalGenerationError"),
)

#: Logger class names (last segment) of coordinator code: an entry from these loggers that matches no
#: catalogue row is counted as unparsed. CoordinatorRuntime is left out because the share coordinator uses it
#: too; its group-coordinator lines are recognised by their ``[GroupCoordinator id=N]`` prefix.
#: Loggers (classes) whose lines may match a catalogue row although they are not the coordinators': their
#: other lines are another component's, not unparsed coordinator lines (the offsets manager's runtime; the
#: consumer's position bookkeeping, which logs when a partition's fetch position is set).
OTHER_CATALOGUE_LOGGERS: Final[frozenset[str]] = frozenset({"CoordinatorRuntime", "ConsumerUtils", "SubscriptionState"})

COORDINATOR_LOGGERS: Final[frozenset[str]] = frozenset({
    "GroupCoordinator", "GroupMetadataManager", "GroupMetadata", "GroupMetadata$", "ClassicGroup",
    "GenericGroup", "GroupCoordinatorShard", "GroupCoordinatorService", "OffsetMetadataManager",
    "ConsumerCoordinator", "AbstractCoordinator", "ConsumerRebalanceListenerInvoker", "MembershipManagerImpl",
    "ConsumerMembershipManager", "AbstractMembershipManager", "HeartbeatRequestManager",
    "ConsumerHeartbeatRequestManager", "AbstractHeartbeatRequestManager", "CoordinatorRequestManager",
    "WorkerCoordinator",
})
