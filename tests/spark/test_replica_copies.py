"""Copies of one `__consumer_offsets` partition from several brokers, built from real broker bytes.

Copy A is a real segment of the kafka-4.3.1 sample (leader epoch 0). Copy B is A's first batches, then a
tail of real batches from another partition's segment re-based onto the offsets from the divergence on,
under leader epoch 1 (a v2 batch's baseOffset and partitionLeaderEpoch are outside its CRC, so the
re-based batches stay valid: Kafka's DumpLogSegments says so), with a `leader-epoch-checkpoint` saying
epoch 1 starts there. B is what a new leader wrote after A's leader was deposed; A's tail is the tail
Kafka truncates. Copy C is a follower of B that replicated part of B's tail.

Expected values come from the constructed bytes as Kafka's DumpLogSegments prints them (offsets,
timestamps, leader epochs) and from the segments' own bytes (read by the segment reader, which this
file does not test), never from the reconciliation under test.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from coordinator_core.segment import read_segment
from jobs.common.config import Config, SegmentSource, SourcesConfig, TablesConfig
from jobs.common.delta_io import Tables
from jobs.ingest.replicas import ARCHIVED_TRUNCATED, TRUNCATED, UNDECIDED
from jobs.nightly import run_nightly
from jobs.run_outputs import cluster_summaries, format_summary, summary_json
from jobs.stages import STAGES
from schemas import RAW_OFFSETS, REPLICA_CONFLICTS

pytestmark = pytest.mark.spark

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "kafka-4.3.1"
COPY_A = SAMPLE / "__consumer_offsets-13" / "00000000000000000000.log"  # offsets 0..40, epoch 0
DONOR = SAMPLE / "__consumer_offsets-28" / "00000000000000000000.log"  # its batches 2.. become B's tail
PARTITION = 13
DIVERGENCE = 24  # base offset of A's 9th batch: B and C hold A's bytes before it
SEGMENT = "00000000000000000000.log"
CLUSTER = "replicated"
INGEST_ONLY = tuple(s for s in STAGES if s.name == "ingest")
_counter = iter(range(10**6))


# -- building the copies (bytes only) ------------------------------------------------------------------


def batches(data: bytes) -> list[bytes]:
    """The batches of a v2 segment, each whole (offset i64, length i32, then `length` bytes)."""
    out, pos = [], 0
    while pos + 12 <= len(data):
        length = struct.unpack_from(">i", data, pos + 8)[0]
        out.append(data[pos:pos + 12 + length])
        pos += 12 + length
    return out


def base_offset(batch: bytes) -> int:
    return int(struct.unpack_from(">q", batch, 0)[0])


def last_offset_delta(batch: bytes) -> int:
    return int(struct.unpack_from(">i", batch, 23)[0])  # after the attributes (21..23), inside the CRC


def rebased(batch: bytes, base: int, epoch: int) -> bytes:
    """The batch moved to `base` under leader epoch `epoch`: bytes 0..8 and 12..16, outside the CRC."""
    return struct.pack(">q", base) + batch[8:12] + struct.pack(">i", epoch) + batch[16:]


def tail_from_donor(start: int, epoch: int, donor_batches: list[int]) -> bytes:
    out, next_offset = b"", start
    donor = batches(DONOR.read_bytes())
    for i in donor_batches:
        out += rebased(donor[i], next_offset, epoch)
        next_offset += last_offset_delta(donor[i]) + 1
    return out


def prefix_of_a() -> bytes:
    data = COPY_A.read_bytes()
    kept = [b for b in batches(data) if base_offset(b) < DIVERGENCE]
    assert base_offset(batches(data)[len(kept)]) == DIVERGENCE
    return b"".join(kept)


def checkpoint(*entries: tuple[int, int]) -> str:
    """A leader-epoch-checkpoint in Kafka's format (LeaderEpochCheckpointFile: version, count, entries)."""
    return "0\n" + f"{len(entries)}\n" + "".join(f"{e} {o}\n" for e, o in entries)


def write_copy(root: Path, broker: str, segment: bytes, epochs: str | None) -> Path:
    directory = root / CLUSTER / broker / f"__consumer_offsets-{PARTITION}"
    directory.mkdir(parents=True)
    (directory / SEGMENT).write_bytes(segment)
    (directory / "00000000000000000000.index").write_bytes(b"")
    if epochs is not None:
        (directory / "leader-epoch-checkpoint").write_text(epochs)
    return directory / SEGMENT


B_TAIL = [2, 3, 4, 6]  # donor batches: 6 + 6 + 6 + 7 records -> offsets 24..48 in B
C_TAIL = [2, 3]  # C replicated B up to offset 35


def copy_b_bytes(epoch: int = 1) -> bytes:
    return prefix_of_a() + tail_from_donor(DIVERGENCE, epoch, B_TAIL)


def copy_c_bytes() -> bytes:
    return prefix_of_a() + tail_from_donor(DIVERGENCE, 1, C_TAIL)


# -- the oracle: Kafka's DumpLogSegments -----------------------------------------------------------------


_BATCH_LINE = re.compile(r"^baseOffset: (\d+) lastOffset: (\d+) count: (\d+) .*partitionLeaderEpoch: (-?\d+) "
                         r".* isvalid: (true|false)")
_RECORD_LINE = re.compile(r"^\| offset: (\d+) (CreateTime|LogAppendTime): (-?\d+) ")


def kafka_dump(paths: list[Path]) -> dict[Path, dict[int, tuple[int, int]]]:
    """offset -> (timestamp ms, batch leader epoch) of every record of each file, as DumpLogSegments prints
    them; every batch must be valid to Kafka (its CRC checks out)."""
    from tests.kafka_testbed.broker import java_command
    from tests.kafka_testbed.dumplog import DUMP_LOG_SEGMENTS

    cmd = java_command(DUMP_LOG_SEGMENTS[4], "--print-data-log", "--files", ",".join(str(p) for p in paths),
                       jvm_options=("-Dlog4j2.level=WARN", "-Xmx256m"))
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    out: dict[Path, dict[int, tuple[int, int]]] = {}
    current: dict[int, tuple[int, int]] = {}
    epoch = None
    for line in done.stdout.splitlines():
        if line.startswith("Dumping "):
            current = out.setdefault(Path(line[len("Dumping "):]), {})
        elif (m := _BATCH_LINE.match(line)) is not None:
            assert m.group(5) == "true", f"Kafka finds a batch invalid: {line[:200]}"
            epoch = int(m.group(4))
        elif (m := _RECORD_LINE.match(line)) is not None:
            assert epoch is not None
            current[int(m.group(1))] = (int(m.group(3)), epoch)
    return {p: out[p] if p in out else out[p.resolve()] for p in paths}


def record_bytes(path: Path) -> dict[int, tuple[bytes | None, bytes | None]]:
    return {e.offset: (e.key, e.value) for e in read_segment(path)}


# -- running the job -------------------------------------------------------------------------------------


def config_for(root: Path, tables_root: Path, database: str) -> Config:
    return Config(sources=SourcesConfig(mode="segments", segments=(SegmentSource("*", str(root)),)),
                  tables=TablesConfig(database=database, location=str(tables_root)))


def run(spark: SparkSession, config: Config) -> dict[str, Any]:
    """One ingest-only nightly run; its JSON summary's ingest stage and cluster counts, its console text."""
    ctx = run_nightly(spark, config, stages=INGEST_ONLY)
    doc = summary_json(ctx, "committed", 0)
    return {"ingest": doc["stages"]["ingest"], "clusters": cluster_summaries(ctx), "console": format_summary(ctx)}


def tables_of(spark: SparkSession, config: Config) -> Tables:
    return Tables(spark, config.tables.database, config.tables.location)


def archived(tables: Tables) -> dict[int, dict[str, Any]]:
    rows = tables.read(RAW_OFFSETS).where(F.col("partition") == PARTITION).collect()
    by_offset: dict[int, dict[str, Any]] = {}
    for r in rows:
        assert r["offset"] not in by_offset, f"offset {r['offset']} archived twice"
        by_offset[r["offset"]] = r.asDict()
    return by_offset


def conflicts(tables: Tables) -> list[dict[str, Any]]:
    return [r.asDict() for r in tables.read(REPLICA_CONFLICTS).orderBy("offset", "source").collect()]


def ms(row: dict[str, Any]) -> int:
    import calendar

    t = row["timestamp"]
    return calendar.timegm(t.timetuple()) * 1000 + t.microsecond // 1000


@pytest.fixture(scope="module")
def copies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("replicas")
    a = write_copy(root / "abc", "broker-1", COPY_A.read_bytes(), checkpoint((0, 0)))
    b = write_copy(root / "abc", "broker-2", copy_b_bytes(), checkpoint((0, 0), (1, DIVERGENCE)))
    c = write_copy(root / "abc", "broker-3", copy_c_bytes(), checkpoint((0, 0), (1, DIVERGENCE)))
    dumped = kafka_dump([a, b, c])
    return {"root": root, "a": a, "b": b, "c": c, "dump": dumped}


def test_the_constructed_copies_are_valid_to_kafka_and_diverge_where_built(copies: dict[str, Any]) -> None:
    a, b, c = (copies["dump"][copies[n]] for n in "abc")
    assert sorted(a) == list(range(0, 41)) and sorted(b) == list(range(0, 49)) and sorted(c) == list(range(0, 36))
    assert {e for o, (_, e) in b.items() if o >= DIVERGENCE} == {1}
    assert {e for _, e in a.values()} == {0}
    assert all(a[o] == b[o] == c[o] for o in range(DIVERGENCE))  # the shared prefix
    assert all(b[o] == c[o] for o in range(DIVERGENCE, 36))
    assert all(a[o][0] != b[o][0] for o in range(DIVERGENCE, 41))  # the tails differ (timestamps)


def test_diverging_copies_keep_the_newer_epoch_and_quarantine_the_truncated_tail(
        spark: SparkSession, copies: dict[str, Any], tmp_path: Path) -> None:
    dump = copies["dump"]
    a_dump, b_dump = dump[copies["a"]], dump[copies["b"]]
    a_bytes, b_bytes = record_bytes(copies["a"]), record_bytes(copies["b"])
    config = config_for(copies["root"] / "abc", tmp_path / "tables", f"cgh_replicas_{next(_counter)}")
    tables = tables_of(spark, config)

    first = run(spark, config)
    raw = archived(tables)
    assert sorted(raw) == list(range(0, 49))  # each offset once: the prefix from all, B's tail
    for offset, row in raw.items():
        expected_ts, expected_epoch = a_dump[offset] if offset < DIVERGENCE else b_dump[offset]
        assert (ms(row), row["partition_leader_epoch"]) == (expected_ts, expected_epoch), offset
        assert (row["key"], row["value"]) == (a_bytes[offset] if offset < DIVERGENCE else b_bytes[offset])
        if offset >= DIVERGENCE:
            assert row["source"] == str(copies["b"])  # B and C agree up to 35; B's path sorts first
    quarantined = conflicts(tables)
    assert [q["offset"] for q in quarantined] == list(range(DIVERGENCE, 41))  # A's whole tail, once each
    for q in quarantined:
        o = q["offset"]
        assert (q["reason"], q["source"], q["partition_leader_epoch"], q["copies"]) == (
            TRUNCATED, str(copies["a"]), 0, 1)
        assert (q["truncated_by_epoch"], q["truncated_by_start_offset"]) == (1, DIVERGENCE)
        assert q["truncated_by_evidence"]
        assert (q["kept_source"], q["kept_partition_leader_epoch"], q["kept_archived_before"]) == (
            str(copies["b"]), 1, False)
        assert (ms(q), q["key"], q["value"]) == (a_dump[o][0], *a_bytes[o])
        assert "leader epoch 1 starts at offset 24" in q["reason_detail"]
    assert first["ingest"]["records_read"] == 41 + 49 + 36
    assert first["ingest"]["records_archived"] == 49
    assert first["ingest"]["replica_conflicts"] == 41 - DIVERGENCE
    assert first["clusters"][CLUSTER]["replica_conflicts"] == 41 - DIVERGENCE
    assert f"{41 - DIVERGENCE} copies quarantined ({TRUNCATED})" in first["console"]

    # The same copies again: nothing archived, nothing quarantined again.
    raw_version, conflicts_version = tables.version(RAW_OFFSETS), tables.version(REPLICA_CONFLICTS)
    again = run(spark, config)
    assert (again["ingest"]["records_archived"], again["ingest"]["replica_conflicts"]) == (0, 0)
    assert archived(tables) == raw
    assert conflicts(tables) == quarantined
    assert tables.version(REPLICA_CONFLICTS) == conflicts_version
    assert not tables.data_changed_since(RAW_OFFSETS, raw_version)

    # A later run bringing A's tail again (another copy of broker 1's directory, alone): the archive's own
    # epoch 1 rows say it was truncated; it is quarantined already, so nothing is counted twice.
    later_root = copies["root"] / f"later-{next(_counter)}"
    write_copy(later_root, "broker-1-again", COPY_A.read_bytes(), checkpoint((0, 0)))
    later = run(spark, dataclasses.replace(config, sources=SourcesConfig(
        mode="segments", segments=(SegmentSource("*", str(later_root)),))))
    assert (later["ingest"]["records_read"], later["ingest"]["records_archived"],
            later["ingest"]["replica_conflicts"]) == (41, 0, 0)
    assert archived(tables) == raw and conflicts(tables) == quarantined


def test_a_newer_epoch_copy_arriving_after_the_truncated_one_was_archived(
        spark: SparkSession, copies: dict[str, Any], tmp_path: Path) -> None:
    """Run 1 sees only A (the deposed leader's copy) and archives its tail; run 2 brings B and C. The archive
    is append-only: B's copies of offsets A's tail holds are quarantined as the ones Kafka kept."""
    root_a, root_bc = tmp_path / "a", tmp_path / "bc"
    a = write_copy(root_a, "broker-1", COPY_A.read_bytes(), checkpoint((0, 0)))
    b = write_copy(root_bc, "broker-2", copy_b_bytes(), checkpoint((0, 0), (1, DIVERGENCE)))
    write_copy(root_bc, "broker-3", copy_c_bytes(), checkpoint((0, 0), (1, DIVERGENCE)))
    b_dump = copies["dump"][copies["b"]]
    config = config_for(root_a, tmp_path / "tables", f"cgh_replicas_{next(_counter)}")
    tables = tables_of(spark, config)
    assert run(spark, config)["ingest"]["records_archived"] == 41
    second = run(spark, dataclasses.replace(config, sources=SourcesConfig(
        mode="segments", segments=(SegmentSource("*", str(root_bc)),))))
    raw = archived(tables)
    assert sorted(raw) == list(range(0, 49))
    assert all(raw[o]["source"] == str(a) for o in range(0, 41))
    assert all((raw[o]["source"], raw[o]["partition_leader_epoch"]) == (str(b), 1) for o in range(41, 49))
    quarantined = conflicts(tables)
    assert [q["offset"] for q in quarantined] == list(range(DIVERGENCE, 41))
    for q in quarantined:
        assert (q["reason"], q["source"], q["partition_leader_epoch"]) == (ARCHIVED_TRUNCATED, str(b), 1)
        assert q["copies"] == (2 if q["offset"] <= 35 else 1)  # C holds B's records up to 35
        assert (q["kept_source"], q["kept_partition_leader_epoch"], q["kept_archived_before"]) == (str(a), 0, True)
        assert ms(q) == b_dump[q["offset"]][0]
    assert (second["ingest"]["records_archived"], second["ingest"]["replica_conflicts"]) == (8, 41 - DIVERGENCE)
    assert f"{41 - DIVERGENCE} copies quarantined ({ARCHIVED_TRUNCATED})" in second["console"]


def test_copies_the_epoch_rule_cannot_decide_are_kept_by_the_documented_tie_break(
        spark: SparkSession, tmp_path: Path) -> None:
    """Two copies differing under the same leader epoch, no checkpoint files: no later epoch decides. The
    tie-break (same epoch, one file each) keeps the copy of the first source path (broker-0)."""
    root = tmp_path / "copies"
    a = write_copy(root, "broker-1", COPY_A.read_bytes(), None)
    x = write_copy(root, "broker-0", copy_b_bytes(epoch=0), None)
    config = config_for(root, tmp_path / "tables", f"cgh_replicas_{next(_counter)}")
    tables = tables_of(spark, config)
    summary = run(spark, config)
    dumped = kafka_dump([x])[x]
    raw = archived(tables)
    assert sorted(raw) == list(range(0, 49))
    assert all(raw[o]["source"] == str(x) and ms(raw[o]) == dumped[o][0] for o in range(DIVERGENCE, 49))
    quarantined = conflicts(tables)
    assert [(q["offset"], q["reason"], q["source"], q["kept_source"]) for q in quarantined] == [
        (o, UNDECIDED, str(a), str(x)) for o in range(DIVERGENCE, 41)]
    assert all(q["truncated_by_epoch"] is None and "no later epoch decides" in q["reason_detail"]
               for q in quarantined)
    assert summary["ingest"]["replica_conflicts"] == 41 - DIVERGENCE


def test_a_warehouse_from_before_the_leader_epoch_column_gains_it(spark: SparkSession, tmp_path: Path) -> None:
    """raw_offsets created without partition_leader_epoch (and holding A's records, archived then): the
    next run adds the column (null in the old rows) and finds A's copy identical to what is archived."""
    old_schema = T.StructType([f for f in RAW_OFFSETS.schema.fields if f.name != "partition_leader_epoch"])
    old_spec = dataclasses.replace(RAW_OFFSETS, schema=old_schema)
    root = tmp_path / "copies"
    a = write_copy(root, "broker-1", COPY_A.read_bytes(), checkpoint((0, 0)))
    config = config_for(root, tmp_path / "tables", f"cgh_replicas_{next(_counter)}")
    tables = tables_of(spark, config)
    tables.ensure_database()
    tables.ensure(old_spec)
    import datetime as dt

    old_rows = [
        (CLUSTER, PARTITION, e.offset, dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=e.timestamp),
         e.timestamp_type, e.key, e.value, e.producer_id, e.producer_epoch, e.is_transactional, e.is_control,
         e.control_type, e.batch_base_offset, e.batch_last_offset, str(a), "old-run", dt.datetime(2024, 1, 1))
        for e in read_segment(a)
    ]
    tables.append(old_spec, spark.createDataFrame(old_rows, old_schema))
    summary = run(spark, config)
    assert [f.name for f in tables.read(RAW_OFFSETS).schema] == RAW_OFFSETS.column_names
    raw = archived(tables)
    assert sorted(raw) == list(range(0, 41))
    assert all(r["partition_leader_epoch"] is None and r["ingest_run_id"] == "old-run" for r in raw.values())
    assert (summary["ingest"]["records_archived"], summary["ingest"]["replica_conflicts"]) == (0, 0)
    assert conflicts(tables) == []
    shutil.rmtree(root)


THREE_BROKERS = SAMPLE.parent / "kafka-4.3.1-3brokers"


def test_the_three_broker_sample_is_archived_once_per_offset(spark: SparkSession, tmp_path: Path) -> None:
    """Each broker's own copy of every partition (RF 3, leader epochs 0 and 1 after the failover): the
    copies agree, so every offset is archived once, with the batch leader epoch Kafka's tool prints."""
    segments = sorted(THREE_BROKERS.glob("broker-*/__consumer_offsets-*/*.log"))
    dumped = kafka_dump(segments)
    expected: dict[tuple[int, int], set[tuple[int, int]]] = {}
    for path, records in dumped.items():
        partition = int(path.parent.name.rsplit("-", 1)[1])
        for offset, ts_and_epoch in records.items():
            expected.setdefault((partition, offset), set()).add(ts_and_epoch)
    assert all(len(v) == 1 for v in expected.values())  # the brokers' copies agree
    assert {e for v in expected.values() for _, e in v} >= {0, 1}
    config = Config(sources=SourcesConfig(mode="segments", segments=(SegmentSource(CLUSTER, str(THREE_BROKERS)),)),
                    tables=TablesConfig(database=f"cgh_replicas_{next(_counter)}", location=str(tmp_path / "t")))
    summary = run(spark, config)
    rows = tables_of(spark, config).read(RAW_OFFSETS).collect()
    got = {(r["partition"], r["offset"]): (ms(r.asDict()), r["partition_leader_epoch"]) for r in rows}
    assert len(got) == len(rows) == len(expected)
    assert got == {k: next(iter(v)) for k, v in expected.items()}
    assert summary["ingest"]["records_read"] == sum(len(r) for r in dumped.values())
    assert (summary["ingest"]["records_archived"], summary["ingest"]["replica_conflicts"]) == (len(expected), 0)
    assert summary["ingest"]["segment_errors"] == 0  # its leader-epoch-checkpoint files read as Kafka's
    assert conflicts(tables_of(spark, config)) == []


def test_a_run_that_dies_between_the_quarantine_and_the_archive_is_completed_by_the_next(
        spark: SparkSession, copies: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """replica_conflicts is written first; a run killed before its raw_offsets append leaves the quarantine
    rows, and the next run archives the winners without quarantining anything twice."""
    config = config_for(copies["root"] / "abc", tmp_path / "tables", f"cgh_replicas_{next(_counter)}")
    tables = tables_of(spark, config)
    real_append = Tables.append

    def dying_append(self: Tables, spec: Any, rows: Any, commit_note: str | None = None,
                     transaction: tuple[str, int] | None = None) -> None:
        if spec.name == RAW_OFFSETS.name:
            raise RuntimeError("killed before the archive append")
        real_append(self, spec, rows, commit_note, transaction)

    monkeypatch.setattr(Tables, "append", dying_append)
    with pytest.raises(RuntimeError, match="killed before the archive append"):
        run(spark, config)
    monkeypatch.setattr(Tables, "append", real_append)
    assert [q["offset"] for q in conflicts(tables)] == list(range(DIVERGENCE, 41))
    assert archived(tables) == {}
    after = run(spark, config)
    assert (after["ingest"]["records_archived"], after["ingest"]["replica_conflicts"]) == (49, 0)
    assert sorted(archived(tables)) == list(range(0, 49))
    assert [(q["offset"], q["reason"]) for q in conflicts(tables)] == [(o, TRUNCATED) for o in range(DIVERGENCE, 41)]


def test_copies_meet_only_the_archived_rows_at_or_past_the_lowest_offset_read(spark: SparkSession) -> None:
    """A night compares its copies with the archive near them, not with the whole archive: per partition read,
    the archived rows from its lowest offset read; partitions it did not read, none."""
    from jobs.ingest.replicas import archived_from

    archived = spark.createDataFrame(
        [("c1", 0, o) for o in range(10)] + [("c1", 1, o) for o in range(10)] + [("c2", 0, o) for o in range(10)],
        "cluster string, partition int, offset long")
    read = spark.createDataFrame([("c1", 0, 7), ("c1", 0, 12), ("c2", 0, 3)],
                                 "cluster string, partition int, offset long")
    near = sorted(tuple(r) for r in archived_from(archived, read).collect())
    assert near == [("c1", 0, 7), ("c1", 0, 8), ("c1", 0, 9)] + [("c2", 0, o) for o in range(3, 10)]
    assert archived_from(archived, read.limit(0)).count() == 0
