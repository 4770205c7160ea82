"""One run at a time per warehouse, held in the Delta log itself so it holds on a cluster.

Two runs that append to the same tables at once would both archive the same new records (each computes
"what is not archived yet" before the other commits). A lock file would not do: the drivers of two
scheduled runs need not share a file system, and object stores have no exclusive create. Delta does have
optimistic concurrency: a MERGE reads the table it writes, and of two MERGEs into one table that both read
the same row, the second to commit fails with a concurrent-modification error. So a run *claims* the
warehouse with a MERGE into `run_claims` (one row) and goes on only if the row then names it.

A claim stays until its run lets go (`release`, also when the run fails). A run that died without letting
go (kill -9, a lost driver) leaves its claim; the next run takes it over when
- its process is known dead: same host, and no process with that pid and start time is alive; or
- it is older than `run.lock_stale_hours` (a driver on another host cannot be checked).
A run refused the warehouse raises `WarehouseClaimed`, whose message is the one line the jobs print.

Separately, the embedded Derby metastore (the local default) admits one process at a time: a second
process fails deep inside Hive's client with a stack that does not say why. `derby_in_use` tells before
Spark starts, and `explain_metastore_failure` turns Hive's error into the same kind of one line.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import errno
import fcntl
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

from delta.exceptions import DeltaConcurrentModificationException
from pyspark.sql import functions as F

from jobs.common.config import SparkConfig
from jobs.common.delta_io import Tables
from schemas.observability import RUN_CLAIMS

#: The jobs' exit status when another run holds the warehouse or its metastore: sysexits' EX_TEMPFAIL ("try
#: again later"), which schedulers can tell from a failure.
EXIT_WAREHOUSE_CLAIMED = 75


class WarehouseClaimed(RuntimeError):
    """Another run holds the warehouse (or its metastore); the message is one line for the operator."""


#: The Delta application id of the claims: each claim or release commits the next txnVersion of it.
APP_ID = "consumer_group_history.run_claim"
#: How far back through the table's commits to look for the latest claim note (maintenance commits sit
#: between them: OPTIMIZE, VACUUM START/END); past this, or when the log is gone, the table is read.
_NOTE_LOOKBACK = 20


@dataclasses.dataclass(frozen=True)
class ClaimEvent:
    """One run_claims row: a claim or a release."""

    seq: int
    event: str
    run_id: str
    job: str
    at: dt.datetime
    host: str
    pid: int
    pid_started: int | None
    took_over: str | None = None

    def describe(self) -> str:
        return (f"run {self.run_id} ({self.job}, pid {self.pid} on {self.host}) started at "
                f"{self.at:%Y-%m-%d %H:%M:%S} UTC")

    def to_note(self) -> str:
        return json.dumps({APP_ID: {**dataclasses.asdict(self), "at": self.at.isoformat()}})

    @staticmethod
    def from_note(note: str | None) -> ClaimEvent | None:
        try:
            data = dict(json.loads(note)[APP_ID]) if note else None
        except (ValueError, TypeError, KeyError):
            return None
        if data is None:
            return None
        data["at"] = dt.datetime.fromisoformat(data["at"])
        return ClaimEvent(**data)


def _commit_note_at(tables: Tables, version: int) -> str | None:
    """The userMetadata of run_claims' commit `version`, read from its commit file ("" when it has none,
    None when the file is gone)."""
    actions = tables.commit_actions(RUN_CLAIMS, version)
    if actions is None:
        return None
    for action in actions:
        if "commitInfo" in action:
            return action["commitInfo"].get("userMetadata") or ""
    return ""


def _lost_a_commit_race(error: BaseException) -> bool:
    """Delta's "a concurrent transaction committed first" (ConcurrentTransactionException and its kin), as
    delta-spark's Python class or, from a DataFrame write, as the Java exception py4j carries."""
    if isinstance(error, DeltaConcurrentModificationException):
        return True
    java = getattr(error, "java_exception", None)
    try:
        names: list[str] = []
        while java is not None and len(names) < 8:
            names.append(str(java.getClass().getName()))
            java = java.getCause()
    except Exception:  # noqa: BLE001 - a gateway gone: not a race
        return False
    return any(n.startswith(("io.delta.exceptions.Concurrent", "org.apache.spark.sql.delta.Concurrent"))
               or n.endswith("DeltaConcurrentModificationException") for n in names)


@contextlib.contextmanager
def _local_creation_lock(table_path: str) -> Iterator[None]:
    """An OS lock around the creation of run_claims when it is on a local file system.

    Two processes creating one Delta table at once on a local disk can leave its first commit file and
    that file's checksum (`.crc`, written beside it by Hadoop's local file system) from different writers,
    and then no one can read the table (seen in the two-driver test). Delta's log stores for HDFS and the
    object stores make the first commit atomic; a local directory needs this lock, once per warehouse.
    """
    if "://" in table_path and not table_path.startswith("file:"):
        yield
        return
    local = Path(table_path.removeprefix("file:"))
    local.parent.mkdir(parents=True, exist_ok=True)
    with open(local.parent / f".{local.name}.create.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


def process_start_ticks(pid: int) -> int | None:
    """The start time of process `pid` in clock ticks since boot (Linux /proc), None where unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 2 (the command) is in parentheses and may hold spaces: count fields after its closing one.
    fields = stat[stat.rindex(")") + 2:].split()
    return int(fields[19])  # field 22 of proc(5): starttime


def process_alive(pid: int, started: int | None) -> bool:
    """True unless process `pid` is known gone (or the pid now belongs to a later process)."""
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:
        # The process exists but belongs to another user: alive, unless its start time shows a reused pid.
        return _same_start(pid, started)
    return _same_start(pid, started)


def _same_start(pid: int, started: int | None) -> bool:
    """False when `pid` now names a later process than the one that started at `started`."""
    if started is not None:
        now_started = process_start_ticks(pid)
        if now_started is not None and now_started != started:
            return False  # the pid was reused
    return True


class RunClaim:
    """`claim()` before a run's first write, `release()` when it ends (as a context manager: both).

    A claim appends a run_claims row with Delta's idempotent-write options (txnAppId = APP_ID, txnVersion =
    the next seq). Delta reads the application's last txnVersion inside the write's transaction, so of two
    runs claiming seq n at once, the second to commit fails with ConcurrentTransactionException; a run that
    starts after the first committed skips its write (its version is not above the table's). Either way
    the latest claim note names the other run. A commit of one small file, no MERGE: about a second.
    """

    def __init__(self, tables: Tables, run_id: str, job: str, stale_hours: float) -> None:
        self.tables = tables
        self.stale_hours = stale_hours
        self.run_id = run_id
        self.job = job
        self.held: ClaimEvent | None = None
        self.version_before: int | None = None
        #: what the claim took over (a dead or stale run's claim), for the run summary
        self.took_over: str | None = None

    def _event(self, seq: int, event: str, took_over: str | None = None) -> ClaimEvent:
        pid = os.getpid()
        return ClaimEvent(seq, event, self.run_id, self.job, _utcnow(), socket.gethostname(), pid,
                          process_start_ticks(pid), took_over)

    def latest(self) -> ClaimEvent | None:
        """The latest claim or release: from the notes of the table's last commits (the Delta log, no
        query), from the table itself when they are not there."""
        version = self.tables.version(RUN_CLAIMS)
        oldest = max(0, version - _NOTE_LOOKBACK + 1)
        for v in range(version, oldest - 1, -1):
            note = _commit_note_at(self.tables, v)
            if note is None:
                break  # that commit file is gone (log retention): read the table
            found = ClaimEvent.from_note(note)
            if found is not None:
                return found
        else:
            if oldest == 0:
                # Every commit since the table's creation read, none a claim's: no row was ever written (only
                # `_append` writes rows, each with its note). A new warehouse's first run asks no query here.
                return None
        rows = self.tables.read(RUN_CLAIMS).orderBy(F.col("seq").desc()).limit(1).collect()
        return ClaimEvent(**rows[0].asDict()) if rows else None

    def _may_take_over(self, holder: ClaimEvent, now: dt.datetime) -> str | None:
        """Why `holder`'s claim may be taken ("" for a released one; None: it may not)."""
        if holder.event == "released":
            return ""
        if holder.host == socket.gethostname() and not process_alive(holder.pid, holder.pid_started):
            return f"took over the claim of {holder.describe()}: that process is gone"
        if now - holder.at > dt.timedelta(hours=self.stale_hours):
            return f"took over the claim of {holder.describe()}: older than run.lock_stale_hours = {self.stale_hours:g}"
        return None

    def _append(self, event: ClaimEvent) -> None:
        row = self.tables.spark.createDataFrame([dataclasses.astuple(event)], RUN_CLAIMS.schema)
        self.tables.append(RUN_CLAIMS, row, commit_note=event.to_note(), transaction=(APP_ID, event.seq))

    def claim(self) -> None:
        """Take the warehouse or raise WarehouseClaimed naming the run that holds it."""
        with _local_creation_lock(self.tables.path(RUN_CLAIMS)):
            try:
                self.tables.ensure(RUN_CLAIMS)
            except Exception:
                # Two first runs at once both create the table; the one that lost that race finds it there.
                if not self.tables.exists(RUN_CLAIMS):
                    raise
                self.tables.ensure(RUN_CLAIMS)
        self.version_before = self.tables.version(RUN_CLAIMS)
        holder = self.latest()
        why = "" if holder is None else self._may_take_over(holder, _utcnow())
        if why is None:
            raise self._refused(holder)
        mine = self._event((holder.seq if holder else 0) + 1, "claimed", why or None)
        try:
            self._append(mine)
        except Exception as error:  # only Delta's concurrent-commit failures are expected (re-raised otherwise)
            if not _lost_a_commit_race(error):
                raise
            # another run's claim of the same seq committed first: the latest note names it
        latest = self.latest()
        if latest is None or latest.run_id != self.run_id or latest.seq != mine.seq:
            raise self._refused(latest)
        self.held = mine
        self.took_over = why or None

    def _refused(self, holder: ClaimEvent | None) -> WarehouseClaimed:
        who = holder.describe() if holder is not None else "another run"
        return WarehouseClaimed(
            f"{who} holds the warehouse {self.tables.location}: this run ({self.run_id}) wrote nothing. Wait "
            f"for it to end; a claim left by a run that died on another host lapses after run.lock_stale_hours "
            f"= {self.stale_hours:g}")

    def release(self) -> None:
        if self.held is None:
            return
        try:
            self._append(self._event(self.held.seq + 1, "released"))
        finally:
            self.held = None

    def __enter__(self) -> RunClaim:
        self.claim()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


# -- the embedded Derby metastore ----------------------------------------------------------------------


def derby_in_use(metastore_dir: str) -> bool:
    """True when another process has the embedded Derby database at `metastore_dir` booted.

    Derby holds an exclusive lock on `dbex.lck` (a POSIX record lock, the kind `fcntl` sees) while a JVM
    has the database open. Ask only before this process starts its own JVM: that JVM would hold it too.
    """
    lock_file = Path(metastore_dir) / "dbex.lck"
    if not lock_file.exists():
        return False
    try:
        fd = os.open(lock_file, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        return e.errno in (errno.EACCES, errno.EAGAIN)
    else:
        fcntl.lockf(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def metastore_refusal(spark: SparkConfig) -> str | None:
    """Why this process cannot open the catalog (the embedded Derby metastore is booted by another), asked
    before Spark starts; None when it can."""
    metastore_dir = embedded_derby(spark)
    if metastore_dir is not None and derby_in_use(metastore_dir):
        return derby_message(metastore_dir)
    return None


def derby_message(metastore_dir: str) -> str:
    return (f"the embedded Derby metastore {metastore_dir} is in use by another process (another run, or a "
            "spark-sql shell); Derby admits one process at a time: wait for it to end, or configure a shared "
            "metastore (spark.catalog = \"hive\" with hive.metastore.uris in [spark.extra])")


def embedded_derby(spark: SparkConfig) -> str | None:
    """The embedded Derby metastore's directory, None when the catalog is not one (a shared metastore)."""
    if spark.catalog != "hive" or not spark.metastore_dir or "://" in spark.metastore_dir:
        return None
    if any(key.endswith("hive.metastore.uris") for key in spark.extra):
        return None
    return spark.metastore_dir


def explain_metastore_failure(error: Exception, spark: SparkConfig) -> WarehouseClaimed | None:
    """Hive's "Unable to instantiate SessionHiveMetaStoreClient", when Derby is the cause, as one line."""
    metastore_dir = embedded_derby(spark)
    text = str(error)
    if metastore_dir is None or not ("SessionHiveMetaStoreClient" in text or "instance of Derby" in text):
        return None
    return WarehouseClaimed(derby_message(metastore_dir))
