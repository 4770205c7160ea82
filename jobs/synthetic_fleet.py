"""Synthetic fleet generator: a realistic fleet's `__consumer_offsets` traffic, written into raw_offsets.

    python -m jobs.synthetic_fleet --records 1000000 [--groups 5000] [--seed 7] [--conf conf/local.toml]
    python -m jobs.synthetic_fleet --records 10000 --append     # continue the same fleet's history

Every record is encoded with coordinator_core's own encoders. The fleet mixes what a real cluster of
mixed-version brokers and clients writes:
- classic consumer groups committing every assigned partition in one batch, with offset-commit value
  versions 1 (old clients with an explicit expiry), 3 (leader epoch) and 4 (flexible, topic id);
- rebalances: a GroupMetadata record per generation (value versions 1-4) with members joining and
  leaving, static members, ConsumerProtocol subscriptions/assignments of versions 0-3 and round-robin
  assignments;
- exactly-once groups committing inside transactions, followed by COMMIT or (sometimes) ABORT markers;
- KIP-848 consumer groups (group epoch and member metadata records), share groups (group epoch records);
- offset expiry tombstones and, rarely, a group deletion;
- a small share of corrupt records (truncated values, short keys) and unknown future record types.

Generation is parallel: one Spark task per `__consumer_offsets` partition simulates that partition's
groups deterministically from the seed, so a range of offsets can be generated on its own (`--append`
continues from the archived watermark with the same groups and generations).

One module (~400 lines) on purpose: the fleet's groups, the per-partition simulation that emits their records
and the Spark job that runs it are one generator, read together; none is used elsewhere.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from schemas import RAW_OFFSETS


@dataclass(frozen=True)
class FleetSpec:
    cluster: str = "synthetic"
    groups: int = 5000
    partitions: int = 50
    seed: int = 7
    start_ms: int = 1_735_689_600_000  # 2025-01-01T00:00:00Z
    # Per event of a group (an event is one commit batch, one rebalance, ...):
    rebalance_rate: float = 0.004
    tombstone_rate: float = 0.002
    corrupt_rate: float = 0.0002
    unknown_type_rate: float = 0.0001
    abort_rate: float = 0.05
    # Mean data time per record of a partition, in ms. 0 keeps the original steps of 1-40 ms per event (a
    # day of traffic then spans minutes). N: before each event the partition's clock moves by the records the
    # previous event wrote times a step of mean N ms, so every partition's time follows its record count and
    # a share of records spans the same time in all of them (the nights benchmark sets N so that a night's
    # records span a day, as a real night's do). The steps are the original draws scaled, so the fleet's
    # events are the same whatever the spacing: only their times differ.
    record_spacing_ms: int = 0


_OFFSET_VERSIONS = ((1, 0.10), (3, 0.70), (4, 0.20))
_GROUP_METADATA_VERSIONS = ((1, 0.05), (2, 0.15), (3, 0.60), (4, 0.20))
_PROTOCOL_VERSIONS = ((0, 0.10), (1, 0.40), (2, 0.20), (3, 0.30))
_KINDS = (("classic", 0.85), ("transactional", 0.07), ("kip848", 0.06), ("share", 0.02))
_ASSIGNORS = ("range", "roundrobin", "cooperative-sticky", "sticky")
_TEAMS = ("payments", "orders", "search", "billing", "fraud", "ads", "inventory", "shipping", "risk", "ml")


def _pick(rng: random.Random, weighted: tuple[tuple[Any, float], ...]) -> Any:
    r = rng.random()
    for value, weight in weighted:
        r -= weight
        if r < 0:
            return value
    return weighted[-1][0]


@dataclass
class _Group:
    group_id: str
    index: int
    kind: str
    topics: list[tuple[str, int]]
    offset_version: int
    metadata_version: int
    protocol_version: int
    assignor: str
    max_members: int
    generation: int = 0
    members: list[str] | None = None
    next_member: int = 0
    committed: int = 0


def fleet_groups(spec: FleetSpec, partition: int) -> list[_Group]:
    """The groups whose records live in `partition` (abs(hashCode(group)) % partitions), deterministically."""
    from coordinator_core import partition_for

    groups = []
    for i in range(spec.groups):
        group_id = f"{_TEAMS[i % len(_TEAMS)]}-service-{i:05d}"
        if partition_for(group_id, spec.partitions) != partition:
            continue
        rng = random.Random(f"{spec.seed}:group:{i}")
        topics = [(f"{_TEAMS[rng.randrange(len(_TEAMS))]}-events-{rng.randrange(200):03d}",
                   rng.choice((1, 3, 6, 12, 24)))
                  for _ in range(rng.choice((1, 1, 1, 2, 3)))]
        groups.append(
            _Group(
                group_id=group_id,
                index=i,
                kind=_pick(rng, _KINDS),
                topics=topics,
                offset_version=_pick(rng, _OFFSET_VERSIONS),
                metadata_version=_pick(rng, _GROUP_METADATA_VERSIONS),
                protocol_version=_pick(rng, _PROTOCOL_VERSIONS),
                assignor=rng.choice(_ASSIGNORS),
                max_members=rng.choice((1, 2, 3, 4, 6, 8)),
            )
        )
    if not groups:  # a partition no generated group hashes to still gets traffic
        groups.append(
            _Group(f"filler-{partition}", -1 - partition, "classic", [("filler-events", 3)], 3, 3, 1, "range", 2))
    return groups


class _Emitter:
    """Collects raw_offsets columns for offsets in [start, end); counts (but does not encode) the rest."""

    def __init__(self, spec: FleetSpec, partition: int, start: int, end: int, run_id: str, ingested_us: int) -> None:
        self.spec, self.partition, self.start, self.end = spec, partition, start, end
        self.run_id, self.ingested_us = run_id, ingested_us
        self.offset = 0
        self.cols: dict[str, list[Any]] = {n: [] for n in _COLUMNS}

    def wanted(self, count: int) -> bool:
        return self.offset + count > self.start

    def batch(self, records: list[tuple[bytes | None, bytes | None]], now_ms: int, producer_id: int = -1,
              transactional: bool = False, control_type: str | None = None) -> None:
        base, last = self.offset, self.offset + len(records) - 1
        c = self.cols
        for key, value in records:
            if self.start <= self.offset < self.end:
                c["offset"].append(self.offset)
                c["timestamp"].append(now_ms * 1000)
                c["key"].append(key)
                c["value"].append(value)
                c["producer_id"].append(producer_id)
                c["producer_epoch"].append(0 if producer_id >= 0 else -1)
                c["is_transactional"].append(transactional)
                c["is_control"].append(control_type is not None)
                c["control_type"].append(control_type)
                c["batch_base_offset"].append(base)
                c["batch_last_offset"].append(last)
            self.offset += 1

    def skip(self, count: int) -> None:
        self.offset += count

    def take(self) -> dict[str, list[Any]]:
        out, self.cols = self.cols, {n: [] for n in _COLUMNS}
        return out


_COLUMNS = ("offset", "timestamp", "key", "value", "producer_id", "producer_epoch", "is_transactional",
            "is_control", "control_type", "batch_base_offset", "batch_last_offset")
_CONTROL = {"COMMIT": (struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 3)),
            "ABORT": (struct.pack(">hh", 0, 0), struct.pack(">hi", 0, 3))}


def generate_partition(  # noqa: C901, PLR0915 - grandfathered: one pass over a partition's simulated events
    spec: FleetSpec, partition: int, start: int, end: int, run_id: str,
    ingested_us: int, batch_rows: int = 50_000,
) -> Iterator[Any]:
    """Arrow batches (raw_offsets columns) for offsets [start, end) of one partition's simulated history."""
    import pyarrow as pa

    import coordinator_core as cc
    from coordinator_core.consumer_protocol import Assignment, Subscription, TopicPartition
    from coordinator_core.messages import (
        ConsumerGroupMemberMetadataValue,
        ConsumerGroupMetadataValue,
        GroupIdKey,
        GroupMemberKey,
        GroupMetadataKey,
        GroupMetadataValue,
        MemberMetadata,
        OffsetCommitKey,
        OffsetCommitValue,
        ShareGroupMetadataValue,
    )
    from jobs.common.boundary import arrow_schema

    schema = arrow_schema(RAW_OFFSETS.schema)
    rng = random.Random(f"{spec.seed}:partition:{partition}")
    groups = fleet_groups(spec, partition)
    out = _Emitter(spec, partition, start, end, run_id, ingested_us)
    key_cache: dict[tuple[str, str, int], OffsetCommitKey] = {}
    now = spec.start_ms + partition
    topic_ids = {}

    def flush() -> Any:
        cols = out.take()
        n = len(cols["offset"])
        arrays = {
            "cluster": pa.array([spec.cluster] * n, pa.string()),
            "partition": pa.array([partition] * n, pa.int32()),
            "timestamp_type": pa.array(["CreateTime"] * n, pa.string()),
            "source": pa.array([f"synthetic:seed={spec.seed}"] * n, pa.string()),
            "ingest_run_id": pa.array([run_id] * n, pa.string()),
            "ingested_at": pa.array([ingested_us] * n, pa.int64()),
            "partition_leader_epoch": pa.nulls(n, pa.int32()),
        }
        for name in _COLUMNS:
            arrays[name] = pa.array(cols[name])
        return pa.RecordBatch.from_arrays(
            [arrays[f.name].cast(f.type) for f in schema], schema=schema
        )

    def rebalance(g: _Group) -> list[tuple[bytes | None, bytes | None]]:
        members = list(g.members or [])
        if members and rng.random() < 0.5:
            members.pop(rng.randrange(len(members)))
        while len(members) < g.max_members and (not members or rng.random() < 0.6):
            members.append(f"consumer-{g.index}-{g.next_member}-{rng.getrandbits(32):08x}")
            g.next_member += 1
        g.members, g.generation = members, g.generation + 1
        tps = [(t, p) for t, n in g.topics for p in range(n)]
        if g.kind == "share":
            return [cc.encode_record(cc.Record(11, GroupIdKey(group_id=g.group_id), 0,
                                               ShareGroupMetadataValue(epoch=g.generation, metadata_hash=0)))]
        if g.kind == "kip848":
            records = [cc.encode_record(cc.Record(3, GroupIdKey(group_id=g.group_id), 0,
                                                  ConsumerGroupMetadataValue(epoch=g.generation, metadata_hash=0)))]
            for m in members[-1:]:
                value = ConsumerGroupMemberMetadataValue(
                    instance_id=None, rack_id=None, client_id=m.split("-")[0], client_host="/10.0.0.1",
                    subscribed_topic_names=tuple(t for t, _ in g.topics), subscribed_topic_regex=None,
                    rebalance_timeout_ms=300000, server_assignor="uniform", classic_member_metadata=None)
                member_key = GroupMemberKey(group_id=g.group_id, member_id=m)
                records.append(cc.encode_record(cc.Record(5, member_key, 0, value)))
            return records
        v = g.protocol_version
        metadata_members = []
        for i, m in enumerate(members):
            assigned = tuple(TopicPartition(t, p) for j, (t, p) in enumerate(tps) if j % len(members) == i)
            subscription = cc.encode_subscription(Subscription(
                version=v, topics=tuple(t for t, _ in g.topics), user_data=None,
                owned_partitions=assigned if v >= 1 else (), generation_id=g.generation - 1 if v >= 2 else -1,
                rack_id=("rack-a" if i % 2 else "rack-b") if v >= 3 else None))
            assignment = cc.encode_assignment(Assignment(version=min(v, 3), partitions=assigned, user_data=None))
            metadata_members.append(MemberMetadata(
                member_id=m,
                group_instance_id=f"{g.group_id}-pod-{i}" if g.index % 5 == 0 and g.metadata_version >= 3 else None,
                client_id=f"{g.group_id}-client", client_host=f"/10.1.{g.index % 250}.{i}",
                rebalance_timeout=300000 if g.metadata_version >= 1 else -1, session_timeout=45000,
                subscription=subscription, assignment=assignment))
        value = GroupMetadataValue(
            protocol_type="consumer", generation=g.generation,
            protocol=g.assignor if members else None, leader=members[0] if members else None,
            current_state_timestamp=now if g.metadata_version >= 2 else -1, members=tuple(metadata_members))
        return [cc.encode_record(cc.Record(2, GroupMetadataKey(group=g.group_id), g.metadata_version, value))]

    def commit_records(g: _Group) -> list[tuple[bytes | None, bytes | None]]:
        g.committed += rng.randint(1, 500)
        records = []
        for t, p in ((t, p) for t, n in g.topics for p in range(n)):
            key = key_cache.get((g.group_id, t, p))
            if key is None:
                key = key_cache[(g.group_id, t, p)] = OffsetCommitKey(group=g.group_id, topic=t, partition=p)
            ov = g.offset_version
            value = OffsetCommitValue(
                offset=g.committed + p, leader_epoch=7 if ov >= 3 else -1, metadata="",
                commit_timestamp=now, expire_timestamp=now + 86_400_000 if ov == 1 else -1,
                topic_id=topic_ids.setdefault(t, _topic_id(t)) if ov >= 4 else None)
            records.append(cc.encode_record(cc.Record(1, key, ov, value)))
        return records

    previous_offset = out.offset
    while out.offset < end:
        g = groups[rng.randrange(len(groups))]
        step = rng.randint(1, 40)  # mean 20.5 ms
        if spec.record_spacing_ms:
            # Records skipped before `start` count too: the same history whatever range is generated.
            step = max(1, (out.offset - previous_offset) * step * spec.record_spacing_ms * 2 // 41)
            previous_offset = out.offset
        now += step
        r = rng.random()
        if g.generation == 0 or r < spec.rebalance_rate:
            if g.generation > 0 and rng.random() < 0.002 and g.kind == "classic":  # group deleted
                tombstone_key = cc.encode_record(cc.Record(2, GroupMetadataKey(group=g.group_id), None, None))[0]
                out.batch([(tombstone_key, None)], now)
                g.generation = 0
                continue
            out.batch(rebalance(g), now)
            continue
        r -= spec.rebalance_rate
        if g.kind == "share":
            continue  # share groups commit no offsets here
        tp_count = sum(n for _, n in g.topics)
        if r < spec.corrupt_rate:
            good_key, good_value = commit_records(g)[0]
            bad = rng.choice(((good_key, good_value[:-3]), (b"\x00", good_value), (good_key, good_value + b"\x07")))
            out.batch([bad], now)
            continue
        r -= spec.corrupt_rate
        if r < spec.unknown_type_rate:
            out.batch([(struct.pack(">h", 42) + g.group_id.encode(), b"\x00\x00" + rng.randbytes(8))], now)
            continue
        r -= spec.unknown_type_rate
        if r < spec.tombstone_rate:
            t, _ = g.topics[0]
            key = OffsetCommitKey(group=g.group_id, topic=t, partition=0)
            out.batch([(cc.encode_record(cc.Record(1, key, None, None))[0], None)], now)
            continue
        if not out.wanted(tp_count + (1 if g.kind == "transactional" else 0)):
            g.committed += rng.randint(1, 500)
            out.skip(tp_count)
            if g.kind == "transactional":
                rng.random()
                out.skip(1)
            continue
        if g.kind == "transactional":
            producer_id = 100_000 + g.index
            out.batch(commit_records(g), now, producer_id=producer_id, transactional=True)
            outcome = "ABORT" if rng.random() < spec.abort_rate else "COMMIT"
            out.batch([_CONTROL[outcome]], now + 1, producer_id=producer_id, transactional=True, control_type=outcome)
        else:
            out.batch(commit_records(g), now)
        if len(out.cols["offset"]) >= batch_rows:
            yield flush()
    if out.cols["offset"]:
        yield flush()


def _topic_id(topic: str) -> str:
    import base64
    import hashlib

    return base64.urlsafe_b64encode(hashlib.md5(topic.encode()).digest()).decode().rstrip("=")


def fleet_records(spark: SparkSession, spec: FleetSpec, ranges: list[tuple[int, int, int]], run_id: str,
                  ingested_at: dt.datetime) -> DataFrame:
    """raw_offsets rows for the given (partition, start offset, end offset) ranges, one task per range."""
    ingested_us = int(ingested_at.replace(tzinfo=dt.timezone.utc).timestamp() * 1_000_000)
    plan = spark.createDataFrame(ranges, "partition int, start long, end long").repartition(len(ranges))

    def generate(batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            columns = (batch.column(c).to_pylist() for c in ("partition", "start", "end"))
            for partition, start, end in zip(*columns, strict=True):
                yield from generate_partition(spec, partition, start, end, run_id, ingested_us)

    return plan.mapInArrow(generate, RAW_OFFSETS.schema)


def offset_ranges(total: int, partitions: int, starts: dict[int, int] | None = None) -> list[tuple[int, int, int]]:
    """Split `total` new records over the partitions, each continuing from its start offset."""
    starts = starts or {}
    per, extra = divmod(total, partitions)
    return [(p, starts.get(p, 0), starts.get(p, 0) + per + (1 if p < extra else 0)) for p in range(partitions)]


def write_fleet(tables: Any, spec: FleetSpec, records: int, append: bool, run_id: str | None = None) -> int:
    """Append `records` synthetic records to raw_offsets (continuing the archive when `append`)."""
    from jobs.ingest.replicas import archive_watermarks

    spark = tables.spark
    tables.ensure_database()
    tables.ensure(RAW_OFFSETS)
    starts: dict[int, int] = {}
    if append:
        raw = tables.read(RAW_OFFSETS).where(F.col("cluster") == spec.cluster)
        starts = {r["partition"]: r["last_archived_offset"] + 1 for r in archive_watermarks(raw).collect()}
    now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    run = run_id or f"{now:%Y%m%dT%H%M%S%f}Z-synthetic"
    tables.append(RAW_OFFSETS, fleet_records(spark, spec, offset_ranges(records, spec.partitions, starts), run, now))
    return records


def main(argv: list[str] | None = None) -> int:
    from jobs.common.config import load_job_config
    from jobs.common.delta_io import Tables
    from jobs.common.session import build_session

    parser = argparse.ArgumentParser(prog="jobs.synthetic_fleet", description=__doc__.splitlines()[0])
    parser.add_argument("--conf", default=None)
    parser.add_argument("--records", type=int, required=True)
    parser.add_argument("--groups", type=int, default=FleetSpec.groups)
    parser.add_argument("--seed", type=int, default=FleetSpec.seed)
    parser.add_argument("--cluster", default=FleetSpec.cluster)
    parser.add_argument("--record-spacing-ms", type=int, default=FleetSpec.record_spacing_ms,
                        help="mean data time per record of a partition (0: the original 1-40 ms per event)")
    parser.add_argument("--append", action="store_true", help="continue after the archived offsets")
    parser.add_argument("--debug", action="store_true", help="on a configuration error, print the traceback too")
    args = parser.parse_args(argv)
    config = load_job_config(args.conf, debug=args.debug)
    spark = build_session(config)
    tables = Tables(spark, config.tables.database, config.tables.location)
    spec = FleetSpec(cluster=args.cluster, groups=args.groups, seed=args.seed,
                     record_spacing_ms=args.record_spacing_ms)
    write_fleet(tables, spec, args.records, args.append)
    print(f"wrote {args.records} synthetic records for cluster {spec.cluster} into {tables.name(RAW_OFFSETS)}")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
