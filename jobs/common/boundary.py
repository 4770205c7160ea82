"""The single boundary between Spark and `coordinator_core`: vectorized, Arrow batches in and out.

Spark hands each task Arrow record batches (`mapInArrow`); the functions here call coordinator_core on a
whole batch and hand Arrow batches back. Nothing crosses row by row through a Python UDF. These functions
run on executors: coordinator_core and pyarrow are imported there, inside the task function.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pyspark.accumulators import Accumulator, AccumulatorParam
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from schemas.bronze import RAW_OFFSETS
from schemas.decoded import DECODED_RECORD, DECODED_RENAMES

# Raw columns that travel through decoding unchanged.
DECODE_PASSTHROUGH = (
    "cluster",
    "partition",
    "offset",
    "timestamp",
    "producer_id",
    "is_transactional",
)

# Record kinds whose raw bytes are kept after decoding (everything else is fully represented by columns).
_KEEP_BYTES_KINDS = ("unknown",)


def _decoded_fields() -> list[T.StructField]:
    return [
        T.StructField(DECODED_RENAMES.get(f.name, f.name), f.dataType, True) for f in DECODED_RECORD.fields
    ]


def decoded_schema() -> T.StructType:
    """Schema of `decode_records`' output: the passthrough columns, the decoder's columns, key and value.

    `key`/`value` are kept only for records that did not decode or are of an unknown type.
    """
    raw = {f.name: f for f in RAW_OFFSETS.schema.fields}
    fields = [T.StructField(n, raw[n].dataType, True) for n in DECODE_PASSTHROUGH]
    fields += _decoded_fields()
    fields += [T.StructField("key", T.BinaryType(), True), T.StructField("value", T.BinaryType(), True)]
    return T.StructType(fields)


def arrow_schema(schema: T.StructType) -> Any:
    """The Arrow schema Spark's Arrow exchange uses for a Spark schema (UTC timestamps, 32-bit offsets): the
    batches a Python function hands back to Spark must match it exactly."""
    return to_arrow_schema(schema, timestamp_utc=True, prefers_large_types=False)


#: decode_coverage's key: what a record was, and how decoding it went.
COVERAGE_KEY = ("cluster", "record_type", "record_kind", "value_version", "status")
#: decode_errors' columns as the side output carries them (decoded names; `timestamp` is record_timestamp).
ERROR_ROW_COLUMNS = ("cluster", "partition", "offset", "timestamp", "record_type", "record_kind", "group_id",
                     "error", "error_field_path", "error_position", "key", "value")
#: Error rows one task carries back to the driver; past that, the task reports an overflow instead.
ERRORS_KEPT_PER_TASK = 2000


def coverage_status(decoded: Any) -> Any:
    """decode_coverage's status of each row of a decoded Arrow table (the same rule as
    `jobs.decode.rows.decode_coverage_rows` applies in Spark): error, unknown_type, decoded_trailing_bytes
    (read as Kafka reads it, with bytes after a complete struct ignored; a tombstone's key included),
    tombstone or decoded."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = decoded.num_rows
    status = pa.array(["decoded"] * n, pa.string()) if n else pa.array([], pa.string())
    for condition, value in (
        (pc.fill_null(decoded.column("is_tombstone"), False), "tombstone"),
        (pc.fill_null(pc.greater(decoded.column("trailing_bytes"), 0), False), "decoded_trailing_bytes"),
        (pc.fill_null(pc.equal(decoded.column("record_kind"), "unknown"), False), "unknown_type"),
        (pc.is_valid(decoded.column("error")), "error"),
    ):  # later rules win
        status = pc.if_else(condition, pa.scalar(value), status)
    return status


@dataclass
class DecodeSideOutput:
    """What a decoding job reports besides the rows it writes: coverage counts by COVERAGE_KEY and the rows
    that did not decode (ERROR_ROW_COLUMNS), at most ERRORS_KEPT_PER_TASK per task (`overflow` past that).

    Carried back by a Spark accumulator, one update per task: a job can then write its decoded rows straight
    to their table and still account for every record, without caching the decoded rows for a second pass.
    Spark applies each task's update once when the decoding runs in the job's final stage (no shuffle after
    it), which is how `jobs.decode.stage` uses it.
    """

    coverage: dict[tuple[Any, ...], int] = field(default_factory=dict)
    errors: list[tuple[Any, ...]] = field(default_factory=list)
    overflow: bool = False

    def merge(self, other: DecodeSideOutput) -> DecodeSideOutput:
        for key, count in other.coverage.items():
            self.coverage[key] = self.coverage.get(key, 0) + count
        self.errors.extend(other.errors)
        self.overflow = self.overflow or other.overflow
        return self

    def observe(self, decoded: Any, errors_kept: int = ERRORS_KEPT_PER_TASK) -> None:
        """Count one decoded Arrow batch (decoded_schema columns) and keep its error rows, at most
        `errors_kept` in all (`overflow` past that)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        table = pa.table({name: decoded.column(name) for name in COVERAGE_KEY[:-1]}).append_column(
            "status", coverage_status(decoded)
        )
        for row in table.group_by(list(COVERAGE_KEY)).aggregate([([], "count_all")]).to_pylist():
            key = tuple(row[name] for name in COVERAGE_KEY)
            self.coverage[key] = self.coverage.get(key, 0) + row["count_all"]
        failed = pc.is_valid(decoded.column("error"))
        if pc.any(failed).as_py():
            rows = decoded.filter(failed).select(list(ERROR_ROW_COLUMNS)).to_pylist()
            room = errors_kept - len(self.errors)
            self.errors.extend(tuple(r[name] for name in ERROR_ROW_COLUMNS) for r in rows[: max(room, 0)])
            self.overflow = self.overflow or len(rows) > room


class _SideOutputParam(AccumulatorParam):  # type: ignore[type-arg]
    def zero(self, value: DecodeSideOutput) -> DecodeSideOutput:
        return DecodeSideOutput()

    def addInPlace(self, value1: DecodeSideOutput, value2: DecodeSideOutput) -> DecodeSideOutput:
        return value1.merge(value2)


def side_output(spark: SparkSession) -> Accumulator:  # type: ignore[type-arg]
    """A new accumulator for `decode_records(..., side=...)`; read its `.value` after the job."""
    return spark.sparkContext.accumulator(DecodeSideOutput(), _SideOutputParam())


def _decode_batches_fn(
    batch_size: int, side: Accumulator | None = None  # type: ignore[type-arg]
) -> Callable[[Iterable[Any]], Iterable[Any]]:
    out_schema = decoded_schema()
    decoder_names = [f.name for f in DECODED_RECORD.fields]
    renamed = [DECODED_RENAMES.get(n, n) for n in decoder_names]
    errors_kept = ERRORS_KEPT_PER_TASK  # read on the driver: the task sees the value the job was planned with

    def decode_partition(batches: Iterable[Any]) -> Iterator[Any]:
        import pyarrow as pa
        import pyarrow.compute as pc

        import coordinator_core

        arrow_out = arrow_schema(out_schema)
        decoded_arrow = pa.schema([arrow_out.field(n) for n in renamed])
        seen = DecodeSideOutput()
        for batch in batches:
            for start in range(0, batch.num_rows, batch_size):
                chunk = batch.slice(start, batch_size)
                keys = chunk.column(chunk.schema.get_field_index("key"))
                values = chunk.column(chunk.schema.get_field_index("value"))
                decoded = coordinator_core.decode_batch(keys, values)
                decoded = decoded.select(decoder_names).rename_columns(renamed).cast(decoded_arrow)
                keep_bytes = pc.or_kleene(
                    pc.is_valid(decoded.column("error").combine_chunks()),
                    pc.is_in(decoded.column("record_kind").combine_chunks(), pa.array(_KEEP_BYTES_KINDS)),
                )
                keep_bytes = pc.fill_null(keep_bytes, True)
                null_binary = pa.nulls(chunk.num_rows, pa.binary())
                columns = [chunk.column(chunk.schema.get_field_index(n)) for n in DECODE_PASSTHROUGH]
                columns += [c.combine_chunks() for c in decoded.columns]
                columns += [
                    pc.if_else(keep_bytes, keys, null_binary),
                    pc.if_else(keep_bytes, values, null_binary),
                ]
                out = pa.RecordBatch.from_arrays(columns, schema=arrow_out)
                if side is not None:
                    seen.observe(out, errors_kept)
                yield out
        if side is not None:
            side.add(seen)  # once per task, after its last batch

    return decode_partition


def decode_records(
    raw_records: DataFrame, batch_size: int = 20000, side: Accumulator | None = None  # type: ignore[type-arg]
) -> DataFrame:
    """raw_offsets rows (data records, not control records) -> one decoded row each (`decoded_schema`).

    With `side` (from `side_output`), each task also adds what it decoded to that accumulator
    (`DecodeSideOutput`).
    """
    return raw_records.select(*DECODE_PASSTHROUGH, "key", "value").mapInArrow(
        _decode_batches_fn(batch_size, side), decoded_schema()
    )


# ---------------------------------------------------------------------------------------------------
# Segment files -> raw records, on the executors.

#: A segment file to read, with the base offset of the next segment of its partition (null if unknown).
SEGMENT_FILE_COLUMNS = ("cluster", "partition", "path", "next_base_offset")
READ_ERROR = "read_error"
READ_ERROR_POSITION = "read_error_position"
_SEGMENT_RECORD_COLUMNS = (
    "cluster",
    "partition",
    "offset",
    "timestamp",
    "timestamp_type",
    "key",
    "value",
    "producer_id",
    "producer_epoch",
    "is_transactional",
    "is_control",
    "control_type",
    "batch_base_offset",
    "batch_last_offset",
    "partition_leader_epoch",
    "source",
)


def segment_records_schema() -> T.StructType:
    """Raw record columns read from a segment, plus the read error of a corrupt batch (null otherwise).

    A corrupt batch becomes one row with a null offset, the file as `source` and the error; the caller
    splits those from the records.
    """
    raw = {f.name: f for f in RAW_OFFSETS.schema.fields}
    fields = [T.StructField(n, raw[n].dataType, True) for n in _SEGMENT_RECORD_COLUMNS]
    fields += [
        T.StructField(READ_ERROR, T.StringType(), True),
        T.StructField(READ_ERROR_POSITION, T.LongType(), True),
    ]
    return T.StructType(fields)


def _read_segments_fn(batch_size: int) -> Callable[[Iterable[Any]], Iterable[Any]]:
    out_schema = segment_records_schema()

    def read_partition(batches: Iterable[Any]) -> Iterator[Any]:
        import pyarrow as pa

        import coordinator_core

        arrow_out = arrow_schema(out_schema)
        names = [f.name for f in out_schema.fields]

        def flush(rows: dict[str, list[Any]]) -> Any:
            return pa.RecordBatch.from_arrays(
                [pa.array(rows[n], type=arrow_out.field(n).type) for n in names], schema=arrow_out
            )

        def empty() -> dict[str, list[Any]]:
            return {n: [] for n in names}

        for files in batches:
            columns = (files.column(c).to_pylist() for c in SEGMENT_FILE_COLUMNS)
            for cluster, partition, path, next_base_offset in zip(*columns, strict=True):
                rows = empty()
                # The reader takes the segment's base offset from the file name; every offset of the segment
                # is also below the next segment's. A batch outside that range is one of reader.problems.
                reader = coordinator_core.read_segment(path, next_base_offset=next_base_offset)
                for entry in reader:
                    rows["cluster"].append(cluster)
                    rows["partition"].append(partition)
                    rows["offset"].append(entry.offset)
                    rows["timestamp"].append(entry.timestamp * 1000 if entry.timestamp >= 0 else None)
                    rows["timestamp_type"].append(entry.timestamp_type)
                    rows["key"].append(entry.key)
                    rows["value"].append(entry.value)
                    rows["producer_id"].append(entry.producer_id)
                    rows["producer_epoch"].append(entry.producer_epoch)
                    rows["is_transactional"].append(entry.is_transactional)
                    rows["is_control"].append(entry.is_control)
                    rows["control_type"].append(entry.control_type)
                    rows["batch_base_offset"].append(entry.batch_base_offset)
                    rows["batch_last_offset"].append(entry.batch_last_offset)
                    rows["partition_leader_epoch"].append(entry.partition_leader_epoch)
                    rows["source"].append(path)
                    rows[READ_ERROR].append(None)
                    rows[READ_ERROR_POSITION].append(None)
                    if len(rows["offset"]) >= batch_size:
                        yield flush(rows)
                        rows = empty()
                # Corrupt batches, batches at impossible offsets and torn tails were skipped by the reader;
                # report each one.
                for problem in reader.problems:
                    for n in names:
                        rows[n].append(None)
                    rows["cluster"][-1] = cluster
                    rows["partition"][-1] = partition
                    rows["is_control"][-1] = False
                    rows["source"][-1] = path
                    rows[READ_ERROR][-1] = f"{problem.kind}: {problem.message}"
                    rows[READ_ERROR_POSITION][-1] = problem.position
                if rows["source"]:
                    yield flush(rows)

    return read_partition


def read_segment_files(segment_files: DataFrame, batch_size: int = 20000) -> DataFrame:
    """(cluster, partition, path[, next_base_offset]) rows -> records read from those segment files, in
    parallel tasks. `next_base_offset` (see `jobs.ingest.segments.next_segment_base_offsets`) bounds each file's
    offsets; without the column, only the file name's base offset does."""
    if "next_base_offset" not in segment_files.columns:
        segment_files = segment_files.withColumn("next_base_offset", F.lit(None).cast("long"))
    return segment_files.select(*SEGMENT_FILE_COLUMNS).mapInArrow(
        _read_segments_fn(batch_size), segment_records_schema()
    )
