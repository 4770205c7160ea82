"""The Python worker daemon for local runs: PySpark's own, with two per-task costs taken out.

Before every task PySpark's worker calls `importlib.invalidate_caches()` (pyspark/worker_util.py,
`setup_spark_files`) so that files just added with `addPyFile` become importable. For a directory on the
path that is cheap; a `zipimporter` (Python 3.11) re-reads the whole directory of its archive. PySpark puts
pyspark.zip, py4j's zip and spark-core's jar on a worker's path, so every task re-read thousands of zip
entries: ~0.15 s of a Python task's ~0.2 s fixed cost (py-spy), paid by every Python task of a nightly run.

Here a zip archive's directory is re-read only when the archive changed on disk (size or modification
time), the one case the invalidation is for; everything else `importlib.invalidate_caches` does is kept.
Python 3.13's zipimporter does the same check itself.

Second, the socket between a task's JVM side and its worker acknowledges at once at the start of every task
(TCP_QUICKACK, Linux). The JVM writes a task's command and then its input in separate small writes, and its
socket delays a small write while an earlier one is unacknowledged (Nagle); a reused worker's connection
is in the kernel's delayed-acknowledgement mode, so the worker acknowledged the command only after ~40 ms
and every Python task waited that long for its input. Measured with an empty `mapInArrow` on local[1]:
62 ms a task before, 18 ms after; the same 18 ms with delayed acknowledgements turned off for the whole
loopback route (`ip route ... quickack 1`), which is what proved the cause.

Spark starts this module (`spark.python.daemon.module`) instead of `pyspark.daemon` only where the workers
run the driver's own interpreter and so can import the project: see `jobs.common.session.spark_conf`.
"""

from __future__ import annotations

import contextlib
import os
import socket
import zipimport
from typing import Any

_reread_directory = zipimport.zipimporter.invalidate_caches


def _archive_stamp(path: str) -> tuple[int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return (stat.st_size, stat.st_mtime_ns)


def invalidate_if_changed(self: zipimport.zipimporter) -> None:
    """Re-read the archive's directory only if the file is not the one read last time."""
    stamp = _archive_stamp(self.archive)
    if stamp is not None and getattr(self, "_cgh_stamp", None) == stamp:
        return
    _reread_directory(self)
    self._cgh_stamp = stamp  # type: ignore[attr-defined]


def acknowledge_at_once(sock: socket.socket) -> None:
    """Put the worker's connection in quick-acknowledgement mode (the kernel leaves it again by itself, so
    it is set before every task). Nothing where the option does not exist."""
    quickack = getattr(socket, "TCP_QUICKACK", None)
    if quickack is None:
        return
    with contextlib.suppress(OSError):  # not a TCP socket
        sock.setsockopt(socket.IPPROTO_TCP, quickack, 1)


def main() -> None:
    zipimport.zipimporter.invalidate_caches = invalidate_if_changed  # type: ignore[method-assign]
    import pyspark.daemon

    run_task = pyspark.daemon.worker  # one task on a forked (and maybe reused) worker's connection

    def worker(sock: socket.socket, authenticated: bool) -> Any:
        acknowledge_at_once(sock)
        return run_task(sock, authenticated)  # type: ignore[no-untyped-call]

    pyspark.daemon.worker = worker  # looked up by the daemon's manager for every task
    pyspark.daemon.manager()  # type: ignore[no-untyped-call]


if __name__ == "__main__":
    main()
