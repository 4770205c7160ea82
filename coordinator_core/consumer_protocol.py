"""The embedded ConsumerProtocol: what a classic consumer group stores per member in GroupMetadata.

For ``protocol_type == "consumer"`` each member's ``subscription`` is a ConsumerProtocolSubscription and
its ``assignment`` a ConsumerProtocolAssignment (int16 version + non-flexible struct). Kafka parses a
version above the highest it knows with the newest layout ("new versions cannot remove or reorder
fields"), and so does this module. Other protocol types (``connect``, Kafka Streams' ``stream`` user data,
the empty string) are opaque and stay bytes.

The assignor user data of ``sticky`` (previous assignment + generation, no version prefix) and
``cooperative-sticky`` (an int32 generation) is decoded here too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from coordinator_core import schema, wire
from coordinator_core._frozen import fast_init
from coordinator_core.errors import DecodeError
from coordinator_core.messages import (
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    STICKY_ASSIGNOR_USER_DATA,
    AssignmentWire,
    MemberMetadata,
    StickyAssignorUserDataWire,
    SubscriptionWire,
    TopicPartitionsEntry,
)

CONSUMER_PROTOCOL_TYPE = "consumer"
HIGHEST_SUBSCRIPTION_VERSION = 3
HIGHEST_ASSIGNMENT_VERSION = 3


class TopicPartition(NamedTuple):
    """A (topic, partition) pair; compares equal to the plain tuple."""

    topic: str
    partition: int


@fast_init
@dataclass(frozen=True, slots=True)
class Subscription:
    """A decoded ConsumerProtocolSubscription. ``owned_partitions`` (v1+, KIP-429) is flattened to
    (topic, partition) pairs, empty before v1 (what Kafka's `Subscription.ownedPartitions()` gives);
    ``generation_id`` (v2+) and ``rack_id`` (v3+) are None in versions that do not have them.
    ``trailing_bytes`` counts bytes after the complete struct, which Kafka ignores (0 normally)."""

    version: int
    topics: tuple[str, ...]
    user_data: bytes | None
    owned_partitions: tuple[TopicPartition, ...]
    generation_id: int | None
    rack_id: str | None
    trailing_bytes: int = 0


@fast_init
@dataclass(frozen=True, slots=True)
class Assignment:
    """A decoded ConsumerProtocolAssignment: the partitions given to the member, and assignor user data.
    ``trailing_bytes`` counts bytes after the complete struct, which Kafka ignores (0 normally)."""

    version: int
    partitions: tuple[TopicPartition, ...]
    user_data: bytes | None
    trailing_bytes: int = 0


@fast_init
@dataclass(frozen=True, slots=True)
class StickyUserData:
    """StickyAssignor user data: the member's previous assignment and, from V1, its generation (None in
    V0). Empty user data is "no previous assignment": no partitions, generation and version None."""

    previous_assignment: tuple[TopicPartition, ...]
    generation: int | None
    user_data_version: int | None


def _flatten(entries: Iterable[TopicPartitionsEntry] | None) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(e.topic, p) for e in entries or () for p in e.partitions)


def group_by_topic(partitions: Iterable[tuple[str, int]]) -> tuple[TopicPartitionsEntry, ...]:
    """Group (topic, partition) pairs into wire entries, one per run of the same topic, in order."""
    out: list[TopicPartitionsEntry] = []
    topic: str | None = None
    current: list[int] = []
    for t, p in partitions:
        if t != topic:
            if topic is not None:
                out.append(TopicPartitionsEntry(topic, tuple(current)))
            topic, current = t, []
        current.append(p)
    if topic is not None:
        out.append(TopicPartitionsEntry(topic, tuple(current)))
    return tuple(out)


def _version_prefix(data: bytes, name: str) -> int:
    if len(data) < 2:
        raise wire.underrun(f"{name}.version", 0, 2, len(data))
    (version,) = wire.INT16.unpack_from(data, 0)
    if version < 0:
        raise DecodeError(f"negative {name} version {version}", f"{name}.version", 0)
    return int(version)


def decode_subscription(data: bytes) -> Subscription:
    """Decode a member's ConsumerProtocolSubscription bytes (versions 0-3; higher read as 3).

    >>> s = decode_subscription(bytes.fromhex("0000 00000001 0001 74 ffffffff".replace(" ", "")))
    >>> (s.version, s.topics, s.user_data)
    (0, ('t',), None)
    """
    name = CONSUMER_PROTOCOL_SUBSCRIPTION.name
    version = _version_prefix(data, name)
    layout = min(version, HIGHEST_SUBSCRIPTION_VERSION)
    w, pos = schema.decoder(CONSUMER_PROTOCOL_SUBSCRIPTION, layout)(data, 2, len(data), name)
    # Kafka's `new ConsumerProtocolSubscription(accessor, version)` ignores bytes after the struct. After a
    # version above the highest known they are that version's new fields, expected, and not counted.
    return Subscription(version, w.topics, w.user_data, _flatten(w.owned_partitions), w.generation_id, w.rack_id,
                        len(data) - pos if version == layout else 0)


def decode_assignment(data: bytes) -> Assignment:
    """Decode a member's ConsumerProtocolAssignment bytes (versions 0-3 share one layout)."""
    name = CONSUMER_PROTOCOL_ASSIGNMENT.name
    version = _version_prefix(data, name)
    layout = min(version, HIGHEST_ASSIGNMENT_VERSION)
    w, pos = schema.decoder(CONSUMER_PROTOCOL_ASSIGNMENT, layout)(data, 2, len(data), name)
    # Kafka's `new ConsumerProtocolAssignment(accessor, version)` ignores bytes after the struct (and a newer
    # version's fields, which are not counted as trailing bytes).
    trailing = len(data) - pos if version == layout else 0
    return Assignment(version, _flatten(w.assigned_partitions), w.user_data, trailing)


def encode_subscription(s: Subscription) -> bytes:
    layout = min(s.version, HIGHEST_SUBSCRIPTION_VERSION)
    w = SubscriptionWire(s.topics, s.user_data, group_by_topic(s.owned_partitions), s.generation_id, s.rack_id)
    return wire.INT16.pack(s.version) + schema.encode_struct(CONSUMER_PROTOCOL_SUBSCRIPTION, layout, w)


def encode_assignment(a: Assignment) -> bytes:
    layout = min(a.version, HIGHEST_ASSIGNMENT_VERSION)
    w = AssignmentWire(group_by_topic(a.partitions), a.user_data)
    return wire.INT16.pack(a.version) + schema.encode_struct(CONSUMER_PROTOCOL_ASSIGNMENT, layout, w)


def decode_sticky_user_data(data: bytes) -> StickyUserData:
    """StickyAssignor user data, read as Kafka's `StickyAssignor.memberData` does: the V1 layout first,
    then V0; like Java's `Schema.read`, bytes after a complete struct are ignored. Empty user data is no
    previous assignment (Kafka's `memberData` tests `!userData.hasRemaining()` before reading anything).
    Raises DecodeError if neither layout fits (Kafka then uses an empty previous assignment with
    generation -1).
    """
    if len(data) == 0:
        return StickyUserData((), None, None)
    name = STICKY_ASSIGNOR_USER_DATA.name
    last: DecodeError | None = None
    for version in (1, 0):
        try:
            w, _pos = schema.decoder(STICKY_ASSIGNOR_USER_DATA, version)(data, 0, len(data), name)
        except DecodeError as e:
            last = e
            continue
        assert isinstance(w, StickyAssignorUserDataWire)
        return StickyUserData(_flatten(w.previous_assignment), w.generation, version)
    assert last is not None
    raise last


def encode_sticky_user_data(previous_assignment: Iterable[tuple[str, int]], generation: int | None) -> bytes:
    """V1 (with generation) unless `generation` is None, which gives the pre-2.3 V0 layout."""
    w = StickyAssignorUserDataWire(group_by_topic(previous_assignment), -1 if generation is None else generation)
    return schema.encode_struct(STICKY_ASSIGNOR_USER_DATA, 0 if generation is None else 1, w)


#: CooperativeStickyAssignor's DEFAULT_GENERATION: what it takes when user data holds no generation.
DEFAULT_GENERATION = -1


def decode_cooperative_sticky_user_data(data: bytes) -> int:
    """CooperativeStickyAssignor user data: the int32 generation the member last owned partitions in.

    Empty user data holds no generation: Kafka's `memberData` fails to read one and takes
    DEFAULT_GENERATION (-1), so that is returned. Bytes after the int32 are ignored, as `Schema.read`
    ignores them. Raises DecodeError for 1-3 bytes (a generation cut short).
    """
    if len(data) == 0:
        return DEFAULT_GENERATION
    if len(data) < 4:
        raise wire.underrun("CooperativeStickyAssignorUserData.generation", 0, 4, len(data))
    return int(wire.INT32.unpack_from(data, 0)[0])


def encode_cooperative_sticky_user_data(generation: int) -> bytes:
    return wire.INT32.pack(generation)


@fast_init
@dataclass(frozen=True, slots=True)
class MemberProtocol:
    """A member's embedded protocol, decoded when the group's protocol type is "consumer".

    ``error`` says why a subscription or assignment stayed undecoded (the raw bytes remain on the member);
    both are None for other protocol types.
    """

    subscription: Subscription | None
    assignment: Assignment | None
    error: DecodeError | None


def decode_member_protocol(protocol_type: str, member: MemberMetadata) -> MemberProtocol:
    """Decode a GroupMetadata member's subscription and assignment if the group speaks ConsumerProtocol.

    A member that stored no assignment (an empty byte string, e.g. a member that joined but never
    received one) has ``assignment`` None and no error, as Kafka's own dump tool prints it.
    """
    if protocol_type != CONSUMER_PROTOCOL_TYPE:
        return MemberProtocol(None, None, None)
    sub: Subscription | None = None
    asg: Assignment | None = None
    error: DecodeError | None = None
    try:
        sub = decode_subscription(member.subscription) if member.subscription else None
    except DecodeError as e:
        error = e.at(f"members[{member.member_id}].subscription")
    try:
        asg = decode_assignment(member.assignment) if member.assignment else None
    except DecodeError as e:
        error = error or e.at(f"members[{member.member_id}].assignment")
    return MemberProtocol(sub, asg, error)
