"""Typed, strict configuration read from TOML with the standard library.

Unknown keys are an error that names the key; a wrong type is an error that names the key and the type
expected; a value out of range (a threshold, a time zone) is an error that names the key and the value.
Relative paths are resolved against the project root (the parent of the config file's directory), so
`conf/local.toml` works from any working directory. Secrets never live here: Kafka security options come
from environment variables (see `KafkaSource.options_env_prefix`).

Every error is one line: `conf/x.toml: storms.min_rebalances must be 2 or more, found -5`. Parsing checks
values only, so tests can build configs naming paths that do not exist; the jobs load their file with
`load_job_config`, which also checks that the inputs are there (`check_config_paths`) before Spark starts.

One module (~500 lines) on purpose: it is the schema of conf/*.toml, one dataclass per section in the order of
conf/local.toml, and the loader (`_build`/`_convert`) that reads those dataclasses' annotations to parse and
check every key. The section classes and the loader change together (a new key is a field here, nothing
else), and cgh imports this module alone, without Spark.
"""

from __future__ import annotations

import dataclasses
import glob
import math
import os
import sys
import traceback
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfoNotFoundError

import tomllib

from coordinator_core.logs.envelope import zone_of

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CONFIG = PROJECT_ROOT / "conf" / "local.toml"


class ConfigError(ValueError):
    """A configuration file that does not match the expected shape. The message is one line."""


def _number_above(value: float, bound: float) -> bool:
    """`value > bound` for a duration: NaN and infinity (both valid TOML floats) are not durations."""
    return math.isfinite(value) and value > bound


@dataclass(frozen=True)
class SegmentSource:
    """A copied `__consumer_offsets` directory tree (holding `__consumer_offsets-N/*.log`).

    `cluster = "*"` reads one cluster per subdirectory of `path`, named after it (samples/kafka-4.1.0/...
    is cluster "kafka-4.1.0"), so captures of several brokers never mix their offsets.
    """

    cluster: str
    path: str


@dataclass(frozen=True)
class KafkaSource:
    """A live cluster read with Spark's Kafka source, in batch mode."""

    cluster: str
    bootstrap_servers: str
    topic: str = "__consumer_offsets"
    # Every environment variable starting with this prefix becomes a Kafka client option:
    # CGH_KAFKA_SECURITY_PROTOCOL=SASL_SSL -> kafka.security.protocol. Values are never logged.
    options_env_prefix: str = "CGH_KAFKA_"
    # Cap per partition and run (0 = read up to the current end offset).
    max_records_per_partition: int = 0


@dataclass(frozen=True)
class LogSource:
    """One broker's or client's coordinator log files (`[[sources.logs]]`).

    `source` names the writer of the files (`broker-1`, `orders-consumer`) and is part of each file's
    identity; `paths` are globs (rotated `.log.N` and `.gz` files are read too); `zone` is the IANA zone of
    zone-less log4j timestamps (everything is stored in UTC); `broker_id` is -1 for client logs.
    """

    cluster: str
    source: str
    paths: tuple[str, ...]
    zone: str = "UTC"
    broker_id: int = -1
    #: a source whose globs match no file is a config error, unless it comes and goes (a client that only
    #: runs now and then): then it is a warning in the run's output
    allow_empty: bool = False


@dataclass(frozen=True)
class SourcesConfig:
    mode: Literal["segments", "kafka", "none"] = "segments"
    segments: tuple[SegmentSource, ...] = ()
    kafka: tuple[KafkaSource, ...] = ()
    logs: tuple[LogSource, ...] = ()


@dataclass(frozen=True)
class StormsConfig:
    """When a run of rebalances is a storm (see coordinator_core/storms.py for the exact rules)."""

    min_rebalances: int = 3
    window_minutes: float = 10.0
    quiet_minutes: float = 10.0
    flapping_min_rejoins: int = 3
    lockstep_seconds: float = 120.0
    lockstep_min_groups: int = 3

    def __post_init__(self) -> None:
        # The bounds are the rules' own (coordinator_core/storms.py): a storm of 1 rebalance, a member
        # "flapping" when it joins once or a lock-step wave of 1 group would make every rebalance, member
        # or storm one; StormThresholds itself refuses a quiet period of 0 (each rebalance its own run).
        if self.min_rebalances < 2:
            raise ConfigError(f"storms.min_rebalances must be 2 or more, found {self.min_rebalances}")
        if not _number_above(self.window_minutes, 0):
            raise ConfigError(f"storms.window_minutes must be more than 0, found {self.window_minutes}")
        if not _number_above(self.quiet_minutes, 0):
            raise ConfigError(f"storms.quiet_minutes must be more than 0, found {self.quiet_minutes}")
        if self.flapping_min_rejoins < 2:
            raise ConfigError(
                f"storms.flapping_min_rejoins must be 2 or more, found {self.flapping_min_rejoins}")
        if not _number_above(self.lockstep_seconds, 0):
            raise ConfigError(f"storms.lockstep_seconds must be more than 0, found {self.lockstep_seconds}")
        if self.lockstep_min_groups < 2:
            raise ConfigError(f"storms.lockstep_min_groups must be 2 or more, found {self.lockstep_min_groups}")


@dataclass(frozen=True)
class HistoryConfig:
    """The incremental history: how far back a late log line may still change a written generation.

    ``reopen_hours``: generations within this many hours of a group's newest record or log line stay open
    (their cause, evidence and timings are amended when their log lines arrive late); lines older than that
    are counted in the run summary and not applied. Measured in the data's own time, so a re-run or a
    backfill gives the same result whenever it runs.
    """

    reopen_hours: float = 48.0
    #: a stall (offset_events kind "stalled"): at least this many commits of one offset, spanning at least
    #: this many milliseconds, within one generation of a group with members
    stall_min_commits: int = 3
    stall_min_ms: int = 60_000

    def __post_init__(self) -> None:
        if not self.reopen_hours >= 0:
            raise ConfigError(f"history.reopen_hours must be 0 or more, found {self.reopen_hours}")
        if self.stall_min_commits < 2:
            raise ConfigError(f"history.stall_min_commits must be 2 or more, found {self.stall_min_commits}")
        if self.stall_min_ms < 0:
            raise ConfigError(f"history.stall_min_ms must be 0 or more, found {self.stall_min_ms}")


#: Delta's default `delta.deletedFileRetentionDuration` (one week): VACUUM refuses a shorter retention
#: unless its safety check is turned off, because a reader of an older version would lose its files.
DELTA_SAFE_RETENTION_HOURS = 168


@dataclass(frozen=True)
class MaintenanceConfig:
    """Table maintenance at the end of each nightly run (jobs/maintenance.py), so files per table stay bounded.

    ``small_file_mb``/``max_small_files``: a table's partition (a cluster) is compacted (Delta OPTIMIZE)
    once it holds more than ``max_small_files`` files smaller than ``small_file_mb``; only those files are
    rewritten, so a compaction's cost does not grow with the archive. ``vacuum_every_commits``: VACUUM a
    table each time its Delta log passes another this many commits (0: never). ``vacuum_retention_hours``:
    files replaced more recently than this are kept (time travel, readers of older versions, crash
    recovery, which is protected further by jobs/maintenance.py); below Delta's safety margin of 168 hours
    only with ``allow_short_retention = true``.
    """

    enabled: bool = True
    small_file_mb: float = 32.0
    max_small_files: int = 16
    vacuum_every_commits: int = 20
    vacuum_retention_hours: int = DELTA_SAFE_RETENTION_HOURS  # whole hours: Delta rounds the retention
    allow_short_retention: bool = False

    def __post_init__(self) -> None:
        if not self.small_file_mb > 0:
            raise ConfigError(f"maintenance.small_file_mb must be more than 0, found {self.small_file_mb}")
        if self.max_small_files < 1:
            raise ConfigError(f"maintenance.max_small_files must be 1 or more, found {self.max_small_files}")
        if self.vacuum_every_commits < 0:
            raise ConfigError(
                f"maintenance.vacuum_every_commits must be 0 (never) or more, found {self.vacuum_every_commits}")
        if self.vacuum_retention_hours < 0:
            raise ConfigError(
                f"maintenance.vacuum_retention_hours must be 0 or more, found {self.vacuum_retention_hours}")
        if self.vacuum_retention_hours < DELTA_SAFE_RETENTION_HOURS and not self.allow_short_retention:
            raise ConfigError(
                f"maintenance.vacuum_retention_hours = {self.vacuum_retention_hours} is below Delta's safety "
                f"margin of {DELTA_SAFE_RETENTION_HOURS} hours: set maintenance.allow_short_retention = true "
                "to accept that readers of older versions may lose their files")


@dataclass(frozen=True)
class ReportConfig:
    """Where the nightly job writes the HTML audit report, and how many groups it details."""

    path: str = "warehouse/report/rebalance-audit.html"
    groups_shown: int = 8

    def __post_init__(self) -> None:
        if self.groups_shown < 1:
            raise ConfigError(f"report.groups_shown must be 1 or more, found {self.groups_shown}")


@dataclass(frozen=True)
class TablesConfig:
    database: str = "consumer_group_history"
    location: str = "warehouse/tables"

    def path_of(self, table: str) -> str:
        return f"{self.location.rstrip('/')}/{table}"


@dataclass(frozen=True)
class SparkConfig:
    master: str = "local[*]"
    app_name: str = "consumer-group-history"
    # "hive": a persistent catalog (embedded Derby metastore locally, the cluster's metastore elsewhere),
    # so `spark-sql` sees the tables after a run; "in-memory": tables registered per session only.
    catalog: Literal["hive", "in-memory"] = "hive"
    warehouse_dir: str = "warehouse/spark-warehouse"
    metastore_dir: str = "warehouse/metastore_db"
    shuffle_partitions: int = 8
    # Local jar directory filled by scripts/bootstrap; empty when spark-submit passes --jars/--packages.
    jars_dir: str = ".cache/jars/spark"
    # Spark's console progress bars (spark.ui.showConsoleProgress). Off by default: the jobs print their own
    # progress per stage (records, rate, ETA), and Spark's bars, written over one line with carriage returns,
    # run into those lines when stderr is a file.
    show_progress: bool = False
    extra: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.shuffle_partitions < 1:
            raise ConfigError(f"spark.shuffle_partitions must be 1 or more, found {self.shuffle_partitions}")


@dataclass(frozen=True)
class DecodeConfig:
    # Records per Arrow batch handed to coordinator_core.decode_batch.
    arrow_batch_size: int = 20000

    def __post_init__(self) -> None:
        if self.arrow_batch_size < 1:
            raise ConfigError(f"decode.arrow_batch_size must be 1 or more, found {self.arrow_batch_size}")


@dataclass(frozen=True)
class LogsConfig:
    """How the logs stage treats lines it cannot take as they are.

    ``max_line_bytes``: a longer line (a stack of binary garbage, a 10 MB JSON dump) is cut to this many
    bytes and counted per file as over-long; the cut line is still classified and parsed.
    """

    max_line_bytes: int = 1_048_576

    def __post_init__(self) -> None:
        if self.max_line_bytes < 1024:
            raise ConfigError(f"logs.max_line_bytes must be 1024 or more, found {self.max_line_bytes}")


@dataclass(frozen=True)
class RunConfig:
    """How a run claims the warehouse (jobs/common/run_lock.py) and how often it says what it is doing.

    ``lock_stale_hours``: a claim older than this, left by a run that died without releasing it, may be
    taken over by the next run; keep it above the longest run you expect.
    ``progress_seconds``: a stage running longer than this prints a progress line (its Spark tasks done, or
    that the driver is at work) every this many seconds (jobs/common/progress.py).
    """

    lock_stale_hours: float = 12.0
    progress_seconds: float = 15.0

    def __post_init__(self) -> None:
        if not self.lock_stale_hours > 0:
            raise ConfigError(f"run.lock_stale_hours must be more than 0, found {self.lock_stale_hours}")
        if not self.progress_seconds > 0:
            raise ConfigError(f"run.progress_seconds must be more than 0, found {self.progress_seconds}")


@dataclass(frozen=True)
class MetricsConfig:
    """Where the nightly job writes its metrics for node_exporter's textfile collector (also `--metrics-file`).

    ``textfile``: a file named `*.prom` (the collector reads no other) in the collector's directory
    (`--collector.textfile.directory`); written after every successful run, atomically. Empty: none.
    """

    textfile: str = ""

    def __post_init__(self) -> None:
        if self.textfile and not self.textfile.endswith(".prom"):
            raise ConfigError(f"metrics.textfile must name a .prom file (node_exporter's textfile collector reads "
                              f"no other), found {self.textfile!r}")


@dataclass(frozen=True)
class Config:
    sources: SourcesConfig = field(default_factory=SourcesConfig)
    tables: TablesConfig = field(default_factory=TablesConfig)
    spark: SparkConfig = field(default_factory=SparkConfig)
    decode: DecodeConfig = field(default_factory=DecodeConfig)
    storms: StormsConfig = field(default_factory=StormsConfig)
    history: HistoryConfig = field(default_factory=HistoryConfig)
    maintenance: MaintenanceConfig = field(default_factory=MaintenanceConfig)
    report: ReportConfig = field(default_factory=ReportConfig)
    logs: LogsConfig = field(default_factory=LogsConfig)
    run: RunConfig = field(default_factory=RunConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)


# Fields holding filesystem locations, resolved against the project root when relative.
_PATH_FIELDS = {
    (SegmentSource, "path"),
    (TablesConfig, "location"),
    (SparkConfig, "warehouse_dir"),
    (SparkConfig, "metastore_dir"),
    (SparkConfig, "jars_dir"),
    (ReportConfig, "path"),
    (MetricsConfig, "textfile"),
}


def _resolve_path(value: str, root: Path) -> str:
    if not value or "://" in value or os.path.isabs(value):
        return value
    return str((root / value).resolve())


def _convert(value: Any, tp: Any, where: str, root: Path) -> Any:  # noqa: C901, PLR0912 - grandfathered: one branch per TOML type
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a table, found {type(value).__name__}")
        return _build(tp, value, where, root)
    if origin is Literal:
        if value not in args:
            raise ConfigError(f"{where}: expected one of {list(args)}, found {value!r}")
        return value
    if origin is tuple:
        if not isinstance(value, list):
            raise ConfigError(f"{where}: expected an array, found {type(value).__name__}")
        return tuple(_convert(v, args[0], f"{where}[{i}]", root) for i, v in enumerate(value))
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a table, found {type(value).__name__}")
        return {str(k): _convert(v, args[1], f"{where}.{k}", root) for k, v in value.items()}
    if origin in (typing.Union, types.UnionType):
        raise ConfigError(f"{where}: union types are not supported in config dataclasses")
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true/false, found {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: expected a number, found {value!r}")
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected an integer, found {value!r}")
        return value
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected a string, found {value!r}")
        return value
    raise ConfigError(f"{where}: unsupported type {tp}")


def _build(cls: Any, data: dict[str, Any], where: str, root: Path) -> Any:
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        prefix = f"{where}." if where else ""
        raise ConfigError(
            f"unknown configuration key {prefix}{unknown[0]} (known keys here: {', '.join(sorted(known))})"
        )
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in data and dataclasses.is_dataclass(hints[f.name]):
            # A whole table left out: its defaults still go through validation and path resolution.
            kwargs[f.name] = _build(hints[f.name], {}, f"{where}.{f.name}" if where else f.name, root)
            continue
        if f.name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ConfigError(f"missing configuration key {where + '.' if where else ''}{f.name}")
            continue
        key = f"{where}.{f.name}" if where else f.name
        value = _convert(data[f.name], hints[f.name], key, root)
        if (cls, f.name) in _PATH_FIELDS:
            value = _resolve_path(value, root)
        if cls is LogSource and f.name == "paths":
            value = tuple(_resolve_path(v, root) for v in value)
        kwargs[f.name] = value
    obj = cls(**kwargs)
    # Defaults that are paths are resolved too.
    for klass, name in _PATH_FIELDS:
        if klass is cls and name not in data:
            object.__setattr__(obj, name, _resolve_path(getattr(obj, name), root))
    return obj


def _check_sources(sources: SourcesConfig) -> None:
    """Values of the `[[sources.*]]` entries (their keys carry the entry's index, hence not __post_init__)."""
    for i, kafka in enumerate(sources.kafka):
        if kafka.max_records_per_partition < 0:
            raise ConfigError(f"sources.kafka[{i}].max_records_per_partition must be 0 (no cap) or more, "
                              f"found {kafka.max_records_per_partition} (cluster {kafka.cluster})")
    for i, log in enumerate(sources.logs):
        where = f"(cluster {log.cluster}, source {log.source})"
        try:
            zone_of(log.zone)  # what the log reader will use: UTC (any case) or an IANA name
        except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a tzdata directory such as "America"
            raise ConfigError(f"sources.logs[{i}].zone must be an IANA time zone such as UTC or Europe/Berlin, "
                              f"found {log.zone!r} {where}") from None
        if log.broker_id < -1:
            raise ConfigError(
                f"sources.logs[{i}].broker_id must be -1 (a client log) or more, found {log.broker_id} {where}")


def check_config_paths(config: Config) -> list[str]:
    """Check that the configured inputs are there; returns warnings, raises ConfigError for the first error.

    Each log source's globs must match a file (a typo would otherwise read nothing, night after night),
    unless the source has `allow_empty = true`: then it is a warning. The segments directory must exist
    when segments are read, and with `cluster = "*"` hold a subdirectory (one per cluster). Paths with
    `://` are object-store URIs: they cannot be listed from here without the cluster's filesystem
    libraries and credentials, so they are left to the job to read.
    """
    warnings: list[str] = []
    for i, log in enumerate(config.sources.logs):
        local = [pattern for pattern in log.paths if "://" not in pattern]
        if len(local) < len(log.paths):
            continue  # an object-store source (see above): not listed here
        # As jobs/logs/listing.py lists them: files only, a directory matched by a glob is no log file.
        if any(os.path.isfile(path) for pattern in local for path in glob.glob(pattern)):
            continue
        problem = (f"sources.logs[{i}].paths (cluster {log.cluster}, source {log.source}) match no file: "
                   f"{list(log.paths)}")
        if not log.allow_empty:
            raise ConfigError(f"{problem} (allow_empty = true accepts a source whose files come and go)")
        warnings.append(f"{problem} (allowed: allow_empty = true)")
    textfile = config.metrics.textfile
    if textfile and "://" not in textfile and not os.path.isdir(os.path.dirname(textfile)):
        raise ConfigError(f"metrics.textfile must be in an existing directory (the collector's), found {textfile!r}")
    if config.sources.mode == "segments":
        for i, segments in enumerate(config.sources.segments):
            key = f"sources.segments[{i}].path (cluster {segments.cluster})"
            if "://" in segments.path:
                continue  # an object-store URI (see above)
            if not os.path.isdir(segments.path):
                found = "not a directory" if os.path.exists(segments.path) else "no such directory"
                raise ConfigError(f"{key} must be a directory, found {segments.path!r} ({found})")
            if segments.cluster == "*" and not any(entry.is_dir() for entry in os.scandir(segments.path)):
                raise ConfigError(f"{key} must hold one subdirectory per cluster, found none in {segments.path!r}")
    return warnings


def parse_config(data: dict[str, Any], root: Path = PROJECT_ROOT, *, check_paths: bool = False) -> Config:
    """Build a `Config` from already-parsed TOML data (tests use this with inline dicts).

    Values are always checked; the paths (`check_config_paths`) only with `check_paths`, whose warnings are
    printed on stderr.
    """
    config: Config = _build(Config, data, "", root)
    if config.sources.mode == "segments" and not config.sources.segments:
        raise ConfigError("sources.mode = 'segments' needs at least one [[sources.segments]] entry")
    if config.sources.mode == "kafka" and not config.sources.kafka:
        raise ConfigError("sources.mode = 'kafka' needs at least one [[sources.kafka]] entry")
    _check_sources(config.sources)
    if check_paths:
        for warning in check_config_paths(config):
            print(f"warning: {warning}", file=sys.stderr, flush=True)
    return config


def load_config(path: str | os.PathLike[str] | None = None, *, check_paths: bool = False) -> Config:
    """Read and validate a TOML configuration file (default: conf/local.toml).

    Every error, a TOML syntax error or a missing file included, is a ConfigError whose message starts with
    the file's name. `check_paths`: also check the inputs are there (see `check_config_paths`); off by
    default, so a config written for another machine (conf/cluster.example.toml) can still be read here.
    """
    config_path = Path(path) if path else DEFAULT_CONFIG
    try:
        with open(config_path, "rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"{config_path}: no such file") from None
    except OSError as error:
        raise ConfigError(f"{config_path}: cannot be read: {error.strerror or error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{config_path}: not valid TOML: {error}") from None
    root = config_path.resolve().parent.parent
    try:
        config = parse_config(data, root=root)
        warnings = check_config_paths(config) if check_paths else []
    except ConfigError as error:
        raise ConfigError(f"{config_path}: {error}") from error
    for warning in warnings:
        print(f"warning: {config_path}: {warning}", file=sys.stderr, flush=True)
    return config


def load_job_config(path: str | os.PathLike[str] | None, *, debug: bool = False, check_paths: bool = True
                    ) -> Config:
    """`load_config` for a job's `main`, before it starts Spark: paths checked, and a config error ends the
    process with one line on stderr (`error: <message>`) and status 2, as argparse does for a bad command
    line. With `debug` the traceback is printed first."""
    try:
        return load_config(path, check_paths=check_paths)
    except ConfigError as error:
        if debug:
            traceback.print_exc()
        print(f"error: {error}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None
