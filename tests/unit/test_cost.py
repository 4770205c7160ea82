"""coordinator_core.cost: what each rebalance cost.

Ground truth is the clients' own word: on the captured samples, every paused partition's true pause is read
here from the raw client log text (the old owner's last "Revoke(-ing) previously assigned partitions" line
naming it, the new owner's first "Adding/Setting newly assigned partitions" line naming it after that
member joined the generation, or its "Setting/Resetting offset for partition" line right after: it fetches
once its position is set), with a line reader of this test's own, not the parser the code uses. With the
lines the table must equal it to the millisecond; from the records alone (logs withheld) its bounds must
hold it. Properties over random histories (hypothesis) check what must hold whatever the input: bounds
ordered, nothing negative, cooperative kept partitions never paused, and a rebalance's row the same whether
computed alone or with the whole history (what the nightly job relies on).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator_core.cost import (
    CONSUMER_PROTOCOL,
    COOPERATIVE,
    EAGER,
    SOURCE_BOUND,
    SOURCE_CLIENT,
    STATIC_RESTART_KIND,
    Commit,
    CommitSeries,
    CostSettings,
    RebalanceCostRow,
    commits_by_partition,
    rebalance_costs,
)
from coordinator_core.history import group_history
from coordinator_core.history.model import Partition
from tests.unit.test_history_sample import Sample, load_sample

SAMPLES = Path(__file__).resolve().parents[2] / "samples"

# ---------------------------------------------------------------------------------------------------
# The clients' own word, read from the raw text

_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\] \w+ \[([^\]]*)\] (.*)$")
_JAVA_PREFIX = re.compile(r"clientId=([^,]+), groupId=")
_JOINED = re.compile(r"Successfully joined group.*?(?:generationId=|<Generation )(\d+)"
                     r".*?(?:memberId='|member_id: )([^',)]+)")
_REVOKED = re.compile(r"(?:Revoke|Revoking|Lost) previously assigned partitions ?(.*?)(?: for group \S+)?$")
_ASSIGNED = re.compile(r"(?:Adding|Setting) newly assigned partitions:? ?(.*)$")
_PYTHON_TP = re.compile(r"TopicPartition\(topic='([^']+)', partition=(\d+)\)")
#: a fetch position set (3.7+ without the client prefix: a sample's client log is one consumer's)
_POSITION = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\] \w+ (?:\[Consumer [^\]]*\] )?"
                       r"(?:Setting|Resetting) offset for partition (\S+) to ")


def _partitions(text: str) -> set[tuple[str, int]]:
    found = {(t, int(p)) for t, p in _PYTHON_TP.findall(text)}
    for item in text.strip().strip("[]{}").split(","):
        topic, _, number = item.strip().rpartition("-")
        if topic and number.isdigit() and "TopicPartition" not in item:
            found.add((topic, int(number)))
    return found


@dataclass(frozen=True)
class Said:
    at: dt.datetime
    member: str
    kind: str  # joined, revoked, assigned, positioned
    generation: int | None
    partitions: frozenset[tuple[str, int]]


_EPOCH = re.compile(r"Member (\S+) with epoch (\d+) transitioned from")
_RECONCILING = re.compile(r"Reconciling assignment with local epoch")
_CONTINUATION = re.compile(r"^\t(Member|Added partitions \(assigned - owned\)):\s+(.*)$")


def client_word(root: Path) -> list[Said]:
    """Every joined/revoked/assigned line of every client log, with the member id its stream last joined as.
    The new consumer (KIP-848) "joins" an epoch when it transitions at it, and "assigns" the partitions its
    multi-line "Reconciling assignment" entry adds."""
    said: list[Said] = []
    for path in sorted((root / "clients").glob("*.log")):
        member: dict[str, str] = {}
        lines = path.read_text().splitlines()
        for i, raw in enumerate(lines):
            position = _POSITION.match(raw)
            if position and member:
                at = dt.datetime.strptime(position[1], "%Y-%m-%d %H:%M:%S") + dt.timedelta(
                    milliseconds=int(position[2]))
                said.append(Said(at, list(member.values())[-1], "positioned", None,
                                 frozenset(_partitions(position[3]))))
                continue
            m = _LINE.match(raw)
            if not m:
                continue
            at = dt.datetime.strptime(m[1], "%Y-%m-%d %H:%M:%S") + dt.timedelta(milliseconds=int(m[2]))
            prefix = _JAVA_PREFIX.search(m[3])
            stream = prefix[1] if prefix else m[3]
            text = m[4]
            if j := _JOINED.search(text):
                member[stream] = j[2]
                said.append(Said(at, j[2], "joined", int(j[1]), frozenset()))
            elif e := _EPOCH.search(text):
                member[stream] = e[1]
                said.append(Said(at, e[1], "joined", int(e[2]), frozenset()))
            elif _RECONCILING.search(text):
                fields = dict(c.groups() for c in map(_CONTINUATION.match, lines[i + 1:i + 8]) if c)
                member[stream] = fields.get("Member", member.get(stream, "")).strip()
                added = _partitions(fields.get("Added partitions (assigned - owned)", ""))
                if added:
                    said.append(Said(at, member[stream], "assigned", None, frozenset(added)))
            elif (r := _REVOKED.search(text)) and stream in member:
                said.append(Said(at, member[stream], "revoked", None, frozenset(_partitions(r[1]))))
            elif (a := _ASSIGNED.search(text)) and stream in member:
                said.append(Said(at, member[stream], "assigned", None, frozenset(_partitions(a[1]))))
    return sorted(said, key=lambda s: s.at)


def true_pause_ms(said: list[Said], generation: int, p: Partition, from_member: str, to_member: str) -> int | None:
    """The new owner's first assign line naming p after it joined `generation` (or its position line for p right
    after), less the old owner's last revoke line naming p before the assign line (and after it last got p): None
    when either member's log lacks it."""
    joined = [s.at for s in said if s.member == to_member and s.kind == "joined" and s.generation == generation]
    if not joined:
        return None
    key = (p.topic, p.partition)
    resumed = next((s.at for s in said if s.member == to_member and s.kind == "assigned" and s.at >= joined[0]
                    and key in s.partitions), None)
    if resumed is None:
        return None
    assigned = resumed
    # It consumes once its fetch position is set (the first position line before it lets p go again).
    after = [s for s in said if s.member == to_member and key in s.partitions and s.at >= assigned
             and s.kind in ("positioned", "revoked")]
    if after and after[0].kind == "positioned":
        resumed = after[0].at
    # The old owner's revocation after it last got p (an earlier one ended an earlier pause).
    got = [s.at for s in said if s.member == from_member and s.kind == "assigned" and key in s.partitions
           and s.at < assigned]
    stops = [s.at for s in said if s.member == from_member and s.kind == "revoked" and key in s.partitions
             and s.at <= assigned and (not got or s.at >= got[-1])]
    if not stops:
        return None
    return round((resumed - stops[-1]).total_seconds() * 1000)


def _commits(s: Sample, group: str) -> dict[Partition, list[Commit]]:
    return commits_by_partition(
        {"topic": r.record.key.topic, "partition": r.record.key.partition, "offset": r.record.value.offset,
         "at": dt.datetime.fromtimestamp(r.timestamp / 1000, dt.UTC).replace(tzinfo=None)}
        for r in s.records[group] if r.record.record_type in (0, 1) and r.record.value is not None)


def _sample_rows(name: str) -> list[tuple[str, RebalanceCostRow, RebalanceCostRow, list[Said]]]:
    """(group, row with the logs, the same rebalance's row from the records alone, the clients' word) per
    rebalance of every scenario of a sample."""
    root = SAMPLES / name
    s, said = load_sample(root), client_word(root)
    out = []
    for scenario in s.scenarios.values():
        group = scenario["group_id"]
        if group not in s.records:
            continue
        commits = _commits(s, group)
        with_logs = rebalance_costs(group_history(s.records[group], s.group_events(group), group_id=group),
                                    s.group_events(group), commits)
        alone = {(r.generation, r.restarted_member_id): r for r in rebalance_costs(
            group_history(s.records[group], [], group_id=group), (), commits)}
        out.extend((group, r, alone[(r.generation, r.restarted_member_id)], said) for r in with_logs)
    return out


@pytest.mark.parametrize("name", ["kafka-3.9.1", "kafka-4.3.1"])
def test_sample_pauses_equal_the_clients_word_and_records_alone_bracket_it(name: str) -> None:
    compared = bracketed = 0
    kinds: dict[str, int] = defaultdict(int)
    for group, row, alone, said in _sample_rows(name):
        by_partition = {(p.topic, p.partition): p for p in alone.partitions}
        for p in row.partitions:
            where = f"{name} {group} generation {row.generation} {row.protocol_kind} {p.topic}-{p.partition}"
            assert p.pause_low_ms >= 0 and (p.pause_high_ms is None or p.pause_low_ms <= p.pause_high_ms), where
            assert p.from_member is not None and p.to_member is not None, where
            truth = true_pause_ms(said, row.generation, Partition(p.topic, p.partition), p.from_member, p.to_member)
            if truth is None:
                continue
            kinds[row.protocol_kind] += 1
            assert (p.stop_source, p.resume_source) == (SOURCE_CLIENT, SOURCE_CLIENT), where
            assert p.pause_ms == truth, where
            compared += 1
            # The records alone: the same partition paused, and its bounds hold the true pause.
            other = by_partition[(p.topic, p.partition)]
            assert (other.from_member, other.to_member) == (p.from_member, p.to_member), where
            assert other.pause_low_ms <= truth, where
            assert other.pause_high_ms is None or truth <= other.pause_high_ms, where
            bracketed += other.pause_high_ms is not None
            if row.protocol_kind == CONSUMER_PROTOCOL:
                # KIP-848: the members' assignment records bound both ends (the first commit after the
                # new owner's record bounds the resume)
                assert other.pause_high_ms is not None and other.pause_low_ms > 0, where
    # Every kind of pause the samples hold was checked, most with both bounds.
    assert {EAGER, COOPERATIVE, STATIC_RESTART_KIND} | ({CONSUMER_PROTOCOL} if name == "kafka-4.3.1" else set()) \
        <= set(kinds), kinds
    assert compared >= 150 and bracketed >= 0.9 * compared, (compared, bracketed)


TIMES = ("revocation_requested_at", "released_at", "assigned_at")


def test_kip848_hand_over_records_bound_the_members_own_lines() -> None:
    """Each partition the sample's KIP-848 group moved: the old owner's revoke line lies between the record
    that asked it to revoke and the record of its release (or its deletion, for a member that left), and the
    new owner's reconciliation line follows the record that gave it the partition."""
    root = SAMPLES / "kafka-4.3.1"
    s, said = load_sample(root), client_word(root)
    group = "cgh-consumer-protocol"
    handovers = [dataclasses.replace(h, **{n: getattr(h, n).replace(tzinfo=None) for n in TIMES if getattr(h, n)})
                 for r in group_history(s.records[group], [], group_id=group) for h in r.partition_handovers]
    slack = dt.timedelta(milliseconds=5)   # record times and log lines are both ms-rounded
    checked = 0
    for h in handovers:
        key = (h.topic, h.partition)
        assert h.released_at is not None and h.assigned_at is not None and h.released_at <= h.assigned_at, h
        assert h.revocation_requested_at is None or h.revocation_requested_at <= h.released_at, h
        stops = [x.at for x in said if x.member == h.from_member and x.kind == "revoked" and key in x.partitions
                 and x.at <= h.released_at + slack]
        resumes = [x.at for x in said if x.member == h.to_member and x.kind == "assigned" and key in x.partitions
                   and x.at >= h.released_at]
        if not stops or not resumes:   # a partition the test's reader finds no line for
            continue
        assert h.revocation_requested_at is None or stops[-1] >= h.revocation_requested_at - slack, (h, stops)
        assert resumes[0] >= h.assigned_at - slack, (h, resumes)
        checked += 1
    # two members: the second's arrival moves partitions to it (asked, released), its leaving moves them back
    assert checked >= 4 and any(h.revocation_requested_at is None for h in handovers) \
        and any(h.revocation_requested_at is not None for h in handovers)


def test_cooperative_kept_partitions_never_pause_on_the_sample() -> None:
    rows = [r for _, r, _, _ in _sample_rows("kafka-4.3.1") if r.protocol_kind == COOPERATIVE]
    assert any(r.partitions_kept for r in rows)
    for r in rows:
        moved = {(p.topic, p.partition) for p in r.partitions}
        assert len(moved) == r.partitions_paused
        # A cooperative move pauses across two generations: revoked in the first round, assigned in this one
        # (a departed owner's partitions move in one round).
        assert all(p.via_generation in (None, r.generation - 1) for p in r.partitions), r
    assert any(p.via_generation is not None for r in rows for p in r.partitions)


# ---------------------------------------------------------------------------------------------------
# Bad input: rows with the bounds they can claim, never an error, never a negative pause

T0 = dt.datetime(2026, 1, 1, 12, 0, 0)
P0, P1 = Partition("t", 0), Partition("t", 1)


def _member(member_id: str, *parts: Partition, timeout: int | None = 60_000) -> dict[str, object]:
    return {"member_id": member_id, "group_instance_id": None, "client_id": member_id,
            "assigned_partitions": [{"topic": p.topic, "partition": p.partition} for p in parts],
            "rebalance_timeout_ms": timeout, "session_timeout_ms": 10_000}


def _generation(n: int, at: dt.datetime, members: list[dict[str, object]], protocol: str = "range",
                started: dt.datetime | None = None, stabilized: dt.datetime | None = None,
                ended: dt.datetime | None = None) -> dict[str, object]:
    return {"group_id": "g", "group_protocol": "classic", "generation": n, "record_offset": n, "outcome": "stable",
            "protocol": protocol, "members": members, "rebalance_started_at": started, "stabilized_at": stabilized,
            "assignment_stored_at": at, "ended_at": ended, "member_id_changes": []}


def _line(at: dt.datetime, source: str, kind: str, member: str | None = None, generation: int | None = None,
          partitions: str | None = None) -> dict[str, object]:
    return {"timestamp": at, "source": source, "client_id": source, "event_type": kind, "member_id": member,
            "generation": generation, "partitions": partitions}


def test_a_generation_without_logs_or_commits_gets_bounds_not_a_point() -> None:
    s = T0 + dt.timedelta(seconds=30)
    rows = rebalance_costs([_generation(1, T0, [_member("a", P0, P1)], ended=s - dt.timedelta(seconds=1)),
                            _generation(2, s + dt.timedelta(milliseconds=40), [_member("a", P0), _member("b", P1)],
                                        stabilized=s)])
    row = rows[-1]
    assert row.partitions_paused == 2 and row.pause_ms is None and row.inferred
    p = row.partitions[0]
    # The start: after the previous sync, within the largest rebalance timeout before the join ended.
    assert p.stopped_at is None and p.stop_source == SOURCE_BOUND
    assert p.stopped_low == max(T0, s - dt.timedelta(seconds=60)) and p.stopped_high == s
    assert p.resumed_at == s + dt.timedelta(milliseconds=40) and p.resumed_high is None
    assert p.pause_low_ms == 40 and p.pause_high_ms is None and row.partition_seconds is None


def test_one_commit_gives_no_rate_and_a_revoke_without_an_assign_keeps_its_bounds() -> None:
    s = T0 + dt.timedelta(seconds=30)
    lines = [_line(T0, "a.log", "CLIENT_SYNCED", "a", 1), _line(s - dt.timedelta(seconds=1), "a.log",
                                                                "CLIENT_PARTITIONS_REVOKED", partitions="t-0, t-1")]
    commits = {P0: [Commit(T0 + dt.timedelta(seconds=5), 100)]}
    rows = rebalance_costs([_generation(1, T0, [_member("a", P0, P1)]),
                            _generation(2, s + dt.timedelta(seconds=2), [_member("b", P0, P1)], started=s,
                                        stabilized=s + dt.timedelta(seconds=1))], lines, commits)
    row = rows[-1]
    assert row.rate_coverage == 0.0 and row.records_delayed is None
    # "a" revoked and died (no assign line of its own): its partitions' stop is its line, the resume the record.
    p = row.partitions[0]
    assert p.stop_source == SOURCE_CLIENT and p.stopped_at == s - dt.timedelta(seconds=1)
    assert p.pause_ms == 3000 and p.rate_per_s is None and p.records_delayed is None


def test_a_client_clock_off_by_minutes_is_measured_and_its_lines_moved() -> None:
    skew = dt.timedelta(minutes=7)
    s = T0 + dt.timedelta(seconds=30)
    g2_stored = s + dt.timedelta(milliseconds=500)
    lines = [_line(T0 + dt.timedelta(milliseconds=5) + skew, "a.log", "CLIENT_SYNCED", "a", 1),
             _line(s + dt.timedelta(milliseconds=100) + skew, "a.log", "CLIENT_PARTITIONS_REVOKED",
                   partitions="t-0, t-1"),
             _line(g2_stored + dt.timedelta(milliseconds=5) + skew, "a.log", "CLIENT_SYNCED", "a", 2),
             _line(g2_stored + dt.timedelta(milliseconds=20) + skew, "a.log", "CLIENT_PARTITIONS_ASSIGNED",
                   partitions="t-0, t-1")]
    rows = rebalance_costs([_generation(1, T0, [_member("a", P0, P1)]),
                            _generation(2, g2_stored, [_member("a", P0, P1)], started=s,
                                        stabilized=s + dt.timedelta(milliseconds=300))], lines)
    row = rows[-1]
    assert row.clock_offsets_ms == {"a": 7 * 60_000 + 5}
    assert [p.pause_ms for p in row.partitions] == [420, 420]  # (500 + 20) - 100, on the broker's clock
    assert all(p.pause_ms is not None and p.pause_ms >= 0 for p in row.partitions)


def test_a_position_line_ends_the_pause_and_is_taken_for_its_files_consumer() -> None:
    """Java 3.7+ logs "Setting offset for partition" without the client prefix (no member, no group). In a file
    that two consumers share, it is taken for the one whose assign line last named the partition; a position
    set after the member let the partition go again, or for a partition nobody there was assigned, is not."""
    s = T0 + dt.timedelta(seconds=30)
    stored = s + dt.timedelta(seconds=1)

    def position(at: dt.datetime, partition: str) -> dict[str, object]:
        return {**_line(at, "app.log", "CLIENT_OFFSET_SET", partitions=partition), "client_id": None}

    lines = [_line(T0, "app.log", "CLIENT_SYNCED", "a", 1),
             {**_line(T0, "app.log", "CLIENT_SYNCED", "b", 1), "client_id": "b-client"},
             _line(s, "app.log", "CLIENT_PARTITIONS_REVOKED", partitions="t-0, t-1"),
             _line(stored + dt.timedelta(milliseconds=5), "app.log", "CLIENT_SYNCED", "a", 2),
             _line(stored + dt.timedelta(milliseconds=6), "app.log", "CLIENT_PARTITIONS_ASSIGNED",
                   partitions="t-0, t-1"),
             position(stored + dt.timedelta(milliseconds=900), "t-0"),   # a slow committed-offset fetch
             position(stored + dt.timedelta(milliseconds=950), "u-7"),   # nobody here was assigned u-7
             {**_line(stored + dt.timedelta(milliseconds=7), "app.log", "CLIENT_PARTITIONS_ASSIGNED",
                      partitions="v-0"), "client_id": "b-client"},
             _line(stored + dt.timedelta(milliseconds=20), "app.log", "CLIENT_PARTITIONS_REVOKED", partitions="t-1"),
             position(stored + dt.timedelta(milliseconds=40), "t-1")]    # after a let t-1 go: not its resume
    rows = rebalance_costs([_generation(1, T0, [_member("a", P0, P1)]),
                            _generation(2, stored, [_member("a", P0, P1)], started=s,
                                        stabilized=s + dt.timedelta(milliseconds=500))], lines)
    by = {p.partition: p for p in rows[-1].partitions}
    assert (by[0].resumed_at, by[0].resume_source) == (stored + dt.timedelta(milliseconds=900), SOURCE_CLIENT)
    assert by[0].stop_source == SOURCE_CLIENT and by[0].pause_ms == 1900
    assert by[1].resumed_at == stored + dt.timedelta(milliseconds=6) and by[1].pause_ms == 1006


def test_records_delayed_follow_a_steady_rate() -> None:
    """A partition consumed at a steady 200 records/s, paused ~4 s: records delayed within 10 % of 800."""
    commits = {P0: [Commit(T0 + dt.timedelta(seconds=i), 10_000 + 200 * i) for i in range(0, 60, 5)]}
    s = T0 + dt.timedelta(seconds=57)
    lines = [_line(T0, "a.log", "CLIENT_SYNCED", "a", 1),
             _line(s, "a.log", "CLIENT_PARTITIONS_REVOKED", partitions="t-0"),
             _line(s + dt.timedelta(seconds=3), "b.log", "CLIENT_SYNCED", "b", 2),
             _line(s + dt.timedelta(seconds=4), "b.log", "CLIENT_PARTITIONS_ASSIGNED", partitions="t-0")]
    rows = rebalance_costs([_generation(1, T0, [_member("a", P0)]),
                            _generation(2, s + dt.timedelta(seconds=3), [_member("a"), _member("b", P0)], started=s,
                                        stabilized=s + dt.timedelta(seconds=2))], lines, commits)
    p = rows[-1].partitions[0]
    assert p.rate_per_s == pytest.approx(200.0) and p.rate_commits == 12
    assert p.pause_ms == 4000 and abs(rows[-1].records_delayed - 800) <= 80


# ---------------------------------------------------------------------------------------------------
# Properties over random histories

History = tuple[list[dict[str, object]], list[dict[str, object]], dict[Partition, list[Commit]]]


@st.composite
def histories(draw: st.DrawFn) -> History:
    partitions = [Partition("t", i) for i in range(draw(st.integers(1, 6)))]
    protocol = draw(st.sampled_from(["range", "cooperative-sticky"]))
    at, gens, lines = T0, [], []
    commits: dict[Partition, list[Commit]] = {p: [] for p in partitions}
    for n in range(1, draw(st.integers(2, 6)) + 1):
        names = draw(st.lists(st.sampled_from("abcd"), min_size=1, max_size=4, unique=True))
        owners = {p: draw(st.sampled_from(names)) for p in partitions}
        if protocol == "cooperative-sticky" and n > 1 and draw(st.booleans()):
            owners = {p: o for p, o in owners.items() if draw(st.booleans())}  # a first round holding some back
        started = at + dt.timedelta(milliseconds=draw(st.integers(100, 60_000)))
        stabilized = started + dt.timedelta(milliseconds=draw(st.integers(0, 5_000)))
        stored = stabilized + dt.timedelta(milliseconds=draw(st.integers(0, 500)))
        logged = draw(st.booleans())
        gens.append(_generation(n, stored, [_member(m, *sorted(p for p, o in owners.items() if o == m))
                                            for m in names], protocol, started if logged else None, stabilized))
        for m in names:
            lines.append(_line(stored + dt.timedelta(milliseconds=draw(st.integers(-50, 50))), f"{m}.log",
                               "CLIENT_SYNCED", m, n))
            mine = ", ".join(f"{p.topic}-{p.partition}" for p, o in owners.items() if o == m)
            if mine and draw(st.booleans()):
                lines.append(_line(stored + dt.timedelta(milliseconds=draw(st.integers(0, 300))), f"{m}.log",
                                   "CLIENT_PARTITIONS_ASSIGNED", partitions=mine))
            if mine and draw(st.booleans()):
                lines.append(_line(stored + dt.timedelta(milliseconds=draw(st.integers(100, 90_000))), f"{m}.log",
                                   "CLIENT_PARTITIONS_REVOKED", partitions=mine))
        for p in partitions:
            for _ in range(draw(st.integers(0, 3))):
                commits[p].append(Commit(stored + dt.timedelta(milliseconds=draw(st.integers(-90_000, 90_000))),
                                         draw(st.integers(0, 10_000))))
        at = stored
    for i, g in enumerate(gens[:-1]):
        g["ended_at"] = gens[i + 1]["rebalance_started_at"] or gens[i + 1]["stabilized_at"]
    return gens, lines, {p: sorted(c, key=lambda c: (c.at, c.offset)) for p, c in commits.items()}


@settings(max_examples=50, deadline=None)
@given(histories())
def test_bounds_are_ordered_and_nothing_is_negative(history) -> None:  # type: ignore[no-untyped-def]
    gens, lines, commits = history
    rows = rebalance_costs(gens, lines, commits)
    assert [r.generation for r in rows] == [g["generation"] for g in gens]
    for r in rows:
        assert r.pause_low_ms >= 0 and r.partition_seconds_low >= 0
        if r.pause_high_ms is not None:
            assert r.pause_low_ms <= r.pause_high_ms
        if r.pause_ms is not None:
            assert r.pause_low_ms <= r.pause_ms and (r.pause_high_ms is None or r.pause_ms <= r.pause_high_ms)
        if r.partition_seconds is not None:
            assert r.partition_seconds_low <= r.partition_seconds + 1e-9
        for p in r.partitions:
            assert p.pause_low_ms >= 0
            for point, low, high in ((p.stopped_at, p.stopped_low, p.stopped_high),
                                     (p.resumed_at, p.resumed_low, p.resumed_high)):
                if point is not None:
                    assert (low is None or low <= point) and (high is None or point <= high), p
            if p.pause_ms is not None:
                assert p.pause_low_ms <= p.pause_ms and (p.pause_high_ms is None or p.pause_ms <= p.pause_high_ms)
            if p.records_delayed is not None:
                assert p.records_delayed_low is not None and p.records_delayed_low <= p.records_delayed
        if r.protocol_kind == COOPERATIVE:
            assert r.partitions_paused + r.partitions_kept <= sum(
                len(m["assigned_partitions"]) for g in gens if g["generation"] == r.generation - 1
                for m in g["members"]) + r.partitions_paused  # type: ignore[arg-type]


@settings(max_examples=40, deadline=None)
@given(histories())
def test_a_rebalance_costs_the_same_computed_alone_or_with_the_whole_history(history) -> None:  # type: ignore[no-untyped-def]
    """What a night does: only the rebalances from its earliest change on, from the rows before them (two
    back: a cooperative second round needs the owners before its first round)."""
    gens, lines, commits = history
    whole = rebalance_costs(gens, lines, commits)
    k = len(gens) // 2
    later = rebalance_costs(gens[max(k - 2, 0):], lines, commits, only={g["generation"] for g in gens[k:]})
    assert later == [r for r in whole if r.generation >= gens[k]["generation"]]


def test_cost_settings_windows_are_what_the_job_reads() -> None:
    s = CostSettings()
    assert s.commit_horizon + s.rate_lookback <= dt.timedelta(hours=2) and s.resume_horizon == dt.timedelta(hours=48)


@st.composite
def steady_fleet_group(draw: st.DrawFn) -> tuple[list[dict[str, object]], list[dict[str, object]],
                                                 dict[Partition, list[Commit]], dict[Partition, float], str]:
    """One group of a fleet consumed at a steady rate per partition, through one rebalance whose true pause
    is known: the old owner commits every 5 s and on revocation, the new owner resumes `resume_delay` after
    the stored assignment and commits every 5 s from there, offsets growing at the partition's rate only
    while it is consumed. Returns the rows, the client lines, the commits, the true records delayed per
    partition and the protocol."""
    protocol = draw(st.sampled_from(["range", "cooperative-sticky"]))
    n = draw(st.integers(2, 8))
    parts = [Partition("t", i) for i in range(n)]
    rates = {p: draw(st.floats(1.0, 5_000.0)) for p in parts}
    stop = T0 + dt.timedelta(minutes=10, milliseconds=draw(st.integers(0, 4_999)))
    stabilized = stop + dt.timedelta(milliseconds=draw(st.integers(0, 3_000)))
    stored = stabilized + dt.timedelta(milliseconds=draw(st.integers(1, 500)))
    resume = stored + dt.timedelta(milliseconds=draw(st.integers(1, 300)))
    moved = parts[: n // 2] if protocol == "cooperative-sticky" else parts  # what pauses
    new_owner = {p: ("b" if i < n // 2 else "a") for i, p in enumerate(parts)}
    commits: dict[Partition, list[Commit]] = {}
    truth: dict[Partition, float] = {}
    for p in parts:
        rate, pauses = rates[p], p in moved
        series = [Commit(T0 + dt.timedelta(seconds=s), round(rate * s)) for s in range(5, 600, 5)]
        series.append(Commit(stop, round(rate * (stop - T0).total_seconds())))
        consumed_at_stop = (stop - T0).total_seconds()
        for k in range(1, 6):
            at = resume + dt.timedelta(seconds=5 * k)
            consumed = consumed_at_stop + ((at - resume).total_seconds() if pauses else (at - stop).total_seconds())
            series.append(Commit(at, round(rate * consumed)))
        commits[p] = sorted(series, key=lambda c: c.at)
        if pauses:
            truth[p] = rate * (resume - stop).total_seconds()
    names = ", ".join(f"t-{p.partition}" for p in moved)
    lines = [_line(T0, "a.log", "CLIENT_SYNCED", "a", 1),
             _line(stop, "a.log", "CLIENT_PARTITIONS_REVOKED", partitions=names),
             _line(stored, "b.log", "CLIENT_SYNCED", "b", 2 if protocol == "range" else 3),
             _line(resume, "b.log", "CLIENT_PARTITIONS_ASSIGNED",
                   partitions=", ".join(f"t-{p.partition}" for p in moved if new_owner[p] == "b"))]
    if protocol == "range":  # eager: "a" gets its kept partitions back after the sync too
        lines.append(_line(resume, "a.log", "CLIENT_PARTITIONS_ASSIGNED",
                           partitions=", ".join(f"t-{p.partition}" for p in parts if new_owner[p] == "a")))
    gens = [_generation(1, T0, [_member("a", *parts), _member("b")], protocol, ended=stop),
            _generation(2, stored, [_member(m, *[p for p in parts if new_owner[p] == m]) for m in "ab"], protocol,
                        stabilized=stabilized)]
    if protocol == "cooperative-sticky":  # the first round held the moved partitions back
        gens[1]["outcome"] = "stable"
        first = _generation(2, stored, [_member("a", *[p for p in parts if p not in moved]), _member("b")],
                            protocol, stabilized=stabilized)
        second = _generation(3, stored, gens[1]["members"], protocol, stabilized=stabilized)  # type: ignore[arg-type]
        first["assignment_stored_at"] = stop - dt.timedelta(milliseconds=1)
        first["stabilized_at"] = stop - dt.timedelta(milliseconds=2)
        gens = [gens[0], first, second]
    return gens, lines, commits, truth, protocol


@settings(max_examples=40, deadline=None)
@given(steady_fleet_group())
def test_records_delayed_are_within_ten_percent_where_rates_are_steady(group) -> None:  # type: ignore[no-untyped-def]
    gens, lines, commits, truth, _ = group
    row = rebalance_costs(gens, lines, commits)[-1]
    assert {(p.topic, p.partition) for p in row.partitions} == {(p.topic, p.partition) for p in truth}
    for p in row.partitions:
        expected = truth[Partition(p.topic, p.partition)]
        assert p.records_delayed is not None and abs(p.records_delayed - expected) <= max(0.1 * expected, 2.0), p
    assert row.records_delayed is not None and abs(row.records_delayed - sum(truth.values())) <= max(
        0.1 * sum(truth.values()), 2 * len(truth))
    # From the records and commits alone, the bounds hold the truth.
    alone = rebalance_costs(gens, (), commits)[-1]
    assert alone.records_delayed_low is not None and alone.records_delayed_low <= sum(truth.values()) + len(truth)
    assert alone.records_delayed_high is None or sum(truth.values()) <= alone.records_delayed_high + len(truth)


# ---------------------------------------------------------------------------------------------------
# CommitSeries: a partition's commits as integers, read by window


_TIMES = st.integers(0, 5_000_000).map(lambda us: T0 + dt.timedelta(microseconds=us * 7))


@given(st.lists(st.tuples(_TIMES, st.integers(0, 50)), max_size=40), st.one_of(st.none(), _TIMES),
       st.one_of(st.none(), _TIMES))
@settings(max_examples=300, deadline=None)
def test_commit_series_reads_as_the_sorted_list(raw: list[tuple[dt.datetime, int]], low: dt.datetime | None,
                                                 high: dt.datetime | None) -> None:
    """`between` is the list filter it replaces, indexing and slicing give the Commit objects of the list
    sorted by (time, offset), on a series built from Commit objects or from the integer columns."""
    ordered = sorted((Commit(at, offset) for at, offset in raw), key=lambda c: (c.at, c.offset))
    series = CommitSeries.of(Commit(at, offset) for at, offset in raw)
    epoch = dt.datetime(1970, 1, 1)
    from_columns = CommitSeries([(c.at - epoch) // dt.timedelta(microseconds=1) for c in ordered],
                                [c.offset for c in ordered])
    for s in (series, from_columns):
        assert list(s) == ordered
        window = s.between(low, high)
        assert list(window) == [c for c in ordered if (low is None or c.at >= low) and (high is None or c.at <= high)]
        assert window.times() == [c.at for c in window]
        if window:
            expected = list(window)
            assert window[-1] == expected[-1] and window[0] == expected[0]
        assert list(s[1:-1]) == ordered[1:-1]
        assert list(s[2:][:3]) == ordered[2:][:3]
