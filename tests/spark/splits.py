"""Feeding one archive to the nightly job in pieces, for the property tests of the incremental gold stages.

A *source* warehouse holds the whole input, ingested once (raw_offsets, and the coordinator_events of its
logs). Each *split* copies it into the test warehouse under a cluster name of its own, cut into `runs`
pieces at random offsets of each `__consumer_offsets` partition; its log events go to random runs (before,
with or after their records). Every table's rows carry their cluster, so the copies never meet: one nightly
run per piece index feeds all splits at once, and six splits of one input cost six runs, not twenty-one.

Not tests: helpers (and the oracle's inputs, rebuilt from the test warehouse's silver tables and archive).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import random
import re
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

import coordinator_core as cc
from coordinator_core.history import GroupRecord
from coordinator_core.logs import CoordinatorEvent
from jobs.common.delta_io import Tables
from schemas import CONSUMER_GROUP_RECORDS, GROUP_METADATA, OFFSET_COMMITS, RAW_OFFSETS
from schemas.logs import COORDINATOR_EVENTS


@dataclass(frozen=True)
class Split:
    """One copy of `source_cluster` as `cluster`, fed in `runs` pieces: piece i holds, per partition, the
    offsets in [cuts[p][i-1], cuts[p][i]) (open-ended at both ends); an event goes to piece
    hash(seed, event) mod runs."""

    source_cluster: str
    cluster: str
    runs: int
    cuts: dict[int, tuple[int, ...]]
    seed: int

    def bounds(self, piece: int) -> list[tuple[int, int, int]]:
        """(partition, first offset, end offset) of the piece, per partition."""
        out = []
        for partition, cuts in self.cuts.items():
            edges = (-1, *cuts, 2**62)
            out.append((partition, edges[piece], edges[piece + 1]))
        return out


def offset_ranges(tables: Tables, cluster: str) -> dict[int, tuple[int, int]]:
    """partition -> (first, last) archived offset of a cluster."""
    rows = (tables.read(RAW_OFFSETS).where(F.col("cluster") == cluster).groupBy("partition")
            .agg(F.min("offset").alias("lo"), F.max("offset").alias("hi")).collect())
    return {r["partition"]: (r["lo"], r["hi"]) for r in rows}


def random_split(rng: random.Random, source_cluster: str, cluster: str, runs: int,
                 ranges: dict[int, tuple[int, int]]) -> Split:
    """Cut points drawn uniformly in each partition's offsets (two may coincide: an empty piece)."""
    cuts = {p: tuple(sorted(rng.randint(lo, hi + 1) for _ in range(runs - 1))) for p, (lo, hi) in ranges.items()}
    return Split(source_cluster, cluster, runs, cuts, rng.randrange(2**31))


def feed_piece(source: Tables, target: Tables, splits: Sequence[Split], piece: int,
               events: DataFrame | None = None) -> None:
    """Append piece `piece` of every split (that has one) to the target's raw_offsets, and its log events
    (`events`: coordinator_events rows of the source clusters; the source's own table by default) to the
    target's coordinator_events, as the ingest and logs stages would. One read of each source table."""
    spark = source.spark
    live = [s for s in splits if piece < s.runs]
    if not live:
        return
    bounds = spark.createDataFrame(
        [(s.source_cluster, s.cluster, p, lo, hi) for s in live for p, lo, hi in s.bounds(piece)],
        "_source string, _copy string, partition int, _lo long, _hi long")
    raw = (source.read(RAW_OFFSETS).alias("r")
           .join(F.broadcast(bounds).alias("b"),
                 on=(F.col("r.cluster") == F.col("b._source")) & (F.col("r.partition") == F.col("b.partition")),
                 how="inner")
           .where((F.col("r.offset") >= F.col("b._lo")) & (F.col("r.offset") < F.col("b._hi")))
           .select(*[F.col("b._copy").alias("cluster") if c == "cluster" else F.col(f"r.{c}")
                     for c in RAW_OFFSETS.column_names]))
    target.append(RAW_OFFSETS, raw)
    copies = spark.createDataFrame([(s.source_cluster, s.cluster, s.runs, s.seed) for s in live],
                                   "_source string, _copy string, _runs int, _seed long")
    lines = (source.read(COORDINATOR_EVENTS) if events is None else events).alias("e")
    run = F.pmod(F.xxhash64(F.col("c._seed"), F.col("e.file_id"), F.col("e.line_number")), F.col("c._runs"))
    lines = (lines.join(F.broadcast(copies).alias("c"), on=F.col("e.cluster") == F.col("c._source"), how="inner")
             .where(run == piece)
             .select(*[F.col("c._copy").alias("cluster") if c == "cluster" else F.col(f"e.{c}")
                       for c in COORDINATOR_EVENTS.column_names]))
    target.append(COORDINATOR_EVENTS, lines)


# ----------------------------------------------------------------------------------------------
# The oracle's inputs: every group's records and log events, rebuilt from the test warehouse


def _utc(micros: int | None) -> dt.datetime | None:
    if micros is None:
        return None
    return dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=micros)


def group_records(tables: Tables) -> dict[tuple[str, str], list[GroupRecord]]:
    """(cluster, group) -> the group's archived records (those the decode stage put in a silver table, with
    the transaction outcome of offset commits), decoded again from the archived bytes."""
    keys = (tables.read(OFFSET_COMMITS).select("cluster", "partition", "offset", "group_id", "transaction_outcome")
            .unionByName(tables.read(GROUP_METADATA).select("cluster", "partition", "offset", "group_id",
                                                            F.lit(None).cast("string").alias("transaction_outcome")))
            .unionByName(tables.read(CONSUMER_GROUP_RECORDS).where(F.col("group_id").isNotNull())
                         .select("cluster", "partition", "offset", "group_id",
                                 F.lit(None).cast("string").alias("transaction_outcome"))))
    raw = tables.read(RAW_OFFSETS).select("cluster", "partition", "offset", F.unix_millis("timestamp").alias("ms"),
                                          "key", "value")
    out: dict[tuple[str, str], list[GroupRecord]] = defaultdict(list)
    for r in keys.join(raw, on=["cluster", "partition", "offset"], how="inner").toLocalIterator():
        record = cc.decode_record(bytes(r["key"]), None if r["value"] is None else bytes(r["value"]))
        out[(r["cluster"], r["group_id"])].append(
            GroupRecord(r["offset"], r["ms"], record, r["transaction_outcome"]))
    return out


_EVENT_FIELDS = {f.name for f in dataclasses.fields(CoordinatorEvent)}


def group_events(tables: Tables) -> dict[tuple[str, str], list[CoordinatorEvent]]:
    """(cluster, group) -> the log events naming the group, in file and line order (what the job gives
    each group: the events whose group_id is the group's; source is the file path)."""
    events = (tables.read(COORDINATOR_EVENTS).where(F.col("group_id").isNotNull())
              .withColumn("_micros", F.unix_micros("timestamp")).orderBy("file_id", "line_number"))
    out: dict[tuple[str, str], list[CoordinatorEvent]] = defaultdict(list)
    for r in events.toLocalIterator():
        row = r.asDict()
        values: dict[str, Any] = {k: v for k, v in row.items() if k in _EVENT_FIELDS}
        values["timestamp"] = _utc(row["_micros"])
        values["source"] = row["path"] or row["log_source"]
        out[(row["cluster"], row["group_id"])].append(CoordinatorEvent(**values))
    return out


# ----------------------------------------------------------------------------------------------
# What a run read: rows out of every scan of a table's data files, from Spark's SQL metrics


class ScannedRows:
    """Rows read from each table's data files by the SQL executions run inside `scanned_rows` (Delta log
    reads aside), from the "number of output rows" metric of every scan node of their plans."""

    def __init__(self, spark: SparkSession) -> None:
        self._store = spark._jsparkSession.sharedState().statusStore()  # type: ignore[attr-defined]
        self._first = self._next_execution()
        self.rows: dict[str, int] = {}
        #: the most rows one scan node read, per table
        self.largest: dict[str, int] = {}

    def _next_execution(self) -> int:
        executions = self._store.executionsList()
        return max((executions.apply(i).executionId() for i in range(executions.size())), default=-1) + 1

    def _collect(self) -> None:
        executions = self._store.executionsList()
        retained = [executions.apply(i).executionId() for i in range(executions.size())]
        # The store keeps the last spark.sql.ui.retainedExecutions: had it dropped one of ours, its reads
        # would go uncounted.
        assert not retained or min(retained) <= self._first, (
            f"executions {self._first}..{min(retained) - 1} were dropped from the status store before they were "
            "counted: raise spark.sql.ui.retainedExecutions")
        for i in range(executions.size()):
            execution_id = executions.apply(i).executionId()
            if execution_id < self._first:
                continue
            metrics = self._store.executionMetrics(execution_id)
            nodes = self._store.planGraph(execution_id).allNodes().iterator()
            while nodes.hasNext():
                node = nodes.next()
                table = _scanned_table(node.name(), node.desc())
                if table is None:
                    continue
                node_metrics = node.metrics().iterator()
                while node_metrics.hasNext():
                    metric = node_metrics.next()
                    value = metrics.get(metric.accumulatorId())
                    if metric.name() == "number of output rows" and value.isDefined():
                        n = int(str(value.get()).replace(",", ""))
                        self.rows[table] = self.rows.get(table, 0) + n
                        self.largest[table] = max(self.largest.get(table, 0), n)

    def by_table(self) -> dict[str, int]:
        return dict(self.rows)

    def total(self) -> int:
        return sum(self.rows.values())


def _scanned_table(name: str, desc: str) -> str | None:
    """The table a scan node reads data files of (its directory name); None for Delta log reads and scans
    of in-memory rows."""
    if name.startswith("Scan DeltaCDFRelation"):
        found = re.search(r"path=file:([^,]*?)/_delta_log", name)
        return found.group(1).rstrip("/").rsplit("/", 1)[-1] if found else None
    found = re.search(r"Location: \w+\(\d+ paths?\)\[([^\],]*)", desc)
    if not name.startswith("Scan parquet") or found is None or "_delta_log" in found.group(1):
        return None
    return found.group(1).rstrip("/").rsplit("/", 1)[-1]


@contextmanager
def scanned_rows(spark: SparkSession) -> Iterator[ScannedRows]:
    # A scan's description names its directory, cut to this many characters (default 100: a temporary
    # directory's path can be longer, and the table's name would be cut off).
    key = "spark.sql.maxMetadataStringLength"
    before = spark.conf.get(key, None)
    spark.conf.set(key, "10000")
    try:
        scanned = ScannedRows(spark)
        yield scanned
        scanned._collect()
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


def comparable(df: DataFrame) -> DataFrame:
    """Map columns as sorted entry arrays (Spark cannot sort rows by a map, and chispa sorts them)."""
    return df.select(*[F.sort_array(F.map_entries(f.name)).alias(f.name) if isinstance(f.dataType, T.MapType)
                       else F.col(f.name) for f in df.schema.fields])
