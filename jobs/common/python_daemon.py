"""The Python worker daemon for local runs: PySpark's own, with one per-task cost taken out.

Before every task PySpark's worker calls `importlib.invalidate_caches()` (pyspark/worker_util.py,
`setup_spark_files`) so that files just added with `addPyFile` become importable. For a directory on the
path that is cheap; a `zipimporter` (Python 3.11) re-reads the whole directory of its archive. PySpark puts
pyspark.zip, py4j's zip and spark-core's jar on a worker's path, so every task re-read thousands of zip
entries: ~0.15 s of a Python task's ~0.2 s fixed cost (py-spy), paid by every Python task of a nightly run.

Here a zip archive's directory is re-read only when the archive changed on disk (size or modification
time), the one case the invalidation is for; everything else `importlib.invalidate_caches` does is kept.
Python 3.13's zipimporter does the same check itself.

Spark starts this module (`spark.python.daemon.module`) instead of `pyspark.daemon` only where the workers
run the driver's own interpreter and so can import the project: see `jobs.common.session.spark_conf`.
"""

from __future__ import annotations

import os
import zipimport

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


def main() -> None:
    zipimport.zipimporter.invalidate_caches = invalidate_if_changed  # type: ignore[method-assign]
    from pyspark.daemon import manager

    manager()  # type: ignore[no-untyped-call]


if __name__ == "__main__":
    main()
