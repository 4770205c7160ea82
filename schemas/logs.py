"""Logs: broker and client log entries as read (bronze), and the coordinator events parsed from them.

A log file is known by its *content identity* (`file_id`), not by its path: log4j renames `server.log`
to `server.log.1` (or `server.log.2024-05-01-10`) and logrotate may compress it to `.gz`, and every one
of those names still holds the same lines. `file_id` is derived from the cluster, the configured source
name and the file's first line, so a rotated or compressed copy is recognised as the file already read
and only lines past the last one archived are added.

raw_log_lines archives the entries that look like coordinator entries (a coordinator logger or broker
log-context marker in any of their lines, or a JSON-layout entry without a logger key), not every line of
a broker's server.log: reading and appending every line to Delta, with no parsing at all, measured 275k
lines/s on local[2], far below the stage's 1M lines/s target. Every line read is still accounted for, per
file and run, in log_file_reads, which also holds how far each file was read.
"""

from __future__ import annotations

from pyspark.sql import types as T

from schemas._spec import TableSpec, column

_POSITION = [
    column("cluster", T.StringType(), "Kafka cluster name from the configuration.", False),
    column(
        "file_id",
        T.StringType(),
        "Content identity of the log file: hash of cluster, source name and first line; stable across "
        "rotation renames and gzip compression.",
        False,
    ),
    column("line_number", T.LongType(), "1-based number of the entry's first physical line in the file.", False),
]

_SOURCE = [
    column("log_source", T.StringType(), "Configured name of the log source (a broker or client).", False),
    column("path", T.StringType(), "Path the entry was read from (the file's name at that time).", False),
]

RAW_LOG_LINES = TableSpec(
    name="raw_log_lines",
    comment=(
        "One row per coordinator-looking log entry of a broker or client log file (a coordinator logger or "
        "broker log-context marker in any of its lines, or a JSON-layout entry without a logger key; every "
        "entry when the stage runs with archive_all_entries): physical lines joined with a newline when an "
        "entry spans several (stack traces, multi-line messages), container prefixes removed. The lines "
        "not archived are counted per file in log_file_reads. Append-only, incremental by file identity "
        "and line position."
    ),
    grain=("cluster", "file_id", "line_number"),
    partition_columns=("cluster",),
    # Statistics only on the columns readers filter by (not on the entry text).
    properties={"delta.appendOnly": "true", "delta.dataSkippingStatsColumns": "file_id,line_number"},
    schema=T.StructType(
        [
            *_POSITION,
            column("line_count", T.IntegerType(), "Physical lines the entry spans.", False),
            column("text", T.StringType(), "The entry's text, lines joined with \\n.", False),
            *_SOURCE,
            column("broker_id", T.IntegerType(), "Configured broker id of the source; null for clients."),
            column("source_zone", T.StringType(), "Zone of zone-less timestamps in this source (IANA).", False),
            column("ingest_run_id", T.StringType(), "Run that archived the entry.", False),
            column("ingested_at", T.TimestampType(), "When that run started (UTC).", False),
        ]
    ),
)

COORDINATOR_EVENTS = TableSpec(
    name="coordinator_events",
    comment=(
        "One row per log entry that is a coordinator event (coordinator_core's catalogue, section 10 of "
        "coordinator-log-formats.md): what happened to which group and member, when, and why."
    ),
    grain=("cluster", "file_id", "line_number"),
    partition_columns=("cluster",),
    # Statistics only on the columns readers filter by (not on reasons and message texts).
    properties={"delta.dataSkippingStatsColumns": "file_id,line_number,event_type,timestamp,group_id",
                "delta.enableChangeDataFeed": "true"},
    schema=T.StructType(
        [
            *_POSITION,
            *_SOURCE,
            column("event_type", T.StringType(), "Event type name (coordinator_core.ALL_EVENT_TYPES).", False),
            column("line_kind", T.StringType(), "Catalogue row that matched; pins the Kafka version range.", False),
            column("timestamp", T.TimestampType(), "When the log call ran (UTC)."),
            column("level", T.StringType(), "Log level (INFO, WARN, ...)."),
            column("logger", T.StringType(), "Logger name as printed."),
            column("thread", T.StringType(), "Thread name, where the layout prints it."),
            column("broker_id", T.IntegerType(), "Broker that wrote the line (or the coordinator a client names)."),
            column("offsets_partition", T.IntegerType(), "__consumer_offsets partition the line names."),
            column("coordinator_epoch", T.IntegerType(), "Leader epoch of that partition (load/unload lines)."),
            column("group_id", T.StringType(), "Consumer group id (a list of groups on GROUPS_DELETED)."),
            column("generation", T.IntegerType(), "Classic generation id, or the KIP-848 group/member epoch."),
            column("member_id", T.StringType(), "Member id."),
            column("group_instance_id", T.StringType(), "Static member's group.instance.id."),
            column("related_member_id", T.StringType(), "The other member a line names (replaced, new leader)."),
            column("member_ids", T.StringType(), "A set of member ids as printed (opaque)."),
            column("client_id", T.StringType(), "Client id."),
            column("host", T.StringType(), "Client host or coordinator host, without the leading '/'."),
            column("reason", T.StringType(), "Reason text, including any client-supplied part."),
            column("client_reason", T.StringType(), "KIP-800 client-supplied reason."),
            column("cause_class", T.StringType(), "Why it happened (coordinator_core.CAUSE_CLASSES)."),
            column("error", T.StringType(), "Error code or exception class the entry names."),
            column("protocol", T.StringType(), "Selected protocol (assignor) name."),
            column("protocol_type", T.StringType(), "Classic protocol type implied by a client's log prefix."),
            column("group_protocol", T.StringType(), "classic / consumer (KIP-848) / share / streams."),
            column("state", T.StringType(), "Group or member state the line names."),
            column("previous_state", T.StringType(), "State before a transition."),
            column("member_count", T.IntegerType(), "Member count the line gives."),
            column("offsets_removed", T.LongType(), "Offsets removed (expiration lines)."),
            column("duration_ms", T.LongType(), "Duration the line gives, in milliseconds."),
            column("partitions", T.StringType(), "Topic partitions as printed, brackets removed (opaque)."),
            column("message", T.StringType(), "The message text (envelope removed).", False),
            column("ingest_run_id", T.StringType(), "Run that parsed the entry.", False),
        ]
    ),
)

LOG_FILE_READS = TableSpec(
    name="log_file_reads",
    comment=(
        "One row per run and log file that had new lines: the line range read (every physical line, archived "
        "or not), where the next read starts, and what the lines held (entries, entries archived in "
        "raw_log_lines, events, coordinator-looking entries that did not parse, damaged lines); and one row, "
        "with no lines, for a file that could not be read or has no complete first line yet, when its state "
        "is not the one its latest row already records (status)."
    ),
    grain=("cluster", "file_id", "first_line"),
    partition_columns=("cluster",),
    properties={"delta.appendOnly": "true"},
    schema=T.StructType(
        [
            _POSITION[0],
            _POSITION[1],
            column("first_line", T.LongType(), "First physical line read in this run (1-based).", False),
            column("last_line", T.LongType(), "Last physical line read: the end of the last complete entry.", False),
            column(
                "end_byte",
                T.LongType(),
                "Offset just after last_line in the uncompressed file, where the next read seeks to; null for "
                "container-runtime files (re-read from the start and skipped by line number).",
            ),
            *_SOURCE,
            column("lines_read", T.LongType(), "Physical lines read (last_line - first_line + 1).", False),
            column("entries", T.LongType(), "Log entries in those lines (an entry may span several lines).", False),
            column("archived_entries", T.LongType(), "Entries archived in raw_log_lines.", False),
            column("events", T.LongType(), "Entries that are coordinator events.", False),
            column("known_non_events", T.LongType(), "Coordinator lines the catalogue knows to carry no event.", False),
            column(
                "unparsed",
                T.LongType(),
                "Coordinator-looking entries (INFO and above) that no catalogue row matched.",
                False,
            ),
            column("unparsed_below_info", T.LongType(), "Unmatched DEBUG/TRACE coordinator entries.", False),
            column(
                "unparsed_lines",
                T.ArrayType(T.LongType(), False),
                "Line numbers of the first unparsed entries (at most 5).",
                False,
            ),
            column(
                "read_error",
                T.StringType(),
                "Why the read stopped before the end of the file (truncated or corrupt .gz, at which "
                "uncompressed byte), or why it could not start (status unreadable or waiting).",
            ),
            column("ingest_run_id", T.StringType(), "Run that read the lines.", False),
            column("ingested_at", T.TimestampType(), "When that run started (UTC).", False),
            # Added after the first release: nullable, at the end (existing tables gain them, null in old rows).
            column(
                "status",
                T.StringType(),
                "read (to the end, no damaged line); read_with_errors (stopped early, see read_error, or damaged "
                "lines, see the counts); unreadable (could not be opened or read, or a rotated file without a "
                "complete first line; no lines, see read_error); waiting (an active file without a complete "
                "first line yet; no lines). Null in rows written before the column existed.",
            ),
            column(
                "malformed_lines",
                T.LongType(),
                "Lines read holding control bytes (NUL and the like, not tab, CR or ESC): binary garbage.",
            ),
            column(
                "overlong_lines",
                T.LongType(),
                "Lines read longer than the configured max_line_bytes, cut to it in the entry text.",
            ),
            column(
                "invalid_utf8_lines",
                T.LongType(),
                "Lines read that are not valid UTF-8, decoded with replacement characters.",
            ),
        ]
    ),
)
