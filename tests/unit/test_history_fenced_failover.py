"""Member-scoped lines without a group (a static member fenced by a duplicate group.instance.id) reach the
history of the group their member id belongs to; a coordinator load is told in the generation it happened
in, without a rebalance of its own.

The events are parsed from log lines written here in Kafka 4.3.1's format (the three-broker sample's
broker-1/server.log has the originals); two groups share the `__consumer_offsets` partition, so a group-less
line cannot be placed by its partition alone.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timezone

from coordinator_core.history import group_history
from coordinator_core.history.generations import fold_generations, row_key
from coordinator_core.history.inputs import attribute_to_groups, member_groups
from coordinator_core.history.state import dump_state, load_state
from coordinator_core.logs import CoordinatorEvent, read_log_lines
from coordinator_core.logs import events as ev

_PREFIX = "INFO [GroupCoordinator id={node} topic=__consumer_offsets partition={p}] "
_GMM = " (org.apache.kafka.coordinator.group.GroupMetadataManager)"


def _line(at: str, text: str, node: int = 1, partition: int = 32, logger: str = _GMM) -> str:
    return f"[2026-11-27 02:{at}] " + _PREFIX.format(node=node, p=partition) + text + logger


def _static_group(group: str, a: str, b_old: str, b_new: str) -> list[str]:
    """Two static members; a duplicate of b takes its instance id (no rebalance) and b's old member is
    fenced on its next heartbeat; later both time out."""
    return [
        _line("33:47,955", f"Static member with groupInstanceId=a and unknown member id joins group {group} in Empty"
              f" state. Created a new member id {a} for this member and added to the group."),
        _line("33:47,955", f"Preparing to rebalance group {group} in state PreparingRebalance with old generation 0"
              f" (reason: Adding new member {a} with group instance id a; client reason: not provided)."),
        _line("33:47,956", f"Stabilized group {group} generation 1 with 1 members."),
        _line("33:53,455", f"Static member with groupInstanceId=b and unknown member id joins group {group} in Stable"
              f" state. Created a new member id {b_old} for this member and added to the group."),
        _line("33:53,460", f"Preparing to rebalance group {group} in state PreparingRebalance with old generation 1"
              f" (reason: Adding new member {b_old} with group instance id b; client reason: not provided)."),
        _line("33:54,011", f"Stabilized group {group} generation 2 with 2 members."),
        _line("33:58,443", f"Static member with groupInstanceId=b and unknown member id joins group {group} in Stable"
              f" state. Replacing previously mapped member {b_old} with this groupInstanceId."),
        _line("33:59,038", f"Request memberId={b_old} for static member with groupInstanceId=b is fenced by existing"
              f" memberId={b_new} during operation heartbeat",
              logger=" (org.apache.kafka.coordinator.group.classic.ClassicGroup)"),
        _line("34:10,671", f"Member {a} in group {group} has failed, removing it from the group."),
        _line("34:10,671", f"Preparing to rebalance group {group} in state PreparingRebalance with old generation 2"
              f" (reason: removing member {a} on heartbeat expiration.)."),
        _line("34:11,063", f"Member {b_new} in group {group} has failed, removing it from the group."),
        _line("34:11,064", f"Group {group} with generation 3 is now empty."),
    ]


def _events(lines: list[str]) -> list[CoordinatorEvent]:
    return list(read_log_lines(lines, source="broker-1", broker_id=1))


FENCED = _events(_static_group("g-fenced", "a-1", "b-1", "b-2"))
OTHER = _events(_static_group("g-other", "x-1", "y-1", "y-2"))
ALL = sorted(FENCED + OTHER, key=lambda e: e.timestamp or datetime.min)


def test_the_parser_leaves_the_fencing_line_without_a_group() -> None:
    (fence,) = [e for e in FENCED if e.event_type == ev.STATIC_MEMBER_FENCED]
    assert (fence.group_id, fence.member_id, fence.related_member_id, fence.cause_class) == (
        None, "b-1", "b-2", ev.STATIC_MEMBER_FENCED_CAUSE)
    assert fence.offsets_partition == 32


def test_member_groups_and_attribution() -> None:
    groups = member_groups(ALL)
    assert groups["b-1"] == "g-fenced" and groups["b-2"] == "g-fenced" and groups["y-1"] == "g-other"
    attributed, unattributed = attribute_to_groups(ALL, groups)
    fences = {e.member_id: e.group_id for e in attributed if e.event_type == ev.STATIC_MEMBER_FENCED}
    assert fences == {"b-1": "g-fenced", "y-1": "g-other"} and unattributed == 0
    assert len(attributed) == len(ALL)
    # An unknown member id: the line stays, group-less, and is counted.
    stranger = dataclasses.replace(next(e for e in FENCED if e.event_type == ev.STATIC_MEMBER_FENCED),
                                   member_id="z-1", related_member_id="z-2")
    out, unattributed = attribute_to_groups([stranger], groups)
    assert out == [stranger] and unattributed == 1
    # Only the related member known: it decides.
    out, _ = attribute_to_groups([dataclasses.replace(stranger, related_member_id="b-2")], groups)
    assert out[0].group_id == "g-fenced"
    # A member id under two groups (never seen in Kafka): the smallest group id, whatever the input order.
    clash = [dataclasses.replace(e, group_id=g) for g in ("zz", "aa") for e in FENCED[:1]]
    assert member_groups(clash)["a-1"] == member_groups(clash[::-1])["a-1"] == "aa"


def test_the_fencing_reaches_its_groups_next_rebalance_only() -> None:
    rows = {r.generation: r for r in group_history((), ALL, group_id="g-fenced")}
    assert sorted(rows) == [1, 2, 3]
    assert rows[3].cause == ev.SESSION_TIMEOUT
    assert ev.STATIC_MEMBER_FENCED_CAUSE in rows[3].causes
    assert any(e.event_type == ev.STATIC_MEMBER_FENCED and e.member_id == "b-1" for e in rows[3].evidence)
    assert not any(ev.STATIC_MEMBER_FENCED_CAUSE in rows[g].causes for g in (1, 2))
    other = {r.generation: r for r in group_history((), ALL, group_id="g-other")}
    assert not any(e.member_id == "b-1" for r in other.values() for e in r.evidence)
    assert any(e.event_type == ev.STATIC_MEMBER_FENCED and e.member_id == "y-1" for e in other[3].evidence)
    # The group's own lines alone, with the fencing line attributed first (as the nightly job passes them):
    # the same rows.
    attributed, _ = attribute_to_groups(ALL, member_groups(ALL))
    own = [e for e in attributed if e.group_id == "g-fenced"]
    assert group_history((), own, group_id="g-fenced") == list(rows.values())


def test_a_late_fencing_line_gives_the_full_history() -> None:
    """The fencing line in a later run than everything else (within the reopen horizon): the fold's rows
    are those of one full run."""
    attributed, _ = attribute_to_groups(FENCED, member_groups(FENCED))
    expected = {row_key(r): r for r in group_history((), attributed, group_id="g-fenced")}
    fence = [e for e in attributed if e.event_type == ev.STATIC_MEMBER_FENCED]
    rest = [e for e in attributed if e.event_type != ev.STATIC_MEMBER_FENCED]
    for cut in range(1, len(rest) + 1):
        table = {}
        state = None
        late = 0
        for events in (rest[:cut], rest[cut:], fence):
            result = fold_generations(state, (), events, group_id="g-fenced")
            for key in result.removed:
                table.pop(key, None)
            table.update({row_key(r): r for r in result.rows})
            late += result.late_events
            state = load_state(dump_state(result.state))
        assert table == expected, cut
        assert late == 0


def _failover_lines() -> list[str]:
    g, a, b, c = "g-moved", "m-a", "m-b", "m-c"
    return [
        _line("33:45,964", f"Preparing to rebalance group {g} in state PreparingRebalance with old generation 0"
              f" (reason: Adding new member {a} with group instance id null; client reason: not provided).",
              node=2, partition=2),
        _line("33:46,073", f"Stabilized group {g} generation 1 with 1 members.", node=2, partition=2),
        _line("33:48,785", f"Preparing to rebalance group {g} in state PreparingRebalance with old generation 1"
              f" (reason: Adding new member {b} with group instance id null; client reason: not provided).",
              node=2, partition=2),
        _line("33:49,659", f"Stabilized group {g} generation 2 with 2 members.", node=2, partition=2),
        _line("33:52,771", f"Loaded classic group {g} with 2 members.", node=3, partition=2),
        _line("34:03,844", f"Preparing to rebalance group {g} in state PreparingRebalance with old generation 2"
              f" (reason: Adding new member {c} with group instance id null; client reason: not provided).",
              node=3, partition=2),
        _line("34:04,068", f"Stabilized group {g} generation 3 with 3 members.", node=3, partition=2),
    ]


def test_a_coordinator_load_is_told_in_the_generation_it_happened_in() -> None:
    events = [e for i, text in enumerate(_failover_lines())
              for e in read_log_lines([text], source=f"broker-{2 if i != 4 else 3}")]
    rows = {r.generation: r for r in group_history((), events, group_id="g-moved")}
    assert sorted(rows) == [1, 2, 3], "the load made up a generation"
    (load,) = rows[2].coordinator_loads
    assert (load.broker_id, load.offsets_partition, load.cause_class) == (3, 2, ev.COORDINATOR_FAILOVER)
    assert load.at == datetime(2026, 11, 27, 2, 33, 52, 771000, tzinfo=timezone.utc)
    assert rows[2].cause == ev.NEW_MEMBER and rows[1].coordinator_loads == rows[3].coordinator_loads == ()
    # The next rebalance keeps its own cause; the load is in its window, among its causes (causes.py).
    assert rows[3].cause == ev.NEW_MEMBER and ev.COORDINATOR_FAILOVER in rows[3].causes
    assert rows[3].to_dict()["coordinator_loads"] == []
    assert rows[2].to_dict()["coordinator_loads"][0]["broker_id"] == 3
