"""Which client library a classic group's leader ran, from what its GroupMetadata record holds.

The leader computes the group's assignment with its library's assignor, so a replay must know the library
before it can say a stored assignment is wrong. `__consumer_offsets` does not name the software (KIP-511's
client software name stays in the broker's connection), but each library writes the ConsumerProtocol bytes its
own way, and the leader wrote two kinds of them: its own subscription, and every member's assignment. Those
shapes come first (from each library's source):

| library | subscription | sub user data (range) | assignment | assignment user data |
|---|---|---|---|---|
| Java | v0 (<=2.3), v1 (2.4-3.3), v2 (3.4), v3 | empty (<=2.3), null | = subscription's | empty (<=2.3), null |
| kafka-python, aiokafka | v0 (cooperative-sticky, 3.0+: v1) | empty | v0 (v1) | empty |
| librdkafka | v0 (<1.6), v1 (1.6-2.1), v3 (2.2+) | empty | v0 | each member's own subscription user data |
| franz-go | v0 (<1.14.1), v3 | null | v0 | null |
| Sarama | v0 (<=1.60.0), v1/v2 | null | v0 | null; `sticky`: its state, which members echo |
| KafkaJS | v1 (<=2.2.1), v0 | empty | = subscription's | empty; protocol `RoundRobinAssigner` |

Then the client id, which a user may override: a library's default (`consumer-<group>-<n>`,
`kafka-python-<version>`, `rdkafka`, ...) picks one library among those the bytes allow, and gives the version
where it carries one. A name the bytes rule out is said, and outweighed.

>>> kp = MemberBytes("sticky-a", 0, b"", 0, b"")
>>> c = identify_leader_client([kp], kp, "range")
>>> c.library, c.candidates
('kafka-python', ('kafka-python', 'aiokafka', 'java', 'librdkafka'))
>>> java = MemberBytes("consumer-orders-1", 3, None, 3, None)
>>> identify_leader_client([java], java, "range").describe()
'java'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

#: The libraries told apart, as a replay row names them.
JAVA = "java"
KAFKA_PYTHON = "kafka-python"
AIOKAFKA = "aiokafka"
LIBRDKAFKA = "librdkafka"
FRANZ_GO = "franz-go"
SARAMA = "sarama"
KAFKAJS = "kafkajs"
UNKNOWN = "unknown"

#: KafkaJS's one assigner's protocol name.
KAFKAJS_PROTOCOL = "RoundRobinAssigner"


@dataclass(frozen=True, slots=True)
class MemberBytes:
    """What a GroupMetadata record holds of one member that tells which library wrote its protocol bytes: its
    client id, its subscription's version and user data (None = null), and the version and user data of the
    assignment the leader wrote for it (version None when it stored none)."""

    client_id: str | None
    subscription_version: int | None
    subscription_user_data: bytes | None
    assignment_version: int | None
    assignment_user_data: bytes | None


@dataclass(frozen=True, slots=True)
class LeaderClient:
    """The library the leader ran (`UNKNOWN` when neither bytes nor name tell), its version where the client id
    carries it, the libraries whose writers the bytes allow (``candidates``, likeliest first; the library is one
    of them unless a default client id alone named it), whether a default client id named it, and the evidence
    in words."""

    library: str
    version: str | None
    evidence: tuple[str, ...]
    candidates: tuple[str, ...] = ()
    named: bool = False

    def describe(self) -> str:
        """`kafka-python 2.2.15`, `librdkafka`, or `unknown`."""
        return f"{self.library} {self.version}" if self.version else self.library

    @property
    def certain(self) -> bool:
        """The bytes allow this library only, or a default client id picked it among those they allow."""
        return self.library != UNKNOWN and (self.named or len(self.candidates) == 1)


_DEFAULT_CLIENT_IDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^consumer-(?:.+-)?\d+$"), JAVA),              # ConsumerConfig: consumer-<group>-<n>, consumer-<n>
    (re.compile(r"^kafka-python-(?P<v>\d[\w.+-]*)$"), KAFKA_PYTHON),
    (re.compile(r"^aiokafka-(?P<v>\d[\w.+-]*)$"), AIOKAFKA),
    (re.compile(r"^rdkafka$"), LIBRDKAFKA),
    (re.compile(r"^kgo$"), FRANZ_GO),
    (re.compile(r"^sarama$"), SARAMA),
    (re.compile(r"^kafkajs$"), KAFKAJS),
)


def library_of_client_id(client_id: str | None) -> tuple[str, str | None] | None:
    """(library, version or None) when `client_id` is a library's default, else None."""
    for pattern, library in _DEFAULT_CLIENT_IDS:
        match = pattern.match(client_id or "")
        if match:
            return library, match.groupdict().get("v")
    return None


def _shape(leader: MemberBytes, members: Sequence[MemberBytes],  # noqa: C901 - one rule per row of the module's table
           protocol: str | None) -> tuple[tuple[str, ...], str] | None:
    """The libraries whose writers produce these bytes (likeliest first), and the rule that says so."""
    if protocol == KAFKAJS_PROTOCOL:
        return (KAFKAJS,), f"protocol {KAFKAJS_PROTOCOL!r}: KafkaJS's only assigner"
    stored = [m for m in members if m.assignment_version is not None]
    if leader.subscription_version is None or not stored:
        return None
    sub_v = leader.subscription_version
    versions = {m.assignment_version for m in stored}
    user_data = [m.assignment_user_data for m in stored]
    if protocol in ("sticky", "cooperative-sticky") and any(m.subscription_user_data == b"\0\0\0\0" for m in members):
        return (FRANZ_GO,), ("a member's sticky user data is 00000000 (an empty assignment, the generation -1 "
                             "left out): franz-go's sticky metadata")
    if versions == {0} and protocol == "sticky" and all(u for u in user_data):
        return (SARAMA,), "assignments of a sticky group carry user data (the members' sticky state): Sarama's leader"
    if versions == {0} and sub_v >= 1:
        if all(m.assignment_user_data == m.subscription_user_data for m in stored) and any(
                m.subscription_user_data is not None for m in stored):
            return (LIBRDKAFKA,), (f"subscription v{sub_v}, assignments v0 echoing each member's subscription user "
                                   "data: librdkafka (1.6+)")
        if all(u is None for u in user_data):
            libraries = (FRANZ_GO,) if sub_v == 3 else (SARAMA,)
            return libraries, (f"subscription v{sub_v} and assignments v0 with null user data: "
                               + ("franz-go (1.14.1+)" if sub_v == 3 else "Sarama (1.60.1+)"))
        return None
    if versions == {sub_v} and sub_v >= 1:
        if all(u is None for u in user_data):
            era = {1: "2.4-3.3", 2: "3.4", 3: "3.5+"}.get(sub_v, f"ConsumerProtocol v{sub_v}")
            return (JAVA,), f"subscription and assignments v{sub_v} with null user data: Java (kafka-clients {era})"
        if sub_v == 1 and all(u == b"" for u in user_data):
            return (KAFKA_PYTHON,), ("subscription and assignments v1 with empty user data: kafka-python 3.0+ "
                                     "(cooperative-sticky)")
        return None
    if versions == {0} and sub_v == 0:
        if all(u is None for u in user_data):
            return (SARAMA, FRANZ_GO), "subscription and assignments v0 with null user data: Sarama or franz-go"
        if all(u == b"" for u in user_data):
            # kafka-python's writer; aiokafka's is a copy; Java before 2.4 and librdkafka before 1.6 wrote the
            # same (librdkafka echoes the subscription's user data, which a sticky member's is not).
            alike: tuple[str, ...] = (KAFKA_PYTHON, AIOKAFKA, JAVA) if protocol == "sticky" else (
                KAFKA_PYTHON, AIOKAFKA, JAVA, LIBRDKAFKA)
            return alike, ("subscription and assignments v0 with empty (not null) user data: kafka-python's "
                               "writer (aiokafka's is a copy; Java before 2.4 and librdkafka before 1.6 wrote alike)")
    return None


def identify_leader_client(members: Sequence[MemberBytes], leader: MemberBytes | None,
                           protocol: str | None) -> LeaderClient:
    """The leader's library from its own subscription and the assignments it wrote (`members`: every member of
    the generation, the leader among them), refined or confirmed by its client id."""
    if leader is None:
        return LeaderClient(UNKNOWN, None, ("the record names no leader among its members",))
    shape = _shape(leader, members, protocol)
    named = library_of_client_id(leader.client_id)
    evidence = [shape[1]] if shape else []
    if named is not None:
        evidence.append(f"client id {leader.client_id!r} is {named[0]}'s default")
    if shape is None:
        if named is None:
            return LeaderClient(UNKNOWN, None, (f"client id {leader.client_id!r} is no library's default, and the "
                                                "protocol bytes match no known writer",))
        return LeaderClient(named[0], named[1], tuple(evidence), (), True)
    libraries = shape[0]
    if named is not None and named[0] in libraries:
        return LeaderClient(named[0], named[1], tuple(evidence), libraries, True)
    if named is not None:
        evidence.append("the bytes outweigh the client id (it can be set to anything)")
    return LeaderClient(libraries[0], None, tuple(evidence), libraries, False)
