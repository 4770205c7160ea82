"""Typed, strict configuration read from TOML with the standard library.

Unknown keys are an error that names the key; a wrong type is an error that names the key and the type
expected. Relative paths are resolved against the project root (the parent of the config file's
directory), so `conf/local.toml` works from any working directory. Secrets never live here: Kafka
security options come from environment variables (see `KafkaSource.options_env_prefix`).
"""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import tomllib

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CONFIG = PROJECT_ROOT / "conf" / "local.toml"


class ConfigError(ValueError):
    """A configuration file that does not match the expected shape."""


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
    show_progress: bool = True
    extra: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class DecodeConfig:
    # Records per Arrow batch handed to coordinator_core.decode_batch.
    arrow_batch_size: int = 20000


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
    """The warehouse claim that keeps two runs from appending at once (jobs/common/run_lock.py).

    ``lock_stale_hours``: a claim older than this, left by a run that died without releasing it, may be
    taken over by the next run; keep it above the longest run you expect.
    """

    lock_stale_hours: float = 12.0

    def __post_init__(self) -> None:
        if not self.lock_stale_hours > 0:
            raise ConfigError(f"run.lock_stale_hours must be more than 0, found {self.lock_stale_hours}")


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


# Fields holding filesystem locations, resolved against the project root when relative.
_PATH_FIELDS = {
    (SegmentSource, "path"),
    (TablesConfig, "location"),
    (SparkConfig, "warehouse_dir"),
    (SparkConfig, "metastore_dir"),
    (SparkConfig, "jars_dir"),
    (ReportConfig, "path"),
}


def _resolve_path(value: str, root: Path) -> str:
    if not value or "://" in value or os.path.isabs(value):
        return value
    return str((root / value).resolve())


def _convert(value: Any, tp: Any, where: str, root: Path) -> Any:
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


def parse_config(data: dict[str, Any], root: Path = PROJECT_ROOT) -> Config:
    """Build a `Config` from already-parsed TOML data (tests use this with inline dicts)."""
    config: Config = _build(Config, data, "", root)
    if config.sources.mode == "segments" and not config.sources.segments:
        raise ConfigError("sources.mode = 'segments' needs at least one [[sources.segments]] entry")
    if config.sources.mode == "kafka" and not config.sources.kafka:
        raise ConfigError("sources.mode = 'kafka' needs at least one [[sources.kafka]] entry")
    return config


def load_config(path: str | os.PathLike[str] | None = None) -> Config:
    """Read and validate a TOML configuration file (default: conf/local.toml)."""
    config_path = Path(path) if path else DEFAULT_CONFIG
    with open(config_path, "rb") as fh:
        data = tomllib.load(fh)
    return parse_config(data, root=config_path.resolve().parent.parent)
